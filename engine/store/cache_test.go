package store

import (
	"fmt"
	"os"
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

// A written record waits for a sync round until one is asked for
// (SyncSoon), or at the latest SyncDelay: records nobody needs durable
// yet share a round.
func TestSyncRoundsWaitUntilAskedOrDelay(t *testing.T) {
	c, err := Open(t.TempDir(), Options{})
	require.NoError(t, err)
	defer c.Close()
	rounds := 0
	c.SyncGate = func() {
		if c.Written() > c.Durable() {
			rounds++ // only the syncer's rounds run here: no data race
		}
	}
	c.SyncDelay = time.Hour
	commit := func(b byte) int64 {
		seq, err := c.Commit(&Record{Key: strings.Repeat(string(b), 64), Pipeline: "p", Address: "stage." + string(b), Ended: time.Now()}, 0)
		require.NoError(t, err)
		return seq
	}
	commit('a')
	seq := commit('b')
	c.SyncSoon(seq)
	require.Eventually(t, func() bool { return c.Durable() == seq }, 10*time.Second, time.Millisecond, "SyncSoon starts a round")
	assert.Equal(t, 1, rounds, "both records share one round")
	c.SyncSoon(seq) // durable already: no round
	assert.Equal(t, seq, c.Durable())
	require.NoError(t, c.Close())

	// Unasked, a round comes SyncDelay after a record was written.
	c, err = Open(c.Dir, Options{})
	require.NoError(t, err)
	c.SyncDelay = time.Millisecond
	seq = commit('c')
	require.Eventually(t, func() bool { return c.Durable() == seq }, 10*time.Second, time.Millisecond, "a round comes after SyncDelay")
}

// Refresh takes in what another process committed, each time, while it
// reads the index from the file it keeps open; and when the index is
// replaced underneath it (gc compacts it into a new file), it reads the
// new file from its start and forgets what the old one held.
func TestRefreshFollowsAnotherWriterAndAReplacedIndex(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	defer a.Close()
	b, err := Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	defer b.Close()
	rec := func(i int) *Record {
		return &Record{Key: fmt.Sprintf("%064d", i), Pipeline: "p", Address: fmt.Sprintf("stage.n%d", i), Ended: time.Now()}
	}
	for i := 1; i <= 5; i++ {
		_, err := a.Commit(rec(i), 0)
		require.NoError(t, err)
		require.NoError(t, b.Refresh())
		for j := 1; j <= i; j++ {
			assert.True(t, b.Has(rec(j).Key), "after commit %d, b misses record %d", i, j)
		}
		// b's own commit and a's next one come one after the other.
		_, err = b.Commit(rec(100+i), 0)
		require.NoError(t, err)
		require.NoError(t, a.Refresh())
		assert.True(t, a.Has(rec(100+i).Key))
	}

	// Another index takes the place of the one b has open, holding one
	// record b has never seen and none of the others.
	other := t.TempDir()
	c, err := Open(other, Options{NoSync: true})
	require.NoError(t, err)
	_, err = c.Commit(rec(999), 0)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, os.Rename(IndexPath(other), IndexPath(dir)))
	require.NoError(t, b.Refresh())
	assert.True(t, b.Has(rec(999).Key))
	assert.False(t, b.Has(rec(1).Key), "a record of the replaced index is still taken")
}
