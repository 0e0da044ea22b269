package plan

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// caseProbe reports whether the filesystem of the workspace at root folds
// case (tests replace it: Linux has no such filesystem by default).
var caseProbe = FoldsCase

// FoldsCase reports whether the filesystem holding the folder dir folds
// case, as macOS's does by default: out/A.txt and out/a.txt name one file
// there. It looks up another case spelling of a name the folder holds;
// where it holds none with letters, it makes a file of its own to look up,
// and removes it. Where it can do neither, it answers for the system's
// default (darwin and windows fold case).
func FoldsCase(dir string) bool {
	if dir == "" {
		dir = "."
	}
	if f, err := os.Open(dir); err == nil {
		names, _ := f.Readdirnames(64)
		f.Close()
		for _, name := range names {
			if folds, ok := otherCase(dir, name); ok {
				return folds
			}
		}
	}
	f, err := os.CreateTemp(dir, ".cairn-case-probe-*")
	if err != nil {
		return runtime.GOOS == "darwin" || runtime.GOOS == "windows"
	}
	name := f.Name()
	f.Close()
	defer os.Remove(name)
	folds, ok := otherCase(dir, filepath.Base(name))
	return ok && folds
}

// otherCase looks up the name in dir in another case: whether that finds
// the same file; ok is false when name has no letters to change, or
// either lookup fails otherwise than finding nothing.
func otherCase(dir, name string) (folds, ok bool) {
	other := strings.ToUpper(name)
	if other == name {
		other = strings.ToLower(name)
	}
	if other == name {
		return false, false
	}
	st, err := os.Lstat(filepath.Join(dir, name))
	if err != nil {
		return false, false
	}
	ot, err := os.Lstat(filepath.Join(dir, other))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, true
	case err != nil:
		return false, false
	}
	return os.SameFile(st, ot), true
}
