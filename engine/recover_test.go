package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/runlog"
)

// Runs that ended are looked at once: the next apply starts after them.
func TestSettledRunsAreNotReadAgain(t *testing.T) {
	w := newWorkspace(t, twoStage)
	first := w.apply(ApplyOptions{}).res.RunID
	second := w.apply(ApplyOptions{}).res.RunID
	b, err := os.ReadFile(filepath.Join(w.cache, "runs", "settled"))
	require.NoError(t, err)
	assert.Equal(t, first+"\n", string(b), "the second apply found the first one ended")

	// A run folder that looks killed mid-node: read, it is reported.
	fake := func(id string) {
		j, err := runlog.Open(w.cache, id, true)
		require.NoError(t, err)
		require.NoError(t, j.Write(runlog.Entry{T: runlog.RunStart, RunID: id, Pipeline: "t", PID: 1}))
		require.NoError(t, j.Write(runlog.Entry{T: runlog.Started, Node: `stage.make["a"]`, Key: "k"}))
		require.NoError(t, j.Close()) // no run_end: as if killed
	}
	// Older than the settled mark: not looked at.
	fake(first[:len(first)-6] + "000000")
	r := w.apply(ApplyOptions{})
	assert.NotContains(t, r.out, "were running when an earlier apply stopped", r.out)
	b, err = os.ReadFile(filepath.Join(w.cache, "runs", "settled"))
	require.NoError(t, err)
	assert.Greater(t, r.res.RunID, second)
	assert.Equal(t, second+"\n", string(b))

	// Newer than it, and than the last apply (a run id made now may share
	// that apply's millisecond and sort before it): looked at, and
	// reported.
	fake(r.res.RunID[:len(r.res.RunID)-6] + "zzzzzz")
	r = w.apply(ApplyOptions{})
	assert.Contains(t, r.out, `were running when an earlier apply stopped: stage.make["a"]`, r.out)
}
