package stages

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

// While one node waits for the apply that holds its out folder to say who
// it is, another node of the same process takes an unrelated out folder
// at once: the wait is not under the process-wide mutex of held folders.
func TestOutFolderWaitDoesNotBlockOtherFolders(t *testing.T) {
	root := t.TempDir()
	a := filepath.Join(root, "runs", "a")
	require.NoError(t, os.MkdirAll(a, 0o755))
	// Another apply holds a's lock and has not written who it is yet.
	other := flock.New(filepath.Join(a, OutLockFile))
	ok, err := other.TryLock()
	require.NoError(t, err)
	require.True(t, ok)
	defer other.Unlock()

	waiting := make(chan struct{})
	var once sync.Once
	waitingForOwner = func(dir string) {
		if dir == a {
			once.Do(func() { close(waiting) })
		}
	}
	defer func() { waitingForOwner = func(string) {} }()
	defer releaseOutFolder(filepath.Join(root, "runs", "b"))

	first := make(chan string, 1)
	go func() {
		msg, err := holdOutFolder(root, "runs/a", "job-a")
		assert.NoError(t, err)
		first <- msg
	}()
	<-waiting

	msg, err := holdOutFolder(root, "runs/b", "job-b")
	require.NoError(t, err)
	assert.Empty(t, msg, "runs/b is free: it is taken")

	// Only now does the other apply say who it is; the first node, still
	// waiting, names it.
	b, _ := json.Marshal(outOwner{PID: 4242, Host: "h1", Job: "other-job", Started: "2026-01-01T00:00:00Z"})
	require.NoError(t, os.WriteFile(filepath.Join(a, OutLockFile), b, 0o644))
	refusal := <-first
	assert.Contains(t, refusal, "the out folder runs/a is being written by the apply of job other-job (pid 4242 on h1")
}

// releaseOutFolder lets go of an out folder this process holds.
func releaseOutFolder(dir string) {
	heldOut.Lock()
	defer heldOut.Unlock()
	if fl, ok := heldOut.m[dir]; ok {
		fl.Unlock()
		delete(heldOut.m, dir)
	}
}

// An optimization whose out folder an apply is writing now is running, not
// interrupted: plan does not call it refused while the folder's lock is
// held, and does once it is free and the started marker is left.
func TestPlanRefusalOfARunningOptimization(t *testing.T) {
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks: a held folder cannot be told from a free one")
	}
	root := t.TempDir()
	n := seedOptimizeNode()
	n.Args["out"] = cty.StringVal("runs/j")
	out := filepath.Join(root, "runs", "j")
	require.NoError(t, os.MkdirAll(filepath.Join(out, "optimization"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, "optimization", startedMarker), []byte(`{}`), 0o644))
	assert.False(t, outFolderHeld(root, "runs/j"), "no lock file")

	other := flock.New(filepath.Join(out, OutLockFile))
	ok, err := other.TryLock()
	require.NoError(t, err)
	require.True(t, ok)
	assert.True(t, outFolderHeld(root, "runs/j"))
	assert.Empty(t, Optimize{}.PlanRefusal(n, root, "", false), "running, not interrupted")

	require.NoError(t, other.Unlock())
	assert.False(t, outFolderHeld(root, "runs/j"))
	assert.Contains(t, Optimize{}.PlanRefusal(n, root, "", false), "the optimization in runs/j was interrupted")
}
