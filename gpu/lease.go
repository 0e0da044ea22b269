package gpu

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Where leases live.
const (
	// DefaultLeaseDir is the machine-wide lease directory every cairn on the machine shares.
	DefaultLeaseDir = "/tmp/cairn-gpu-leases"
	// EnvLeaseDir overrides DefaultLeaseDir.
	EnvLeaseDir = "CAIRN_LEASE_DIR"
)

// ErrBusy: a device is leased by someone else. The error that wraps it is a *BusyError
// naming the device and its holder.
var ErrBusy = errors.New("gpu: device leased")

// LeaseDirPath is the lease directory for inv: CAIRN_LEASE_DIR or DefaultLeaseDir, with a
// "simulated" subdirectory for a simulated inventory so that simulated device 0 is never
// confused with a real GPU 0 on the same machine. env nil means os.Getenv.
func LeaseDirPath(env func(string) string, inv Inventory) string {
	if env == nil {
		env = os.Getenv
	}
	dir := env(EnvLeaseDir)
	if dir == "" {
		dir = DefaultLeaseDir
	}
	if inv != nil && inv.Source() == SourceSimulated {
		dir = filepath.Join(dir, "simulated")
	}
	return dir
}

// LeaseDir is a directory of per-device lock files ("gpu3.lock"). A device is leased while
// some process holds an exclusive flock on its file; the file's content names the holder for
// people. Lock files are never removed, so no lock is ever taken on a file about to vanish.
type LeaseDir struct {
	path string
}

// OpenLeaseDir opens (creating when needed) a lease directory. A directory it creates is
// world-writable with the sticky bit, like /tmp, so that every user's cairn can lease.
func OpenLeaseDir(path string) (*LeaseDir, error) {
	if path == "" {
		return nil, errors.New("gpu: lease directory: empty path")
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		// Every folder made here (CAIRN_LEASE_DIR and its simulated/
		// both, when neither exists) is world-writable with the sticky
		// bit: the umask would leave the parent 0755, and other users'
		// cairn could not lease.
		var made []string
		for d := path; ; d = filepath.Dir(d) {
			if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) || d == filepath.Dir(d) {
				break
			}
			made = append(made, d)
		}
		if err := os.MkdirAll(path, 0o777); err != nil {
			return nil, fmt.Errorf("gpu: lease directory: %w", err)
		}
		for _, d := range made {
			_ = os.Chmod(d, 0o777|fs.ModeSticky) // best effort: another user may have made it
		}
	} else if err != nil {
		return nil, fmt.Errorf("gpu: lease directory: %w", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("gpu: lease directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("gpu: lease directory %s: not a directory", path)
	}
	return &LeaseDir{path: path}, nil
}

// Path is the directory's path.
func (d *LeaseDir) Path() string { return d.path }

func (d *LeaseDir) file(index int) string {
	return filepath.Join(d.path, "gpu"+strconv.Itoa(index)+".lock")
}

// Holder says who holds a lease, for people reading `cairn gpus` or an error.
type Holder struct {
	RunID string    `json:"run,omitempty"`
	Node  string    `json:"node,omitempty"`
	PID   int       `json:"pid,omitempty"`
	Since time.Time `json:"since,omitzero"`
}

func (h Holder) String() string {
	var b strings.Builder
	b.WriteString("cairn")
	if h.RunID != "" {
		b.WriteString(" run " + h.RunID)
	}
	if h.Node != "" {
		if h.RunID != "" {
			b.WriteByte(',')
		}
		b.WriteString(" node " + h.Node)
	}
	if h.PID != 0 {
		if errors.Is(syscall.Kill(h.PID, 0), syscall.ESRCH) {
			// The cairn is gone (kill -9): what it started holds the lease.
			fmt.Fprintf(&b, " (pid %d, which has exited: processes it started still hold the GPU; the next apply of its cache stops them)", h.PID)
		} else {
			fmt.Fprintf(&b, " (pid %d)", h.PID)
		}
	}
	if h.RunID == "" && h.Node == "" && h.PID == 0 {
		b.WriteString(" (holder unknown)")
	}
	return b.String()
}

// BusyError is the error TryAcquire returns for a device someone else holds.
type BusyError struct {
	Index  int
	Holder Holder
}

func (e *BusyError) Error() string {
	msg := fmt.Sprintf("gpu: GPU %d is leased by %s", e.Index, e.Holder)
	if !e.Holder.Since.IsZero() {
		msg += " since " + e.Holder.Since.Format(time.DateTime)
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrBusy) hold.
func (e *BusyError) Unwrap() error { return ErrBusy }

// Lease is a set of devices held exclusively. Its lock lives as long as any process holds a
// copy of its descriptors: pass Files to the node's process (exec.Cmd.ExtraFiles) and start
// it. Keep the lease while the node runs and End it once the node is over: the lease ends
// then, even for a process that escaped the node's process group with the descriptors.
// Should cairn be killed meanwhile, the lease ends exactly when that process and every
// descendant that kept the descriptors have exited. (Release instead of End hands the lease
// to the processes that hold its descriptors.)
type Lease struct {
	Devices []int // in increasing order

	mu    sync.Mutex
	files []*os.File
}

// TryAcquire leases all the given devices or none, without waiting. When a device is held
// by someone else, the error is a *BusyError (errors.Is(err, ErrBusy)) naming it and its
// holder. h is written into the lock files for people to read.
func (d *LeaseDir) TryAcquire(indices []int, h Holder) (*Lease, error) {
	idx := slices.Clone(indices)
	slices.Sort(idx)
	for i, x := range idx {
		if x < 0 {
			return nil, fmt.Errorf("gpu: lease: device index %d is negative", x)
		}
		if i > 0 && idx[i-1] == x {
			return nil, fmt.Errorf("gpu: lease: device %d asked for twice", x)
		}
	}
	// Every contender locks in increasing index order, so whoever gets the lowest device
	// of a contested set is never starved by a rival holding a higher one.
	l := &Lease{Devices: idx}
	for _, x := range idx {
		f, err := d.lockOne(x)
		if err != nil {
			_ = l.Release()
			return nil, err
		}
		l.files = append(l.files, f)
	}
	if err := l.SetHolder(h); err != nil {
		_ = l.Release()
		return nil, err
	}
	return l, nil
}

// lockOne opens device x's lock file and takes its exclusive lock without waiting.
func (d *LeaseDir) lockOne(x int) (*os.File, error) {
	name := d.file(x)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o666)
	if errors.Is(err, fs.ErrPermission) {
		// Another user's file: a read-only descriptor locks just as well; the holder
		// line then stays theirs.
		f, err = os.Open(name)
	}
	if err != nil {
		return nil, fmt.Errorf("gpu: lease GPU %d: %w", x, err)
	}
	_ = f.Chmod(0o666) // best effort, so other users' cairn can open it read-write
	// Holders probes locks by taking them for an instant; retry briefly so that a probe is
	// not mistaken for a holder.
	for attempt := 0; ; attempt++ {
		err = flock(f, unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EWOULDBLOCK) || attempt == 3 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if errors.Is(err, unix.EWOULDBLOCK) {
		h, _ := readHolder(f)
		f.Close()
		return nil, &BusyError{Index: x, Holder: h}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("gpu: lease GPU %d: lock %s: %w", x, name, err)
	}
	return f, nil
}

// Holders lists the devices currently leased in this directory (their lock is held by some
// process) with the holders their files name.
func (d *LeaseDir) Holders() (map[int]Holder, error) {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return nil, fmt.Errorf("gpu: lease directory: %w", err)
	}
	out := map[int]Holder{}
	for _, e := range entries {
		num, ok := strings.CutPrefix(e.Name(), "gpu")
		num, ok2 := strings.CutSuffix(num, ".lock")
		x, err := strconv.Atoi(num)
		if !ok || !ok2 || err != nil || x < 0 || !e.Type().IsRegular() {
			continue
		}
		f, err := os.Open(filepath.Join(d.path, e.Name()))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("gpu: lease directory: %w", err)
		}
		// A shared lock succeeds exactly when no one holds the exclusive one.
		err = flock(f, unix.LOCK_SH|unix.LOCK_NB)
		switch {
		case err == nil:
			_ = flock(f, unix.LOCK_UN)
		case errors.Is(err, unix.EWOULDBLOCK):
			h, _ := readHolder(f)
			out[x] = h
		default:
			f.Close()
			return nil, fmt.Errorf("gpu: lease directory: probe %s: %w", e.Name(), err)
		}
		f.Close()
	}
	return out, nil
}

// Files are the locked descriptors, one per device, to hand to the node's process
// (exec.Cmd.ExtraFiles). Nil after Release.
func (l *Lease) Files() []*os.File {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.files)
}

// SetHolder rewrites the holder named in the lock files, for instance with the node's pid
// once its process has started. It needs the lease not yet released.
func (l *Lease) SetHolder(h Holder) error {
	if h.Since.IsZero() {
		h.Since = time.Now()
	}
	h.Since = h.Since.Round(time.Second)
	data, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("gpu: lease holder: %w", err)
	}
	data = append(data, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, f := range l.files {
		if _, err := f.WriteAt(data, 0); err != nil {
			if errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EBADF) {
				continue // a read-only descriptor on another user's file
			}
			return fmt.Errorf("gpu: lease GPU %d: write holder: %w", l.Devices[i], err)
		}
		if err := f.Truncate(int64(len(data))); err != nil {
			return fmt.Errorf("gpu: lease GPU %d: write holder: %w", l.Devices[i], err)
		}
	}
	return nil
}

// Release closes this process's copies of the lock descriptors. The lease ends when every
// process holding a copy has closed it or exited. Calling Release again does nothing.
func (l *Lease) Release() error { return l.close(false) }

// End ends the lease now, for every process holding a copy of its descriptors: the locks
// belong to the open file descriptions those copies share, and unlocking through this
// process's copy drops them for all (flock(2)). cairn ends a node's lease once the node's
// process group is gone, so that a process left behind with inherited descriptors (a
// child that left the group) does not keep the devices leased. Calling End or Release
// again does nothing.
func (l *Lease) End() error { return l.close(true) }

func (l *Lease) close(unlock bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for i, f := range l.files {
		if unlock {
			if err := flock(f, unix.LOCK_UN); err != nil {
				errs = append(errs, fmt.Errorf("unlock GPU %d: %w", l.Devices[i], err))
			}
		}
		if err := f.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	l.files = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gpu: release lease: %w", err)
	}
	return nil
}

// readHolder reads the holder a lock file names; an empty or unreadable one is unknown.
func readHolder(f *os.File) (Holder, error) {
	buf := make([]byte, 4096)
	n, err := f.ReadAt(buf, 0)
	if n == 0 && err != nil {
		return Holder{}, err
	}
	var h Holder
	if err := json.Unmarshal(buf[:n], &h); err != nil {
		return Holder{}, fmt.Errorf("gpu: lease holder: %w", err)
	}
	return h, nil
}

// flock calls flock(2), retrying when a signal interrupts it.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
