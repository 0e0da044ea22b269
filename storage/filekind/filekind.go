// Package filekind names what a file that is not a regular file is, for
// messages that refuse it.
package filekind

import "io/fs"

// Of names what a file of mode m is when it is not a regular file ("a
// folder", "a named pipe", ...).
func Of(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a plain file"
}
