package fsdigest

import (
	"encoding/hex"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
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

// ParseSig reads what String wrote: six numbers, size, mtime and ctime
// in decimal (possibly negative), inode and device in decimal, the mode in
// octal. It is one pass over the text, without strconv: the up-to-date
// check reads one for every output of a pipeline.
func ParseSig(str string) (Sig, error) {
	var v [6]uint64
	field, digits, neg := 0, 0, false
	for i := 0; ; i++ {
		if i == len(str) || str[i] == ':' {
			if digits == 0 || i < len(str) && field == len(v)-1 {
				return Sig{}, fmt.Errorf("fsdigest: bad signature %q", str)
			}
			if neg {
				v[field] = -v[field] // two's complement: read back as an int64
			}
			field, digits, neg = field+1, 0, false
			if i == len(str) {
				break
			}
			continue
		}
		c := str[i]
		base, limit := uint64(10), uint64(math.MaxInt64)
		switch field {
		case 3, 4:
			limit = math.MaxUint64
		case 5:
			base, limit = 8, math.MaxUint32
		}
		if c == '-' && field < 3 && digits == 0 && !neg {
			neg = true
			continue
		}
		if neg {
			limit = math.MaxInt64 + 1
		}
		d := uint64(c) - '0'
		if c < '0' || d >= base || v[field] > (limit-d)/base {
			return Sig{}, fmt.Errorf("fsdigest: bad signature %q", str)
		}
		v[field] = v[field]*base + d
		digits++
	}
	if field != len(v) {
		return Sig{}, fmt.Errorf("fsdigest: bad signature %q", str)
	}
	return Sig{Size: int64(v[0]), Mtime: int64(v[1]), Ctime: int64(v[2]), Ino: v[3], Dev: v[4], Mode: uint32(v[5])}, nil
}
