package wal

import (
	"errors"
	"fmt"
)

// Blank makes a log that is damaged in the middle readable and writable
// again without losing the records around the damage: each bad stretch
// that a valid record follows (a CorruptError with Next >= 0) is
// overwritten in place by one valid record of the same extent whose payload
// is all zeros, which readers then see as a record they do not know. It
// suits logs whose records each stand alone, such as the cache's action
// index, where a lost record costs a recomputation and nothing else. The
// file keeps its size and inode, so processes that have it open keep
// appending to it.
//
// Before a stretch is overwritten, its bytes are copied to a file beside the
// log (see keepDamaged). Blank waits for the log's lock (so it waits for a
// writer that holds the log open without Options.Shared to close it) and
// returns the paths of those copies, one per bad stretch it blanked. A torn tail is left for Open to cut; damage with no
// valid record after it is not blanked and is returned as the error.
func Blank(path string, noSync bool) (kept []string, err error) {
	lk, f, err := openForRepair(path)
	if err != nil {
		return nil, err
	}
	defer lk.close()
	defer f.Close()
	for {
		fi, err := f.Stat()
		if err != nil {
			return kept, fmt.Errorf("wal: %w", err)
		}
		_, err = scan(f, path, 0, fi.Size(), nil)
		var ce *CorruptError
		if !errors.As(err, &ce) {
			if err != nil {
				return kept, err
			}
			break
		}
		if ce.Offset < fileHeaderSize || ce.Next < 0 {
			return kept, err
		}
		k, err := keepDamaged(f, path, ce.Offset, ce.Next, noSync)
		if err != nil {
			return kept, err
		}
		kept = append(kept, k)
		payload := make([]byte, ce.Next-ce.Offset-recordHeaderSize)
		rec := appendRecord(nil, payload, checksum(payload))
		if _, err := f.WriteAt(rec, ce.Offset); err != nil {
			return kept, fmt.Errorf("wal: blank damaged record of %s: %w", path, err)
		}
	}
	if len(kept) > 0 && !noSync {
		if err := f.Sync(); err != nil {
			return kept, fmt.Errorf("wal: sync %s: %w", path, err)
		}
	}
	return kept, nil
}

// OpenBlanking is Open for a log whose records each stand alone: when the
// log is damaged in the middle, the damage is blanked (Blank) and the log
// opened again. kept names the copies of the damaged bytes Blank made
// (none when the log opened at once); when Blank fails, Open's error is
// returned.
func OpenBlanking(path string, opts Options) (l *Log, kept []string, err error) {
	l, err = Open(path, opts)
	if !errors.Is(err, ErrCorrupt) {
		return l, nil, err
	}
	kept, berr := Blank(path, opts.NoSync)
	if berr != nil {
		return nil, nil, err
	}
	l, err = Open(path, opts)
	return l, kept, err
}

// Blanked reports whether p, a record's payload, is one Blank wrote over
// a damaged stretch: all zeros.
func Blanked(p []byte) bool {
	for _, b := range p {
		if b != 0 {
			return false
		}
	}
	return len(p) > 0
}
