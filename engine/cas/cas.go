// Package cas is the content-addressed blob store of cairn's cache.
//
// Every output a node produces is stored once, under the sha256 of its
// content, at
//
//	<root>/cas/sha256/<first two hex digits>/<64 hex digits>
//
// A blob is committed atomically: it is written to a temporary file in its
// fan-out directory, fsynced, checked against the expected size and digest,
// made read-only (0444) and renamed to its final name. A reader therefore
// sees either no blob or a complete one, even when the writer is killed
// mid-write, and several cairn processes sharing one cache may store the same
// content at the same time: each rename is atomic and they all carry the same
// bytes. Directory entries are made durable in batches by Sync, which the
// engine calls before it records the node that refers to the blobs. With
// Options.DeferSync a put does not fsync its blob either: Sync does, for
// every blob put since the last Sync, several at once.
//
// Every read re-hashes the content. A blob that no longer matches its name
// (a flipped bit, a truncated file) is evicted and reported as ErrCorrupt, so
// the engine warns and recomputes the node instead of handing out bad data.
//
// Restore copies a blob into the workspace (a reflink where the filesystem
// supports it, a plain copy otherwise), never a hardlink: a workload that
// rewrites its restored input or output in place must not be able to change
// the cache.
//
// The modification time of a blob approximates its last use: reads, restores
// and puts that find the blob already present refresh it when it is more
// than an hour old. Walk reports it so that garbage collection can drop the
// blobs unused for longest.
package cas

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/engine/nofollow"
)

var (
	// ErrCorrupt reports a blob whose content does not hash to its name.
	// The blob has been evicted by the time the error is returned.
	ErrCorrupt = errors.New("cas: corrupt blob")
	// ErrNotFound reports a digest with no blob in the store.
	ErrNotFound = errors.New("cas: blob not found")
)

// tempPrefix starts the name of every temporary file the store writes into a
// fan-out directory. A digest never starts with '.', so Walk cannot mistake
// a temporary file for a blob.
const tempPrefix = ".tmp-"

// touchInterval is how stale a blob's modification time may get before a use
// refreshes it; it bounds the writes that bookkeeping adds to reads.
const touchInterval = time.Hour

// Digest is the lowercase hex sha256 of a blob's content, 64 characters.
type Digest string

// Valid reports whether d is 64 lowercase hex characters.
func (d Digest) Valid() bool {
	if len(d) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// String returns the hex digest.
func (d Digest) String() string { return string(d) }

func digestOf(sum []byte) Digest { return Digest(hex.EncodeToString(sum)) }

// Options tune a Store.
type Options struct {
	// NoSync skips every fsync, of blobs and of directories. The store is
	// still atomic, but a crash of the machine (not of the process) may lose
	// recent blobs. Meant for tests and scratch caches.
	NoSync bool
	// DeferSync leaves a new blob's fsync to the next Sync, which syncs
	// every blob put since the last one (several at once, so that they
	// share the file system's journal commits) before the directories.
	DeferSync bool
}

// Store is a content-addressed blob store rooted at a cache directory. It is
// safe for concurrent use by several goroutines and by several processes
// sharing the same directory.
type Store struct {
	dir       string // <root>/cas/sha256
	noSync    bool
	deferSync bool

	mu    sync.Mutex
	dirty map[string]struct{} // directories to fsync at the next Sync
	// unsynced are blobs put since the last Sync whose content is not
	// synced yet (DeferSync).
	unsynced []string
}

// Made reports whether root holds a store's folders already (Open makes
// them when missing).
func Made(root string) bool {
	st, err := os.Stat(filepath.Join(root, "cas", "sha256"))
	return err == nil && st.IsDir()
}

// Open opens the store under root, creating <root>/cas/sha256 if needed.
func Open(root string, opts Options) (*Store, error) {
	dir := filepath.Join(root, "cas", "sha256")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("cas: open %s: %w", root, err)
	}
	s := &Store{dir: dir, noSync: opts.NoSync, deferSync: opts.DeferSync && !opts.NoSync, dirty: make(map[string]struct{})}
	// The directories may have just been created; the first Sync makes
	// their entries durable too.
	s.markDirty(dir)
	s.markDirty(filepath.Dir(dir))
	s.markDirty(root)
	return s, nil
}

func (s *Store) path(d Digest) string {
	return filepath.Join(s.dir, string(d[:2]), string(d))
}

func checkDigest(d Digest) error {
	if !d.Valid() {
		return fmt.Errorf("cas: invalid digest %q: want 64 lowercase hex characters", string(d))
	}
	return nil
}

func (s *Store) markDirty(dir string) {
	s.mu.Lock()
	s.dirty[dir] = struct{}{}
	s.mu.Unlock()
}

// Has reports whether a blob for d exists. It only looks at the directory;
// the content is verified when it is read.
func (s *Store) Has(d Digest) bool {
	if !d.Valid() {
		return false
	}
	fi, err := os.Stat(s.path(d))
	return err == nil && fi.Mode().IsRegular()
}

// PutBytes stores b and returns its digest.
func (s *Store) PutBytes(b []byte) (Digest, error) {
	d := DigestBytes(b)
	size := int64(len(b))
	if s.present(d, size) {
		return d, nil
	}
	err := s.commit(d, size, func(f *os.File) error {
		if _, err := f.Write(b); err != nil {
			return fmt.Errorf("cas: write blob %s: %w", d, err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return d, nil
}

// PutFile stores the content of the regular file at path and returns its
// digest and size; see PutOpen.
func (s *Store) PutFile(path string) (Digest, int64, error) {
	src, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("cas: put: %w", err)
	}
	defer src.Close()
	return s.PutOpen(src)
}

// PutOpen stores the content of the regular file src, open for reading at
// its start, and returns its digest and size. The file is read twice, once
// to learn its digest and once to copy it (or reflinked, then the copy is
// read back); content that changes in between is an error, never a blob
// under the wrong name. Content already in the store is not copied again.
func (s *Store) PutOpen(src *os.File) (Digest, int64, error) {
	path := src.Name()
	fi, err := src.Stat()
	if err != nil {
		return "", 0, fmt.Errorf("cas: put: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", 0, fmt.Errorf("cas: put %s: not a regular file (%s)", path, fi.Mode().Type())
	}
	d, size, err := hashReader(src)
	if err != nil {
		return "", 0, fmt.Errorf("cas: put: read %s: %w", path, err)
	}
	if s.present(d, size) {
		return d, size, nil
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return "", 0, fmt.Errorf("cas: put: %w", err)
	}
	err = s.commit(d, size, func(f *os.File) error {
		got, n, err := cloneOrCopy(f, src)
		if err != nil {
			return fmt.Errorf("cas: put: copy %s: %w", path, err)
		}
		if got != d || n != size {
			return fmt.Errorf("cas: put %s: the file changed while it was being stored", path)
		}
		return nil
	})
	if err != nil {
		return "", 0, err
	}
	return d, size, nil
}

// present reports whether the blob for d exists with the given size, and
// refreshes its modification time if so. A blob of the wrong size (a
// truncated one) is not present: the caller writes a good one over it.
func (s *Store) present(d Digest, size int64) bool {
	p := s.path(d)
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
		return false
	}
	touch(p, fi)
	return true
}

// touch refreshes a blob's modification time when it is older than
// touchInterval. Failures (a read-only cache) are ignored: the time only
// guides garbage collection.
func touch(path string, fi os.FileInfo) {
	now := time.Now()
	if now.Sub(fi.ModTime()) < touchInterval {
		return
	}
	_ = os.Chtimes(path, now, now)
}

// commit writes a blob for d through fill, which must write exactly the
// content (and may check it), and moves it into place.
func (s *Store) commit(d Digest, size int64, fill func(f *os.File) error) (err error) {
	final := s.path(d)
	fan := filepath.Dir(final)
	f, err := os.CreateTemp(fan, tempPrefix+"*")
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(fan, 0o777); err == nil {
			s.markDirty(s.dir)
			f, err = os.CreateTemp(fan, tempPrefix+"*")
		}
	}
	if err != nil {
		return fmt.Errorf("cas: store blob %s: %w", d, err)
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(tmp)
		}
	}()
	if err := fill(f); err != nil {
		return err
	}
	if err := f.Chmod(0o444); err != nil {
		return fmt.Errorf("cas: store blob %s: %w", d, err)
	}
	if !s.noSync && !s.deferSync {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("cas: store blob %s: fsync: %w", d, err)
		}
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cas: store blob %s: %w", d, err)
	}
	if fi.Size() != size {
		return fmt.Errorf("cas: store blob %s: wrote %d bytes, want %d", d, fi.Size(), size)
	}
	closed = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("cas: store blob %s: %w", d, err)
	}
	// Another process may have committed the same blob meanwhile; renaming
	// over it is harmless since both carry the same bytes. The rename and
	// the note that the blob and its folder need a sync are one step for
	// Sync: a put that finds the blob present from now on refers to a blob
	// that the next Sync covers.
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("cas: store blob %s: %w", d, err)
	}
	s.dirty[fan] = struct{}{}
	if s.deferSync {
		s.unsynced = append(s.unsynced, final)
	}
	return nil
}

// open opens the blob for d, mapping a missing blob to ErrNotFound.
func (s *Store) open(d Digest) (*os.File, os.FileInfo, error) {
	if err := checkDigest(d); err != nil {
		return nil, nil, err
	}
	f, err := os.Open(s.path(d))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w: %s", ErrNotFound, d)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cas: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("cas: %w", err)
	}
	if !fi.Mode().IsRegular() {
		// Not a blob cairn wrote (a folder in its place, say): damaged
		// as a blob whose bytes changed is, and evicted the same way.
		f.Close()
		err := fmt.Errorf("%w: %s is not a regular file (mode %s); evicted", ErrCorrupt, d, fi.Mode().Type())
		p := s.path(d)
		if rerr := os.RemoveAll(p); rerr != nil {
			return nil, nil, errors.Join(err, rerr)
		}
		s.markDirty(filepath.Dir(p))
		return nil, nil, err
	}
	return f, fi, nil
}

// ReadBytes returns the content of the blob for d after checking that it
// hashes to d. A blob that does not is evicted and reported with an error
// wrapping ErrCorrupt.
func (s *Store) ReadBytes(d Digest) ([]byte, error) {
	f, fi, err := s.open(d)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 0, fi.Size()+1)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("cas: read blob %s: %w", d, err)
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
	sum := sha256.Sum256(b)
	if got := digestOf(sum[:]); got != d {
		return nil, s.corrupt(d, got, int64(len(b)))
	}
	touch(s.path(d), fi)
	return b, nil
}

// corrupt evicts the blob for d, whose content hashed to got, and returns the
// error describing it.
func (s *Store) corrupt(d, got Digest, size int64) error {
	err := fmt.Errorf("%w: %s holds %d bytes hashing to %s; evicted", ErrCorrupt, d, size, got)
	if evictErr := s.Evict(d); evictErr != nil {
		return errors.Join(err, evictErr)
	}
	return err
}

// Restore writes the content of the blob for d to dst with permissions
// perm, creating dst's parent directories; see RestoreAt. It follows
// symlinks on the way to dst: the engine restores into a workspace with
// RestoreAt, in a folder opened without following any.
func (s *Store) Restore(d Digest, dst string, perm os.FileMode) error {
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("cas: restore %s: %w", dst, err)
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cas: restore %s: %w", dst, err)
	}
	defer f.Close()
	return s.RestoreAt(d, f, filepath.Base(dst), perm)
}

// RestoreAt writes the content of the blob for d to the file name in the
// open folder dir, with permissions perm. The content is written to a
// temporary file beside it (reflinked from the blob where the filesystem
// supports it, copied otherwise), checked against d, and renamed over
// name, so the file is either left as it was or replaced whole; a symlink
// at name is replaced, never followed. The restored file shares nothing
// with the blob that a write to it could change. A blob that does not hash
// to d is evicted, the file is left alone, and the error wraps ErrCorrupt.
//
// The restored file is not fsynced: after a crash it is restored again from
// the cache.
func (s *Store) RestoreAt(d Digest, dir *os.File, name string, perm os.FileMode) error {
	src, fi, err := s.open(d)
	if err != nil {
		return err
	}
	defer src.Close()
	err = writeAt(dir, name, perm, func(f *os.File) error {
		got, n, err := cloneOrCopy(f, src)
		if err != nil {
			return fmt.Errorf("cas: restore %s to %s: %w", d, filepath.Join(dir.Name(), name), err)
		}
		if got != d {
			return s.corrupt(d, got, n)
		}
		return nil
	})
	if err != nil {
		return err
	}
	touch(s.path(d), fi)
	return nil
}

// RestoreBytesAt writes b, whose digest must be d, to the file name in the
// open folder dir, as RestoreAt writes a blob: whole or not at all, never
// through a symlink. It restores an output kept inside its record rather
// than in a blob.
func RestoreBytesAt(d Digest, b []byte, dir *os.File, name string, perm os.FileMode) error {
	if err := VerifyBytes(d, b, filepath.Join(dir.Name(), name)); err != nil {
		return err
	}
	return writeAt(dir, name, perm, func(f *os.File) error {
		if _, err := f.Write(b); err != nil {
			return fmt.Errorf("cas: restore %s: %w", filepath.Join(dir.Name(), name), err)
		}
		return nil
	})
}

// VerifyBytes checks that b, the bytes kept for what (an output held in
// its record), hash to d; an error wraps ErrCorrupt.
func VerifyBytes(d Digest, b []byte, what string) error {
	if got := DigestBytes(b); got != d {
		return fmt.Errorf("%w: the %d bytes kept for %s hash to %s, not %s", ErrCorrupt, len(b), what, got, d)
	}
	return nil
}

// DigestBytes is the digest of b.
func DigestBytes(b []byte) Digest {
	sum := sha256.Sum256(b)
	return digestOf(sum[:])
}

// restoreTempSuffix is what writeAt's temporary files end with after the
// restored file's name: ".cairn-" and 16 hex digits.
const restoreTempSuffix = len(".cairn-") + 16

// IsRestoreTemp reports whether name is a temporary file of a restore
// (writeAt: ".NAME.cairn-" and 16 hex digits), which a cairn killed while
// it restored leaves behind: never an output of anything.
func IsRestoreTemp(name string) bool {
	if len(name) < 2+restoreTempSuffix || name[0] != '.' {
		return false
	}
	tail := name[len(name)-restoreTempSuffix:]
	if !strings.HasPrefix(tail, ".cairn-") {
		return false
	}
	for _, c := range tail[len(".cairn-"):] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// writeAt writes a file name in dir through fill: into a temporary file
// beside it, given perm, then renamed over name.
func writeAt(dir *os.File, name string, perm os.FileMode, fill func(f *os.File) error) (err error) {
	dst := filepath.Join(dir.Name(), name)
	f, tmp, err := nofollow.CreateTemp(dir, "."+name+".cairn-")
	if err != nil {
		return fmt.Errorf("cas: restore %s: %w", dst, err)
	}
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			_ = nofollow.Remove(dir, tmp)
		}
	}()
	if err := fill(f); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("cas: restore %s: %w", dst, err)
	}
	closed = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("cas: restore %s: %w", dst, err)
	}
	if err := nofollow.Rename(dir, tmp, name); err != nil {
		return fmt.Errorf("cas: restore %s: %w", dst, err)
	}
	return nil
}

// Evict removes the blob for d because it is bad. A blob that is already
// gone is not an error.
func (s *Store) Evict(d Digest) error {
	if err := checkDigest(d); err != nil {
		return err
	}
	p := s.path(d)
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cas: evict %s: %w", d, err)
	}
	s.markDirty(filepath.Dir(p))
	return nil
}

// Remove deletes the blob for d; garbage collection calls it for blobs no
// record refers to. A missing blob is reported with ErrNotFound.
func (s *Store) Remove(d Digest) error {
	if err := checkDigest(d); err != nil {
		return err
	}
	p := s.path(d)
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s", ErrNotFound, d)
		}
		return fmt.Errorf("cas: remove %s: %w", d, err)
	}
	s.markDirty(filepath.Dir(p))
	return nil
}

// Walk calls fn for every blob in the store, in digest order, with its size
// and modification time (roughly its last use, see the package comment).
// Temporary files and anything else that is not a blob are skipped, as are
// blobs removed while the walk runs. An error from fn stops the walk and is
// returned.
func (s *Store) Walk(fn func(d Digest, size int64, mtime time.Time) error) error {
	return s.walkFanouts(func(fan string, e fs.DirEntry) error {
		d := Digest(e.Name())
		if !d.Valid() || string(d[:2]) != filepath.Base(fan) {
			return nil
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cas: walk: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		return fn(d, fi.Size(), fi.ModTime())
	})
}

// RemoveStaleTemps deletes the temporary files that writers killed mid-put
// left in the store, if they are older than olderThan, and returns how many
// it removed. A temporary file younger than that may belong to a put in
// progress in another process.
func (s *Store) RemoveStaleTemps(olderThan time.Duration) (int, error) {
	cutoff := time.Now().Add(-olderThan)
	removed := 0
	err := s.walkFanouts(func(fan string, e fs.DirEntry) error {
		if !strings.HasPrefix(e.Name(), tempPrefix) {
			return nil
		}
		fi, err := e.Info()
		if err != nil || fi.ModTime().After(cutoff) {
			return nil
		}
		p := filepath.Join(fan, e.Name())
		if err := os.Remove(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("cas: remove temporary file: %w", err)
		}
		s.markDirty(fan)
		removed++
		return nil
	})
	return removed, err
}

// walkFanouts calls fn for every entry of every fan-out directory, in order.
func (s *Store) walkFanouts(fn func(fan string, e fs.DirEntry) error) error {
	fans, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("cas: walk: %w", err)
	}
	for _, fe := range fans {
		if !fe.IsDir() || !isFanout(fe.Name()) {
			continue
		}
		fan := filepath.Join(s.dir, fe.Name())
		ents, err := os.ReadDir(fan)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cas: walk: %w", err)
		}
		for _, e := range ents {
			if err := fn(fan, e); err != nil {
				return err
			}
		}
	}
	return nil
}

func isFanout(name string) bool {
	return len(name) == 2 && Digest(name+strings.Repeat("0", 62)).Valid()
}

// Sync makes the blobs put since the last Sync durable: their content
// (with Options.DeferSync; otherwise each put synced its own), then the
// directories that gained or lost blobs, so that a node writing many
// outputs pays for each directory once. With Options.NoSync it does
// nothing.
func (s *Store) Sync() error {
	s.mu.Lock()
	dirs := s.dirty
	s.dirty = make(map[string]struct{})
	files := s.unsynced
	s.unsynced = nil
	s.mu.Unlock()
	if s.noSync {
		return nil
	}
	// Blobs first: a directory entry made durable must name content that
	// is durable too.
	ferrs := syncAll(files, syncPath)
	for i, err := range ferrs {
		if err != nil {
			s.mu.Lock()
			s.unsynced = append(s.unsynced, files[i])
			s.mu.Unlock()
		}
	}
	if err := errors.Join(ferrs...); err != nil {
		for dir := range dirs {
			s.markDirty(dir)
		}
		return err
	}
	list := make([]string, 0, len(dirs))
	for dir := range dirs {
		list = append(list, dir)
	}
	derrs := syncAll(list, syncPath)
	for i, err := range derrs {
		if err != nil {
			s.markDirty(list[i])
		}
	}
	return errors.Join(derrs...)
}

// syncers is how many fsyncs Sync has in flight at once: concurrent
// fsyncs share the file system's journal commits.
const syncers = 8

// syncAll calls sync on every path, several at once, and returns each
// one's error (nil for a path that no longer exists: a blob removed since,
// whose directory entry Sync still syncs).
func syncAll(paths []string, syncOne func(string) error) []error {
	errs := make([]error, len(paths))
	one := func(i int) {
		if err := syncOne(paths[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs[i] = fmt.Errorf("cas: sync %s: %w", paths[i], err)
		}
	}
	if len(paths) <= 1 {
		for i := range paths {
			one(i)
		}
		return errs
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(syncers, len(paths)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(paths) {
					return
				}
				one(i)
			}
		}()
	}
	wg.Wait()
	return errs
}

// syncPath fsyncs a file or a directory.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// hashReader returns the digest and length of everything r yields.
func hashReader(r io.Reader) (Digest, int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	h := sha256.New()
	n, err := io.CopyBuffer(h, onlyReader{r}, *bp)
	if err != nil {
		return "", n, err
	}
	return digestOf(h.Sum(nil)), n, nil
}

// onlyReader hides a reader's WriteTo so that io.CopyBuffer uses our buffer.
type onlyReader struct{ io.Reader }

// cloneFile reflinks src's content into the empty file dst, reporting
// whether the filesystem did it. It is a variable so that tests can stand in
// for a filesystem with reflinks.
var cloneFile = reflink

// cloneOrCopy fills the empty file dst with src's content, read from its
// current offset, and returns the digest and length of what dst now holds.
// A reflink is tried first and the clone is read back to hash it; otherwise
// the content is copied and hashed on the way.
func cloneOrCopy(dst, src *os.File) (Digest, int64, error) {
	if cloneFile(dst, src) {
		if _, err := dst.Seek(0, io.SeekStart); err != nil {
			return "", 0, err
		}
		return hashReader(dst)
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(dst, h), onlyReader{src}, *bp)
	if err != nil {
		return "", n, err
	}
	return digestOf(h.Sum(nil)), n, nil
}
