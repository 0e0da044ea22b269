package plan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// A stage whose for_each is empty is an object of no instances: length 0,
// and a for expression over it gives nothing, with or without other
// upstreams (language.md, References).
func TestStageOfNoInstancesIsAnEmptyObject(t *testing.T) {
	root := t.TempDir()
	src := `variable "names" {
  type    = list(string)
  default = []
}
stage "command" "c" {
  for_each = toset(var.names)
  run      = ["echo", each.key]
}
stage "command" "d" {
  run = ["true"]
}
stage "command" "alone" {
  run = concat(["echo", length(stage.c)], [for k, r in stage.c : k])
}
stage "command" "with_other" {
  run = ["echo", length(stage.c), stage.d.exit_code]
}
`
	if err := os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := Load(LoadOptions{Path: "p.hcl", Root: root})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if got := len(l.Graph.StageNodes["c"]); got != 0 {
		t.Fatalf("stage c has %d nodes, want 0", got)
	}
	n, d := l.Graph.EvalNode(l.Graph.ByAddr["stage.alone"], nil)
	if d.HasErrors() {
		t.Fatal(d.Error())
	}
	run := n.Args["run"].AsValueSlice()
	if len(run) != 2 || !run[1].RawEquals(cty.NumberIntVal(0)) {
		t.Errorf("run = %#v, want [echo 0]", run)
	}
	if _, ok := l.Graph.ByAddr["stage.with_other"]; !ok {
		t.Errorf("stage.with_other has no node")
	}
}

// Only for_each = stage.X makes each.value X's instance (and each
// instance wait for X's of its key). A for expression over X's
// instances makes its own keys and values, known at plan time; values
// made of X's results are refused.
func TestForEachExpressionOverAStageKeepsItsValues(t *testing.T) {
	root := t.TempDir()
	src := `stage "command" "c" {
  for_each = toset(["a", "b"])
  run      = ["echo", each.key]
}
stage "command" "f" {
  for_each = { for k, v in stage.c : "${k}-x" => upper(v.key) }
  run      = ["echo", each.value]
}
`
	if err := os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := Load(LoadOptions{Path: "p.hcl", Root: root})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	n := l.Graph.ByAddr[`stage.f["a-x"]`]
	if n == nil {
		t.Fatalf("no node stage.f[\"a-x\"]: %v", l.Graph.ByAddr)
	}
	if len(n.Deps) != 0 {
		t.Errorf("stage.f[\"a-x\"] depends on %v; its for_each needs only stage c's keys", n.Deps)
	}
	sn, d := l.Graph.EvalNode(n, nil)
	if d.HasErrors() {
		t.Fatal(d.Error())
	}
	if got := sn.Args["run"].AsValueSlice()[1]; !got.RawEquals(cty.StringVal("A")) {
		t.Errorf("each.value = %#v, want \"A\"", got)
	}
}
