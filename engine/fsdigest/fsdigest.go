// Package fsdigest computes the digests of the input files and directories
// that enter cairn's node keys, and remembers them in a stat cache so that
// `cairn plan` over an unchanged tree does not read it again.
//
// # Digests
//
// The digest of a file is the lowercase hex sha256 of its content. Its name,
// mode and times do not enter it.
//
// The digest of a directory is the lowercase hex sha256 of
//
//	"cairn.tree.v1\n" followed by one record per entry of the tree
//
// The tree is walked depth first, the entries of each directory visited in
// byte order of their names (so "a/x" comes before "a.txt": the directory
// "a" sorts before the file "a.txt"). Paths are relative to the root,
// separated by "/". The records are:
//
//	regular file:     <path> "\x00" <"x" if any exec bit is set, else "-"> "\x00" <file digest> "\n"
//	empty directory:  <path> "/\x00d\n"
//	symbolic link:    <path> "\x00l\x00" <link target> "\n"
//
// Directories that hold something contribute only through their entries;
// the root itself contributes no record, so an empty root hashes
// "cairn.tree.v1\n" alone. Symbolic links inside the tree are not followed:
// their target text enters the digest as written, with every backslash
// written as `\\` and every newline as `\n`, so that no two trees share an
// encoding. A root given as a symbolic link is followed. Hidden files count
// like any other. One thing is skipped: a folder named __pycache__ inside
// the tree, with all it holds, is left out as if it were not there (so a
// folder that holds nothing else is an empty directory). Python writes its
// bytecode there beside the modules a program imports, derived from the
// sources beside it and never changing what the program does; counted, the
// first run of a node that imports a module from an input folder would
// change its own key. So is a file named .cairn-out.lock (OutLock): the
// lock an apply holds on an optimizer job's out folder, which says which
// apply holds it (its pid and start), no figure of the job; counted, every
// apply that wrote a job's folder would change the key of what reads the
// folder (an aggregate over the runs). Sockets, pipes and devices in a
// tree are an error.
// The digest does not depend on where the tree lies: the same tree copied
// elsewhere has the same digest.
//
// # Stat cache
//
// A Cache maps a file's absolute path and stat information (size,
// modification and change times in nanoseconds, inode, device, mode) to the
// digest of its content. A file whose stat information is unchanged is not
// read again. On Linux and macOS the change time is part of it: writing a
// file changes it even when the size and modification time are put back,
// so such a rewrite is noticed.
//
// A file modified within the timestamp granularity of the moment it was
// hashed could change again without a visible change to its stat information
// (the "racy git" problem). A digest is therefore stored only when the file's
// modification and change times are more than two seconds older than the
// moment the digest was computed; a file written just now is hashed again on
// every use until it has aged.
//
// The cache persists to one file, loaded whole and written atomically.
// Entries not used for 30 days are dropped when it is saved.
package fsdigest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/storage/atomicfile"
	"github.com/cairn-run/cairn/storage/filekind"
)

// TreeVersion starts every directory encoding; it changes whenever the
// encoding does.
const TreeVersion = "cairn.tree.v1\n"

// PyCache is the name of the folders a tree digest leaves out: Python's
// bytecode caches (see the package comment).
const PyCache = "__pycache__"

// OutLock is the name of the files a tree digest leaves out: the lock of
// an optimizer job's out folder (see the package comment), the stage
// kinds' stages.OutLockFile.
const OutLock = ".cairn-out.lock"

// leftOut says whether a tree digest leaves out an entry of a folder,
// named name, of type t (see the package comment): a __pycache__ folder,
// an out folder's lock file.
func leftOut(name string, t fs.FileMode) bool {
	return t.IsDir() && name == PyCache || t.IsRegular() && name == OutLock
}

// racyWindow is how old a file's times must be, at the moment it is hashed,
// for its digest to be stored. It covers coarse filesystem timestamps
// (2 s on FAT) and clock ticks.
const racyWindow = 2 * time.Second

// keepDays is how many days an entry survives without being used.
const keepDays = 30

// statKey is what a cached digest is valid for.
type statKey struct {
	size  int64
	mtime int64 // ns since the epoch
	ctime int64 // ns since the epoch
	ino   uint64
	dev   uint64
	mode  uint32 // fs.FileMode
}

type entry struct {
	key  statKey
	sum  [sha256.Size]byte
	used uint32 // day (since the epoch) of the last use
}

// Cache computes file and tree digests, remembering file digests by stat
// information. It is safe for concurrent use.
type Cache struct {
	path  string
	clock func() time.Time // the time a digest is taken at; tests move it

	mu      sync.Mutex
	entries map[string]entry
	dirty   bool

	hits, misses atomic.Int64
}

// Load reads the stat cache stored at path. A missing, unreadable or
// corrupt file gives an empty cache: the digests are then recomputed, never
// trusted from a damaged file. An empty path gives a cache that is never
// saved.
func Load(path string) *Cache {
	c := &Cache{path: path, clock: time.Now, entries: map[string]entry{}}
	if path == "" {
		return c
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return c
	}
	if m, err := decode(b); err == nil {
		c.entries = m
	}
	return c
}

// Stats returns how many file digests were found in the cache and how many
// were computed since the cache was loaded.
func (c *Cache) Stats() (hits, misses int) {
	return int(c.hits.Load()), int(c.misses.Load())
}

// Save writes the cache to its file, atomically (a temporary file renamed
// over it), if anything changed since it was loaded or last saved. It is
// not synced to the disk: after a power loss the file may be an earlier
// one, or one whose checksum fails (Load gives an empty cache). Either
// way no digest is trusted for a file that changed since: an entry is
// used only while the file's size, times and inode are the ones it was
// taken at. The two syncs were the last 1-3 ms of every apply that hashed
// a file.
func (c *Cache) Save() error {
	if c.path == "" {
		return nil
	}
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return nil
	}
	today := c.today()
	for p, e := range c.entries {
		if e.used+keepDays < today {
			delete(c.entries, p)
		}
	}
	b := encode(c.entries)
	c.dirty = false
	c.mu.Unlock()

	if err := atomicfile.Write(c.path, b, false); err != nil {
		c.mu.Lock()
		c.dirty = true
		c.mu.Unlock()
		return fmt.Errorf("fsdigest: save stat cache: %w", err)
	}
	return nil
}

func (c *Cache) today() uint32 {
	return uint32(c.clock().Unix() / 86400)
}

// absStat resolves path to an absolute one and stats it, following links.
func absStat(path string) (string, os.FileInfo, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", nil, fmt.Errorf("fsdigest: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", nil, fmt.Errorf("fsdigest: %w", err)
	}
	return abs, fi, nil
}

// File returns the hex sha256 of the content of the file at path,
// following symbolic links.
func (c *Cache) File(path string) (string, error) {
	abs, fi, err := absStat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("fsdigest: %s is not a regular file (%s)", path, fi.Mode().Type())
	}
	sum, err := c.file(abs, keyOf(fi))
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum[:]), nil
}

// file returns the digest of the file at abs, whose stat information is k.
func (c *Cache) file(abs string, k statKey) ([sha256.Size]byte, error) {
	if sum, ok := c.lookup(abs, k); ok {
		return sum, nil
	}
	return c.hash(abs, k)
}

func (c *Cache) lookup(abs string, k statKey) ([sha256.Size]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[abs]
	if !ok || e.key != k {
		return [sha256.Size]byte{}, false
	}
	if today := c.today(); e.used != today {
		e.used = today
		c.entries[abs] = e
		c.dirty = true
	}
	c.hits.Add(1)
	return e.sum, true
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// hash reads the file at abs, whose stat information was k, and stores its
// digest if the file did not change while it was read and is old enough to
// trust its stat information (see the package comment).
func (c *Cache) hash(abs string, k statKey) ([sha256.Size]byte, error) {
	c.misses.Add(1)
	var sum [sha256.Size]byte
	f, err := os.Open(abs)
	if err != nil {
		return sum, fmt.Errorf("fsdigest: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	bp := bufPool.Get().(*[]byte)
	_, err = io.CopyBuffer(h, struct{ io.Reader }{f}, *bp)
	bufPool.Put(bp)
	if err != nil {
		return sum, fmt.Errorf("fsdigest: read %s: %w", abs, err)
	}
	h.Sum(sum[:0])
	fi, err := f.Stat()
	if err != nil {
		return sum, fmt.Errorf("fsdigest: %w", err)
	}
	after := keyOf(fi)
	if after != k || racy(after, c.clock()) {
		return sum, nil
	}
	c.mu.Lock()
	c.entries[abs] = entry{key: k, sum: sum, used: c.today()}
	c.dirty = true
	c.mu.Unlock()
	return sum, nil
}

// racy reports whether a file with stat information k, hashed at now, could
// still change without changing k.
func racy(k statKey, now time.Time) bool {
	limit := now.Add(-racyWindow).UnixNano()
	return k.mtime >= limit || k.ctime >= limit
}

// Tree returns the digest of the file or directory at path: a file's
// content digest, as File, or a directory's tree digest as described in the
// package comment.
func (c *Cache) Tree(path string) (string, error) {
	abs, fi, err := absStat(path)
	if err != nil {
		return "", err
	}
	switch {
	case fi.Mode().IsRegular():
		sum, err := c.file(abs, keyOf(fi))
		if err != nil {
			return "", err
		}
		return hex.EncodeToString(sum[:]), nil
	case !fi.IsDir():
		return "", fmt.Errorf("%s is %s: cairn digests only files and folders", path, filekind.Of(fi.Mode()))
	}

	return c.dirTree(abs, nil)
}

// dirTree is the tree digest of the directory abs; follow, when not nil,
// walks symbolic links as what they point to (see walk).
func (c *Cache) dirTree(abs string, follow map[string]bool) (string, error) {
	var recs []record
	if err := walk(abs, "", &recs, follow); err != nil {
		return "", err
	}
	if err := c.fileDigests(recs); err != nil {
		return "", err
	}
	return treeDigest(recs), nil
}

// Names lists the entries of the folder at path as Tree encodes them,
// without reading a file: the "/"-separated paths, relative to path, of
// its files, its links and its empty folders, in encoding order. A path
// that is not a folder has none.
func Names(path string) ([]string, error) {
	abs, fi, err := absStat(path)
	if err != nil || !fi.IsDir() {
		return nil, err
	}
	var recs []record
	if err := walk(abs, "", &recs, nil); err != nil {
		return nil, err
	}
	out := make([]string, len(recs))
	for i := range recs {
		out[i] = recs[i].rel
	}
	return out, nil
}

// ContentTree is Tree through symbolic links: a link is digested as what
// it points to (a file's content, a folder's tree), never as its target's
// name. It is for trees whose files are often links to where the bytes
// live (a model's weights: a checkpoint linked into place, a Hugging Face
// snapshot), where what a link names can change under the same name. A
// link that points to nothing, or back into a folder it is in, is an
// error.
func (c *Cache) ContentTree(path string) (string, error) {
	abs, fi, err := absStat(path)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return c.Tree(abs)
	}
	return c.dirTree(abs, map[string]bool{})
}

// Pending is a file that is about to be written under a tree: its content
// digest (lowercase hex sha256) and whether an execute bit will be set; or,
// with Remove, a file or an (emptied) folder about to be removed.
type Pending struct {
	Digest string
	Exec   bool
	Remove bool
}

// TreeWith returns the digest Tree will return for path once the files in
// pending have been written: each replaces whatever is at its path (a file,
// a link), and the folders on its way are made; a removal takes what is at
// its path, and below it, away. Keys are "/"-separated paths relative to
// path; "" is path itself (removed, it is missing, unless pending files are
// written below it: removed first, it is then a folder of those alone).
// Without pending files it is Tree. A missing path holding pending files
// is a directory of them. A path that is a file with pending files below
// it (which could not be written) has its own digest. Files written into,
// or removed from, a __pycache__ folder are left out, as Tree leaves the
// folder out; the folders a write there makes are made all the same.
func (c *Cache) TreeWith(path string, pending map[string]Pending) (string, error) {
	pending, made := outsideLeftOut(pending)
	if len(pending) == 0 && len(made) == 0 {
		return c.Tree(path)
	}
	var recs []record
	if p, ok := pending[""]; ok {
		if !p.Remove {
			return p.Digest, nil
		}
		// What is there goes (a file, or another configuration's
		// folder, where a folder of the restored files goes).
		if pending = writesOf(pending); len(pending) == 0 && len(made) == 0 {
			return "", fmt.Errorf("fsdigest: %w", &fs.PathError{Op: "stat", Path: path, Err: fs.ErrNotExist})
		}
	} else {
		abs, fi, err := absStat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return "", err
		case !fi.IsDir():
			return c.Tree(path)
		default:
			if err := walk(abs, "", &recs, nil); err != nil {
				return "", err
			}
		}
	}
	// What a pending file replaces, or fills (an empty folder on its way),
	// goes; so does what lay below a pending file's path.
	onWay := map[string]bool{}
	for q, p := range pending {
		if p.Remove {
			continue
		}
		for i := strings.LastIndexByte(q, '/'); i > 0; i = strings.LastIndexByte(q[:i], '/') {
			onWay[q[:i]] = true
		}
	}
	for q := range made {
		for ; q != ""; q = parentOf(q) {
			onWay[q] = true
		}
	}
	gone := func(rel string) bool {
		if onWay[rel] {
			return true
		}
		for q := rel; q != ""; {
			if _, ok := pending[q]; ok {
				return true
			}
			i := strings.LastIndexByte(q, '/')
			if i < 0 {
				break
			}
			q = q[:i]
		}
		return false
	}
	kept := recs[:0]
	for _, r := range recs {
		if !gone(r.rel) {
			kept = append(kept, r)
		}
	}
	if err := c.fileDigests(kept); err != nil {
		return "", err
	}
	for rel, p := range pending {
		if p.Remove {
			continue
		}
		r := record{rel: rel, kind: 'f', exec: p.Exec}
		if _, err := hex.Decode(r.sum[:], []byte(p.Digest)); err != nil || len(p.Digest) != 2*sha256.Size {
			return "", fmt.Errorf("fsdigest: %q is not a sha256 digest", p.Digest)
		}
		kept = append(kept, r)
	}
	kept = append(kept, leftEmpty(kept, pending, gone)...)
	for q := range made {
		if q != "" && !holds(kept, q) {
			kept = append(kept, record{rel: q, kind: 'd'})
		}
	}
	// Encoding order: depth first, names in byte order, which is the order
	// of the paths with "/" taken as the lowest byte.
	sortKey := func(rel string) string { return strings.ReplaceAll(rel, "/", "\x00") }
	sort.Slice(kept, func(i, j int) bool { return sortKey(kept[i].rel) < sortKey(kept[j].rel) })
	return treeDigest(kept), nil
}

// writesOf is pending less its removals.
func writesOf(pending map[string]Pending) map[string]Pending {
	out := make(map[string]Pending, len(pending))
	for q, p := range pending {
		if !p.Remove {
			out[q] = p
		}
	}
	return out
}

// leftEmpty returns the records of the folders that pending removals leave
// empty, which stay (a removal's folder that is not removed itself, and
// holds nothing else of recs).
func leftEmpty(recs []record, pending map[string]Pending, gone func(string) bool) []record {
	var out []record
	seen := map[string]bool{}
	for q, p := range pending {
		i := strings.LastIndexByte(q, '/')
		if !p.Remove || i <= 0 {
			continue
		}
		dir := q[:i]
		if seen[dir] || gone(dir) {
			continue
		}
		seen[dir] = true
		if !holds(recs, dir) {
			out = append(out, record{rel: dir, kind: 'd'})
		}
	}
	return out
}

// holds reports whether recs hold the folder dir, or something in it.
func holds(recs []record, dir string) bool {
	for _, r := range recs {
		if r.rel == dir || strings.HasPrefix(r.rel, dir+"/") {
			return true
		}
	}
	return false
}

// outsideLeftOut is pending less what a tree digest leaves out (leftOut):
// the files inside a __pycache__ folder and out folders' lock files; and
// the folders that the writes left out make (each where its __pycache__
// or its lock lies; "" for the root). A pending entry named __pycache__
// itself stays: a file written there is no folder, and a removal there
// may take a file.
func outsideLeftOut(pending map[string]Pending) (map[string]Pending, map[string]bool) {
	var out map[string]Pending
	var made map[string]bool
	for q, p := range pending {
		dir, ok := leftOutOf(q)
		if !ok {
			continue
		}
		if out == nil {
			out, made = maps.Clone(pending), map[string]bool{}
		}
		delete(out, q)
		if !p.Remove {
			made[dir] = true
		}
	}
	if out == nil {
		return pending, nil
	}
	return out, made
}

// leftOutOf says whether a tree digest leaves out the file at the
// "/"-separated path rel (leftOut): it lies inside a __pycache__ folder
// (the folder in which the outermost one on its way lies is returned, ""
// for the root), or is an out folder's lock file (the folder it lies in).
func leftOutOf(rel string) (string, bool) {
	at := 0
	for {
		i := strings.IndexByte(rel[at:], '/')
		if i < 0 {
			return strings.TrimSuffix(rel[:at], "/"), leftOut(rel[at:], 0)
		}
		if leftOut(rel[at:at+i], fs.ModeDir) {
			return strings.TrimSuffix(rel[:at], "/"), true
		}
		at += i + 1
	}
}

// parentOf is the folder of the "/"-separated path rel, "" at the top.
func parentOf(rel string) string {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return ""
	}
	return rel[:i]
}

// treeDigest hashes the encoding of a tree's records, in encoding order.
func treeDigest(recs []record) string {
	h := sha256.New()
	var line []byte
	line = append(line, TreeVersion...)
	for i := range recs {
		line = recs[i].appendTo(line)
		if len(line) >= 32<<10 {
			h.Write(line)
			line = line[:0]
		}
	}
	h.Write(line)
	return hex.EncodeToString(h.Sum(nil))
}

// record is one entry of a tree's encoding.
type record struct {
	rel    string // slash-separated path under the root
	kind   byte   // 'f' regular file, 'd' empty directory, 'l' symbolic link
	exec   bool
	target string // of a symbolic link
	abs    string
	key    statKey
	sum    [sha256.Size]byte
}

var targetEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

func (r *record) appendTo(b []byte) []byte {
	b = append(b, r.rel...)
	switch r.kind {
	case 'f':
		b = append(b, 0)
		if r.exec {
			b = append(b, 'x')
		} else {
			b = append(b, '-')
		}
		b = append(b, 0)
		b = hex.AppendEncode(b, r.sum[:])
	case 'd':
		b = append(b, "/\x00d"...)
	case 'l':
		b = append(b, "\x00l\x00"...)
		b = append(b, targetEscaper.Replace(r.target)...)
	}
	return append(b, '\n')
}

// walk appends the records of the directory dir, whose path under the root
// is rel ("" for the root), in encoding order. With follow non-nil (the
// real paths of the folders being walked) a symbolic link is walked as
// what it points to (ContentTree).
func walk(dir, rel string, recs *[]record, follow map[string]bool) error {
	if follow != nil {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return fmt.Errorf("fsdigest: %w", err)
		}
		if follow[real] {
			return fmt.Errorf("fsdigest: %s: a link leads back into a folder it is in", dir)
		}
		follow[real] = true
		defer delete(follow, real)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("fsdigest: %w", err)
	}
	held := len(*recs)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		r := e.Name()
		if rel != "" {
			r = rel + "/" + r
		}
		t := e.Type()
		var fi fs.FileInfo
		if t&fs.ModeSymlink != 0 && follow != nil {
			if fi, err = os.Stat(p); err != nil {
				return fmt.Errorf("fsdigest: link %s: %w", p, err)
			}
			t = fi.Mode().Type()
		}
		switch {
		case leftOut(e.Name(), t):
			// Not there, for the digest (see the package comment).
		case t.IsDir():
			if err := walk(p, r, recs, follow); err != nil {
				return err
			}
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("fsdigest: %w", err)
			}
			*recs = append(*recs, record{rel: r, kind: 'l', target: target})
		case t.IsRegular():
			if fi == nil {
				if fi, err = e.Info(); err != nil {
					return fmt.Errorf("fsdigest: %w", err)
				}
			}
			*recs = append(*recs, record{rel: r, kind: 'f', abs: p, exec: fi.Mode()&0o111 != 0, key: keyOf(fi)})
		default:
			return fmt.Errorf("%s is %s, in an input folder: cairn digests only files, folders and links; remove it, or give the folder's files as inputs", p, filekind.Of(t))
		}
	}
	// A folder that holds nothing, or nothing but a __pycache__ folder,
	// is an empty one.
	if len(*recs) == held && rel != "" {
		*recs = append(*recs, record{rel: rel, kind: 'd'})
	}
	return nil
}

// fileDigests fills in the digests of the files among recs, from the cache
// where it can and by reading the others in parallel.
func (c *Cache) fileDigests(recs []record) error {
	var todo []int
	for i := range recs {
		if recs[i].kind != 'f' {
			continue
		}
		if sum, ok := c.lookup(recs[i].abs, recs[i].key); ok {
			recs[i].sum = sum
		} else {
			todo = append(todo, i)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), 8, len(todo))
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				n := int(next.Add(1)) - 1
				if n >= len(todo) {
					return
				}
				r := &recs[todo[n]]
				sum, err := c.hash(r.abs, r.key)
				if err != nil {
					errs[w] = err
					return
				}
				r.sum = sum
			}
		}(w)
	}
	wg.Wait()
	return errors.Join(errs...)
}
