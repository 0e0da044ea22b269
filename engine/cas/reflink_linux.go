package cas

import (
	"os"

	"golang.org/x/sys/unix"
)

// reflink asks the filesystem (btrfs, XFS, bcachefs, ...) to share src's
// extents with dst copy-on-write. Filesystems without reflinks refuse, and
// the caller copies instead.
func reflink(dst, src *os.File) bool {
	dconn, err := dst.SyscallConn()
	if err != nil {
		return false
	}
	sconn, err := src.SyscallConn()
	if err != nil {
		return false
	}
	var cloneErr error
	err = dconn.Control(func(dfd uintptr) {
		err := sconn.Control(func(sfd uintptr) {
			cloneErr = unix.IoctlFileClone(int(dfd), int(sfd))
		})
		if err != nil {
			cloneErr = err
		}
	})
	return err == nil && cloneErr == nil
}
