package digest_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/storage/digest"
)

// The digest of a file is what sha256sum prints for it.
func TestFileIsWhatSha256sumPrints(t *testing.T) {
	p := filepath.Join(t.TempDir(), "abc")
	require.NoError(t, os.WriteFile(p, []byte("abc"), 0o644))
	d, err := digest.File(p)
	require.NoError(t, err)
	assert.Equal(t, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", d)
	r, err := digest.Reader(strings.NewReader("abc"))
	require.NoError(t, err)
	assert.Equal(t, d, r)
}

// A folder or a named pipe is refused, naming it, and the pipe does not
// block the caller (no writer ever opens it).
func TestFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	_, err := digest.File(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), dir)

	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	_, err = digest.File(fifo)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fifo+" is not a regular file")

	_, err = digest.File(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
