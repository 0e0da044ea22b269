package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/store"
)

// gc removes the per-key lock files of earlier versions and keeps the
// node lock file.
func TestGCRemovesOldKeyLockFiles(t *testing.T) {
	w := newWorkspace(t, twoStage)
	w.apply(ApplyOptions{})
	old := filepath.Join(w.Cache, "locks", "ab", "abcdef")
	require.NoError(t, os.MkdirAll(filepath.Dir(old), 0o755))
	require.NoError(t, os.WriteFile(old, []byte(`{"pid":1}`), 0o644))
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	_, err = store.GC(c, store.GCOptions{})
	require.NoError(t, err)
	assert.NoDirExists(t, filepath.Dir(old))
	assert.FileExists(t, filepath.Join(w.Cache, "locks", "nodes"))
	r := w.apply(ApplyOptions{})
	assert.Equal(t, 4, r.res.Cached, r.out)
}
