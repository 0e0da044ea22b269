package engine

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cairn-run/cairn/engine/fsdigest"
)

// noteInputNames keeps, for each folder among ns's declared inputs, the
// paths it holds as its key is taken (its entries, fsdigest.Names, and
// the folders on their way), so that the check after the run
// (changedInput) can tell a folder to which files were only added from
// one whose files changed. The loop calls it for a node about to run.
func (a *applier) noteInputNames(ns *nodeState) {
	if ns.env == nil {
		return
	}
	for _, p := range ns.spec.Common.Inputs {
		names, err := fsdigest.Names(filepath.Join(a.g.Root, p))
		if err != nil || names == nil {
			continue
		}
		if ns.inputNames == nil {
			ns.inputNames = map[string]map[string]bool{}
		}
		held := make(map[string]bool, len(names))
		for _, n := range names {
			for ; n != "" && !held[n]; n = parentRel(n) {
				held[n] = true
			}
		}
		ns.inputNames[p] = held
	}
}

// changedInput says, when a path whose content entered ns's key changed
// while ns ran (an edit, a node of another apply writing it or restoring
// another configuration's file there), that its result is not stored: ns
// may have read the new content, and its record would give that result to
// every later apply under the key of the old one. "" when none changed.
// A folder to which files were only added (a log, the node's own cache;
// Python's __pycache__ is in no digest at all) has not changed: its files
// are as its key says.
func (a *applier) changedInput(ns *nodeState) string {
	if ns.env == nil || a.cache == nil {
		return ""
	}
	for _, p := range a.g.ChangedInputs(ns.n, ns.spec, ns.env, a.cache.Stat) {
		if a.onlyAdded(ns, p) {
			continue
		}
		return fmt.Sprintf("its input %s changed while it ran (edited, or written by another apply or by the node itself): its result is not stored, as what it read may not be what its key was taken from; apply again (and if the node writes %s itself, have it write another file)", p, p)
	}
	return ""
}

// onlyAdded reports whether the folder input p of ns holds, without what
// was added since its key was taken, the content its key was taken from.
func (a *applier) onlyAdded(ns *nodeState, p string) bool {
	before, ok := ns.inputNames[p]
	if !ok {
		return false
	}
	full := filepath.Join(a.g.Root, p)
	now, err := fsdigest.Names(full)
	if err != nil {
		return false
	}
	added := map[string]fsdigest.Pending{}
	for _, rel := range now {
		if !before[rel] {
			added[addedRoot(rel, before)] = fsdigest.Pending{Remove: true}
		}
	}
	if len(added) == 0 {
		return false
	}
	d, err := a.cache.Stat.TreeWith(full, added)
	return err == nil && d == ns.env.Inputs[p]
}

// addedRoot is the outermost path on the way to rel, an entry added to a
// folder, that the folder did not hold before (held, see noteInputNames):
// a new folder is left out whole, not left behind empty.
func addedRoot(rel string, held map[string]bool) string {
	root := rel
	for p := parentRel(rel); p != ""; p = parentRel(p) {
		if !held[p] {
			root = p
		}
	}
	return root
}

// parentRel is the folder of the "/"-separated path rel, "" at the top.
func parentRel(rel string) string {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return ""
	}
	return rel[:i]
}
