//go:build !unix

package fsdigest

import "io/fs"

// keyOf has only size, modification time and mode to go on outside unix.
func keyOf(fi fs.FileInfo) statKey {
	return statKey{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: uint32(fi.Mode())}
}
