package store

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gc --max-size keeps the newest records whose blobs fit, oldest removed
// first: once a record does not fit, every older one goes too, even one
// small enough for the room left (it would keep an older configuration
// half cached while a newer one is gone).
func TestGCMaxSizeRemovesOldestFirst(t *testing.T) {
	c, err := Open(t.TempDir(), Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	now := time.Now()
	commit := func(name byte, size int, age time.Duration) {
		d, err := c.Blobs.PutBytes(bytes.Repeat([]byte{name}, size))
		require.NoError(t, err)
		_, err = c.Commit(&Record{Key: strings.Repeat(string(name), 64), Pipeline: "p", Address: "stage." + string(name),
			Ended: now.Add(-age), Outputs: map[string]string{"out/" + string(name): string(d)}}, nil)
		require.NoError(t, err)
	}
	commit('a', 200_000, 3*time.Hour) // oldest, small
	commit('b', 600_000, 2*time.Hour)
	commit('c', 500_000, time.Hour) // newest
	res, err := GC(c, GCOptions{MaxBytes: 800_000})
	require.NoError(t, err)
	assert.Equal(t, 2, res.Records, "b does not fit after c, and a, older, goes with it")
	assert.Equal(t, 1, res.Kept)
	assert.True(t, c.Has(strings.Repeat("c", 64)))
	assert.False(t, c.Has(strings.Repeat("b", 64)))
	assert.False(t, c.Has(strings.Repeat("a", 64)), "an older record is not kept in the room a newer one left")
}
