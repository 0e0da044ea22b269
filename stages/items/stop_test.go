package items

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/sim/simmodel"
)

// stopWorker reads requests and answers none; it notes its first request
// in DIR/read, and SIGTERM in DIR/term, after which it exits unless it
// ignores it (its second argument, "ignore").
const stopWorker = `import os, signal, sys, time
d, ignore = sys.argv[1], len(sys.argv) > 2
def term(*_):
    open(os.path.join(d, "term"), "w").close()
    if not ignore:
        sys.exit(0)
signal.signal(signal.SIGTERM, term)
sys.stdin.readline()
open(os.path.join(d, "read"), "w").close()
while True:
    time.sleep(1)
`

// stopRun evaluates a few items with stopWorker until it read a request,
// then stops the evaluation, with grace and hard as given; it reports
// whether the worker got SIGTERM.
func stopRun(t *testing.T, grace time.Duration, hard chan struct{}, ignore bool) bool {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no python3")
	}
	f := newFixture(t, simmodel.Config{})
	dir := t.TempDir()
	script := filepath.Join(dir, "worker.py")
	require.NoError(t, os.WriteFile(script, []byte(stopWorker), 0o644))
	cfg := f.config(makeItems(3))
	cfg.Worker = []string{"python3", script, dir}
	if ignore {
		cfg.Worker = append(cfg.Worker, "ignore")
	}
	cfg.Env, cfg.Replicas, cfg.MaxInFlight = nil, 1, 1
	cfg.StopGrace, cfg.Hard = grace, hard
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Evaluate(ctx, cfg)
		done <- err
	}()
	waitForFile(t, filepath.Join(dir, "read"), done)
	cancel()
	if ignore && hard != nil {
		waitForFile(t, filepath.Join(dir, "term"), done)
		close(hard)
	}
	require.ErrorIs(t, <-done, context.Canceled)
	_, err := os.Stat(filepath.Join(dir, "term"))
	return err == nil
}

// waitForFile waits until path exists, failing the test if the evaluation
// ends first.
func waitForFile(t *testing.T, path string, done chan error) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the evaluation ended (%v) before %s was written", err, path)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// An evaluation stopped before its end (interrupted, or past its node's
// timeout) gives its workers SIGTERM and the stage's kill_grace, as a
// command's process gets: a worker that exits on SIGTERM ends the stop
// at once; one that ignores it is killed when the grace is over, right
// after it without a grace, or when a second interrupt closes Hard.
func TestStoppedEvaluationTerminatesItsWorkers(t *testing.T) {
	assert.True(t, stopRun(t, time.Hour, nil, false), "SIGTERM, and the worker's exit ends the wait")
	assert.True(t, stopRun(t, 50*time.Millisecond, nil, true), "SIGTERM ignored: killed after the grace")
	assert.True(t, stopRun(t, time.Hour, make(chan struct{}), true), "SIGTERM ignored: killed when Hard closes")
	stopRun(t, 0, nil, true) // SIGTERM ignored, no grace: killed, and the stop ends
	hard := make(chan struct{})
	close(hard)
	assert.False(t, stopRun(t, time.Hour, hard, false), "Hard closed before: killed at once, without SIGTERM")
}
