package stages

import (
	"encoding/json"
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

// --replace sets an optimization aside whole or not at all: without a
// job.json (an optimize stage without a job stage) the attempt names
// itself in set_aside.json; with one that cannot be read, nothing moves
// and the started marker stays (so the next apply still refuses to
// restart it silently); with one, earlier_attempts names it.
func TestSetAsideOptimizationIsAllOrNothing(t *testing.T) {
	setup := func(t *testing.T) (root string) {
		root = t.TempDir()
		opt := filepath.Join(root, "runs/j", "optimization")
		require.NoError(t, os.MkdirAll(opt, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(opt, startedMarker), []byte(`{}`), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(opt, "rollouts.jsonl"), []byte("{}\n{}\n"), 0o644))
		return root
	}
	t.Run("no job.json", func(t *testing.T) {
		root := setup(t)
		require.NoError(t, setAsideOptimization(root, "runs/j", true))
		b, err := os.ReadFile(filepath.Join(root, "runs/j/optimization.attempt-1", SetAsideFile))
		require.NoError(t, err)
		var a EarlierAttempt
		require.NoError(t, json.Unmarshal(b, &a))
		assert.Equal(t, EarlierAttempt{Folder: "runs/j/optimization.attempt-1", Interrupted: true, ChargedRollouts: 2, SetAside: a.SetAside}, a)
		assert.NoDirExists(t, filepath.Join(root, "runs/j/optimization"))
	})
	t.Run("a job.json that cannot be read", func(t *testing.T) {
		root := setup(t)
		require.NoError(t, os.WriteFile(filepath.Join(root, "runs/j/job.json"), []byte("{not json"), 0o644))
		require.Error(t, setAsideOptimization(root, "runs/j", true))
		assert.FileExists(t, filepath.Join(root, "runs/j/optimization", startedMarker), "nothing moved")
		assert.NoDirExists(t, filepath.Join(root, "runs/j/optimization.attempt-1"))
	})
	t.Run("job.json", func(t *testing.T) {
		root := setup(t)
		require.NoError(t, os.WriteFile(filepath.Join(root, "runs/j/job.json"), []byte(`{"format":"cairn.job/1"}`), 0o644))
		require.NoError(t, setAsideOptimization(root, "runs/j", true))
		b, err := os.ReadFile(filepath.Join(root, "runs/j/job.json"))
		require.NoError(t, err)
		var id JobIdentity
		require.NoError(t, json.Unmarshal(b, &id))
		require.Len(t, id.EarlierAttempts, 1)
		assert.Equal(t, 2, id.EarlierAttempts[0].ChargedRollouts)
		assert.NoFileExists(t, filepath.Join(root, "runs/j/optimization.attempt-1", SetAsideFile))
	})
}

// An out folder without optimization.json is refused only when it holds
// what an optimization left or what a job made from one: a fresh folder,
// or one whose start was cut short before its marker (empty folders
// only), starts the optimization.
func TestUnrecordedRefusalOnlyForFilesLeft(t *testing.T) {
	root := t.TempDir()
	assert.Empty(t, unrecordedRefusal(root, "runs/j", "AGAIN"), "no folder")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "runs/j/optimization/incumbent"), 0o755))
	assert.Empty(t, unrecordedRefusal(root, "runs/j", "AGAIN"), "empty folders")

	require.NoError(t, os.WriteFile(filepath.Join(root, "runs/j/selection.json"), []byte(`{}`), 0o644))
	assert.Contains(t, unrecordedRefusal(root, "runs/j", "AGAIN"), "the out folder runs/j holds selection.json but no optimization.json")
	require.NoError(t, os.WriteFile(filepath.Join(root, "runs/j/optimization/rollouts.jsonl"), []byte("{}\n{}"), 0o644))
	msg := unrecordedRefusal(root, "runs/j", "AGAIN")
	assert.Contains(t, msg, "holds optimization/ (2 charged rollouts recorded in its rollouts.jsonl), selection.json but no optimization.json")
	assert.Contains(t, msg, "setting what it left aside (named in job.json): AGAIN.")
}
