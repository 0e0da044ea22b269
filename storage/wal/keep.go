package wal

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/cairn-run/cairn/storage/atomicfile"
)

// keepDamaged copies the bytes [from, to) of the log f at path into a file
// beside it, before cut drops them or Blank overwrites them, so that damaged
// data is never destroyed for good: whoever wants to look at what was lost
// (or recover a record by hand) finds it there. The copy is named
// <log>.damaged-<offset>-<UTC time>, where offset is the byte offset in the
// log of its first byte, and is synced before the log is touched, unless
// noSync is set. It returns the copy's path.
//
// A torn tail (what a writer killed in the middle of a write leaves) is not
// kept: nothing in it had been acknowledged as written.
func keepDamaged(f *os.File, path string, from, to int64, noSync bool) (string, error) {
	b := make([]byte, to-from)
	if _, err := f.ReadAt(b, from); err != nil && err != io.EOF {
		return "", fmt.Errorf("wal: keep damaged bytes of %s: %w", path, err)
	}
	name := fmt.Sprintf("%s.damaged-%d-%s", filepath.Base(path), from, time.Now().UTC().Format("20060102T150405.000000000Z"))
	keep := filepath.Join(filepath.Dir(path), name)
	if err := atomicfile.Write(keep, b, !noSync); err != nil {
		return "", fmt.Errorf("wal: keep damaged bytes of %s: %w", path, err)
	}
	return keep, nil
}
