package crashtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine/runlog"
)

// overlapPipeline is pipeline pK of the concurrency test. Every pipeline
// has the same "common" nodes (same attributes, so the same keys), pipelines
// in one group share the "pair" nodes, and "own" and "sum" are theirs
// alone. The common nodes wait for the file "go" so that the test can hold
// them running until every apply has reached them.
func overlapPipeline(k int) string {
	group := "g1"
	if k > 2 {
		group = "g2"
	}
	return fmt.Sprintf(`
pipeline "p%[1]d" {}
stage "command" "common" {
  for_each = toset(["s1", "s2", "s3", "s4"])
  run      = ["sh", "-c", "while [ ! -f go ]; do sleep 0.02; done; mkdir -p common; echo ${each.key} > common/${each.key}.txt; echo x >> counts/common_${each.key}"]
  outputs  = ["common/${each.key}.txt"]
}
stage "command" "pair" {
  for_each = toset(["x", "y"])
  run      = ["sh", "-c", "sleep 0.2; mkdir -p pair; echo %[2]s > pair/%[2]s_${each.key}.txt; echo x >> counts/pair_%[2]s_${each.key}"]
  outputs  = ["pair/%[2]s_${each.key}.txt"]
}
stage "command" "own" {
  run     = ["sh", "-c", "echo p%[1]d > own_p%[1]d.txt; echo x >> counts/own_p%[1]d"]
  outputs = ["own_p%[1]d.txt"]
}
stage "command" "sum" {
  after   = [stage.common, stage.own, stage.pair]
  run     = ["sh", "-c", "cat common/*.txt own_p%[1]d.txt > sum_p%[1]d.txt; echo x >> counts/sum_p%[1]d"]
  outputs = ["sum_p%[1]d.txt"]
}
`, k, group)
}

// TestConcurrentAppliesShareWork starts four applies of overlapping
// pipelines (different names) on one shared cache at once. Every shared
// node runs exactly once: the applies that find it running print "NODE
// waits: the same work is running in ..." and then take it from the cache.
func TestConcurrentAppliesShareWork(t *testing.T) {
	w := newWS(t, "")
	w.write("counts/.keep", "")
	shared := t.TempDir()
	var ps []*started
	for k := 1; k <= 4; k++ {
		w.write(fmt.Sprintf("p%d.hcl", k), overlapPipeline(k))
		ps = append(ps, w.start([]string{"CAIRN_NO_FSYNC=1"}, "--cache", shared, "apply", "--parallelism", "8", fmt.Sprintf("p%d.hcl", k)))
	}
	// Hold the common nodes until each is running in one apply and
	// waited for by the three others.
	e2etest.WaitFor(t, "every apply to reach the common nodes", time.Minute, func() bool {
		for _, key := range []string{"s1", "s2", "s3", "s4"} {
			addr := `stage.common["` + key + `"]`
			waiting, running := 0, 0
			for _, p := range ps {
				out := p.out.String()
				if strings.Contains(out, addr+" waits: the same work is running in") {
					waiting++
				}
				if strings.Contains(out, addr+"  started") {
					running++
				}
			}
			if waiting != 3 || running != 1 {
				return false
			}
		}
		return true
	})
	w.write("go", "")
	for i, p := range ps {
		res := p.wait(t)
		require.Equal(t, 0, res.code, "p%d: %s", i+1, res)
	}
	for _, key := range []string{"s1", "s2", "s3", "s4"} {
		assert.Equal(t, 1, w.countLines("counts/common_"+key), "common %s executions", key)
		assert.Equal(t, key+"\n", w.read("common/"+key+".txt"))
	}
	for _, g := range []string{"g1", "g2"} {
		for _, key := range []string{"x", "y"} {
			assert.Equal(t, 1, w.countLines("counts/pair_"+g+"_"+key), "pair %s %s executions", g, key)
		}
	}
	for k := 1; k <= 4; k++ {
		assert.Equal(t, 1, w.countLines(fmt.Sprintf("counts/own_p%d", k)))
		assert.Equal(t, 1, w.countLines(fmt.Sprintf("counts/sum_p%d", k)))
		assert.Equal(t, fmt.Sprintf("s1\ns2\ns3\ns4\np%d\n", k), w.read(fmt.Sprintf("sum_p%d.txt", k)))
	}
	// The waiters took the common nodes from the cache.
	runs, err := runlog.List(shared)
	require.NoError(t, err)
	require.Len(t, runs, 4)
	cached := 0
	for _, r := range runs {
		for _, e := range r.Entries {
			if e.T == runlog.Cached && strings.HasPrefix(e.Node, "stage.common") {
				cached++
			}
		}
	}
	assert.Equal(t, 12, cached, "cache hits of the common nodes after waiting")
}

// holderPipeline runs one node that waits for the file "go". With
// grandchild set, the node also starts a process that outlives its shell.
func holderPipeline(name string, grandchild bool) string {
	extra := ""
	if grandchild {
		extra = "sleep 1000 >/dev/null 2>&1 & touch forked; "
	}
	return fmt.Sprintf(`
pipeline %q {}
stage "command" "held" {
  run     = ["sh", "-c", "%swhile [ ! -f go ]; do sleep 0.02; done; echo held > held.txt; echo x >> counts/held"]
  outputs = ["held.txt"]
}
`, name, extra)
}

// TestDeadHolderFreesLock kills (SIGKILL) an apply that holds a node's lock
// while another apply, of another pipeline on the same cache, waits for it:
// the waiter takes the lock and runs the node itself. With a grandchild
// that outlives the killed apply's node, the lock is still freed: the
// grandchild belongs to a run that is dead.
func TestDeadHolderFreesLock(t *testing.T) {
	for _, grandchild := range []bool{false, true} {
		t.Run(fmt.Sprintf("grandchild=%v", grandchild), func(t *testing.T) {
			w := newWS(t, "")
			w.write("counts/.keep", "")
			w.write("holder.hcl", holderPipeline("holder", grandchild))
			w.write("waiter.hcl", holderPipeline("waiter", grandchild))
			env := []string{"CAIRN_NO_FSYNC=1"}
			holder := w.start(env, "apply", "holder.hcl")
			w.startedPID("stage.held")
			if grandchild {
				w.waitProc("sleep 1000")
			}
			waiter := w.start(env, "apply", "waiter.hcl")
			e2etest.WaitFor(t, "the second apply to wait", 30*time.Second, func() bool {
				return strings.Contains(waiter.out.String(), "stage.held waits: the same work is running in")
			})
			require.NoError(t, holder.cmd.Process.Signal(syscall.SIGKILL))
			hres := holder.wait(t)
			require.Equal(t, -int(syscall.SIGKILL), hres.code, hres.String())
			// The waiter now runs the node; let it finish.
			e2etest.WaitFor(t, "the waiter to run the node", 30*time.Second, func() bool {
				return strings.Contains(waiter.out.String(), "stage.held  started")
			})
			w.write("go", "")
			res := waiter.wait(t)
			require.Equal(t, 0, res.code, res.String())
			assert.Contains(t, res.stdout, "1 ran, 0 cached")
			assert.Equal(t, 1, w.countLines("counts/held"))
			if grandchild {
				assert.Regexp(t, `killed \d process\(es\) left holding stage.held by run`, res.stdout)
			}
			assert.Empty(t, workspaceProcs(w.root))
		})
	}
}

// TestInterruptWhileWaiting: an apply waiting for a node another apply runs
// stops at once on SIGINT (exit 130, the node journaled as interrupted);
// the other apply is not disturbed.
func TestInterruptWhileWaiting(t *testing.T) {
	w := newWS(t, "")
	w.write("counts/.keep", "")
	w.write("holder.hcl", holderPipeline("holder", false))
	w.write("waiter.hcl", holderPipeline("waiter", false))
	env := []string{"CAIRN_NO_FSYNC=1"}
	holder := w.start(env, "apply", "holder.hcl")
	w.startedPID("stage.held")
	waiter := w.start(env, "apply", "waiter.hcl")
	e2etest.WaitFor(t, "the second apply to wait", 30*time.Second, func() bool {
		return strings.Contains(waiter.out.String(), "stage.held waits: the same work is running in")
	})
	require.NoError(t, waiter.cmd.Process.Signal(syscall.SIGINT))
	res := waiter.wait(t)
	require.Equal(t, 130, res.code, res.String())
	var wr *runlog.RunInfo
	for _, r := range w.runs() {
		if r.Pipeline == "waiter" {
			wr = r
		}
	}
	require.NotNil(t, wr)
	f := entries(wr, runlog.Failed, "stage.held")
	require.Len(t, f, 1)
	assert.Equal(t, "interrupted", f[0].Class)

	w.write("go", "")
	hres := holder.wait(t)
	require.Equal(t, 0, hres.code, hres.String())
	assert.Equal(t, 1, w.countLines("counts/held"))
	// The waiter's pipeline now finds the node in the cache.
	res = w.run(env, "apply", "waiter.hcl")
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "0 ran, 1 cached")
}

// TestLockTimeout: with --lock-timeout, an apply gives up waiting for a node
// another apply runs: the node fails (class "setup") and the apply ends.
func TestLockTimeout(t *testing.T) {
	w := newWS(t, "")
	w.write("counts/.keep", "")
	w.write("holder.hcl", holderPipeline("holder", false))
	w.write("waiter.hcl", holderPipeline("waiter", false))
	env := []string{"CAIRN_NO_FSYNC=1"}
	holder := w.start(env, "apply", "holder.hcl")
	w.startedPID("stage.held")
	res := w.run(env, "apply", "--lock-timeout", "300ms", "waiter.hcl")
	require.Equal(t, 1, res.code, res.String())
	assert.Contains(t, res.stdout, "stage.held waits: the same work is running in")
	assert.Contains(t, res.stdout, "stage.held failed (setup)")
	assert.Contains(t, res.stdout, "--lock-timeout")
	w.write("go", "")
	hres := holder.wait(t)
	require.Equal(t, 0, hres.code, hres.String())
	assert.Equal(t, 1, w.countLines("counts/held"))
}

// configPipeline writes data.txt, its content set by var.size; the node
// waits for the file go_SIZE first, so that the test holds it running.
const configPipeline = `
pipeline "configs" {}
variable "size" {
  type    = number
  default = 1000
}
stage "command" "gen" {
  run     = ["sh", "-c", "while [ ! -f go_${var.size} ]; do sleep 0.02; done; seq ${var.size} > data.txt; echo x >> counts/gen_${var.size}"]
  outputs = ["data.txt"]
}
`

// TestTwoConfigurationsWritingOneFileTakeTurns: two applies in one
// workspace whose nodes are different work (another --var) but write one
// file do not run at once. The second waits, saying which apply writes the
// file, and runs once the first has recorded its output: each record holds
// its own configuration's file (before, the first to finish recorded the
// other's content under its key, and every later cache hit restored it).
// A restore of the first configuration while the second runs waits too.
func TestTwoConfigurationsWritingOneFileTakeTurns(t *testing.T) {
	w := newWS(t, configPipeline)
	w.write("counts/.keep", "")
	env := []string{"CAIRN_NO_FSYNC=1"}
	first := w.start(env, "apply", "pipeline.hcl")
	w.startedPID("stage.gen")
	second := w.start(env, "apply", "pipeline.hcl", "--var", "size=2000")
	takeTurns(t, w, first, second)

	// Each configuration's record restores its own file, in a workspace
	// of its own (the cache shared).
	other := newWS(t, configPipeline)
	for _, size := range []int{1000, 2000} {
		res := other.run(env, "--cache", w.cache, "apply", "pipeline.hcl", "--var", fmt.Sprintf("size=%d", size))
		require.Equal(t, 0, res.code, res.String())
		assert.Contains(t, res.stdout, "0 ran, 1 cached")
		assert.Equal(t, size, other.countLines("data.txt"), "size=%d's record", size)
	}
	assert.Equal(t, 1, w.countLines("counts/gen_1000"))
	assert.Equal(t, 1, w.countLines("counts/gen_2000"))

	// While size=3000 runs, a restore of size=1000 (its output not in
	// place) waits for it rather than writing data.txt under it.
	third := w.start(env, "apply", "pipeline.hcl", "--var", "size=3000")
	e2etest.WaitFor(t, "size=3000 to start", 30*time.Second, func() bool {
		return strings.Contains(third.out.String(), "stage.gen  started")
	})
	restore := w.start(env, "apply", "pipeline.hcl")
	e2etest.WaitFor(t, "the restore to wait", 30*time.Second, func() bool {
		return strings.Contains(restore.out.String(), "stage.gen waits: pid ")
	})
	w.write("go_3000", "")
	res := third.wait(t)
	require.Equal(t, 0, res.code, res.String())
	res = restore.wait(t)
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "0 ran, 1 cached")
	assert.Equal(t, 1000, w.countLines("data.txt"), "restored after size=3000 recorded its own")
	res = other.run(env, "--cache", w.cache, "apply", "pipeline.hcl", "--var", "size=3000")
	require.Equal(t, 0, res.code, res.String())
	assert.Equal(t, 3000, other.countLines("data.txt"), "size=3000's record")
}

// TestTwoConfigurationsWritingOneFileTakeTurnsWhateverTheWay: the second
// apply of TestTwoConfigurationsWritingOneFileTakeTurns waits all the
// same when it reaches the workspace through a symlink, or uses another
// cache (before, the path's lock was taken by the path as given, in the
// cache: both ran at once, and size=1000's record held 3000 lines).
func TestTwoConfigurationsWritingOneFileTakeTurnsWhateverTheWay(t *testing.T) {
	for _, way := range []string{"link", "cache"} {
		t.Run(way, func(t *testing.T) {
			w := newWS(t, configPipeline)
			w.write("counts/.keep", "")
			env := []string{"CAIRN_NO_FSYNC=1"}
			first := w.start(env, "apply", "pipeline.hcl")
			w.startedPID("stage.gen")
			args := []string{"apply", "pipeline.hcl", "--var", "size=2000"}
			switch way {
			case "link":
				link := filepath.Join(t.TempDir(), "ws")
				require.NoError(t, os.Symlink(w.root, link))
				args = append([]string{"--chdir", link}, args...)
			case "cache":
				args = append([]string{"--cache", t.TempDir()}, args...)
			}
			second := w.start(env, args...)
			takeTurns(t, w, first, second)

			// size=1000's record holds its own file.
			other := newWS(t, configPipeline)
			res := other.run(env, "--cache", w.cache, "apply", "pipeline.hcl")
			require.Equal(t, 0, res.code, res.String())
			assert.Contains(t, res.stdout, "0 ran, 1 cached")
			assert.Equal(t, 1000, other.countLines("data.txt"))
		})
	}
}

// takeTurns waits for second (size=2000) to wait for first (size=1000,
// running) because it writes data.txt too, lets both go and checks that
// both succeeded, second last.
func takeTurns(t *testing.T, w *ws, first, second *started) {
	t.Helper()
	e2etest.WaitFor(t, "the second apply to wait", 30*time.Second, func() bool {
		return strings.Contains(second.out.String(), "stage.gen waits: pid ")
	})
	assert.Regexp(t, `stage\.gen waits: pid \d+, run \S+ is running a node that writes data\.txt too`, second.out.String())
	w.write("go_2000", "")
	w.write("go_1000", "")
	res := first.wait(t)
	require.Equal(t, 0, res.code, res.String())
	res = second.wait(t)
	require.Equal(t, 0, res.code, res.String())
	assert.Equal(t, 2000, w.countLines("data.txt"), "the second apply ran last")
}
