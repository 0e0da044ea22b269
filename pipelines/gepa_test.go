package pipelines_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/sim/simmodel"
)

// GEPA, the real optimizer (the gepa package, pinned, installed by
// scripts/model-cache-clients.sh gepa), as a method of the optimize kind:
// pipelines/methods/gepa_adapter.py drives it through cairn's rollout
// service, against the simulated task model and a simulated reflection
// model serving the reflection model's id.

const gepaJob = "runs/gepa/sums/single/sim/0"

// newGEPAWorkspace is an optimizer workspace with the GEPA method: its
// adapter and grid file, the installed gepa environment where the grid's
// command finds it, and a reflection model; it returns the workspace and
// the variables of one GEPA job.
func newGEPAWorkspace(t *testing.T, latency time.Duration) (*optWorkspace, []string) {
	t.Helper()
	env := modelClient(t, "gepa")
	w := newOptWorkspaceModel(t, simmodel.Config{WrongRate: 0.4, Latency: latency})
	copyTree(t, "methods", filepath.Join(w.dir, "pipelines/methods"))
	require.NoError(t, os.MkdirAll(filepath.Join(w.dir, "bin/clients"), 0o755))
	require.NoError(t, os.Symlink(env, filepath.Join(w.dir, "bin/clients/gepa")))
	refl, err := simmodel.Start(simmodel.Config{Models: []string{"Qwen/Qwen3.5-122B-A10B-FP8"}}, "")
	require.NoError(t, err)
	t.Cleanup(func() { refl.Close() })
	return w, []string{"grid=pipelines/methods/gepa_grid.json", "method=gepa", "reflection_base_url=" + refl.URL}
}

// ledger reads a job's charged-rollout record (rollouts.jsonl): each
// line's n, which must run 1, 2, ... without a repeat.
func ledgerNs(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var ns []int
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct{ N int }
		require.NoError(t, json.Unmarshal([]byte(l), &r), l)
		ns = append(ns, r.N)
	}
	return ns
}

type gepaRecord struct {
	GEPAVersion     string `json:"gepa_version"`
	BudgetExhausted bool   `json:"budget_exhausted"`
	RefusedRollouts int    `json:"refused_rollouts"`
	ReflectionCalls int    `json:"reflection_calls"`
	Candidates      []struct {
		SystemPrompt string  `json:"system_prompt"`
		ValMean      float64 `json:"val_mean"`
	}
	BestIdx   int     `json:"best_idx"`
	Incumbent *string `json:"incumbent"`
	Counts    struct {
		Budget, Charged, Refused, Remaining int
	}
}

// A small budget end to end: GEPA searches (the reflection model proposes,
// candidates are scored through the rollout service), spends the budget and
// no more: the request past it is refused with the typed budget_exhausted,
// nothing of it charged; the job's validation, selection and test follow.
func TestGEPAOptimizerJob(t *testing.T) {
	w, vars := newGEPAWorkspace(t, 0)
	const budget = 80
	out, code := w.job(append(vars, "budget=80")...)
	require.Equal(t, 0, code, out)

	var rec gepaRecord
	w.readJSON(gepaJob+"/optimization/optimizer_result.json", &rec)
	assert.Equal(t, "0.1.4", rec.GEPAVersion)
	assert.Positive(t, rec.ReflectionCalls, "GEPA asked the reflection model")
	require.Greater(t, len(rec.Candidates), 1, "GEPA proposed candidates: %+v", rec)
	assert.Contains(t, rec.Candidates[1].SystemPrompt, "[simulated wrong rate", "a proposal of the reflection model")
	assert.True(t, rec.BudgetExhausted, "GEPA ran until cairn refused")

	var opt struct {
		Proposed        bool `json:"proposed"`
		Charged         int  `json:"charged_rollouts"`
		Attempted       int  `json:"attempted_rollouts"`
		Refused         int  `json:"refused_rollouts"`
		IncumbentDigest *string
	}
	w.readJSON(gepaJob+"/optimization.json", &opt)
	assert.LessOrEqual(t, opt.Charged, budget, "the meter holds")
	assert.Equal(t, budget-rec.Counts.Remaining, opt.Charged)
	assert.Positive(t, opt.Refused, "the request past the budget was refused")
	assert.Equal(t, rec.RefusedRollouts, opt.Refused, "every refusal reached the method as budget_exhausted")
	ns := ledgerNs(t, filepath.Join(w.dir, gepaJob, "optimization/rollouts.jsonl"))
	require.Len(t, ns, opt.Charged, "one ledger line per charged rollout")
	for i, n := range ns {
		require.Equal(t, i+1, n, "each rollout charged once")
	}
	assert.Equal(t, rec.BestIdx != 0, opt.Proposed, "GEPA's best candidate is the incumbent, unless it is the seed prompt")
	if opt.Proposed {
		b, err := os.ReadFile(filepath.Join(w.dir, gepaJob, "optimization/incumbent/system.txt"))
		require.NoError(t, err)
		assert.Equal(t, rec.Candidates[rec.BestIdx].SystemPrompt, strings.TrimSpace(string(b)))
	}

	var res struct {
		Status  string  `json:"status"`
		Charged int     `json:"charged_rollouts"`
		DeltaPP float64 `json:"delta_pp"`
	}
	w.readJSON(gepaJob+"/result.json", &res)
	assert.Equal(t, "ok", res.Status)
	assert.Equal(t, opt.Charged, res.Charged)
	t.Logf("GEPA, budget %d: %d candidates, %d reflection calls, %d charged, %d refused; test delta %.1f pp",
		budget, len(rec.Candidates), rec.ReflectionCalls, opt.Charged, opt.Refused, res.DeltaPP)
}

// kill -9 of cairn while GEPA runs: the next apply refuses to restart the
// optimization silently; --replace starts GEPA over in its folder with the
// whole budget, the interrupted attempt's charged rollouts kept aside, and
// the job finishes; no rollout is charged twice in either record.
func TestGEPAKilledAndReplaced(t *testing.T) {
	w, vars := newGEPAWorkspace(t, 20*time.Millisecond)
	vars = append(vars, "budget=80")
	ledger := filepath.Join(w.dir, gepaJob, "optimization/rollouts.jsonl")
	args := append([]string{"--target", "stage.optimize"}, w.applyArgs(nil, vars...)[5:]...)
	w.killDuring(func() bool { return lineCount(ledger) >= 20 }, args...)
	charged := lineCount(ledger)
	require.Less(t, charged, 80, "killed before the optimization ended")

	out, code := w.job(vars...)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "is never restarted silently")
	assert.Equal(t, charged, lineCount(ledger), "the refused apply charged nothing")

	out, code = w.phase([]string{`replace=stage.optimize["gepa/sums/single/sim/0"]`}, vars...)
	require.Equal(t, 0, code, out)
	var opt struct {
		Charged   int `json:"charged_rollouts"`
		FromStore int `json:"rollouts_from_store"`
	}
	w.readJSON(gepaJob+"/optimization.json", &opt)
	assert.LessOrEqual(t, opt.Charged, 80)
	assert.Positive(t, opt.FromStore, "GEPA asked again what the first attempt ran: answered from the item store")
	ns := ledgerNs(t, ledger)
	require.Len(t, ns, opt.Charged)
	for i, n := range ns {
		require.Equal(t, i+1, n, "each rollout charged once")
	}
	kept := ledgerNs(t, filepath.Join(w.dir, gepaJob, "optimization.attempt-1/rollouts.jsonl"))
	assert.Len(t, kept, charged, "the interrupted attempt's record is kept")
	var res struct{ Status string }
	w.readJSON(gepaJob+"/result.json", &res)
	assert.Equal(t, "ok", res.Status)
	t.Logf("killed with %d rollouts charged; started over: %d charged", charged, opt.Charged)
}
