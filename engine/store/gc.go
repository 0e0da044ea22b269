package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/cairn-run/cairn/engine/cas"
	"github.com/cairn-run/cairn/storage/wal"
)

// UseLock is held shared by every apply for its whole life; gc takes it
// exclusively, so it never removes a blob or record a running apply uses.
// An apply first goes through the gc gate (gateLock, shared), and only
// then takes its use lock: gc holds the gate exclusively while it waits for
// the applies running and while it runs, so an apply started meanwhile
// waits for gc (flock gives a waiting exclusive locker no priority over new
// shared ones: without the gate, applies that keep overlapping would keep
// gc waiting for ever). wait, when not nil, is called once if the apply
// must wait; a cancelled ctx (Ctrl-C) ends the wait with ctx's error. The
// gate is let go once the use lock is held, and never waited for with the
// use lock held: gc, holding the gate, waits for that lock.
func UseLock(ctx context.Context, cacheDir string, wait func()) (*flock.Flock, error) {
	waited := false
	waitOnce := func() {
		if !waited && wait != nil {
			wait()
		}
		waited = true
	}
	gate := flock.New(gatePath(cacheDir), SharedLock)
	if err := lockShared(ctx, gate, waitOnce); err != nil {
		return nil, err
	}
	defer gate.Unlock()
	lk := flock.New(filepath.Join(cacheDir, "gc.lock"), SharedLock)
	if err := lockShared(ctx, lk, waitOnce); err != nil {
		return nil, err
	}
	return lk, nil
}

// gatePath is the cache's gc gate: see UseLock.
func gatePath(cacheDir string) string { return filepath.Join(cacheDir, "gc.gate") }

// lockShared takes lk shared, calling wait first if it must wait for it,
// until it has it or ctx is done.
func lockShared(ctx context.Context, lk *flock.Flock, wait func()) error {
	ok, err := lk.TryRLock()
	if err == nil && !ok {
		wait()
		ok, err = lk.TryRLockContext(ctx, 100*time.Millisecond)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("stopped while waiting for cairn gc to finish: %w", ctx.Err())
	case err != nil:
		return fmt.Errorf("cache: %w", err)
	case !ok:
		return fmt.Errorf("cache: cannot lock %s", lk.Path())
	}
	return nil
}

// gcLock takes the gc gate, then the use lock, exclusively (see
// UseLock), calling wait first if it must wait for either, with what it
// waits for ("another cairn gc", holding the gate; "running applies",
// holding the use lock), and returns what lets them go. An apply holds
// the gate only for a moment, on its way to its use lock: the gate still
// held after gateGrace is another gc's.
func gcLock(cacheDir string, wait func(what string)) (func(), error) {
	waited := false
	lock := func(lk *flock.Flock, grace time.Duration, what string) error {
		ok, err := lk.TryLock()
		for end := time.Now().Add(grace); err == nil && !ok && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
			ok, err = lk.TryLock()
		}
		if err != nil || ok {
			return err
		}
		if !waited && wait != nil {
			wait(what)
		}
		waited = true
		return lk.Lock()
	}
	gate := flock.New(gatePath(cacheDir), SharedLock)
	if err := lock(gate, gateGrace, "another cairn gc"); err != nil {
		return nil, err
	}
	use := flock.New(filepath.Join(cacheDir, "gc.lock"), SharedLock)
	if err := lock(use, 0, "running applies"); err != nil {
		_ = gate.Unlock()
		return nil, err
	}
	return func() {
		_ = use.Unlock()
		_ = gate.Unlock()
	}, nil
}

// gateGrace is how long gc tries the gate before it says it waits for
// another gc: an apply passing the gate holds it for less.
const gateGrace = 50 * time.Millisecond

// GCOptions choose what gc removes.
type GCOptions struct {
	OlderThan time.Duration // records (and runs) whose node ended longer ago; 0: keep all (see AgeSet)
	MaxBytes  int64         // evict oldest records until blobs fit; 0: no limit (see SizeSet)
	DryRun    bool
	Wait      func(what string) // called when gc must wait, with what for: "running applies" or "another cairn gc"
	// AgeSet and SizeSet make OlderThan and MaxBytes limits even at 0
	// (cairn gc --older-than 0s: every record and run that ended before
	// now; --max-size 0: no record's blobs kept), where 0 otherwise means
	// no limit.
	AgeSet, SizeSet bool
	// Runs removes the run folders of the cache folder dir older than
	// olderThan (the caller that knows the run journal gives it: see
	// engine.GC) and returns how many it removed or, with dryRun, would.
	// gc calls it with the gc lock held, when OlderThan is a limit; nil: no
	// run is removed.
	Runs func(dir string, olderThan time.Duration, dryRun bool) (int, error)
}

// GCResult says what gc did.
type GCResult struct {
	Records, Blobs, Runs int
	Bytes                int64
	Kept                 int
	KeptBytes            int64
}

// GC removes old records, blobs no record references, and old run
// folders (through opts.Runs), then compacts the index. It waits for running applies.
func GC(c *Cache, opts GCOptions) (*GCResult, error) {
	unlock, err := gcLock(c.Dir, opts.Wait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := c.Refresh(); err != nil {
		return nil, err
	}
	res := &GCResult{}
	recs := c.Records()
	c.addressRecords(recs)
	sort.Slice(recs, func(i, j int) bool { return recs[i].Ended.After(recs[j].Ended) })
	sizes := map[string]int64{}
	_ = c.Blobs.Walk(func(d cas.Digest, size int64, _ time.Time) error {
		sizes[string(d)] = size
		return nil
	})
	keep := map[string]bool{}
	var used int64
	counted := map[string]bool{}
	var drop []*Record
	full := false // the size limit is reached: every older record goes too
	byAge := opts.OlderThan > 0 || opts.AgeSet
	bySize := opts.MaxBytes > 0 || opts.SizeSet
	for _, r := range recs {
		old := byAge && time.Since(r.Ended) > opts.OlderThan
		var need int64
		for _, d := range r.Outputs {
			if !counted[d] {
				need += sizes[d]
			}
		}
		if !old && bySize && used+need > opts.MaxBytes {
			// Oldest first: a smaller, older record is not kept in the
			// room a newer one left, half a configuration cached.
			full = true
		}
		if old || full {
			drop = append(drop, r)
			continue
		}
		used += need
		for _, d := range r.Outputs {
			counted[d] = true
		}
		keep[r.Key] = true
	}
	res.Records = len(drop)
	res.Kept = len(keep)
	res.KeptBytes = used
	var unused []cas.Digest
	for d, size := range sizes {
		if counted[d] {
			continue
		}
		res.Blobs++
		res.Bytes += size
		unused = append(unused, cas.Digest(d))
	}
	if byAge && opts.Runs != nil {
		n, err := opts.Runs(c.Dir, opts.OlderThan, opts.DryRun)
		res.Runs += n
		if err != nil {
			return res, err
		}
	}
	if opts.DryRun {
		return res, nil
	}
	_, _ = c.Blobs.RemoveStaleTemps(time.Hour)
	removeOldKeyLocks(c.Dir)
	// The index names only the kept records, durably, before a blob goes:
	// a gc killed on the way leaves blobs no record names (the next gc
	// removes them), never a record whose blobs are gone.
	if err := c.compact(keep); err != nil {
		return res, err
	}
	for _, d := range unused {
		_ = c.Blobs.Remove(d)
	}
	// The index is a new file now: no up-to-date memo holds any more.
	_ = os.RemoveAll(filepath.Join(c.Dir, "memo"))
	return res, nil
}

// compact rewrites the index with only the kept records, and the address
// pointers. Called with the gc lock held exclusively.
func (c *Cache) compact(keep map[string]bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Damaged records, which Refresh skipped, are copied beside the index
	// (index.log.damaged-*) before it is written again without them, as a
	// commit's opening of the log does: damaged bytes are never destroyed
	// for good.
	if _, err := c.openLog(); err != nil {
		return err
	}
	if c.log != nil {
		_ = c.log.Close()
		c.log = nil
	}
	tmp := c.indexPath() + ".compact"
	_ = os.Remove(tmp)
	l, err := wal.Open(tmp, wal.Options{NoSync: c.noSync})
	if err != nil {
		return err
	}
	var batch [][]byte
	for k, body := range c.actions {
		if !keep[k] {
			delete(c.actions, k)
			continue
		}
		batch = append(batch, append(append([]byte{recAction}, k...), body...))
	}
	// The keys an address had before its last, whose records stay: a
	// node's other configurations (KeysOf). Their pointers come before
	// the last ones, which a reader takes in the end.
	for addr, keys := range c.byAddr {
		for _, k := range keys {
			if keep[k] && k != c.addrs[addr] {
				batch = append(batch, append(append([]byte{recAddr}, k...), addr...))
			}
		}
	}
	// Every address pointer stays, also those whose record goes: plan
	// then says that the cached result is gone rather than "new".
	for addr, k := range c.addrs {
		batch = append(batch, append(append([]byte{recAddr}, k...), addr...))
	}
	for id, k := range c.held {
		batch = append(batch, append(append([]byte{recHeld}, k...), id...))
	}
	if len(batch) > 0 {
		if err := l.Append(batch, wal.Durable); err != nil {
			l.Close()
			return err
		}
	}
	if err := l.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, c.indexPath()); err != nil {
		return err
	}
	if !c.noSync {
		// The new index is the one a power loss leaves: gc removes the
		// blobs of the records it dropped next.
		if err := syncDir(c.Dir); err != nil {
			return err
		}
	}
	_ = os.Remove(tmp + ".lock")
	st, err := os.Stat(c.indexPath())
	if err == nil {
		c.offset = st.Size()
	}
	return nil
}

// addressRecords notes the address of each of recs that no address
// record names: compaction keeps it for KeysOf.
func (c *Cache) addressRecords(recs []*Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range recs {
		if c.unaddressed[r.Key] {
			c.noteAddress(r.Key, r.Pipeline+"\x00"+r.Address)
		}
	}
}

// AddressKeys lists, per pipeline, the last key committed for addr.
func (c *Cache) AddressKeys(addr string) map[string]string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := map[string]string{}
	for k, key := range c.addrs {
		p, a, _ := strings.Cut(k, "\x00")
		if a == addr {
			out[p] = key
		}
	}
	return out
}

// PipelineKeys maps each address of pipeline to the last key committed
// for it.
func (c *Cache) PipelineKeys(pipeline string) map[string]string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := map[string]string{}
	for k, key := range c.addrs {
		if p, a, _ := strings.Cut(k, "\x00"); p == pipeline {
			out[a] = key
		}
	}
	return out
}

// FindKey resolves a full key or a unique prefix of at least 8 hex digits.
func (c *Cache) FindKey(prefix string) (string, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if _, ok := c.actions[prefix]; ok {
		return prefix, nil
	}
	if len(prefix) < 8 {
		return "", fmt.Errorf("%q is too short to name a key: give at least 8 hex digits", prefix)
	}
	var found []string
	for k := range c.actions {
		if strings.HasPrefix(k, prefix) {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no cached record has a key starting with %s", prefix)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%d keys start with %s: give more digits", len(found), prefix)
}

// removeOldKeyLocks removes the per-key lock files that cairn before
// locks/nodes made (locks/<first two hex>/<key>). gc holds the cache's
// use lock exclusively, so no apply, of either kind, is running.
func removeOldKeyLocks(cacheDir string) {
	dirs, _ := filepath.Glob(filepath.Join(cacheDir, "locks", "[0-9a-f][0-9a-f]"))
	for _, d := range dirs {
		if st, err := os.Lstat(d); err == nil && st.IsDir() {
			_ = os.RemoveAll(d)
		}
	}
}

// SharedLock creates a lock file readable and writable by everyone the
// umask lets in (flock's default, 0600, would shut out the other users of
// a shared cache).
var SharedLock = flock.SetPermissions(0o666)

// AddressRecords lists the keys of every record in the cache made for
// addr, by any pipeline: the last one committed and the earlier ones
// (another configuration's), in no order.
func (c *Cache) AddressRecords(addr string) []string {
	// The stage's part of the address (an identifier: the same bytes in
	// the record's JSON) rules most records out without decoding them.
	stage, _, _ := strings.Cut(addr, "[")
	c.mu.RLock()
	defer c.mu.RUnlock()
	var keys []string
	for k, raw := range c.actions {
		if !bytes.Contains(raw, []byte(stage)) {
			continue
		}
		var r struct {
			Address string `json:"address"`
		}
		if unmarshalRecord(raw, &r) == nil && r.Address == addr {
			keys = append(keys, k)
		}
	}
	return keys
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
