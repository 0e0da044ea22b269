package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/cairn-run/cairn/engine/cas"
	"github.com/cairn-run/cairn/engine/store"
)

// OtherConfigurations returns what taking rec, the cached record of the
// node address addr of pipeline, from the cache removes from the node's
// declared output folders (outputs, workspace-relative; root is the
// workspace): files are the files there that rec does not hold and that
// another record of the address (another configuration) holds with the
// same content, whose content the cache still has, and does not mark kept
// (store.Record.Kept); a downstream reading the folder would read them as
// rec's. folders are the folders below a declared one that removing files
// empties, deepest first: a folder that was empty, or that holds anything
// else or one of rec's outputs (restored there), stays, as does the
// declared folder. Both are "/"-separated, files sorted. Any other file
// (the user's own) stays.
//
// Apply removes them once rec is restored (restore writes only rec's
// files, so the same are found before and after it); plan digests a
// downstream's input as it will be then.
func OtherConfigurations(root, pipeline, addr string, outputs []string, rec *store.Record, cache *store.Cache) (files, folders []string) {
	extras := map[string]string{} // extra file → its declared folder
	for _, o := range outputs {
		full := filepath.Join(root, o)
		if st, err := os.Lstat(full); err != nil || !st.IsDir() {
			continue
		}
		_ = filepath.WalkDir(full, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if rel, err := filepath.Rel(root, p); err == nil {
				if _, ok := rec.Outputs[filepath.ToSlash(rel)]; !ok {
					extras[filepath.ToSlash(rel)] = filepath.ToSlash(filepath.Clean(o))
				}
			}
			return nil
		})
	}
	if len(extras) == 0 {
		return nil, nil
	}
	left := make([]string, 0, len(extras))
	for p := range extras {
		left = append(left, p)
	}
	slices.Sort(left)
	for r := range otherRecords(pipeline, addr, rec, cache) {
		rest := left[:0]
		for _, p := range left {
			want, ok := r.Outputs[p]
			_, inline := r.Inline[p]
			if ok && !r.IsKept(p) && (inline || cache.Blobs.Has(cas.Digest(want))) {
				if _, same := OutputState(root, p, want, cache.Stat); same {
					files = append(files, p)
					continue
				}
			}
			rest = append(rest, p)
		}
		left = rest
		if len(left) == 0 {
			break
		}
	}
	slices.Sort(files)
	return files, emptiedFolders(root, files, extras, rec)
}

// otherRecords yields the records of the address other than rec: the one
// its workspace held first (switching back to a configuration), then the
// others, newest first. The index names them (store.Cache.KeysOf): no
// record of another address is read.
func otherRecords(pipeline, addr string, rec *store.Record, cache *store.Cache) func(yield func(*store.Record) bool) {
	return func(yield func(*store.Record) bool) {
		held := cache.HeldKey(pipeline, addr)
		if held != "" && held != rec.Key {
			if r, ok := cache.Lookup(held); ok && !yield(r) {
				return
			}
		}
		for _, k := range cache.KeysOf(pipeline, addr) {
			if k == rec.Key || k == held {
				continue
			}
			if r, ok := cache.Lookup(k); ok && !yield(r) {
				return
			}
		}
	}
}

// emptiedFolders returns the folders below the declared folders (decl:
// each extra file's) that hold nothing once files are removed, deepest
// first: each holds only removed files and emptied folders, and no output
// of rec lies below it.
func emptiedFolders(root string, files []string, decl map[string]string, rec *store.Record) []string {
	if len(files) == 0 {
		return nil
	}
	gone := map[string]bool{}
	for _, f := range files {
		gone[f] = true
	}
	// Folders on the way to rec's outputs hold them once restored.
	restored := map[string]bool{}
	for p := range rec.Outputs {
		for d := path.Dir(p); d != "." && d != "/" && !restored[d]; d = path.Dir(d) {
			restored[d] = true
		}
	}
	cand := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f); d != decl[f] && strings.HasPrefix(d, decl[f]+"/"); d = path.Dir(d) {
			cand[d] = true
		}
	}
	dirs := make([]string, 0, len(cand))
	for d := range cand {
		dirs = append(dirs, d)
	}
	// Deepest first: a folder's subfolders are decided before it.
	slices.SortFunc(dirs, func(a, b string) int {
		if n := strings.Count(b, "/") - strings.Count(a, "/"); n != 0 {
			return n
		}
		return strings.Compare(a, b)
	})
	var out []string
	for _, d := range dirs {
		if restored[d] {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(d)))
		if err != nil {
			continue
		}
		empty := true
		for _, e := range ents {
			if !gone[d+"/"+e.Name()] {
				empty = false
				break
			}
		}
		if empty {
			gone[d] = true
			out = append(out, d)
		}
	}
	return out
}

// InTheWay is what stands where a cached record's outputs go, so that
// restoring them would fail: a folder where an output file goes, or a
// file where a folder on an output's way goes (a node whose output was a
// file in one configuration and a folder in another).
type InTheWay struct {
	// Files and Folders are cairn's own output of the configuration the
	// workspace holds (store.Cache.HeldKey): files that its record holds,
	// with that content, and does not mark kept, and the folders holding
	// only those, deepest first. Apply removes them before it restores.
	Files, Folders []string
	// User, when not "", is the first path in the way that holds
	// something else (the user's): apply refuses to restore Output over
	// it, and Refusal says what to do.
	User, Output string
	// Holds, where User is a folder where Output, a file, goes, is what
	// in it cairn did not write; "": User is a file where a folder goes.
	Holds string
}

// Refusal says why apply will not restore the cached output into the
// workspace at root, and what to do; "" when nothing of the user's is in
// the way.
func (w InTheWay) Refusal(root string) string {
	if w.User == "" {
		return ""
	}
	full := filepath.Join(root, filepath.FromSlash(w.Output))
	user := filepath.Join(root, filepath.FromSlash(w.User))
	if w.Holds != "" {
		return fmt.Sprintf("the cached output %s is not restored to %s: the folder there holds %s, which cairn did not write; %s is a folder: remove it, or move it aside, and apply again", w.Output, full, w.Holds, user)
	}
	return fmt.Sprintf("the cached output %s is not restored to %s: %s is a file where a folder goes, and cairn did not write it: remove it, or move it aside, and apply again", w.Output, full, user)
}

// RestoreInTheWay finds what stands where rec's outputs go in the
// workspace at root (rec, a cached record of the node address addr of
// pipeline): cairn's own output of the configuration the workspace holds,
// which apply replaces, or something of the user's, which it leaves and
// refuses to restore over. It looks at each output with one lstat; only
// what is in the way is read further.
func RestoreInTheWay(root, pipeline, addr string, rec *store.Record, cache *store.Cache) InTheWay {
	var w InTheWay
	var held *store.Record
	heldRead := false
	own := func(p string) bool {
		if !heldRead {
			heldRead = true
			if k := cache.HeldKey(pipeline, addr); k != "" && k != rec.Key {
				held, _ = cache.Lookup(k)
			}
		}
		if held == nil || held.IsKept(p) {
			return false
		}
		want, ok := held.Outputs[p]
		if !ok {
			return false
		}
		_, same := OutputState(root, p, want, cache.Stat)
		return same
	}
	seen := map[string]bool{}
	for _, p := range slices.Sorted(maps.Keys(rec.Outputs)) {
		full := filepath.Join(root, filepath.FromSlash(p))
		st, err := os.Lstat(full)
		switch {
		case err == nil && st.IsDir():
			if seen[p] {
				continue
			}
			seen[p] = true
			if user := w.ownFolder(root, p, own); user != "" {
				w.User, w.Output, w.Holds = p, p, user
				return w
			}
		case errors.Is(err, syscall.ENOTDIR):
			// A file stands where a folder on the output's way goes.
			for d := range parentsUp(p) {
				ds, err := os.Lstat(filepath.Join(root, filepath.FromSlash(d)))
				if err != nil || ds.IsDir() {
					continue
				}
				if seen[d] {
					break
				}
				seen[d] = true
				if !ds.Mode().IsRegular() || !own(d) {
					w.User, w.Output = d, p
					return w
				}
				w.Files = append(w.Files, d)
				break
			}
		}
	}
	return w
}

// ownFolder adds to w the files and folders of the folder p if all it
// holds is cairn's own (own); otherwise it adds nothing and returns the
// first path in it that is not.
func (w *InTheWay) ownFolder(root, p string, own func(string) bool) string {
	var files, folders []string
	user := ""
	_ = filepath.WalkDir(filepath.Join(root, filepath.FromSlash(p)), func(path string, d fs.DirEntry, err error) error {
		rel, rerr := filepath.Rel(root, path)
		if err != nil || rerr != nil {
			user = p
			return filepath.SkipAll
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			folders = append(folders, rel)
		case d.Type().IsRegular() && own(rel):
			files = append(files, rel)
		default:
			user = rel
			return filepath.SkipAll
		}
		return nil
	})
	if user != "" {
		return user
	}
	// A folder holding none of those files (empty, or holding only
	// empty folders) is no configuration's output: records hold files.
	holding := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f); d != "." && !holding[d]; d = path.Dir(d) {
			holding[d] = true
		}
	}
	for _, d := range folders {
		if !holding[d] {
			return d
		}
	}
	slices.Reverse(folders) // a folder after what it holds
	w.Files = append(w.Files, files...)
	w.Folders = append(w.Folders, folders...)
	return ""
}

// parentsUp yields the folders on the way to p ("/"-separated), the
// workspace's top one first.
func parentsUp(p string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for i := strings.IndexByte(p, '/'); i > 0; i = nextSlash(p, i) {
			if !yield(p[:i]) {
				return
			}
		}
	}
}

// nextSlash is the index of the first '/' in p after i, or -1.
func nextSlash(p string, i int) int {
	j := strings.IndexByte(p[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}
