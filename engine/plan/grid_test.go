package plan_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/plan"
)

// gridPipeline is four stages over one grid of keys, each instance after
// the previous stage's instance of its key. FOREACH is each stage's
// for_each.
const gridPipeline = `variable "tags" {
  type    = set(string)
  default = ["b", "a"]
}

locals {
  ids  = toset([for p in setproduct(range(7), range(6)) : tostring(p[0] * 6 + p[1])])
  grid = { ids = local.ids, tags = var.tags }
}

stage "command" "l0" {
  for_each = FOREACH
  run      = ["sh", "-c", "echo l0_${each.key} > out/l0_${each.key}"]
  outputs  = ["out/l0_${each.key}"]
}

stage "command" "l1" {
  for_each = FOREACH
  run      = ["sh", "-c", "echo l1_${each.key} > out/l1_${each.key}"]
  outputs  = ["out/l1_${each.key}"]
  after    = [stage.l0[each.key]]
}

stage "command" "l2" {
  for_each = FOREACH
  run      = ["sh", "-c", "echo ${each.value} > out/l2_${each.key}"]
  outputs  = ["out/l2_${each.key}"]
  after    = [stage.l1[each.key]]
}

stage "command" "t" {
  for_each = var.tags
  run      = ["echo", each.key]
}

stage "command" "u" {
  for_each = local.grid.tags
  run      = ["echo", each.key]
  after    = [stage.t[each.key]]
}
`

// Stages whose for_each is the same local or variable share its
// expansion (a set is sorted once, not once a stage): the plan, every
// node's key and dependencies included, is the one of for_each
// expressions evaluated stage by stage.
func TestSharedForEachPlansAsEvaluatedOnes(t *testing.T) {
	render := func(forEach string) string {
		root := t.TempDir()
		src := strings.ReplaceAll(gridPipeline, "FOREACH", forEach)
		require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
		require.NoError(t, os.MkdirAll(filepath.Join(root, "out"), 0o755))
		l, diags := planLike(plan.LoadOptions{Path: "p.hcl", Root: root})
		require.False(t, diags.HasErrors(), "%s", diags.Error())
		return renderCorpusPlan(t, l, root)
	}
	for _, shared := range []string{"local.ids", "local.grid.ids"} {
		got := render(shared)
		// An expression that is not a bare traversal is evaluated for
		// each stage.
		want := render(fmt.Sprintf("toset([for k in %s : k])", shared))
		assert.Equal(t, want, got, "for_each = %s", shared)
		assert.Contains(t, got, `stage.l2["41"]`)
	}
}

// Validating evaluates each stage's for_each once, as planning does: its
// for expressions count once against the pipeline's limit on the elements
// they visit (and a set for_each is iterated once to be checked known and
// expanded).
func TestValidateEvaluatesForEachOnce(t *testing.T) {
	const src = `locals {
  ids = [for i in range(40) : tostring(i)]
}

stage "command" "l0" {
  for_each = toset([for k in local.ids : k])
  run      = ["echo", each.key]
}

stage "command" "l1" {
  for_each = toset([for k in local.ids : k])
  run      = ["echo", each.key]
  after    = [stage.l0[each.key]]
}

stage "command" "l2" {
  for_each = toset([for k in local.ids : k])
  run      = ["echo", each.key]
  after    = [stage.l1[each.key]]
}
`
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	defer func(m int64) { dsl.MaxTotalIterations = m }(dsl.MaxTotalIterations)
	// 40 elements and the collection itself, for the local and for each
	// stage's for_each.
	dsl.MaxTotalIterations = 4 * 41
	for _, validate := range []bool{false, true} {
		l, diags := planLike(plan.LoadOptions{Path: "p.hcl", Root: root, Validate: validate})
		require.False(t, diags.HasErrors(), "validate %v: %s", validate, diags.Error())
		assert.Len(t, l.Graph.Nodes, 120, "validate %v", validate)
	}
}

// Validating checks the paths of a stage's many instances against a
// listing of their folder, as a plan does, rather than one lstat a path,
// and still finds an output that is a symlink leading out of the
// workspace.
func TestValidateListsAFolderOfOutputs(t *testing.T) {
	const src = `stage "command" "x" {
  for_each = toset([for i in range(200) : tostring(i)])
  run      = ["sh", "-c", "echo ${each.key} > out/x_${each.key}"]
  outputs  = ["out/x_${each.key}"]
}
`
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "out"), 0o755))
	l, diags := planLike(plan.LoadOptions{Path: "p.hcl", Root: root, Validate: true})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.Less(t, l.Graph.PathCheck().Lstats(), 40, "paths checked one by one, of 200 in one folder")

	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(root, "out", "x_150")))
	_, diags = planLike(plan.LoadOptions{Path: "p.hcl", Root: root, Validate: true})
	require.True(t, diags.HasErrors())
	assert.Contains(t, diags.Error(), `"out/x_150": resolves through a symlink to`)
}

// A plan does not look up the paths below a folder it found missing
// (nothing below it exists at that moment): a grid's run folders, not
// made yet, cost one lstat each at their top instead of one for every
// folder on the way. A link leading out of the workspace next to them is
// still found.
func TestPlanSkipsBelowMissingFolders(t *testing.T) {
	const src = `stage "command" "x" {
  for_each = toset([for i in range(200) : tostring(i)])
  run      = ["sh", "-c", "mkdir -p runs/m/d/${each.key}/s && echo > runs/m/d/${each.key}/s/out"]
  outputs  = ["runs/m/d/${each.key}/s/out", "made/${each.key}/out"]
}
`
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "made"), 0o755))
	for _, validate := range []bool{false, true} {
		l, diags := planLike(plan.LoadOptions{Path: "p.hcl", Root: root, Validate: validate})
		require.False(t, diags.HasErrors(), "%s", diags.Error())
		// runs (missing), made, and made/0 .. made/199 (missing).
		assert.LessOrEqual(t, l.Graph.PathCheck().Lstats(), 210, "validate %v: paths checked one by one", validate)
	}

	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(root, "made", "150")))
	_, diags := planLike(plan.LoadOptions{Path: "p.hcl", Root: root, Validate: true})
	require.True(t, diags.HasErrors())
	assert.Contains(t, diags.Error(), `"made/150/out": resolves through a symlink to`)
}

// In a snapshot a path named by many nodes is looked at once: a grid's
// instances all read the same file. A verdict lasts one snapshot: a
// link made out of the workspace before the next check is found.
func TestSnapshotChecksARepeatedPathOnce(t *testing.T) {
	const src = `stage "command" "x" {
  for_each = toset([for i in range(200) : tostring(i)])
  run      = ["sh", "-c", "cat data/shared.txt > out/x_${each.key}"]
  inputs   = ["data/shared.txt"]
  outputs  = ["out/x_${each.key}"]
}
`
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "data"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "data", "shared.txt"), []byte("x\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "out"), 0o755))
	l, diags := planLike(plan.LoadOptions{Path: "p.hcl", Root: root, Validate: true})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	// data, data/shared.txt, out, and out's files until out is listed.
	assert.LessOrEqual(t, l.Graph.PathCheck().Lstats(), 3+17, "paths checked one by one")

	require.NoError(t, os.Remove(filepath.Join(root, "data", "shared.txt")))
	outside := filepath.Join(t.TempDir(), "shared.txt")
	require.NoError(t, os.WriteFile(outside, []byte("x\n"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "data", "shared.txt")))
	diags = l.Graph.CheckStages()
	require.True(t, diags.HasErrors())
	assert.Contains(t, diags.Error(), `"data/shared.txt": resolves through a symlink to`)
}
