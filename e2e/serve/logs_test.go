package serve_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
)

// A replica restarted after a death keeps the dead process's logs: the
// restart's output follows them in the same files, after a line naming
// the restart, the dead process and how it ended.
func TestServeRestartKeepsTheDeadProcessLog(t *testing.T) {
	w := newWorkspace(t, 24)
	port := e2etest.FreePorts(t, 4)
	f := w.pipeline(firstLifeFault(port, "crashed", "--crash-after 4", ""), evalStage("a", "tm"))
	code, out := w.run("apply", f)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "replica 1 died (exited with status 3): out of the rotation, restart 1 of 1")
	pid, err := os.ReadFile(filepath.Join(w.dir, "crashed"))
	require.NoError(t, err)
	run := runID.FindStringSubmatch(out)[1]
	b, err := os.ReadFile(filepath.Join(w.cache, "runs", run, "out", "tm", "replica1.err"))
	require.NoError(t, err)
	log := string(b)
	crash := strings.Index(log, "SIMULATED crash after 4 chat requests")
	mark := strings.Index(log, "--- cairn: replica 1 restart 1 of 1: the process before it (pid "+strings.TrimSpace(string(pid))+") died: exited with status 3 ---\n")
	serving := strings.LastIndex(log, "SIMULATED model serving")
	require.GreaterOrEqual(t, crash, 0, "the dead process's log is gone:\n%s", log)
	require.Greater(t, mark, crash, "no restart line after the dead process's log:\n%s", log)
	assert.Greater(t, serving, mark, "the restarted process's log does not follow:\n%s", log)
	assert.Equal(t, 2, strings.Count(log, "SIMULATED model serving"), "both processes' start lines:\n%s", log)
}
