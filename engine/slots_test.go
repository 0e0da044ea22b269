package engine

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
)

// --parallelism bounds the node processes running at once, also now that a
// node's CPU slot goes to the next node as soon as its process has ended
// (while cairn stores its outputs), and a stage's concurrency bounds its
// own. Each process marks itself running in a folder, counts the marks,
// and removes its mark before it ends: a count over the bound means more
// processes ran at once than allowed.
func TestParallelismBoundsRunningProcesses(t *testing.T) {
	const pipeline = `
pipeline "slots" {}
locals {
  keys = [for i in range(24) : format("k%02d", i)]
}
stage "command" "many" {
  for_each = toset(local.keys)
  shell    = true
  run      = "mkdir -p running/many out && touch running/many/${each.key} && ls running/many | wc -l >> counts.many && sleep 0.02 && rm running/many/${each.key} && echo ${each.key} > out/${each.key}"
  outputs  = ["out/${each.key}"]
}
stage "command" "few" {
  for_each    = toset(local.keys)
  concurrency = 1
  shell       = true
  run         = "mkdir -p running/few out && touch running/few/${each.key} && ls running/few | wc -l >> counts.few && sleep 0.01 && rm running/few/${each.key} && echo ${each.key} > out/few-${each.key}"
  outputs     = ["out/few-${each.key}"]
}
`
	for _, par := range []int{1, 3} {
		w := newWorkspace(t, pipeline)
		r := w.apply(ApplyOptions{Parallelism: par})
		require.Equal(t, 48, r.res.Ran, r.out)
		for stage, bound := range map[string]int{"many": par, "few": 1} {
			counts := strings.Fields(w.Read("counts." + stage))
			require.Len(t, counts, 24)
			for _, c := range counts {
				n, err := strconv.Atoi(c)
				require.NoError(t, err)
				assert.LessOrEqual(t, n, bound, "stage %s, --parallelism %d: %d processes at once", stage, par, n)
			}
		}
	}
}

// Ready nodes start in the order of the plan: with one CPU slot, nodes that
// are all ready at once run one by one in plan order, and a node that
// becomes ready later (after its upstream) waits behind those ready before
// it that come earlier in the plan. A stage held back by its concurrency
// does not hold back the others.
func TestReadyNodesStartInPlanOrder(t *testing.T) {
	w := newWorkspace(t, `
pipeline "order" {}
stage "command" "a" {
  for_each = toset(["k1", "k2", "k3", "k4", "k5", "k6"])
  run      = ["sh", "-c", "echo a-${each.key} >> order.log"]
}
stage "command" "b" {
  for_each = stage.a
  run      = ["sh", "-c", "echo b-${each.key} >> order.log"]
}
`)
	r := w.apply(ApplyOptions{Parallelism: 1})
	require.Equal(t, 12, r.res.Ran, r.out)
	order := strings.Fields(w.Read("order.log"))
	plan := w.Plan(plan.Options{})
	pos := map[string]int{}
	for i, pn := range plan.Nodes {
		pos[pn.Node.Addr] = i
	}
	addr := func(s string) string {
		stage, key, _ := strings.Cut(s, "-")
		return `stage.` + stage + `["` + key + `"]`
	}
	// Each node started when it was the earliest ready one in the plan.
	done := map[string]bool{}
	for _, s := range order {
		me := addr(s)
		for _, pn := range plan.Nodes {
			a := pn.Node.Addr
			if done[a] || a == me || pos[a] > pos[me] {
				continue
			}
			ready := true
			for _, d := range pn.Node.Deps {
				ready = ready && done[plan.Nodes[d].Node.Addr]
			}
			assert.False(t, ready, "%s started before %s, which was ready and comes first in the plan", me, a)
		}
		done[me] = true
	}

	w = newWorkspace(t, `
pipeline "held" {}
stage "command" "one" {
  for_each    = toset(["k1", "k2", "k3"])
  concurrency = 1
  shell       = true
  run         = "touch one-${each.key}.running; i=0; while [ ! -e two.done ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done; test -e two.done"
}
stage "command" "two" {
  shell = true
  run   = "touch two.done"
}
`)
	r = w.apply(ApplyOptions{Parallelism: 2})
	assert.Equal(t, 4, r.res.Ran, "stage.two ran while stage.one's queued nodes waited for their turn: %s", r.out)
}

// Two stages of one pipeline that declare the same work have one key: it
// runs once, and the second node waits for the first, saying so, then
// takes the cache hit.
func TestSameWorkTwiceInOnePipelineRunsOnce(t *testing.T) {
	w := newWorkspace(t, `
pipeline "same" {}
stage "command" "a" {
  shell   = true
  run     = "sleep 0.2; echo x >> count.log; echo hi > o.txt"
  outputs = ["o.txt"]
}
stage "command" "b" {
  shell   = true
  run     = "sleep 0.2; echo x >> count.log; echo hi > o.txt"
  outputs = ["o.txt"]
}
`)
	r := w.apply(ApplyOptions{Parallelism: 2})
	assert.Equal(t, 1, r.res.Ran, r.out)
	assert.Equal(t, 1, r.res.Cached, r.out)
	assert.Equal(t, "x\n", w.Read("count.log"))
	assert.Regexp(t, `stage\.[ab] waits: the same work is running in this apply \(stage\.[ab]\)`, r.out, "the waiting node says who holds the work")
}

// An apply given no GPUs, with a node whose gpus come from an upstream's
// result, fails that node saying why instead of waiting for ever.
func TestGPUNodeWithoutAPoolFails(t *testing.T) {
	w := newWorkspace(t, `
pipeline "nogpus" {}
stage "command" "size" {
  shell  = true
  run    = "echo '{\"gpus\": 1}' > size.json"
  result = "size.json"
}
stage "command" "train" {
  run  = ["true"]
  gpus = stage.size.result.gpus
}
stage "command" "after_train" {
  run   = ["true"]
  after = [stage.train]
}
`)
	r := w.apply(ApplyOptions{})
	assert.False(t, r.res.Interrupted, "the apply ended by itself: %s", r.out)
	assert.Equal(t, 1, r.res.Ran, r.out)
	assert.Equal(t, 1, r.res.Failed, r.out)
	assert.Equal(t, 1, r.res.Skipped, r.out)
	require.Len(t, r.res.Failures, 1, r.out)
	f := r.res.Failures[0]
	assert.Equal(t, "stage.train", f.Address)
	assert.Contains(t, f.Message, "needs 1 GPU(s), but this apply was given no GPUs")
}

// Nodes that are the same work (one key) run it once: when that run
// fails, the others fail with it, with its class and naming the node
// that ran it, instead of running it again one after another.
func TestSameWorkThatFailedIsNotRunAgain(t *testing.T) {
	w := newWorkspace(t, `
pipeline "t" {}
stage "command" "seed" {
  for_each = toset(["0", "1", "2"])
  run      = ["sh", "-c", "echo run >> count; exit 1"]
}
`)
	r := w.apply(ApplyOptions{})
	require.Equal(t, 3, r.res.Failed, r.out)
	assert.Equal(t, "run\n", w.Read("count"), "the work ran once")
	ran := ""
	for _, f := range r.res.Failures {
		if !strings.Contains(f.Message, "the same work failed") {
			require.Empty(t, ran, r.out)
			ran = f.Address
		}
	}
	require.NotEmpty(t, ran, r.out)
	for _, f := range r.res.Failures {
		assert.Equal(t, "exit", f.Class, f.Address)
		if f.Address != ran {
			assert.Equal(t, "the same work failed in this apply ("+ran+"): exited with status 1", f.Message)
		}
	}
}
