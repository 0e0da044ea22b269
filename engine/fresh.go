package engine

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/fsdigest"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/stages"
)

// A node's declared result and outputs must be written by the run that
// commits them: a command that exits 0 without rewriting its result file
// would otherwise pass with the file an earlier run left (an old RULER
// accuracy, say). Before each attempt cairn marks every file the node
// declares that already exists, by setting its modification time to
// freshMark; any write, truncation or replacement (write and rename) gives
// the file a new modification time or a new inode. A file that still
// carries the mark after the node exited was not written by it. The mark
// is exact on any filesystem (whole even seconds, which FAT and coarse NFS
// clocks keep too), so a rewrite within the same clock tick as the earlier
// run is still seen; a rewrite with identical content is a write. The
// files the node did not write get their own times back.
var freshMark = executor.OutputMark

// fileMark is one file's identity when it was marked.
type fileMark struct {
	rel          string // workspace-relative
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // ns
	atime        time.Time
	origMtime    time.Time // the time it carried before the mark
	marked       bool      // its mtime was set to freshMark
}

// outputMarks are the marks of one declared path (a file, or the files of
// a folder).
type outputMarks struct {
	decl   string // the declared path
	result bool   // it is the node's result file
	files  map[string]*fileMark
	exists bool
}

// freshMarks are a node's marks for one attempt.
type freshMarks struct {
	root string
	outs []*outputMarks
	at   time.Time // when the files were marked
	// held is the record whose outputs this node's address was last
	// given (committed, or taken from the cache; nil: none, or gone), with
	// its key ("" when none), and key the attempt's: held is another
	// configuration's where its key is not key. Read only where a written
	// folder holds a file this attempt did not write.
	held func() (*store.Record, string)
	key  string
	// stat digests the files left in a folder, to compare them with what
	// held holds (set with held).
	stat *fsdigest.Cache
	// kept are the files check found in written folders that the attempt
	// did not write, and that are no configuration's output (the record
	// lists them: store.Record.Kept).
	kept []string
}

// markOutputs marks the existing files among a node's declared result and
// outputs, and the outputs its kind rewrites on every attempt (rewritten:
// an evaluation's scores file), before it runs. Nothing is followed
// through a symlink: a link is recorded as it is, and no time is set
// through it; a path that inside reports as leaving the workspace is not
// marked (commit refuses it).
func markOutputs(root string, c stages.Common, rewritten []string, inside func(rel string) error) *freshMarks {
	m := &freshMarks{root: root, at: time.Now()}
	add := func(decl string, result bool) {
		om := &outputMarks{decl: decl, result: result, files: map[string]*fileMark{}}
		full := filepath.Join(root, decl)
		st, err := os.Lstat(full)
		if err != nil || inside(decl) != nil {
			m.outs = append(m.outs, om)
			return
		}
		om.exists = true
		if st.IsDir() {
			_ = filepath.WalkDir(full, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil
				}
				rel, _ := filepath.Rel(root, p)
				if fm := markFile(p, rel); fm != nil {
					om.files[rel] = fm
				}
				return nil
			})
		} else if fm := markFile(full, decl); fm != nil {
			om.files[decl] = fm
		}
		m.outs = append(m.outs, om)
	}
	if c.Result != "" {
		add(c.Result, true)
	}
	for _, o := range c.Outputs {
		if o != c.Result {
			add(o, false)
		}
	}
	for _, o := range rewritten {
		if o != c.Result && !slices.Contains(c.Outputs, o) {
			add(o, false)
		}
	}
	return m
}

// before are the modification times (ns) the marked files had before
// their mark, by absolute path (executor.Spec.Marked); nil when none was
// marked.
func (m *freshMarks) before() map[string]int64 {
	var out map[string]int64
	for _, om := range m.outs {
		for rel, fm := range om.files {
			if fm.marked {
				if out == nil {
					out = map[string]int64{}
				}
				out[filepath.Join(m.root, rel)] = fm.origMtime.UnixNano()
			}
		}
	}
	return out
}

// markFile records a file's identity, setting its mtime to freshMark when
// it is a regular file (not a link).
func markFile(full, rel string) *fileMark {
	st, err := os.Lstat(full)
	if err != nil {
		return nil
	}
	fm := &fileMark{rel: rel, origMtime: st.ModTime()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		fm.atime = time.Unix(0, fsdigest.AtimeNs(sys))
	}
	if st.Mode().IsRegular() && os.Chtimes(full, fm.atime, freshMark) == nil {
		fm.marked = true
		if st2, err := os.Lstat(full); err == nil {
			st = st2
		}
	}
	fm.setIdentity(st)
	return fm
}

func (fm *fileMark) setIdentity(st os.FileInfo) {
	fm.size = st.Size()
	fm.mtime = st.ModTime().UnixNano()
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		fm.dev, fm.ino = uint64(sys.Dev), sys.Ino
		fm.ctime = fsdigest.CtimeNs(sys)
	}
}

// unchanged reports whether the file is as it was marked.
func (fm *fileMark) unchanged(st os.FileInfo) bool {
	now := &fileMark{}
	now.setIdentity(st)
	if now.dev != fm.dev || now.ino != fm.ino || now.size != fm.size || now.mtime != fm.mtime {
		return false
	}
	// A marked file keeps the exact mark only if nothing wrote it; an
	// unmarked one (a link, a file cairn may not set times on) also
	// needs the same change time.
	return fm.marked || now.ctime == fm.ctime
}

// check returns a message naming the first declared path that this
// attempt did not write ("" when every one was written or is missing,
// which commit reports itself), and gives the files left unwritten their
// times back. since is when the attempt's process started, when that was
// before the marks (a cluster job an earlier apply submitted, to which this
// one re-attached): a file it changed after since, before it was marked,
// was written by it.
func (m *freshMarks) check(since time.Time) string {
	if !since.Before(m.at) {
		since = time.Time{} // a process of this attempt: the marks say it all
	}
	msg := ""
	for _, om := range m.outs {
		if !om.exists {
			continue
		}
		written := false
		var left []string // files of a folder this attempt did not write
		for rel, fm := range om.files {
			st, err := os.Lstat(filepath.Join(m.root, rel))
			if err != nil || !fm.unchanged(st) || (!since.IsZero() && fm.marked && !fm.origMtime.Before(since) && fm.origMtime.Before(m.at)) {
				written = true
				continue
			}
			fm.restore(m.root)
			if rel != om.decl {
				left = append(left, rel)
			}
		}
		// A folder is written when a file in it changed, appeared or
		// went away: one that only gained files was written too, and
		// what it holds besides them is checked all the same.
		if !written {
			written = m.gained(om)
		}
		if written {
			stale, kept, rec := m.leftFiles(left)
			if msg == "" && len(stale) > 0 {
				msg = otherConfiguration(om, stale, rec)
			}
			m.kept = append(m.kept, kept...)
			continue
		}
		if msg != "" {
			continue
		}
		what := "the declared output"
		if om.result {
			if fi, err := os.Stat(filepath.Join(m.root, om.decl)); err == nil && fi.IsDir() {
				msg = resultIsAFolder(om.decl)
				continue
			}
			what = "the result file"
		}
		since := ""
		for _, fm := range om.files {
			since = fmt.Sprintf(" (it was last written %s)", fm.origMtime.UTC().Format(time.RFC3339))
			break
		}
		msg = fmt.Sprintf("%s %s was not written by this run: it is the file an earlier run left%s; the node must write it each time it runs", what, om.decl, since)
	}
	return msg
}

// gained reports whether the declared folder of om holds files that were
// not there when it was marked (none went away: check saw every marked
// file).
func (m *freshMarks) gained(om *outputMarks) bool {
	full := filepath.Join(m.root, om.decl)
	st, err := os.Lstat(full)
	if err != nil || !st.IsDir() {
		return false
	}
	n := 0
	_ = filepath.WalkDir(full, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n != len(om.files)
}

// leftFiles sorts the files of a written folder that this attempt left
// as they were (left), by what the held record (rec, nil when there is
// none) holds: stale are those it holds among its outputs with the same
// content, and does not mark kept, where it is another configuration's:
// that configuration's output, not this one's, which committing would
// store as this configuration's and restore wherever it is asked for. Its
// outputs where it is this configuration's (an earlier run of it, the
// command skipping what it finds) are neither: they are this
// configuration's. kept are the rest (the user's own, an interrupted
// attempt's, one by the name of an output with other content): no
// configuration's output, kept for a command that skips what it finds.
//
// Where the workspace held another configuration whose record is gone
// (cairn gc collected it, or it was evicted), which files it wrote cannot
// be told: every file left is stale, and rec is a record of that key with
// no outputs. Keeping them would store, and restore, what may be that
// configuration's output as this one's.
func (m *freshMarks) leftFiles(left []string) (stale, kept []string, rec *store.Record) {
	if len(left) == 0 {
		return nil, nil, nil
	}
	if m.held != nil && m.stat != nil {
		var key string
		if rec, key = m.held(); rec == nil && key != "" && key != m.key {
			return slices.Clone(left), nil, &store.Record{Key: key}
		}
	}
	for _, rel := range left {
		p := filepath.ToSlash(rel)
		if rec != nil && !rec.IsKept(p) {
			if want, ok := rec.Outputs[p]; ok {
				if _, same := plan.OutputState(m.root, p, want, m.stat); same {
					if rec.Key != m.key {
						stale = append(stale, p)
					}
					continue
				}
			}
		}
		kept = append(kept, p)
	}
	return stale, kept, rec
}

// otherConfiguration is the message naming the files of a written folder
// (om) that another configuration's record (rec) holds: stale (leftFiles).
// A record with no outputs is one whose record is gone (leftFiles): the
// message says that whose the files are cannot be told.
func otherConfiguration(om *outputMarks, stale []string, rec *store.Record) string {
	run := ""
	if rec.RunID != "" {
		run = " (run " + rec.RunID + ")"
	}
	it, is := "it", "it is"
	if len(stale) > 1 {
		it, is = "them", "they are"
	}
	if rec.Outputs == nil {
		return fmt.Sprintf("%s holds %s, which this run did not write: the workspace held another configuration of this node, whose record is gone from the cache (cairn gc collected it, or it was evicted), so whether %s that configuration's output cannot be told; remove %s (or have the command empty %s before it writes there), then apply again",
			om.decl, fewPaths(stale), is, it, om.decl)
	}
	return fmt.Sprintf("%s holds %s, which this run did not write: an earlier run of this node with another configuration%s wrote %s, so %s not this configuration's output; remove %s (or have the command empty %s before it writes there), then apply again",
		om.decl, fewPaths(stale), run, it, is, it, om.decl)
}

// fewPaths names paths for a message: sorted, the first three, and how
// many more there are ("a, b, c and 2 more").
func fewPaths(paths []string) string {
	slices.Sort(paths)
	more := ""
	if len(paths) > 3 {
		more = fmt.Sprintf(" and %d more", len(paths)-3)
		paths = paths[:3]
	}
	return strings.Join(paths, ", ") + more
}

// restore gives a file that was not written its times back.
func (fm *fileMark) restore(root string) {
	if fm.marked {
		_ = os.Chtimes(filepath.Join(root, fm.rel), fm.atime, fm.origMtime)
	}
}

// release gives every file still carrying the mark its times back (after
// a failed attempt).
func (m *freshMarks) release() {
	for _, om := range m.outs {
		for rel, fm := range om.files {
			if st, err := os.Lstat(filepath.Join(m.root, rel)); err == nil && fm.unchanged(st) {
				fm.restore(m.root)
			}
		}
	}
}
