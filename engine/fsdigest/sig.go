package fsdigest

import (
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Sig is a file's stat information, as the digest cache trusts it: a file
// whose Sig is unchanged is taken to hold what it held.
type Sig struct {
	Size  int64
	Mtime int64 // ns since the epoch
	Ctime int64 // ns since the epoch; 0 where the system does not give it
	Ino   uint64
	Dev   uint64
	Mode  uint32 // fs.FileMode
}

// SigOf returns the Sig of a file from its stat information.
func SigOf(fi fs.FileInfo) Sig {
	k := keyOf(fi)
	return Sig{Size: k.size, Mtime: k.mtime, Ctime: k.ctime, Ino: k.ino, Dev: k.dev, Mode: k.mode}
}

// LstatSig returns the Sig of path itself (a symlink is not followed).
func LstatSig(path string) (Sig, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Sig{}, err
	}
	return SigOf(fi), nil
}

// Known returns the digest the cache holds for the file at path whose stat
// information is s, without looking at the file; false when it holds none.
func (c *Cache) Known(path string, s Sig) (string, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	sum, ok := c.lookup(abs, statKey{size: s.Size, mtime: s.Mtime, ctime: s.Ctime, ino: s.Ino, dev: s.Dev, mode: s.Mode})
	if !ok {
		return "", false
	}
	return hex.EncodeToString(sum[:]), true
}

// Strong reports whether s can tell a file that was rewritten in place from
// the same file: it has an inode number and a change time.
func (s Sig) Strong() bool { return s.Ino != 0 && s.Ctime != 0 }

// Racy reports whether the file was changed so shortly before at (the
// moment its stat information was taken) that a later change could leave
// the same times behind: such a Sig is not to be trusted later.
func (s Sig) Racy(at time.Time) bool {
	return racy(statKey{mtime: s.Mtime, ctime: s.Ctime}, at)
}

// String is a compact form of s for files cairn writes.
func (s Sig) String() string {
	return fmt.Sprintf("%d:%d:%d:%d:%d:%o", s.Size, s.Mtime, s.Ctime, s.Ino, s.Dev, s.Mode)
}

// ParseSig reads what String wrote.
func ParseSig(str string) (Sig, error) {
	var f [6]string
	rest := str
	for i := range f {
		var ok bool
		if i == len(f)-1 {
			f[i], ok = rest, !strings.Contains(rest, ":")
		} else {
			f[i], rest, ok = strings.Cut(rest, ":")
		}
		if !ok {
			return Sig{}, fmt.Errorf("fsdigest: bad signature %q", str)
		}
	}
	var s Sig
	var errs [6]error
	s.Size, errs[0] = strconv.ParseInt(f[0], 10, 64)
	s.Mtime, errs[1] = strconv.ParseInt(f[1], 10, 64)
	s.Ctime, errs[2] = strconv.ParseInt(f[2], 10, 64)
	s.Ino, errs[3] = strconv.ParseUint(f[3], 10, 64)
	s.Dev, errs[4] = strconv.ParseUint(f[4], 10, 64)
	mode, err := strconv.ParseUint(f[5], 8, 32)
	s.Mode, errs[5] = uint32(mode), err
	for _, err := range errs {
		if err != nil {
			return Sig{}, fmt.Errorf("fsdigest: bad signature %q", str)
		}
	}
	return s, nil
}
