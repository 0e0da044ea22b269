package items

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cairn-run/cairn/storage/wal"
)

// Result is what one evaluation of one item produced. It is stored under the
// item's key; an infrastructure failure is never a Result.
type Result struct {
	// Score is the item's score; nil when the worker reported none (it may
	// report outputs only).
	Score *float64 `json:"score,omitempty"`
	// Outputs is whatever else the worker reported about the item (JSON).
	Outputs json.RawMessage `json:"outputs,omitempty"`
	// Charged is the number of rollouts the evaluation charged.
	Charged int `json:"charged"`
	// Error is the worker's message when the item itself failed (a task
	// error, not an infrastructure failure).
	Error string `json:"error,omitempty"`
}

// Record is one result to store under its item key.
type Record struct {
	Key    string
	Result Result
}

// ErrBadRecord reports a record in the item log that cairn cannot decode.
var ErrBadRecord = errors.New("items: malformed item record")

// ErrBadKey reports an item key that is not 64 hex digits.
var ErrBadKey = errors.New("items: malformed item key")

// recordVersion is the first byte of every record payload.
//
// Layout of a v1 payload (little endian):
//
//	[0]       version (1)
//	[1:33]    item key (sha256)
//	[33]      flags: bit 0 set when the result has a score
//	[34:42]   score, float64 bits
//	[42:46]   charged, uint32
//	[46:50]   length E of the error text, uint32
//	[50:50+E] error text
//	[50+E:]   outputs (JSON, possibly empty)
const recordVersion = 1

const (
	recHeader   = 50
	flagScore   = 1
	storeSubdir = "items"
	logName     = "log"
)

// entry is what the index keeps of a record: enough for scores and counts
// without reading the log again. off is the record's offset in the log, or -1
// for a record this process appended and has not read back yet (its payload
// then waits in Store.own).
type entry struct {
	off     int64
	score   float64
	charged uint32
	flags   uint8
}

// chargedInt is the entry's charged count as an int, held at the largest
// int where an int has 32 bits.
func (e entry) chargedInt() int { return int(min(int64(e.charged), math.MaxInt)) }

// StoreOptions tune a Store.
type StoreOptions struct {
	// NoSync skips fsync on append (tests and benchmarks of everything but
	// durability).
	NoSync bool
	// Warn is told of damage repaired as the store opens (records in the
	// middle of the log blanked); nil: not told.
	Warn func(text string)
}

// StoreStats describes the log behind a Store.
type StoreStats struct {
	// Items is the number of distinct item keys with a result.
	Items int
	// Records is the number of records read from the log.
	Records int
	// Duplicates counts records for a key that already had one (the first
	// record wins). Claims keep this at zero.
	Duplicates int
}

// Store is the item store of one cache: an append-only log of item results
// at <cache>/items/log, written with group commit and shared by every process
// that opens it, with an in-memory index from item key to result. A key's
// first record wins; a Store never overwrites a result.
//
// Store is safe for concurrent use. Results appended by other processes
// become visible after Refresh.
type Store struct {
	dir     string
	logPath string
	log     *wal.Log
	rd      *os.File // the log, open for reading one record (Get)

	refreshMu sync.Mutex // serializes reads of the log's tail
	next      int64      // where the next read of the tail starts
	batch     []indexed  // Refresh's buffer

	mu      sync.RWMutex
	index   *keyIndex
	own     map[[32]byte][]byte // payloads appended here, not yet read back
	records int
	dups    int
}

// Damaged reports whether err, from OpenStore, says the store's file is
// damaged where cairn cannot mend it (its header): moving it aside does,
// retrying does not.
func Damaged(err error) bool { return errors.Is(err, wal.ErrCorrupt) }

// OpenStore opens (creating it if needed) the item store of the cache in
// cacheDir and loads its index.
func OpenStore(cacheDir string, opts StoreOptions) (*Store, error) {
	dir := filepath.Join(cacheDir, storeSubdir)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("items: create store: %w", err)
	}
	s := &Store{
		dir:     dir,
		logPath: filepath.Join(dir, logName),
		own:     make(map[[32]byte][]byte),
	}
	// Lazy: nothing is synced before the first results are stored (a new
	// log's header and folder entry, with them), so that no fsync stands
	// between an evaluation's start and its first request, and one that
	// stores nothing (every item found here) makes none.
	// Damaged records in the middle of the log (a flipped bit) are
	// blanked in place, their bytes kept beside the log, so that the
	// results around them are read and new ones appended; the items they
	// held are evaluated again.
	l, kept, err := wal.OpenBlanking(s.logPath, wal.Options{NoSync: opts.NoSync, Shared: true, Lazy: true})
	if len(kept) > 0 && opts.Warn != nil {
		opts.Warn(fmt.Sprintf("the item store %s had %d damaged record(s), now blanked: their items are evaluated again (the damaged bytes are kept in %s)", s.logPath, len(kept), strings.Join(kept, ", ")))
	}
	if err != nil {
		if errors.Is(err, wal.ErrCorrupt) {
			return nil, fmt.Errorf("items: the item store %s is damaged (%w); move it aside to start an empty store: its items are then evaluated again", s.logPath, err)
		}
		return nil, fmt.Errorf("items: open store: %w", err)
	}
	if n := l.Headless(); n > 0 && opts.Warn != nil {
		opts.Warn(fmt.Sprintf("the item store %s held %d bytes without a valid header (zeros, or cut short: damaged, or never written to disk), and no result could be read from them; it starts empty, and its items are evaluated again", s.logPath, n))
	}
	s.log = l
	// Sized once for the records the log holds: a map grown as it fills
	// copies itself at each doubling and ends up to twice as big.
	s.index = newKeyIndex(l.Records())
	if s.rd, err = os.Open(s.logPath); err != nil {
		l.Close()
		return nil, fmt.Errorf("items: open store: %w", err)
	}
	if err := s.Refresh(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Dir is the store's directory (<cache>/items), where its claims file lives.
func (s *Store) Dir() string { return s.dir }

// Close closes the log.
func (s *Store) Close() error {
	return errors.Join(s.log.Close(), s.rd.Close())
}

// Refresh reads the records other processes appended since the last read.
// It reads through the store's open file: an evaluation refreshes before
// each claim, and a log that did not grow costs one lseek, where opening
// the log each time cost an open, a stat and a close (and their
// allocations).
func (s *Store) Refresh() error {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	size, err := s.rd.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("items: read store %s: %w", s.logPath, err)
	}
	if size <= s.next {
		return nil
	}
	return s.readTail(size)
}

// readTail indexes the records from s.next to size; refreshMu is held.
func (s *Store) readTail(size int64) error {
	// Records are indexed in batches, one lock each: a lock per record
	// was a tenth of opening a store of a million.
	batch := s.batch[:0]
	flush := func() {
		s.mu.Lock()
		for _, x := range batch {
			s.addLocked(x.kb, x.e)
		}
		s.mu.Unlock()
		batch = batch[:0]
	}
	st, err := wal.ReadAt(s.rd, s.logPath, s.next, size, func(off int64, p []byte) error {
		if wal.Blanked(p) {
			return nil // a damaged record, blanked: no result
		}
		e, kb, err := decodeEntry(p)
		if err != nil {
			return fmt.Errorf("%w at offset %d: %w", ErrBadRecord, off, err)
		}
		e.off = off
		if batch = append(batch, indexed{kb, e}); len(batch) == refreshBatch {
			flush()
		}
		return nil
	})
	flush()
	s.batch = batch
	if st.Next > s.next {
		s.next = st.Next
	}
	if err != nil {
		return fmt.Errorf("items: read store %s: %w", s.logPath, err)
	}
	return nil
}

// refreshBatch is how many records Refresh indexes under one lock.
const refreshBatch = 4096

// indexed is a record read from the log, to index.
type indexed struct {
	kb [32]byte
	e  entry
}

// addLocked indexes one record read from the log; s.mu is held.
func (s *Store) addLocked(kb [32]byte, e entry) {
	s.records++
	i, had := s.index.add(kb, e)
	old := s.index.ents[i].e
	switch {
	case !had:
	case old.off < 0:
		// This process appended the key and now reads the key's first
		// record back: its own, or an earlier one from another process,
		// which wins either way.
		delete(s.own, kb)
		s.index.ents[i].e = e
	case old.off != e.off:
		s.dups++
	}
}

// Has reports whether key has a result.
func (s *Store) Has(key string) bool {
	kb, err := parseKey(key)
	if err != nil {
		return false
	}
	return s.has(kb)
}

func (s *Store) has(kb [32]byte) bool {
	s.mu.RLock()
	_, ok := s.index.get(kb)
	s.mu.RUnlock()
	return ok
}

// Score returns the score and charge of key's result without reading the
// log: ok is false when key has no result, hasScore when its result has no
// score.
func (s *Store) Score(key string) (score float64, hasScore bool, charged int, ok bool) {
	kb, err := parseKey(key)
	if err != nil {
		return 0, false, 0, false
	}
	return s.score(kb)
}

func (s *Store) score(kb [32]byte) (float64, bool, int, bool) {
	s.mu.RLock()
	e, ok := s.index.get(kb)
	s.mu.RUnlock()
	return e.score, e.flags&flagScore != 0, e.chargedInt(), ok
}

// Get returns key's full result, reading its outputs from the log.
func (s *Store) Get(key string) (Result, bool, error) {
	kb, err := parseKey(key)
	if err != nil {
		return Result{}, false, err
	}
	s.mu.RLock()
	e, ok := s.index.get(kb)
	own := s.own[kb]
	s.mu.RUnlock()
	if !ok {
		return Result{}, false, nil
	}
	if e.off < 0 {
		r, err := decodeResult(own)
		return r, true, err
	}
	p, err := wal.ReadRecord(s.rd, s.logPath, e.off)
	if err != nil {
		return Result{}, true, fmt.Errorf("items: read result %s: %w", key, err)
	}
	if len(p) < recHeader || [32]byte(p[1:33]) != kb {
		return Result{}, true, fmt.Errorf("%w: the record at offset %d is not %s's", ErrBadRecord, e.off, key)
	}
	r, err := decodeResult(p)
	if err != nil {
		return Result{}, true, fmt.Errorf("%w at offset %d: %w", ErrBadRecord, e.off, err)
	}
	return r, true, nil
}

// GetAll returns the full results of keys, in their order: has[i] is
// false where keys[i] has no result. It reads the log once, in offset
// order, through one open file, where a Get per key opens it each time.
func (s *Store) GetAll(keys []string) (res []Result, has []bool, err error) {
	res, has = make([]Result, len(keys)), make([]bool, len(keys))
	at := make(map[int64][]int) // log offset -> indexes into keys
	offs := make([]int64, 0, len(keys))
	kbs := make([][32]byte, len(keys))
	s.mu.RLock()
	for i, key := range keys {
		kb, perr := parseKey(key)
		if perr != nil {
			s.mu.RUnlock()
			return nil, nil, perr
		}
		kbs[i] = kb
		e, ok := s.index.get(kb)
		if !ok {
			continue
		}
		has[i] = true
		if e.off < 0 {
			if res[i], err = decodeResult(s.own[kb]); err != nil {
				s.mu.RUnlock()
				return nil, nil, fmt.Errorf("items: read result %s: %w", key, err)
			}
			continue
		}
		if _, seen := at[e.off]; !seen {
			offs = append(offs, e.off)
		}
		at[e.off] = append(at[e.off], i)
	}
	s.mu.RUnlock()
	err = wal.ReadRecords(s.logPath, offs, func(off int64, p []byte) error {
		r, err := decodeResult(p)
		if err != nil {
			return fmt.Errorf("%w at offset %d: %w", ErrBadRecord, off, err)
		}
		for _, i := range at[off] {
			if !bytes.Equal(p[1:33], kbs[i][:]) {
				return fmt.Errorf("%w: the record at offset %d is not %s's", ErrBadRecord, off, keys[i])
			}
			res[i] = r
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("items: read results from %s: %w", s.logPath, err)
	}
	return res, has, nil
}

// Put stores r under key unless key already has a result. It returns when
// the record is durable.
func (s *Store) Put(key string, r Result) error {
	return s.PutBatch([]Record{{Key: key, Result: r}})
}

// PutBatch stores each record whose key has no result yet, in one group
// commit, and returns when they are durable. Callers that may race with
// another process hold the items' claims and Refresh first.
func (s *Store) PutBatch(recs []Record) error {
	type enc struct {
		kb [32]byte
		e  entry
		p  []byte
	}
	encs := make([]enc, 0, len(recs))
	payloads := make([][]byte, 0, len(recs))
	seen := make(map[[32]byte]bool, len(recs))
	for _, rec := range recs {
		kb, err := parseKey(rec.Key)
		if err != nil {
			return err
		}
		if seen[kb] || s.has(kb) {
			continue
		}
		seen[kb] = true
		p := encodeRecord(kb, rec.Result)
		e, _, _ := decodeEntry(p)
		e.off = -1
		encs = append(encs, enc{kb, e, p})
		payloads = append(payloads, p)
	}
	if len(payloads) == 0 {
		return nil
	}
	if err := s.log.Append(payloads, wal.Durable); err != nil {
		return fmt.Errorf("items: append results: %w", err)
	}
	s.mu.Lock()
	for _, x := range encs {
		if _, had := s.index.add(x.kb, x.e); had {
			continue // read back by a concurrent Refresh already
		}
		s.own[x.kb] = x.p
	}
	s.mu.Unlock()
	return nil
}

// Len is the number of item keys with a result.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.index.len()
}

// Stats describes the records read so far.
func (s *Store) Stats() StoreStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return StoreStats{Items: s.index.len(), Records: s.records, Duplicates: s.dups}
}

// ScanStore reads every record of the store in cacheDir in log order,
// without loading an index: fn gets each record's key and result.
func ScanStore(cacheDir string, fn func(key string, r Result) error) error {
	path := filepath.Join(cacheDir, storeSubdir, logName)
	_, err := wal.Read(path, func(off int64, p []byte) error {
		if wal.Blanked(p) {
			return nil
		}
		if len(p) < recHeader {
			return fmt.Errorf("%w at offset %d: short", ErrBadRecord, off)
		}
		r, err := decodeResult(p)
		if err != nil {
			return fmt.Errorf("%w at offset %d: %w", ErrBadRecord, off, err)
		}
		return fn(hex.EncodeToString(p[1:33]), r)
	})
	if err != nil {
		return fmt.Errorf("items: scan store %s: %w", path, err)
	}
	return nil
}

func parseKey(key string) ([32]byte, error) {
	var kb [32]byte
	if len(key) != 64 {
		return kb, fmt.Errorf("%w: %q", ErrBadKey, key)
	}
	if _, err := hex.Decode(kb[:], []byte(key)); err != nil {
		return kb, fmt.Errorf("%w: %q", ErrBadKey, key)
	}
	return kb, nil
}

func encodeRecord(kb [32]byte, r Result) []byte {
	p := make([]byte, recHeader, recHeader+len(r.Error)+len(r.Outputs))
	p[0] = recordVersion
	copy(p[1:33], kb[:])
	if r.Score != nil {
		p[33] = flagScore
		binary.LittleEndian.PutUint64(p[34:42], math.Float64bits(*r.Score))
	}
	charged := max(int64(r.Charged), 0)
	binary.LittleEndian.PutUint32(p[42:46], uint32(min(charged, math.MaxUint32)))
	binary.LittleEndian.PutUint32(p[46:50], uint32(len(r.Error)))
	p = append(p, r.Error...)
	p = append(p, r.Outputs...)
	return p
}

func decodeEntry(p []byte) (entry, [32]byte, error) {
	var kb [32]byte
	if len(p) < recHeader {
		return entry{}, kb, fmt.Errorf("payload of %d bytes is shorter than the %d-byte header", len(p), recHeader)
	}
	if p[0] != recordVersion {
		return entry{}, kb, fmt.Errorf("unknown record version %d", p[0])
	}
	if n := binary.LittleEndian.Uint32(p[46:50]); int64(n) > int64(len(p)-recHeader) {
		return entry{}, kb, fmt.Errorf("error text of %d bytes overruns the payload", n)
	}
	copy(kb[:], p[1:33])
	return entry{
		score:   math.Float64frombits(binary.LittleEndian.Uint64(p[34:42])),
		charged: binary.LittleEndian.Uint32(p[42:46]),
		flags:   p[33],
	}, kb, nil
}

func decodeResult(p []byte) (Result, error) {
	e, _, err := decodeEntry(p)
	if err != nil {
		return Result{}, err
	}
	r := Result{Charged: e.chargedInt()}
	if e.flags&flagScore != 0 {
		sc := e.score
		r.Score = &sc
	}
	n := int(binary.LittleEndian.Uint32(p[46:50]))
	r.Error = string(p[recHeader : recHeader+n])
	if rest := p[recHeader+n:]; len(rest) > 0 {
		r.Outputs = json.RawMessage(append([]byte(nil), rest...))
	}
	return r, nil
}
