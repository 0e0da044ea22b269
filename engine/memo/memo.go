// Package memo is the up-to-date memo: what an apply that ended well
// depended on (files read, keys, outputs, inputs, how far the cache's index
// was read), its file format under the cache's memo/ folder, and the check
// that lets a later apply or plan skip evaluating the pipeline.
package memo

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/fsdigest"
	"github.com/cairn-run/cairn/engine/nofollow"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/storage/atomicfile"
	"github.com/cairn-run/cairn/storage/wal"
)

// A Memo remembers that a pipeline, run with given arguments, was up to
// date: every node taken from the cache or run, with nothing failed. It
// lists everything the evaluation and the keys depended on — the files the
// pipeline's evaluation read, each node's key, output files and input
// digests, and how far the cache's index had been read — so that a later
// apply or plan can tell, by looking at those files' stat information
// alone, that evaluating the pipeline again would give the same keys and
// find every one of them cached. It then skips the evaluation (see
// docs/durability.md, "The up-to-date check").
//
// The check is conservative: anything it cannot vouch for sends cairn down
// the full path, which is always right.
type Memo struct {
	Identity string
	Pipeline string
	Summary  string // the graph's one-line summary, for the header
	// Sensitive names the sensitive variables, so that the journal's copy
	// of the command line hides their values as a full apply does.
	Sensitive []string
	Index     Index
	Files     []File
	Nodes     []Node

	settled bool // see Settled
}

// Index is how far the cache's index had been read when the memo was
// made: records appended after Offset are looked at by the check.
type Index struct {
	Dev, Ino uint64
	Offset   int64
}

// File is a file the evaluation read (or found absent).
type File struct {
	Path   string // absolute
	Absent bool
	Sig    fsdigest.Sig
	// Listing is set for a pipeline directory listed within the racy
	// window of the moment its Sig was taken: the digest of the names of
	// its pipeline files (listingDigest). Its times cannot vouch for its
	// listing yet, so the check lists it again and compares, and settles
	// it (clears Listing) once the times can.
	Listing string
}

// Node is one node, in the graph's order.
type Node struct {
	Addr, Key string
	Outputs   []Output
	Inputs    []Input
}

// Output is an output file as it was after the apply (not followed
// through a link).
type Output struct {
	Path string // workspace-relative
	Sig  fsdigest.Sig
	// Digest is set for an output written within the racy window of the
	// moment its Sig was taken (fsdigest.Sig.Racy): its times cannot vouch
	// for its content yet, so the check reads the file and compares its
	// digest, and settles it (clears Digest) once the times can.
	Digest string
}

// Input is an input of a node's key and its digest.
type Input struct {
	Path, Digest string // workspace-relative
	// Leads is set for an input that is itself a symlink, which its
	// digest follows: where the link led when the plan checked it (its
	// symlinks resolved, absolute). A link led elsewhere could lead out
	// of the workspace, or into the cache, which the plan refuses,
	// whatever it holds.
	Leads string
}

const magic = "cairn-memo 1"

// Path is where the memo of an identity is kept.
func Path(cacheDir, identity string) string {
	return filepath.Join(cacheDir, "memo", identity)
}

// A Result is how an apply ended for one node, as Build needs it.
type Result struct {
	Addr, Key string
	// Ended is whether the node ran or was taken from the cache, with
	// its record and key envelope at hand.
	Ended  bool
	Record *store.Record
	Inputs map[string]string // the key envelope's inputs and their digests
}

// Build makes the memo of an apply that ended with every node of p's
// graph run or taken from the cache (nodes, in the graph's order), or says
// why there is none: a file the evaluation read changed too recently (or
// during the run) for its stat information to be trusted later, or a node
// whose result cannot be vouched for. An output written moments ago is
// kept with its digest (Output.Digest), and a pipeline folder changed
// moments before it was listed with its listing's (File.Listing), which
// the check compares.
func Build(p *plan.Plan, nodes []Result, c *store.Cache, identity string) (*Memo, string) {
	g := p.Graph
	m := &Memo{Identity: identity, Pipeline: p.Pipeline, Summary: g.Summary()}
	for _, name := range g.Config.VarOrder {
		if v := g.Config.Variables[name]; v != nil && v.Sensitive {
			m.Sensitive = append(m.Sensitive, name)
		}
	}
	reads, complete := g.Config.Reads.List()
	if !complete {
		return nil, "a file the pipeline read could not be looked at"
	}
	for _, r := range reads {
		if r.Info != nil && r.Info.IsDir() && r.Listing != nil {
			f, why := listedDir(r)
			if why != "" {
				return nil, why
			}
			m.Files = append(m.Files, f)
			continue
		}
		f := File{Path: r.Path, Absent: r.Info == nil}
		now, err := os.Stat(r.Path)
		if f.Absent {
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, r.Path + " appeared during the run"
			}
		} else {
			f.Sig = fsdigest.SigOf(r.Info)
			switch {
			case !f.Sig.Strong():
				return nil, "this system's stat information cannot vouch for files"
			case f.Sig.Racy(r.At):
				return nil, r.Path + " changed moments before it was read"
			case err != nil || fsdigest.SigOf(now) != f.Sig:
				return nil, r.Path + " changed during the run"
			}
		}
		m.Files = append(m.Files, f)
	}
	if err := c.Refresh(); err != nil {
		return nil, "the cache's index cannot be read"
	}
	fi, off := c.IndexState()
	if fi == nil {
		return nil, "the cache has no index"
	}
	isig := fsdigest.SigOf(fi)
	m.Index = Index{Dev: isig.Dev, Ino: isig.Ino, Offset: off}
	at := time.Now()
	for _, ns := range nodes {
		if !ns.Ended || ns.Record == nil || ns.Key == "" {
			return nil, ns.Addr + " has no result"
		}
		mn := Node{Addr: ns.Addr, Key: ns.Key}
		for _, rel := range slices.Sorted(maps.Keys(ns.Record.Outputs)) {
			full := filepath.Join(g.Root, rel)
			before, err := fsdigest.LstatSig(full)
			switch {
			case err != nil || fs.FileMode(before.Mode)&fs.ModeType != 0:
				return nil, "output " + rel + " is not a regular file"
			case !before.Strong():
				return nil, "this system's stat information cannot vouch for files"
			}
			// The digest the stat cache holds for exactly this file; else
			// the file is read, and must not change meanwhile.
			d, known := c.Stat.Known(full, before)
			if !known {
				d, err = c.Stat.File(full)
				if after, aerr := fsdigest.LstatSig(full); err != nil || aerr != nil || after != before {
					return nil, "output " + rel + " changed while it was checked"
				}
			}
			if d != ns.Record.Outputs[rel] {
				return nil, "output " + rel + " does not hold its cached content"
			}
			o := Output{Path: rel, Sig: before}
			if before.Racy(at) {
				o.Digest = d
			}
			mn.Outputs = append(mn.Outputs, o)
		}
		for _, rel := range slices.Sorted(maps.Keys(ns.Inputs)) {
			in := Input{Path: rel, Digest: ns.Inputs[rel]}
			if fi, err := os.Lstat(filepath.Join(g.Root, rel)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				// Where the plan found it leading, if it still leads
				// there.
				was, ok := g.PathCheck().LinkLeads(rel)
				if now, err := filepath.EvalSymlinks(filepath.Join(g.Root, rel)); !ok || err != nil || now != was {
					return nil, "input " + rel + " changed during the run"
				}
				in.Leads = was
			}
			mn.Inputs = append(mn.Inputs, in)
		}
		m.Nodes = append(m.Nodes, mn)
	}
	// The index's last word on each key is what this run used. (Checked
	// last: a record this run wrote is decoded again, and the checks above
	// turn most runs that ran something away first.)
	for _, ns := range nodes {
		same, known := c.Holds(ns.Key, ns.Record)
		if !known {
			cur, ok := c.Lookup(ns.Key)
			same = ok && cur.OutputDigest == ns.Record.OutputDigest
		}
		if !same {
			return nil, ns.Addr + "'s record changed during the run"
		}
	}
	return m, ""
}

// listedDir is the memo's entry of a pipeline folder the evaluation
// listed: what the evaluation read of it is the names of its pipeline
// files (the pipeline files themselves are entries of their own), so its
// stat information is taken now, where a listing between two equal stats
// still gives those names (a run that makes its cache or output folders
// in it changes the folder, not them); with the listing's digest where
// the folder changed moments ago (File.Listing).
func listedDir(r dsl.FileRead) (File, string) {
	at := time.Now()
	before, err := os.Stat(r.Path)
	if err != nil {
		return File{}, r.Path + " changed during the run"
	}
	names, err := dsl.PipelineFiles(r.Path)
	after, aerr := os.Stat(r.Path)
	sig := fsdigest.SigOf(before)
	switch {
	case err != nil || aerr != nil || fsdigest.SigOf(after) != sig || !slices.Equal(names, r.Listing):
		return File{}, "the pipeline files of " + r.Path + " changed during the run"
	case !sig.Strong():
		return File{}, "this system's stat information cannot vouch for files"
	}
	f := File{Path: r.Path, Sig: sig}
	if sig.Racy(at) {
		f.Listing = listingDigest(names)
	}
	return f, ""
}

// Write stores the memo at path, atomically.
func (m *Memo) Write(path string) error {
	return atomicfile.Write(path, m.encode(), false)
}

// encode is the memo's text, as Write stores it.
func (m *Memo) encode() []byte {
	b := make([]byte, 0, 160*(len(m.Nodes)+len(m.Files))+256)
	// line writes "word [first ]last": first is written when fields holds
	// it, even empty, so that the reader finds it in its place; last is
	// the rest of the line (see appendString).
	line := func(word string, fields ...string) {
		b = append(b, word...)
		for _, f := range fields[:len(fields)-1] {
			b = append(b, ' ')
			b = append(b, f...)
		}
		b = append(b, ' ')
		b = appendString(b, fields[len(fields)-1])
		b = append(b, '\n')
	}
	b = fmt.Appendf(b, "%s\nidentity %s\n", magic, m.Identity)
	line("pipeline", m.Pipeline)
	line("summary", m.Summary)
	b = fmt.Appendf(b, "index %d %d %d\n", m.Index.Dev, m.Index.Ino, m.Index.Offset)
	for _, name := range m.Sensitive {
		line("sensitive", name)
	}
	for _, f := range m.Files {
		sig := "absent"
		if !f.Absent {
			sig = f.Sig.String()
		}
		if f.Listing != "" {
			line("dir", sig, f.Listing, f.Path)
		} else {
			line("file", sig, f.Path)
		}
	}
	for _, n := range m.Nodes {
		line("node", n.Key, n.Addr)
		for _, o := range n.Outputs {
			if o.Digest != "" {
				line("fresh", o.Sig.String(), o.Digest, o.Path)
			} else {
				line("out", o.Sig.String(), o.Path)
			}
		}
		for _, in := range n.Inputs {
			line("in", in.Digest, in.Path)
			if in.Leads != "" {
				line("leads", in.Leads)
			}
		}
	}
	return append(b, "end\n"...)
}

// appendString appends s as the last field of a memo line: as it is,
// the rest of the line, or quoted (strconv) where it could not be read
// back so (empty, starting with a quote, or holding a line end). Most
// addresses and paths need no quotes, and reading them back costs
// nothing: an address's own quotes would be escaped.
func appendString(b []byte, s string) []byte {
	if s == "" || s[0] == '"' || strings.ContainsAny(s, "\r\n") {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

// readString reads back what appendString wrote.
func readString(s string) (string, error) {
	if strings.HasPrefix(s, `"`) {
		return strconv.Unquote(s)
	}
	return s, nil
}

// Read reads a memo written by Write. Anything malformed is an error:
// the caller takes the full path.
func Read(path string) (*Memo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(path, b)
}

// parse reads the memo text b, read from path (for messages). The memo
// keeps b: it must not change afterwards.
func parse(path string, b []byte) (*Memo, error) {
	m := &Memo{}
	bad := func(line int, what string) error {
		return fmt.Errorf("memo %s:%d: %s", path, line, what)
	}
	// The memo is read on every up-to-date apply and plan, so it is cut
	// into lines in place: the file's bytes are the text (never written
	// again), every line and every field a part of it (an unquoted path
	// is one too), and the nodes, their outputs and their inputs have one
	// slice each, a node's part of them its own.
	text := unsafe.String(unsafe.SliceData(b), len(b))
	m.Nodes = make([]Node, 0, strings.Count(text, "\nnode "))
	outs := make([]Output, 0, strings.Count(text, "\nout ")+strings.Count(text, "\nfresh "))
	ins := make([]Input, 0, strings.Count(text, "\nin "))
	ended := false
	for i := 1; text != ""; i++ {
		line, rest, found := strings.Cut(text, "\n")
		if !found {
			return nil, bad(i, "no line end")
		}
		text = rest
		if ended {
			return nil, bad(i, "text after the end")
		}
		if i == 1 {
			if line != magic {
				return nil, bad(i, "not a memo of this version")
			}
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		var err error
		switch word {
		case "identity":
			m.Identity = rest
		case "pipeline":
			m.Pipeline, err = readString(rest)
		case "summary":
			m.Summary, err = readString(rest)
		case "sensitive":
			var name string
			name, err = readString(rest)
			m.Sensitive = append(m.Sensitive, name)
		case "index":
			_, err = fmt.Sscanf(rest, "%d %d %d", &m.Index.Dev, &m.Index.Ino, &m.Index.Offset)
		case "file", "dir":
			sig, q, _ := strings.Cut(rest, " ")
			f := File{Absent: sig == "absent"}
			if word == "dir" {
				f.Listing, q, _ = strings.Cut(q, " ")
			}
			if !f.Absent {
				f.Sig, err = fsdigest.ParseSig(sig)
			}
			if err == nil {
				f.Path, err = readString(q)
			}
			m.Files = append(m.Files, f)
		case "node":
			key, q, _ := strings.Cut(rest, " ")
			n := Node{Key: key}
			n.Addr, err = readString(q)
			m.Nodes = append(m.Nodes, n)
		case "out", "fresh", "in":
			if len(m.Nodes) == 0 {
				return nil, bad(i, word+" before any node")
			}
			n := &m.Nodes[len(m.Nodes)-1]
			first, q, _ := strings.Cut(rest, " ")
			digest := ""
			if word == "fresh" {
				digest, q, _ = strings.Cut(q, " ")
			}
			var p string
			p, err = readString(q)
			if word == "in" {
				ins = append(ins, Input{Path: p, Digest: first})
				n.Inputs = ins[len(ins)-len(n.Inputs)-1 : len(ins) : len(ins)]
			} else {
				var sig fsdigest.Sig
				if sig, err = fsdigest.ParseSig(first); err == nil {
					outs = append(outs, Output{Path: p, Sig: sig, Digest: digest})
					n.Outputs = outs[len(outs)-len(n.Outputs)-1 : len(outs) : len(outs)]
				}
			}
		case "leads":
			if len(m.Nodes) == 0 || len(m.Nodes[len(m.Nodes)-1].Inputs) == 0 {
				return nil, bad(i, "leads before any input")
			}
			in := m.Nodes[len(m.Nodes)-1].Inputs
			in[len(in)-1].Leads, err = readString(rest)
		case "end":
			ended = true
		default:
			return nil, bad(i, "unknown line")
		}
		if err != nil {
			return nil, bad(i, err.Error())
		}
	}
	if !ended || m.Identity == "" {
		return nil, fmt.Errorf("memo %s: cut short", path)
	}
	return m, nil
}

// IndexHolds reports whether the cache's index at cacheDir is still the
// one the memo was made from, with no record of its nodes written since:
// what an apply that waited for cairn gc checks again once it may go on.
func (m *Memo) IndexHolds(cacheDir string) bool {
	ok, _ := m.checkIndex(store.IndexPath(cacheDir))
	return ok
}

// Check reports whether the memo still holds for the workspace at root
// and the cache at cacheDir, and if not, the first thing that changed.
// An output written moments before the memo was made (Output.Digest) is
// read and its digest compared, a pipeline folder changed moments before
// it was listed (File.Listing) listed again; one whose times can vouch for
// it by now is settled in m, and Settled then reports it: the caller
// writes the memo again so that later checks only look at its times.
func (m *Memo) Check(root, cacheDir string) (bool, string) {
	m.settled = false
	for i := range m.Files {
		f := &m.Files[i]
		fi, err := os.Stat(f.Path)
		if f.Absent {
			if !errors.Is(err, fs.ErrNotExist) {
				return false, f.Path + " exists now"
			}
			continue
		}
		if err != nil || fsdigest.SigOf(fi) != f.Sig {
			return false, f.Path + " changed"
		}
		if f.Listing != "" && !m.settleListing(f) {
			return false, f.Path + " changed"
		}
	}
	if ok, why := m.checkIndex(store.IndexPath(cacheDir)); !ok {
		return false, why
	}
	// Every folder on the way to an output or input is a real folder (a
	// link could lead outside the workspace), and every output is the file
	// it was.
	dirs := dirs{root: root, open: map[string]*os.File{}}
	defer dirs.close()
	var stat *fsdigest.Cache
	for _, n := range m.Nodes {
		for oi, o := range n.Outputs {
			dir, name := filepath.Split(o.Path)
			d := dirs.get(dir)
			if d == nil {
				return false, "a folder of " + o.Path + " changed"
			}
			if sig, err := fsdigest.LstatSigAt(d, name); err != nil || sig != o.Sig {
				return false, "output " + o.Path + " changed"
			}
			if o.Digest == "" {
				continue
			}
			if stat == nil {
				stat = fsdigest.Load(store.StatCachePath(cacheDir))
			}
			if !m.settle(&n.Outputs[oi], d, name, filepath.Join(root, o.Path), stat) {
				return false, "output " + o.Path + " changed"
			}
		}
		for _, in := range n.Inputs {
			if dirs.get(filepath.Dir(in.Path)) == nil {
				return false, "a folder of " + in.Path + " changed"
			}
			full := filepath.Join(root, in.Path)
			if !inputLeads(full, in.Leads) {
				return false, "input " + in.Path + " changed"
			}
			if stat == nil {
				stat = fsdigest.Load(store.StatCachePath(cacheDir))
			}
			if d, err := stat.Tree(full); err != nil || d != in.Digest {
				return false, "input " + in.Path + " changed"
			}
		}
	}
	return true, ""
}

// inputLeads reports whether the input at full is still what the memo
// found there: a symlink that leads to leads, or no link when leads is "".
func inputLeads(full, leads string) bool {
	fi, err := os.Lstat(full)
	switch {
	case err != nil:
		return false
	case fi.Mode()&fs.ModeSymlink == 0:
		return leads == ""
	}
	now, err := filepath.EvalSymlinks(full)
	return leads != "" && err == nil && now == leads
}

// settle reads the output o (name in the open folder d, full its path) of
// a memo made moments after it was written: it holds the content the memo
// recorded, and keeps the same stat information while it is read. Where
// that information is older than the racy window by now, no later change
// can leave it behind, and o is settled: its Digest is cleared.
func (m *Memo) settle(o *Output, d *os.File, name, full string, stat *fsdigest.Cache) bool {
	at := time.Now()
	sum, err := stat.File(full)
	if err != nil || sum != o.Digest {
		return false
	}
	if after, err := fsdigest.LstatSigAt(d, name); err != nil || after != o.Sig {
		return false
	}
	if !o.Sig.Racy(at) {
		o.Digest = ""
		m.settled = true
	}
	return true
}

// settleListing lists the pipeline directory f of a memo made moments
// after it changed: it gives the pipeline files the memo recorded, and
// keeps the same stat information meanwhile. Where that information is
// older than the racy window by now, no later change can leave it behind,
// and f is settled: its Listing is cleared.
func (m *Memo) settleListing(f *File) bool {
	at := time.Now()
	names, err := dsl.PipelineFiles(f.Path)
	if err != nil || listingDigest(names) != f.Listing {
		return false
	}
	if fi, err := os.Stat(f.Path); err != nil || fsdigest.SigOf(fi) != f.Sig {
		return false
	}
	if !f.Sig.Racy(at) {
		f.Listing = ""
		m.settled = true
	}
	return true
}

// listingDigest is the hex sha256 of a directory's pipeline file names,
// each ended by a line end.
func listingDigest(names []string) string {
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Settled reports whether the last Check settled an output written
// moments before the memo was made: the memo is worth writing again.
func (m *Memo) Settled() bool { return m.settled }

// checkIndex reports whether the index is the file the memo read, and
// whether what was appended since leaves the memo's keys alone.
func (m *Memo) checkIndex(path string) (bool, string) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, "the cache's index cannot be read"
	}
	sig := fsdigest.SigOf(fi)
	if sig.Dev != m.Index.Dev || sig.Ino != m.Index.Ino || fi.Size() < m.Index.Offset {
		return false, "the cache's index was rewritten"
	}
	if fi.Size() == m.Index.Offset {
		return true, ""
	}
	keys := make(map[string]bool, len(m.Nodes))
	for _, n := range m.Nodes {
		keys[n.Key] = true
	}
	touched := ""
	_, err = wal.ReadFrom(path, m.Index.Offset, func(_ int64, p []byte) error {
		if k, ok := store.RecordKey(p); ok && keys[k] {
			touched = k
			return io.EOF
		}
		return nil
	})
	switch {
	case touched != "":
		return false, "the record of " + store.Short(touched) + " changed"
	case err != nil:
		return false, "the cache's index cannot be read"
	}
	return true, ""
}

// dirs are the workspace's folders that the up-to-date check has
// opened: each once, following no symlink below the root (nofollow), so
// that a folder on the way to a file is known to be a real folder, and the
// files in it are looked at relative to it (one path component each, where
// a path from the root would be walked again for every file).
type dirs struct {
	root string
	open map[string]*os.File // by workspace-relative folder; nil: not a real folder
}

// get returns the open folder rel ("out/", "out", "" or "." for the root),
// or nil when a component of it is a symlink, not a folder, or missing.
func (d *dirs) get(rel string) *os.File {
	rel = filepath.Clean(rel)
	f, done := d.open[rel]
	if !done {
		var err error
		if f, err = nofollow.OpenDir(d.root, rel, false); err != nil {
			f = nil
		}
		d.open[rel] = f
	}
	return f
}

func (d *dirs) close() {
	for _, f := range d.open {
		if f != nil {
			f.Close()
		}
	}
}

// RenderPlan writes what `cairn plan` shows for the memo: every node
// cached.
func (m *Memo) RenderPlan(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	width := 0
	for _, n := range m.Nodes {
		width = max(width, len(n.Addr))
	}
	width = min(width, plan.WidthMax)
	for _, n := range m.Nodes {
		plan.WriteLine(bw, "=", width, n.Addr, "cached", nil)
	}
	plan.WriteFooter(bw, plan.Counts{Cached: len(m.Nodes)}, 0)
	return bw.Flush()
}
