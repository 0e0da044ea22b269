package pipelines_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a job's job.json seals is what made its phases, and what a cached
// record of the job was made with (docs/job-artifacts.md): the weights its
// servers serve, and the files it seals outside the workspace.

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

// served runs cairn's command (plan or apply) on one job with the model
// servers cairn starts (serve = true) on simulated GPUs.
func (w *optWorkspace) served(leases, command string, flags []string, vars ...string) (string, int) {
	w.t.Helper()
	args := w.applyArgs(flags, append([]string{"serve=true", "budget=20"}, vars...)...)
	args[0] = command
	cmd := w.command(args...)
	cmd.Env = append(cmd.Env, "CAIRN_GPUS=sim:6", "CAIRN_LEASE_DIR="+leases, "PATH="+bins+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	require.NoError(w.t, err)
	return string(out), 0
}

// rolloutKeys are the item keys of a job's charged rollouts.
func (w *optWorkspace) rolloutKeys(dir string) []string {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, dir, "optimization/rollouts.jsonl"))
	require.NoError(w.t, err)
	var keys []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct{ Key string }
		require.NoError(w.t, json.Unmarshal([]byte(l), &r))
		keys = append(keys, r.Key)
	}
	return keys
}

// New weights under the same model id and server command line, after the
// optimize phase ran on the old ones: the out folder's job.json sealed the
// old weights' digest, so the apply of the rest is refused before anything
// runs (exit 2), as a changed server flag is; and the optimization made on
// the old weights is never taken, from the cache, by a fresh out folder
// on the new ones: it optimizes again, against the new weights.
func TestOptimizerSealCoversTheServedWeights(t *testing.T) {
	w := newOptWorkspace(t)
	leases := t.TempDir()
	const dir = "runs/simgepa/sums/single/sim/0"
	w.editGrid(func(g map[string]any) {
		g["servers"].(map[string]any)["sim"].(map[string]any)["weights"] = "weights/sim"
	})
	weights := filepath.Join(w.dir, "weights/sim/model.bin")
	require.NoError(t, os.MkdirAll(filepath.Dir(weights), 0o755))
	require.NoError(t, os.WriteFile(weights, []byte("weights v1"), 0o644))

	out, code := w.served(leases, "apply", []string{"target=stage.optimize"})
	require.Equal(t, 0, code, out)
	var job struct {
		ServerWeights map[string]string `json:"server_weights"`
	}
	w.readJSON(dir+"/job.json", &job)
	require.Contains(t, job.ServerWeights, "task", "job.json seals the task server's weights")
	assert.Regexp(t, "^sha256:[0-9a-f]{64}$", job.ServerWeights["task"])
	assert.NotContains(t, job.ServerWeights, "reflection", "the reflection server names no weights: its model id is all there is")
	v1 := job.ServerWeights["task"]
	sealed, err := os.ReadFile(filepath.Join(w.dir, dir, "job.json"))
	require.NoError(t, err)
	v1Keys := w.rolloutKeys(dir)

	require.NoError(t, os.WriteFile(weights, []byte("weights v2"), 0o644))
	for _, command := range []string{"plan", "apply"} {
		out, code = w.served(leases, command, nil)
		assert.Equal(t, 2, code, "%s:\n%s", command, out)
		flat := strings.Join(strings.Fields(out), " ")
		assert.Contains(t, flat, "Out folder sealed for another job", command)
		assert.Contains(t, flat, `server_weights: the out folder's job is {"task":"`+v1+`"}, this job is {"task":"sha256:`, command)
		assert.Contains(t, flat, "Choose a fresh out folder for this job", command)
	}
	_, err = os.Stat(filepath.Join(w.dir, dir, "selection.json"))
	assert.True(t, os.IsNotExist(err), "no validation ran on the new weights")
	after, err := os.ReadFile(filepath.Join(w.dir, dir, "job.json"))
	require.NoError(t, err)
	assert.Equal(t, string(sealed), string(after))

	// A fresh out folder on the new weights, with the same cache: its own
	// job.json and optimization, nothing of the old weights'.
	require.NoError(t, os.Rename(filepath.Join(w.dir, "runs"), filepath.Join(w.dir, "runs.v1")))
	out, code = w.served(leases, "apply", nil)
	require.Equal(t, 0, code, out)
	w.readJSON(dir+"/job.json", &job)
	assert.NotEqual(t, v1, job.ServerWeights["task"], "job.json seals the new weights")
	v2Keys := w.rolloutKeys(dir)
	require.Len(t, v2Keys, len(v1Keys))
	for i := range v2Keys {
		assert.NotEqual(t, v1Keys[i], v2Keys[i], "rollout %d was made on the new weights", i)
	}
	out, code = w.served(leases, "apply", nil)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "0 ran, 8 cached", out)
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

// job.json deleted alone, the rest of the out folder kept. Unchanged, the
// job is restored from the cache with the job.json it sealed, and nothing
// runs. Made another job (a data file changed), the job would write a new
// job.json beside the old job's optimization and results, which its later
// nodes take as theirs: it is refused before it writes one, in plan and in
// apply (exit 2), naming what the folder holds, and the old results stay
// as they are.
func TestOptimizerJobJSONDeletedAlone(t *testing.T) {
	w := newOptWorkspace(t)
	out, code := w.job("budget=40", "out=runs/j")
	require.Equal(t, 0, code, out)
	jobPath := filepath.Join(w.dir, "runs/j/job.json")
	sealed, err := os.ReadFile(jobPath)
	require.NoError(t, err)
	result, err := os.ReadFile(filepath.Join(w.dir, "runs/j/result.json"))
	require.NoError(t, err)

	require.NoError(t, os.Remove(jobPath))
	out, code = w.job("budget=40", "out=runs/j")
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `\b0 ran\b`, out)
	restored, err := os.ReadFile(jobPath)
	require.NoError(t, err)
	assert.Equal(t, string(sealed), string(restored))

	p := filepath.Join(w.dir, "testdata/optimizer/data/sums/val.jsonl")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, append(b, []byte(`{"id": "extra", "question": "What is 1 + 1?", "answer": "2"}`+"\n")...), 0o644))
	require.NoError(t, os.Remove(jobPath))
	before := len(w.requests())
	args := w.applyArgs(nil, "budget=40", "out=runs/j")
	args[0] = "plan"
	planOut, err := w.command(args...).CombinedOutput()
	require.NoError(t, err, "%s", planOut)
	flat := strings.Join(strings.Fields(string(planOut)), " ")
	assert.Contains(t, flat, "the out folder runs/j holds optimization.json, result.json, selection.json, test.json but no job.json", "plan")
	// The nodes below the refused job are skipped, as apply skips them:
	// none is listed to run or as cached.
	assert.Contains(t, flat, `- stage.seed_test["simgepa/sums/single/sim/0"] skipped: upstream stage.select["simgepa/sums/single/sim/0"] skipped`)
	assert.Contains(t, flat, "Plan: 0 to run, 1 refused, 0 cached, 7 skipped.")

	out, code = w.job("budget=40", "out=runs/j")
	assert.Equal(t, 2, code, out)
	flat = strings.Join(strings.Fields(out), " ")
	assert.Contains(t, flat, "the out folder runs/j holds optimization.json, result.json, selection.json, test.json but no job.json", "apply")
	assert.Contains(t, flat, "Restore runs/j/job.json, or delete runs/j to start that folder over")
	assert.Contains(t, flat, `- stage.seed_test["simgepa/sums/single/sim/0"] skipped: upstream stage.select["simgepa/sums/single/sim/0"] skipped`)
	assert.Contains(t, flat, "0 ran, 0 cached, 1 failed, 7 skipped")
	_, err = os.Stat(jobPath)
	assert.True(t, os.IsNotExist(err), "no job.json is written beside another job's results")
	after, err := os.ReadFile(filepath.Join(w.dir, "runs/j/result.json"))
	require.NoError(t, err)
	assert.Equal(t, string(result), string(after))
	assert.Equal(t, before, len(w.requests()), "a refused job sends nothing")
}
