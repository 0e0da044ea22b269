// Package wal is the append-only record log under cairn's run journals
// (.cairn/runs/<run-id>/journal), the cache's action index (.cairn/index.log)
// and the evaluation item store.
//
// # File format
//
// All integers are little-endian.
//
//	file    = magic *record
//	magic   = "CAIRNWL1"   8 bytes: "CAIRNWL" and the format version '1'
//	record  = length crc payload padding
//	length  = uint32       payload length in bytes, at most MaxRecordSize
//	crc     = uint32       CRC-32C (Castagnoli) of the 4 length bytes followed by the payload
//	payload = length bytes
//	padding = 0 to 7 zero bytes, so that the next record starts at a multiple of 8
//
// The first record starts at byte 8 and every record starts at a multiple of 8.
// The checksum covers the length as well as the payload, so a flipped length bit is
// caught directly and an all-zero header is never a valid record: a zero-filled tail
// (space the file system allocated but no write filled) reads as a torn tail, not as
// a run of empty records.
//
// # Torn tails and corruption
//
// A record is bad when its header is cut short, its length is over MaxRecordSize,
// its padded extent runs past the end of the file, its checksum does not match, or
// its padding is not zero. The first bad record decides what the file is:
//
//   - Torn tail: no valid record starts at any 8-byte boundary after the bad one.
//     This is what a writer killed in the middle of a write leaves behind, and what a
//     reader sees while a writer in another process is still writing. Read reports it
//     in ReadStats and changes nothing on disk; Open, and in Shared mode every commit,
//     truncates the file back to the end of the last valid record.
//     The search after the bad record is bounded (a torn record of binary data can
//     hold many plausible-looking headers); when the bound is reached, the shape of
//     the bad record decides: one cut off by the end of the file, or followed only by
//     zeros, is torn, anything else is corruption.
//   - Corruption: a valid record follows the bad one, so records were damaged after
//     they had been written. Read and Open return a *CorruptError (wrapping ErrCorrupt)
//     that names the byte offset of the bad record, and nothing is truncated.
//
// # Writing
//
// A Log has one goroutine that owns the file. Append queues its records and, for a
// Durable append, waits; the committer takes everything queued (up to
// Options.MaxBatch records), writes it with one write call, fsyncs once and wakes
// every waiter, so concurrent appenders share the cost of an fsync (group commit).
// A Written append waits for the write only, a Queued one not at all; their records
// are synced by the next durable commit, Sync or Close. After a failed write
// the partial bytes are cut off again; after a failed fsync the Log refuses further
// appends, because what reached the disk is no longer known.
//
// Without Options.Shared or Options.NoSync, a Log writes zeros ahead of its records
// and writes the records over them in place, so that its syncs (fdatasync) change
// neither the file's size nor its block map; the zeros past the last record read as
// a torn tail, which Close and, after a crash, Open cut off.
//
// Each log has a sidecar lock file, "<path>.lock" (or Options.LockPath). Without
// Options.Shared, Open takes an exclusive flock on it for the life of the Log, so a second writer (say, a second
// apply of the same run) fails with ErrLocked instead of interleaving records. With
// Options.Shared, several processes append to one file: each commit takes the lock,
// checks the bytes other processes appended since this Log last looked (cutting off a
// torn tail that a killed process left), appends with O_APPEND, and releases the lock
// before its fsync. Readers never take the lock.
package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
)

const (
	magic = "CAIRNWL1"
	// fileHeaderSize is the length of magic; the first record starts here.
	fileHeaderSize = 8
	// recordHeaderSize is the length of a record's length and crc fields.
	recordHeaderSize = 8

	// MaxRecordSize is the largest payload one record may carry. A header that
	// claims more is a bad record.
	MaxRecordSize = 64 << 20

	// DefaultMaxBatch is the group-commit cap used when Options.MaxBatch is zero.
	DefaultMaxBatch = 1024
	// maxBatchBytes stops a batch from taking more records once it holds this many
	// bytes; a single larger record or Append of many still goes out in one write.
	maxBatchBytes = 4 << 20
)

// castagnoli is the CRC-32C table, made on first use: making it sets up
// the hardware path's tables too (about 0.1 ms), which a command that
// reads and writes no record (an apply the up-to-date check answers) need
// not pay at its start.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

var (
	// ErrCorrupt is wrapped by every error about a damaged log; errors.As with a
	// *CorruptError gives the offset.
	ErrCorrupt = errors.New("wal: corrupt record")
	// ErrClosed is returned by appends to a closed Log.
	ErrClosed = errors.New("wal: log is closed")
	// ErrTooLarge is returned for a payload over MaxRecordSize.
	ErrTooLarge = errors.New("wal: record too large")
	// ErrLocked is returned by Open when another Log (in this process or another)
	// holds the log for writing without Options.Shared.
	ErrLocked = errors.New("wal: log is open for writing by another process")
	// ErrVersion is returned for a log written in a format version this cairn does
	// not read.
	ErrVersion = errors.New("wal: unsupported log format version")
)

// CorruptError describes damage in the middle of a log, or a file that is not a
// cairn log at all (Offset 0).
type CorruptError struct {
	Path   string
	Offset int64  // byte offset of the bad record (0: the file header)
	Reason string // what is wrong with it
	Next   int64  // offset of the valid record found after it; -1 if none
}

func (e *CorruptError) Error() string {
	s := fmt.Sprintf("wal: corrupt record at byte %d of %s: %s", e.Offset, e.Path, e.Reason)
	if e.Next >= 0 {
		s += fmt.Sprintf("; a valid record follows at byte %d", e.Next)
	}
	return s
}

// Unwrap makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Options tune a Log. The zero value is a durable, single-process log.
type Options struct {
	// NoSync skips fsync: a Durable record is written when Append returns but may be lost
	// by a machine crash. For benchmarks and tests.
	NoSync bool
	// Shared lets several processes append to the file at once (the cache's action
	// index): every commit takes an exclusive flock on "<path>.lock", validates what
	// the others appended, and appends with O_APPEND.
	Shared bool
	// MaxBatch caps the records in one group commit; 0 means DefaultMaxBatch.
	MaxBatch int
	// Lazy defers every fsync to the first durable append (a Durable
	// Append, or Sync): a new file's header and directory entry, and the
	// records written before it, are synced then, and a Log that never had
	// one is closed without an fsync. For a log whose records matter only
	// once one of them must be durable (a run journal, the item store).
	// With Shared, every opener's first durable commit syncs the file and
	// its directory: the process that made the file may not have yet.
	Lazy bool
	// LockPath is the lock file ("" for "<path>.lock"): a single-writer log
	// whose owner has a lock file of its own for as long as it writes (a run
	// journal, the run's lock) takes that one, and no file is made for the
	// log's. TrimTail takes "<path>.lock": call them only when the
	// owner's lock shows no writer.
	LockPath string
}

// Log appends records to one file. Its methods are safe for concurrent use.
type Log struct {
	path string
	opts Options
	f    *os.File
	lk   *fileLock

	// end is the offset just past the last record this Log knows of: everything
	// before it has been validated or written by us.
	end atomic.Int64
	// opened is the number of valid records Open found in the file;
	// scanned, the number the last recovery pass read.
	opened, scanned int
	// headless is the size of a file Open found without a valid header
	// (zeros, or a prefix of the header), which it started anew.
	headless int64

	mu     sync.Mutex
	queue  []*batch // batches waiting for the committer, oldest first
	closed bool
	failed error    // set once the file's state is unknown; every later append returns it
	free   [][]byte // batch buffers to reuse

	commits atomic.Int64 // batches written, for benchmarks
	syncs   atomic.Int64 // fsyncs made, for tests

	// commitMu is held by whoever writes the file: the committer
	// goroutine, or a Written appender that finds it idle and commits the
	// queued batches, its own the last, itself (see commitInline).
	// Batches are taken from the queue only while it is held, so they are
	// written in the order they were queued.
	commitMu sync.Mutex

	// Owned by the holder of commitMu (read by Close after the committer
	// exits):
	unsynced bool // records were written but not synced yet (Written, Queued)
	// dirUnsynced: the file was created and its directory entry is not
	// synced yet (Lazy).
	dirUnsynced bool
	hadDurable  bool // a durable commit was made (Lazy)
	// prealloc is set when the file is written in place (not Shared, with
	// fsync): space past l.end is allocated ahead, up to allocated, so
	// that a commit's sync need not update the file's size.
	prealloc  bool
	allocated int64
	asyncErr  error // failures to write Queued records

	kick      chan struct{} // wakes the committer; capacity 1
	done      chan struct{} // closed when the committer has exited
	closeOnce sync.Once
	closeErr  error
}

// batch is a group of records that go to disk in one write.
type batch struct {
	buf  []byte // encoded records
	n    int    // number of records in buf
	done chan struct{}
	err  error // valid once done is closed
	// durable is set when a Durable Append (or Sync) waits for the batch:
	// only then is it synced on its own. A batch of Written and Queued
	// records is written and left for the next durable commit (or Close)
	// to sync.
	durable bool
	calls   int  // the Append calls whose records the batch holds
	span    Span // where the batch was written, valid once done is closed
}

// Span is where the records of an AppendAt are in the file: the bytes
// [Start, End). Alone is set when they are the only records written there
// (the batch held no other Append's); otherwise the span holds others too.
type Span struct {
	Start, End int64
	Alone      bool
}

// Open opens the log at path for appending, creating it (and its parent
// directories) if missing. A torn tail is truncated away; corruption in the middle
// returns an error wrapping ErrCorrupt and leaves the file as it is.
func Open(path string, opts Options) (*Log, error) {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	lockPath := opts.LockPath
	if lockPath == "" {
		lockPath = path + ".lock"
	}
	lk, err := openLock(lockPath)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	if opts.Shared {
		err = lk.lock()
	} else {
		var ok bool
		ok, err = lk.tryLock()
		if err == nil && !ok {
			err = fmt.Errorf("%w: %s", ErrLocked, path)
		}
	}
	if err != nil {
		lk.close()
		return nil, fmt.Errorf("wal: lock %s: %w", path, err)
	}
	flags := os.O_RDWR | os.O_CREATE
	if opts.Shared {
		flags |= os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0o666)
	if err != nil {
		lk.close()
		return nil, fmt.Errorf("wal: %w", err)
	}
	l := &Log{
		path:     path,
		opts:     opts,
		f:        f,
		lk:       lk,
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		prealloc: !opts.Shared && !opts.NoSync,
	}
	err = l.recover(0)
	l.opened = l.scanned
	if opts.Shared && opts.Lazy && !opts.NoSync {
		// Another process may have made the file without syncing it or
		// its directory entry yet (Lazy): the first durable commit here
		// syncs both.
		l.unsynced, l.dirUnsynced = true, true
	}
	if opts.Shared {
		if uerr := lk.unlock(); err == nil && uerr != nil {
			err = fmt.Errorf("wal: unlock %s: %w", path, uerr)
		}
	}
	if err != nil {
		f.Close()
		lk.close()
		return nil, err
	}
	go l.run()
	return l, nil
}

// recover validates the file from offset from (0: from the file header) to its
// current end, truncates a torn tail, writes the file header if there is none, and
// sets l.end. The caller holds the lock in Shared mode.
func (l *Log) recover(from int64) error {
	fi, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	size := fi.Size()
	if from > size {
		// Records we had seen are gone: someone cut the file. Look at all of it again.
		from = 0
	}
	st, err := scan(l.f, l.path, from, size, nil)
	if err != nil {
		return err
	}
	l.scanned = st.Records
	if st.Next == size && size > 0 {
		l.end.Store(size)
		l.allocated = size
		return nil
	}
	if err := l.f.Truncate(st.Next); err != nil {
		return fmt.Errorf("wal: cut torn tail of %s: %w", l.path, err)
	}
	if st.Next == 0 {
		// New file, or one whose header never made it to disk.
		if from == 0 {
			l.headless = size
		}
		if _, err := l.f.Write([]byte(magic)); err != nil {
			return fmt.Errorf("wal: write header of %s: %w", l.path, err)
		}
		st.Next = fileHeaderSize
		if l.opts.Lazy && !l.opts.NoSync {
			l.unsynced, l.dirUnsynced = true, true
		} else if !l.opts.NoSync {
			if err := l.f.Sync(); err != nil {
				return fmt.Errorf("wal: sync %s: %w", l.path, err)
			}
			if err := syncDir(filepath.Dir(l.path)); err != nil {
				return err
			}
			l.syncs.Add(1)
		}
	} else if l.opts.Lazy && !l.opts.NoSync {
		l.unsynced = true
	} else if !l.opts.NoSync {
		if err := l.f.Sync(); err != nil {
			return fmt.Errorf("wal: sync %s: %w", l.path, err)
		}
		l.syncs.Add(1)
	}
	l.end.Store(st.Next)
	l.allocated = st.Next
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("wal: sync directory %s: %w", dir, err)
	}
	return nil
}

// Syncs is the number of times the log synced its file (with its
// directory where that was due) since Open, Open's own included.
func (l *Log) Syncs() int64 { return l.syncs.Load() }

// Path is the file the log writes.
func (l *Log) Path() string { return l.path }

// Records is the number of valid records Open found in the file (a torn
// tail not counted): what a reader that loads them all can size its index
// by.
func (l *Log) Records() int { return l.opened }

// Headless is the size of the file Open found without a valid header:
// zeros (damage, or a header and records that never reached the disk) or
// a header cut short, which it started anew, dropping those bytes. 0 for
// a new, empty file or a whole one.
func (l *Log) Headless() int64 { return l.headless }

// Size is the offset just past the last record this Log has written or seen. In
// Shared mode other processes may have appended more since.
func (l *Log) Size() int64 { return l.end.Load() }

// Durability says when Append returns: what a crash can still take of the
// records it appended.
type Durability int

const (
	// Durable: Append returns once the records are written and synced (only
	// written, with NoSync), so that no crash can take them. Concurrent
	// durable appends share one write and one fsync (group commit).
	Durable Durability = iota
	// Written: Append returns once the records are in the file (in the
	// kernel's page cache), without waiting for an fsync: a kill of the
	// process cannot lose them, a power loss can. The next durable commit,
	// Sync, or Close syncs them.
	Written
	// Queued: Append returns at once, without waiting for the write. The
	// records reach the file with the next commit, before any record
	// appended after them, so they are on disk once a later durable Append
	// returns; they are synced by the next durable commit or by Close. A
	// failure to write them is returned by Close. For records whose loss in
	// a crash costs nothing but information.
	Queued
)

// Append appends records, next to each other and in order (a crash during
// their write can keep a prefix of them), and returns as d says. Records
// appended together go out in one write; none is nothing to do.
func (l *Log) Append(payloads [][]byte, d Durability) error {
	_, err := l.append(payloads, d)
	return err
}

// append is Append, returning the batch its records joined (nil when there
// were none); for Written and Durable records it is committed.
func (l *Log) append(payloads [][]byte, d Durability) (*batch, error) {
	b, err := l.enqueueBatch(payloads, d == Durable, d != Written)
	switch d {
	case Queued:
		return b, err
	case Written:
		return b, l.commitInline(b, err)
	}
	return b, waitCommit(b, err)
}

// AppendAt is Append for Written and Durable records that also says where
// in the file they were written, for a reader of the file that need not
// read back what it wrote itself.
func (l *Log) AppendAt(payloads [][]byte, d Durability) (Span, error) {
	if d == Queued {
		return Span{}, errors.New("wal: AppendAt does not take Queued records")
	}
	b, err := l.append(payloads, d)
	if err != nil || b == nil {
		return Span{}, err
	}
	return b.span, nil
}

// commitInline waits until batch b of Written records is committed,
// committing it on the caller's goroutine when no commit is under way:
// the queued batches, b the last of them, are written at once, without
// handing them to the committer goroutine and waiting for it to be
// scheduled and to hand them back. When a commit is under way, the
// committer takes b after it. An enqueue's error is returned at once.
// Durable appends are left to the committer: while it syncs, the
// appenders that come meanwhile gather in one batch, which shares the
// next fsync (group commit); committed by their appenders, they would
// share fewer (BenchmarkAppendGroupCommit/durable: 4.4 records a commit
// instead of 7.6, with 8 producers).
func (l *Log) commitInline(b *batch, err error) error {
	if err != nil || b == nil {
		return err
	}
	if !l.commitMu.TryLock() {
		l.wake()
		return waitCommit(b, nil)
	}
	for {
		next := l.take()
		if next == nil {
			break // b was taken and committed by the committer
		}
		l.commitBatch(next)
		if next == b {
			break
		}
	}
	more := l.queued()
	l.commitMu.Unlock()
	if more {
		// Batches queued while this one was written: the committer's.
		l.wake()
	}
	return waitCommit(b, nil)
}

// take removes the oldest queued batch, nil when there is none. commitMu
// is held.
func (l *Log) take() *batch {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		return nil
	}
	b := l.queue[0]
	l.queue[0] = nil
	l.queue = l.queue[1:]
	return b
}

// queued reports whether batches wait in the queue.
func (l *Log) queued() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue) > 0
}

// waitCommit waits until the batch a record joined is committed and returns
// the commit's error (an enqueue's error at once; nothing to wait for when
// no batch was needed).
func waitCommit(b *batch, err error) error {
	if err != nil || b == nil {
		return err
	}
	<-b.done
	return b.err
}

// Sync returns once every record written before the call (by Append, with
// any Durability) is durable. Concurrent calls, and durable Appends queued
// with them, share one fsync. With NoSync it returns once
// those records are written.
func (l *Log) Sync() error {
	l.mu.Lock()
	b, err := l.batchFor(0, 0)
	if err == nil {
		b.durable = true
	}
	l.mu.Unlock()
	if err != nil {
		return err
	}
	l.wake()
	return waitCommit(b, nil)
}

// enqueueBatch adds records to one batch (nil when there are none), marking it
// durable when asked, and wakes the committer when asked.
func (l *Log) enqueueBatch(payloads [][]byte, durable, wake bool) (*batch, error) {
	if len(payloads) == 0 {
		return nil, nil
	}
	crcs := make([]uint32, len(payloads))
	var size int64
	for i, p := range payloads {
		if len(p) > MaxRecordSize {
			return nil, fmt.Errorf("%w: record %d has %d bytes, the limit is %d", ErrTooLarge, i, len(p), MaxRecordSize)
		}
		crcs[i] = checksum(p)
		size += recordSize(len(p))
	}
	l.mu.Lock()
	b, err := l.batchFor(len(payloads), size)
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	for i, p := range payloads {
		b.buf = appendRecord(b.buf, p, crcs[i])
	}
	b.n += len(payloads)
	b.calls++
	if durable {
		b.durable = true
	}
	l.mu.Unlock()
	if wake {
		l.wake()
	}
	return b, nil
}

// batchFor returns the batch that n more records of size bytes in all should join:
// the newest queued batch if they fit, else a new one. l.mu is held.
func (l *Log) batchFor(n int, size int64) (*batch, error) {
	if l.closed {
		return nil, ErrClosed
	}
	if l.failed != nil {
		return nil, l.failed
	}
	if k := len(l.queue); k > 0 {
		b := l.queue[k-1]
		if b.n+n <= l.opts.MaxBatch && int64(len(b.buf))+size <= maxBatchBytes {
			return b, nil
		}
	}
	b := &batch{done: make(chan struct{})}
	if k := len(l.free); k > 0 {
		b.buf = l.free[k-1]
		l.free = l.free[:k-1]
	}
	if int64(cap(b.buf)) < size {
		b.buf = make([]byte, 0, max(size, 64<<10))
	}
	l.queue = append(l.queue, b)
	return b, nil
}

// testHookQueueEmpty, when set (by a test), is called by the committer
// each time it finds the queue empty, before it looks whether the log is
// closed.
var testHookQueueEmpty func(*Log)

func (l *Log) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// run is the committer: it writes the batches that no appender commits
// itself (Queued records, and those queued while a commit was under way).
func (l *Log) run() {
	defer close(l.done)
	for {
		if !l.opts.NoSync {
			// The appenders the last commit woke are about to queue again; let
			// them, so that they share the next fsync instead of waiting for one more.
			runtime.Gosched()
		}
		l.commitMu.Lock()
		b := l.take()
		if b == nil {
			if testHookQueueEmpty != nil {
				testHookQueueEmpty(l)
			}
			// Closed, and nothing queued, read together: a batch queued
			// after take found none, and before Close, is still to be
			// written (once closed, nothing more is queued).
			l.mu.Lock()
			closed, more := l.closed, len(l.queue) > 0
			l.mu.Unlock()
			if more {
				l.commitMu.Unlock()
				continue
			}
			if closed {
				if l.unsynced && !l.opts.NoSync && (!l.opts.Lazy || l.hadDurable) {
					l.asyncErr = errors.Join(l.asyncErr, l.sync())
				}
				l.commitMu.Unlock()
				return
			}
			l.commitMu.Unlock()
			<-l.kick
			continue
		}
		l.commitBatch(b)
		l.commitMu.Unlock()
	}
}

// commitBatch writes a batch taken from the queue and wakes its waiters.
// commitMu is held.
func (l *Log) commitBatch(b *batch) {
	l.mu.Lock()
	durable, calls := b.durable, b.calls
	l.mu.Unlock()
	b.err = l.commit(b.buf, durable)
	if b.err == nil {
		// The write ended at l.end, which only the next commit moves.
		end := l.end.Load()
		b.span = Span{Start: end - int64(len(b.buf)), End: end, Alone: calls == 1}
	}
	l.commits.Add(1)
	if !durable && b.err != nil {
		l.asyncErr = errors.Join(l.asyncErr, b.err)
	}
	buf := b.buf[:0]
	b.buf = nil
	close(b.done)
	l.mu.Lock()
	if cap(buf) <= 2*maxBatchBytes && len(l.free) < 4 {
		l.free = append(l.free, buf)
	}
	l.mu.Unlock()
}

// commit writes buf at the end of the file and, when durable, syncs it (and
// whatever unsynced records were written before it).
func (l *Log) commit(buf []byte, durable bool) (err error) {
	l.mu.Lock()
	failed := l.failed
	l.mu.Unlock()
	if failed != nil {
		return failed
	}
	if durable {
		l.hadDurable = true
	}
	if len(buf) == 0 {
		// Nothing to write (Sync): sync what is written.
		if durable && l.unsynced {
			return l.sync()
		}
		return nil
	}
	if l.opts.Shared {
		if err := l.lk.lock(); err != nil {
			return fmt.Errorf("wal: lock %s: %w", l.path, err)
		}
		locked := true
		defer func() {
			if locked {
				if uerr := l.lk.unlock(); uerr != nil && err == nil {
					err = fmt.Errorf("wal: unlock %s: %w", l.path, uerr)
				}
			}
		}()
		if err := l.catchUp(); err != nil {
			return err
		}
		if err := l.write(buf); err != nil {
			return err
		}
		// Other processes may write while we wait for the disk.
		locked = false
		if err := l.lk.unlock(); err != nil {
			l.fail(fmt.Errorf("wal: unlock %s: %w", l.path, err))
			return l.failed
		}
	} else if err := l.write(buf); err != nil {
		return err
	}
	if !durable {
		l.unsynced = true
		return nil
	}
	return l.sync()
}

// sync makes everything written so far durable. Only the committer calls it.
func (l *Log) sync() error {
	if l.opts.NoSync {
		return nil
	}
	if err := l.syncData(); err != nil {
		// The kernel may have dropped the dirty pages: what is on disk is unknown.
		l.fail(fmt.Errorf("wal: sync %s: %w", l.path, err))
		return l.failed
	}
	if l.dirUnsynced {
		if err := syncDir(filepath.Dir(l.path)); err != nil {
			return err
		}
		l.dirUnsynced = false
	}
	l.unsynced = false
	l.syncs.Add(1)
	return nil
}

// write appends buf at l.end, cutting a partial write off again.
func (l *Log) write(buf []byte) error {
	start := l.end.Load()
	var err error
	if l.opts.Shared {
		_, err = l.f.Write(buf) // O_APPEND: after whatever others wrote
	} else {
		l.reserve(start + int64(len(buf)))
		_, err = l.f.WriteAt(buf, start)
	}
	if err != nil {
		werr := fmt.Errorf("wal: write %s: %w", l.path, err)
		if terr := l.f.Truncate(start); terr != nil {
			l.fail(fmt.Errorf("%w; cutting the partial write off failed too: %v", werr, terr))
			return l.failed
		}
		l.allocated = start
		return werr
	}
	l.end.Store(start + int64(len(buf)))
	return nil
}

// A preallocating Log reserves as much as the file holds already (it
// doubles), at least preallocMin and at most preallocMax at a time.
const (
	preallocMin = 64 << 10
	preallocMax = 8 << 20
)

// reserve makes sure the file has space written up to end: the records
// then overwrite zeros inside the file, and their sync writes data without
// changing the file's size or its block map. The zeros past the last record
// read as a torn tail, which Open cuts off after a crash and Close cuts off
// when done. If the zeros cannot be written, the log is written as it grows.
func (l *Log) reserve(end int64) {
	if !l.prealloc || end <= l.allocated {
		return
	}
	if l.opts.Lazy && !l.hadDurable {
		// Nothing had to be durable yet (and a log that never has to
		// costs no sync): it grows as it is written until then.
		l.allocated = end
		return
	}
	n := max(end-l.allocated, min(max(preallocMin, l.allocated), preallocMax))
	if err := writeZeros(l.f, l.allocated, n); err != nil {
		l.prealloc = false
		return
	}
	l.allocated += n
}

// zeroChunk is what writeZeros writes.
var zeroChunk [256 << 10]byte

// writeZeros writes n zero bytes at off.
func writeZeros(f *os.File, off, n int64) error {
	for n > 0 {
		k := min(n, int64(len(zeroChunk)))
		if _, err := f.WriteAt(zeroChunk[:k], off); err != nil {
			return err
		}
		off, n = off+k, n-k
	}
	return nil
}

// catchUp validates what other processes appended since l.end, cutting off a torn
// tail, so that our write lands right after the last valid record. The lock is held.
func (l *Log) catchUp() error {
	fi, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	if fi.Size() == l.end.Load() {
		return nil
	}
	return l.recover(l.end.Load())
}

func (l *Log) fail(err error) {
	l.mu.Lock()
	if l.failed == nil {
		l.failed = err
	}
	l.mu.Unlock()
}

// Close commits and syncs what is queued, then closes the file and releases the lock.
// Appends after Close return ErrClosed. Close may be called more than once.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		l.wake()
		<-l.done
		var errs []error
		if l.asyncErr != nil {
			errs = append(errs, l.asyncErr)
		}
		if end := l.end.Load(); l.allocated > end {
			// The space reserved ahead goes: a finished log ends with its
			// last record.
			if err := l.f.Truncate(end); err != nil {
				errs = append(errs, fmt.Errorf("wal: %w", err))
			}
		}
		if err := l.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("wal: %w", err))
		}
		if err := l.lk.close(); err != nil {
			errs = append(errs, fmt.Errorf("wal: %w", err))
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// recordSize is the space a record with an n-byte payload takes in the file.
func recordSize(n int) int64 {
	return recordHeaderSize + int64(n+7)&^7
}

// appendRecord encodes one record onto dst.
func appendRecord(dst, payload []byte, crc uint32) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, crc)
	dst = append(dst, payload...)
	var zero [7]byte
	return append(dst, zero[:(8-len(payload)%8)%8]...)
}

// checksum is the record checksum: CRC-32C of the little-endian length, then the payload.
func checksum(payload []byte) uint32 {
	return crc32.Update(lengthCRC(uint32(len(payload))), castagnoli(), payload)
}

// lengthCRC is the CRC-32C of the 4 little-endian bytes of n, worked out byte by
// byte with the table so that no slice is needed.
func lengthCRC(n uint32) uint32 {
	crc := ^uint32(0)
	t := castagnoli()
	for i := 0; i < 4; i++ {
		crc = t[byte(crc)^byte(n>>(8*i))] ^ (crc >> 8)
	}
	return ^crc
}
