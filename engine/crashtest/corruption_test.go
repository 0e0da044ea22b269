package crashtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/engine/cas"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/storage/wal"
)

const chainPipeline = `
pipeline "chain" {}
stage "command" "make" {
  run     = ["sh", "-c", "mkdir -p out; echo made > out/make.txt; echo x >> counts/make"]
  outputs = ["out/make.txt"]
}
stage "command" "use" {
  after   = [stage.make]
  run     = ["sh", "-c", "cat out/make.txt out/make.txt > out/use.txt; echo x >> counts/use"]
  outputs = ["out/use.txt"]
}
`

// record returns the committed record of addr in the workspace's cache.
func (w *ws) record(pipeline, addr string) *store.Record {
	w.t.Helper()
	c := w.openCache(w.cache)
	key := c.LastKey(pipeline, addr)
	require.NotEmpty(w.t, key, "no record for %s", addr)
	r, ok := c.Lookup(key)
	require.True(w.t, ok, "record of %s", addr)
	return r
}

func (w *ws) blobPath(digest string) string {
	return filepath.Join(w.cache, "cas", "sha256", digest[:2], digest)
}

// TestCorruptBlob flips a byte of a cached output's blob: the next apply
// that must restore it detects the damage, warns, evicts the record and
// runs the node again; the workspace gets the right content and the cache a
// good blob.
func TestCorruptBlob(t *testing.T) {
	// make.txt is larger than what a record keeps inline: it has a blob.
	w := newWS(t, strings.Replace(chainPipeline, "echo made > out/make.txt", "{ echo made; seq 1000; } > out/make.txt", 1))
	w.write("counts/.keep", "")
	res := w.apply()
	require.Equal(t, 0, res.code, res.String())
	rec := w.record("chain", "stage.make")
	d := rec.Outputs["out/make.txt"]
	blob := w.blobPath(d)
	b, err := os.ReadFile(blob)
	require.NoError(t, err)
	b[0] ^= 0x20
	require.NoError(t, os.Chmod(blob, 0o644))
	require.NoError(t, os.WriteFile(blob, b, 0o644))
	// The workspace copy is gone: the cache must supply it.
	require.NoError(t, os.Remove(w.path("out/make.txt")))

	res = w.apply()
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "warning: stage.make: the cached result is damaged")
	assert.Contains(t, res.stdout, "1 ran, 1 cached")
	assert.Equal(t, 2, w.countLines("counts/make"), "make runs again")
	assert.Equal(t, 1, w.countLines("counts/use"), "use keeps its cached result: make's output is the same")
	made := w.read("out/make.txt")
	assert.True(t, strings.HasPrefix(made, "made\n1\n2\n"), made)
	c := w.openCache(w.cache)
	got, err := c.Blobs.ReadBytes(cas.Digest(d))
	require.NoError(t, err, "the recomputed output is stored again")
	assert.Equal(t, made, string(got))
}

// appendIndex appends raw records to the cache's action index, as another
// cairn would.
func (w *ws) appendIndex(payloads ...[]byte) {
	w.t.Helper()
	l, err := wal.Open(filepath.Join(w.cache, "index.log"), wal.Options{Shared: true, NoSync: true})
	require.NoError(w.t, err)
	require.NoError(w.t, l.Append(payloads, wal.Durable))
	require.NoError(w.t, l.Close())
}

// flipRecord flips a byte inside the action record of addr in the
// index, as a disk that damaged it would; it returns the record (as it was)
// and the index's path.
func (w *ws) flipRecord(pipeline, addr string) (*store.Record, string) {
	w.t.Helper()
	rec := w.record(pipeline, addr)
	idx := filepath.Join(w.cache, "index.log")
	b, err := os.ReadFile(idx)
	require.NoError(w.t, err)
	at := strings.Index(string(b), "A"+rec.Key)
	require.Positive(w.t, at)
	b[at+70] ^= 0x01
	require.NoError(w.t, os.WriteFile(idx, b, 0o644))
	return rec, idx
}

// TestUnreadableRecord damages action records two ways — a record whose
// content does not decode, and bytes flipped on disk inside the index — and
// shows that each costs only a cache miss: the node runs again and its
// downstream, whose key is unchanged, stays cached. A downstream whose
// record was written before its upstream's was durable names that record,
// and runs again with it.
func TestUnreadableRecord(t *testing.T) {
	t.Run("undecodable", func(t *testing.T) {
		w := newWS(t, chainPipeline)
		w.write("counts/.keep", "")
		res := w.apply()
		require.Equal(t, 0, res.code, res.String())
		rec := w.record("chain", "stage.make")
		// A later record for the key replaces the good one.
		w.appendIndex(append(append([]byte{'A'}, rec.Key...), `{"format":1,"key":`...))
		res = w.apply()
		require.Equal(t, 0, res.code, res.String())
		assert.Contains(t, res.stderr, "unreadable")
		assert.Contains(t, res.stdout, "1 ran, 1 cached")
		assert.Equal(t, 2, w.countLines("counts/make"))
		assert.Equal(t, 1, w.countLines("counts/use"))
		res = w.apply()
		require.Equal(t, 0, res.code, res.String())
		assert.Contains(t, res.stdout, "0 ran, 2 cached")
	})
	t.Run("flipped on disk", func(t *testing.T) {
		w := newWS(t, chainPipeline)
		w.write("counts/.keep", "")
		// make's record is durable (its apply has ended) before use's is
		// written: use's record stands on its own.
		res := w.apply("--target", "stage.make")
		require.Equal(t, 0, res.code, res.String())
		res = w.apply()
		require.Equal(t, 0, res.code, res.String())
		assert.Contains(t, res.stdout, "1 ran, 1 cached")
		// Flip a byte inside make's action record, in the middle of the
		// index: use's records follow it.
		rec, idx := w.flipRecord("chain", "stage.make")
		res = w.apply()
		require.Equal(t, 0, res.code, res.String())
		assert.Contains(t, res.stdout, "1 ran, 1 cached")
		assert.Contains(t, res.stderr, "damaged record(s) of the index were blanked")
		// The damaged bytes are kept, and the message says where.
		m := regexp.MustCompile(`the damaged bytes are kept in (\S+)\)`).FindStringSubmatch(res.stderr)
		require.NotNil(t, m, res.stderr)
		kept, err := os.ReadFile(m[1])
		require.NoError(t, err)
		assert.Contains(t, string(kept), rec.Key, "the copy holds the damaged record")
		assert.Equal(t, idx, strings.SplitN(m[1], ".damaged-", 2)[0], "the copy lies beside the index")
		assert.Equal(t, 2, w.countLines("counts/make"))
		assert.Equal(t, 1, w.countLines("counts/use"))
		res = w.apply()
		require.Equal(t, 0, res.code, res.String())
		assert.Contains(t, res.stdout, "0 ran, 2 cached")
		_, err = wal.Read(idx, nil)
		assert.NoError(t, err, "the index is readable again")
	})
	t.Run("flipped, written in one apply", func(t *testing.T) {
		w := newWS(t, chainPipeline)
		w.write("counts/.keep", "")
		// No sync round comes between make's record and use's (however
		// slow this machine is): use's is written before make's is
		// durable.
		res := w.run([]string{"CAIRN_TEST_SYNC_DELAY_S=3600"}, "apply")
		require.Equal(t, 0, res.code, res.String())
		w.flipRecord("chain", "stage.make")
		// use's record was written moments after make's, before a sync
		// round: it named make's, and counts no more without it.
		res = w.apply()
		require.Equal(t, 0, res.code, res.String())
		assert.Contains(t, res.stdout, "2 ran, 0 cached")
		assert.Equal(t, 2, w.countLines("counts/make"))
		assert.Equal(t, 2, w.countLines("counts/use"))
		res = w.apply()
		require.Equal(t, 0, res.code, res.String())
		assert.Contains(t, res.stdout, "0 ran, 2 cached")
	})
}

// TestTornJournal cuts a finished run's journal in the middle of its last
// record: the journal stays readable without the torn record, `cairn show`
// and `cairn status` read it, and the next apply is not disturbed.
func TestTornJournal(t *testing.T) {
	w := newWS(t, chainPipeline)
	w.write("counts/.keep", "")
	res := w.apply()
	require.Equal(t, 0, res.code, res.String())
	ri := w.lastRun()
	n := len(ri.Entries)
	require.GreaterOrEqual(t, n, 4)
	path := filepath.Join(ri.Dir, "journal")
	st, err := os.Stat(path)
	require.NoError(t, err)
	// The last record is run_end; cut it in half.
	var lastOff int64
	_, err = wal.Read(path, func(off int64, _ []byte) error { lastOff = off; return nil })
	require.NoError(t, err)
	require.NoError(t, os.Truncate(path, lastOff+(st.Size()-lastOff)/2))

	es, err := runlog.Read(ri.Dir)
	require.NoError(t, err)
	require.Len(t, es, n-1)
	assert.Equal(t, ri.Entries[:n-1][len(es)-1].T, es[len(es)-1].T)

	res = w.run(nil, "show", ri.ID)
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "stage.make")
	res = w.run(nil, "status")
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, ri.ID)
	res = w.apply()
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "0 ran, 2 cached")
}

// TestRestoredOutputRewrittenInPlace: workloads that rewrite files in place
// — a downstream appending to its upstream's restored output, a node
// appending to its own output when it runs again — never change what the
// cache holds: outputs are restored as copies, never links to blobs.
func TestRestoredOutputRewrittenInPlace(t *testing.T) {
	// A line longer than what a record keeps inline: grow.txt has a blob.
	line := strings.Repeat("l", 2000)
	w := newWS(t, `
pipeline "inplace" {}
stage "command" "grow" {
  run     = ["sh", "-c", "echo `+line+` >> grow.txt"]
  outputs = ["grow.txt"]
}
stage "command" "tamper" {
  after   = [stage.grow]
  run     = ["sh", "-c", "cp grow.txt seen.txt; echo tampered >> grow.txt"]
  outputs = ["seen.txt"]
}
`)
	res := w.apply()
	require.Equal(t, 0, res.code, res.String())
	rec := w.record("inplace", "stage.grow")
	d := rec.Outputs["grow.txt"]
	assert.Equal(t, line+"\ntampered\n", w.read("grow.txt"))

	// The next apply restores grow.txt from the cache, as it was made.
	res = w.apply()
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "0 ran, 2 cached")
	assert.Equal(t, line+"\n", w.read("grow.txt"))

	// Running grow again appends to the restored file in place.
	res = w.apply("--replace", "stage.grow")
	require.Equal(t, 0, res.code, res.String())
	assert.Equal(t, line+"\n"+line+"\ntampered\n", w.read("grow.txt"))
	c := w.openCache(w.cache)
	got, err := c.Blobs.ReadBytes(cas.Digest(d))
	require.NoError(t, err)
	assert.Equal(t, line+"\n", string(got), "the first result's blob is unchanged")
	for _, r := range c.Records() {
		for p := range r.Outputs {
			_, err := c.OutputBytes(r, p)
			assert.NoError(t, err, "%s of %s", p, r.Address)
		}
	}
}

// TestRefreshAfterCompaction: gc compacts the index into a new file while
// another process has the cache open (an apply that planned just before gc
// took its lock). That process's next refresh sees the new index as it is:
// the records gc dropped are gone, later commits are seen, and refreshing
// keeps working.
func TestRefreshAfterCompaction(t *testing.T) {
	w := newWS(t, chainPipeline)
	w.write("counts/.keep", "")
	res := w.apply()
	require.Equal(t, 0, res.code, res.String())
	before := w.openCache(w.cache)
	mk := before.LastKey("chain", "stage.make")
	require.True(t, before.Has(mk))

	gcCache := w.openCache(w.cache)
	_, err := engine.GC(gcCache, store.GCOptions{OlderThan: time.Nanosecond})
	require.NoError(t, err)
	require.NoError(t, gcCache.Close())

	require.NoError(t, before.Refresh())
	assert.False(t, before.Has(mk), "a record gc removed is still seen")

	// A commit by another process after the compaction is seen.
	res = w.apply()
	require.Equal(t, 0, res.code, res.String())
	require.NoError(t, before.Refresh())
	assert.True(t, before.Has(before.LastKey("chain", "stage.make")))
	assert.True(t, before.Has(mk), "make's key is the same again")
}
