//go:build unix

package wal

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// fileLock is an exclusive flock on a sidecar file that stays open, so that
// taking and releasing it costs one system call each.
type fileLock struct {
	f *os.File
}

func openLock(path string) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	return &fileLock{f: f}, nil
}

func (l *fileLock) lock() error {
	for {
		err := unix.Flock(int(l.f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func (l *fileLock) tryLock() (bool, error) {
	for {
		err := unix.Flock(int(l.f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		case !errors.Is(err, unix.EINTR):
			return false, err
		}
	}
}

func (l *fileLock) unlock() error {
	return unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
}

// close releases the lock, if held, with the file.
func (l *fileLock) close() error {
	return l.f.Close()
}
