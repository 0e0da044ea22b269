//go:build unix

package fsdigest

import (
	"io/fs"
	"syscall"
)

func keyOf(fi fs.FileInfo) statKey {
	k := statKey{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: uint32(fi.Mode())}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.ino = uint64(st.Ino)
		k.dev = uint64(st.Dev)
		k.ctime = CtimeNs(st)
	}
	return k
}
