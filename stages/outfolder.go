package stages

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"

	"github.com/cairn-run/cairn/dsl/failclass"
)

// OutLockFile is the lock file in an optimizer job's out folder: the apply
// that writes the folder holds it (flock) until it ends, and writes in it
// who it is, so that another apply into the folder refuses, naming it.
const OutLockFile = ".cairn-out.lock"

// outOwner is what the lock file says of the apply holding it.
type outOwner struct {
	PID     int    `json:"pid"`
	Host    string `json:"host"`
	Job     string `json:"job"`
	Started string `json:"started"`
}

// heldOut are the out folders this process holds, by absolute path; a
// folder's lock is held until the process ends.
var heldOut = struct {
	sync.Mutex
	m map[string]*flock.Flock
}{m: map[string]*flock.Flock{}}

// holdOutFolder takes the out folder's lock for this process, which holds
// it until it ends. It returns a refusal, for people, when another process
// holds it; job names the job writing the folder. The wait for that
// process to say who it is happens outside heldOut's mutex: a folder
// another apply holds does not keep this process from taking others.
func holdOutFolder(root, out, job string) (string, error) {
	dir := filepath.Join(root, out)
	path := filepath.Join(dir, OutLockFile)
	taken, err := takeOutFolder(dir, out, path, job)
	if err != nil || taken {
		return "", err
	}
	return fmt.Sprintf("the out folder %s is being written by %s; nothing was run. Wait for that apply to end (the next one finds what it left), or choose another out folder", out, outOwnerOf(dir, path)), nil
}

// takeOutFolder takes the lock of the folder dir (out as the pipeline
// names it, path its lock file) under heldOut's mutex: taken is false when
// another process holds it.
func takeOutFolder(dir, out, path, job string) (taken bool, err error) {
	heldOut.Lock()
	defer heldOut.Unlock()
	if _, ok := heldOut.m[dir]; ok {
		return true, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	fl := flock.New(path)
	ok, err := fl.TryLock()
	if err != nil {
		return false, fmt.Errorf("cannot lock the out folder %s: %w", out, err)
	}
	if !ok {
		return false, nil
	}
	host, _ := os.Hostname()
	b, _ := json.Marshal(outOwner{PID: os.Getpid(), Host: host, Job: job, Started: time.Now().UTC().Format(time.RFC3339)})
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		fl.Unlock()
		return false, fmt.Errorf("cannot write the out folder's lock file %s: %w", filepath.Join(out, OutLockFile), err)
	}
	heldOut.m[dir] = fl
	return true, nil
}

// waitingForOwner is called when holdOutFolder starts to wait for the
// process holding dir to say who it is (tests watch it).
var waitingForOwner = func(dir string) {}

// outOwnerOf says who holds the out folder dir, from its lock file at
// path. The owner writes who it is right after it takes the lock: it is
// given a moment (up to half a second) to.
func outOwnerOf(dir, path string) string {
	waitingForOwner(dir)
	for range 50 {
		var o outOwner
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &o) == nil && o.PID > 0 {
			return fmt.Sprintf("the apply of job %s (pid %d on %s, since %s)", o.Job, o.PID, o.Host, o.Started)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "another process"
}

// outFolderHeld reports whether a live process holds the lock of the out
// folder out (workspace-relative): an apply is writing it now. It looks,
// in /proc/locks, for a flock on the lock file, and takes no lock: taking
// it even for a moment could make that apply, or one starting, find the
// folder held and refuse. A lock is the file's when its device and inode
// are the file's, or its inode is and it is held by the pid the file
// names (on an overlay or btrfs, stat's device is not the one
// /proc/locks shows). It is false where there is no /proc/locks (macOS):
// the folder is then taken as not held.
func outFolderHeld(root, out string) bool {
	path := filepath.Join(root, out, OutLockFile)
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false
	}
	var o outOwner
	if ob, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(ob, &o)
	}
	dev := fmt.Sprintf("%02x:%02x", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)))
	ino := fmt.Sprint(st.Ino)
	for line := range strings.Lines(string(b)) {
		// "1: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INODE 0 EOF"; a process
		// waiting for the lock has a line "1: -> FLOCK ..." (not held).
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" {
			continue
		}
		at := strings.LastIndex(f[5], ":")
		if at < 0 || f[5][at+1:] != ino {
			continue
		}
		if f[5][:at] == dev || o.PID > 0 && f[4] == strconv.Itoa(o.PID) {
			return true
		}
	}
	return false
}

// holdOut takes the out folder's lock for a node (holdOutFolder), as an
// outcome when it cannot: refused (exit 2) when another apply holds it.
func holdOut(rt Runtime, n *Node, out string) *Outcome {
	msg, err := holdOutFolder(rt.Root(), out, n.EachKey)
	switch {
	case err != nil:
		return &Outcome{Class: failclass.Infra, Message: err.Error()}
	case msg != "":
		return &Outcome{Class: failclass.Setup, Refused: true, Message: msg}
	}
	return nil
}

// replacing reports whether the apply's --replace names the node or one
// of its upstreams (stages.Replacer), and the command that replaces it.
func replacing(rt Runtime) (bool, string) {
	if r, ok := rt.(Replacer); ok {
		return r.Replacing(), r.ReplaceCommand()
	}
	return false, "cairn apply ... --replace ADDRESS"
}

// OutFolderWriter is implemented by kinds whose node may write a file into
// an optimizer job's out folder beside the job's artifacts (an
// evaluation's scores: validation/seed_scores.jsonl, test/*_scores.jsonl):
// its outputs that lie in a job's out folder (InJobOutFolder) are the
// out folder's, as an OutFolderKeeper's are: a cached record is not
// restored over a different file there, and the node runs instead.
type OutFolderWriter interface {
	WritesIntoOutFolders()
}

// WritesIntoOutFolders implements OutFolderWriter: an evaluation's scores
// file in a job's out folder is the job's, as its selection.json and
// test.json made from it are.
func (Evaluate) WritesIntoOutFolders() {}

// InJobOutFolder reports whether the workspace-relative path p lies in an
// optimizer job's out folder: a folder above it, in the workspace root,
// holds a job.json.
func InJobOutFolder(root, p string) bool {
	for dir := filepath.Dir(filepath.Clean(p)); dir != "." && dir != string(filepath.Separator) && filepath.IsLocal(dir); dir = filepath.Dir(dir) {
		if fi, err := os.Lstat(filepath.Join(root, dir, "job.json")); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}
