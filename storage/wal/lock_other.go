//go:build !unix

package wal

import "github.com/gofrs/flock"

// fileLock is an exclusive lock on a sidecar file.
type fileLock struct {
	fl *flock.Flock
}

func openLock(path string) (*fileLock, error) {
	return &fileLock{fl: flock.New(path)}, nil
}

func (l *fileLock) lock() error { return l.fl.Lock() }

func (l *fileLock) tryLock() (bool, error) { return l.fl.TryLock() }

func (l *fileLock) unlock() error { return l.fl.Unlock() }

func (l *fileLock) close() error { return l.fl.Close() }
