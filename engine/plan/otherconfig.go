package plan

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

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
