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

// writeErrors validates the workspace's pipeline, then plans it with opts,
// and returns the summaries and details of the errors of each, unwrapped.
func writeErrors(t *testing.T, w *plantest.Workspace, opts plan.Options) (validate, planned string) {
	t.Helper()
	text := func(diags hcl.Diagnostics) string {
		var b strings.Builder
		for _, d := range diags {
			if d.Severity == hcl.DiagError {
				b.WriteString(d.Summary + ": " + strings.ReplaceAll(d.Detail, w.Root+"/", "") + "\n")
			}
		}
		return b.String()
	}
	opt := plan.LoadOptions{Path: filepath.Join(w.Root, "pipeline.hcl"), Root: w.Root}
	_, diags := validateLike(opt)
	validate = text(diags)
	l, diags := plan.Load(opt)
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	_, diags = plan.Make(l.Graph, c, opts)
	return validate, text(diags)
}

// clashing has two pairs of writers of one path: two stages, and the
// instances of a for_each stage.
const clashing = `
stage "command" "a" {
  run     = ["sh", "-c", "echo a > o.txt"]
  outputs = ["o.txt"]
}
stage "command" "b" {
  run     = ["sh", "-c", "echo b > o.txt"]
  outputs = ["o.txt"]
}
stage "command" "each" {
  for_each = toset(["x", "y"])
  run      = ["sh", "-c", "echo ${each.key} > each.txt"]
  outputs  = ["each.txt"]
  timeout  = "1m"
}
stage "command" "c" {
  run = ["true"]
}
`

var clashes = []string{
	"Two nodes write one path: stage.a (outputs, pipeline.hcl:4:14) and stage.b (outputs, pipeline.hcl:8:14) both write o.txt.",
	`Two nodes write one path: stage.each["x"] and stage.each["y"] both write each.txt (outputs, pipeline.hcl:13:15).`,
}

// Two nodes that are the same work (one kind, arguments, inputs and
// upstreams: one key) run once, the other taking the cache hit: they
// write the same content, and may declare the same path. Nodes that
// differ in anything that keys them may not.
func TestTwoWritersOfTheSameWorkAllowed(t *testing.T) {
	same := strings.NewReplacer("echo b >", "echo a >", "echo ${each.key} >", "echo each >").Replace(clashing)
	v, p := writeErrors(t, plantest.New(t, same), plan.Options{})
	require.Empty(t, v)
	require.Empty(t, p)

	v, p = writeErrors(t, plantest.New(t, clashing), plan.Options{})
	for _, want := range clashes {
		require.Contains(t, v, want)
		require.Contains(t, p, want)
	}
}

// A plan of some targets compares the paths of the nodes it plans: two
// of them that write one path are refused, nodes outside the targets are
// not evaluated for it (validate and a whole plan compare them).
func TestTwoWritersAmongTheTargets(t *testing.T) {
	// With a stage reading inputs, the paths of the nodes left out are
	// those the graph matched inputs against.
	reads := "stage \"command\" \"r\" {\n  run    = [\"true\"]\n  inputs = [\"o.txt\"]\n}\n"
	for _, src := range []string{clashing, clashing + reads} {
		w := plantest.New(t, src)
		_, p := writeErrors(t, w, plan.Options{Targets: []string{"stage.a", "stage.b"}})
		require.Contains(t, p, clashes[0])
		require.NotContains(t, p, "each.txt", "stage.each is not planned")
		_, p = writeErrors(t, w, plan.Options{Targets: []string{"stage.each"}})
		require.Contains(t, p, clashes[1])
		require.NotContains(t, p, "o.txt")
		_, p = writeErrors(t, w, plan.Options{Targets: []string{"stage.c"}})
		require.Empty(t, p)
		v, _ := writeErrors(t, w, plan.Options{Targets: []string{"stage.c"}})
		for _, want := range clashes {
			require.Contains(t, v, want, "validate compares every node")
		}
	}
}

// What a node declares and only an upstream's result makes known is not
// compared before the upstream has run; a node's own paths never clash.
func TestTwoWritersOnlyOfKnownPaths(t *testing.T) {
	w := plantest.New(t, `
stage "command" "name" {
  run    = ["sh", "-c", "echo '{\"file\": \"o.txt\"}' > name.json"]
  result = "name.json"
}
stage "command" "a" {
  run     = ["sh", "-c", "echo a > o.txt"]
  outputs = [stage.name.result.file]
}
stage "command" "b" {
  run     = ["sh", "-c", "mkdir -p d && echo b > o.txt && echo '{}' > d/r.json"]
  outputs = ["o.txt", "d", "./o.txt"]
  result  = "d/r.json"
}
`)
	v, p := writeErrors(t, w, plan.Options{})
	require.Empty(t, v)
	require.Empty(t, p)
}

// Nodes that are the same work (one key) run once, the others taking the
// result: plan says so of each of them and in its footer, instead of
// listing three runs where one runs.
func TestPlanSaysWhichNodesAreTheSameWork(t *testing.T) {
	w := plantest.New(t, `
stage "command" "seed" {
  for_each = toset(["0", "1", "2"])
  run      = ["sh", "-c", "echo 42 > score.txt"]
  outputs  = ["score.txt"]
}
stage "command" "other" {
  run = ["true"]
}
`)
	p := w.Plan(plan.Options{})
	out := w.PlanText(plan.Options{})
	require.Contains(t, out, "+ stage.seed[\"0\"]  run: new\n")
	require.Contains(t, out, `+ stage.seed["1"]  run: new; the same work as stage.seed["0"] (one key): it runs once, and this node takes its result`)
	require.Contains(t, out, `+ stage.seed["2"]  run: new; the same work as stage.seed["0"]`)
	require.NotContains(t, out, `stage.other  run: new;`)
	require.Contains(t, out, "2 of the nodes to run are the same work as another: that work runs once, and they take its result.")
	require.Equal(t, 2, p.SameWork)
}

// Nodes with one key are the same work however their arguments are
// spelled: the comparison is of what the key is made of (paths cleaned,
// values as canonical JSON, upstreams that only order left out), so no
// spelling that keeps the key is refused as two writers of one path.
func TestSameWorkAsTheKeyHasIt(t *testing.T) {
	pair := func(a, b string) string {
		return `
stage "command" "u" {
  run = ["true"]
}
stage "command" "a" {
` + a + `
}
stage "command" "b" {
` + b + `
}
`
	}
	run := `  run = ["sh", "-c", "mkdir -p d && echo a > x && echo '{}' > r.json"]` + "\n"
	for name, src := range map[string]string{
		"./x":           pair(run+`  outputs = ["x"]`, run+`  outputs = ["./x"]`),
		"path.pipeline": pair(run+`  outputs = ["x"]`, run+`  outputs = ["${path.pipeline}/x"]`),
		"d/":            pair(run+`  outputs = ["d"]`, run+`  outputs = ["d/"]`),
		"./r.json":      pair(run+`  result = "r.json"`, run+`  result = "./r.json"`),
		"tolist":        pair(`  run = ["sh", "-c", "echo a > x"]`+"\n  outputs = [\"x\"]", `  run = tolist(["sh", "-c", "echo a > x"])`+"\n  outputs = [\"x\"]"),
		"tomap":         pair(run+`  outputs = ["x"]`+"\n  env = { A = \"1\" }", run+`  outputs = ["x"]`+"\n  env = tomap({ A = \"1\" })"),
		"wait_for":      pair(run+`  outputs = ["x"]`, run+`  outputs = ["x"]`+"\n  wait_for = [stage.u]"),
	} {
		t.Run(name, func(t *testing.T) {
			w := plantest.New(t, src)
			v, p := writeErrors(t, w, plan.Options{})
			require.Empty(t, v)
			require.Empty(t, p)
			pl := w.Plan(plan.Options{})
			keys := map[string]string{}
			for _, pn := range pl.Nodes {
				keys[pn.Node.Addr] = pn.Key
			}
			require.Equal(t, keys["stage.a"], keys["stage.b"], "one key")
		})
	}
	// Upstreams that key the node are compared.
	w := plantest.New(t, pair(run+`  outputs = ["x"]`, run+`  outputs = ["x"]`+"\n  after = [stage.u]"))
	_, p := writeErrors(t, w, plan.Options{})
	require.Contains(t, p, "Two nodes write one path")
}

// Writers of one path that are in groups of the same work are counted and
// named by group: every node is counted, each group is named by its first
// node and the number of the others.
func TestTwoWritersCountsGroupsOfTheSameWork(t *testing.T) {
	w := plantest.New(t, `
stage "command" "g" {
  for_each = toset(["0", "1", "2"])
  run      = ["sh", "-c", "echo g > x"]
  outputs  = ["x"]
}
stage "command" "h" {
  for_each = toset(["0", "1", "2"])
  run      = ["sh", "-c", "echo h > x"]
  outputs  = ["x"]
}
`)
	v, p := writeErrors(t, w, plan.Options{})
	want := `6 nodes write one path: 6 nodes in 2 groups of the same work write x: stage.g["0"] (outputs, pipeline.hcl:5:15) and 2 more of its work; stage.h["0"] (outputs, pipeline.hcl:10:15) and 2 more of its work.`
	require.Contains(t, v, want)
	require.Contains(t, p, want)

	w = plantest.New(t, `
stage "command" "s" {
  for_each = toset([for i in range(0, 1000) : tostring(i)])
  run      = ["sh", "-c", "echo ${tonumber(each.key) % 2} > x"]
  outputs  = ["x"]
}
`)
	v, _ = writeErrors(t, w, plan.Options{})
	require.Contains(t, v, `1000 nodes write one path: 1000 nodes in 2 groups of the same work write x (outputs, pipeline.hcl:5:15): stage.s["0"] and 499 more of its work; stage.s["1"] and 499 more of its work.`)
}

// caseOnly's for_each keys differ in case only: out/A.txt and out/a.txt,
// one file where the filesystem folds case (macOS's default); and a stage
// writes a folder Reports that another's file spells reports/.
const caseOnly = `
stage "command" "s" {
  for_each = toset(["A", "a"])
  run      = ["sh", "-c", "echo ${each.key} > out/${each.key}.txt"]
  outputs  = ["out/${each.key}.txt"]
}
stage "command" "r" {
  run     = ["true"]
  outputs = ["Reports"]
}
stage "command" "t" {
  run     = ["true"]
  outputs = ["reports/t.txt"]
}
`

// TestCaseOnlyCollisionsWhereCaseFolds: on a filesystem that folds case,
// for_each keys A and a writing out/${each.key}.txt write one file, and
// are refused as two nodes writing one path by validate and plan, as x and
// x/ are; so is a file inside a folder another node spells in another
// case. Where the filesystem keeps case (this Linux), they pass.
func TestCaseOnlyCollisionsWhereCaseFolds(t *testing.T) {
	plan.SetCaseProbe(t, func(string) bool { return true })
	w := plantest.New(t, caseOnly)
	validate, planned := writeErrors(t, w, plan.Options{})
	for _, text := range []string{validate, planned} {
		assert.Contains(t, text, `Two nodes write one path: stage.s["A"] and stage.s["a"] both write out/A.txt and out/a.txt (outputs, pipeline.hcl:5:15).`)
		assert.Contains(t, text, `Output inside another node's output: stage.t writes reports/t.txt (outputs, pipeline.hcl:13:14), inside Reports, a folder stage.r writes (outputs, pipeline.hcl:9:14).`)
		assert.Equal(t, 2, strings.Count(text, "The workspace's filesystem ignores case: these spellings name one path."), text)
	}

	plan.SetCaseProbe(t, func(string) bool { return false })
	validate, planned = writeErrors(t, w, plan.Options{})
	assert.Empty(t, validate)
	assert.Empty(t, planned)
}

// TestFoldsCaseProbe: the real probe says this Linux's filesystem keeps
// case, in a folder holding files and in an empty one (where it makes a
// file to probe with), and leaves nothing behind.
func TestFoldsCaseProbe(t *testing.T) {
	empty := t.TempDir()
	assert.False(t, plan.FoldsCase(empty))
	entries, err := os.ReadDir(empty)
	require.NoError(t, err)
	assert.Empty(t, entries, "the probe's file is removed")

	w := plantest.New(t, caseOnly)
	assert.False(t, plan.FoldsCase(w.Root))
	// Two files differing in case only are two files: not one seen twice.
	w.Write("Data", "1")
	w.Write("DATA", "2")
	assert.False(t, plan.FoldsCase(w.Root))
}
