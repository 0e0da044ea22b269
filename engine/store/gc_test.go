package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/cas"
)

// agedCache is a cache, and a function that commits to it a record named
// name that ended age ago, with an output blob of size bytes (none: 0).
func agedCache(t *testing.T) (*Cache, func(name byte, size int, age time.Duration)) {
	c, err := Open(t.TempDir(), Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	now := time.Now()
	return c, func(name byte, size int, age time.Duration) {
		r := &Record{Key: strings.Repeat(string(name), 64), Pipeline: "p", Address: "stage." + string(name), Ended: now.Add(-age)}
		if size > 0 {
			d, err := c.Blobs.PutBytes(bytes.Repeat([]byte{name}, size))
			require.NoError(t, err)
			r.Outputs = map[string]string{"out/" + string(name): string(d)}
		}
		_, err := c.Commit(r, nil)
		require.NoError(t, err)
	}
}

// gc --max-size keeps the newest records whose blobs fit, oldest removed
// first: once a record does not fit, every older one goes too, even one
// small enough for the room left (it would keep an older configuration
// half cached while a newer one is gone).
func TestGCMaxSizeRemovesOldestFirst(t *testing.T) {
	c, commit := agedCache(t)
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

// --max-size keeps the newest results whole: the records without blobs
// newer than the first that does not fit stay, and those older go with
// it, as docs/language.md says of gc.
func TestGCMaxSizeKeepsTheNewestWhole(t *testing.T) {
	c, commit := agedCache(t)
	commit('a', 0, 4*time.Hour) // oldest, no blob
	commit('b', 1000, 3*time.Hour)
	commit('c', 0, 2*time.Hour) // no blob, newer than b
	res, err := GC(c, GCOptions{SizeSet: true})
	require.NoError(t, err)
	assert.Equal(t, 2, res.Records)
	assert.True(t, c.Has(strings.Repeat("c", 64)), "newer than the first record that does not fit")
	assert.False(t, c.Has(strings.Repeat("b", 64)))
	assert.False(t, c.Has(strings.Repeat("a", 64)), "older than it, without blobs all the same")
}

// The key an address was last given from the cache (Point) is kept apart
// from the one last committed, across a reopen and a gc's compaction.
func TestHeldKeyOutlivesCompaction(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	for _, k := range []string{a, b} {
		_, err = c.Commit(&Record{Key: k, Pipeline: "p", Address: "stage.x", Ended: time.Now()}, nil)
		require.NoError(t, err)
	}
	_, err = c.Commit(&Record{Key: strings.Repeat("0", 64), Pipeline: "p", Address: "stage.old", Ended: time.Now().Add(-3 * time.Hour)}, nil)
	require.NoError(t, err)
	require.NoError(t, c.Point("p", "stage.x", a))
	assert.Equal(t, b, c.LastKey("p", "stage.x"))
	assert.Equal(t, a, c.HeldKey("p", "stage.x"))
	res, err := GC(c, GCOptions{OlderThan: time.Hour})
	require.NoError(t, err)
	require.Equal(t, 1, res.Records, "the index is compacted")
	require.NoError(t, c.Close())

	c, err = Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, b, c.LastKey("p", "stage.x"))
	assert.Equal(t, a, c.HeldKey("p", "stage.x"))
	// A commit is held too.
	_, err = c.Commit(&Record{Key: strings.Repeat("c", 64), Pipeline: "p", Address: "stage.x", Ended: time.Now()}, nil)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("c", 64), c.HeldKey("p", "stage.x"))
}

// gc rewrites the index without the records it drops before it removes
// their blobs: a gc that stops before the index is rewritten (killed, or
// the rewrite failing) has removed no blob, so the index never names a
// record whose blobs are gone; the next gc removes them.
func TestGCRemovesNoBlobBeforeTheIndexDropsItsRecord(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	commit := func(name byte, age time.Duration) (key string, d cas.Digest) {
		d, err := c.Blobs.PutBytes(bytes.Repeat([]byte{name}, 5000))
		require.NoError(t, err)
		key = strings.Repeat(string(name), 64)
		_, err = c.Commit(&Record{Key: key, Pipeline: "p", Address: "stage." + string(name),
			Ended: time.Now().Add(-age), Outputs: map[string]string{"out/" + string(name): string(d)}}, nil)
		require.NoError(t, err)
		return key, d
	}
	oldKey, oldBlob := commit('a', 3*time.Hour)
	newKey, newBlob := commit('b', 0)
	// The new index cannot be written: a folder where gc writes it.
	block := filepath.Join(IndexPath(dir)+".compact", "x")
	require.NoError(t, os.MkdirAll(block, 0o755))
	_, err = GC(c, GCOptions{OlderThan: time.Hour})
	require.Error(t, err)
	require.NoError(t, c.Close())

	c, err = Open(dir, Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	assert.True(t, c.Has(oldKey), "the index was not rewritten")
	assert.True(t, c.Blobs.Has(oldBlob), "a record the index names lost its blob")

	require.NoError(t, os.RemoveAll(filepath.Dir(block)))
	res, err := GC(c, GCOptions{OlderThan: time.Hour})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Records)
	assert.False(t, c.Has(oldKey))
	assert.False(t, c.Blobs.Has(oldBlob))
	assert.True(t, c.Has(newKey))
	assert.True(t, c.Blobs.Has(newBlob))
}

// HeldKeys answers for many addresses what HeldKey answers for each: the
// key the workspace was given (Point), else the last committed, else "".
func TestHeldKeysIsHeldKeyOfEach(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, Options{NoSync: true, Workspace: "/w1"})
	require.NoError(t, err)
	addrs := []string{"stage.x", "stage.y", "stage.z", `stage.g["a"]`, "", "stage.none"}
	assert.Equal(t, make([]string, len(addrs)), c.HeldKeys("p", addrs), "an empty cache holds nothing")
	a, b, x := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	for _, r := range []*Record{
		{Key: a, Pipeline: "p", Address: "stage.x"},
		{Key: b, Pipeline: "p", Address: "stage.x"},
		{Key: x, Pipeline: "p", Address: `stage.g["a"]`},
		{Key: x, Pipeline: "q", Address: "stage.y"},
	} {
		r.Ended = time.Now()
		_, err = c.Commit(r, nil)
		require.NoError(t, err)
	}
	require.NoError(t, c.Point("p", "stage.x", a))
	require.NoError(t, c.Point("p", "stage.z", x))
	each := func(c *Cache) []string {
		var out []string
		for _, addr := range addrs {
			out = append(out, c.HeldKey("p", addr))
		}
		return out
	}
	assert.Equal(t, []string{a, "", x, x, "", ""}, c.HeldKeys("p", addrs))
	assert.Equal(t, each(c), c.HeldKeys("p", addrs))
	require.NoError(t, c.Close())
	// Another workspace sharing the cache holds none of /w1's: it sees
	// the last commits.
	c, err = Open(dir, Options{NoSync: true, Workspace: "/w2"})
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, []string{b, "", "", x, "", ""}, c.HeldKeys("p", addrs))
	assert.Equal(t, each(c), c.HeldKeys("p", addrs))
}

// gc rewrites the index without the records it drops, and without those
// damaged: their bytes are copied beside the index first
// (index.log.damaged-*), as an apply's commit does, never destroyed for
// good.
func TestGCKeepsACopyOfDamagedIndexRecords(t *testing.T) {
	c, commit := agedCache(t)
	commit('a', 100, time.Hour)
	commit('b', 100, time.Hour)
	require.NoError(t, c.Close())
	b, err := os.ReadFile(c.indexPath())
	require.NoError(t, err)
	i := bytes.Index(b, []byte(strings.Repeat("a", 64)))
	require.Positive(t, i)
	b[i+10] = 'Z' // inside a's record: its checksum fails
	require.NoError(t, os.WriteFile(c.indexPath(), b, 0o644))

	var warned []string
	c, err = Open(c.Dir, Options{NoSync: true, Warn: func(f string, args ...any) { warned = append(warned, fmt.Sprintf(f, args...)) }})
	require.NoError(t, err)
	defer c.Close()
	assert.False(t, c.Has(strings.Repeat("a", 64)))
	res, err := GC(c, GCOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Kept)
	copies, err := filepath.Glob(c.indexPath() + ".damaged-*")
	require.NoError(t, err)
	require.Len(t, copies, 1, "warnings: %q", warned)
	kept, err := os.ReadFile(copies[0])
	require.NoError(t, err)
	assert.Contains(t, string(kept), strings.Repeat("a", 10)+"Z", "the damaged bytes, as they were")
	assert.Contains(t, strings.Join(warned, "\n"), copies[0])
	assert.True(t, c.Has(strings.Repeat("b", 64)))
}

// An apply started while gc waits for the applies running waits for gc
// (and says so), rather than going ahead of it: applies that keep
// overlapping would otherwise keep gc waiting for ever, a new shared
// locker going ahead of a waiting exclusive one.
func TestApplyStartedWhileGCWaitsWaitsForGC(t *testing.T) {
	c, _ := agedCache(t)
	running, err := UseLock(context.Background(), c.Dir, nil)
	require.NoError(t, err)
	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	gcWaits, gcDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(gcDone)
		// Runs is called with gc's lock held: gc is at work.
		runs := func(string, time.Duration, bool) (int, error) { note("gc"); return 0, nil }
		_, err := GC(c, GCOptions{AgeSet: true, OlderThan: time.Hour, Runs: runs, Wait: func(what string) { assert.Equal(t, "running applies", what); close(gcWaits) }})
		assert.NoError(t, err)
	}()
	<-gcWaits
	laterWaits, laterRuns := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(laterRuns)
		lk, err := UseLock(context.Background(), c.Dir, func() { close(laterWaits) })
		if assert.NoError(t, err) {
			note("later apply")
			_ = lk.Unlock()
		}
	}()
	select {
	case <-laterWaits:
	case <-laterRuns:
		t.Fatal("an apply started while gc waits went ahead of gc")
	case <-time.After(5 * time.Second):
		t.Fatal("the apply started while gc waits did not say it waits")
	}
	require.NoError(t, running.Unlock())
	<-gcDone
	<-laterRuns
	assert.Equal(t, []string{"gc", "later apply"}, order)
}

// Ctrl-C (ctx cancelled) ends an apply's wait for gc, and the error says
// what it was waiting for.
func TestUseLockWaitForGCEndsWithCtx(t *testing.T) {
	c, _ := agedCache(t)
	unlock, err := gcLock(c.Dir, nil)
	require.NoError(t, err)
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	waits := make(chan struct{})
	go func() { <-waits; cancel() }()
	_, err = UseLock(ctx, c.Dir, func() { close(waits) })
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "waiting for cairn gc to finish")
}

// A gc started while another gc runs says it waits for that gc, not for
// running applies (an apply passing the gate holds it only a moment).
func TestGCWaitingForAnotherGCSaysSo(t *testing.T) {
	c, _ := agedCache(t)
	unlock, err := gcLock(c.Dir, func(string) { t.Error("the first gc waited") })
	require.NoError(t, err)
	said := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := GC(c, GCOptions{AgeSet: true, OlderThan: time.Hour, Wait: func(what string) { said <- what }})
		assert.NoError(t, err)
	}()
	select {
	case what := <-said:
		assert.Equal(t, "another cairn gc", what)
	case <-done:
		t.Fatal("the second gc did not wait for the first")
	case <-time.After(10 * time.Second):
		t.Fatal("the second gc did not say it waits")
	}
	unlock()
	<-done
}
