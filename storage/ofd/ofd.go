// Package ofd places one-byte locks in a shared file: open-file-description
// byte-range locks (F_OFD_SETLK, on Linux and macOS). A lock belongs to the open file
// description that took it, so it is shared by every process that inherited
// that descriptor and dropped by the kernel when the last of them closes it
// or dies. Many locks live in one file, at offsets taken from the locked
// thing's digest: taking a lock creates no file.
package ofd

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Range is the size of the byte range in which locks are placed: two
// digests share a lock only when 62 bits of them agree.
const Range = 1 << 62

// Offset is the lock offset of a digest given by its bytes (at least 8).
func Offset(b []byte) int64 {
	var v uint64
	for _, c := range b[:8] {
		v = v<<8 | uint64(c)
	}
	return int64(v & (Range - 1))
}

// TryLock takes the exclusive lock at off through f without waiting; it
// reports false when another open file description holds it. Taking a
// lock f already holds succeeds.
func TryLock(f *os.File, off int64) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: off, Len: 1}
	err := unix.FcntlFlock(f.Fd(), setLk, &lk)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EACCES):
		return false, nil
	default:
		return false, fmt.Errorf("lock %s at %d: %w", f.Name(), off, err)
	}
}

// Unlock gives the lock at off held through f back.
func Unlock(f *os.File, off int64) error {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: 0, Start: off, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), setLk, &lk); err != nil {
		return fmt.Errorf("unlock %s at %d: %w", f.Name(), off, err)
	}
	return nil
}

// Held lists the offsets of the open-file-description write locks held
// through descriptor fd of process pid, from /proc/PID/fdinfo/FD (whose
// "lock:" lines name the locks of that descriptor's open file description
// only). A process that is gone, or whose descriptors cannot be read,
// holds nothing; so does every process where there is no /proc (macOS).
func Held(pid int, fd string) []int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + fd)
	if err != nil {
		return nil
	}
	defer f.Close()
	var offs []int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if off, ok := parseLockLine(sc.Text()); ok {
			offs = append(offs, off)
		}
	}
	return offs
}

// parseLockLine reads a fdinfo line such as
//
//	lock:	1: OFDLCK ADVISORY  WRITE -1 fe:00:9978093 4660 4660
//
// and returns the lock's first byte.
func parseLockLine(line string) (int64, bool) {
	rest, ok := strings.CutPrefix(line, "lock:")
	if !ok {
		return 0, false
	}
	f := strings.Fields(rest)
	// "1:" OFDLCK ADVISORY WRITE PID DEV:INO START END
	if len(f) < 8 || f[1] != "OFDLCK" || f[3] != "WRITE" {
		return 0, false
	}
	off, err := strconv.ParseInt(f[6], 10, 64)
	if err != nil {
		return 0, false
	}
	return off, true
}
