package slurm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A job seen FAILED is decided only once that state has stood for
// failedSettle over two queries: a requeued job shows its killed run FAILED for
// a moment, then pending again, and that run is not its end. COMPLETED is
// decided at once.
func TestFailedStateSettlesBeforeItIsTaken(t *testing.T) {
	t0 := time.Now()
	var tr tracked
	assert.True(t, tr.settled("COMPLETED", t0, 100*time.Millisecond))
	assert.False(t, tr.settled("FAILED", t0, 100*time.Millisecond), "first seen")
	assert.False(t, tr.settled("FAILED", t0.Add(failedSettle/2), 100*time.Millisecond), "not settled yet")
	assert.True(t, tr.settled("FAILED", t0.Add(failedSettle), 100*time.Millisecond))
	var slow tracked
	assert.False(t, slow.settled("CANCELLED", t0, 5*time.Second))
	assert.False(t, slow.settled("CANCELLED", t0.Add(failedSettle), 5*time.Second), "the next query, at the poll interval")
	assert.True(t, slow.settled("CANCELLED", t0.Add(5*time.Second), 5*time.Second))
}

// A completed job's exit file must say status 0: one saying otherwise is
// an earlier run's, of a requeued job, whose next run writes its own.
// awaitExit waits for that file, and takes the other only at the end of
// its wait.
func TestCompletedJobWaitsForItsOwnRunsExitFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.exit")
	write := func(status, restarts int) {
		tmp := path + ".tmp"
		require.NoError(t, os.WriteFile(tmp, fmt.Appendf(nil, "status=%d\nterm=%d\nrestarts=%d\n", status, min(status, 1), restarts), 0o644))
		require.NoError(t, os.Rename(tmp, path))
	}
	c := &Client{life: context.Background()}
	completed := func(ex ExitStatus) bool { return ex.Status == 0 }

	write(143, 0)
	ex, err := c.awaitExit(path, 100*time.Millisecond, completed)
	require.NoError(t, err)
	require.NotNil(t, ex)
	assert.Equal(t, 143, ex.Status, "at the end of the wait, the file there")

	got := make(chan *ExitStatus, 1)
	go func() {
		ex, _ := c.awaitExit(path, time.Minute, completed)
		got <- ex
	}()
	write(0, 1) // the requeued job's next run
	ex = <-got
	require.NotNil(t, ex)
	assert.Equal(t, 0, ex.Status)
	assert.Equal(t, 1, ex.Restarts)
}
