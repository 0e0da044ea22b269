// Package runlog is a run's journal: the records an apply writes as it
// goes (run start, planned, started, finished, failed, ... run end), in a
// write-ahead log under the cache's runs folder, and the reading of them
// back: for `cairn status`, and for recovery after a crash.
package runlog

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gofrs/flock"

	"github.com/cairn-run/cairn/dsl/addrs"
	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/failpoint"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/storage/wal"
)

// sharedLock creates a run's lock file readable and writable by everyone
// the umask lets in, as store's cache locks are: a shared cache's runs
// are read by its other users.
var sharedLock = flock.SetPermissions(0o666)

// Journal record types. Every record is one JSON object with a "t" field.
const (
	RunStart   = "run_start" // run id, pipeline, pid, start time, args
	Planned    = "planned"   // a node the run intends to finish (address, key when known)
	Cached     = "cached"    // a node taken from the cache
	Started    = "started"   // a node's job started: its job reference (and, for a local process, pid, pgid, process start time), attempt, leases
	Lease      = "lease"     // GPU devices leased to a node (and its wave, for batches)
	Finished   = "finished"  // a node finished: its record is committed to the cache
	Failed     = "failed"    // an attempt failed, with its class
	Skipped    = "skipped"   // not run because an upstream failed
	Charged    = "charged"   // budget accounting (item-level work)
	BatchEvent = "batch"     // a GPU batch started or ended
	Waiting    = "waiting"   // the executor (or a node, for GPUs) waits for something it cannot go on without (status "waiting"), or no longer ("over")
	RunEnd     = "run_end"   // the run ended: ok, failed, interrupted
	// Serve is an event of a service node (a serve stage) or one of its
	// replicas: its status says which (not_started, queued, running, ready,
	// serving, down, restarting, failed, stopped, gpus_freed, gpus_not_freed,
	// port_skipped), with the replica's pid, port, GPUs and endpoint.
	Serve = "serve"
)

// Entry is one journal record.
type Entry struct {
	T    string    `json:"t"`
	Time time.Time `json:"time"`
	Node string    `json:"node,omitempty"`
	Key  string    `json:"key,omitempty"`
	// Kind is the node's kind (started and failed records): what the
	// report shows of a node that ends with no record.
	Kind    string `json:"kind,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// Job names a started node's job as its executor knows it; a
	// journal written before job references has none, and its started
	// records name a local process by PID, PGID and ProcTick alone.
	Job *process.JobRef `json:"job,omitempty"`
	// A local process (and, in a run_start record, the apply itself);
	// written beside Job for a local job, so that a cairn that knows no
	// job references reaps it too.
	PID      int    `json:"pid,omitempty"`
	PGID     int    `json:"pgid,omitempty"`
	ProcTick uint64 `json:"proc_start,omitempty"` // process start time in clock ticks since boot (/proc/PID/stat field 22)
	GPUs     []int  `json:"gpus,omitempty"`
	Wave     int    `json:"wave,omitempty"`
	Class    string `json:"class,omitempty"`
	// Left: the failed attempt's job was left running at an interrupt
	// (cairn apply --leave-jobs), for a later apply to re-attach to.
	Left bool `json:"left_running,omitempty"`
	// OnInterrupt is "fail" in the started and failed records of a node
	// whose stage declares on_interrupt = "fail", empty otherwise: gc
	// reads it to keep the runs whose interruptions apply refuses to
	// restart silently, without the pipeline at hand.
	OnInterrupt string  `json:"on_interrupt,omitempty"`
	Message     string  `json:"message,omitempty"`
	Status      string  `json:"status,omitempty"`
	Duration    float64 `json:"duration_s,omitempty"`
	PeakRSS     float64 `json:"peak_rss_mib,omitempty"`
	PeakGPU     float64 `json:"peak_gpu_mib,omitempty"`
	// Queued is a cluster job's wait in its scheduler's queue before it
	// started (finished and failed records), in seconds.
	Queued float64  `json:"queued_s,omitempty"`
	Logs   []string `json:"logs,omitempty"`
	Count  int      `json:"count,omitempty"`
	Item   string   `json:"item,omitempty"` // an evaluated item's id (charged records)
	// A service replica's number (from 1), port and endpoint (serve
	// records).
	Replica  int    `json:"replica,omitempty"`
	Port     int    `json:"port,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	// Counts are a finished or failed node's run counts (an evaluation's
	// items evaluated now and from the store, rollouts charged...).
	Counts map[string]int `json:"counts,omitempty"`
	// Run-level fields.
	RunID    string   `json:"run_id,omitempty"`
	Pipeline string   `json:"pipeline,omitempty"`
	Args     []string `json:"args,omitempty"`
	// Rerun are a run_start's arguments that run the same configuration
	// again, where they differ from Args: the variables taken from
	// CAIRN_VAR_ given as --var, an applied plan file's pipeline,
	// variables and targets in its place (sensitive values redacted).
	Rerun []string `json:"rerun,omitempty"`
	// Host, Dir and Version are a run_start's machine, the folder cairn
	// was started in, and cairn's version: with Args, how to run it again
	// (`cairn report`).
	Host    string `json:"host,omitempty"`
	Dir     string `json:"dir,omitempty"`
	Version string `json:"version,omitempty"`
	// Devices are the GPUs the run could lease (run_start).
	Devices []Device `json:"devices,omitempty"`
	// Reasons are a planned node's plan reasons ("input x changed").
	Reasons []string `json:"reasons,omitempty"`
	// Waits are a planned node's upstreams that order it without keying
	// it (wait_for, a postcondition's references), by address: what it
	// waits for, which its record does not name.
	Waits []string `json:"waits,omitempty"`
	Batch *Batch   `json:"batch,omitempty"`
}

// Device is a GPU a run could lease: its index, name and memory.
type Device struct {
	Index     int    `json:"index"`
	Name      string `json:"name,omitempty"`
	MemoryMiB uint64 `json:"memory_mib,omitempty"`
}

// Batch describes a GPU batch (a waves stage) for status and the ledger.
type Batch struct {
	ID       string    `json:"id"`
	Tag      string    `json:"tag,omitempty"`
	Stage    string    `json:"stage"`
	Start    time.Time `json:"start"`
	LogDir   string    `json:"log_dir"`
	Variants []string  `json:"variants"`
	State    string    `json:"state"` // RUNNING, DONE, FAILED, INTERRUPTED
	// Debug is set when the run launched only the variants --target
	// named (a debugging run, its results marked so), not the batch.
	Debug bool `json:"debug,omitempty"`
	// Ledger is the in-flight ledger holding the batch's row (absolute),
	// so that recovery can mark the row of a batch whose cairn died.
	Ledger string `json:"ledger,omitempty"`
}

// Journal is a run's write-ahead log.
type Journal struct {
	RunID    string
	Dir      string
	log      *wal.Log // holds the run's lock while open
	pipeline string   // from the run_start record, for the end marker

	// cached holds NoteCached records not handed to the log yet: they go
	// in one write, ahead of the next other record (or at Close).
	mu     sync.Mutex
	cached [][]byte
	// mustSync is set once a record other than run_start and notes was
	// journaled: the run_end record is durable then, and only then.
	mustSync atomic.Bool

	// OnError, when set, is called with the first error writing the
	// journal (a full disk), once. Set it before the first record.
	OnError func(error)
	errMu   sync.Mutex
	err     error // the first write error (Err)
}

// failed keeps err, the journal's first write error, and returns it.
func (j *Journal) failed(err error) error {
	if err == nil {
		return nil
	}
	j.errMu.Lock()
	first := j.err == nil
	if first {
		j.err = err
	}
	j.errMu.Unlock()
	if first && j.OnError != nil {
		j.OnError(err)
	}
	return err
}

// Err is the first error writing the journal, whatever record it was
// (a note's included): nil when every record was written. A record that
// failed is missing from the journal, and later ones may be too.
func (j *Journal) Err() error {
	j.errMu.Lock()
	defer j.errMu.Unlock()
	return j.err
}

// Path is the journal file.
func (j *Journal) Path() string { return filepath.Join(j.Dir, "journal") }

// maxCachedNotes is how many cached-node records wait for one write.
const maxCachedNotes = 512

// flushCached hands the waiting cached-node records to the log, ahead of
// whatever is appended next.
func (j *Journal) flushCached() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.cached) == 0 {
		return nil
	}
	err := j.log.Append(j.cached, wal.Queued)
	j.cached = nil
	return err
}

// endMarker is what a run writes into its lock file once its run_end
// record is written: a later apply learns how the run ended without
// reading its journal.
type endMarker struct {
	Pipeline string `json:"pipeline"`
	Status   string `json:"status"`
}

// lockFile names, inside a run folder, the file the run holds locked
// while it lives, and that holds its end marker once it ended.
const lockFile = "lock"

// endedFile names, inside a run folder, where the end marker is when the
// lock file could not take it (another user's run), and where a cairn
// before the marker moved into the lock file put it.
const endedFile = "ended"

// writeEndMarker records how a run ended. It is a hint: without it, the
// journal is read. It goes into the run's lock file, which is there
// already: a file made for it cost every apply a new inode, which ext4 is
// slow to find after many deletions (about 0.5 ms of a no-op apply right
// after a large workspace was removed).
func writeEndMarker(dir string, m endMarker) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	b = append(b, '\n')
	if f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_WRONLY, 0); err == nil {
		_, werr := f.WriteAt(b, 0)
		terr := f.Truncate(int64(len(b)))
		if cerr := f.Close(); werr == nil && terr == nil && cerr == nil {
			return
		}
	}
	_ = os.WriteFile(filepath.Join(dir, endedFile), b, 0o666)
}

// readEndMarker returns the end marker of a run folder, or nil.
func readEndMarker(dir string) *endMarker {
	for _, name := range []string{lockFile, endedFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(b) == 0 {
			continue
		}
		var m endMarker
		if json.Unmarshal(b, &m) == nil && m.Status != "" {
			return &m
		}
	}
	return nil
}

// NewRunID returns a sortable, unique run id. The time has milliseconds,
// so runs started within the same second still sort in start order.
func NewRunID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format(runIDTime) + "-" + hex.EncodeToString(b[:])
}

// runIDTime is the layout of a run id's start time.
const runIDTime = "20060102T150405.000Z"

// IsRunID reports whether s has the form of a run id (NewRunID's): a
// start time, a dash and hex digits.
func IsRunID(s string) bool {
	when, suffix, ok := strings.Cut(s, "-")
	if !ok || len(when) != len(runIDTime) || suffix == "" {
		return false
	}
	if _, err := time.Parse(runIDTime, when); err != nil {
		return false
	}
	return strings.Trim(suffix, "0123456789abcdef") == ""
}

// Open creates a run folder and its journal. The run's lock file
// is held while the run lives: `cairn status` tells a live run from one
// whose process is gone.
func Open(cacheDir, runID string, noSync bool) (*Journal, error) {
	dir := filepath.Join(cacheDir, "runs", runID)
	// The logs folder is made when the first node runs: an apply that
	// runs nothing leaves none.
	if err := os.MkdirAll(filepath.Dir(dir), 0o777); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	err := os.Mkdir(dir, 0o777)
	made := err == nil
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("journal: %w", err)
	}
	// Lazy: a run that journals nothing but its start, notes and its end
	// (every node cached) costs no fsync. The journal's single-writer lock
	// is the run's lock file, held as long as the journal is open: one
	// file less for every apply to make (after many deletions ext4 is slow
	// to find a free inode).
	l, err := wal.Open(filepath.Join(dir, "journal"), wal.Options{NoSync: noSync, Lazy: true, LockPath: filepath.Join(dir, lockFile)})
	if errors.Is(err, wal.ErrLocked) {
		return nil, fmt.Errorf("journal: cannot lock run %s: %w", runID, err)
	}
	if err != nil {
		// A run folder with no journal to read would be listed as a
		// damaged run: the folder, if made just now, goes.
		if made {
			_ = os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("journal: %w", err)
	}
	return &Journal{RunID: runID, Dir: dir, log: l}, nil
}

// Write appends one record and returns when it is durable (records
// written concurrently share one fsync). Two records are only written: a
// run_start (the first durable record syncs it), and the run_end of a run
// that journaled nothing but notes (its nodes were all cached or skipped:
// a power loss that takes the journal takes information only).
func (j *Journal) Write(e Entry) error {
	mode := wal.Durable
	if e.T == RunStart || e.T == RunEnd && !j.mustSync.Load() {
		mode = wal.Written
	}
	if err := j.appendEntry(e, mode); err != nil {
		return err
	}
	switch e.T {
	case RunStart:
		j.pipeline = e.Pipeline
	case RunEnd:
		writeEndMarker(j.Dir, endMarker{Pipeline: j.pipeline, Status: e.Status})
	}
	return nil
}

// WriteUnsynced appends a record and returns once it is in the file, without
// waiting for an fsync: a kill -9 of cairn cannot lose it, a power loss
// (which ends every process too) can. It is for the start of a node's
// process, whose record matters for reaping what a killed apply left running.
func (j *Journal) WriteUnsynced(e Entry) error {
	return j.appendEntry(e, wal.Written)
}

// Note appends a record without waiting for it to be written: it is for
// records whose loss in a crash costs only information (a node taken from
// the cache, skipped, or finished with its result already committed to
// the cache). It reaches the file before any record written after it, and
// Close waits for it.
func (j *Journal) Note(e Entry) error {
	return j.appendEntry(e, wal.Queued)
}

// appendEntry appends one record (see appendEntries).
func (j *Journal) appendEntry(e Entry, mode wal.Durability) error {
	return j.appendEntries([]Entry{e}, mode)
}

// appendEntries encodes records (their time defaulting to now) and appends
// them, next to each other, after the cached-node records waiting for a
// write. mode is the log's: Write's records are Durable (but run_start,
// and a notes-only run's run_end, Written), WriteUnsynced's Written,
// Note's Queued, WriteBatch's Durable.
func (j *Journal) appendEntries(es []Entry, mode wal.Durability) error {
	payloads := make([][]byte, 0, len(es))
	now := time.Now().UTC()
	for _, e := range es {
		if e.Time.IsZero() {
			e.Time = now
		}
		b, err := marshalEntry(&e)
		if err != nil {
			return err
		}
		payloads = append(payloads, b)
	}
	if err := j.flushCached(); err != nil {
		return j.failed(err)
	}
	if err := failpoint.JournalWrite(len(payloads)); err != nil {
		return j.failed(err)
	}
	if mode != wal.Queued {
		for _, e := range es {
			if e.T != RunStart && e.T != RunEnd {
				j.mustSync.Store(true)
			}
		}
	}
	if err := j.log.Append(payloads, mode); err != nil {
		return j.failed(err)
	}
	for range payloads {
		failpoint.AfterRecord()
	}
	return nil
}

// NoteCached is Note for the commonest record of a no-op apply, a node
// taken from the cache, encoded by hand: a JSON encoder's reflection would
// cost more than the rest of the record's handling. Consecutive cached
// records share one write, made before the next other record.
func (j *Journal) NoteCached(node, key string) error {
	return j.queueCached(appendCached(make([]byte, 0, cachedSize(node, key)), time.Now().UTC().AppendFormat(nil, time.RFC3339Nano), node, key))
}

// queueCached adds a cached record to those waiting for one write, and
// writes them when they are many.
func (j *Journal) queueCached(b []byte) error {
	j.mu.Lock()
	j.cached = append(j.cached, b)
	full := len(j.cached) >= maxCachedNotes
	j.mu.Unlock()
	if full {
		if err := j.flushCached(); err != nil {
			return j.failed(err)
		}
	}
	failpoint.AfterRecord() // a NoteCached record: taken in
	return nil
}

// cachedSize is about how long a cached record is, without its time.
func cachedSize(node, key string) int { return 64 + len(node) + len(key) }

// appendCached appends the cached record of node and key taken at the
// time now (RFC 3339, with nanoseconds).
func appendCached(b, now []byte, node, key string) []byte {
	b = append(b, `{"t":"`+Cached+`","time":"`...)
	b = append(b, now...)
	b = append(b, `","node":`...)
	b = appendJSONString(b, node)
	if key != "" {
		b = append(b, `,"key":`...)
		b = appendJSONString(b, key)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, valid UTF-8 kept as it is, invalid bytes
// replaced as encoding/json does. Runs of bytes that need nothing are
// copied whole (an address's quotes are the only escapes most have).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
			i++
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			b = utf8.AppendRune(b, r) // utf8.RuneError for an invalid byte
			i += size
		}
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// WriteBatch appends records with one write and returns when they are
// durable.
func (j *Journal) WriteBatch(es []Entry) error {
	return j.appendEntries(es, wal.Durable)
}

// WriteBatchUnsynced appends records with one write and returns once they
// are in the file, as WriteUnsynced does one: for records that repeat what
// is durable elsewhere (an evaluation's charged items, each stored in the
// item store before its record is written), so that a power loss takes
// information only. The next durable record syncs them.
func (j *Journal) WriteBatchUnsynced(es []Entry) error {
	return j.appendEntries(es, wal.Written)
}

// Syncs is how many times the journal has synced its file.
func (j *Journal) Syncs() int64 { return j.log.Syncs() }

// Close flushes and releases the run lock.
func (j *Journal) Close() error {
	ferr := j.flushCached()
	return j.failed(errors.Join(ferr, j.log.Close())) // and the run's lock goes
}

// Read returns a run's records. A torn last record (the run was
// killed while writing it) is ignored. A stretch damaged in the middle
// (a flipped bit) is passed over: the records after it are read, and the
// error says where the first damage is; the records in it are lost (a
// node's started or finished record, say).
func Read(dir string) ([]Entry, error) {
	var out []Entry
	var first error
	path := filepath.Join(dir, "journal")
	for off := int64(0); ; {
		_, err := wal.ReadFrom(path, off, func(_ int64, p []byte) error {
			var e Entry
			if json.Unmarshal(p, &e) == nil {
				out = append(out, e)
			}
			return nil
		})
		if err != nil && first == nil {
			first = err
		}
		var ce *wal.CorruptError
		if errors.As(err, &ce) && ce.Next > ce.Offset && ce.Next > off {
			off = ce.Next
			continue
		}
		return out, first
	}
}

// RunInfo summarises a run for `cairn status`.
type RunInfo struct {
	ID       string
	Dir      string
	Pipeline string
	PID      int
	Start    time.Time
	End      time.Time
	State    string // running, ok, failed, interrupted
	Entries  []Entry
	// UpToDate is, for a run the up-to-date check answered (a line of the
	// up-to-date log: no folder, no entries), its nodes, every one cached.
	UpToDate int
	// Damaged says why the run's journal was not read whole (a damaged
	// record, a journal cut before its first record); "" when it was. The
	// start, pipeline and counts of a damaged run may be unknown: Start
	// is zero when no run_start record was read.
	Damaged string
	readErr error // Read's error, entries read before it or none
}

// Ended is when the run ended: the time of its run_end record or, for a
// run without one (killed, its journal cut short), of its last record,
// the latest time its journal holds; for a run of the up-to-date log,
// when its apply ended. gc ages runs by it, as it ages records by the time
// their node ended. Zero when no record was read.
func (ri *RunInfo) Ended() time.Time {
	end := ri.End
	for _, e := range ri.Entries {
		if e.Time.After(end) {
			end = e.Time
		}
	}
	return end
}

// List reads every run of a cache, newest first: its run folders and the
// runs of its up-to-date log.
func List(cacheDir string) ([]*RunInfo, error) {
	ds, err := dirs(cacheDir)
	if err != nil {
		return nil, err
	}
	var runs []*RunInfo
	for _, dir := range ds {
		ri, err := Load(dir)
		if err != nil {
			continue
		}
		runs = append(runs, ri)
	}
	quick, err := ReadUpToDate(cacheDir)
	if err != nil {
		return nil, err
	}
	for _, r := range quick {
		runs = append(runs, r.Info())
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID > runs[j].ID })
	return runs, nil
}

// errStarted ends a read of a journal at its run_start record (Starts).
var errStarted = errors.New("run_start read")

// Starts returns the run_start record of each run folder of a cache,
// oldest first, reading each journal up to that record only: what each
// run was started with (its Args, Rerun and Dir), for a command that must
// not write over a file some run read (a --var-file). A run whose journal
// holds none (cut short, damaged at its start) is left out.
func Starts(cacheDir string) ([]Entry, error) {
	ds, err := dirs(cacheDir)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, dir := range ds {
		var start Entry
		_, err := wal.ReadFrom(filepath.Join(dir, "journal"), 0, func(_ int64, p []byte) error {
			var e Entry
			if json.Unmarshal(p, &e) == nil && e.T == RunStart {
				start = e
				return errStarted
			}
			return nil
		})
		if errors.Is(err, errStarted) {
			out = append(out, start)
		}
	}
	return out, nil
}

// dirs lists a cache's run folders, oldest first (run ids sort by
// time); none when the cache has no runs yet.
func dirs(cacheDir string) ([]string, error) {
	ds, _, err := dirsAfter(cacheDir, "")
	return ds, err
}

// dirsAfter returns the run folders of a cache whose ids sort after
// after, oldest first, and whether a run folder named after is there.
// Only those names are sorted and joined: recovery looks at the runs
// after the settled one, however many came before.
func dirsAfter(cacheDir, after string) ([]string, bool, error) {
	base := filepath.Join(cacheDir, "runs")
	f, err := os.Open(base)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return nil, false, err
	}
	var names []string
	seen := false
	for _, e := range ents {
		switch name := e.Name(); {
		case !e.IsDir():
		case name > after:
			names = append(names, name)
		case name == after:
			seen = true
		}
	}
	slices.Sort(names)
	dirs := make([]string, len(names))
	for i, name := range names {
		dirs[i] = filepath.Join(base, name)
	}
	return dirs, seen, nil
}

// Load reads one run folder. A journal that is damaged, or cut before its
// first record, gives a RunInfo all the same, with Damaged saying so: the
// run is shown, not left out. Only a folder without a journal is an error.
func Load(dir string) (*RunInfo, error) {
	ri := &RunInfo{ID: filepath.Base(dir), Dir: dir}
	entries, err := Read(dir)
	if err != nil && len(entries) == 0 && errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	ri.Entries, ri.readErr = entries, err
	if err != nil {
		ri.Damaged = fmt.Sprintf("its journal is damaged (%s); the records in the damaged stretch are lost", err)
	}
	for _, e := range entries {
		switch e.T {
		case RunStart:
			ri.Pipeline, ri.PID, ri.Start = e.Pipeline, e.PID, e.Time
		case RunEnd:
			ri.State, ri.End = e.Status, e.Time
		}
	}
	if ri.State == "" {
		if Alive(dir) {
			ri.State = "running"
		} else {
			ri.State = "interrupted"
		}
	}
	if ri.Start.IsZero() && ri.Damaged == "" && ri.State != "running" {
		// A live run may not have written its first record yet.
		ri.Damaged = "its journal holds no run_start record (cut short, or damaged): its start and pipeline are unknown"
	}
	return ri, nil
}

// Alive reports whether the run's process still holds its lock.
func Alive(dir string) bool {
	lk := flock.New(filepath.Join(dir, lockFile), sharedLock)
	ok, err := lk.TryLock()
	if err != nil {
		return false
	}
	if ok {
		_ = lk.Unlock()
		return false
	}
	return true
}

// LogStem is the stem of the logs named name (a NodeLogName) inside a
// run folder.
func LogStem(runDir, name string) string {
	return filepath.Join(runDir, "logs", name)
}

// NodeLogName is the FileName of a node's address: the stem of its logs
// and the name of its scratch folder. Every node of a graph
// has one that parses: the graph printed it.
func NodeLogName(addr string, attempt int) string {
	n, err := addrs.Parse(addr)
	if err != nil {
		panic("cairn: a node's address does not parse: " + err.Error())
	}
	return n.FileName(attempt)
}

// Stopped reports whether a failed record of class class, in a run whose
// state is runState, is an attempt cairn stopped because it was
// interrupted (Ctrl-C, SIGTERM): its node is interrupted, as a node a
// killed run left running is, not failed, and the attempt is no failed
// attempt. A failure of class interrupted in a run that was not
// interrupted (a process an earlier, killed apply started, whose end
// cannot be read) is a failure.
func Stopped(class, runState string) bool {
	return class == failclass.Interrupted && runState == "interrupted"
}

// AttemptSeconds is an attempt's own run time, in seconds, from its
// start and the finished or failed record that ended it: the record's
// duration_s (its process's own run time, as apply's "ok in" line and
// duration_s add them) where it has one, else from its start to the
// record; 0 where it did not start. A node's duration is the sum of its
// attempts'.
func AttemptSeconds(start time.Time, end Entry) float64 {
	switch {
	case end.Duration > 0:
		return end.Duration
	case start.IsZero() || end.Time.Before(start):
		return 0
	}
	return end.Time.Sub(start).Seconds()
}
