package serve_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine/runlog"
)

// Another program takes a serve stage's port after cairn checked it was
// free (here another simulated server, started once the replica's
// process runs, while the replica still waits to listen): its answers
// would pass every readiness check. The replica is not ready: the apply
// fails (exit 1, class setup) naming the other program and the port, no
// item is evaluated and none is stored under the stage's keys.
func TestServeForeignServerOnItsPortIsNotReady(t *testing.T) {
	w := newWorkspace(t, 6)
	port := e2etest.FreePorts(t, 2)
	// The replica would listen only after a minute: the other program
	// holds the port long before.
	f := w.pipeline(serveStage("tm", port, 1, 0, "  restarts = 0\n", "--start-delay", "60s"), evalStage("a", "tm"))
	apply := w.start("apply", f)
	e2etest.WaitFor(t, "the replica's start (or the apply's end)", time.Minute, func() bool {
		if rs := w.runsOldestFirst(); len(rs) == 1 {
			return index(rs[0].Entries, func(e runlog.Entry) bool { return e.T == runlog.Started && e.Node == "stage.tm" }) >= 0
		}
		return apply.ended()
	})
	require.False(t, apply.ended(), "the apply ended:\n%s", apply.output())
	foreign := exec.Command(simBin, "--port", fmt.Sprint(port), "--model", model, "--wrong-rate", "1", "--request-log", filepath.Join(w.dir, "foreign.jsonl"))
	require.NoError(t, foreign.Start())
	t.Cleanup(func() { _ = foreign.Process.Kill(); _ = foreign.Wait() })

	apply.wait()
	out := apply.output()
	assert.Equal(t, 1, apply.cmd.ProcessState.ExitCode(), out)
	assert.Contains(t, out, fmt.Sprintf("replica 1 (port %d) did not get ready: port %d is held by another program, pid %d (%s --port %d", port, port, foreign.Process.Pid, simBin, port))
	assert.NotContains(t, out, "replica 1 ready")
	assert.Empty(t, w.workerRequests(), "the stage's own server was asked")
	assert.Empty(t, w.storedKeys(), "items were stored under the stage's keys")
}
