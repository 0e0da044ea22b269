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
	var x uint64 // the field read so far
	f := sigFields[0][0]
	for i := 0; ; i++ {
		if i == len(str) || str[i] == ':' {
			if digits == 0 || i < len(str) && field == len(v)-1 {
				return Sig{}, fmt.Errorf("fsdigest: bad signature %q", str)
			}
			if neg {
				x = -x // two's complement: read back as an int64
			}
			v[field] = x
			field, digits, neg, x = field+1, 0, false, 0
			if i == len(str) {
				break
			}
			f = sigFields[field][0]
			continue
		}
		c := str[i]
		if c == '-' && field < 3 && digits == 0 && !neg {
			neg = true
			f = sigFields[field][1]
			continue
		}
		d := uint64(c) - '0'
		if c < '0' || d >= f.base || x > f.cut || x == f.cut && d > f.rem {
			return Sig{}, fmt.Errorf("fsdigest: bad signature %q", str)
		}
		x = x*f.base + d
		digits++
	}
	if field != len(v) {
		return Sig{}, fmt.Errorf("fsdigest: bad signature %q", str)
	}
	return Sig{Size: int64(v[0]), Mtime: int64(v[1]), Ctime: int64(v[2]), Ino: v[3], Dev: v[4], Mode: uint32(v[5])}, nil
}

// sigField is how a signature's field is read: its base, and the largest
// value it may hold as cut and rem (a digit d may follow a value x when
// x < cut, or x == cut and d <= rem).
type sigField struct{ base, cut, rem uint64 }

// sigFields are the six fields' (size, mtime, ctime: int64; inode,
// device: uint64; mode: octal uint32), without and with a minus sign.
var sigFields = [6][2]sigField{
	{{10, math.MaxInt64 / 10, math.MaxInt64 % 10}, {10, (math.MaxInt64 + 1) / 10, (math.MaxInt64 + 1) % 10}},
	{{10, math.MaxInt64 / 10, math.MaxInt64 % 10}, {10, (math.MaxInt64 + 1) / 10, (math.MaxInt64 + 1) % 10}},
	{{10, math.MaxInt64 / 10, math.MaxInt64 % 10}, {10, (math.MaxInt64 + 1) / 10, (math.MaxInt64 + 1) % 10}},
	{{10, math.MaxUint64 / 10, math.MaxUint64 % 10}},
	{{10, math.MaxUint64 / 10, math.MaxUint64 % 10}},
	{{8, math.MaxUint32 / 8, math.MaxUint32 % 8}},
}
