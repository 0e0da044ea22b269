package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gc removes the per-key lock files of earlier versions and keeps the
// node lock file.
func TestGCRemovesOldKeyLockFiles(t *testing.T) {
	w := newWorkspace(t, twoStage)
	w.apply(ApplyOptions{})
	old := filepath.Join(w.cache, "locks", "ab", "abcdef")
	require.NoError(t, os.MkdirAll(filepath.Dir(old), 0o755))
	require.NoError(t, os.WriteFile(old, []byte(`{"pid":1}`), 0o644))
	c, err := OpenCache(w.cache, CacheOptions{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	_, err = GC(c, GCOptions{})
	require.NoError(t, err)
	assert.NoDirExists(t, filepath.Dir(old))
	assert.FileExists(t, nodeLockFile(w.cache))
	r := w.apply(ApplyOptions{})
	assert.Equal(t, 4, r.res.Cached, r.out)
}
