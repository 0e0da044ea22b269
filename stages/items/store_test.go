package items

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/storage/wal"
)

func testKey(i int) string {
	k, err := ItemKey("bundle", json.RawMessage(fmt.Sprint(i)), "model", nil, "worker")
	if err != nil {
		panic(err)
	}
	return k
}

func score(v float64) *float64 { return &v }

func TestStorePutGetReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir, StoreOptions{})
	require.NoError(t, err)
	results := map[string]Result{
		testKey(1): {Score: score(1), Charged: 1, Outputs: json.RawMessage(`{"answer":"42"}`)},
		testKey(2): {Score: score(0), Charged: 2, Error: "the agent gave up"},
		testKey(3): {Outputs: json.RawMessage(`["no score"]`)},
		testKey(4): {Score: score(0.25)},
	}
	for k, r := range results {
		require.NoError(t, s.Put(k, r))
	}
	check := func(s *Store) {
		t.Helper()
		assert.Equal(t, len(results), s.Len())
		for k, want := range results {
			got, ok, err := s.Get(k)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, want, got)
			sc, hasScore, charged, ok := s.Score(k)
			assert.True(t, ok)
			assert.Equal(t, want.Score != nil, hasScore)
			if want.Score != nil {
				assert.Equal(t, *want.Score, sc)
			}
			assert.Equal(t, want.Charged, charged)
		}
		_, ok, err := s.Get(testKey(99))
		assert.NoError(t, err)
		assert.False(t, ok)
		assert.False(t, s.Has(testKey(99)))
	}
	check(s) // results appended here, not read back yet
	require.NoError(t, s.Refresh())
	check(s) // read back from the log
	require.NoError(t, s.Put(testKey(1), Result{Score: score(0)}))
	got, _, err := s.Get(testKey(1))
	require.NoError(t, err)
	assert.Equal(t, 1.0, *got.Score, "a stored result is never overwritten")
	require.NoError(t, s.Close())

	s, err = OpenStore(dir, StoreOptions{})
	require.NoError(t, err)
	defer s.Close()
	check(s)
	assert.Equal(t, StoreStats{Items: 4, Records: 4}, s.Stats())

	var scanned []string
	require.NoError(t, ScanStore(dir, func(key string, r Result) error {
		assert.Equal(t, results[key], r)
		scanned = append(scanned, key)
		return nil
	}))
	assert.Len(t, scanned, 4)

	_, _, err = s.Get("not a key")
	assert.ErrorIs(t, err, ErrBadKey)
}

func TestStoreSharedBetweenOpeners(t *testing.T) {
	dir := t.TempDir()
	a, err := OpenStore(dir, StoreOptions{})
	require.NoError(t, err)
	defer a.Close()
	b, err := OpenStore(dir, StoreOptions{})
	require.NoError(t, err)
	defer b.Close()

	require.NoError(t, a.Put(testKey(1), Result{Score: score(1), Outputs: json.RawMessage(`"from a"`)}))
	assert.False(t, b.Has(testKey(1)), "b has not read the tail yet")
	require.NoError(t, b.Refresh())
	got, ok, err := b.Get(testKey(1))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, json.RawMessage(`"from a"`), got.Outputs)

	// Without claims, two openers can both write a key: the first record
	// wins everywhere and the second is counted.
	require.NoError(t, a.Put(testKey(2), Result{Score: score(1)}))
	require.NoError(t, b.Put(testKey(2), Result{Score: score(0)}))
	require.NoError(t, a.Refresh())
	require.NoError(t, b.Refresh())
	for _, s := range []*Store{a, b} {
		sc, _, _, ok := s.Score(testKey(2))
		assert.True(t, ok)
		assert.Equal(t, 1.0, sc)
		r, _, err := s.Get(testKey(2))
		require.NoError(t, err)
		assert.Equal(t, 1.0, *r.Score)
		assert.Equal(t, 1, s.Stats().Duplicates)
	}
}

func TestStoreRejectsForeignRecords(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "items"), 0o755))
	l, err := wal.Open(filepath.Join(dir, "items", "log"), wal.Options{Shared: true})
	require.NoError(t, err)
	require.NoError(t, l.Append([][]byte{{9, 1, 2, 3}}, wal.Durable))
	require.NoError(t, l.Close())
	_, err = OpenStore(dir, StoreOptions{})
	assert.ErrorIs(t, err, ErrBadRecord)
}

func TestClaimsExclude(t *testing.T) {
	dir := t.TempDir()
	c1, err := OpenClaims(dir)
	require.NoError(t, err)
	c2, err := OpenClaims(dir)
	require.NoError(t, err)
	defer c2.Close()
	k1, k2 := testKey(1), testKey(2)

	for _, step := range []struct {
		c    *Claims
		key  string
		want bool
	}{
		{c1, k1, true},
		{c1, k1, true}, // again: already held here
		{c2, k1, false},
		{c2, k2, true},
		{c1, k2, false},
	} {
		ok, err := step.c.TryClaim(step.key)
		require.NoError(t, err)
		assert.Equal(t, step.want, ok)
	}
	require.NoError(t, c1.Release(k1))
	ok, err := c2.TryClaim(k1)
	require.NoError(t, err)
	assert.True(t, ok, "released")
	require.NoError(t, c2.Release(k1))

	ok, err = c1.TryClaim(k1)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, c1.Close())
	ok, err = c2.TryClaim(k1)
	require.NoError(t, err)
	assert.True(t, ok, "closing releases every claim")

	_, err = c2.TryClaim("zz")
	assert.ErrorIs(t, err, ErrBadKey)
}

func TestClaimReleasedWhenHolderIsKilled(t *testing.T) {
	dir := t.TempDir()
	key := testKey(7)
	cmd := exec.Command(self(t)[0])
	cmd.Env = helperEnvFor("claim", "HELPER_DIR="+dir, "HELPER_KEY="+key)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "claimed", strings.TrimSpace(line))

	c, err := OpenClaims(dir)
	require.NoError(t, err)
	defer c.Close()
	ok, err := c.TryClaim(key)
	require.NoError(t, err)
	assert.False(t, ok, "the child holds it")

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	ok, err = c.TryClaim(key)
	require.NoError(t, err)
	assert.True(t, ok, "the kernel released the dead holder's claim")
}

// GetAll gives what Get gives for each key, in the keys' order: results
// this Store appended and has not read back, results read from the log
// (another process's), a key asked for twice, and keys without a result.
func TestStoreGetAll(t *testing.T) {
	dir := t.TempDir()
	other, err := OpenStore(dir, StoreOptions{NoSync: true})
	require.NoError(t, err)
	s, err := OpenStore(dir, StoreOptions{NoSync: true})
	require.NoError(t, err)
	defer s.Close()
	for i := range 300 {
		r := Result{Score: score(float64(i % 2)), Charged: 1, Outputs: json.RawMessage(fmt.Sprintf(`{"answer":"%d"}`, i))}
		if i%7 == 0 {
			r.Error = fmt.Sprintf("item %d gave up", i)
		}
		st := other
		if i%3 == 0 {
			st = s // appended here: not read back yet
		}
		require.NoError(t, st.Put(testKey(i), r))
	}
	require.NoError(t, other.Close())
	require.NoError(t, s.Refresh())
	keys := []string{testKey(299), testKey(0), testKey(1000), testKey(150), testKey(0), testKey(7), testKey(1)}
	res, has, err := s.GetAll(keys)
	require.NoError(t, err)
	require.Len(t, res, len(keys))
	for i, k := range keys {
		want, ok, err := s.Get(k)
		require.NoError(t, err)
		assert.Equal(t, ok, has[i], "key %d", i)
		assert.Equal(t, want, res[i], "key %d", i)
	}
	assert.False(t, has[2])
	assert.Equal(t, `{"answer":"7"}`, string(res[5].Outputs))
	assert.Equal(t, "item 7 gave up", res[5].Error)

	_, _, err = s.GetAll([]string{"not a key"})
	assert.ErrorIs(t, err, ErrBadKey)
}

// TestStoreGetReadsOneRecord: a result read back from the log costs about
// its own size, not a megabyte of read-ahead per Get (a resumed model
// cache reads each stored answer this way), and a damaged record is an
// error naming it, never another key's result.
func TestStoreGetReadsOneRecord(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir, StoreOptions{NoSync: true})
	require.NoError(t, err)
	out := json.RawMessage(`{"answer":"` + strings.Repeat("x", 1000) + `"}`)
	for i := range 50 {
		require.NoError(t, s.Put(testKey(i), Result{Score: score(float64(i)), Outputs: out}))
	}
	require.NoError(t, s.Close())
	s, err = OpenStore(dir, StoreOptions{NoSync: true})
	require.NoError(t, err)
	defer s.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range 50 {
		r, ok, err := s.Get(testKey(i))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, float64(i), *r.Score)
		require.JSONEq(t, string(out), string(r.Outputs))
	}
	runtime.ReadMemStats(&after)
	perGet := (after.TotalAlloc - before.TotalAlloc) / 50
	assert.Less(t, perGet, uint64(16<<10), "bytes allocated per Get of a 1 KiB result")

	// Damage the last record's payload: Get refuses it.
	b, err := os.ReadFile(filepath.Join(dir, "items", "log"))
	require.NoError(t, err)
	b[len(b)-20] ^= 0xff
	require.NoError(t, os.WriteFile(filepath.Join(dir, "items", "log"), b, 0o666))
	_, ok, err := s.Get(testKey(49))
	assert.True(t, ok)
	assert.ErrorIs(t, err, wal.ErrCorrupt)
}

// Opening the store syncs nothing, also on a fresh cache (where it made
// the log's header and folder entry: two fsyncs before an evaluation's
// first request); the first stored results sync them, in one round, and
// every opener syncs its first results so (the process that made the
// file may not have synced it yet). A store that stores nothing makes no
// fsync at all (#34).
func TestStoreOpenSyncsNothing(t *testing.T) {
	dir := t.TempDir()
	a, err := OpenStore(dir, StoreOptions{})
	require.NoError(t, err)
	defer a.Close()
	assert.Zero(t, a.log.Syncs(), "a fresh store's open")
	b, err := OpenStore(dir, StoreOptions{})
	require.NoError(t, err)
	assert.Zero(t, b.log.Syncs(), "a second opener's")
	require.NoError(t, b.Put(testKey(1), Result{Score: score(1)}))
	assert.Equal(t, int64(1), b.log.Syncs(), "the first results sync the file and its folder once")
	require.NoError(t, b.Put(testKey(2), Result{Score: score(1)}))
	assert.Equal(t, int64(2), b.log.Syncs())
	require.NoError(t, b.Close())
	require.NoError(t, a.Refresh())
	assert.Equal(t, 2, a.Len())
	require.NoError(t, a.Close())
	assert.Zero(t, a.log.Syncs(), "a store that stored nothing")

	c, err := OpenStore(dir, StoreOptions{})
	require.NoError(t, err)
	assert.Zero(t, c.log.Syncs(), "reopened")
	assert.Equal(t, 2, c.Len())
	require.NoError(t, c.Close())
}

// An evaluation refreshes the store before each claim (#34): a refresh
// that finds nothing new allocates nothing (it opened the log each time:
// an open, a stat and a close, and their allocations), and one after
// another opener's append still reads it.
func TestStoreRefreshOfNothingNewAllocatesNothing(t *testing.T) {
	dir := t.TempDir()
	a, err := OpenStore(dir, StoreOptions{NoSync: true})
	require.NoError(t, err)
	defer a.Close()
	b, err := OpenStore(dir, StoreOptions{NoSync: true})
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, a.Put(testKey(1), Result{Score: score(1)}))
	require.NoError(t, b.Refresh())
	allocs := testing.AllocsPerRun(100, func() {
		if err := b.Refresh(); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "allocations per Refresh of a log that did not grow")
	require.NoError(t, a.Put(testKey(2), Result{Score: score(0)}))
	require.NoError(t, b.Refresh())
	sc, has, _, ok := b.Score(testKey(2))
	assert.True(t, ok && has)
	assert.Equal(t, 0.0, sc)
	assert.Equal(t, 2, b.Len())
}

// The claims files the items need are made while the endpoints are
// checked (#34): on a new cache, making them at the first claim (up to 64
// files, 14-50 ms on a busy disk) held up the first request. The check's
// answer waits until they are there: they are made before it, or never
// (then the check answers after its wait, and the test fails).
func TestClaimsFilesMadeWhileTheEndpointsAreChecked(t *testing.T) {
	dir := t.TempDir()
	store, err := OpenStore(dir, StoreOptions{NoSync: true})
	require.NoError(t, err)
	defer store.Close()
	items := makeItems(40)
	want := map[string]bool{}
	for _, it := range items {
		key, err := ItemKey("sha256:b", it.Data, "m", nil, "sha256:w")
		require.NoError(t, err)
		kb, err := parseKey(key)
		require.NoError(t, err)
		want[fmt.Sprintf("%02x", int(kb[0])%claimShards)] = true
	}
	claimsDir := filepath.Join(store.Dir(), "claims")
	missing := func() []string {
		var out []string
		for name := range want {
			if _, err := os.Stat(filepath.Join(claimsDir, name)); err != nil {
				out = append(out, name)
			}
		}
		return out
	}
	var missingAtCheck []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range 1000 {
			if len(missing()) == 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		missingAtCheck = missing()
		fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
	}))
	defer srv.Close()
	sum, err := Evaluate(context.Background(), Config{
		Worker: self(t), Env: helperEnvFor("noop"), Items: items,
		BundleDigest: "sha256:b", ModelID: "m", WorkerDigest: "sha256:w",
		Endpoints: []string{srv.URL}, MaxInFlight: 8, Store: store,
	})
	require.NoError(t, err)
	assert.Equal(t, 40, sum.Evaluated)
	assert.Empty(t, missingAtCheck, "claims files not made when the endpoints were checked")
}

// A record damaged in the middle of the log (a flipped bit) is blanked as
// the store opens, with a warning and the bytes kept beside the log: the
// results around it are read, its item is missing (evaluated again), and
// the store takes new results. Before, every open failed.
func TestStoreBlanksADamagedRecord(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir, StoreOptions{})
	require.NoError(t, err)
	for i := range 10 {
		require.NoError(t, s.Put(testKey(i), Result{Score: score(float64(i)), Charged: 1, Outputs: json.RawMessage(`{"answer":"an answer long enough to fill the record"}`)}))
	}
	require.NoError(t, s.Close())
	log := filepath.Join(dir, storeSubdir, logName)
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	b[len(b)/2] ^= 0x04
	require.NoError(t, os.WriteFile(log, b, 0o644))

	var warned []string
	s, err = OpenStore(dir, StoreOptions{Warn: func(text string) { warned = append(warned, text) }})
	require.NoError(t, err)
	require.Len(t, warned, 1)
	assert.Contains(t, warned[0], "had 1 damaged record(s), now blanked: their items are evaluated again")
	assert.Equal(t, 9, s.Len(), "one result lost, the others read")
	var lost string
	for i := range 10 {
		if !s.Has(testKey(i)) {
			lost = testKey(i)
			continue
		}
		r, ok, err := s.Get(testKey(i))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, float64(i), *r.Score)
	}
	require.NotEmpty(t, lost)
	require.NoError(t, s.Put(lost, Result{Score: score(42)}))
	require.NoError(t, s.Close())

	warned = nil
	s, err = OpenStore(dir, StoreOptions{Warn: func(text string) { warned = append(warned, text) }})
	require.NoError(t, err)
	defer s.Close()
	assert.Empty(t, warned, "repaired once")
	assert.Equal(t, 10, s.Len())
	n := 0
	require.NoError(t, ScanStore(dir, func(string, Result) error { n++; return nil }))
	assert.Equal(t, 10, n)
	kept, err := filepath.Glob(log + ".damaged-*")
	require.NoError(t, err)
	assert.Len(t, kept, 1, "the damaged bytes are kept beside the log")
}

// A store whose file has no valid header says so: all zeros (as a lost
// write leaves it) is started anew with a warning naming the bytes it
// dropped; a header that is not a cairn log's stops the store with what
// to do.
func TestStoreWithoutAHeaderIsNamed(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir, StoreOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Put(testKey(1), Result{Score: score(1), Charged: 1}))
	require.NoError(t, s.Close())
	log := filepath.Join(dir, storeSubdir, logName)
	fi, err := os.Stat(log)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(log, make([]byte, fi.Size()), 0o644))

	var warned []string
	s, err = OpenStore(dir, StoreOptions{Warn: func(text string) { warned = append(warned, text) }})
	require.NoError(t, err)
	require.Len(t, warned, 1)
	assert.Contains(t, warned[0], fmt.Sprintf("held %d bytes without a valid header", fi.Size()))
	assert.Equal(t, 0, s.Len())
	require.NoError(t, s.Close())

	b, err := os.ReadFile(log)
	require.NoError(t, err)
	copy(b, "NOTALOG!")
	require.NoError(t, os.WriteFile(log, b, 0o644))
	_, err = OpenStore(dir, StoreOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is damaged")
	assert.Contains(t, err.Error(), "move it aside to start an empty store")
	assert.True(t, Damaged(err), "a store cairn cannot read, not a failure to retry")
	assert.False(t, Damaged(fmt.Errorf("items: open store: %w", os.ErrPermission)))
}
