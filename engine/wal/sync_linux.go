package wal

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncData makes the log's written records durable: fdatasync, which skips
// the inode's timestamps when the file's size did not change (see reserve).
func (l *Log) syncData() error {
	for {
		err := unix.Fdatasync(int(l.f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// allocate reserves n bytes of file space at off; the file's size grows
// to cover it and the space reads as zeros.
func allocate(f *os.File, off, n int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, off, n)
		if err != unix.EINTR {
			return err
		}
	}
}
