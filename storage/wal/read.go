package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// ReadStats describes one pass over a log.
type ReadStats struct {
	Records  int   // valid records passed to fn
	Bytes    int64 // payload bytes passed to fn
	TornTail bool  // the file ends in a torn record (or a writer is still writing it)
	TornAt   int64 // offset of the torn record, when TornTail
	// Next is the offset just past the last valid record: where ReadFrom picks up
	// when tailing a growing log. It is 0 when the file has no complete header.
	Next int64
}

// Read calls fn for every complete, valid record of the log at path, in order,
// with the record's offset and payload. The payload slice is only valid during the
// call. A torn tail is not an error and is left on disk: it is reported in the
// stats. Corruption in the middle returns an error wrapping ErrCorrupt. An error
// from fn stops the read and is returned as it is; fn may be nil to only check
// and count. Read takes no lock and never blocks writers.
func Read(path string, fn func(off int64, payload []byte) error) (ReadStats, error) {
	return ReadFrom(path, 0, fn)
}

// ReadFrom is Read starting at off, which is 0 (the first record) or a record
// boundary: an offset passed to fn, or ReadStats.Next of an earlier pass.
func ReadFrom(path string, off int64, fn func(off int64, payload []byte) error) (ReadStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return ReadStats{}, fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ReadStats{}, fmt.Errorf("wal: %w", err)
	}
	return scan(f, path, off, fi.Size(), fn)
}

// ReadAt is ReadFrom on a log already open as r, up to size bytes: a
// reader that follows a growing log keeps the file open between passes
// (Cache.Refresh) instead of opening it for each.
func ReadAt(r io.ReaderAt, path string, off, size int64, fn func(off int64, payload []byte) error) (ReadStats, error) {
	return scan(r, path, off, size, fn)
}

// ReadRecord reads the one record at off of the log open as r (an offset
// passed to Read's fn, or Span's): two reads of exactly its bytes, its
// length and checksum checked, where ReadFrom would read ahead a
// megabyte. It returns the payload; damage is a *CorruptError naming path.
func ReadRecord(r io.ReaderAt, path string, off int64) ([]byte, error) {
	if off < fileHeaderSize || off%8 != 0 {
		return nil, fmt.Errorf("wal: offset %d in %s is not a record boundary", off, path)
	}
	var h [recordHeaderSize]byte
	if _, err := r.ReadAt(h[:], off); err != nil {
		return nil, fmt.Errorf("wal: read the record at byte %d of %s: %w", off, path, err)
	}
	n := binary.LittleEndian.Uint32(h[:])
	if n > MaxRecordSize {
		return nil, &CorruptError{Path: path, Offset: off, Next: -1, Reason: fmt.Sprintf("length %d is over the %d-byte limit", n, MaxRecordSize)}
	}
	rec := make([]byte, recordSize(int(n)))
	copy(rec, h[:])
	if _, err := r.ReadAt(rec[recordHeaderSize:], off+recordHeaderSize); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &CorruptError{Path: path, Offset: off, Next: -1, Reason: fmt.Sprintf("%d-byte record runs past the end of the file", n)}
		}
		return nil, fmt.Errorf("wal: read the record at byte %d of %s: %w", off, path, err)
	}
	if reason := recordProblem(rec); reason != "" {
		return nil, &CorruptError{Path: path, Offset: off, Next: -1, Reason: reason}
	}
	return rec[recordHeaderSize : recordHeaderSize+n], nil
}

// openForRepair takes the log's lock (waiting for a writer that holds it)
// and opens the file for rewriting in place.
func openForRepair(path string) (*fileLock, *os.File, error) {
	lk, err := openLock(path + ".lock")
	if err != nil {
		return nil, nil, fmt.Errorf("wal: %w", err)
	}
	if err := lk.lock(); err != nil {
		lk.close()
		return nil, nil, fmt.Errorf("wal: lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		lk.close()
		return nil, nil, fmt.Errorf("wal: %w", err)
	}
	return lk, f, nil
}

// TrimTail cuts a torn tail off the log at path (what a writer killed in the
// middle of a write, or with space reserved ahead, leaves) and returns the
// number of bytes dropped. It leaves a log damaged in the middle as it is.
// It waits for the log's lock, so it waits for a writer that holds the log
// open without Options.Shared to close it.
func TrimTail(path string) (dropped int64, err error) {
	dropped, _, err = cut(path, false)
	return dropped, err
}

// cut drops the torn tail of a log and, when damaged is set, everything from
// its first bad record on, keeping a copy of the latter.
func cut(path string, damaged bool) (dropped int64, kept string, err error) {
	lk, f, err := openForRepair(path)
	if err != nil {
		return 0, "", err
	}
	defer lk.close()
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, "", fmt.Errorf("wal: %w", err)
	}
	st, err := scan(f, path, 0, fi.Size(), nil)
	var cut int64
	var ce *CorruptError
	switch {
	case errors.As(err, &ce) && !damaged:
		return 0, "", nil
	case errors.As(err, &ce):
		if ce.Offset < fileHeaderSize {
			return 0, "", fmt.Errorf("wal: will not repair %s: %w", path, err)
		}
		cut = ce.Offset
		if kept, err = keepDamaged(f, path, cut, fi.Size(), false); err != nil {
			return 0, "", err
		}
	case err != nil:
		return 0, "", err
	case st.TornTail:
		cut = st.TornAt
	default:
		return 0, "", nil
	}
	if err := f.Truncate(cut); err != nil {
		return 0, kept, fmt.Errorf("wal: repair %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return 0, kept, fmt.Errorf("wal: repair %s: %w", path, err)
	}
	return fi.Size() - cut, kept, nil
}

// readChunk is how much of the file one read call fetches.
const readChunk = 1 << 20

// scan walks the records of r, whose size is taken to be size, from off (0: check
// the file header, then start at the first record), calling fn for each valid one.
func scan(r io.ReaderAt, path string, off, size int64, fn func(int64, []byte) error) (ReadStats, error) {
	var st ReadStats
	if off != 0 && (off < fileHeaderSize || off%8 != 0) {
		return st, fmt.Errorf("wal: offset %d in %s is not a record boundary", off, path)
	}
	if off > size {
		return st, fmt.Errorf("wal: offset %d is past the end of %s (%d bytes)", off, path, size)
	}
	w := &window{r: r, size: size}
	if size == 0 {
		return st, nil
	}
	// The file header. When the pass starts further on (tailing a growing
	// log), read just the header: the window's chunk starts where the
	// records are.
	var hdr []byte
	ok := false
	if off > fileHeaderSize {
		small := make([]byte, fileHeaderSize)
		if n, err := r.ReadAt(small, 0); n == fileHeaderSize && (err == nil || errors.Is(err, io.EOF)) {
			hdr, ok = small, true
		}
	}
	if !ok {
		hdr, ok = w.get(0, min(size, fileHeaderSize))
	}
	if w.err != nil {
		return st, fmt.Errorf("wal: read %s: %w", path, w.err)
	}
	if !ok || len(hdr) < fileHeaderSize || string(hdr) != magic {
		return headerProblem(w, path, hdr)
	}
	if off == 0 {
		off = fileHeaderSize
	}
	st.Next = off

	for off < w.size {
		reason := ""
		short := true                 // the bad record runs past the end of the file
		end := off + recordHeaderSize // where the bad record ends, if it fits
		h, ok := w.get(off, recordHeaderSize)
		if !ok {
			reason = "record header cut short"
		} else if n := binary.LittleEndian.Uint32(h); n > MaxRecordSize {
			reason = fmt.Sprintf("length %d is over the %d-byte limit", n, MaxRecordSize)
			short = false
		} else if ext := recordSize(int(n)); off+ext > w.size {
			reason = fmt.Sprintf("%d-byte record runs past the end of the file", n)
		} else if rec, ok := w.get(off, ext); !ok {
			reason = fmt.Sprintf("%d-byte record runs past the end of the file", n)
		} else if reason = recordProblem(rec); reason == "" {
			if fn != nil {
				if err := fn(off, rec[recordHeaderSize:recordHeaderSize+n]); err != nil {
					return st, err
				}
			}
			st.Records++
			st.Bytes += int64(n)
			off += ext
			st.Next = off
			continue
		} else {
			short = false
			end = off + ext
		}
		if w.err != nil {
			return st, fmt.Errorf("wal: read %s: %w", path, w.err)
		}
		next, found, gaveUp := w.validAfter(off + recordHeaderSize)
		if found {
			return st, &CorruptError{Path: path, Offset: off, Reason: reason, Next: next}
		}
		if gaveUp && !short && !w.zeroFrom(end) {
			// Too much data to search: judge by shape. A bad record that fits in
			// the file with non-zero data after it is not what a torn write leaves.
			return st, &CorruptError{Path: path, Offset: off, Next: -1,
				Reason: reason + fmt.Sprintf("; %d bytes follow it, too many to search for valid records", w.size-end)}
		}
		if w.err != nil {
			return st, fmt.Errorf("wal: read %s: %w", path, w.err)
		}
		st.TornTail = true
		st.TornAt = off
		return st, nil
	}
	if w.err != nil {
		return st, fmt.Errorf("wal: read %s: %w", path, w.err)
	}
	return st, nil
}

// headerProblem decides what a file whose first bytes are not the magic is: a torn
// header (a prefix of the magic, or zeros with nothing valid after them), a log of
// another format version, or not a cairn log.
func headerProblem(w *window, path string, hdr []byte) (ReadStats, error) {
	var st ReadStats
	if len(hdr) == fileHeaderSize && string(hdr[:7]) == magic[:7] {
		return st, fmt.Errorf("%w: %s has version %q, this cairn reads version %q", ErrVersion, path, hdr[7], magic[7])
	}
	torn := len(hdr) < fileHeaderSize && bytes.HasPrefix([]byte(magic), hdr)
	if !torn && allZero(hdr) {
		next, found, gaveUp := w.validAfter(fileHeaderSize)
		if w.err != nil {
			return st, fmt.Errorf("wal: read %s: %w", path, w.err)
		}
		if found {
			return st, &CorruptError{Path: path, Offset: 0, Reason: "zeroed file header", Next: next}
		}
		if gaveUp && !w.zeroFrom(fileHeaderSize) {
			return st, &CorruptError{Path: path, Offset: 0, Reason: "zeroed file header", Next: -1}
		}
		torn = true
	}
	if torn {
		st.TornTail = true
		return st, nil
	}
	return st, &CorruptError{Path: path, Offset: 0, Reason: "not a cairn log (bad file header)", Next: -1}
}

// recordProblem says what is wrong with rec, a whole record (header, payload,
// padding), or "" if it is valid.
func recordProblem(rec []byte) string {
	n := binary.LittleEndian.Uint32(rec)
	want := binary.LittleEndian.Uint32(rec[4:])
	payload := rec[recordHeaderSize : recordHeaderSize+n]
	if got := checksum(payload); got != want {
		return fmt.Sprintf("checksum mismatch (stored %08x, computed %08x)", want, got)
	}
	if !allZero(rec[recordHeaderSize+n:]) {
		return "padding is not zero"
	}
	return ""
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// window serves byte ranges of a file from one reusable buffer, reading ahead in
// big chunks. Requests move forward through the file.
type window struct {
	r    io.ReaderAt
	size int64 // end of the file as this pass sees it; shrinks if the file does
	buf  []byte
	base int64 // file offset of buf[0]
	n    int   // bytes of buf that hold file data
	err  error // a read error other than the end of the file
	// ahead, when set, is how much one read fetches in place of
	// readChunk.
	ahead int64
}

// get returns the bytes [off, off+n) of the file, or false if they are not all
// there. The slice is valid until the next call.
func (w *window) get(off, n int64) ([]byte, bool) {
	if off >= w.base && off+n <= w.base+int64(w.n) {
		s := off - w.base
		return w.buf[s : s+n], true
	}
	if off+n > w.size || w.err != nil {
		return nil, false
	}
	chunk := int64(readChunk)
	if w.ahead > 0 {
		chunk = w.ahead
	}
	want := min(max(n, chunk), w.size-off)
	if int64(cap(w.buf)) < want {
		w.buf = make([]byte, want)
	}
	got, err := w.r.ReadAt(w.buf[:want], off)
	w.base, w.n = off, got
	if int64(got) < want {
		if err == nil || errors.Is(err, io.EOF) {
			// The file shrank under us (a writer cut a torn tail off).
			w.size = off + int64(got)
		} else {
			w.err = err
		}
	}
	if int64(got) < n {
		return nil, false
	}
	return w.buf[:n], true
}

// searchBudget bounds the work validAfter does, in bytes checksummed, beyond four
// times the bytes it searches: a torn record of binary data can hold many
// plausible-looking headers, each claiming most of the rest of the file.
const searchBudget = 64 << 20

// validAfter looks for a valid record at any 8-byte boundary from off on and
// returns the first one's offset. It tells a torn tail (nothing valid follows)
// from damage in the middle (something does). gaveUp reports that it ran out of
// budget before it was sure.
func (w *window) validAfter(off int64) (next int64, found, gaveUp bool) {
	budget := searchBudget + 4*max(w.size-off, 0)
	for p := off; p+recordHeaderSize <= w.size; p += 8 {
		h, ok := w.get(p, recordHeaderSize)
		if !ok {
			return 0, false, false
		}
		if binary.LittleEndian.Uint64(h) == 0 {
			// Never a valid header (see the package doc): space
			// reserved ahead of the records, or zeroed by damage.
			// Skip the whole zero run.
			p = w.zerosEnd(p) - 8
			continue
		}
		n := binary.LittleEndian.Uint32(h)
		if n > MaxRecordSize {
			continue
		}
		ext := recordSize(int(n))
		if p+ext > w.size {
			continue
		}
		if budget -= ext; budget < 0 {
			return 0, false, true
		}
		rec, ok := w.get(p, ext)
		if !ok {
			return 0, false, false
		}
		if recordProblem(rec) == "" {
			return p, true, false
		}
	}
	return 0, false, false
}

// zeroFrom reports whether every byte from off to the end of the file is zero.
func (w *window) zeroFrom(off int64) bool {
	end := w.zerosEnd(off)
	return end >= w.size && w.err == nil
}

// zerosEnd returns the first 8-byte boundary at or after off (a boundary)
// whose 8 bytes are not all zero, or the file's end: it skips a run of zeros
// a block at a time.
func (w *window) zerosEnd(off int64) int64 {
	for off < w.size {
		b, ok := w.get(off, min(readChunk, w.size-off))
		if !ok {
			return off
		}
		i := 0
		for i+len(zeroBlock) <= len(b) && bytes.Equal(b[i:i+len(zeroBlock)], zeroBlock[:]) {
			i += len(zeroBlock)
		}
		for ; i < len(b); i += 8 {
			if !allZero(b[i:min(i+8, len(b))]) {
				return off + int64(i)
			}
		}
		off += int64(len(b))
	}
	return off
}

// zeroBlock is what zerosEnd compares a file's bytes with.
var zeroBlock [4096]byte

// ReadRecords calls fn for the record at each of offs, in increasing offset
// order (an offset listed twice is read once), through one open file and
// one read-ahead buffer: what reading many records one by one with
// ReadFrom, each pass opening the file and filling a buffer of its own,
// costs many times over. Each offset must be a record boundary that an
// earlier pass passed to fn. A record that is not whole and valid there
// returns a *CorruptError; an error from fn stops the read and is returned
// as it is.
func ReadRecords(path string, offs []int64, fn func(off int64, payload []byte) error) error {
	if len(offs) == 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	sorted := slices.Clone(offs)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	w := &window{r: f, size: fi.Size()}
	for i, off := range sorted {
		if off < fileHeaderSize || off%8 != 0 || off >= w.size {
			return fmt.Errorf("wal: offset %d in %s (%d bytes) is not a record boundary", off, path, w.size)
		}
		// Read ahead as far as the next offsets within one chunk, and a
		// little past the last of them (most records are small): a few
		// records far apart cost a few small reads, many close together
		// one big one.
		j, _ := slices.BinarySearch(sorted[i:], off+readChunk)
		w.ahead = sorted[i+j-1] - off + 4096
		bad := func(reason string) error {
			if w.err != nil {
				return fmt.Errorf("wal: read %s: %w", path, w.err)
			}
			return &CorruptError{Path: path, Offset: off, Reason: reason, Next: -1}
		}
		h, ok := w.get(off, recordHeaderSize)
		if !ok {
			return bad("record header cut short")
		}
		n := binary.LittleEndian.Uint32(h)
		if n > MaxRecordSize {
			return bad(fmt.Sprintf("length %d is over the %d-byte limit", n, MaxRecordSize))
		}
		rec, ok := w.get(off, recordSize(int(n)))
		if !ok {
			return bad(fmt.Sprintf("%d-byte record runs past the end of the file", n))
		}
		if reason := recordProblem(rec); reason != "" {
			return bad(reason)
		}
		if err := fn(off, rec[recordHeaderSize:recordHeaderSize+n]); err != nil {
			return err
		}
	}
	return nil
}
