package runlog

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/cairn-run/cairn/dsl/failclass"
)

// Unfinished reads the runs that matter for recovery: the oldest run
// that did not end cleanly (no end marker, or interrupted) and every run
// after it. Runs before it ended with their run_end record, so none of
// their nodes can be left interrupted, and whatever they recorded is
// overridden by later runs or does not matter: their journals are not
// read. A run that ended cleanly but has no marker (written by an older
// cairn) gets one.
//
// The newest run of that settled prefix is kept in runs/settled, so the
// next apply does not look at those runs again: an apply's start does not
// grow with the number of runs a cache has seen.
func Unfinished(cacheDir string) ([]*RunInfo, error) {
	settled := readSettled(cacheDir)
	ds, seen, err := dirsAfter(cacheDir, settled)
	if err == nil && settled != "" && !seen {
		// It names no run folder (collected by gc, or read half
		// written): every run is looked at.
		settled = ""
		ds, _, err = dirsAfter(cacheDir, "")
	}
	if err != nil {
		return nil, err
	}
	last := settled
	var runs []*RunInfo
	for _, dir := range ds {
		id := filepath.Base(dir)
		if len(runs) == 0 {
			if m := readEndMarker(dir); m != nil && m.Status != "interrupted" {
				last = id
				continue
			}
		}
		ri, err := Load(dir)
		if err != nil || ri.readErr != nil && len(ri.Entries) == 0 {
			continue
		}
		if len(runs) == 0 {
			switch {
			case ri.State != "running" && ri.State != "interrupted" && ri.Pipeline != "":
				// It ended with its run_end record: mark it, and skip it.
				writeEndMarker(dir, endMarker{Pipeline: ri.Pipeline, Status: ri.State})
				last = id
				continue
			case ri.State == "interrupted" && !hasOpenNodes(ri) && ri.Damaged == "" && fileExists(filepath.Join(dir, "reaped")):
				// Stopped between nodes, and looked at for leftovers
				// already: nothing of it was left running. (A damaged
				// journal may have lost the records of nodes it left
				// running: it is kept.)
				last = id
				continue
			}
		}
		runs = append(runs, ri)
	}
	if last != settled {
		writeSettled(cacheDir, last)
	}
	return runs, nil
}

// settledFile names, inside a cache's runs folder, the newest run that,
// with every run before it, has ended and needs no recovery.
const settledFile = "settled"

// readSettled returns the settled run id of a cache, or "".
func readSettled(cacheDir string) string {
	b, err := os.ReadFile(filepath.Join(cacheDir, "runs", settledFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// writeSettled records the settled run id. It is a hint, overwritten in
// place: every apply moves it on, and a rename over it would have ext4
// write the new file out at once (auto_da_alloc), about half a
// millisecond of every no-op apply. Run ids have one length, so a reader
// that catches it half written, or a crash in the middle, finds a value
// that names no run folder, which reads as none (every run is looked at
// again, and the next apply writes it whole). Two applies may race to
// write it; both values are true.
func writeSettled(cacheDir, id string) {
	if id == "" {
		return
	}
	f, err := os.OpenFile(filepath.Join(cacheDir, "runs", settledFile), os.O_WRONLY|os.O_CREATE, 0o666)
	if err != nil {
		return
	}
	defer f.Close()
	b := []byte(id + "\n")
	if _, err := f.WriteAt(b, 0); err != nil {
		return
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > int64(len(b)) {
		_ = f.Truncate(int64(len(b)))
	}
}

// hasOpenNodes reports whether a run's journal has a node started and not
// ended, or ended by an interrupt.
func hasOpenNodes(ri *RunInfo) bool {
	open := map[string]bool{}
	for _, e := range ri.Entries {
		switch e.T {
		case Started:
			open[e.Node] = true
		case Failed:
			if e.Class != failclass.Interrupted {
				delete(open, e.Node)
			}
		case Finished, Cached, Skipped:
			delete(open, e.Node)
		}
	}
	return len(open) > 0
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
