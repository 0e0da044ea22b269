package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/engine/failpoint"
	"github.com/cairn-run/cairn/storage/ofd"
)

// KeyLock is the per-key lock held while a node runs: a second apply (of
// this or another pipeline) that needs the same key waits, then takes the
// cache hit. It is a one-byte open-file-description lock in the cache's
// node lock file (<cache>/locks/nodes), at an offset taken from the key,
// taken through a descriptor of its own: the child inherits that
// descriptor, so the lock lives exactly as long as the processes using it,
// and a lock whose holders all died is free. Taking one creates no file.
// The locks of the paths the node writes are taken with it, through a
// descriptor of the workspace's path lock file (PathLockFile), inherited
// the same way.
type KeyLock struct {
	f     *os.File
	paths *os.File // nil when the node writes no path
}

// NodePaths are the paths a node writes, whose locks it takes with its
// key's: Abs, absolute, the symlinks of their folders resolved, in the
// workspace Root, whose symlinks are resolved too (see PathLockFile).
type NodePaths struct {
	Root string
	Abs  []string
}

// LockHolder is who holds a node lock, as far as /proc tells.
type LockHolder struct {
	PID   int    // the live apply holding it; 0 when none does
	RunID string // that apply's run
}

func nodeLockFile(cacheDir string) string {
	return filepath.Join(cacheDir, "locks", "nodes")
}

// PathLockFile is the lock file of the paths nodes write in the workspace
// root (symlinks resolved): <root>/.cairn/locks/paths. It is the
// workspace's, not the cache's: two applies writing one file take its lock
// in one place whichever cache each uses, and, the paths resolved, by
// whichever path (a symlink) each reached the workspace.
func PathLockFile(root string) string {
	return filepath.Join(root, ".cairn", "locks", "paths")
}

// keyOffset is a node key's byte in the node lock file: two keys share a
// lock only when 62 bits of their digests agree, which would only make one
// node wait for the other, never lose work.
func keyOffset(key string) int64 {
	b, err := hex.DecodeString(key[:min(16, len(key))])
	if err != nil || len(b) < 8 {
		// Not a digest (keys always are): its own bytes, padded.
		b = append([]byte(key), make([]byte, 8)...)
	}
	return ofd.Offset(b)
}

// outputOffset is the byte of a path a node writes (absolute and clean)
// in the node lock file, taken from its digest as keyOffset is from a key.
func outputOffset(abs string) int64 {
	sum := sha256.Sum256([]byte("output\x00" + abs))
	return ofd.Offset(sum[:8])
}

// TryKeyLock takes the lock without waiting. It returns nil when another
// process holds it.
func TryKeyLock(cacheDir, key string) (*KeyLock, error) {
	lk, _, err := TryNodeLock(cacheDir, key, NodePaths{})
	return lk, err
}

// TryNodeLock takes, without waiting, key's lock and the lock of each path
// the node writes (paths): all of them, or none. Two applies in one
// workspace whose nodes are different work (another --var) but write one
// file would otherwise both write it at once, and the first to finish
// would record the other's content under its own key, for every later
// cache hit to restore. When another process holds one of them it returns
// nil and that output ("" for the key's lock).
func TryNodeLock(cacheDir, key string, paths NodePaths) (*KeyLock, string, error) {
	f, err := openNodeLockFile(nodeLockFile(cacheDir))
	if err != nil {
		return nil, "", err
	}
	if ok, err := ofd.TryLock(f, keyOffset(key)); err != nil || !ok {
		f.Close()
		return nil, "", err
	}
	lk := &KeyLock{f: f}
	if len(paths.Abs) == 0 {
		return lk, "", nil
	}
	if lk.paths, err = openNodeLockFile(PathLockFile(paths.Root)); err != nil {
		lk.Release()
		// The workspace's file, not the cache's: say which and what for.
		return nil, "", fmt.Errorf("cannot lock the paths the node writes (%w): cairn locks them in that file of the workspace, whatever the cache; make it a file this user can write, or remove it (cairn makes it again)", err)
	}
	for _, out := range paths.Abs {
		if ok, err := ofd.TryLock(lk.paths, outputOffset(out)); err != nil || !ok {
			lk.Release()
			return nil, out, err
		}
	}
	return lk, "", nil
}

// openNodeLockFile opens the lock file p, making its folder the first time.
func openNodeLockFile(p string) (*os.File, error) {
	f, err := openLockFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		f, err = openLockFile(p)
	}
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	return f, nil
}

// openLockFile opens (creating) the node lock file, as os.OpenFile does
// but with one system call where os.OpenFile makes five (it offers the
// file to Go's poller, which refuses regular files): one open a node.
func openLockFile(p string) (*os.File, error) {
	fd, err := syscall.Open(p, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o666)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// WaitKeyLock blocks until the lock is free (or ctx ends), polling: the
// lock has no timeout, and a poll also notices a holder that died.
// Each poll takes it with try (TryKeyLock when nil: the caller may note
// who holds it as it takes it), which says, when the lock is held, which:
// the key's ("") or that of the path it names. The processes that a dead
// run's node left behind holding key's lock, or the lock of one of paths,
// are killed (see ReapLockHolders, ReapPathHolders); note is told how
// many. Past timeout (0: none) it gives up, naming the lock it waited for
// last.
func WaitKeyLock(ctx context.Context, cacheDir, key string, paths NodePaths, timeout time.Duration, try func() (*KeyLock, string, error), note func(killed int, run string)) (*KeyLock, error) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	if try == nil {
		try = func() (*KeyLock, string, error) {
			lk, err := TryKeyLock(cacheDir, key)
			return lk, "", err
		}
	}
	delay := 20 * time.Millisecond
	for {
		lk, held, err := try()
		if err != nil || lk != nil {
			return lk, err
		}
		for _, left := range []map[string]map[int]bool{ReapLockHolders(cacheDir, key), ReapPathHolders(paths)} {
			for run, pids := range left {
				if note != nil {
					note(len(pids), run)
				}
			}
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			if held != "" {
				if rel, err := filepath.Rel(paths.Root, held); err == nil && filepath.IsLocal(rel) {
					held = rel
				}
				return nil, fmt.Errorf("gave up after %s (--lock-timeout) waiting for the lock of %s, which it writes: another node of this apply, or another process, is writing that file", timeout, held)
			}
			return nil, fmt.Errorf("gave up after %s (--lock-timeout) waiting for its key's lock: another node of this apply, or another process, is running the same work", timeout)
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

func (l *KeyLock) File() *os.File { return l.f }

// Files are the descriptors the node's process inherits: the key's lock,
// and its paths' when it writes any.
func (l *KeyLock) Files() []*os.File {
	if l.paths == nil {
		return []*os.File{l.f}
	}
	return []*os.File{l.f, l.paths}
}

func (l *KeyLock) Release() {
	if l == nil {
		return
	}
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
	if l.paths != nil {
		_ = l.paths.Close()
		l.paths = nil
	}
}

// KeyLockHolder says which live apply holds key's lock.
func KeyLockHolder(cacheDir, key string) LockHolder {
	return lockHolder(cacheScope(cacheDir), keyOffset(key))
}

// OutputLockHolder says which live apply holds the lock of the output
// path abs in the workspace root (see TryNodeLock).
func OutputLockHolder(root, abs string) LockHolder {
	return lockHolder(pathScope(root), outputOffset(abs))
}

func lockHolder(sc lockScope, off int64) LockHolder {
	s := scanNodeLocks(sc, map[int64]bool{off: true})
	pid := s.live[off]
	return LockHolder{PID: pid, RunID: s.runs[pid]}
}

// lockScope is a lock file of node locks, with what tells a live apply
// among the processes holding them, and its run, by the files they have
// open (their /proc fd links).
type lockScope struct {
	file string
	// live: the file is one every live apply holding the locks keeps
	// open, and node processes never have.
	live func(target string) bool
	// run is the run whose lock the file is ("" when it is no run's).
	run func(target string) string
}

// cacheScope is the cache's node lock file: a live apply holds the
// cache's use lock (gc.lock), and its run's lock in the cache's runs.
func cacheScope(cacheDir string) lockScope {
	base := resolved(cacheDir)
	use := filepath.Join(base, "gc.lock")
	runs := filepath.Join(base, "runs") + string(filepath.Separator)
	return lockScope{
		file: nodeLockFile(base),
		live: func(target string) bool { return target == use },
		run: func(target string) string {
			if strings.HasPrefix(target, runs) && filepath.Base(target) == "lock" {
				return filepath.Base(filepath.Dir(target))
			}
			return ""
		},
	}
}

// pathScope is the workspace's path lock file: the applies writing the
// workspace may use any cache, so a live one is a process holding some
// cache's use lock (gc.lock), and its run is the one whose lock
// (<cache>/runs/<run>/lock) it holds.
func pathScope(root string) lockScope {
	return lockScope{
		file: PathLockFile(resolved(root)),
		live: func(target string) bool { return filepath.Base(target) == "gc.lock" },
		run: func(target string) string {
			run := filepath.Dir(target)
			if filepath.Base(target) == "lock" && filepath.Base(filepath.Dir(run)) == "runs" {
				return filepath.Base(run)
			}
			return ""
		},
	}
}

// resolved is dir, absolute, its symlinks resolved where it exists: what
// /proc shows of a file in it.
func resolved(dir string) string {
	base, err := filepath.Abs(dir)
	if err != nil {
		base = dir
	}
	if r, err := filepath.EvalSymlinks(base); err == nil {
		base = r
	}
	return base
}

// nodeLockScan is what /proc says of the node locks of one lock file.
type nodeLockScan struct {
	holders map[int64][]int // lock offset -> the processes sharing it
	live    map[int64]int   // lock offset -> a live apply among them
	runs    map[int]string  // live apply -> its run id
}

// scanNodeLocks finds, through /proc, the processes holding locks of the
// lock file of sc (only those at offs, when offs is not nil). A process
// with a file open that sc says only a live apply has (gc.lock) is one:
// every apply keeps it open while it lives, and node processes never have
// it.
func scanNodeLocks(sc lockScope, offs map[int64]bool) nodeLockScan {
	s := nodeLockScan{holders: map[int64][]int{}, live: map[int64]int{}, runs: map[int]string{}}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(dir + "/fd")
		if err != nil {
			continue
		}
		var held []int64
		uses, run := false, ""
		for _, fd := range fds {
			target, err := os.Readlink(dir + "/fd/" + fd.Name())
			if err != nil {
				continue
			}
			switch {
			case sc.live(target):
				uses = true
			case target == sc.file:
				for _, o := range ofd.Held(pid, fd.Name()) {
					if offs == nil || offs[o] {
						held = append(held, o)
					}
				}
			default:
				if r := sc.run(target); r != "" {
					run = r
				}
			}
		}
		for _, o := range held {
			s.holders[o] = append(s.holders[o], pid)
			if uses {
				s.live[o] = pid
				s.runs[pid] = run
			}
		}
	}
	return s
}

// ReapLockHolders frees node locks held by the leftovers of dead runs. A
// node's processes inherit its lock, so that the lock lives exactly as
// long as they do; when the apply that ran the node is killed, its direct
// child dies with it, but what that child started may not (and when the
// apply died before journaling the node's start, nothing else names them):
// they would hold the node for ever. A lock that no live apply shares is
// held by such leftovers only: they are killed. It is looked at twice, so
// that a lock an apply took during the first look (its child can show
// before the apply does) is left alone. With key set, only that node's
// lock is looked at. It returns, per dead run (from the CAIRN_RUN_ID the
// leftovers were started with; "" when they lost it), the processes it
// killed, each once (a process holding several node locks is one).
func ReapLockHolders(cacheDir, key string) map[string]map[int]bool {
	var offs map[int64]bool
	if key != "" {
		offs = map[int64]bool{keyOffset(key): true}
	}
	return reapLocks(cacheScope(cacheDir), offs)
}

// ReapPathHolders is ReapLockHolders for the locks of the paths a node
// writes (paths): a waiter for one of them frees it from the leftovers of
// a dead run, whatever cache that run used, and whether or not its run
// folder is still there to be recovered.
func ReapPathHolders(paths NodePaths) map[string]map[int]bool {
	if len(paths.Abs) == 0 {
		return nil
	}
	offs := map[int64]bool{}
	for _, p := range paths.Abs {
		offs[outputOffset(p)] = true
	}
	return reapLocks(pathScope(paths.Root), offs)
}

// reapLocks kills the processes holding locks of sc's file (at offs; all
// when nil) that no live apply shares, twice in a row (ReapLockHolders).
func reapLocks(sc lockScope, offs map[int64]bool) map[string]map[int]bool {
	orphaned := func(s nodeLockScan) map[int64][]int {
		out := map[int64][]int{}
		for o, pids := range s.holders {
			if _, ok := s.live[o]; !ok {
				out[o] = pids
			}
		}
		return out
	}
	first := orphaned(scanNodeLocks(sc, offs))
	killed := map[string]map[int]bool{}
	if len(first) == 0 {
		return killed
	}
	for o, pids := range orphaned(scanNodeLocks(sc, offs)) {
		if _, ok := first[o]; !ok {
			continue
		}
		for _, pid := range pids {
			if pid == os.Getpid() {
				continue
			}
			run := procEnv(pid, "CAIRN_RUN_ID")
			sig := syscall.SIGKILL
			if failpoint.LateLockKills() {
				sig = 0
			}
			if syscall.Kill(pid, sig) == nil {
				if killed[run] == nil {
					killed[run] = map[int]bool{}
				}
				killed[run][pid] = true
			}
		}
	}
	return killed
}

// RunProcesses returns, per run, the live processes started with that
// run's CAIRN_RUN_ID (those whose environment /proc lets this process
// read): a node's processes, and what they started.
func RunProcesses() map[string][]int {
	out := map[string][]int{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if run := procEnv(pid, "CAIRN_RUN_ID"); run != "" {
			out[run] = append(out[run], pid)
		}
	}
	return out
}

// procEnv is the value of name in the environment process pid started
// with ("" when unreadable or unset).
func procEnv(pid int, name string) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}
