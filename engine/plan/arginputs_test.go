package plan

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A path an evaluation's worker arguments name that another stage writes
// is among its inputs before it exists (so plan keys the node as apply
// will once the writer has run); one that holds the evaluation's own
// scores is not, as its kind leaves such a folder out.
func TestWorkerArgumentsAnUpstreamWritesAreInputs(t *testing.T) {
	root := t.TempDir()
	src := `
stage "command" "gen" {
  run     = ["sh", "-c", "mkdir -p gen out && echo p > gen/p.txt && echo q > out/q.txt"]
  outputs = ["gen/p.txt", "out/q.txt"]
}
stage "evaluate" "ev" {
  worker = ["python3", "w.py", "--prompts=gen", "--prompt", "gen/p.txt", "--dir=out", "--other=elsewhere"]
  items  = "items.jsonl"
  model  = "m1"
  scores = "out/scores.jsonl"
}
`
	if err := os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := Load(LoadOptions{Path: "p.hcl", Root: root})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	sn, diags := l.Graph.EvalNode(l.Graph.ByAddr["stage.ev"], nil)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	got := slices.Sorted(slices.Values(sn.Common.Inputs))
	if want := []string{"gen", "gen/p.txt", "items.jsonl"}; !slices.Equal(got, want) {
		t.Errorf("inputs %q, want %q", got, want)
	}
}
