package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/sim/simmodel"
)

// What an evaluation's worker reads keys its items: what it imports from
// a folder in inputs, a folder named in its arguments, a bundle's linked
// files, a file another stage writes. Each test changes one, applies
// again, and reads the scores the worker gives now, never those stored
// for what was there before.

// evalKeysWorkspace is a workspace with pipeline, in which ENDPOINT is the
// endpoint of a simulated task model serving m1, and a dataset of two
// items.
func evalKeysWorkspace(t *testing.T, pipeline string) *workspace {
	t.Helper()
	if _, err := os.Stat("/usr/bin/env"); err != nil {
		t.Skip("no /usr/bin/env")
	}
	srv, err := simmodel.Start(simmodel.Config{Models: []string{"m1"}}, "")
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	w := newWorkspace(t, strings.ReplaceAll(pipeline, "ENDPOINT", srv.URL))
	w.Write("items.jsonl", "{\"id\":\"a\",\"q\":\"1+1\"}\n{\"id\":\"b\",\"q\":\"2+2\"}\n")
	return w
}

// oneEval is a pipeline of one evaluation, stage.ev, of the dataset
// items.jsonl with worker, more attributes (attrs) written in its block,
// and more blocks (blocks) before it.
func oneEval(blocks, worker, attrs string) string {
	return `pipeline "k" {}
` + blocks + `
stage "evaluate" "ev" {
  worker    = ` + worker + `
  items     = "items.jsonl"
  model     = "m1"
  endpoints = ["ENDPOINT"]
  scores    = "out/scores.jsonl"
` + attrs + `
}
`
}

// promptWorker scores 1 every item when the text it reads (from the file
// that its arguments after --prompt name, or system.txt in the folder
// after --prompt-dir, or bundle/system.txt) is "good", else 0.
const promptWorker = `import json, sys
args, path = sys.argv[1:], "bundle/system.txt"
for i, a in enumerate(args):
    if a == "--prompt":
        path = args[i + 1]
    elif a == "--prompt-dir":
        path = args[i + 1] + "/system.txt"
    elif a.startswith("--prompt="):
        path = a.split("=", 1)[1]
prompt = open(path).read().strip()
for line in sys.stdin:
    r = json.loads(line)
    print(json.dumps({"id": r["id"], "score": 1.0 if prompt == "good" else 0.0}), flush=True)
`

// evalScores are the scores in the scores file scores.
func evalScores(t *testing.T, w *workspace, scores string) []float64 {
	t.Helper()
	var out []float64
	for _, line := range strings.Split(strings.TrimSpace(w.Read(scores)), "\n") {
		var l struct{ Score float64 }
		require.NoError(t, json.Unmarshal([]byte(line), &l), line)
		out = append(out, l.Score)
	}
	return out
}

// A file named in the worker's arguments that another stage writes makes
// the evaluation wait for that stage, and its content keys the items:
// applied with one prompt, another and the first again, the scores are
// always the prompt's in the workspace.
func TestEvaluateWorkerArgumentWrittenByAStage(t *testing.T) {
	w := evalKeysWorkspace(t, `
pipeline "k" {}
variable "p" { default = "good" }
stage "command" "gen" {
  run     = ["sh", "-c", "mkdir -p gen && echo ${var.p} > gen/prompt.txt"]
  outputs = ["gen/prompt.txt"]
}
stage "command" "gen2" {
  run     = ["sh", "-c", "mkdir -p gen2 && echo ${var.p} > gen2/prompt.txt"]
  outputs = ["gen2/prompt.txt"]
}
stage "evaluate" "ev" {
  worker    = ["python3", "w.py", "-u", "--prompt", "gen/prompt.txt", "fast", "x=y"]
  items     = "items.jsonl"
  model     = "m1"
  endpoints = ["ENDPOINT"]
  scores    = "out/scores.jsonl"
}
stage "evaluate" "ev2" {
  worker    = ["python3", "w.py", "--prompt=gen2/prompt.txt"]
  items     = "items.jsonl"
  model     = "m1"
  endpoints = ["ENDPOINT"]
  scores    = "out2/scores.jsonl"
}
`)
	w.Write("w.py", promptWorker)
	g := w.Load().Graph
	assert.Equal(t, []string{"stage.gen"}, depAddrs(g, "stage.ev"), "plain arguments link nothing")
	assert.Equal(t, []string{"stage.gen2"}, depAddrs(g, "stage.ev2"))
	text := w.PlanText(plan.Options{})
	assert.Contains(t, text, "stage.ev    may run: depends on the output of stage.gen\n")

	for _, p := range []string{"good", "bad", "good"} {
		r := w.apply(ApplyOptions{}, "p="+p)
		require.Zero(t, r.res.Failed, r.out)
		want := 1.0
		if p == "bad" {
			want = 0
		}
		assert.Equal(t, []float64{want, want}, evalScores(t, w, "out/scores.jsonl"), "prompt %s", p)
		assert.Equal(t, []float64{want, want}, evalScores(t, w, "out2/scores.jsonl"), "prompt %s", p)
	}
}

// A folder or file named in the worker's arguments that another stage
// writes is an input of the evaluation whether or not it exists when the
// plan is made: the key apply records when the writer has just run is the
// one the next plan computes (cached, not "input gen added"), and so is
// the key of a plan made while the writer's output is missing (restored
// from the cache first), which a saved plan's apply keeps.
func TestEvaluateWorkerArgumentWrittenByAStageAgreesWithPlan(t *testing.T) {
	gen := `stage "command" "gen" {
  run     = ["sh", "-c", "mkdir -p gen && echo good > gen/system.txt"]
  outputs = ["gen/system.txt"]
}`
	for name, worker := range map[string]string{
		"folder": `["python3", "w.py", "--prompt-dir", "gen"]`,
		"file":   `["python3", "w.py", "--prompt=gen/system.txt"]`,
	} {
		t.Run(name, func(t *testing.T) {
			w := evalKeysWorkspace(t, oneEval(gen, worker, ""))
			w.Write("w.py", promptWorker)
			r := w.apply(ApplyOptions{})
			require.Zero(t, r.res.Failed, r.out)
			require.Equal(t, 2, r.res.Ran, r.out)
			all := map[string][]string{plan.ActCached: {"stage.gen", "stage.ev"}}
			assert.Equal(t, all, planSets(w.Plan(plan.Options{})), "the plan after the first apply")
			r = w.apply(ApplyOptions{Exact: true})
			require.Zero(t, r.res.Failed, r.out)
			assert.Equal(t, 2, r.res.Cached, r.out)

			require.NoError(t, os.RemoveAll(filepath.Join(w.Root, "gen")))
			assert.Equal(t, all, planSets(w.Plan(plan.Options{})), "gen restored first")
			r = w.apply(ApplyOptions{Exact: true})
			require.Zero(t, r.res.Failed, r.out)
			assert.Equal(t, 2, r.res.Cached, r.out)
			assert.Equal(t, []float64{1, 1}, evalScores(t, w, "out/scores.jsonl"))
		})
	}
}

// evalRunCounts are the run counts of the node's cached record.
func evalRunCounts(t *testing.T, w *workspace, key string) map[string]int {
	t.Helper()
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	rec, ok := c.Lookup(key)
	require.True(t, ok)
	return rec.RunCounts
}

// goodThenBad applies w, whose one node scores both items 1; then edit
// makes what its worker reads score them 0: plan says why (reason), and
// the next apply evaluates both items again.
func goodThenBad(t *testing.T, w *workspace, edit func(), reason string) {
	t.Helper()
	r := w.apply(ApplyOptions{})
	require.Equal(t, 1, r.res.Ran, r.out)
	assert.Equal(t, []float64{1, 1}, evalScores(t, w, "out/scores.jsonl"))
	edit()
	pn := w.Plan(plan.Options{}).Nodes[0]
	assert.Equal(t, []string{reason}, pn.Reasons)
	r = w.apply(ApplyOptions{})
	require.Equal(t, 1, r.res.Ran, r.out)
	assert.Equal(t, []float64{0, 0}, evalScores(t, w, "out/scores.jsonl"), "the items are evaluated again")
	assert.Equal(t, 2, evalRunCounts(t, w, pn.Key)["evaluated"])
}

// helperWorker, workers/w.py, scores each item by the module helper beside
// it.
const helperWorker = `import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helper
for line in sys.stdin:
    r = json.loads(line)
    print(json.dumps({"id": r["id"], "score": helper.score(r["item"])}), flush=True)
`

// A module the worker imports from a folder in inputs keys the items: once
// it changes, the node runs and its items are evaluated again, not taken
// from the store under the keys the old module's results have.
func TestEvaluateInputsKeyItems(t *testing.T) {
	w := evalKeysWorkspace(t, oneEval("", `["python3", "workers/w.py"]`, `inputs = ["workers/"]`))
	w.Write("workers/w.py", helperWorker)
	w.Write("workers/helper.py", "def score(item): return 1.0\n")
	goodThenBad(t, w, func() { w.Write("workers/helper.py", "def score(item): return 0.0\n") }, "input workers changed")
}

// The __pycache__ Python writes beside the module the worker imports from
// a folder in inputs keys neither the node nor its items: the next apply
// takes the node from the cache and sends the model nothing. An edit of
// the module still evaluates the items again.
func TestEvaluateInputsPythonCacheKeepsKeys(t *testing.T) {
	w := evalKeysWorkspace(t, oneEval("", `["python3", "workers/w.py"]`, `inputs = ["workers/"]
  env    = { PYTHONDONTWRITEBYTECODE = "" }`))
	w.Write("workers/w.py", helperWorker)
	w.Write("workers/helper.py", "def score(item): return 1.0\n")
	ranThenCached(t, w, "stage.ev", "workers")

	// Another size: Python's cache tells sources apart by size and
	// whole seconds.
	w.Write("workers/helper.py", "def score(item): return 0.00\n")
	pn := w.Plan(plan.Options{}).Nodes[0]
	r := w.apply(ApplyOptions{})
	require.Equal(t, 1, r.res.Ran, r.out)
	assert.Equal(t, []float64{0, 0}, evalScores(t, w, "out/scores.jsonl"))
	assert.Equal(t, 2, evalRunCounts(t, w, pn.Key)["evaluated"])
}

// Numbers written in an items list keep their digits, as a dataset
// file's do: the same item written in the pipeline and in a file has one
// item key (the second stage takes it from the store) and reaches the
// worker as written.
func TestEvaluateItemsWrittenInHCLKeepDigits(t *testing.T) {
	stage := func(name, items, more string) string {
		return `stage "evaluate" "` + name + `" {
  worker    = ["python3", "echo.py"]
  items     = ` + items + `
  model     = "m1"
  endpoints = ["ENDPOINT"]
  scores    = "out/` + name + `.jsonl"
` + more + `}
`
	}
	w := evalKeysWorkspace(t, `pipeline "k" {}
`+stage("file", `"digits.jsonl"`, "")+
		stage("hcl", `[{ id = "a", n = 1.50, m = 2.0e1, l = [-0.10, { x = 1.0 }] }]`, "  after = [stage.file]\n"))
	w.Write("digits.jsonl", `{"id": "a", "n": 1.50, "m": 2.0e1, "l": [-0.10, {"x": 1.0}]}`+"\n")
	w.Write("echo.py", `import json, sys
for line in sys.stdin:
    req = json.loads(line)
    raw = line[line.index('"item":'):].strip()
    print(json.dumps({"id": req["id"], "score": 1, "outputs": {"raw": raw}}), flush=True)
`)
	r := w.apply(ApplyOptions{})
	require.Zero(t, r.res.Failed, r.out)
	var lines [2]struct {
		Key     string
		Outputs struct{ Raw string }
	}
	for i, name := range []string{"file", "hcl"} {
		require.NoError(t, json.Unmarshal([]byte(w.Read("out/"+name+".jsonl")), &lines[i]))
	}
	assert.Equal(t, `"item":{"id":"a","l":[-0.10,{"x":1.0}],"m":2.0e1,"n":1.50}}`, lines[0].Outputs.Raw)
	assert.Equal(t, lines[0], lines[1], "one item key, one request")
	assert.Contains(t, r.out, "stage.hcl  charged 0, attempted 0, infra-failures 0; items 1/1: 0 evaluated, 1 from the store")
}

// The stage's env does not key the items, on purpose: a node rerun for
// another env takes every item from the store, and plan says so.
func TestEvaluateEnvChangeSaysItemsComeFromStore(t *testing.T) {
	w := evalKeysWorkspace(t, oneEval(`variable "mode" { default = "a" }`, `["python3", "w.py"]`, `env = { MODE = var.mode }`))
	w.Write("w.py", promptWorker)
	w.Write("bundle/system.txt", "good\n")
	r := w.apply(ApplyOptions{})
	require.Equal(t, 1, r.res.Ran, r.out)
	pn := w.Plan(plan.Options{}, "mode=b").Nodes[0]
	assert.Equal(t, []string{`env: {"MODE":"a"} -> {"MODE":"b"} (items are not keyed by env: they come from the store; put what changes a result in runtime)`}, pn.Reasons)
	r = w.apply(ApplyOptions{}, "mode=b")
	require.Equal(t, 1, r.res.Ran, r.out)
	assert.Equal(t, 2, evalRunCounts(t, w, pn.Key)["from_store"])
}

// A folder named in the worker's arguments is identified by its content:
// a prompt edited in it reruns the node, and the items are evaluated with
// it.
func TestEvaluateWorkerFolderArgumentKeys(t *testing.T) {
	w := evalKeysWorkspace(t, oneEval("", `["python3", "w.py", "--prompt-dir", "prompts"]`, ""))
	w.Write("w.py", promptWorker)
	w.Write("prompts/system.txt", "good\n")
	goodThenBad(t, w, func() { w.Write("prompts/system.txt", "bad\n") }, "input prompts changed")
}

// A link in a bundle folder to a file elsewhere in the workspace is keyed
// by the file's content: editing the file reruns the node and evaluates
// the items again.
func TestEvaluateBundleLinkKeyedByContent(t *testing.T) {
	w := evalKeysWorkspace(t, oneEval("", `["python3", "w.py"]`, `bundle = ["bundle/"]`))
	w.Write("w.py", promptWorker)
	w.Write("seed/system.txt", "good\n")
	w.Write("bundle/config.txt", "style: short\n")
	require.NoError(t, os.Symlink("../seed/system.txt", filepath.Join(w.Root, "bundle/system.txt")))
	goodThenBad(t, w, func() { w.Write("seed/system.txt", "bad\n") }, "input bundle changed")
}

// A bundle folder holding a broken link, or one leading back into a
// folder it is in, is refused before anything runs as the bundle
// attribute's error (exit 2), naming the link and saying what to do;
// before, plan said the bundle "does not exist yet" and apply failed the
// node (setup), or plan pointed at the stage block with fsdigest's words.
func TestEvaluateBundleBrokenOrLoopingLinkRefused(t *testing.T) {
	for name, c := range map[string]struct{ link, to, want string }{
		"broken": {"bundle/latest", "old-run", "stage.ev: bundle bundle holds bundle/latest, a link to old-run, which does not exist (a broken link)"},
		"loop":   {"bundle/loop", "..", "stage.ev: bundle bundle holds bundle/loop, a link to .., which leads back into a folder it is in"},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorkspace(t, strings.ReplaceAll(oneEval("", `["python3", "w.py"]`, `bundle = ["bundle/"]`), "ENDPOINT", "http://127.0.0.1:9/v1"))
			w.Write("w.py", promptWorker)
			w.Write("items.jsonl", "{\"id\":\"a\"}\n")
			w.Write("bundle/system.txt", "good\n")
			require.NoError(t, os.Symlink(c.to, filepath.Join(w.Root, c.link)))
			c2, err := store.Open(w.Cache, store.Options{NoSync: true})
			require.NoError(t, err)
			defer c2.Close()
			_, diags := plan.Make(w.Load().Graph, c2, plan.Options{})
			require.True(t, diags.HasErrors())
			d := diags[0]
			assert.Equal(t, "Invalid bundle", d.Summary)
			assert.Contains(t, d.Detail, c.want)
			assert.Contains(t, d.Detail, "Remove the link, or point it at a file in the workspace")
			require.NotNil(t, d.Subject)
			assert.Equal(t, 9, d.Subject.Start.Line, "the bundle attribute's line")
		})
	}
}

// A link in a bundle folder that leads outside the workspace is refused
// before anything runs, naming the stage and the link.
func TestEvaluateBundleLinkOutsideWorkspaceRefused(t *testing.T) {
	w := newWorkspace(t, strings.ReplaceAll(oneEval("", `["python3", "w.py"]`, `bundle = ["bundle/"]`), "ENDPOINT", "http://127.0.0.1:9/v1"))
	w.Write("w.py", promptWorker)
	w.Write("items.jsonl", "{\"id\":\"a\"}\n")
	outside := filepath.Join(t.TempDir(), "system.txt")
	require.NoError(t, os.WriteFile(outside, []byte("good\n"), 0o644))
	w.Write("bundle/config.txt", "style: short\n")
	require.NoError(t, os.Symlink(outside, filepath.Join(w.Root, "bundle/system.txt")))
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	_, diags := plan.Make(w.Load().Graph, c, plan.Options{})
	require.True(t, diags.HasErrors())
	assert.Contains(t, diags.Error(), "stage.ev: bundle bundle holds bundle/system.txt, a link to "+outside+", outside the workspace")
	assert.Contains(t, diags.Error(), "Copy what the link points to into the workspace, or point the link at a file inside it")
}
