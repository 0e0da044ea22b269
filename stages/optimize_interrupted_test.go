package stages

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An interrupted optimization's refusal says when the method had finished
// (its record written, cairn killed before optimization.json): started
// over, its rollouts come from the item store.
func TestInterruptedOptimizationSaysWhenTheMethodHadFinished(t *testing.T) {
	root := t.TempDir()
	opt := filepath.Join(root, "runs/j", "optimization")
	require.NoError(t, os.MkdirAll(opt, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(opt, startedMarker), []byte(`{"started":"2026-12-05T00:00:00Z","node":"stage.optimize[\"j\"]"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(opt, "rollouts.jsonl"), []byte("{}\n{}\n"), 0o644))
	msg := interruptedOptimization(root, "runs/j")
	assert.Contains(t, msg, "its 2 charged rollouts are recorded in runs/j/optimization/rollouts.jsonl")
	assert.NotContains(t, msg, "the method had finished")

	require.NoError(t, os.WriteFile(filepath.Join(opt, "optimizer_result.json"), []byte(`{}`), 0o644))
	msg = interruptedOptimization(root, "runs/j")
	assert.Contains(t, msg, "(the method had finished: its record runs/j/optimization/optimizer_result.json was written before cairn stopped; started over, its rollouts come from the item store)")
}
