package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/storage/wal"
)

// A committed record is in the index for the next process, and every
// action payload there names its key for RecordKey; address pointers
// name none.
func TestCommitReopenRecordKey(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	key := strings.Repeat("ab", 32)
	_, err = c.Commit(&Record{Key: key, Pipeline: "p", Address: "stage.a", Ended: time.Now()}, nil)
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

// A written record waits for a sync round until WaitDurable asks for one,
// or at the latest SyncDelay: records written meanwhile share the round.
func TestSyncRoundsWaitUntilAskedOrDelay(t *testing.T) {
	c, err := Open(t.TempDir(), Options{})
	require.NoError(t, err)
	defer c.Close()
	var rounds atomic.Int64
	c.SyncGate = func() {
		if c.Written() > c.Durable() {
			rounds.Add(1)
		}
	}
	c.SyncDelay = time.Hour
	commit := func(b byte) int64 {
		seq, err := c.Commit(&Record{Key: strings.Repeat(string(b), 64), Pipeline: "p", Address: "stage." + string(b), Ended: time.Now()}, nil)
		require.NoError(t, err)
		return seq
	}
	commit('a')
	seq := commit('b')
	assert.Zero(t, c.Durable(), "no round runs unasked before SyncDelay")
	require.NoError(t, c.WaitDurable(seq))
	assert.Equal(t, seq, c.Durable())
	assert.Equal(t, int64(1), rounds.Load(), "both records share one round")
	require.NoError(t, c.WaitDurable(seq)) // durable already: no round
	assert.Equal(t, int64(1), rounds.Load())
	require.NoError(t, c.Close())

	// Unasked, a round comes SyncDelay after a record was written.
	c, err = Open(c.Dir, Options{})
	require.NoError(t, err)
	c.SyncDelay = time.Millisecond
	seq = commit('c')
	require.Eventually(t, func() bool { return c.Durable() == seq }, 10*time.Second, time.Millisecond, "a round comes after SyncDelay")
}

// A record committed with needs (the records of its upstreams that were
// not durable yet) counts, when the index is read, only where each of them
// is in the index with the same output digest: a power loss that took an
// upstream's record leaves its downstream's out too. A record's needs do
// not make it wait for a round.
func TestRecordCountsOnlyWithTheUpstreamRecordsItNeeds(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, Options{})
	require.NoError(t, err)
	c.SyncDelay = time.Hour
	key := func(b byte) string { return strings.Repeat(string(b), 64) }
	digest := func(b byte) string { return strings.Repeat(string(b), 64) }
	rec := func(k byte, d byte) *Record {
		return &Record{Key: key(k), Pipeline: "p", Address: "stage." + string(k), OutputDigest: digest(d), Ended: time.Now()}
	}
	_, err = c.Commit(rec('a', '1'), nil)
	require.NoError(t, err)
	// b needs a as committed; c needs a with another output digest (a
	// record of a that is not in the index); d needs b and a.
	_, err = c.Commit(rec('b', '2'), []Need{{key('a'), digest('1')}})
	require.NoError(t, err)
	_, err = c.Commit(rec('c', '3'), []Need{{key('a'), digest('9')}})
	require.NoError(t, err)
	_, err = c.Commit(rec('d', '4'), []Need{{key('b'), digest('2')}, {key('a'), digest('1')}})
	require.NoError(t, err)
	assert.Zero(t, c.Durable(), "no commit waited for a sync round")
	for _, k := range "abcd" {
		assert.True(t, c.Has(key(byte(k))), "this process has %c's record", k)
	}
	require.NoError(t, c.Close())

	read := func() map[byte]bool {
		o, err := Open(dir, Options{NoSync: true})
		require.NoError(t, err)
		defer o.Close()
		got := map[byte]bool{}
		for _, k := range "abcde" {
			got[byte(k)] = o.Has(key(byte(k)))
		}
		return got
	}
	assert.Equal(t, map[byte]bool{'a': true, 'b': true, 'c': false, 'd': true, 'e': false}, read())

	// A power loss took a's record (its bytes read as a torn record now):
	// b and d, which need it, count no more.
	idx := filepath.Join(dir, "index.log")
	data, err := os.ReadFile(idx)
	require.NoError(t, err)
	at := bytes.Index(data, []byte("A"+key('a')))
	require.Positive(t, at)
	data[at+70] ^= 0xff // in a's record: its checksum fails
	require.NoError(t, os.WriteFile(idx, data, 0o644))
	o, err := Open(dir, Options{NoSync: true, Warn: func(string, ...any) {}})
	require.NoError(t, err)
	for _, k := range "abcd" {
		assert.False(t, o.Has(key(byte(k))), "%c", k)
	}
	require.NoError(t, o.Close())
}

// twoCaches opens two caches on one new folder, as two processes would
// (closed when the test ends).
func twoCaches(t *testing.T) (dir string, a, b *Cache) {
	t.Helper()
	dir = t.TempDir()
	a, err := Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	b, err = Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return dir, a, b
}

// Refresh takes in what another process committed, each time, while it
// reads the index from the file it keeps open; and when the index is
// replaced underneath it (gc compacts it into a new file), it reads the
// new file from its start and forgets what the old one held.
func TestRefreshFollowsAnotherWriterAndAReplacedIndex(t *testing.T) {
	dir, a, b := twoCaches(t)
	rec := func(i int) *Record {
		return &Record{Key: fmt.Sprintf("%064d", i), Pipeline: "p", Address: fmt.Sprintf("stage.n%d", i), Ended: time.Now()}
	}
	for i := 1; i <= 5; i++ {
		_, err := a.Commit(rec(i), nil)
		require.NoError(t, err)
		require.NoError(t, b.Refresh())
		for j := 1; j <= i; j++ {
			assert.True(t, b.Has(rec(j).Key), "after commit %d, b misses record %d", i, j)
		}
		// b's own commit and a's next one come one after the other.
		_, err = b.Commit(rec(100+i), nil)
		require.NoError(t, err)
		require.NoError(t, a.Refresh())
		assert.True(t, a.Has(rec(100+i).Key))
	}

	// Another index takes the place of the one b has open, holding one
	// record b has never seen and none of the others.
	other := t.TempDir()
	c, err := Open(other, Options{NoSync: true})
	require.NoError(t, err)
	_, err = c.Commit(rec(999), nil)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, os.Rename(IndexPath(other), IndexPath(dir)))
	require.NoError(t, b.Refresh())
	assert.True(t, b.Has(rec(999).Key))
	assert.False(t, b.Has(rec(1).Key), "a record of the replaced index is still taken")
}

// A process's own records need not be read back by Refresh, but whatever
// another process wrote before or between them is: interleaved commits of
// two caches on one folder each end up knowing every record.
func TestRefreshReadsWhatOthersWroteBetweenOwnCommits(t *testing.T) {
	dir, a, b := twoCaches(t)
	key := func(i int) string { return fmt.Sprintf("%064x", i) }
	commit := func(c *Cache, i int) {
		_, err := c.Commit(&Record{Key: key(i), Pipeline: "p", Address: fmt.Sprintf("stage.s%d", i), Ended: time.Now()}, nil)
		require.NoError(t, err)
	}
	// a, a, b, a, b, b, a: each of a's commits after b's starts past
	// records a has not read.
	for i, c := range []*Cache{a, a, b, a, b, b, a} {
		commit(c, i)
	}
	for _, c := range []*Cache{a, b} {
		require.NoError(t, c.Refresh())
		for i := 0; i < 7; i++ {
			assert.True(t, c.Has(key(i)), "record %d", i)
			assert.Equal(t, key(i), c.LastKey("p", fmt.Sprintf("stage.s%d", i)))
		}
	}
	// A third process reads them all from the file.
	o, err := Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	defer o.Close()
	for i := 0; i < 7; i++ {
		assert.True(t, o.Has(key(i)), "record %d", i)
	}
}

// An index whose file is all zeros (a lost write, or damage over its
// header) holds no record to read: the cache starts it anew and says so,
// naming the index and the bytes dropped, instead of starting over
// without a word.
func TestZeroedIndexIsStartedAnewWithAWarning(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	_, err = c.Commit(&Record{Key: fmt.Sprintf("%064d", 1), Pipeline: "p", Address: "stage.a", Ended: time.Now()}, nil)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	index := filepath.Join(dir, "index.log")
	fi, err := os.Stat(index)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(index, make([]byte, fi.Size()), 0o644))

	var warned []string
	c, err = Open(dir, Options{NoSync: true, Warn: func(f string, args ...any) { warned = append(warned, fmt.Sprintf(f, args...)) }})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Commit(&Record{Key: fmt.Sprintf("%064d", 2), Pipeline: "p", Address: "stage.b", Ended: time.Now()}, nil)
	require.NoError(t, err)
	require.Len(t, warned, 1, "%q", warned)
	assert.Contains(t, warned[0], fmt.Sprintf("held %d bytes without a valid header", fi.Size()))
	assert.False(t, c.Has(fmt.Sprintf("%064d", 1)))
}

// A record lists its kept outputs only when it has some: a record without
// them is written as before, and one written before them reads as having
// none.
func TestRecordKeptIsLeftOutWhenEmpty(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	_, err = c.Commit(&Record{Key: a, Pipeline: "p", Address: "stage.x", Outputs: map[string]string{"od/f": "d"}}, nil)
	require.NoError(t, err)
	_, err = c.Commit(&Record{Key: b, Pipeline: "p", Address: "stage.x", Outputs: map[string]string{"od/f": "d", "od/n": "e"}, Kept: []string{"od/n"}}, nil)
	require.NoError(t, err)
	require.NoError(t, c.Close())

	idx, err := os.ReadFile(IndexPath(dir))
	require.NoError(t, err)
	assert.Equal(t, 1, bytes.Count(idx, []byte(`"kept"`)), "only the record with kept outputs names them")

	c, err = Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	ra, ok := c.Lookup(a)
	require.True(t, ok)
	assert.Nil(t, ra.Kept)
	assert.False(t, ra.IsKept("od/f"))
	rb, ok := c.Lookup(b)
	require.True(t, ok)
	assert.True(t, rb.IsKept("od/n"))
	assert.False(t, rb.IsKept("od/f"))
}

// KeysOf lists the keys of an address's records, committed or taken from
// the cache, newest first, without those evicted; after a reopen, and
// after a compaction that keeps them. A record no address record names
// (an index compacted by a cairn before KeysOf) is found by its own
// address.
func TestKeysOf(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	a, b, x, o := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64), strings.Repeat("0", 64)
	for _, r := range []*Record{
		{Key: a, Pipeline: "p", Address: "stage.x"},
		{Key: b, Pipeline: "p", Address: "stage.x"},
		{Key: x, Pipeline: "p", Address: "stage.y"},
		{Key: o, Pipeline: "q", Address: "stage.x"},
	} {
		r.Ended = time.Now()
		_, err = c.Commit(r, nil)
		require.NoError(t, err)
	}
	require.NoError(t, c.Point("p", "stage.x", a))
	require.NoError(t, c.Point("p", "stage.z", x)) // a twin's
	assert.Equal(t, []string{b, a}, c.KeysOf("p", "stage.x"))
	assert.Equal(t, []string{x}, c.KeysOf("p", "stage.z"))
	require.NoError(t, c.Evict(b))
	assert.Equal(t, []string{a}, c.KeysOf("p", "stage.x"))
	require.NoError(t, c.Close())

	c, err = Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	assert.Equal(t, []string{a}, c.KeysOf("p", "stage.x"))
	assert.Equal(t, []string{o}, c.KeysOf("q", "stage.x"))
	_, err = c.Commit(&Record{Key: b, Pipeline: "p", Address: "stage.x", Ended: time.Now()}, nil)
	require.NoError(t, err)
	_, err = GC(c, GCOptions{})
	require.NoError(t, err)
	require.NoError(t, c.Close())

	c, err = Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	assert.Empty(t, c.unaddressed, "compaction names every record's address")
	assert.ElementsMatch(t, []string{a, b}, c.KeysOf("p", "stage.x"), "compaction keeps an address's keys")
	assert.Equal(t, b, c.LastKey("p", "stage.x"))
	assert.Equal(t, b, c.HeldKey("p", "stage.x"))
	require.NoError(t, c.Close())

	// An index of action records alone.
	dir2 := t.TempDir()
	l, err := wal.Open(IndexPath(dir2), wal.Options{NoSync: true})
	require.NoError(t, err)
	require.NoError(t, l.Append([][]byte{
		[]byte("A" + a + `{"format":1,"key":"` + a + `","pipeline":"p","address":"stage.x"}`),
		[]byte("A" + x + `{"format":1,"key":"` + x + `","pipeline":"p","address":"stage.y"}`),
	}, wal.Durable))
	require.NoError(t, l.Close())
	c, err = Open(dir2, Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, []string{a}, c.KeysOf("p", "stage.x"))
	assert.Equal(t, []string{x}, c.KeysOf("p", "stage.y"))
}
