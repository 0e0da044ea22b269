package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cairn-run/cairn/storage/atomicfile"
)

// rewrite replaces the content of the user's file f (a link's target)
// with b, as cairn fmt does: whole or not at all, keeping its mode. The
// new content goes to a file beside it, renamed over it, which the file's
// own permissions do not guard: so a file the user may not write (no
// write permission for them, or none for anyone) is refused first, and
// so is one in a folder they may not write. The error is for people: it
// names f and the cause, never the temporary file.
func rewrite(f string, b []byte) error {
	real, err := filepath.EvalSymlinks(f)
	if err != nil {
		real = f
	}
	fi, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("cannot rewrite %s: %s", f, errCause(err))
	}
	if fi.Mode().Perm()&0o222 == 0 || unix.Access(real, unix.W_OK) != nil {
		how := "make it writable (chmod u+w) to format it"
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
			how = "only its owner may make it writable"
		}
		return fmt.Errorf("cannot rewrite %s: it is read-only (mode %04o, owner %s), so it was left as it is; %s", f, fi.Mode().Perm(), ownerOf(fi), how)
	}
	dir := filepath.Dir(real)
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("cannot rewrite %s: its folder %s is not writable (%s); fmt writes the new content to a file beside it and renames it over the old one, so it needs to write in the folder", f, dir, errCause(err))
	}
	if err := atomicfile.WriteKeepMode(f, b, true); err != nil {
		return fmt.Errorf("cannot rewrite %s: %s%s", f, errCause(err), diskAdvice(err))
	}
	return nil
}

// errCause is what went wrong in err, without the path it names (which
// may be a temporary file).
func errCause(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}

// diskAdvice is what to do about err when a full disk or quota caused
// it, or "".
func diskAdvice(err error) string {
	if diskFull(err) {
		return "; make room on its disk and run it again"
	}
	return ""
}

// ownerOf names the owner of the file fi describes: a user name, or the
// uid where there is none.
func ownerOf(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "unknown"
	}
	uid := strconv.FormatUint(uint64(st.Uid), 10)
	if u, err := user.LookupId(uid); err == nil {
		return u.Username
	}
	return "uid " + uid
}
