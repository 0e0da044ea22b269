package plan

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The instances of a stage share its attributes (which locate them), and a node's
// evaluation context holds its own variables in one map: evaluating a
// node of a grid allocates its arguments' map and values, and no copy of
// what every instance has alike. Positions in diagnostics are the
// attributes' (the corpus tests hold them).
func TestEvalNodeSharesTheStagesRanges(t *testing.T) {
	root := t.TempDir()
	src := `locals {
  ids = toset(["a", "b", "c"])
}

stage "command" "l0" {
  for_each = local.ids
  run      = ["sh", "-c", "echo l0_${each.key} > out/l0_${each.key}"]
  outputs  = ["out/l0_${each.key}"]
}
`
	if err := os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := Load(LoadOptions{Path: "p.hcl", Root: root})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g := l.Graph
	a, b := g.ByAddr[`stage.l0["a"]`], g.ByAddr[`stage.l0["b"]`]
	sa, da := g.EvalNode(a, nil)
	sb, db := g.EvalNode(b, nil)
	if da.HasErrors() || db.HasErrors() {
		t.Fatal(da.Error(), db.Error())
	}
	for _, attr := range []string{"run", "outputs"} {
		if sa.Range(attr) != a.Stage.Attrs[attr].Expr.Range() {
			t.Errorf("%s: range %v, want %v", attr, sa.Range(attr), a.Stage.Attrs[attr].Expr.Range())
		}
	}
	if sa.Ranges != nil || sb.Ranges != nil {
		t.Errorf("instances of a stage have a ranges map of their own")
	}
	if reflect.ValueOf(sa.Attributes).Pointer() != reflect.ValueOf(a.Stage.Attrs).Pointer() ||
		reflect.ValueOf(sb.Attributes).Pointer() != reflect.ValueOf(a.Stage.Attrs).Pointer() {
		t.Errorf("the instances of a stage do not share its attributes")
	}
	allocs := testing.AllocsPerRun(20, func() { g.EvalNode(a, nil) })
	if allocs > 44 {
		t.Errorf("EvalNode of a grid instance made %.0f allocations, want at most 44 (46 with a ranges map and a variables map of its own)", allocs)
	}
}
