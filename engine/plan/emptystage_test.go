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
