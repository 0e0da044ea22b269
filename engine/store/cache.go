// Package store is cairn's cache folder: the action records and the index
// they are committed to (group commit, the background syncer), the blob
// store and stat cache it opens, gc and compaction, and the per-key node
// locks held while a node runs, with the scan of who holds them.
package store

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/engine/cas"
	"github.com/cairn-run/cairn/engine/failpoint"
	"github.com/cairn-run/cairn/engine/fsdigest"
	"github.com/cairn-run/cairn/storage/wal"
)

// Format is the version of the cache's on-disk layout.
const Format = 1

// Record is the action record of a finished node: committed to the cache
// index, it is what "finished" means.
type Record struct {
	Format   int             `json:"format"`
	Key      string          `json:"key"`
	Envelope json.RawMessage `json:"envelope"`
	// Outputs maps each stored file (declared outputs, files in output
	// folders, the result file) to the sha256 digest of its content: its
	// blob's name, or that of the bytes Inline keeps.
	Outputs map[string]string `json:"outputs"`
	// Inline holds the content of the small outputs (see engine's
	// inlineMax), which have no blob: the record carries them, and is
	// durable with them.
	Inline map[string][]byte `json:"inline,omitempty"`
	// Kept lists, sorted, the outputs in a declared folder that the run
	// did not write and found there (the user's own, an interrupted
	// attempt's): stored with the record as they were, they are no
	// configuration's output, and no other configuration takes them for
	// this one's. Empty (and left out) in records from before it.
	Kept         []string          `json:"kept,omitempty"`
	Modes        map[string]uint32 `json:"modes,omitempty"`
	Result       json.RawMessage   `json:"result,omitempty"`
	OutputDigest string            `json:"output_digest"`
	ExitCode     int               `json:"exit_code"`
	Started      time.Time         `json:"started"`
	Ended        time.Time         `json:"ended"`
	Attempts     int               `json:"attempts"`
	PeakRSSMiB   float64           `json:"peak_rss_mib,omitempty"`
	PeakGPUMiB   float64           `json:"peak_gpu_mib,omitempty"`
	Pipeline     string            `json:"pipeline"`
	Address      string            `json:"address"`
	RunID        string            `json:"run_id"`
	// RunCounts are the kind's counts of the run that made the record
	// (stages.Outcome.RunCounts): they describe that run, not the result,
	// and enter no key.
	RunCounts map[string]int `json:"run_counts,omitempty"`

	// raw is the index payload the record was decoded from (nil for a
	// record this process built).
	raw []byte
	// Debug marks a result produced by a partial run that is not valid as
	// a batch result (e.g. a single variant of a waves batch).
	Debug bool `json:"debug,omitempty"`
	// Launch is set for a variant of a GPU batch: the launch that
	// measured it.
	Launch *Launch `json:"launch,omitempty"`
	// NotNeeded marks the record of a node that did nothing because it
	// was not needed (stages.Outcome.NotNeeded): it answers for the node
	// only while the node is not needed.
	NotNeeded bool `json:"not_needed,omitempty"`
}

// IsKept reports whether the record lists output p among the files its
// run found in a folder and did not write (Kept).
func (r *Record) IsKept(p string) bool {
	_, ok := slices.BinarySearch(r.Kept, p)
	return ok
}

// Launch describes the batch launch in which a variant of a waves stage
// ran: with the record's run id and start time, what a comparison table
// says of each row.
type Launch struct {
	Batch        string    `json:"batch"`         // the batch id, <run id>/<stage>
	BatchStarted time.Time `json:"batch_started"` // when the batch started
	GPU          int       `json:"gpu"`           // the device it was pinned to
	Wave         int       `json:"wave,omitempty"`
	// InFlight is the most variants of the batch that ran at once while
	// it ran, itself included.
	InFlight int `json:"in_flight"`
	// Launched is how many variants the batch launched; fewer than
	// BatchSize make a partial batch (the others came from earlier runs).
	Launched  int `json:"launched"`
	BatchSize int `json:"batch_size"`
}

// Partial reports whether the launch ran fewer variants than the batch
// has.
func (l *Launch) Partial() bool { return l.Launched < l.BatchSize }

// RecordKey is the key whose record an index payload writes or evicts;
// ok is false for the other payloads (address pointers).
func RecordKey(p []byte) (key string, ok bool) {
	if len(p) >= 65 && (p[0] == recAction || p[0] == recNeeds || p[0] == recEvict) {
		return string(p[1:65]), true
	}
	return "", false
}

// Index record types, the first byte of each payload.
const (
	recAction = 'A' // 'A' + 64-hex key + record JSON
	recAddr   = 'P' // 'P' + 64-hex key + pipeline + 0x00 + address
	// recHeld points an address at the key whose outputs one workspace
	// was last given, committed or taken from the cache (Point): 'H' +
	// 64-hex key + pipeline + 0x00 + address + 0x00 + workspace root.
	recHeld  = 'H'
	recEvict = 'X' // 'X' + 64-hex key: the record is gone (corrupt, or gc)
	// recNeeds is an action record that counts only where the records it
	// names come before it in the index: 'N' + 64-hex key + 4-hex count n
	// + n × (64-hex key + 64-hex output digest) + record JSON.
	recNeeds = 'N'
)

// Need names an upstream's record that a record was written before it was
// durable: the record counts only where that one is in the index too (see
// Commit).
type Need struct {
	Key, OutputDigest string
}

// needSize is the length of one Need in a recNeeds payload.
const needSize = 128

// Cache is cairn's cache folder: the action index, the blob store, the
// stat cache, per-key locks and run journals.
//
//	<dir>/index.log           action index (record log shared by every process)
//	<dir>/cas/sha256/ab/...   output blobs
//	<dir>/statcache           input digests by (path, size, mtime, inode)
//	<dir>/locks/nodes         per-key locks (a byte each) held while a node runs
//	<dir>/runs/<run-id>/      journal, node logs
type Cache struct {
	Dir   string
	Blobs *cas.Store
	Stat  *fsdigest.Cache

	noSync bool
	mu     sync.RWMutex
	// actions holds raw record JSON by key, decoded on lookup.
	actions map[string][]byte
	// addrs maps pipeline + "\x00" + address to the last key committed.
	addrs map[string]string
	// held maps pipeline + "\x00" + address + "\x00" + workspace root to
	// the key last committed or taken from the cache for it there
	// (HeldKey).
	held map[string]string
	// workspace is the root of the workspace this process works in
	// (Options.Workspace).
	workspace string
	// byAddr maps pipeline + "\x00" + address to every key the index's
	// address records ('P', and 'H' of any workspace) have named for it,
	// oldest first; keys whose record is gone stay until the index is
	// read again (KeysOf skips them).
	byAddr map[string][]string
	// unaddressed holds the keys of records that no address record names
	// (an index compacted before compaction kept them): KeysOf reads
	// their address from the records, once.
	unaddressed map[string]bool
	offset      int64 // index bytes already read
	pre         map[string]*prefetched
	// indexFile identifies the index file read so far (gc replaces it).
	indexFile os.FileInfo
	// indexRead is that file, open for Refresh's reads while it is the
	// one at the index's path: a refresh is then one stat and one read.
	indexRead *os.File
	log       *wal.Log
	// Warn receives problems that cost a cache hit but nothing else.
	Warn func(format string, args ...any)

	// Group commit: Commit writes a record and returns; sync rounds make
	// the records written so far durable, blobs first (see WaitDurable).
	written  atomic.Int64  // records committed by this process, in order
	durable  atomic.Int64  // every record up to this one is durable
	syncMu   sync.Mutex    // held for a sync round
	syncKick chan struct{} // a record was written
	syncStop chan struct{} // closed by Close
	syncDone chan struct{} // closed when the background syncer has exited
	// SyncDelay is the longest a written record waits for a sync round
	// (unless WaitDurable asks for one): it bounds the records a power
	// loss can take to those of about the last SyncDelay. Open sets
	// DefaultSyncDelay.
	SyncDelay time.Duration
	// SyncGate, when set (tests only), is called at the start of every
	// sync round.
	SyncGate func()
}

// DefaultSyncDelay is a cache's SyncDelay: long enough that the records of
// a run of short nodes share a few rounds (each costs an fdatasync, which
// on this project's ext4 disks is as dear as a short node), short enough
// that a power loss takes only the work of its last moments.
const DefaultSyncDelay = 50 * time.Millisecond

// Options tune Open.
type Options struct {
	NoSync bool // skip fsync (tests, benchmarks)
	// Warn receives problems that cost a cache hit but nothing else, from
	// the first read of the index on (see Cache.Warn).
	Warn func(format string, args ...any)
	// Workspace is the absolute root of the workspace the process works
	// in: each workspace sharing the cache has its own held keys
	// (HeldKey). "" for none.
	Workspace string
}

// Open opens (creating) a cache folder and loads its index.
func Open(dir string, opts Options) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	blobs, err := cas.Open(dir, cas.Options{NoSync: opts.NoSync, DeferSync: true})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	c := &Cache{
		Dir: dir, Blobs: blobs, noSync: opts.NoSync, SyncDelay: cmp.Or(failpoint.SyncDelay(), DefaultSyncDelay),
		Stat:    fsdigest.Load(StatCachePath(dir)),
		actions: map[string][]byte{}, addrs: map[string]string{}, held: map[string]string{}, workspace: opts.Workspace,
		byAddr: map[string][]string{}, unaddressed: map[string]bool{},
		Warn: func(string, ...any) {},
	}
	if opts.Warn != nil {
		c.Warn = opts.Warn
	}
	if err := c.Refresh(); err != nil {
		return nil, err
	}
	return c, nil
}

// Made reports whether dir holds a cache's folders already: Open makes
// them when missing.
func Made(dir string) bool { return cas.Made(dir) }

// SharedWarning says what keeps the other users of a shared cache
// folder from writing what this process creates in it: the folder is
// set up for a group (setgid) but the umask takes group write away. It is
// empty when there is nothing to say (or the umask cannot be read).
func SharedWarning(dir string) string {
	st, err := os.Stat(dir)
	if err != nil || st.Mode()&os.ModeSetgid == 0 {
		return ""
	}
	mask, ok := processUmask()
	if !ok || mask&0o020 == 0 {
		return ""
	}
	return fmt.Sprintf("the cache folder %s is shared by its group (setgid), but the umask %04o keeps the group from writing what this cairn creates there; run `umask 002` first (see docs/durability.md, Sharing a cache)", dir, mask)
}

// processUmask reads the process's umask from /proc/self/status (Linux),
// without changing it as syscall.Umask would.
func processUmask() (uint32, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("Umask:")); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 8, 32)
			return uint32(n), err == nil
		}
	}
	return 0, false
}

func (c *Cache) indexPath() string { return IndexPath(c.Dir) }

// IndexPath and StatCachePath name a cache folder's action index and stat
// cache.
func IndexPath(cacheDir string) string     { return filepath.Join(cacheDir, "index.log") }
func StatCachePath(cacheDir string) string { return filepath.Join(cacheDir, "statcache") }

// Refresh reads index records appended since the last read (by this or
// another process).
func (c *Cache) Refresh() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	path := c.indexPath()
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		if c.indexFile != nil && (!os.SameFile(fi, c.indexFile) || fi.Size() < c.offset) {
			// gc compacted the index into a new file (while this process
			// had the cache open but held no apply's lock): what was read
			// may be gone, and appends must go to the new file.
			c.actions, c.addrs, c.held, c.offset = map[string][]byte{}, map[string]string{}, map[string]string{}, 0
			c.byAddr, c.unaddressed = map[string][]string{}, map[string]bool{}
			if c.log != nil {
				_ = c.log.Close()
				c.log = nil
			}
			c.closeIndexRead()
		}
		c.indexFile = fi
		if fi.Size() == c.offset {
			return nil // nothing appended since the last read
		}
	}
	for {
		st, err := c.readIndex(path, fi, func(off int64, p []byte) error {
			c.loadIndexRecord(off, p)
			return nil
		})
		// Next is a file offset (a record boundary): the next Refresh reads
		// only what was appended since.
		if st.Next > c.offset {
			c.offset = st.Next
		}
		// A damaged record costs what it recorded, nothing else: read on
		// from the valid record after it. (The first commit blanks it on
		// disk; see openLog.)
		var ce *wal.CorruptError
		if errors.As(err, &ce) && ce.Offset >= c.offset && ce.Next > ce.Offset {
			c.Warn("cache: the index record at byte %d is damaged; it is skipped, and the node it recorded will run again", ce.Offset)
			c.offset = ce.Next
			continue
		}
		if err != nil {
			if errors.Is(err, wal.ErrCorrupt) {
				return fmt.Errorf("cache: the index %s is damaged (%w); move it aside to start an empty index, the blobs stay usable", path, err)
			}
			return fmt.Errorf("cache: %w", err)
		}
		return nil
	}
}

// readIndex reads the index records from c.offset on: from the file
// Refresh keeps open when fi (the path's stat, nil if it failed) names it,
// else by path. c.mu is held.
func (c *Cache) readIndex(path string, fi os.FileInfo, fn func(off int64, p []byte) error) (wal.ReadStats, error) {
	if fi == nil {
		return wal.ReadFrom(path, c.offset, fn)
	}
	if c.indexRead == nil {
		f, err := os.Open(path)
		if err != nil {
			return wal.ReadFrom(path, c.offset, fn)
		}
		if ofi, err := f.Stat(); err != nil || !os.SameFile(ofi, fi) {
			// Replaced since the stat: this pass reads it by path.
			f.Close()
			return wal.ReadFrom(path, c.offset, fn)
		}
		c.indexRead = f
	}
	return wal.ReadAt(c.indexRead, path, c.offset, fi.Size(), fn)
}

// closeIndexRead closes the file Refresh reads. c.mu is held.
func (c *Cache) closeIndexRead() {
	if c.indexRead != nil {
		_ = c.indexRead.Close()
		c.indexRead = nil
	}
}

// loadIndexRecord takes one index record into the in-memory index: an
// action record, an address pointer, or an eviction. Any other record (a
// blanked stretch's zeros), or one too short to hold a key, is ignored.
func (c *Cache) loadIndexRecord(off int64, p []byte) {
	if len(p) < 65 {
		return
	}
	key := string(p[1:65])
	switch p[0] {
	case recAction:
		c.actions[key] = append([]byte(nil), p[65:]...)
		c.unaddressed[key] = true
	case recNeeds:
		body, missing, ok := c.needsMet(p)
		if !ok {
			c.Warn("cache: the index record at byte %d is malformed; it is skipped, and the node it recorded will run again", off)
			return
		}
		if missing != "" {
			// Written before the record of its upstream was durable,
			// which a power loss took: left out, as a torn tail is
			// (silently; the node runs again).
			return
		}
		c.actions[key] = append([]byte(nil), body...)
		c.unaddressed[key] = true
	case recAddr:
		c.addrs[string(p[65:])] = key
		c.noteAddress(key, string(p[65:]))
	case recHeld:
		c.held[string(p[65:])] = key
		c.noteAddress(key, addressOf(string(p[65:])))
	case recEvict:
		delete(c.actions, key)
		delete(c.unaddressed, key)
	}
}

// addressOf is the address (pipeline + "\x00" + address) a held record's
// id names, without its workspace.
func addressOf(heldID string) string {
	p, rest, _ := strings.Cut(heldID, "\x00")
	a, _, _ := strings.Cut(rest, "\x00")
	return p + "\x00" + a
}

// noteAddress notes that the index names key for the address id
// (pipeline + "\x00" + address). c.mu is held.
func (c *Cache) noteAddress(key, id string) {
	delete(c.unaddressed, key)
	if !slices.Contains(c.byAddr[id], key) {
		c.byAddr[id] = append(c.byAddr[id], key)
	}
}

// KeysOf returns the keys of the records the index holds for a node
// address of a pipeline: committed for it, or taken from the cache into
// it (Point), newest first. It decodes no record, but once those no
// address record names (see unaddressed): a node's other configurations
// are found without reading the whole cache.
func (c *Cache) KeysOf(pipeline, addr string) []string {
	c.mu.RLock()
	todo := len(c.unaddressed) > 0
	c.mu.RUnlock()
	if todo {
		c.addressUnaddressed()
	}
	id := pipeline + "\x00" + addr
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	keys := c.byAddr[id]
	for i := len(keys) - 1; i >= 0; i-- {
		if _, ok := c.actions[keys[i]]; ok {
			out = append(out, keys[i])
		}
	}
	return out
}

// addressUnaddressed reads the address of each record no address record
// names from the record itself.
func (c *Cache) addressUnaddressed() {
	c.mu.RLock()
	raws := make(map[string][]byte, len(c.unaddressed))
	for k := range c.unaddressed {
		raws[k] = c.actions[k]
	}
	c.mu.RUnlock()
	ids := make(map[string]string, len(raws))
	for k, raw := range raws {
		var r struct{ Pipeline, Address string }
		if raw != nil && unmarshalRecord(raw, &r) == nil {
			ids[k] = r.Pipeline + "\x00" + r.Address
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range raws {
		if id, ok := ids[k]; ok && c.unaddressed[k] {
			c.noteAddress(k, id)
		}
		delete(c.unaddressed, k)
	}
}

// needsMet checks a recNeeds payload against the records read so far: it
// returns the record's JSON, or the key of an upstream record it names that
// is not in the index with that output digest; ok is false for a payload
// too short to hold what it says.
func (c *Cache) needsMet(p []byte) (body []byte, missing string, ok bool) {
	if len(p) < 69 {
		return nil, "", false
	}
	n, err := strconv.ParseUint(string(p[65:69]), 16, 16)
	if err != nil || len(p) < 69+int(n)*needSize {
		return nil, "", false
	}
	for i := 0; i < int(n); i++ {
		at := 69 + i*needSize
		k, d := string(p[at:at+64]), p[at+64:at+needSize]
		up, ok := c.actions[k]
		if !ok || !bytes.Contains(up, append(append([]byte(`"output_digest":"`), d...), '"')) {
			return nil, k, true
		}
	}
	return p[69+int(n)*needSize:], "", true
}

// OutputBytes returns the content of the output path of r: kept in the
// record (a small output) or in the blob store, verified against its
// digest either way.
func (c *Cache) OutputBytes(r *Record, path string) ([]byte, error) {
	d, ok := r.Outputs[path]
	if !ok {
		return nil, fmt.Errorf("%s is not an output of %s", path, r.Address)
	}
	if b, ok := r.Inline[path]; ok {
		if err := cas.VerifyBytes(cas.Digest(d), b, path+" of "+r.Address); err != nil {
			return nil, err
		}
		return b, nil
	}
	return c.Blobs.ReadBytes(cas.Digest(d))
}

// Lookup returns the record of key, if committed.
func (c *Cache) Lookup(key string) (*Record, bool) {
	c.mu.RLock()
	raw, ok := c.actions[key]
	c.mu.RUnlock()
	if !ok {
		return nil, false
	}
	if r := c.takePrefetched(key, raw); r != nil {
		return r, true
	}
	var r Record
	if err := unmarshalRecord(raw, &r); err != nil || r.Key != key || r.Format != Format {
		c.Warn("cache: the record of %s is unreadable; it will be recomputed", Short(key))
		_ = c.Evict(key)
		return nil, false
	}
	r.raw = raw
	return &r, true
}

// prefetched is a record being decoded ahead of its Lookup.
type prefetched struct {
	done chan struct{}
	raw  []byte
	rec  *Record // nil when the record does not decode: Lookup reports it
}

// Prefetch decodes the records of keys on every core but one, in the
// background, in the order given: a plan that is about to look them up in
// that order finds them decoded. Keys without a record are ignored.
func (c *Cache) Prefetch(keys []string) {
	c.mu.Lock()
	if c.pre == nil {
		c.pre = map[string]*prefetched{}
	}
	var todo []*prefetched
	for _, k := range keys {
		raw, ok := c.actions[k]
		if !ok || c.pre[k] != nil {
			continue
		}
		p := &prefetched{done: make(chan struct{}), raw: raw}
		c.pre[k] = p
		todo = append(todo, p)
	}
	c.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	workers := max(1, runtime.GOMAXPROCS(0)-1)
	var next atomic.Int64
	for w := 0; w < workers; w++ {
		go func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(todo) {
					return
				}
				p := todo[i]
				var r Record
				if unmarshalRecord(p.raw, &r) == nil {
					r.raw = p.raw
					p.rec = &r
				}
				close(p.done)
			}
		}()
	}
}

// takePrefetched returns the prefetched record of key, once, if it was
// decoded from raw (the record the index holds now) and is valid.
func (c *Cache) takePrefetched(key string, raw []byte) *Record {
	c.mu.Lock()
	p := c.pre[key]
	if p != nil {
		delete(c.pre, key)
	}
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	<-p.done
	r := p.rec
	if r == nil || r.Key != key || r.Format != Format || len(raw) == 0 || len(p.raw) == 0 || &p.raw[0] != &raw[0] {
		return nil
	}
	return r
}

// IndexState returns the index file as last read and the offset read up
// to (a record boundary); nil when there is no index yet.
func (c *Cache) IndexState() (os.FileInfo, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.indexFile, c.offset
}

// Holds reports whether the index's record of key is still the one r was
// decoded from; known is false when r was not decoded from the index.
func (c *Cache) Holds(key string, r *Record) (same, known bool) {
	if r.raw == nil {
		return false, false
	}
	c.mu.RLock()
	raw, ok := c.actions[key]
	c.mu.RUnlock()
	return ok && bytes.Equal(raw, r.raw), true
}

// Has reports whether key has a record, without decoding it.
func (c *Cache) Has(key string) bool {
	c.mu.RLock()
	_, ok := c.actions[key]
	c.mu.RUnlock()
	return ok
}

// LastKey returns the key last committed for a node address of a pipeline.
func (c *Cache) LastKey(pipeline, addr string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.addrs[pipeline+"\x00"+addr]
}

// HeldKey returns the key whose outputs a node address of a pipeline was
// last given in this process's workspace (Options.Workspace): committed,
// or taken from the cache (Point). Where that workspace has none noted
// (an index older than these notes), the key last committed.
func (c *Cache) HeldKey(pipeline, addr string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	k, _ := c.heldKey(nil, pipeline, addr)
	return k
}

// HeldHere is the key held for the address in this workspace (committed
// here, or taken from the cache here), "" when none: unlike HeldKey, never
// the one last committed in another workspace.
func (c *Cache) HeldHere(pipeline, addr string) string {
	id := c.heldID(pipeline, addr)
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.held[id]
}

// HeldKeys is HeldKey of each of addrs, read under one lock and without
// building each map key on the heap: a plan asks for every node's.
func (c *Cache) HeldKeys(pipeline string, addrs []string) []string {
	out := make([]string, len(addrs))
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.held) == 0 && len(c.addrs) == 0 {
		return out
	}
	var buf []byte
	for i, addr := range addrs {
		out[i], buf = c.heldKey(buf, pipeline, addr)
	}
	return out
}

// heldKey is HeldKey's answer, with c.mu held: the key held for the
// address in this workspace (heldID), else the one last committed. The
// map keys are built in buf, which it returns for the next call.
func (c *Cache) heldKey(buf []byte, pipeline, addr string) (string, []byte) {
	buf, n := c.appendHeldID(buf[:0], pipeline, addr)
	if k, ok := c.held[string(buf)]; ok {
		return k, buf
	}
	return c.addrs[string(buf[:n])], buf
}

// heldID is the held map's key of an address in this workspace.
func (c *Cache) heldID(pipeline, addr string) string {
	b, _ := c.appendHeldID(nil, pipeline, addr)
	return string(b)
}

// appendHeldID appends heldID's key to b; its first n bytes, from
// pipeline on, are the addrs map's key of the address.
func (c *Cache) appendHeldID(b []byte, pipeline, addr string) (_ []byte, n int) {
	b = append(append(append(b, pipeline...), 0), addr...)
	n = len(b)
	return append(append(b, 0), c.workspace...), n
}

// Point makes key the held one for a node address of a pipeline (HeldKey)
// where another one is: the workspace holds key's outputs now, restored
// from the cache. Plan's reasons for a change, and the check for another
// configuration's files in a folder output, compare with what the
// workspace holds, not with the configuration run before it.
func (c *Cache) Point(pipeline, addr, key string) error {
	id := c.heldID(pipeline, addr)
	if c.HeldKey(pipeline, addr) == key {
		return nil
	}
	if len(key) != 64 {
		return fmt.Errorf("cache: bad key %q", key)
	}
	c.mu.Lock()
	l, err := c.openLog()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if _, err := l.AppendAt([][]byte{append(append([]byte{recHeld}, key...), id...)}, wal.Written); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	c.mu.Lock()
	c.held[id] = key
	c.noteAddress(key, pipeline+"\x00"+addr)
	c.mu.Unlock()
	return nil
}

func (c *Cache) openLog() (*wal.Log, error) {
	if c.log != nil {
		return c.log, nil
	}
	// Damaged records in the middle (Refresh skipped them) are blanked
	// in place so that appends can go on after the records that follow
	// them.
	l, kept, err := wal.OpenBlanking(c.indexPath(), wal.Options{Shared: true, NoSync: c.noSync})
	if len(kept) > 0 {
		c.Warn("cache: %d damaged record(s) of the index were blanked; the nodes they recorded run again (the damaged bytes are kept in %s)", len(kept), strings.Join(kept, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	if n := l.Headless(); n > 0 {
		c.Warn("cache: the index %s held %d bytes without a valid header (zeros, or cut short: damaged, or never written to disk), and no record could be read from them; it starts empty, and the nodes it recorded run again", c.indexPath(), n)
	}
	c.log = l
	return l, nil
}

// Commit adds a record and points its address at it, and returns the
// record's number. When Commit returns, the record is in the index file:
// no later apply runs the node again, unless a power loss (not a kill)
// takes the record before a sync round made it durable; see WaitDurable.
//
// needs are the records of the node's upstreams that are not durable yet
// (committed by this process, not synced by a round so far). Their
// records come before this one in the index, but between two rounds the
// kernel writes pages back in any order: a power loss could leave this
// record without them. The index then names them in this record, which
// counts, when the index is read, only where every one of them is there
// (the same key with the same output digest): no record takes effect
// without the upstream records it was keyed on, and no commit waits for a
// sync round.
func (c *Cache) Commit(r *Record, needs []Need) (int64, error) {
	r.Format = Format
	body, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	if len(r.Key) != 64 {
		return 0, fmt.Errorf("cache: bad key %q", r.Key)
	}
	var act []byte
	if len(needs) == 0 {
		act = append(append([]byte{recAction}, r.Key...), body...)
	} else {
		if len(needs) > 0xffff {
			return 0, fmt.Errorf("cache: %d upstream records not durable yet; at most %d", len(needs), 0xffff)
		}
		act = make([]byte, 0, 1+64+4+len(needs)*needSize+len(body))
		act = append(append(append(act, recNeeds), r.Key...), fmt.Sprintf("%04x", len(needs))...)
		for _, n := range needs {
			if len(n.Key) != 64 || len(n.OutputDigest) != 64 {
				return 0, fmt.Errorf("cache: bad upstream record %q (output digest %q)", n.Key, n.OutputDigest)
			}
			act = append(append(act, n.Key...), n.OutputDigest...)
		}
		act = append(act, body...)
	}
	addr := append(append([]byte{recAddr}, r.Key...), r.Pipeline+"\x00"+r.Address...)
	// This workspace holds it now.
	held := c.heldID(r.Pipeline, r.Address)
	heldRec := append(append([]byte{recHeld}, r.Key...), held...)
	c.mu.Lock()
	l, err := c.openLog()
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	span, err := l.AppendAt([][]byte{act, addr, heldRec}, wal.Written)
	if err != nil {
		return 0, fmt.Errorf("cache: %w", err)
	}
	c.mu.Lock()
	c.actions[r.Key] = body
	c.addrs[r.Pipeline+"\x00"+r.Address] = r.Key
	c.held[held] = r.Key
	c.noteAddress(r.Key, r.Pipeline+"\x00"+r.Address)
	if span.Alone && span.Start == c.offset && c.log == l {
		// Refresh has read everything before these records, which are
		// now in the maps: it need not read them back.
		c.offset = span.End
	}
	c.mu.Unlock()
	seq := c.written.Add(1)
	if !c.noSync {
		c.kickSyncer()
	}
	failpoint.AfterCommit()
	return seq, nil
}

// Written is the number of the last record this process committed: once
// WaitDurable(Written()) returns, every record committed so far is
// durable.
func (c *Cache) Written() int64 { return c.written.Load() }

// Durable is the number of the last record such that every record up to
// it is durable.
func (c *Cache) Durable() int64 { return c.durable.Load() }

// WaitDurable returns once every record up to seq is durable: on disk,
// fsynced, with the blobs it names. A sync round syncs the blobs stored
// since the last round, then the index; concurrent callers share a round,
// and a background syncer runs a round SyncDelay after a record was
// written, so that the records a power loss can take are those of the last
// moments.
func (c *Cache) WaitDurable(seq int64) error {
	if c.noSync {
		return nil
	}
	for c.durable.Load() < seq {
		if err := c.syncRound(); err != nil {
			return err
		}
	}
	return nil
}

// syncRound makes every record written when it starts durable.
func (c *Cache) syncRound() error {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if c.SyncGate != nil {
		c.SyncGate()
	}
	target := c.written.Load()
	if c.durable.Load() >= target {
		return nil
	}
	// Every blob a record up to target names was stored before the record
	// was written, so before this point.
	if err := c.Blobs.Sync(); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	c.mu.Lock()
	l := c.log
	c.mu.Unlock()
	if l != nil {
		if err := l.Sync(); err != nil {
			return fmt.Errorf("cache: %w", err)
		}
	}
	c.durable.Store(target)
	return nil
}

// kickSyncer tells the background syncer a record was written, starting
// it on first use.
func (c *Cache) kickSyncer() {
	c.mu.Lock()
	if c.syncKick == nil {
		c.syncKick = make(chan struct{}, 1)
		c.syncStop = make(chan struct{})
		c.syncDone = make(chan struct{})
		go c.syncer(c.syncKick, c.syncStop, c.syncDone, c.SyncDelay)
	}
	select {
	case c.syncKick <- struct{}{}:
	default:
	}
	c.mu.Unlock()
}

// syncer runs one sync round for the records written since the last one,
// delay after the first of them was written, until stop is closed: the
// records of the nodes that end meanwhile share it. A failed round is
// retried by the next Commit's kick, and reported by WaitDurable.
func (c *Cache) syncer(kick, stop <-chan struct{}, done chan<- struct{}, delay time.Duration) {
	defer close(done)
	t := time.NewTimer(delay)
	t.Stop()
	for {
		select {
		case <-kick:
		case <-stop:
			return
		}
		t.Reset(delay)
		select {
		case <-t.C:
		case <-stop:
			return
		}
		t.Stop()
		// Records written during the round kicked again: they wait for
		// the next one.
		_ = c.syncRound()
	}
}

// Evict removes a record (it will be recomputed).
func (c *Cache) Evict(key string) error {
	c.mu.Lock()
	delete(c.actions, key)
	delete(c.unaddressed, key)
	l, err := c.openLog()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return l.Append([][]byte{append([]byte{recEvict}, key...)}, wal.Durable)
}

// Close makes every record durable, closes the index and saves the stat
// cache.
func (c *Cache) Close() error {
	var errs []error
	c.mu.Lock()
	stop, done := c.syncStop, c.syncDone
	c.syncKick, c.syncStop = nil, nil
	c.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	errs = append(errs, c.WaitDurable(c.written.Load()))
	if c.log != nil {
		errs = append(errs, c.log.Close())
	}
	c.mu.Lock()
	c.closeIndexRead()
	c.mu.Unlock()
	errs = append(errs, c.Stat.Save())
	return errors.Join(errs...)
}

// Records returns every record (for gc and show), decoded.
func (c *Cache) Records() []*Record {
	c.mu.RLock()
	keys := make([]string, 0, len(c.actions))
	for k := range c.actions {
		keys = append(keys, k)
	}
	c.mu.RUnlock()
	out := make([]*Record, 0, len(keys))
	for _, k := range keys {
		if r, ok := c.Lookup(k); ok {
			out = append(out, r)
		}
	}
	return out
}

// Short is a key's first 12 digits, as messages name it.
func Short(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}
