package dsl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// pipelineFileProblem says what keeps p from being read as a pipeline
// file, "" when nothing does: a symbolic link to nothing, or an entry that
// is not a regular file (reading a named pipe would wait for a writer
// forever). inDir: p was found in a pipeline directory, not named.
func pipelineFileProblem(p string, inDir bool) string {
	fi, err := os.Stat(p)
	if err != nil {
		target, lerr := os.Readlink(p)
		if lerr == nil && errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("%s is a symbolic link to %s, which does not exist. Point the link at a pipeline file, or remove it.", p, target)
		}
		return err.Error() + "."
	}
	if fi.Mode().IsRegular() {
		return ""
	}
	what := "not a regular file"
	switch m := fi.Mode(); {
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	case m.IsDir():
		what = "a directory"
	}
	if inDir {
		return fmt.Sprintf("%s is %s: a pipeline file is a regular file, and every name ending in .hcl in a pipeline directory is read as one. Remove it, or rename it so that its name does not end in .hcl.", p, what)
	}
	return fmt.Sprintf("%s is %s: a pipeline file is a regular file. Pass a .hcl file, or a directory holding some.", p, what)
}
