//go:build !linux

package wal

import (
	"errors"
	"os"
)

// syncData makes the log's written records durable.
func (l *Log) syncData() error { return l.f.Sync() }

// allocate is not offered here: the log is written as it grows.
func allocate(*os.File, int64, int64) error {
	return errors.ErrUnsupported
}
