package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		// The first lock of its folder.
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, nil, fmt.Errorf("lock: %w", err)
		}
		f, err = os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	}
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
// The processes that a dead run's node left behind are killed (see
// freeDeadHolders); note is told how many.
func waitKeyLock(ctx context.Context, cacheDir, key, runID, node string, timeout time.Duration, note func(killed int, run string)) (*keyLock, error) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	delay := 20 * time.Millisecond
	for {
		lk, h, err := tryKeyLock(cacheDir, key, runID, node)
		if err != nil || lk != nil {
			return lk, err
		}
		if n := freeDeadHolders(cacheDir, key); n > 0 && note != nil {
			note(n, h.RunID)
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
		lk, err := waitKeyLock(ctx, a.cache.Dir, ns.key, a.runID, ns.n.Addr, a.opts.LockTimeout, func(n int, run string) {
			a.printf("cairn: killed %d process(es) left holding %s by run %s, which is gone\n", n, ns.n.Addr, run)
		})
		a.events <- event{id: ns.n.ID, kind: "locked", locked: lk, err: err}
	}()
}

// reapLockHolders frees node locks held by the leftovers of dead runs. A
// node's processes inherit its lock, so that the lock lives exactly as
// long as they do; when the apply that ran the node is killed, its direct
// child dies with it, but what that child started may not (and when the
// apply died before journaling the node's start, nothing else names them):
// they would hold the node for ever. A lock file held by no live apply
// (every apply holds the cache's use lock, gc.lock, while it lives; node
// processes never do) and naming as its holder a run whose process is gone
// is held by such leftovers only: they are killed. With key set, only that
// node's lock is looked at. It returns, per dead run, how many processes
// it killed.
func reapLockHolders(cacheDir, key string) map[string]int {
	holders, live := lockOpeners(cacheDir, key)
	killed := map[string]int{}
	for path, pids := range holders {
		if live[path] {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		// Read after the scan: an apply that took the lock meanwhile has
		// named itself before it started anything.
		h := readHolder(f)
		f.Close()
		if h.RunID == "" || strings.ContainsAny(h.RunID, "/\x00") || h.RunID == ".." || h.RunID == "." {
			continue
		}
		if RunAlive(filepath.Join(cacheDir, "runs", h.RunID)) {
			continue
		}
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed[h.RunID]++
			}
		}
	}
	return killed
}

// freeDeadHolders is reapLockHolders for one node's lock; it returns how
// many processes it killed.
func freeDeadHolders(cacheDir, key string) int {
	n := 0
	for _, k := range reapLockHolders(cacheDir, key) {
		n += k
	}
	return n
}

// lockOpeners maps each node lock file of the cache (by the path the
// kernel reports) that processes other than this one have open to those
// processes, and sets live for the lock files that a live apply, one
// holding the cache's use lock, has open. With key set, only that node's
// lock file is looked for.
func lockOpeners(cacheDir, key string) (holders map[string][]int, live map[string]bool) {
	base, err := filepath.Abs(cacheDir)
	if err != nil {
		base = cacheDir
	}
	if r, err := filepath.EvalSymlinks(base); err == nil {
		base = r
	}
	locks := base + string(filepath.Separator) + "locks" + string(filepath.Separator)
	use := filepath.Join(base, "gc.lock")
	holders, live = map[string][]int{}, map[string]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	self := os.Getpid()
	for _, dir := range procs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil || pid == self {
			continue
		}
		fds, err := os.ReadDir(dir + "/fd")
		if err != nil {
			continue
		}
		var held []string
		uses := false
		for _, fd := range fds {
			target, err := os.Readlink(dir + "/fd/" + fd.Name())
			if err != nil {
				continue
			}
			switch {
			case target == use:
				uses = true
			case strings.HasPrefix(target, locks) && (key == "" || filepath.Base(target) == key):
				held = append(held, target)
			}
		}
		for _, l := range held {
			holders[l] = append(holders[l], pid)
			if uses {
				live[l] = true
			}
		}
	}
	return holders, live
}
