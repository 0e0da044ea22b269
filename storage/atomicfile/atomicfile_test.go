package atomicfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteReplacesAndLeavesNoTemporaryFile(t *testing.T) {
	for _, sync := range []bool{false, true} {
		dir := t.TempDir()
		p := filepath.Join(dir, "a", "b", "f.json")
		require.NoError(t, Write(p, []byte("one"), sync), "the folder is made")
		require.NoError(t, Write(p, []byte("two"), sync))
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, "two", string(b))
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
		left, err := os.ReadDir(filepath.Dir(p))
		require.NoError(t, err)
		assert.Len(t, left, 1, "no temporary file is left: %v", left)
	}
}

func TestWriteFailureKeepsTheOldContent(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	require.NoError(t, Write(p, []byte("old"), false))
	// A folder in the way of the rename: the write fails, the old file
	// is untouched and nothing is left behind.
	q := filepath.Join(dir, "d")
	require.NoError(t, os.MkdirAll(filepath.Join(q, "x"), 0o755))
	assert.Error(t, Write(q, []byte("new"), false))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "old", string(b))
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, left, 2, "%v", left)
}

// TestWriteRespectsUmask: the file gets 0666 less the umask, so the group
// of a shared cache may replace it when the umask lets it.
func TestWriteRespectsUmask(t *testing.T) {
	old := syscall.Umask(0o002)
	defer syscall.Umask(old)
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, Write(p, []byte("x"), false))
	st, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o664), st.Mode().Perm())
}
