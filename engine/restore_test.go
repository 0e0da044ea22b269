package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/cas"
)

// A restore that fails in the workspace is not damage to the cache, also
// when the workspace folder went away meanwhile (an ENOENT, which must not
// read as a blob that is gone); a blob or inline bytes that do not hash to
// their digest, or a blob that is gone, are.
func TestRestoreDamagedTellsCacheFromWorkspace(t *testing.T) {
	store, err := cas.Open(t.TempDir(), cas.Options{NoSync: true})
	require.NoError(t, err)
	content := []byte("cached output\n")
	d, err := store.PutBytes(content)
	require.NoError(t, err)

	gone := filepath.Join(t.TempDir(), "d")
	require.NoError(t, os.Mkdir(gone, 0o755))
	dir, err := os.Open(gone)
	require.NoError(t, err)
	defer dir.Close()
	require.NoError(t, os.Remove(gone))

	err = store.RestoreAt(d, dir, "f.txt", 0o644)
	require.Error(t, err)
	assert.False(t, restoreDamaged(err), "a removed workspace folder: %v", err)
	err = cas.RestoreBytesAt(d, content, dir, "f.txt", 0o644)
	require.Error(t, err)
	assert.False(t, restoreDamaged(err), "a removed workspace folder: %v", err)

	ws, err := os.Open(t.TempDir())
	require.NoError(t, err)
	defer ws.Close()
	assert.True(t, restoreDamaged(cas.RestoreBytesAt(d, []byte("other bytes\n"), ws, "f.txt", 0o644)), "inline bytes that do not hash to their digest")
	assert.True(t, restoreDamaged(store.RestoreAt(cas.DigestBytes([]byte("never stored")), ws, "f.txt", 0o644)), "a blob that is gone")
	require.NoError(t, store.RestoreAt(d, ws, "f.txt", 0o644))
}
