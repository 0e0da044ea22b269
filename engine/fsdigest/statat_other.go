//go:build !linux

package fsdigest

import (
	"os"
	"path/filepath"
)

// LstatSigAt returns the Sig of the file name in the folder dir (a symlink
// is not followed).
func LstatSigAt(dir *os.File, name string) (Sig, error) {
	return LstatSig(filepath.Join(dir.Name(), name))
}
