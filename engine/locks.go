package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// keyLock is the per-key lock held while a node runs: a second apply (of
// this or another pipeline) that needs the same key waits, then takes the
// cache hit. The child inherits the descriptor, so the lock lives exactly
// as long as the process using it; a lock whose holders all died is free.
type keyLock struct {
	f *os.File
}

type lockHolder struct {
	PID   int       `json:"pid"`
	RunID string    `json:"run_id"`
	Node  string    `json:"node"`
	Since time.Time `json:"since"`
}

func lockPath(cacheDir, key string) string {
	return filepath.Join(cacheDir, "locks", key[:2], key)
}

// tryKeyLock takes the lock without waiting. When another process holds
// it, it returns nil and what the lock file says of its holder.
func tryKeyLock(cacheDir, key, runID, node string) (*keyLock, *lockHolder, error) {
	p := lockPath(cacheDir, key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, nil, fmt.Errorf("lock: %w", err)
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		h := readHolder(f)
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, h, nil
		}
		return nil, nil, fmt.Errorf("lock %s: %w", p, err)
	}
	b, _ := json.Marshal(lockHolder{PID: os.Getpid(), RunID: runID, Node: node, Since: time.Now().UTC()})
	_ = f.Truncate(0)
	_, _ = f.WriteAt(append(b, '\n'), 0)
	return &keyLock{f: f}, nil, nil
}

func readHolder(f *os.File) *lockHolder {
	b := make([]byte, 512)
	n, _ := f.ReadAt(b, 0)
	var h lockHolder
	if json.Unmarshal(trimNL(b[:n]), &h) != nil {
		return &lockHolder{}
	}
	return &h
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == 0) {
		b = b[:len(b)-1]
	}
	return b
}

// waitKeyLock blocks until the lock is free (or ctx ends), polling: flock
// has no timeout, and a poll also notices a holder that died.
func waitKeyLock(ctx context.Context, cacheDir, key, runID, node string, timeout time.Duration) (*keyLock, error) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	delay := 20 * time.Millisecond
	for {
		lk, _, err := tryKeyLock(cacheDir, key, runID, node)
		if err != nil || lk != nil {
			return lk, err
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return nil, fmt.Errorf("gave up waiting for another process running the same node after %s (--lock-timeout)", timeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		if delay < 500*time.Millisecond {
			delay *= 2
		}
	}
}

func (l *keyLock) file() *os.File { return l.f }

func (l *keyLock) release() {
	if l != nil && l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

// waitForKey parks a node whose key another process is running: a worker
// waits for the lock and reports back.
func (a *applier) waitForKey(ns *nodeState, h *lockHolder) {
	who := "another cairn"
	if h != nil && h.PID > 0 {
		who = fmt.Sprintf("pid %d", h.PID)
		if h.RunID != "" {
			who += fmt.Sprintf(", run %s", h.RunID)
		}
	}
	a.printf("  … waiting for %s: running in %s\n", ns.n.Addr, who)
	ns.status = stRunning
	a.running[ns.n.ID] = ns
	ctx := a.ctx
	go func() {
		lk, err := waitKeyLock(ctx, a.cache.Dir, ns.key, a.runID, ns.n.Addr, a.opts.LockTimeout)
		a.events <- event{id: ns.n.ID, kind: "locked", locked: lk, err: err}
	}()
}
