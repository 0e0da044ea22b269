package wal

import "golang.org/x/sys/unix"

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
