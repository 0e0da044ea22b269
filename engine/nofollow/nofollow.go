// Package nofollow opens and creates files below a root folder without
// following symlinks on the way: every folder between the root and the
// file is opened with O_NOFOLLOW, relative to the one before it (openat),
// so a link made at any moment, even between a check and a write, makes
// the call fail instead of leading it elsewhere. The root itself may be a
// symlink: it is the caller's choice.
//
// cairn restores cached outputs through it, so that a workload that made
// a folder of the workspace a symlink (to outside, to the cache, to
// another folder) cannot get a restore to write where the link points.
package nofollow

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// LinkError reports a component of a path that is a symlink, or not a
// folder, where a real folder is needed (or, for Open, where the file
// itself is a symlink).
type LinkError struct {
	Path   string // the component, relative to the root: "d", "a/b"
	Target string // what the symlink points to ("" when NotDir)
	NotDir bool   // the component is not a folder (and not a symlink)
}

func (e *LinkError) Error() string {
	if e.NotDir {
		return fmt.Sprintf("%s is not a folder", e.Path)
	}
	if e.Target == "" {
		return fmt.Sprintf("%s is a symlink", e.Path)
	}
	return fmt.Sprintf("%s is a symlink (to %s)", e.Path, e.Target)
}

// dirMode is the mode new folders are created with; the umask takes away
// what the user does not share.
const dirMode = 0o777

// OpenDir opens the folder rel below root, never following a symlink
// below root; rel is cleaned first and must not leave root (".."). With create, missing folders are made (mode 0777 less the
// umask); without it, a missing folder is an error wrapping
// fs.ErrNotExist. A component that is a symlink or a file is a
// *LinkError. The caller closes the folder.
func OpenDir(root, rel string, create bool) (*os.File, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	walked := ""
	for _, name := range components(rel) {
		if name == ".." {
			unix.Close(fd)
			return nil, &os.PathError{Op: "open", Path: filepath.Join(root, rel), Err: errors.New("the path leaves its root")}
		}
		walked = filepath.Join(walked, name)
		next, err := openDirAt(fd, name, create)
		if err != nil {
			lerr := classify(fd, name, walked, err)
			unix.Close(fd)
			if lerr != nil {
				return nil, lerr
			}
			return nil, &os.PathError{Op: "open", Path: filepath.Join(root, walked), Err: err}
		}
		unix.Close(fd)
		fd = next
	}
	return os.NewFile(uintptr(fd), filepath.Join(root, rel)), nil
}

// Open opens the file rel below root for reading, following no symlink
// below root, the file itself included.
func Open(root, rel string) (*os.File, error) {
	dir, name := filepath.Split(filepath.Clean(rel))
	d, err := OpenDir(root, dir, false)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fd, err := unix.Openat(int(d.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, &LinkError{Path: filepath.Clean(rel), Target: readlinkAt(int(d.Fd()), name)}
		}
		return nil, &os.PathError{Op: "open", Path: filepath.Join(root, rel), Err: err}
	}
	// O_NONBLOCK only kept a FIFO from blocking the open; cleared before
	// os.NewFile sees it, the file is not offered to Go's poller (which
	// refuses regular files). F_SETFL changes only the status flags, and
	// O_NONBLOCK is the only one the open set.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, 0); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: filepath.Join(root, rel), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(root, rel)), nil
}

// CreateTemp creates a new file in the folder dir, named prefix followed
// by random characters, for writing (mode 0600 until the caller changes
// it). It returns the file and its name in dir.
func CreateTemp(dir *os.File, prefix string) (*os.File, string, error) {
	var b [8]byte
	for try := 0; ; try++ {
		_, _ = rand.Read(b[:])
		name := prefix + hex.EncodeToString(b[:])
		fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) && try < 100 {
			continue
		}
		if err != nil {
			return nil, "", &os.PathError{Op: "create", Path: filepath.Join(dir.Name(), name), Err: err}
		}
		return os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name)), name, nil
	}
}

// Rename renames old to new, both names in the folder dir. A symlink at
// new is replaced, not followed.
func Rename(dir *os.File, old, new string) error {
	if err := unix.Renameat(int(dir.Fd()), old, int(dir.Fd()), new); err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(dir.Name(), old), New: filepath.Join(dir.Name(), new), Err: err}
	}
	return nil
}

// Remove removes the file name from the folder dir.
func Remove(dir *os.File, name string) error {
	if err := unix.Unlinkat(int(dir.Fd()), name, 0); err != nil {
		return &os.PathError{Op: "remove", Path: filepath.Join(dir.Name(), name), Err: err}
	}
	return nil
}

func components(rel string) []string {
	rel = filepath.Clean(rel)
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(rel, string(filepath.Separator))
}

func openDirAt(fd int, name string, create bool) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	next, err := unix.Openat(fd, name, flags, 0)
	if errors.Is(err, unix.ENOENT) && create {
		if err := unix.Mkdirat(fd, name, dirMode); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, err
		}
		next, err = unix.Openat(fd, name, flags, 0)
	}
	return next, err
}

// classify turns a failed no-follow open of a folder into a *LinkError
// when the component is a symlink or not a folder; nil otherwise.
func classify(fd int, name, walked string, err error) error {
	if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.EEXIST) {
		return nil
	}
	var st unix.Stat_t
	if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return nil
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return &LinkError{Path: walked, Target: readlinkAt(fd, name)}
	case unix.S_IFDIR:
		return nil
	}
	return &LinkError{Path: walked, NotDir: true}
}

func readlinkAt(fd int, name string) string {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(fd, name, buf)
	if err != nil || n < 0 {
		return ""
	}
	return string(buf[:n])
}
