package plan_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/plan/plantest"
	"github.com/cairn-run/cairn/engine/store"
)

// TestKindOutputPathsChecked: a path a kind's attribute names for writing
// (pareto's out_dir) is checked like outputs: the workspace root and the
// cache folder are refused at plan time, with the attribute's position.
func TestKindOutputPathsChecked(t *testing.T) {
	for dir, want := range map[string]string{
		".":            "workspace root itself",
		".cairn":       "inside the cache folder",
		".cairn/rep":   "inside the cache folder",
		"../elsewhere": "leaves the workspace",
	} {
		t.Run(dir, func(t *testing.T) {
			w := plantest.New(t, `
pipeline "kinds" {}
stage "command" "a" {
  run = ["true"]
}
stage "pareto" "front" {
  rows    = stage.a
  out_dir = "`+dir+`"
}
`)
			_, diags := plan.Load(plan.LoadOptions{Path: filepath.Join(w.Root, "pipeline.hcl"), Root: w.Root})
			if !diags.HasErrors() {
				l := w.Load()
				c, err := store.Open(w.Cache, store.Options{NoSync: true})
				require.NoError(t, err)
				defer c.Close()
				_, diags = plan.Make(l.Graph, c, plan.Options{})
			}
			require.True(t, diags.HasErrors(), "%s", dir)
			assert.Contains(t, diags.Error(), want)
			assert.Equal(t, 8, diags[0].Subject.Start.Line, diags.Error())
		})
	}
}

// TestFolderReaderDependsOnEachWriterOnce: a node reading a folder that
// many nodes write below (a summary over a grid's runs) depends on each
// of them once, its dependencies in order, however many of its paths
// and of theirs overlap.
func TestFolderReaderDependsOnEachWriterOnce(t *testing.T) {
	w := plantest.New(t, `
pipeline "grid" {}
stage "command" "job" {
  for_each = toset([for i in range(60) : tostring(i)])
  run      = ["true"]
  outputs  = ["runs/${each.key}/a.json", "runs/${each.key}/b.json"]
}
stage "command" "summary" {
  run    = ["true"]
  inputs = ["runs", "runs/1", "runs/17/a.json"]
}
`)
	l := w.Load()
	var sum *plan.Node
	writers := map[int]bool{}
	for _, n := range l.Graph.Nodes {
		if n.Stage.Name == "summary" {
			sum = n
		} else {
			writers[n.ID] = true
		}
	}
	require.NotNil(t, sum)
	require.Len(t, sum.Deps, 60, "%v", sum.Deps)
	for i, d := range sum.Deps {
		assert.True(t, writers[d], "dependency %d is not a job node", d)
		if i > 0 {
			assert.Less(t, sum.Deps[i-1], d, "dependencies in order, each once")
		}
	}
}

// TestKindInputPathErrorsNameTheAttribute: a path an evaluate stage's
// attribute names for reading that the checks refuse (a dataset reached
// through a symlink out of the workspace, a worker script outside it) is
// reported as that attribute's error at its position, as the same path in
// inputs is, not as "Invalid path" at the stage's first line.
func TestKindInputPathErrorsNameTheAttribute(t *testing.T) {
	w := plantest.New(t, `
stage "evaluate" "val" {
  worker = ["python3", "worker.py"]
  items  = "data/val.jsonl"
  model  = "m"
  scores = "out/scores.jsonl"
}
`)
	w.Write("worker.py", "")
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "val.jsonl"), []byte(`{"id":"a"}`+"\n"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(w.Root, "data")))
	_, diags := validateLike(plan.LoadOptions{Path: filepath.Join(w.Root, "pipeline.hcl"), Root: w.Root})
	require.True(t, diags.HasErrors())
	assert.Equal(t, "Invalid items", diags[0].Summary, diags.Error())
	assert.Contains(t, diags[0].Detail, "resolves through a symlink")
	assert.Contains(t, diags[0].Detail, "point the link at a place inside it, or copy what it points to into the workspace", "what to do")
	require.NotNil(t, diags[0].Subject)
	assert.Equal(t, 4, diags[0].Subject.Start.Line, "the items attribute's line")
	assert.Equal(t, 12, diags[0].Subject.Start.Column, "the items attribute's value")
}

// TestAggregateRootLinkedToWorkspaceRoot: an aggregate root that is a link
// to the workspace root is refused once (not again for the same link met
// below it), saying what to do.
func TestAggregateRootLinkedToWorkspaceRoot(t *testing.T) {
	w := plantest.New(t, `
stage "aggregate" "ag" {
  roots = ["runs"]
}
`)
	require.NoError(t, os.Symlink(".", filepath.Join(w.Root, "runs")))
	_, diags := validateLike(plan.LoadOptions{Path: filepath.Join(w.Root, "pipeline.hcl"), Root: w.Root})
	require.Len(t, diags, 1, diags.Error())
	assert.Equal(t, "Invalid roots", diags[0].Summary)
	assert.Contains(t, diags[0].Detail, `"runs" resolves through a symlink to the workspace root itself`)
	assert.Contains(t, diags[0].Detail, "name the files or folders inside it instead, or point the link at one of them", "what to do")
}

// evaluateStage is an evaluate stage reading the bundle, writing scores,
// with the attributes extra.
func evaluateStage(bundle, scores, extra string) string {
	return `
stage "evaluate" "val" {
  worker = ["python3", "worker.py"]
  items  = "data/val.jsonl"
  bundle = ["` + bundle + `"]
  model  = "m"
  scores = "` + scores + `"
  ` + extra + `
}
`
}

// makeDiags plans w's pipeline, returning what plan.Make says.
func makeDiags(t *testing.T, w *plantest.Workspace) hcl.Diagnostics {
	l := w.Load()
	cache, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	defer cache.Close()
	_, diags := plan.Make(l.Graph, cache, plan.Options{})
	return diags
}

// TestKindWriteOverItsOwnReads: an evaluate stage whose scores path is
// its items file, its worker script, a file in its bundle or one of its
// inputs, or an optimize stage whose out folder holds its items, is
// refused before anything runs: apply would overwrite the dataset (the
// next apply evaluating the scores lines as items) or the worker. The
// error is the write attribute's, at its position, and names the read
// attribute with its file:line:col.
func TestKindWriteOverItsOwnReads(t *testing.T) {
	evaluate := func(scores, extra string) string { return evaluateStage("prompts", scores, extra) }
	for name, c := range map[string]struct {
		pipeline, want string
		line, col      int
	}{
		"scores is items":        {evaluate("data/val.jsonl", ""), `scores "data/val.jsonl" is the file items names (pipeline.hcl:4:12)`, 7, 12},
		"scores is the worker":   {evaluate("worker.py", ""), `scores "worker.py" is the file worker names (pipeline.hcl:3:12)`, 7, 12},
		"scores in the bundle":   {evaluate("prompts/scores.jsonl", ""), `scores "prompts/scores.jsonl" is inside bundle "prompts" (pipeline.hcl:5:12), a folder the node reads`, 7, 12},
		"scores in an input":     {evaluate("extra/s.jsonl", `inputs = ["extra"]`), `is inside inputs "extra" (pipeline.hcl:8:13)`, 7, 12},
		"scores holds the items": {evaluate("data", ""), `scores "data" holds items "data/val.jsonl" (pipeline.hcl:4:12)`, 7, 12},
		"optimize out holds items": {`
stage "optimize" "opt" {
  run               = ["python3", "method.py"]
  out               = "job"
  budget            = 10
  bundle            = ["prompts"]
  worker            = ["python3", "worker.py"]
  bundle_in_request = true
  items             = "job/optimization/train.jsonl"
  model             = "m"
}
`, `out "job/optimization" holds items "job/optimization/train.jsonl" (pipeline.hcl:9:23)`, 4, 23},
	} {
		t.Run(name, func(t *testing.T) {
			w := plantest.New(t, c.pipeline)
			w.Write("worker.py", "")
			w.Write("method.py", "")
			w.Write("data/val.jsonl", `{"id": "q1"}`+"\n")
			w.Write("job/optimization/train.jsonl", `{"id": "q1"}`+"\n")
			w.Write("prompts/system.txt", "")
			w.Write("extra/x", "")
			opts := plan.LoadOptions{Path: filepath.Join(w.Root, "pipeline.hcl"), Root: w.Root}
			_, diags := validateLike(opts)
			require.True(t, diags.HasErrors(), "validate")
			d := diags[0]
			assert.Contains(t, strings.ReplaceAll(d.Detail, w.Root+"/", ""), c.want)
			assert.Contains(t, d.Detail, "apply would write over what the node reads")
			require.NotNil(t, d.Subject)
			assert.Equal(t, [2]int{c.line, c.col}, [2]int{d.Subject.Start.Line, d.Subject.Start.Column}, "the write attribute's position")

			diags = makeDiags(t, w)
			require.True(t, diags.HasErrors(), "plan")
			assert.Contains(t, strings.ReplaceAll(diags.Error(), w.Root+"/", ""), c.want)
		})
	}
	// A scores file of its own passes.
	w := plantest.New(t, evaluate("out/scores.jsonl", ""))
	w.Write("worker.py", "")
	w.Write("data/val.jsonl", `{"id": "q1"}`+"\n")
	_, diags := validateLike(plan.LoadOptions{Path: filepath.Join(w.Root, "pipeline.hcl"), Root: w.Root})
	require.False(t, diags.HasErrors(), diags.Error())
}

// TestKindWriteThroughLinks: the write is compared with the reads where
// their links lead as well as as spelled: scores written through a link
// into the bundle (every apply would change the bundle's digest and ask
// every item again), or to a link to the items, is refused as the
// direct spelling is.
func TestKindWriteThroughLinks(t *testing.T) {
	evaluate := func(bundle, scores string) string { return evaluateStage(bundle, scores, "") }
	for name, c := range map[string]struct {
		pipeline, link, to, want string
	}{
		"scores through a link into the bundle": {evaluate("b/seed", "lnk/scores.jsonl"), "lnk", "b/seed",
			`scores "lnk/scores.jsonl" (which leads through a symlink to "b/seed/scores.jsonl") is inside bundle "b/seed" (pipeline.hcl:5:12), a folder the node reads`},
		"bundle through a link holding scores": {evaluate("lnk", "b/seed/scores.jsonl"), "lnk", "b/seed",
			`scores "b/seed/scores.jsonl" is inside bundle "lnk" (which leads through a symlink to "b/seed") (pipeline.hcl:5:12), a folder the node reads`},
		"scores a link to the items": {evaluate("b/seed", "s.jsonl"), "s.jsonl", "data/val.jsonl",
			`scores "s.jsonl" (which leads through a symlink to "data/val.jsonl") and items "data/val.jsonl" (pipeline.hcl:4:12) are the same file`},
	} {
		t.Run(name, func(t *testing.T) {
			w := plantest.New(t, c.pipeline)
			w.Write("worker.py", "")
			w.Write("data/val.jsonl", `{"id": "q1"}`+"\n")
			w.Write("b/seed/system.txt", "")
			require.NoError(t, os.Symlink(c.to, filepath.Join(w.Root, c.link)))
			_, diags := validateLike(plan.LoadOptions{Path: filepath.Join(w.Root, "pipeline.hcl"), Root: w.Root})
			require.True(t, diags.HasErrors(), "validate")
			d := diags[0]
			assert.Contains(t, strings.ReplaceAll(d.Detail, w.Root+"/", ""), c.want)
			assert.Contains(t, d.Detail, "apply would write over what the node reads")
			require.NotNil(t, d.Subject)
			assert.Equal(t, [2]int{7, 12}, [2]int{d.Subject.Start.Line, d.Subject.Start.Column}, "the scores attribute's position")
		})
	}
	// A link elsewhere passes.
	w := plantest.New(t, evaluate("b/seed", "lnk/scores.jsonl"))
	w.Write("worker.py", "")
	w.Write("data/val.jsonl", `{"id": "q1"}`+"\n")
	w.Write("b/seed/system.txt", "")
	require.NoError(t, os.MkdirAll(filepath.Join(w.Root, "out"), 0o755))
	require.NoError(t, os.Symlink("out", filepath.Join(w.Root, "lnk")))
	_, diags := validateLike(plan.LoadOptions{Path: filepath.Join(w.Root, "pipeline.hcl"), Root: w.Root})
	require.False(t, diags.HasErrors(), diags.Error())
}

// TestKindWriteNamedByWorkerArgument: a worker argument naming the
// node's own write path, whole or after its first "=", cleaned, relative
// or absolute inside the workspace, is refused before anything runs,
// whether or not the file exists yet (before, the first apply ran, and
// every later plan was refused once the scores file was a worker file).
// A folder an argument names that holds the scores (a log folder) and
// another file pass.
func TestKindWriteNamedByWorkerArgument(t *testing.T) {
	evaluate := func(arg string) string {
		return `
stage "evaluate" "val" {
  worker = ["python3", "worker.py", "` + arg + `"]
  items  = "data/val.jsonl"
  model  = "m"
  scores = "out/s.jsonl"
}
`
	}
	for name, c := range map[string]struct {
		arg  string
		fail bool
	}{
		"after =":             {"--resume=out/s.jsonl", true},
		"whole":               {"out/s.jsonl", true},
		"unclean":             {"--resume=./out//s.jsonl", true},
		"absolute":            {"--resume=ROOT/out/s.jsonl", true},
		"through a link":      {"--resume=lnk/s.jsonl", true},
		"a folder holding it": {"--log=out", false},
		"another file":        {"--resume=out/s.jsonl.bak", false},
		"an option":           {"-out/s.jsonl", false},
	} {
		t.Run(name, func(t *testing.T) {
			w := plantest.New(t, "")
			w.Write("pipeline.hcl", evaluate(strings.ReplaceAll(c.arg, "ROOT", w.Root)))
			w.Write("worker.py", "")
			w.Write("data/val.jsonl", `{"id": "q1"}`+"\n")
			require.NoError(t, os.MkdirAll(filepath.Join(w.Root, "out"), 0o755))
			require.NoError(t, os.Symlink("out", filepath.Join(w.Root, "lnk")))
			_, diags := validateLike(plan.LoadOptions{Path: filepath.Join(w.Root, "pipeline.hcl"), Root: w.Root})
			if !c.fail {
				require.False(t, diags.HasErrors(), diags.Error())
				return
			}
			require.True(t, diags.HasErrors(), "validate")
			d := diags[0]
			assert.Contains(t, d.Detail, `scores "out/s.jsonl"`)
			assert.Contains(t, d.Detail, "/pipeline.hcl:3:37)", "the argument's position")
			assert.Contains(t, d.Detail, "apply would write over what the node reads")
			require.NotNil(t, d.Subject)
			assert.Equal(t, [2]int{6, 12}, [2]int{d.Subject.Start.Line, d.Subject.Start.Column}, "the scores attribute's position")

			diags = makeDiags(t, w)
			require.True(t, diags.HasErrors(), "plan")
		})
	}
}
