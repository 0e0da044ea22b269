package fsdigest

import (
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// LstatSigAt returns the Sig of the file name in the folder dir (a symlink
// is not followed): LstatSig without walking the path from the root again
// for each file of a folder, and without the allocations of an
// fs.FileInfo. The up-to-date check looks at every output of a pipeline
// this way.
func LstatSigAt(dir *os.File, name string) (Sig, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Sig{}, &os.PathError{Op: "lstat", Path: filepath.Join(dir.Name(), name), Err: err}
	}
	return Sig{
		Size:  st.Size,
		Mtime: st.Mtim.Nano(),
		Ctime: st.Ctim.Nano(),
		Ino:   st.Ino,
		Dev:   st.Dev,
		Mode:  uint32(fileMode(st.Mode)),
	}, nil
}

// fileMode is the fs.FileMode the os package makes of a stat mode.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
