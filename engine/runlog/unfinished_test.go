package runlog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runFolder journals a run: ended with its run_end, or killed mid-node.
func runFolder(t *testing.T, cache, id string, ended bool) {
	t.Helper()
	j, err := Open(cache, id, true)
	require.NoError(t, err)
	require.NoError(t, j.Write(Entry{T: RunStart, RunID: id, Pipeline: "p", PID: 1}))
	require.NoError(t, j.Write(Entry{T: Started, Node: "stage.a", Key: "k"}))
	if ended {
		require.NoError(t, j.Write(Entry{T: RunEnd, Status: "ok"}))
	}
	require.NoError(t, j.Close())
}

func ids(runs []*RunInfo) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

// runs/settled is overwritten in place; a value that names no run folder
// (half written, or a run gc collected) reads as none, so a run that
// needs recovery is never passed over.
func TestSettledThatNamesNoRunIsNone(t *testing.T) {
	cache := t.TempDir()
	const a, b, c = "20260315T091502.100Z-aaaaaa", "20260315T091502.200Z-bbbbbb", "20260315T091502.300Z-cccccc"
	runFolder(t, cache, a, false) // killed
	runFolder(t, cache, b, true)
	settledPath := filepath.Join(cache, "runs", settledFile)

	runs, err := Unfinished(cache)
	require.NoError(t, err)
	assert.Equal(t, []string{a, b}, ids(runs), "the killed run and every one after it")
	_, err = os.Stat(settledPath)
	assert.True(t, os.IsNotExist(err), "nothing is settled before the killed run")

	// A half-written value that sorts after the killed run, and one
	// longer than an id (left by something else): neither names a run.
	for _, garbled := range []string{"20260315T091502.150Z-bbbbbb", b[:20] + "zzz", c + "-and-more-than-an-id"} {
		require.NoError(t, os.WriteFile(settledPath, []byte(garbled+"\n"), 0o666))
		runs, err = Unfinished(cache)
		require.NoError(t, err)
		assert.Equal(t, []string{a, b}, ids(runs), "settled %q", garbled)
	}

	// Once the killed run needs nothing more (here: marked as ended), the
	// newest run is settled, written whole over the longer value.
	writeEndMarker(filepath.Join(cache, "runs", a), endMarker{Pipeline: "p", Status: "failed"})
	runFolder(t, cache, c, true)
	runs, err = Unfinished(cache)
	require.NoError(t, err)
	assert.Empty(t, ids(runs))
	got, err := os.ReadFile(settledPath)
	require.NoError(t, err)
	assert.Equal(t, c+"\n", string(got))
}

// A run's end marker goes into its lock file (no new file in the run
// folder); one in an `ended` file (an earlier cairn's, or where the lock
// file could not take it) is read as well.
func TestEndMarkerInLockFile(t *testing.T) {
	cache := t.TempDir()
	const id = "20260315T091502.100Z-aaaaaa"
	runFolder(t, cache, id, true)
	dir := filepath.Join(cache, "runs", id)
	_, err := os.Stat(filepath.Join(dir, endedFile))
	assert.True(t, os.IsNotExist(err), "no ended file")
	assert.Equal(t, &endMarker{Pipeline: "p", Status: "ok"}, readEndMarker(dir))
	assert.False(t, Alive(dir), "the marker leaves the lock a lock")

	// An earlier cairn's run: an empty lock file and an ended file.
	require.NoError(t, os.WriteFile(filepath.Join(dir, lockFile), nil, 0o666))
	require.NoError(t, os.WriteFile(filepath.Join(dir, endedFile), []byte(`{"pipeline":"p","status":"failed"}`+"\n"), 0o666))
	assert.Equal(t, &endMarker{Pipeline: "p", Status: "failed"}, readEndMarker(dir))

	// No lock file to write into: the marker goes to ended.
	require.NoError(t, os.Remove(filepath.Join(dir, lockFile)))
	writeEndMarker(dir, endMarker{Pipeline: "p", Status: "interrupted"})
	assert.Equal(t, &endMarker{Pipeline: "p", Status: "interrupted"}, readEndMarker(dir))

	// A longer marker before: the new one is written whole.
	require.NoError(t, os.WriteFile(filepath.Join(dir, lockFile), []byte(`{"pipeline":"a much longer pipeline name","status":"failed"}`+"\n"), 0o666))
	writeEndMarker(dir, endMarker{Pipeline: "p", Status: "ok"})
	b, err := os.ReadFile(filepath.Join(dir, lockFile))
	require.NoError(t, err)
	assert.Equal(t, `{"pipeline":"p","status":"ok"}`+"\n", string(b))
}
