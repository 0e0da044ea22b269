//go:build !linux

package wal

// syncData makes the log's written records durable.
func (l *Log) syncData() error { return l.f.Sync() }
