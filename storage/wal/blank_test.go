package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Blank turns damage in the middle of a log into records of zeros: the
// records before and after it read back, Open works again, and appends go
// on at the end.
func TestBlankKeepsRecordsAroundDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, err := Open(path, Options{Shared: true, NoSync: true})
	require.NoError(t, err)
	var offs []int64
	for i := 0; i < 6; i++ {
		offs = append(offs, l.Size())
		require.NoError(t, l.Append([][]byte{[]byte(fmt.Sprintf("record %d with some text", i))}, Durable))
	}
	require.NoError(t, l.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[offs[1]+10] ^= 0xff // payload of record 1
	b[offs[3]] ^= 0x01    // length of record 3
	require.NoError(t, os.WriteFile(path, b, 0o644))
	_, err = Open(path, Options{Shared: true, NoSync: true})
	require.ErrorIs(t, err, ErrCorrupt)

	kept, err := Blank(path, true)
	require.NoError(t, err)
	require.Len(t, kept, 2)
	// What was overwritten is kept beside the log, byte for byte.
	assert.Equal(t, b[offs[1]:offs[2]], fileBytes(t, kept[0]))
	assert.Equal(t, filepath.Dir(path), filepath.Dir(kept[0]))
	assert.Regexp(t, fmt.Sprintf(`^log\.damaged-%d-\d{8}T\d{6}\.\d{9}Z$`, offs[1]), filepath.Base(kept[0]))
	assert.Equal(t, b[offs[3]:offs[4]], fileBytes(t, kept[1]))
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, int64(len(b)), st.Size(), "the file keeps its size")

	var got []string
	_, err = Read(path, func(_ int64, p []byte) error {
		if len(p) > 0 && p[0] != 0 {
			got = append(got, string(p))
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"record 0 with some text", "record 2 with some text", "record 4 with some text", "record 5 with some text"}, got)

	l, err = Open(path, Options{Shared: true, NoSync: true})
	require.NoError(t, err)
	require.NoError(t, l.Append([][]byte{[]byte("after")}, Durable))
	require.NoError(t, l.Close())
	kept, err = Blank(path, true)
	require.NoError(t, err)
	assert.Empty(t, kept, "a sound log is left alone")
}

// Damage that no valid record follows is not blanked.
func TestBlankRefusesDamageAtTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(path, []byte("not a cairn log at all"), 0o644))
	_, err := Blank(path, true)
	require.ErrorIs(t, err, ErrCorrupt)
}

// OpenBlanking opens a sound log as Open does, and one damaged in the
// middle after blanking it; readers tell the blanked record by Blanked.
func TestOpenBlanking(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, kept, err := OpenBlanking(path, Options{Shared: true, NoSync: true})
	require.NoError(t, err)
	assert.Empty(t, kept)
	var offs []int64
	for i := 0; i < 3; i++ {
		offs = append(offs, l.Size())
		require.NoError(t, l.Append([][]byte{[]byte(fmt.Sprintf("record %d", i))}, Durable))
	}
	require.NoError(t, l.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[offs[1]+10] ^= 0xff
	require.NoError(t, os.WriteFile(path, b, 0o644))

	l, kept, err = OpenBlanking(path, Options{Shared: true, NoSync: true})
	require.NoError(t, err)
	require.Len(t, kept, 1)
	require.NoError(t, l.Close())
	var got []string
	_, err = Read(path, func(_ int64, p []byte) error {
		if !Blanked(p) {
			got = append(got, string(p))
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"record 0", "record 2"}, got)
	assert.False(t, Blanked(nil), "an empty payload is not a blanked record")
	assert.False(t, Blanked([]byte{0, 1}))
}
