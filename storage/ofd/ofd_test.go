package ofd

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLocksExcludeOtherDescriptionsAndShowInFdinfo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "locks")
	a, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer a.Close()
	b, err := os.OpenFile(p, os.O_RDWR, 0)
	require.NoError(t, err)
	defer b.Close()

	off := Offset([]byte{0xff, 1, 2, 3, 4, 5, 6, 7, 8})
	assert.Less(t, off, int64(Range))
	ok, err := TryLock(a, off)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = TryLock(a, off)
	require.NoError(t, err)
	assert.True(t, ok, "taking a lock the description holds succeeds")
	ok, err = TryLock(b, off)
	require.NoError(t, err)
	assert.False(t, ok, "another open file description is refused")
	ok, err = TryLock(b, off+1)
	require.NoError(t, err)
	assert.True(t, ok, "the next byte is another lock")

	fd := strconv.Itoa(int(a.Fd()))
	assert.Equal(t, []int64{off}, Held(os.Getpid(), fd))
	assert.Equal(t, []int64{off + 1}, Held(os.Getpid(), strconv.Itoa(int(b.Fd()))))

	require.NoError(t, Unlock(a, off))
	assert.Empty(t, Held(os.Getpid(), fd))
	ok, err = TryLock(b, off)
	require.NoError(t, err)
	assert.True(t, ok, "free once unlocked")

	// Closing a description frees its locks.
	require.NoError(t, b.Close())
	ok, err = TryLock(a, off+1)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Nil(t, Held(1<<30, "3"), "a process that does not exist holds nothing")
}

func TestParseLockLine(t *testing.T) {
	off, ok := parseLockLine("lock:\t1: OFDLCK ADVISORY  WRITE -1 fe:00:9978093 4660 4660")
	assert.True(t, ok)
	assert.Equal(t, int64(4660), off)
	for _, l := range []string{
		"lock:\t1: FLOCK  ADVISORY  WRITE 12 fe:00:99 0 EOF",
		"lock:\t1: OFDLCK ADVISORY  READ -1 fe:00:99 7 7",
		"lock:\t1: OFDLCK ADVISORY  WRITE -1 fe:00:99 x 7",
		"pos:\t0",
		"lock:",
	} {
		_, ok := parseLockLine(l)
		assert.False(t, ok, l)
	}
}
