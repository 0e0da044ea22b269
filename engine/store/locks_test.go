package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --lock-timeout names the lock a node gave up waiting for: its key's (the
// same work running elsewhere), or the lock of a file it writes (another
// configuration writing it), by its path in the workspace.
func TestLockTimeoutNamesTheLockWaitedFor(t *testing.T) {
	cacheDir := t.TempDir()
	root := t.TempDir()
	out := NodePaths{Root: root, Abs: []string{filepath.Join(root, "out", "v.txt")}}
	wait := func(key string) error {
		_, err := WaitKeyLock(context.Background(), cacheDir, key, out, 50*time.Millisecond, func() (*KeyLock, string, error) {
			return TryNodeLock(cacheDir, key, out)
		}, nil)
		return err
	}

	held, output, err := TryNodeLock(cacheDir, "key-a", out)
	require.NoError(t, err)
	require.NotNil(t, held, output)
	err = wait("key-a")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gave up after 50ms (--lock-timeout) waiting for its key's lock: another node of this apply, or another process, is running the same work")

	err = wait("key-b")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gave up after 50ms (--lock-timeout) waiting for the lock of out/v.txt, which it writes: another node of this apply, or another process, is writing that file")

	held.Release()
	lk, err := WaitKeyLock(context.Background(), cacheDir, "key-b", out, 50*time.Millisecond, nil, nil)
	require.NoError(t, err)
	require.NotNil(t, lk)
	lk.Release()
}
