// Package atomicfile replaces a file's content all at once: the bytes go
// to a temporary file beside it, which is renamed over the old one, so a
// reader (or a crash) sees the old content or the new, never a mix.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Write replaces path's content with b (mode 0666 less the umask, as a
// new file gets: with umask 002, the group of a shared cache may replace
// it too), making its folder if needed (0777 less the umask). With sync
// set, the file's bytes reach the disk before the rename and the rename
// itself after it (the folder is synced too), so that a power loss leaves
// the old content or the new; without it, only a crash of the process is
// covered.
func Write(path string, b []byte, sync bool) error {
	return replace(path, b, sync, false)
}

// WriteKeepMode is Write for a file the user owns (a notes file cairn
// adds to, a pipeline file): the new file keeps the permission bits of
// the one it replaces, set before the rename, so that a private file
// never becomes readable by others, nor a shared one less writable, and
// its owner and group as far as the user may set them; and
// a path that is a link is written where the link points, the link left
// a link.
func WriteKeepMode(path string, b []byte, sync bool) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return replace(path, b, sync, true)
}

// replace writes b to a temporary file beside path and renames it over
// path; with keepMode, the temporary file first gets the permission bits
// of the file it replaces.
func replace(path string, b []byte, sync, keepMode bool) error {
	tmp, held, err := writeTemp(path, b, sync)
	if err != nil {
		return err
	}
	defer release(held)
	if keepMode {
		if fi, err := os.Stat(path); err == nil {
			keepOwner(tmp, fi)
			if err := os.Chmod(tmp, fi.Mode().Perm()); err != nil {
				_ = os.Remove(tmp)
				return err
			}
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if sync {
		syncDir(filepath.Dir(path))
	}
	return nil
}

// keepOwner gives the new file tmp the owner and group of the file fi
// describes, as far as the user may (root: both; another user: the
// group, when they are in it): a rename would otherwise make the file
// theirs. It is best effort.
func keepOwner(tmp string, fi os.FileInfo) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	if os.Lchown(tmp, int(st.Uid), int(st.Gid)) != nil {
		_ = os.Lchown(tmp, -1, int(st.Gid))
	}
}

// A File is one file of WriteAll: its path and its new content.
type File struct {
	Path string
	Data []byte
}

// WriteAll replaces several files as Write does each, all or none as far
// as the file system lets it: every new content is written to its
// temporary file first, and only when all are there are they renamed
// into place. A failure before the renames leaves every file as it was;
// one among them (which only a file system that fails a rename in a
// folder it just wrote in can cause) leaves the files renamed before it
// new, and says which.
func WriteAll(files []File, sync bool) error {
	tmps := make([]string, 0, len(files))
	var helds []*os.File
	defer func() {
		for _, h := range helds {
			release(h)
		}
	}()
	for _, f := range files {
		tmp, held, err := writeTemp(f.Path, f.Data, sync)
		if err != nil {
			for _, t := range tmps {
				_ = os.Remove(t)
			}
			return err
		}
		tmps, helds = append(tmps, tmp), append(helds, held)
	}
	for i, f := range files {
		if err := os.Rename(tmps[i], f.Path); err != nil {
			for _, t := range tmps[i:] {
				_ = os.Remove(t)
			}
			if i > 0 {
				names := make([]string, i)
				for j := range i {
					names[j] = files[j].Path
				}
				return fmt.Errorf("%w (%s written already)", err, strings.Join(names, ", "))
			}
			return err
		}
	}
	if sync {
		done := map[string]bool{}
		for _, f := range files {
			if d := filepath.Dir(f.Path); !done[d] {
				done[d] = true
				syncDir(d)
			}
		}
	}
	return nil
}

// writeTemp writes b to a new temporary file beside path (making path's
// folder if needed, 0777 less the umask), synced when sync is set, and
// returns its name and what holds its lock until it is renamed into place
// (release it then); on an error it leaves no file.
func writeTemp(path string, b []byte, sync bool) (tmp string, held *os.File, err error) {
	f, held, err := createTemp(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
			return "", nil, err
		}
		f, held, err = createTemp(path)
	}
	if err != nil {
		return "", nil, err
	}
	_, err = f.Write(b)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		release(held)
		return "", nil, err
	}
	return f.Name(), held, nil
}

// Remove removes path, which may be gone already. With sync set, its
// folder is synced too, so that the removal reaches the disk before what
// is written after it: a file written next is never found, after a power
// loss, beside the one removed.
func Remove(path string, sync bool) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if sync {
		syncDir(filepath.Dir(path))
	}
	return nil
}

// syncDir makes a rename in dir durable (best effort).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// createTemp creates a new file beside path with mode 0666 less the
// umask (os.CreateTemp would make it 0600), named as tempPrefix and
// tempHex say, and locks it (lockTemp).
func createTemp(path string) (f, held *os.File, err error) {
	var r [tempHex / 2]byte
	for try := 0; ; try++ {
		_, _ = rand.Read(r[:])
		name := filepath.Join(filepath.Dir(path), tempPrefix(path)+hex.EncodeToString(r[:]))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, os.ErrExist) && try < 100 {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		held, ok := lockTemp(f)
		if !ok && try < 100 {
			f.Close()
			continue
		}
		return f, held, nil
	}
}

// A temporary file beside path is named tempPrefix(path) and tempHex
// random hex digits.
const tempHex = 16

func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

// lockTemp takes an exclusive flock on the temporary file f, just made,
// held by a duplicate of its descriptor (returned: closing f keeps it)
// until the file is renamed into place, so that RemoveLeftovers, which
// removes only temporary files no writer holds, leaves it alone. ok is
// false when a RemoveLeftovers removed it before the lock was taken (make
// another). A file system that has no flock gives no lock, and
// RemoveLeftovers removes nothing there either.
func lockTemp(f *os.File) (held *os.File, ok bool) {
	fd := int(f.Fd())
	if syscall.Flock(fd, syscall.LOCK_EX) != nil {
		return nil, true
	}
	dup, err := syscall.Dup(fd)
	if err != nil {
		return nil, true
	}
	held = os.NewFile(uintptr(dup), f.Name())
	st, err := f.Stat()
	fi, lerr := os.Lstat(f.Name())
	if err == nil && (lerr != nil || !os.SameFile(st, fi)) {
		held.Close()
		return nil, false
	}
	return held, true
}

// release gives up the lock of a temporary file (nil: none).
func release(held *os.File) {
	if held != nil {
		held.Close()
	}
}

// RemoveLeftovers removes the temporary files that a writer of path (a
// link: of the file it points to) killed before its rename left beside it:
// those named as cairn names them, that no live writer holds locked. It
// returns the paths it removed; any other file is left alone.
func RemoveLeftovers(path string) []string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	dir, prefix := filepath.Dir(path), tempPrefix(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || len(rest) != tempHex || !e.Type().IsRegular() {
			continue
		}
		if _, err := hex.DecodeString(rest); err != nil {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if removeUnheld(p) {
			removed = append(removed, p)
		}
	}
	return removed
}

// removeUnheld removes the temporary file p when it can take its lock:
// no writer holds it.
func removeUnheld(p string) bool {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false
	}
	st, err := f.Stat()
	fi, lerr := os.Lstat(p)
	if err != nil || lerr != nil || !os.SameFile(st, fi) {
		return false
	}
	return os.Remove(p) == nil
}
