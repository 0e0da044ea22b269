package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// journalError is ApplyResult.JournalErr: the run's journal, and its
// first write that failed.
type journalError struct {
	path string
	err  error
}

func (e *journalError) Error() string {
	return fmt.Sprintf("the run's journal %s is incomplete (%s)", e.path, writeCause(e.err))
}

func (e *journalError) Unwrap() error { return e.err }

// writeCause is what made a write fail, as people read it: the system's
// error ("no space left on device", "read-only file system") without the
// packages and paths it went through, or err's text where it holds none.
func writeCause(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

// JournalWriteAdvice is what to do when a record of the run's journal
// could not be written for err: it depends on the cause, which the
// message it ends has said.
func JournalWriteAdvice(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "make room on that disk (or in your quota there)"
	case errors.Is(err, syscall.EROFS):
		return "its file system is mounted read-only: mount it read-write, or give another --cache"
	case errors.Is(err, fs.ErrPermission):
		return "cairn may not write there: check the run folder's owner, group and permissions (docs/durability.md, \"Sharing a cache\"), or give another --cache"
	}
	return "fix what made the write fail (" + writeCause(err) + ")"
}
