package pipelines_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a job's job.json seals is what made its phases, and what a cached
// record of the job was made with (docs/job-artifacts.md): the files it
// seals outside the workspace too.

// editGrid rewrites the workspace's grid file with edit.
func (w *optWorkspace) editGrid(edit func(g map[string]any)) {
	w.t.Helper()
	grid := filepath.Join(w.dir, "testdata/optimizer/grid.json")
	b, err := os.ReadFile(grid)
	require.NoError(w.t, err)
	var g map[string]any
	require.NoError(w.t, json.Unmarshal(b, &g))
	edit(g)
	b, err = json.MarshalIndent(g, "", "  ")
	require.NoError(w.t, err)
	require.NoError(w.t, os.WriteFile(grid, b, 0o644))
}

// The method's code kept outside the workspace (a shared checkout, as the
// grid file names it): edited, a fresh out folder on the same cache runs
// the job again with the new code, its job.json sealing the new code's
// digest, and the next apply runs nothing and refuses nothing.
func TestOptimizerMethodCodeOutsideTheWorkspace(t *testing.T) {
	w := newOptWorkspace(t)
	const dir = "runs/simgepa/sums/single/sim/0"
	methods := filepath.Join(t.TempDir(), "methods")
	copyTree(t, filepath.Join(w.dir, "testdata/optimizer/methods"), methods)
	w.editGrid(func(g map[string]any) {
		m := g["methods"].(map[string]any)["simgepa"].(map[string]any)
		m["command"] = []any{"python3", filepath.Join(methods, "sim_method.py"), "--method", "simgepa"}
		m["code"] = []any{methods + "/"}
	})
	out, code := w.job("budget=20")
	require.Equal(t, 0, code, out)
	var job struct {
		Digests map[string]string `json:"digests"`
	}
	w.readJSON(dir+"/job.json", &job)
	v1 := job.Digests["method"]

	f, err := os.OpenFile(filepath.Join(methods, "sim_method.py"), os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString("# v2: the method changed\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, os.Rename(filepath.Join(w.dir, "runs"), filepath.Join(w.dir, "runs.v1")))

	plan := w.command(append([]string{"plan"}, w.applyArgs(nil, "budget=20")[1:]...)...)
	b, err := plan.CombinedOutput()
	require.NoError(t, err, "%s", b)
	assert.Regexp(t, regexp.MustCompile(`stage\.job\["simgepa/sums/single/sim/0"\] +run: input \S*methods changed`), string(b))
	out, code = w.job("budget=20")
	require.Equal(t, 0, code, out)
	assert.NotContains(t, out, "0 ran, 8 cached")
	assert.NotContains(t, out, "the method is not run again")
	w.readJSON(dir+"/job.json", &job)
	assert.NotEqual(t, v1, job.Digests["method"], "job.json seals the method's new code")

	out, code = w.job("budget=20")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "0 ran, 8 cached")
}

// The pipeline file kept outside the workspace (make demo-optimizer
// applies it so), edited, and the out folder deleted as cairn advises:
// the job runs again, its job.json sealing the edited pipeline, and the
// next apply runs nothing and refuses nothing.
func TestOptimizerPipelineOutsideTheWorkspaceEdited(t *testing.T) {
	w := newOptWorkspace(t)
	const dir = "runs/simgepa/sums/single/sim/0"
	pipeline := filepath.Join(t.TempDir(), "optimizer_grid.hcl")
	copyTree(t, filepath.Join(w.dir, "pipelines/optimizer_grid.hcl"), pipeline)
	args := w.applyArgs(nil, "budget=20")
	args[1] = pipeline
	apply := func() string {
		out, err := w.command(args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	apply()
	var job struct {
		Digests map[string]string `json:"digests"`
	}
	w.readJSON(dir+"/job.json", &job)
	v1 := job.Digests["pipeline"]

	b, err := os.ReadFile(pipeline)
	require.NoError(t, err)
	edited := strings.Replace(string(b), "max_in_flight       = 8", "max_in_flight       = 4", 1)
	require.NotEqual(t, string(b), edited)
	require.NoError(t, os.WriteFile(pipeline, []byte(edited), 0o644))
	require.NoError(t, os.RemoveAll(filepath.Join(w.dir, "runs")))

	out := apply()
	assert.NotContains(t, out, "0 ran, 8 cached")
	w.readJSON(dir+"/job.json", &job)
	assert.NotEqual(t, v1, job.Digests["pipeline"], "job.json seals the edited pipeline")
	assert.Contains(t, apply(), "0 ran, 8 cached")
}
