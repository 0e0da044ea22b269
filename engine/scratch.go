package engine

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// scratchFor is the node's private scratch folder (CAIRN_OUT_DIR),
// <run>/out/<node>, made on first use. It is an emptied folder of an
// earlier node when there is one (a rename), so that a run of many nodes
// that leave nothing there does not make a folder per node.
func (a *applier) scratchFor(ns *nodeState) string {
	a.scratchMu.Lock()
	defer a.scratchMu.Unlock()
	if ns.scratch != "" {
		return ns.scratch
	}
	d := filepath.Join(a.j.Dir, "out", ns.logName(1))
	ns.scratch = d
	a.scratchLeft = max(a.scratchLeft-1, 0)
	for len(a.freeScratch) > 0 {
		f := a.freeScratch[len(a.freeScratch)-1]
		a.freeScratch = a.freeScratch[:len(a.freeScratch)-1]
		// rename(2) itself, without os.Rename's look at d first: d, this
		// node's own name, is not there (and were it an empty folder, it
		// would be replaced by another).
		if syscall.Rename(f, d) == nil {
			return d
		}
		_ = os.Remove(f)
	}
	// One mkdir when the run's out folder exists, as it does after the
	// first node.
	if err := os.Mkdir(d, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		_ = os.MkdirAll(d, 0o777)
	}
	return d
}

// recycleFinished takes back the scratch folders of the nodes that ended
// since the last call. The loop calls it after dispatching what their end
// made ready, so that the next node of a chain does not wait for it.
func (a *applier) recycleFinished() {
	for _, ns := range a.finished {
		a.recycleScratch(ns)
	}
	clear(a.finished)
	a.finished = a.finished[:0]
}

// emptyDir reports whether the folder d can be read and holds nothing:
// an open and two reads of its entries, without the os.File that
// os.ReadDir would make (and offer to Go's poller).
func emptyDir(d string) bool {
	fd, err := syscall.Open(d, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	var buf [512]byte
	for {
		n, err := syscall.ReadDirent(fd, buf[:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return false
		}
		if n <= 0 {
			return true
		}
		if _, count, _ := syscall.ParseDirent(buf[:n], 1, nil); count > 0 {
			return false // ParseDirent leaves out "." and ".."
		}
	}
}

// recycleScratch takes back a finished node's scratch folder when the node
// left it empty (its processes are gone: nothing writes there any more),
// for a node that has none yet, or removes it where enough are kept for
// the nodes left. A folder with something in it stays where it is.
func (a *applier) recycleScratch(ns *nodeState) {
	a.scratchMu.Lock()
	defer a.scratchMu.Unlock()
	d := ns.scratch
	if d == "" {
		return
	}
	if !emptyDir(d) {
		return
	}
	if len(a.freeScratch) >= a.scratchLeft {
		// No node left would take it: removed now, while the run's
		// other nodes run, rather than at its end (a thousand nodes in
		// flight at once free a thousand folders).
		_ = syscall.Rmdir(d)
		return
	}
	free := filepath.Join(a.j.Dir, "out", ".free")
	if err := a.ensureDir(free); err != nil {
		return
	}
	to := filepath.Join(free, strconv.Itoa(a.scratchN))
	a.scratchN++
	if os.Rename(d, to) == nil {
		a.freeScratch = append(a.freeScratch, to)
	}
}

// dropFreeScratch removes the emptied scratch folders kept for reuse.
func (a *applier) dropFreeScratch() {
	a.scratchMu.Lock()
	defer a.scratchMu.Unlock()
	if a.scratchN > 0 {
		_ = os.RemoveAll(filepath.Join(a.j.Dir, "out", ".free"))
	}
	a.freeScratch = nil
}

// ensureDir makes a log folder the first time a node of this apply needs
// it; later nodes pay nothing.
func (a *applier) ensureDir(dir string) error {
	if _, ok := a.dirs.Load(dir); ok {
		return nil
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	a.dirs.Store(dir, true)
	return nil
}
