package plan

import (
	"os"
	"path/filepath"
	"testing"
)

// path.pipeline is the pipeline's folder relative to the workspace root,
// wherever cairn was started from: --chdir makes the root another folder
// than the current one.
func TestPathPipelineIsRelativeToTheRoot(t *testing.T) {
	src := `stage "command" "check" {
  run = ["sh", "${path.pipeline}/scripts/check.sh"]
}
`
	top := t.TempDir()
	for _, c := range []struct {
		name, pipelineDir, cwd, root, path, want string
	}{
		// cairn --chdir ws plan, started in ws's parent.
		{"root is the pipeline's folder", "ws", ".", "ws", ".", "./scripts/check.sh"},
		// cd ws2/pl; cairn --chdir .. plan pl
		{"pipeline in a folder of the root", "ws2/pl", "ws2/pl", "ws2", "pl", "pl/scripts/check.sh"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(top, c.pipelineDir)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "p.hcl"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Chdir(filepath.Join(top, c.cwd))
			l, diags := Load(LoadOptions{Path: c.path, Root: filepath.Join(top, c.root)})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			n, d := l.Graph.EvalNode(l.Graph.ByAddr["stage.check"], nil)
			if d.HasErrors() {
				t.Fatal(d.Error())
			}
			run := n.Args["run"].AsValueSlice()
			if got := run[1].AsString(); got != c.want {
				t.Errorf("run[1] = %q, want %q", got, c.want)
			}
		})
	}
}
