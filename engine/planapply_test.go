package engine

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/gpu"
)

// tourPipeline is README.md's tour, with a reader of the whole data folder.
const tourPipeline = `
pipeline "tour" {}

variable "sizes" {
  type    = map(number)
  default = { small = 10, large = 1000 }
}

stage "command" "gen" {
  for_each = var.sizes
  run      = ["sh", "-c", "mkdir -p data && seq ${each.value} > data/${each.key}.txt"]
  outputs  = ["data/${each.key}.txt"]
}

stage "command" "stats" {
  for_each = var.sizes
  run      = ["sh", "-c", "mkdir -p stats && echo \"{\\\"lines\\\": $(wc -l < data/${each.key}.txt)}\" > stats/${each.key}.json"]
  inputs   = ["data/${each.key}.txt"]
  after    = [stage.gen[each.key]]
  result   = "stats/${each.key}.json"

  postcondition {
    condition     = self.result.lines == each.value
    error_message = "expected ${each.value} lines, got ${self.result.lines}"
  }
}

stage "command" "all" {
  run     = ["sh", "-c", "cat data/*.txt | wc -l > total.txt"]
  inputs  = ["data"]
  after   = [stage.gen]
  outputs = ["total.txt"]
}
`

// planSets is what a plan says, by action.
func planSets(p *plan.Plan) map[string][]string {
	out := map[string][]string{}
	for _, pn := range p.Nodes {
		if !pn.Skipped {
			out[pn.Action] = append(out[pn.Action], pn.Node.Addr)
		}
	}
	return out
}

// plannedByAddr is p's nodes by address.
func plannedByAddr(p *plan.Plan) map[string]*plan.PlannedNode {
	byAddr := map[string]*plan.PlannedNode{}
	for _, pn := range p.Nodes {
		byAddr[pn.Node.Addr] = pn
	}
	return byAddr
}

// ranSet is the nodes whose process an apply started.
func ranSet(r applyRun) []string {
	var out []string
	for _, ns := range r.res.nodes {
		if ns.status == plan.OK || ns.status == plan.Failed && ns.res != nil {
			out = append(out, ns.n.Addr)
		}
	}
	sort.Strings(out)
	return out
}

// The README's tour: after an apply with other sizes, plan with the
// defaults again finds the cached results that apply restores, instead of
// digesting the workspace's newer data files.
func TestPlanDigestsAnUpstreamsOutputAsRestored(t *testing.T) {
	w := newWorkspace(t, tourPipeline)
	r := w.apply(ApplyOptions{})
	require.Equal(t, 5, r.res.Ran, r.out)
	r = w.apply(ApplyOptions{}, "sizes={small=10, large=2000}")
	require.Equal(t, 3, r.res.Ran, r.out)
	require.Equal(t, `{"lines": 2000}`+"\n", w.Read("stats/large.json"))

	p := w.Plan(plan.Options{})
	assert.Equal(t, map[string][]string{plan.ActCached: {`stage.gen["large"]`, `stage.gen["small"]`, `stage.stats["large"]`, `stage.stats["small"]`, "stage.all"}}, planSets(p))
	assert.Equal(t, 0, p.ToRun)
	r = w.apply(ApplyOptions{})
	assert.Empty(t, ranSet(r), r.out)
	assert.Equal(t, 5, r.res.Cached, r.out)
	assert.Equal(t, "1010\n", w.Read("total.txt"))

	// A file below the folder input that no upstream restores still counts.
	w.Write("data/extra.txt", "x\n")
	p = w.Plan(plan.Options{})
	assert.Equal(t, []string{"stage.all"}, planSets(p)[plan.ActRun])
	assert.Contains(t, p.Nodes[len(p.Nodes)-1].Reasons, "input data changed")
	r = w.apply(ApplyOptions{})
	assert.Equal(t, []string{"stage.all"}, ranSet(r), r.out)
}

// When the upstream that writes an input runs, plan cannot know the
// input's content: the reader may run, and says on what it depends.
func TestPlanSaysMayRunWhenAnInputWaitsForAnUpstream(t *testing.T) {
	w := newWorkspace(t, tourPipeline)
	w.apply(ApplyOptions{})
	p := w.Plan(plan.Options{}, "sizes={small=10, large=2000}")
	sets := planSets(p)
	assert.Equal(t, []string{`stage.gen["large"]`}, sets[plan.ActRun])
	assert.Equal(t, []string{`stage.stats["large"]`, "stage.all"}, sets[plan.ActMayRun])
	for _, pn := range p.Nodes {
		if pn.Action == plan.ActMayRun {
			assert.Equal(t, []string{`depends on the output of stage.gen["large"]`}, pn.Reasons, pn.Node.Addr)
			assert.Empty(t, pn.Key)
		}
	}
	var out strings.Builder
	require.NoError(t, p.Render(&out))
	assert.Contains(t, out.String(), `? stage.stats["large"]  may run: depends on the output of stage.gen["large"]`)
	assert.Contains(t, out.String(), "Plan: 1 to run, 2 may run, 2 cached.")
}

// postPipeline: a cached node whose postcondition fails, with a downstream
// that is skipped, one below it, and one that runs on upstream failure.
const postPipeline = `
pipeline "post" {}

variable "want" {
  type    = number
  default = 1
}

stage "command" "score" {
  run    = ["sh", "-c", "echo '{\"v\": 1}' > score.json"]
  result = "score.json"
  postcondition {
    condition     = self.result.v == var.want
    error_message = "v is ${self.result.v}, not ${var.want}"
  }
}

stage "command" "use" {
  run     = ["sh", "-c", "echo used > use.txt"]
  after   = [stage.score]
  outputs = ["use.txt"]
}

stage "command" "below" {
  run     = ["sh", "-c", "echo below > below.txt"]
  after   = [stage.use]
  outputs = ["below.txt"]
}

stage "command" "report" {
  on_upstream_failure = "run"
  run                 = ["sh", "-c", "echo ${stage.score.status} ${stage.score.class} ${jsonencode(stage.score.result)} > report.txt"]
  outputs             = ["report.txt"]
}
`

// After a postcondition fails on a cache hit, plan shows what apply does:
// the downstream skipped, with the reason; the node that runs on upstream
// failure evaluated with its upstream failed.
func TestPlanFollowsAFailingPostconditionOnACacheHit(t *testing.T) {
	w := newWorkspace(t, postPipeline)
	r := w.apply(ApplyOptions{})
	require.Equal(t, 4, r.res.Ran, r.out)
	require.Equal(t, "ok {v:1}\n", w.Read("report.txt"))

	p := w.Plan(plan.Options{}, "want=2")
	byAddr := plannedByAddr(p)
	assert.Equal(t, plan.ActCached, byAddr["stage.score"].Action)
	assert.Equal(t, []string{"postcondition fails: v is 1, not 2"}, byAddr["stage.score"].Reasons)
	assert.Equal(t, plan.ActSkip, byAddr["stage.use"].Action)
	assert.Equal(t, []string{"upstream stage.score failed"}, byAddr["stage.use"].Reasons)
	assert.Equal(t, plan.ActSkip, byAddr["stage.below"].Action)
	assert.Equal(t, []string{"upstream stage.use skipped"}, byAddr["stage.below"].Reasons)
	rep := byAddr["stage.report"]
	assert.Equal(t, plan.ActRun, rep.Action)
	require.NotNil(t, rep.Spec)
	assert.Contains(t, rep.Spec.Args["run"].Index(cty.NumberIntVal(2)).AsString(), "echo failed postcondition null", "a refused result is not handed on")
	var out strings.Builder
	require.NoError(t, p.Render(&out))
	assert.Contains(t, out.String(), "- stage.use     skipped: upstream stage.score failed")
	assert.Contains(t, out.String(), "Plan: 1 to run, 1 cached, 2 skipped.")

	r = w.apply(ApplyOptions{}, "want=2")
	assert.Equal(t, []string{"stage.report"}, ranSet(r), r.out)
	assert.Equal(t, 2, r.res.Skipped, r.out)
	assert.Equal(t, "failed postcondition null\n", w.Read("report.txt"))
	assert.Equal(t, rep.Key, r.res.nodes[rep.Node.ID].key, "plan keyed it as apply did")

	// Again: the report is cached now, as plan says.
	p = w.Plan(plan.Options{}, "want=2")
	assert.Equal(t, []string{"stage.score", "stage.report"}, planSets(p)[plan.ActCached])
	r = w.apply(ApplyOptions{}, "want=2")
	assert.Empty(t, ranSet(r), r.out)
}

// thresholdPipeline: a cached node whose postcondition reads a threshold
// another stage makes, and a node that reports its status.
const thresholdPipeline = `
pipeline "p" {}

variable "min" { default = 0.4 }

stage "command" "thr" {
  run    = ["sh", "-c", "echo '{\"min\": ${var.min}}' > thr.json"]
  result = "thr.json"
}

stage "command" "m" {
  run    = ["sh", "-c", "echo '{\"acc\": 0.5}' > m.json"]
  result = "m.json"
  postcondition {
    condition     = self.result.acc >= stage.thr.result.min
    error_message = "acc ${self.result.acc} below ${stage.thr.result.min}"
  }
}

stage "command" "summ" {
  on_upstream_failure = "run"
  run     = ["sh", "-c", "echo m=${stage.m.status} > summ.txt"]
  outputs = ["summ.txt"]
}
`

// A cached node whose postcondition reads an upstream that is to run may
// pass or fail it: what a downstream sees of it (its status) is not known
// at plan time, and the downstream may run. Plan listed it cached, and
// apply ran it (and the apply of a saved plan failed it, its key changed).
func TestPlanFollowsAPostconditionWaitingForAnUpstream(t *testing.T) {
	w := newWorkspace(t, thresholdPipeline)
	r := w.apply(ApplyOptions{})
	require.Equal(t, 3, r.res.Ran, r.out)

	p := w.Plan(plan.Options{}, "min=0.9")
	byAddr := plannedByAddr(p)
	assert.Equal(t, plan.ActRun, byAddr["stage.thr"].Action)
	assert.Equal(t, plan.ActCached, byAddr["stage.m"].Action)
	assert.Equal(t, []string{"waits for stage.thr, which will run"}, byAddr["stage.m"].Reasons)
	assert.Equal(t, plan.ActMayRun, byAddr["stage.summ"].Action)
	assert.Equal(t, []string{"depends on the output of stage.m"}, byAddr["stage.summ"].Reasons)

	r = w.apply(ApplyOptions{}, "min=0.9")
	assert.Equal(t, []string{"stage.summ", "stage.thr"}, ranSet(r), r.out)
	assert.Equal(t, 1, r.res.Failed, r.out)
	assert.Equal(t, "m=failed\n", w.Read("summ.txt"))

	// A threshold made before: every node is the work of an earlier
	// apply, and plan knows the postcondition holds.
	p = w.Plan(plan.Options{}, "min=0.4")
	assert.Equal(t, []string{"stage.thr", "stage.m", "stage.summ"}, planSets(p)[plan.ActCached])
	r = w.apply(ApplyOptions{}, "min=0.4")
	assert.Empty(t, ranSet(r), r.out)
	assert.Equal(t, "m=ok\n", w.Read("summ.txt"))

	// A new threshold the result passes: summ may run, and is found to
	// be the first apply's work.
	p = w.Plan(plan.Options{}, "min=0.3")
	assert.Equal(t, plan.ActMayRun, plannedByAddr(p)["stage.summ"].Action)
	r = w.apply(ApplyOptions{}, "min=0.3")
	assert.Equal(t, []string{"stage.thr"}, ranSet(r), r.out)
	assert.Equal(t, "m=ok\n", w.Read("summ.txt"))
}

const refusedRestorePipeline = `
variable "mode" { default = "file" }

stage "command" "s" {
  run     = ["sh", "-c", var.mode == "file" ? "rm -rf res; echo F > res" : "rm -rf res; mkdir res; echo D > res/a"]
  outputs = ["res"]
}

stage "command" "use" {
  run     = ["sh", "-c", "echo used-${var.mode} > use.txt"]
  after   = [stage.s]
  outputs = ["use.txt"]
}

stage "command" "below" {
  run     = ["sh", "-c", "echo below-${var.mode} > below.txt"]
  after   = [stage.use]
  outputs = ["below.txt"]
}

stage "command" "report" {
  on_upstream_failure = "run"
  run                 = ["sh", "-c", "echo ${var.mode} ${stage.s.status} ${stage.s.class} > report.txt"]
  outputs             = ["report.txt"]
}
`

// A node apply is sure to refuse (here a cached output that something of
// the user's stands in the way of; an optimizer job's interrupted out
// folder is another) fails at apply, and its downstream is skipped: plan
// says so, with apply's reason, and does not list them to run or as
// cached; the node that runs on upstream failure is planned with it
// failed, and keyed as apply keys it.
func TestPlanFollowsARefusedNode(t *testing.T) {
	w := newWorkspace(t, refusedRestorePipeline)
	require.Equal(t, 4, w.apply(ApplyOptions{}).res.Ran)
	require.Equal(t, 4, w.apply(ApplyOptions{}, "mode=dir").res.Ran)
	w.Write("res/notes.txt", "mine\n")

	p := w.Plan(plan.Options{})
	byAddr := plannedByAddr(p)
	require.NotEmpty(t, byAddr["stage.s"].Refusal)
	assert.Equal(t, plan.ActSkip, byAddr["stage.use"].Action)
	assert.Equal(t, []string{"upstream stage.s failed"}, byAddr["stage.use"].Reasons)
	assert.Equal(t, plan.ActSkip, byAddr["stage.below"].Action)
	assert.Equal(t, []string{"upstream stage.use skipped"}, byAddr["stage.below"].Reasons)
	rep := byAddr["stage.report"]
	assert.Equal(t, plan.ActRun, rep.Action)
	require.NotNil(t, rep.Spec)
	assert.Contains(t, rep.Spec.Args["run"].Index(cty.NumberIntVal(2)).AsString(), "echo file failed result")
	var out strings.Builder
	require.NoError(t, p.Render(&out))
	assert.Contains(t, out.String(), "- stage.below   skipped: upstream stage.use skipped")
	assert.Contains(t, out.String(), "Plan: 1 to run, 1 refused, 0 cached, 2 skipped.")

	r := w.apply(ApplyOptions{})
	f := failureOf(r, "stage.s")
	require.NotNil(t, f, r.out)
	assert.Equal(t, "result", f.Class)
	assert.Equal(t, []string{"stage.report"}, ranSet(r), r.out)
	assert.Equal(t, 2, r.res.Skipped, r.out)
	assert.Equal(t, "file failed result\n", w.Read("report.txt"))
	assert.Equal(t, "used-dir\n", w.Read("use.txt"), "skipped: not restored")
	assert.Equal(t, rep.Key, r.res.nodes[rep.Node.ID].key, "plan keyed it as apply did")
}

// slotPipeline collects one decision slot, and reads what it collected.
const slotPipeline = `
pipeline "slot" {}

variable "msg" {
  type    = string
  default = "a"
}

stage "slot" "collect" {
  slot             = "s1"
  run              = ["sh", "-c", "echo ${var.msg}"]
  gpus             = 1
  memory_limit_mib = 1000
  ledger           = "ledger"
}

stage "command" "use" {
  run     = ["sh", "-c", "echo used > use.txt"]
  after   = [stage.collect]
  outputs = ["use.txt"]
}
`

// A slot its ledger holds as collected by a node with another key (its
// command edited) is refused by apply, which starts nothing: plan says
// so, with apply's reason, counts it refused and not to run, and skips
// what reads it, as apply does.
func TestPlanRefusesASlotCollectedUnderAnotherKey(t *testing.T) {
	w := newWorkspace(t, slotPipeline)
	leases := t.TempDir()
	pool, err := gpu.NewPool(func(k string) string {
		return map[string]string{"CAIRN_GPUS": "sim:1", "CAIRN_LEASE_DIR": leases}[k]
	})
	require.NoError(t, err)
	r := w.apply(ApplyOptions{GPUs: pool})
	require.Equal(t, 0, r.res.Failed, r.out)
	require.Equal(t, 2, r.res.Ran, r.out)

	p := w.Plan(plan.Options{}, "msg=b")
	byAddr := plannedByAddr(p)
	why := byAddr["stage.collect"].Refusal
	assert.Contains(t, why, "slot s1 was collected in ledger ledger by a node with another key")
	assert.Equal(t, plan.ActSkip, byAddr["stage.use"].Action)
	assert.Equal(t, []string{"upstream stage.collect failed"}, byAddr["stage.use"].Reasons)
	var out strings.Builder
	require.NoError(t, p.Render(&out))
	assert.Contains(t, out.String(), "! stage.collect  refused: "+why)
	assert.Contains(t, out.String(), "Plan: 0 to run, 1 refused, 0 cached, 1 skipped.")

	r = w.apply(ApplyOptions{GPUs: pool}, "msg=b")
	f := failureOf(r, "stage.collect")
	require.NotNil(t, f, r.out)
	assert.Equal(t, "setup", f.Class)
	assert.Equal(t, why, f.Message, "plan's reason is apply's")
	assert.Empty(t, ranSet(r), r.out)
	assert.Equal(t, 1, r.res.Skipped, r.out)

	// Not collected under another key: the node with the slot's own key
	// is not refused (here cached).
	p = w.Plan(plan.Options{})
	assert.Empty(t, plannedByAddr(p)["stage.collect"].Refusal)
	assert.Equal(t, plan.ActCached, plannedByAddr(p)["stage.collect"].Action)
}

// A postcondition that cannot be evaluated on a cached result (an
// attribute the result lacks) or is not true or false fails the node at
// apply: plan says so too, and does not call the node cached and its
// downstream to run.
func TestPlanFollowsAPostconditionThatCannotBeEvaluated(t *testing.T) {
	w := newWorkspace(t, `
pipeline "post" {}

variable "field" {
  type    = string
  default = "v"
}

stage "command" "score" {
  run    = ["sh", "-c", "echo '{\"v\": 1}' > score.json"]
  result = "score.json"
  postcondition {
    condition     = var.field == "null" ? null : self.result[var.field] == 1
    error_message = "v is not 1"
  }
}

stage "command" "use" {
  run   = ["true"]
  after = [stage.score]
}
`)
	r := w.apply(ApplyOptions{})
	require.Equal(t, 2, r.res.Ran, r.out)
	for field, why := range map[string]string{
		"x":    `the postcondition could not be evaluated: \S*pipeline\.hcl:13:61: Invalid index`,
		"null": `\S*pipeline\.hcl:13:21: the postcondition is null, not true or false`,
	} {
		p := w.Plan(plan.Options{}, "field="+field)
		score, use := p.Nodes[0], p.Nodes[1]
		assert.Equal(t, plan.ActCached, score.Action, field)
		require.Len(t, score.Reasons, 1, field)
		assert.Regexp(t, "^postcondition fails: "+why, score.Reasons[0], field)
		assert.Equal(t, plan.ActSkip, use.Action, field)
		r = w.apply(ApplyOptions{}, "field="+field)
		assert.Equal(t, 1, r.res.Failed, r.out)
		assert.Equal(t, 1, r.res.Skipped, r.out)
		assert.Regexp(t, `failed \(postcondition\): `+why, r.out, field)
	}
}

// An error_message that cannot be evaluated says where, as file:line:col,
// not in hcl's "file:6,40-45" form.
func TestErrorMessageThatCannotBeEvaluatedSaysWhere(t *testing.T) {
	w := newWorkspace(t, `
stage "command" "a" {
  run    = ["sh", "-c", "echo '{\"y\": 1}' > r.json"]
  result = "r.json"
  postcondition {
    condition     = self.result.y > 5
    error_message = "y is ${self.result.zz}"
  }
}
`)
	r := w.apply(ApplyOptions{})
	assert.Equal(t, 1, r.res.Failed, r.out)
	assert.Regexp(t, `failed \(postcondition\): \(the error_message could not be evaluated: \S*pipeline\.hcl:7:40: Unsupported attribute`, r.out)
}

func TestPlanRestoresAMissingInputFolder(t *testing.T) {
	// An input folder that only the cached upstream's restore makes.
	w := newWorkspace(t, tourPipeline)
	w.apply(ApplyOptions{})
	require.NoError(t, os.RemoveAll(filepath.Join(w.Root, "data")))
	p := w.Plan(plan.Options{})
	assert.Equal(t, 5, p.Cached, "the restore makes data/ again")
	r := w.apply(ApplyOptions{})
	assert.Empty(t, ranSet(r), r.out)
}

// Plan digests a folder input as apply leaves it: restoring a cached
// upstream removes another configuration's files from its declared
// folder, and the folders that empties, so plan, apply and a saved plan's
// apply agree that the reader is cached.
func TestPlanModelsWhatRestoreRemoves(t *testing.T) {
	w := newWorkspace(t, `
pipeline "t" {}
variable "mode" {
  type    = string
  default = "a"
}
stage "command" "w" {
  run     = ["sh", "-c", "rm -rf od && mkdir -p od/${var.mode} && echo ${var.mode} > od/${var.mode}/f && echo ${var.mode} > od/${var.mode}.txt"]
  outputs = ["od"]
}
stage "command" "r" {
  run     = ["sh", "-c", "find od | sort > r.txt"]
  inputs  = ["od"]
  outputs = ["r.txt"]
}
`)
	r := w.apply(ApplyOptions{})
	require.Equal(t, 0, r.res.Failed, r.out)
	first := w.Read("r.txt")
	r = w.apply(ApplyOptions{}, "mode=b")
	require.Equal(t, 0, r.res.Failed, r.out)

	p := w.Plan(plan.Options{})
	assert.Equal(t, map[string][]string{plan.ActCached: {"stage.w", "stage.r"}}, planSets(p))
	// As a saved plan applies it: each node's key must be the plan's.
	r = w.apply(ApplyOptions{Exact: true})
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.Equal(t, 2, r.res.Cached, r.out)
	assert.Equal(t, first, w.Read("r.txt"))
	assert.NoDirExists(t, filepath.Join(w.Root, "od/b"))
}

// A cached writer's output replaced by a link to a file of the same
// content: apply's restore replaces the link by the file (it leaves only
// a regular file that matches), so plan digests the reader's folder input
// with the file there, and plan, apply and a saved plan's apply agree that
// the reader is cached. With the writer's file or its folder declared.
func TestPlanDigestsALinkedOutputAsRestored(t *testing.T) {
	for _, out := range []string{"data/gen.txt", "data"} {
		t.Run(out, func(t *testing.T) {
			w := newWorkspace(t, `
pipeline "t" {}
stage "command" "gen" {
  run     = ["sh", "-c", "mkdir -p data && echo gen > data/gen.txt"]
  outputs = ["`+out+`"]
}
stage "command" "r" {
  run     = ["sh", "-c", "cat data/* > all.txt"]
  inputs  = ["data"]
  outputs = ["all.txt"]
}
`)
			r := w.apply(ApplyOptions{})
			require.Equal(t, 2, r.res.Ran, r.out)
			w.Write("copy.txt", "gen\n")
			require.NoError(t, os.Remove(filepath.Join(w.Root, "data/gen.txt")))
			require.NoError(t, os.Symlink("../copy.txt", filepath.Join(w.Root, "data/gen.txt")))

			p := w.Plan(plan.Options{})
			assert.Equal(t, map[string][]string{plan.ActCached: {"stage.gen", "stage.r"}}, planSets(p))
			// As a saved plan applies it: each node's key must be the plan's.
			r = w.apply(ApplyOptions{Exact: true})
			require.Zero(t, r.res.Failed, r.out)
			assert.Equal(t, 2, r.res.Cached, r.out)
			fi, err := os.Lstat(filepath.Join(w.Root, "data/gen.txt"))
			require.NoError(t, err)
			assert.True(t, fi.Mode().IsRegular(), "the restore replaced the link by the file")
		})
	}
}

// A reader of an output that is a file in one configuration and a folder
// in another: plan digests it as apply leaves it once the cached writer's
// restore has replaced the other configuration's output, either way, so
// plan, apply and a saved plan's apply agree that the readers are cached
// (the one below the folder too, where a file stands now).
func TestPlanDigestsAFileReplacedByACachedFolder(t *testing.T) {
	w := newWorkspace(t, `
pipeline "t" {}
variable "mode" { default = "file" }
stage "command" "c" {
  run     = ["sh", "-c", var.mode == "file" ? "rm -rf out/x; mkdir -p out && echo F > out/x" : "rm -rf out/x; mkdir -p out/x/sub && echo D > out/x/sub/f"]
  outputs = ["out/x"]
}
stage "command" "d" {
  run     = ["sh", "-c", "ls -R out > d.txt"]
  inputs  = ["out/x"]
  outputs = ["d.txt"]
}
stage "command" "e" {
  run     = ["sh", "-c", "ls -R out > e.txt"]
  inputs  = [var.mode == "file" ? "out/x" : "out/x/sub"]
  outputs = ["e.txt"]
}
`)
	for _, mode := range []string{"file", "dir", "file"} {
		r := w.apply(ApplyOptions{}, "mode="+mode)
		require.Zero(t, r.res.Failed, r.out)
	}
	all := map[string][]string{plan.ActCached: {"stage.c", "stage.d", "stage.e"}}
	for _, mode := range []string{"dir", "file"} {
		assert.Equal(t, all, planSets(w.Plan(plan.Options{}, "mode="+mode)), "plan mode=%s", mode)
		// As a saved plan applies it: each node's key must be the plan's.
		r := w.apply(ApplyOptions{Exact: true}, "mode="+mode)
		require.Zero(t, r.res.Failed, r.out)
		assert.Equal(t, 3, r.res.Cached, "mode=%s: %s", mode, r.out)
	}
}
