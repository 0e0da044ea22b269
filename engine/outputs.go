package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/cas"
	"github.com/cairn-run/cairn/engine/nofollow"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/stages"
	"github.com/cairn-run/cairn/stages/items"
)

// testBeforePersist, set by engine's own tests, is called before a node's
// record is written to the cache (persist); an error fails the write, as
// a full disk would. It is nil otherwise. The crash points of the crash
// tests are engine/failpoint's.
var testBeforePersist func(addr string) error

// A successful node's result is committed in two steps: settle, then
// persist (execute calls them).
//
// settle stores the node's outputs and result in the cache's blobs and
// makes its record, all but its envelope, which persist adds; from then
// on the record is read only, and the node's downstreams need nothing
// more to start (see release). A missing output or an unreadable result
// fails the node with class "result" (nothing is committed). kept are the
// files the attempt found in its output folders and did not write: the
// record lists them (store.Record.Kept).

func (a *applier) settle(ns *nodeState, out *stages.Outcome, kept []string) (*store.Record, string, string) {
	c := ns.spec.Common
	rec := &store.Record{
		Key: ns.key, Outputs: map[string]string{}, Modes: map[string]uint32{},
		Pipeline: a.g.Config.Name, Address: ns.n.Addr, RunID: a.runID,
		Attempts: ns.attempts, Started: ns.started, Ended: ns.ended,
		Debug: a.opts.Debug[ns.n.Addr], RunCounts: out.RunCounts, Launch: ns.launchRecord(),
		Format: store.Format, NotNeeded: out.NotNeeded,
	}
	if out.Proc != nil {
		rec.ExitCode = out.Proc.ExitCode
		rec.PeakRSSMiB, rec.PeakGPUMiB = out.Proc.PeakRSSMiB, out.Proc.PeakGPUMiB
		rec.Started, rec.Ended = out.Proc.Started, out.Proc.Ended
	}
	result := out.Result
	if result == nil && c.Result != "" {
		b, err := a.readResult(c.Result)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, failclass.Result, fmt.Sprintf("the result file %s was not written: %s", c.Result, errText(err))
		}
		if errors.Is(err, syscall.EISDIR) {
			return nil, failclass.Result, resultIsAFolder(c.Result)
		}
		if err != nil {
			return nil, failclass.Result, fmt.Sprintf("the result file %s", err)
		}
		if recordedSize(b) > resultMax {
			return nil, failclass.Result, resultTooLarge(c.Result)
		}
		if msg := dsl.JSONProblem(b); msg != "" {
			return nil, failclass.Result, fmt.Sprintf("the result file %s %s", c.Result, msg)
		}
		if amb := items.Ambiguous(b); amb != nil {
			line, col := amb.LineCol(b)
			return nil, failclass.Result, fmt.Sprintf("the result file %s, at line %d, column %d: %s", c.Result, line, col, amb.Msg)
		}
		if msg := dsl.JSONTextRefusal(b); msg != "" {
			return nil, failclass.Result, fmt.Sprintf("the result file %s %s", c.Result, msg)
		}
		result = b
	}
	if result != nil {
		var compact json.RawMessage
		if err := json.Unmarshal(result, &compact); err != nil {
			return nil, failclass.Result, fmt.Sprintf("the result is not valid JSON: %s", err)
		}
		rec.Result = compact
	}
	files := append([]string{}, c.Outputs...)
	if c.Result != "" {
		files = append(files, c.Result)
	}
	files = append(files, out.Files...)
	var inlined int64 // bytes of outputs rec holds inline
	for _, f := range files {
		full := filepath.Join(a.g.Root, f)
		st, err := os.Stat(full)
		if err != nil {
			return nil, failclass.Result, fmt.Sprintf("the declared output %s was not written%s", f, dsl.SpellingHint(a.g.Root, f))
		}
		if st.IsDir() {
			err := filepath.WalkDir(full, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					return a.notTheCache(p, f, d)
				}
				if err != nil {
					return err
				}
				if cas.IsRestoreTemp(d.Name()) {
					// A restore's, cut short by a kill: not the node's.
					_ = os.Remove(p)
					return nil
				}
				rel, _ := filepath.Rel(a.g.Root, p)
				return a.storeFile(rec, rel, &inlined)
			})
			if err != nil {
				class, msg := a.storeFailed(f, err)
				return nil, class, msg
			}
			continue
		}
		if err := a.storeFile(rec, f, &inlined); err != nil {
			class, msg := a.storeFailed(f, err)
			return nil, class, msg
		}
	}
	// Without the monotonic clock reading, the record in memory measures
	// the same duration as the one read back from the cache, so a
	// downstream that sees this node's duration_s gets the same key on
	// the next apply.
	rec.Started, rec.Ended = rec.Started.Round(0), rec.Ended.Round(0)
	rec.OutputDigest = plan.OutputDigest(rec.Outputs, rec.Result, "ok")
	for _, p := range kept {
		if _, ok := rec.Outputs[p]; ok {
			rec.Kept = append(rec.Kept, p)
		}
	}
	slices.Sort(rec.Kept)
	rec.Kept = slices.Compact(rec.Kept)
	return rec, "", ""
}

// errOutputHoldsCache fails a node whose output folder holds the cache:
// storing it would store the cache's own files, and restoring it would
// write old copies over them.
var errOutputHoldsCache = errors.New("output folder holds the cache")

// notTheCache refuses dir, a folder of output f, when it is the cache's
// folder reached by another path (a bind mount, a hard-to-see link):
// validate and plan refuse outputs that name the cache by its path, and
// this catches what a path cannot show.
func (a *applier) notTheCache(dir, f string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	cache, err := os.Stat(a.cache.Dir)
	if err != nil || !os.SameFile(info, cache) {
		return nil
	}
	return fmt.Errorf("%w: %s, a folder of output %s, is the cache %s by another path (a bind mount?); put the cache outside the node's outputs (--cache)", errOutputHoldsCache, dir, f, a.cache.Dir)
}

// storeFailed is the class and message of a node whose output f could
// not be stored: infrastructure where the cache's own files could not be
// written (a full disk, a cache cairn may not write in), which is no fault
// of the node; result where the node's file is (missing, unreadable, a
// link leading out of the workspace).
func (a *applier) storeFailed(f string, err error) (class, msg string) {
	if errors.Is(err, errOutputHoldsCache) {
		return failclass.Setup, fmt.Sprintf("cannot store output %s: %s", f, err)
	}
	if inCacheDir(a.cache.Dir, err) {
		return failclass.Infra, fmt.Sprintf("cannot store output %s in the cache (%s): make room on the cache's disk, or let cairn write there, and apply again", f, err)
	}
	return failclass.Result, fmt.Sprintf("cannot store output %s: %s", f, err)
}

// inCacheDir reports whether err is about a file below the cache folder
// dir (the first path error it wraps).
func inCacheDir(dir string, err error) bool {
	var path string
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		path = pe.Path
	case errors.As(err, &le):
		path = le.New
	default:
		return false
	}
	d, err1 := filepath.Abs(dir)
	p, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return false
	}
	_, below := plan.Below(d, p)
	return below
}

// persist is the second half of commit: the record, with its envelope,
// is written to the cache index once the records of the node's upstreams
// are in it. An upstream released early (see release) may still be
// writing its record: persist waits for it, and a node whose upstream's
// record could not be written writes none either. The records of its
// upstreams that this apply wrote and no sync round has made durable yet
// are named in the node's (store.Need): it counts only where they are in
// the index too, so no sync round is waited for.
func (a *applier) persist(ns *nodeState, rec *store.Record) (class, msg string) {
	var needs []store.Need
	durable := a.cache.Durable()
	for _, d := range ns.n.Deps {
		u := a.nodes[d]
		if u.persisted != nil {
			<-u.persisted
			if u.persistFailed {
				return failclass.Infra, fmt.Sprintf("not committed: the record of its upstream %s could not be committed to the cache", u.n.Addr)
			}
		}
		// An upstream that is not released set seq and record before
		// the loop heard of its end, and so before this node started.
		if u.seq > durable && u.record != nil {
			needs = append(needs, store.Need{Key: u.key, OutputDigest: u.record.OutputDigest})
		}
	}
	body := *rec // rec itself is read by the loop
	body.Envelope = ns.envJSON
	if body.Envelope == nil {
		if env, err := json.Marshal(ns.env); err == nil {
			body.Envelope = env
		}
	}
	var seq int64
	var err error
	if testBeforePersist != nil {
		err = testBeforePersist(ns.n.Addr)
	}
	if err == nil {
		seq, err = a.cache.Commit(&body, needs)
	}
	if err != nil {
		return failclass.Infra, fmt.Sprintf("cannot commit the result to the cache: %s", err)
	}
	ns.seq = seq
	return "", ""
}

// openOutput opens a file the node wrote (a declared output, a file in
// an output folder, its result) to store it. Paths are checked when the
// pipeline is planned, but a workload may make the file, or a folder on
// its way, a symlink to anywhere when it runs: a link is followed only
// within the workspace and never into the cache folder, and the file is
// then opened where the link led without following any link on the way
// (nofollow.Open), so a link made in between cannot lead elsewhere.
// Nothing outside the workspace, and none of the cache's own files, is
// read into the cache. A file that does not exist is an error wrapping
// fs.ErrNotExist.
func (a *applier) openOutput(rel string) (*os.File, error) {
	// Most outputs have no symlink on their way. Opened without following
	// any, such a file is where its name says, below the workspace: only
	// the cache folder is to be told from it. Any other answer (a link, a
	// missing file) takes the way below, as before.
	pc := a.g.PathCheck()
	if f, err := nofollow.Open(pc.RootReal(), rel); err == nil {
		if !pc.InCache(filepath.Join(pc.RootReal(), rel)) {
			return f, nil
		}
		f.Close()
	}
	in, err := a.resolveOutput(rel)
	if err != nil {
		return nil, err
	}
	f, err := nofollow.Open(pc.RootReal(), in)
	var le *nofollow.LinkError
	if errors.As(err, &le) {
		return nil, fmt.Errorf("%s changed while it was being stored (%s)", rel, le)
	}
	return f, err
}

// resolveOutput resolves the symlinks of a file the node wrote and returns
// where it is, relative to the workspace root's real path; a file that
// resolves outside the workspace or into the cache folder is refused.
func (a *applier) resolveOutput(rel string) (string, error) {
	pc := a.g.PathCheck()
	real, err := filepath.EvalSymlinks(filepath.Join(a.g.Root, rel))
	if err != nil {
		return "", err
	}
	in, ok := plan.Below(pc.RootReal(), real)
	if !ok {
		return "", fmt.Errorf("%s is a symlink to %s, outside the workspace: it is not stored", rel, real)
	}
	if pc.InCache(real) {
		return "", fmt.Errorf("%s is in the cache folder (%s): the cache's own files are never stored", rel, real)
	}
	return in, nil
}

// checkInside refuses a file the node wrote that resolves outside the
// workspace or into the cache folder (a missing file is not refused).
func (a *applier) checkInside(rel string) error {
	_, err := a.resolveOutput(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// resultMax is the most bytes a result file may hold. The node's record
// holds its result whole, and a record must fit, with the rest of it, in
// one record of the cache's index (wal.MaxRecordSize, 64 MiB), which
// every apply reads when it starts: bulk data belongs in outputs, stored
// as blobs.
const resultMax = 32 << 20

// recordedSize is about how many bytes the result b takes in its record:
// the record's JSON writes each <, > and & as a six-byte escape (\u003c).
func recordedSize(b []byte) int {
	return len(b) + 5*(bytes.Count(b, []byte("<"))+bytes.Count(b, []byte(">"))+bytes.Count(b, []byte("&")))
}

// resultTooLarge says that the result file rel holds more than resultMax
// bytes, and what to do.
func resultTooLarge(rel string) string {
	return fmt.Sprintf("the result file %s holds more than %d MiB, the most a result may hold (the cache's record of the node keeps it whole, each <, > and & as 6 bytes): keep in result the values that postconditions and downstream stages read, and write bulk data to a file in outputs", rel, resultMax>>20)
}

// readResult reads the result file rel the node wrote, as openOutput
// opens it: at most resultMax bytes and one more, so that a file too
// large is told without reading it whole.
func (a *applier) readResult(rel string) ([]byte, error) {
	f, err := a.openOutput(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, resultMax+1))
}

// Outputs of at most inlineMax bytes are kept inside their record, up to
// inlineRecordMax bytes for a record, rather than each in a blob of its
// own: storing one then costs no file, rename and fsync of its own, and a
// record is durable with them. Larger ones, and the rest once a record
// holds inlineRecordMax, go to the blob store.
const (
	inlineMax       = 1 << 10
	inlineRecordMax = 8 << 10
)

// storeFile stores the output rel in rec: inline while it is small and
// *inlined, the bytes rec already holds inline, leaves room for it; in
// the blob store otherwise.
func (a *applier) storeFile(rec *store.Record, rel string, inlined *int64) error {
	f, err := a.openOutput(rel)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s)", rel, st.Mode().Type())
	}
	rec.Modes[rel] = uint32(st.Mode().Perm())
	// A file stored a second time (a result inside an output folder)
	// takes the room of its first copy.
	room := inlineRecordMax - *inlined + int64(len(rec.Inline[rel]))
	if limit := min(inlineMax, room); st.Size() <= limit {
		// One more byte than the limit tells a file that grew since.
		b, err := io.ReadAll(io.LimitReader(f, limit+1))
		if err != nil {
			return err
		}
		if int64(len(b)) <= limit {
			if rec.Inline == nil {
				rec.Inline = map[string][]byte{}
			}
			*inlined += int64(len(b)) - int64(len(rec.Inline[rel]))
			rec.Inline[rel] = b
			rec.Outputs[rel] = string(cas.DigestBytes(b))
			return nil
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
	}
	d, _, err := a.cache.Blobs.PutOpen(f)
	if err != nil {
		return err
	}
	if old, ok := rec.Inline[rel]; ok {
		*inlined -= int64(len(old))
		delete(rec.Inline, rel)
	}
	rec.Outputs[rel] = string(d)
	return nil
}

// restoreLinkError reports a cached output that cannot be restored
// because a folder on its way is a symlink (or a file): the node fails
// with class "result", and the record stays in the cache.
type restoreLinkError struct {
	output string
	err    *nofollow.LinkError
}

func (e *restoreLinkError) Error() string {
	if e.err.NotDir {
		return fmt.Sprintf("the cached output %s is not restored: %s; make it a folder, or remove it, before this stage", e.output, e.err)
	}
	return fmt.Sprintf("the cached output %s is not restored: %s, and cairn never writes through a link; make %s a real folder, or remove it, before this stage", e.output, e.err, e.err.Path)
}

// restoreWorkspaceError reports a cached output that cannot be written
// into the workspace (a folder where the file goes, a folder cairn may not
// write in, one removed meanwhile): the node fails with class "result" and
// the record, which is intact, stays in the cache for every workspace.
type restoreWorkspaceError struct {
	output string // as declared
	path   string // in the workspace
	cache  string // the cache folder
	err    error
}

func (e *restoreWorkspaceError) Error() string {
	if inCacheDir(e.cache, e.err) {
		// The cache's own file, not the workspace, is at fault (a blob
		// this user may not read).
		return fmt.Sprintf("the cached output %s is not restored to %s: cairn cannot read the cache's copy (%v); the cache keeps its record; let this user read the cache's files (a shared cache: see docs/durability.md, \"Sharing a cache\"), or apply with another --cache", e.output, e.path, e.err)
	}
	what := "fix what keeps cairn from writing it, and apply again"
	var pe *fs.PathError
	inWorkspace := errors.As(e.err, &pe) && strings.HasPrefix(pe.Path, filepath.Dir(e.path))
	if fi, err := os.Lstat(e.path); err == nil && fi.IsDir() {
		what = fmt.Sprintf("%s is a folder: remove it, or move it aside, and apply again", e.path)
	} else if inWorkspace && errors.Is(e.err, fs.ErrPermission) {
		what = fmt.Sprintf("cairn may not write in %s: make it writable, and apply again", filepath.Dir(e.path))
	} else if inWorkspace && errors.Is(e.err, fs.ErrNotExist) {
		what = fmt.Sprintf("the folder %s went away while cairn restored into it: apply again", filepath.Dir(e.path))
	}
	return fmt.Sprintf("the cached output %s is not restored to %s: %v; the cache keeps its record, which other workspaces still use; %s", e.output, e.path, e.err, what)
}

func (e *restoreWorkspaceError) Unwrap() error { return e.err }

// restoreDamaged reports whether a restore failed because of the cache's
// copy (a blob or inline bytes that do not hash to their digest, a blob
// that is gone), rather than the workspace.
func restoreDamaged(err error) bool {
	return errors.Is(err, cas.ErrCorrupt) || errors.Is(err, cas.ErrNotFound)
}

// outputsToRestore are the outputs of rec, sorted, that the workspace
// does not hold as cached: those restoreOutputs writes. Files already as
// cached are left alone, even through a link: only writes must not go
// through one.
func (a *applier) outputsToRestore(rec *store.Record) []string {
	var todo []string
	for p, want := range rec.Outputs {
		if _, same := plan.OutputState(a.g.Root, p, want, a.cache.Stat); !same {
			todo = append(todo, p)
		}
	}
	sort.Strings(todo)
	return todo
}

// restoreOutputs puts a cached node's outputs in the workspace: todo,
// those whose content does not match already (outputsToRestore), are
// copied from the blob store and verified. Every folder on the way to a file it
// writes is opened without following symlinks (nofollow.OpenDir), and all
// of them are checked before anything is written: when one is a symlink,
// the error is a *restoreLinkError and nothing was restored. Damage to the
// cached copy is an error restoreDamaged tells; what else keeps a file
// from being written is a *restoreWorkspaceError.
func (a *applier) restoreOutputs(rec *store.Record, todo []string) error {
	dirs := map[string]*os.File{}
	defer func() {
		for _, d := range dirs {
			if d != nil {
				d.Close()
			}
		}
	}()
	openDir := func(p string, create bool) (*os.File, error) {
		rel := filepath.Dir(p)
		if d := dirs[rel]; d != nil {
			return d, nil
		}
		d, err := nofollow.OpenDir(a.g.Root, rel, create)
		var le *nofollow.LinkError
		if errors.As(err, &le) {
			return nil, &restoreLinkError{output: p, err: le}
		}
		if err != nil {
			return nil, &restoreWorkspaceError{output: p, path: filepath.Join(a.g.Root, p), cache: a.cache.Dir, err: err}
		}
		dirs[rel] = d
		return d, nil
	}
	for _, p := range todo {
		if _, err := openDir(p, false); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for _, p := range todo {
		want := rec.Outputs[p]
		dir, err := openDir(p, true)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if m, ok := rec.Modes[p]; ok && m != 0 {
			mode = os.FileMode(m)
		}
		if b, ok := rec.Inline[p]; ok {
			err = cas.RestoreBytesAt(cas.Digest(want), b, dir, filepath.Base(p), mode)
		} else {
			err = a.cache.Blobs.RestoreAt(cas.Digest(want), dir, filepath.Base(p), mode)
		}
		if err != nil && restoreDamaged(err) {
			return fmt.Errorf("output %s: %w", p, err)
		}
		if err != nil {
			return &restoreWorkspaceError{output: p, path: filepath.Join(a.g.Root, p), cache: a.cache.Dir, err: err}
		}
	}
	for _, d := range dirs {
		if d != nil {
			removeRestoreTemps(d)
		}
	}
	return nil
}

// clearInTheWay removes what stands where rec's outputs go and is cairn's
// own output of the configuration the workspace holds (a folder the node
// wrote in another configuration where this one's file goes), saying so;
// the cache keeps it with that configuration. Where something of the
// user's is in the way, it removes nothing and says why the output is not
// restored, and what to do (as plan did).
func (a *applier) clearInTheWay(ns *nodeState, rec *store.Record) string {
	w := plan.RestoreInTheWay(a.g.Root, a.g.Config.Name, ns.n.Addr, rec, a.cache)
	if why := w.Refusal(a.g.Root); why != "" {
		return why
	}
	var removed, emptied []string
	for _, p := range w.Files {
		if os.Remove(filepath.Join(a.g.Root, filepath.FromSlash(p))) == nil {
			removed = append(removed, p)
		}
	}
	for _, d := range w.Folders {
		if os.Remove(filepath.Join(a.g.Root, filepath.FromSlash(d))) == nil {
			emptied = append(emptied, d)
		}
	}
	var what []string
	if len(removed) > 0 {
		what = append(what, fewPaths(removed))
	}
	switch len(emptied) {
	case 0:
	case 1:
		what = append(what, "the folder "+emptied[0])
	default:
		what = append(what, "the folders "+fewPaths(emptied))
	}
	if len(what) > 0 {
		a.warn("%s: removed %s, where its cached output goes: the configuration of the node the workspace held wrote it (the cache keeps it with that configuration)", ns.n.Addr, strings.Join(what, " and "))
	}
	return ""
}

// removeRestoreTemps removes from the open folder dir the temporary files
// of restores that a kill cut short (cas.IsRestoreTemp): left there, a
// command counting the folder's files would count them, and a run of the
// node would have stored them as its output.
func removeRestoreTemps(dir *os.File) {
	entries, err := dir.ReadDir(-1)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Type().IsRegular() && cas.IsRestoreTemp(e.Name()) {
			_ = nofollow.Remove(dir, e.Name())
		}
	}
}

func errText(err error) string {
	if os.IsNotExist(err) {
		return "no such file"
	}
	return err.Error()
}

// removeOtherConfigurations makes the node's declared output folders hold
// what its restored record holds: the files another configuration of the
// node wrote there, which rec does not hold (plan.OtherConfigurations),
// are removed, and said, with the folders that leaves empty; a
// downstream reading the folder would read them as this one's. Their
// content stays in the cache with that configuration's record. Any other
// file there (the user's own) stays.
func (a *applier) removeOtherConfigurations(ns *nodeState, rec *store.Record) {
	files, folders := plan.OtherConfigurations(a.g.Root, a.g.Config.Name, ns.n.Addr, ns.spec.Common.Outputs, rec, a.cache)
	var removed, emptied []string
	for _, p := range files {
		if os.Remove(filepath.Join(a.g.Root, p)) == nil {
			removed = append(removed, p)
		}
	}
	if len(removed) == 0 {
		return
	}
	for _, d := range folders {
		// Only an empty folder goes: one that still holds a file (one
		// that could not be removed, or came meanwhile) stays.
		full := filepath.Join(a.g.Root, d)
		if st, err := os.Lstat(full); err == nil && st.IsDir() && os.Remove(full) == nil {
			emptied = append(emptied, d)
		}
	}
	also := ""
	if len(emptied) > 0 {
		slices.Sort(emptied)
		also = ", and the folder " + fewPaths(emptied) + " that this left empty"
		if len(emptied) > 1 {
			also = ", and the folders " + fewPaths(emptied) + " that this left empty"
		}
	}
	a.warn("%s: removed %s from its output folder%s: another configuration of the node wrote it, and this one's cached output does not hold it (the cache keeps it with that configuration)", ns.n.Addr, fewPaths(removed), also)
}

// resultIsAFolder is the failure of a node whose result path is a folder.
func resultIsAFolder(decl string) string {
	return fmt.Sprintf("the result file %s is a folder: result names the JSON file the node writes; list a folder the node writes in outputs, and name a file in result", decl)
}
