package engine

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
)

// The reader is declared before the writer and names it nowhere: only its
// inputs say that it reads what gen writes.
const readsOutputs = `
pipeline "t" {}
variable "sizes" {
  type    = map(number)
  default = { small = 3, large = 5 }
}
stage "command" "stats" {
  for_each = var.sizes
  run      = ["sh", "-c", "mkdir -p stats && wc -l < data/${each.key}.txt > stats/${each.key}.txt"]
  inputs   = ["data/${each.key}.txt"]
  outputs  = ["stats/${each.key}.txt"]
}
stage "command" "gen" {
  for_each = var.sizes
  run      = ["sh", "-c", "mkdir -p data && seq ${each.value} > data/${each.key}.txt"]
  outputs  = ["data/${each.key}.txt"]
}
stage "command" "all" {
  run     = ["sh", "-c", "ls data > listing.txt"]
  inputs  = ["data/"]
  outputs = ["listing.txt"]
}
`

func depAddrs(g *plan.Graph, addr string) []string {
	var out []string
	for _, id := range g.ByAddr[addr].Deps {
		out = append(out, g.Nodes[id].Addr)
	}
	return out
}

func TestInputNamingAnOutputIsADependency(t *testing.T) {
	w := newWorkspace(t, readsOutputs)
	g := w.Load().Graph
	// Instance by instance: stats["large"] reads data/large.txt only.
	assert.Equal(t, []string{`stage.gen["large"]`}, depAddrs(g, `stage.stats["large"]`))
	assert.Equal(t, []string{`stage.gen["small"]`}, depAddrs(g, `stage.stats["small"]`))
	// A folder input depends on every output below it.
	assert.Equal(t, []string{`stage.gen["large"]`, `stage.gen["small"]`}, depAddrs(g, "stage.all"))
	// The nodes are in an order where every node follows its upstreams.
	for _, n := range g.Nodes {
		for _, d := range n.Deps {
			assert.Less(t, d, n.ID, "%s before its upstream %s", n.Addr, g.Nodes[d].Addr)
		}
		assert.Equal(t, n, g.Nodes[n.ID])
	}

	p := w.Plan(plan.Options{})
	for _, pn := range p.Nodes {
		if pn.Node.Addr == `stage.stats["large"]` {
			assert.Equal(t, plan.ActMayRun, pn.Action)
			assert.Equal(t, []string{`depends on the output of stage.gen["large"]`}, pn.Reasons)
		}
	}

	r := w.apply(ApplyOptions{})
	assert.Equal(t, 5, r.res.Ran, r.out)
	assert.Equal(t, 0, r.res.Failed, r.out)
	assert.Equal(t, "5\n", w.Read("stats/large.txt"))
	assert.Equal(t, "large.txt\nsmall.txt\n", w.Read("listing.txt"))

	// The writer's output keys the reader: a new value reruns the writer,
	// the readers of what it rewrote, and nothing else.
	p = w.Plan(plan.Options{}, `sizes={small=3, large=7}`)
	var torun []string
	for _, pn := range p.Nodes {
		if pn.Action == plan.ActRun || pn.Action == plan.ActMayRun {
			torun = append(torun, pn.Node.Addr)
		}
	}
	assert.Equal(t, []string{`stage.gen["large"]`, `stage.stats["large"]`, "stage.all"}, torun)
	r = w.apply(ApplyOptions{}, `sizes={small=3, large=7}`)
	assert.Equal(t, 3, r.res.Ran, r.out)
	assert.Equal(t, "7\n", w.Read("stats/large.txt"))
}

func TestInputBelowAnOutputFolder(t *testing.T) {
	w := newWorkspace(t, `
stage "command" "use" {
  run    = ["cat", "out/x.txt"]
  inputs = ["./out/x.txt"]
}
stage "command" "make" {
  run     = ["sh", "-c", "mkdir -p out && echo x > out/x.txt"]
  outputs = ["out/"]
}
stage "command" "unrelated" {
  run    = ["true"]
  inputs = ["outside.txt"]
}
`)
	w.Write("outside.txt", "o\n")
	g := w.Load().Graph
	assert.Equal(t, []string{"stage.make"}, depAddrs(g, "stage.use"))
	assert.Empty(t, depAddrs(g, "stage.unrelated"))
	r := w.apply(ApplyOptions{})
	assert.Equal(t, 3, r.res.Ran, r.out)
	assert.Equal(t, 0, r.res.Failed, r.out)
}

func loadDiags(t *testing.T, pipeline string) string {
	t.Helper()
	w := newWorkspace(t, pipeline)
	_, diags := plan.Load(plan.LoadOptions{Path: filepath.Join(w.Root, "pipeline.hcl"), Root: w.Root})
	require.True(t, diags.HasErrors(), "loaded without errors")
	var sb strings.Builder
	for _, d := range diags {
		sb.WriteString(d.Subject.String() + ": " + d.Summary + ": " + d.Detail + "\n")
	}
	return sb.String()
}

func TestInputWrittenBySameStageRefused(t *testing.T) {
	got := loadDiags(t, `
stage "command" "s" {
  for_each = toset(["a", "b"])
  run      = ["sh", "-c", "mkdir -p d && ls d > d/${each.key}.txt"]
  inputs   = ["d"]
  outputs  = ["d/${each.key}.txt"]
}
`)
	assert.Contains(t, got, `pipeline.hcl:5,15-18: Input written by the same stage: stage.s["a"] reads d (inputs), which stage.s["b"] of the same stage writes (outputs)`)
	assert.Contains(t, got, "Move the part that writes d/b.txt into a stage of its own")
}

func TestInputOfADownstreamRefusedAsCycle(t *testing.T) {
	got := loadDiags(t, `
stage "command" "first" {
  run    = ["cat", "late.txt"]
  inputs = ["late.txt"]
}
stage "command" "second" {
  after   = [stage.first]
  run     = ["sh", "-c", "echo > late.txt"]
  outputs = ["late.txt"]
}
`)
	assert.Contains(t, got, "pipeline.hcl:4,13-23: Dependency cycle: stage.first reads late.txt (inputs), which stage.second writes (outputs); but stage.second itself runs after stage.first")
}

// A node may read and rewrite its own file; that is no dependency.
func TestInputOwnOutputIsNoDependency(t *testing.T) {
	w := newWorkspace(t, `
stage "command" "bump" {
  run     = ["sh", "-c", "echo $(( $(cat n.txt) + 1 )) > n.txt"]
  inputs  = ["n.txt"]
  outputs = ["n.txt"]
}
`)
	w.Write("n.txt", "1\n")
	g := w.Load().Graph
	assert.Empty(t, depAddrs(g, "stage.bump"))
}

// Gates every job waits for, keyed only on its own gate: seed 000's RULER
// gate and AIME24 batch in small.
const gated = `
pipeline "t" {}
variable "vals" {
  type    = map(string)
  default = { a = "1", b = "1" }
}
stage "command" "check" {
  for_each = var.vals
  run      = ["sh", "-c", "mkdir -p check && echo '{\"v\": \"${each.value}\"}' > check/${each.key}.json"]
  result   = "check/${each.key}.json"
  postcondition {
    condition     = self.result.v != "bad"
    error_message = "bad value"
  }
}
stage "command" "job" {
  for_each = var.vals
  wait_for = [stage.check]
  after    = [stage.check[each.key]]
  run      = ["sh", "-c", "mkdir -p out && echo ${each.key} > out/${each.key}.txt"]
  outputs  = ["out/${each.key}.txt"]
}
`

func TestWaitForOrdersWithoutKeying(t *testing.T) {
	w := newWorkspace(t, gated)
	g := w.Load().Graph
	// job["a"] waits for both gates; only check["a"] keys it.
	assert.Equal(t, []string{`stage.check["a"]`, `stage.check["b"]`}, depAddrs(g, `stage.job["a"]`))
	ja := g.ByAddr[`stage.job["a"]`]
	assert.Equal(t, []int{g.ByAddr[`stage.check["b"]`].ID}, ja.OrderOnly)

	r := w.apply(ApplyOptions{})
	assert.Equal(t, 4, r.res.Ran, r.out)

	// A new value for b reruns b's gate and b's job only.
	p := w.Plan(plan.Options{}, `vals={a="1", b="2"}`)
	var torun []string
	for _, pn := range p.Nodes {
		if pn.Action == plan.ActRun || pn.Action == plan.ActMayRun {
			torun = append(torun, pn.Node.Addr)
		}
		if pn.Node.Addr == `stage.job["a"]` {
			require.NotNil(t, pn.Envelope, "job[a]'s key is known: check[b] does not key it")
			assert.Len(t, pn.Envelope.Upstreams, 1)
			assert.Equal(t, plan.ActCached, pn.Action)
			assert.Equal(t, []string{`waits for stage.check["b"], which will run`}, pn.Reasons)
		}
	}
	assert.Equal(t, []string{`stage.check["b"]`, `stage.job["b"]`}, torun)
	r = w.apply(ApplyOptions{}, `vals={a="1", b="2"}`)
	assert.Equal(t, 2, r.res.Ran, r.out)
	assert.Equal(t, 2, r.res.Cached, r.out)

	// The gate still holds for every job: a failing check["b"] stops
	// job["a"] too, cached as it is.
	r = w.apply(ApplyOptions{}, `vals={a="1", b="bad"}`)
	assert.Equal(t, 1, r.res.Failed, r.out)
	assert.Equal(t, 2, r.res.Skipped, r.out)
	assert.Contains(t, r.out, `upstream stage.check["b"] failed`)
}

// An input computed from a result cannot be matched when planning; when
// it turns out to be another stage's output with no dependency between
// them, the reader fails before it starts, saying what to add, instead of
// racing the writer.
func TestInputFromAResultWrittenByAnotherStageRefused(t *testing.T) {
	w := newWorkspace(t, `
stage "command" "name" {
  run    = ["sh", "-c", "echo '{\"file\": \"data/x.txt\"}' > name.json"]
  result = "name.json"
}
stage "command" "reader" {
  run    = ["cat", stage.name.result.file]
  inputs = [stage.name.result.file]
}
stage "command" "writer" {
  run     = ["sh", "-c", "mkdir -p data && echo x > data/x.txt"]
  outputs = ["data/x.txt"]
}
stage "command" "below" {
  run   = ["true"]
  after = [stage.reader]
}
`)
	r := w.apply(ApplyOptions{})
	assert.Equal(t, 1, r.res.Failed, r.out)
	assert.Equal(t, 1, r.res.Skipped, r.out)
	assert.Contains(t, r.out, "input data/x.txt is written by stage.writer (outputs, as data/x.txt), and nothing makes this node wait for it")
	assert.Contains(t, r.out, "Add after = [stage.writer] to stage.reader")

	// With stage.name cached, plan knows the path and says what apply
	// will do: fail the reader before it starts.
	text := w.PlanText(plan.Options{})
	assert.Contains(t, text, "stage.reader  run: fails before it starts (class setup): input data/x.txt is written by stage.writer")
	// and what apply does after it: skip the nodes that need it.
	assert.Contains(t, text, "stage.below   skipped: upstream stage.reader failed")

	// With the dependency written, it runs.
	w.Write("pipeline.hcl", strings.Replace(w.Read("pipeline.hcl"), `inputs = [stage.name.result.file]`, "inputs = [stage.name.result.file]\n  after  = [stage.writer]", 1))
	r = w.apply(ApplyOptions{})
	assert.Equal(t, 0, r.res.Failed, r.out)
}

// A model cache's weights computed from a result are checked as such an
// input is: another stage's output the node does not wait for fails it
// before it starts, saying what to add.
func TestModelCacheWeightsFromAResultWrittenByAnotherStageRefused(t *testing.T) {
	w := newWorkspace(t, `
stage "command" "pick" {
  run    = ["sh", "-c", "echo '{\"ckpt\": \"ckpt\"}' > pick.json"]
  result = "pick.json"
}
stage "command" "ask" {
  run         = ["true"]
  model_cache = { endpoints = ["http://127.0.0.1:9/v1"], weights = { m = stage.pick.result.ckpt } }
}
stage "command" "train" {
  run     = ["sh", "-c", "mkdir -p ckpt && echo w > ckpt/w.bin"]
  outputs = ["ckpt"]
}
`)
	r := w.apply(ApplyOptions{})
	assert.Equal(t, 1, r.res.Failed, r.out)
	assert.Contains(t, r.out, "input ckpt is written by stage.train (outputs, as ckpt), and nothing makes this node wait for it")
	assert.Contains(t, r.out, "Add after = [stage.train] to stage.ask")
}

// The other way round: an output computed from a result that a node of
// another stage reads without waiting for it.
func TestOutputFromAResultReadByAnotherStageRefused(t *testing.T) {
	w := newWorkspace(t, `
stage "command" "name" {
  run    = ["sh", "-c", "echo '{\"file\": \"data/x.txt\"}' > name.json"]
  result = "name.json"
}
stage "command" "writer" {
  run     = ["sh", "-c", "mkdir -p data && echo x > ${stage.name.result.file}"]
  outputs = [stage.name.result.file]
}
stage "command" "reader" {
  run    = ["true"]
  inputs = ["data/"]
}
`)
	r := w.apply(ApplyOptions{})
	assert.Contains(t, r.out, "data/x.txt is read by stage.reader (inputs, as data), which does not wait for this node")
	assert.Contains(t, r.out, "Add after = [stage.writer] to stage.reader")
}

// Paths a kind's own attributes name link stages as inputs and outputs
// do: an aggregate's roots, an evaluation's items, a serve stage's weights
// and a model cache's wait for the stage writing them (a model cache's
// even where its endpoints, a serve stage's, are known only once that
// runs); a stage reading an evaluation's scores or a report folder (by
// default reports/NAME) waits for it.
func TestKindPathsAreDependencies(t *testing.T) {
	w := newWorkspace(t, `
stage "command" "job" {
  run     = ["true"]
  outputs = ["runs/m/d/r/q/0"]
}
stage "aggregate" "summary" {
  roots = ["runs"]
}
stage "command" "prep" {
  run     = ["true"]
  outputs = ["data/items.jsonl"]
}
stage "evaluate" "val" {
  worker    = ["python3", "worker.py"]
  items     = "./data/items.jsonl"
  model     = "m"
  endpoints = ["http://127.0.0.1:9/v1"]
  scores    = "out/scores.jsonl"
}
stage "command" "count" {
  run    = ["wc", "-l", "out/scores.jsonl"]
  inputs = ["out/scores.jsonl"]
}
stage "pareto" "cmp" {
  rows = [{ throughput = 1, "mean@16" = 0.5 }]
}
stage "command" "publish" {
  run    = ["cat", "reports/cmp/table.md"]
  inputs = ["reports/cmp/table.md"]
}
stage "command" "train" {
  run     = ["true"]
  outputs = ["ckpt/"]
}
stage "serve" "model" {
  run     = ["sim-server", "--port", "{port}"]
  model   = "m"
  weights = "ckpt"
}
stage "command" "ask" {
  run         = ["true"]
  model_cache = { endpoints = ["http://127.0.0.1:9/v1"], weights = { m = "ckpt/step-100" } }
}
stage "command" "served" {
  run         = ["true"]
  model_cache = { endpoints = stage.model.endpoints, weights = { m = "${path.root}/ckpt" } }
}
stage "job" "sealed" {
  out            = "jobs/x"
  method         = "gepa"
  dataset        = "d"
  runtime        = "r"
  model          = "m"
  task_model     = "t"
  seed           = 0
  budget         = 600
  server_weights = { task = "ckpt", reflection = "sha256:0000000000000000000000000000000000000000000000000000000000000000" }
}
`)
	g := w.Load().Graph
	assert.Equal(t, []string{"stage.job"}, depAddrs(g, "stage.summary"))
	assert.Equal(t, []string{"stage.prep"}, depAddrs(g, "stage.val"))
	assert.Equal(t, []string{"stage.val"}, depAddrs(g, "stage.count"))
	assert.Equal(t, []string{"stage.cmp"}, depAddrs(g, "stage.publish"))
	assert.Equal(t, []string{"stage.train"}, depAddrs(g, "stage.model"))
	assert.Equal(t, []string{"stage.train"}, depAddrs(g, "stage.ask"))
	assert.Equal(t, []string{"stage.train", "stage.model"}, depAddrs(g, "stage.served"))
	assert.Equal(t, []string{"stage.train"}, depAddrs(g, "stage.sealed"), "a job's seal digests the server weights another stage writes")
	text := w.PlanText(plan.Options{})
	assert.Contains(t, text, "stage.ask      may run: depends on the output of stage.train")
	assert.Contains(t, text, "stage.val      may run: depends on the output of stage.prep")
	assert.Contains(t, text, "stage.summary  may run: depends on the output of stage.job")
}

// A kind's path that a later stage writes is a cycle, named by the
// kind's attribute.
func TestKindPathOfADownstreamRefusedAsCycle(t *testing.T) {
	got := loadDiags(t, `
stage "aggregate" "summary" {
  roots = ["runs"]
}
stage "command" "late" {
  after   = [stage.summary]
  run     = ["true"]
  outputs = ["runs/x"]
}
`)
	assert.Contains(t, got, "Dependency cycle: stage.summary reads runs (roots), which stage.late writes (outputs)")
}

// A kind's path is linked however it is spelled: null for its default
// (reports/NAME), an absolute path inside the workspace.
func TestKindPathSpellingsAreLinked(t *testing.T) {
	w := newWorkspace(t, "")
	w.Write("pipeline.hcl", `
variable "report_dir" {
  type    = string
  default = null
}
stage "pareto" "front" {
  rows    = [{ throughput = 1, "mean@16" = 0.5 }]
  out_dir = var.report_dir
}
stage "command" "pub" {
  run    = ["cat", "reports/front/table.tsv"]
  inputs = ["reports/front/table.tsv"]
}
stage "command" "train" {
  run     = ["true"]
  outputs = ["ckpt/model.bin"]
}
stage "serve" "srv" {
  run     = ["sim-server", "--port", "{port}"]
  model   = "m"
  weights = "`+filepath.Join(w.Root, "ckpt", "model.bin")+`"
}
`)
	g := w.Load().Graph
	assert.Equal(t, []string{"stage.front"}, depAddrs(g, "stage.pub"))
	assert.Equal(t, []string{"stage.train"}, depAddrs(g, "stage.srv"))
}
