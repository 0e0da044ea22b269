package slurm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/cairn-run/cairn/engine/executor"
)

// fileSig is what tells a file from the same file changed: its inode, size
// and modification time (ns), as the stat cache's signatures do.
type fileSig struct {
	ino, size, mtime int64
}

// outputsLine is the wrapper's command that adds the state of job's
// outputs to the exit file being written ("$tmp"), ending in &&: an
// "output_root" line for each output, then an "output=TYPE INODE SIZE
// MTIME PATH" line for
// each file or folder in them, as the command left them (an output it did
// not make has none). "" for a job without outputs.
func outputsLine(job *Job) string {
	if len(job.Outputs) == 0 {
		return ""
	}
	paths := make([]string, len(job.Outputs))
	for i, o := range job.Outputs {
		paths[i] = quote(o)
	}
	list := strings.Join(paths, " ")
	return fmt.Sprintf(`{ printf 'output_root=%%s\n' %s; find %s -printf 'output=%%y %%i %%s %%T@ %%p\n' 2>/dev/null; :; } >>"$tmp" &&
		`, list, list)
}

// parseFindLine reads an exit file's "output" value (outputsLine): the
// path of a file and its signature; ok is false for a folder (its files
// are listed themselves) and for a line it cannot read.
func parseFindLine(v string) (string, fileSig, bool) {
	f := strings.SplitN(v, " ", 5)
	if len(f) < 5 || f[0] == "d" {
		return "", fileSig{}, false
	}
	ino, err1 := strconv.ParseInt(f[1], 10, 64)
	size, err2 := strconv.ParseInt(f[2], 10, 64)
	mtime, err3 := findTime(f[3])
	if err := errors.Join(err1, err2, err3); err != nil {
		return "", fileSig{}, false
	}
	return f[4], fileSig{ino: ino, size: size, mtime: mtime}, true
}

// findTime is find's %T@ (seconds since the epoch, a fraction after the
// point) in nanoseconds.
func findTime(s string) (int64, error) {
	secs, frac, _ := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return 0, err
	}
	frac = (frac + "000000000")[:9]
	ns, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, err
	}
	return sec*1e9 + ns, nil
}

// currentFiles are the files (not folders) in paths now, by path, with
// their signatures; paths are not followed through links, as find does.
func currentFiles(paths []string) map[string]fileSig {
	out := map[string]fileSig{}
	for _, p := range paths {
		_ = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if fi, err := d.Info(); err == nil {
				out[path] = sigOf(fi)
			}
			return nil
		})
	}
	return out
}

// sigOf is fi's signature.
func sigOf(fi os.FileInfo) fileSig {
	sig := fileSig{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		sig.ino = int64(st.Ino)
	}
	return sig
}

// sameFile says whether now is the file the job left (was): the same, or
// the same with cairn's mark (executor.OutputMark) on it, put there after
// the job ended (by the apply that re-attached to it). before is the time
// the file had under that mark (Spec.Marked; known says there is one): an
// edit made between the job's end and the mark that kept the file's
// inode and size shows there. A file that carried the mark already when
// it was marked again (an apply killed before it gave the times back)
// says nothing more.
func sameFile(was, now fileSig, before int64, known bool) bool {
	mark := executor.OutputMark.UnixNano()
	if now.mtime == mark && was.mtime != mark {
		now.mtime = was.mtime
		if known && before != mark {
			now.mtime = before
		}
	}
	return was == now
}

// changedOutput says, for a job whose exit file lists its outputs, which
// of their files changed (edited, removed, added) after the command ended
// and before cairn collected the job: its result is not stored, as the
// outputs are no longer what the job made. Paths are told relative to dir
// (the workspace). "" when none changed, or nothing was listed.
func changedOutput(ex *ExitStatus, dir string, marked map[string]int64) string {
	if ex.Outputs == nil {
		return ""
	}
	now := currentFiles(ex.OutputRoots)
	var changed []string
	for p, sig := range ex.Outputs {
		before, known := marked[p]
		if got, ok := now[p]; !ok || !sameFile(sig, got, before, known) {
			changed = append(changed, p)
		}
	}
	for p := range now {
		if _, ok := ex.Outputs[p]; !ok {
			changed = append(changed, p)
		}
	}
	if len(changed) == 0 {
		return ""
	}
	p := slices.Min(changed)
	if rel, err := filepath.Rel(dir, p); err == nil && dir != "" && !strings.HasPrefix(rel, "..") {
		p = rel
	}
	return fmt.Sprintf("its output %s changed after the job ended, before cairn collected it (edited, or written by something else): its result is not stored, as its outputs are no longer what the job made; apply again", p)
}
