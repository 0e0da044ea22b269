package store

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/wal"
)

// A committed record is in the index for the next process, and every
// action payload there names its key for RecordKey; address pointers
// name none.
func TestCommitReopenRecordKey(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	key := strings.Repeat("ab", 32)
	_, err = c.Commit(&Record{Key: key, Pipeline: "p", Address: "stage.a", Ended: time.Now()}, 0)
	require.NoError(t, err)
	require.NoError(t, c.Close())

	c, err = Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	r, ok := c.Lookup(key)
	require.True(t, ok)
	assert.Equal(t, Format, r.Format)
	assert.Equal(t, key, c.LastKey("p", "stage.a"))
	assert.Equal(t, map[string]string{"p": key}, c.AddressKeys("stage.a"))

	var keys []string
	_, err = wal.ReadFrom(IndexPath(dir), 0, func(_ int64, p []byte) error {
		if k, ok := RecordKey(p); ok {
			keys = append(keys, k)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{key}, keys)
	assert.Equal(t, "abababababab", Short(key))
}
