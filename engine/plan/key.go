package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/dsl/jsonwrite"
	"github.com/cairn-run/cairn/engine/fsdigest"
	"github.com/cairn-run/cairn/stages"
)

// EnvelopeVersion names the key NodeEnvelope's format. Changing what goes into
// a key means a new version, which changes every key.
const EnvelopeVersion = "cairn.node.v1"

// Envelope holds exactly what determines a node's result. Its canonical
// JSON (fields in this order, map keys sorted, no spaces) is hashed with
// sha256 to give the node key. It holds no pipeline name, stage name, run
// id or instance key: two pipelines that need the same work share a key.
type Envelope struct {
	V           string `json:"v"`
	Kind        string `json:"kind"`
	KindVersion int    `json:"kind_version"`
	// Args are the evaluated attributes that shape the result, by name, as
	// canonical JSON. Scheduling knobs (timeout, concurrency, retry, ...)
	// are left out; sensitive values appear as their digest.
	Args map[string]json.RawMessage `json:"args"`
	// Inputs maps each declared input path to its content digest (a file's
	// sha256, or a directory's tree digest).
	Inputs map[string]string `json:"inputs"`
	// Upstreams are the output digests of the nodes this node depends on,
	// sorted: an upstream that reruns to identical output leaves this key
	// unchanged (early cutoff).
	Upstreams []string `json:"upstreams"`
	// Seal maps every file the pipeline's seal blocks pin to its digest:
	// the same in every node's NodeEnvelope, absent without seals.
	Seal map[string]string `json:"seal,omitempty"`
}

// Key returns the hex sha256 of the NodeEnvelope's canonical JSON.
func (e *Envelope) Key() string {
	key, _ := e.KeyJSON()
	return key
}

// KeyJSON returns Key and the JSON it is the digest of, which a record
// keeps as its envelope: one encoding for both. The JSON is json.Marshal's
// of the envelope, written by hand (appendJSON) where nothing in it needs
// Marshal's rewriting: a plan computes a key for every node, one after
// the other, and reflection was most of that work.
func (e *Envelope) KeyJSON() (key string, body []byte) {
	b, ok := e.appendJSON(nil)
	if !ok {
		b, _ = json.Marshal(e)
	}
	return sha256Hex(b), b
}

// appendJSON appends the envelope as json.Marshal writes it: fields in
// their order, maps by their keys in byte order, a nil map or slice as
// null, an empty Seal left out. ok is false, and what it appended is to
// be dropped, when an argument's raw JSON is one Marshal would rewrite or
// refuse (jsonwrite.RawAsIs): Marshal then says what the bytes are
// (TestEnvelopeJSONMatchesMarshal, FuzzEnvelopeJSON).
func (e *Envelope) appendJSON(b []byte) (_ []byte, ok bool) {
	b = append(b, `{"v":`...)
	b = jsonwrite.String(b, e.V)
	b = append(b, `,"kind":`...)
	b = jsonwrite.String(b, e.Kind)
	b = append(b, `,"kind_version":`...)
	b = strconv.AppendInt(b, int64(e.KindVersion), 10)
	b = append(b, `,"args":`...)
	if e.Args == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '{')
		for i, k := range slices.Sorted(maps.Keys(e.Args)) {
			raw := e.Args[k]
			if !jsonwrite.RawAsIs(raw) {
				return b, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonwrite.String(b, k)
			b = append(b, ':')
			b = append(b, raw...)
		}
		b = append(b, '}')
	}
	b = append(b, `,"inputs":`...)
	b = appendStringMap(b, e.Inputs)
	b = append(b, `,"upstreams":`...)
	if e.Upstreams == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, u := range e.Upstreams {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonwrite.String(b, u)
		}
		b = append(b, ']')
	}
	if len(e.Seal) > 0 {
		b = append(b, `,"seal":`...)
		b = appendStringMap(b, e.Seal)
	}
	return append(b, '}'), true
}

// appendStringMap appends m as json.Marshal writes a map[string]string.
func appendStringMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonwrite.String(b, k)
		b = append(b, ':')
		b = jsonwrite.String(b, m[k])
	}
	return append(b, '}')
}

// notKeyed are generic attributes that do not change what a node
// produces; they never enter its key.
var notKeyed = map[string]bool{
	"description": true, "for_each": true, "after": true, "cpus": true, "memory": true,
	"timeout": true, "kill_grace": true, "concurrency": true,
	"on_interrupt": true, "on_upstream_failure": true, "classify": true,
	"inputs": true,
}

// KeyedDep reports whether dependency id's output enters n's key: every
// dependency does but those named only in wait_for.
func (n *Node) KeyedDep(id int) bool {
	return len(n.OrderOnly) == 0 || !containsInt(n.OrderOnly, id)
}

// keyedDeps reports whether n has an upstream whose output enters its
// key (KeyedDep).
func (n *Node) keyedDeps() bool {
	for _, id := range n.Deps {
		if n.KeyedDep(id) {
			return true
		}
	}
	return false
}

// UnknownReason explains why a node's key is not known yet (plan says the
// node may run).
type UnknownReason struct {
	Upstream string // an upstream that will run
	Attr     string // an attribute depending on results
	Input    string // a missing input file
	// Hint is dsl.SpellingHint's for the missing input: its name spelled
	// in another Unicode form exists.
	Hint string
}

func (u *UnknownReason) String() string {
	switch {
	case u.Upstream != "":
		return "depends on the output of " + u.Upstream
	case u.Input != "":
		return "input " + u.Input + " does not exist yet" + u.Hint
	case u.Attr != "":
		return u.Attr + " depends on upstream results"
	}
	return "known after apply"
}

// digester computes input digests: Tree, or ContentTree through the
// links of the inputs a kind reads through them (stages.LinkFollower).
type digester interface {
	Tree(path string) (string, error)
	ContentTree(path string) (string, error)
}

// NodeEnvelope builds a node's NodeEnvelope. upstream returns an upstream node's
// output digest, or false when it is not known (the upstream will run). A
// nil NodeEnvelope with a reason means the key is known only after apply.
func (g *Graph) NodeEnvelope(n *Node, sn *stages.Node, upstream func(*Node) (string, bool), dg digester) (*Envelope, *UnknownReason, error) {
	return g.envelopeFrom(g.envelopeBase(n, sn, dg), n, upstream)
}

// envBase is a node's NodeEnvelope without its upstreams, or why it cannot be
// built: what depends on the node alone, so it can be built on any core.
type envBase struct {
	e   *Envelope
	why *UnknownReason
	err error
}

// envelopeFrom completes a node's NodeEnvelope with its upstreams' output
// digests. An upstream not known yet is the reason given first.
func (g *Graph) envelopeFrom(b envBase, n *Node, upstream func(*Node) (string, bool)) (*Envelope, *UnknownReason, error) {
	var ups []string // made once an upstream is known
	for _, id := range n.Deps {
		if !n.KeyedDep(id) {
			continue
		}
		u := g.Nodes[id]
		d, ok := upstream(u)
		if !ok {
			return nil, &UnknownReason{Upstream: u.Addr}, nil
		}
		if ups == nil {
			ups = make([]string, 0, len(n.Deps))
		}
		ups = append(ups, d)
	}
	if b.e == nil {
		return nil, b.why, b.err
	}
	if ups == nil {
		ups = []string{}
	}
	sort.Strings(ups)
	e := *b.e
	e.Upstreams = ups
	return &e, nil, nil
}

// spellingHint is dsl.SpellingHint for the missing input p, looked for
// once a graph for each path: a grid's nodes share their datasets, and
// the look lists folders.
func (g *Graph) spellingHint(p string) string {
	g.hintsMu.Lock()
	defer g.hintsMu.Unlock()
	if h, ok := g.hints[p]; ok {
		return h
	}
	if g.hints == nil {
		g.hints = map[string]string{}
	}
	h := dsl.SpellingHint(g.Root, p)
	g.hints[p] = h
	return h
}

// envelopeBase builds the parts of a node's NodeEnvelope that do not depend
// on other nodes: kind, keyed arguments and input digests.
func (g *Graph) envelopeBase(n *Node, sn *stages.Node, dg digester) envBase {
	g.bases.Add(1)
	e := &Envelope{V: EnvelopeVersion, Args: map[string]json.RawMessage{}, Inputs: map[string]string{}, Upstreams: []string{}, Seal: g.Seal}
	if n.Kind != nil {
		e.Kind = n.Kind.Name()
		e.KindVersion = n.Kind.Version()
	}
	if unknown := keyedArgs(n, sn, e.Args); unknown != "" {
		return envBase{why: &UnknownReason{Attr: unknown}}
	}
	for _, kp := range g.keyedPaths(n, sn, dg) {
		d, err := kp.tree(kp.full)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Not there yet: the key is known after apply.
			return envBase{why: &UnknownReason{Input: kp.path, Hint: g.spellingHint(kp.path)}}
		case err != nil:
			return envBase{err: fmt.Errorf("input %s: %w", kp.path, err)}
		}
		e.Inputs[kp.path] = d
	}
	return envBase{e: e}
}

// keyedPath is a path of the workspace (or outside it) whose content
// enters a node's key: path as the key names it, full where it lies, and
// tree the digest it is taken with.
type keyedPath struct {
	path, full string
	tree       func(string) (string, error)
}

// keyedPaths are the paths whose content enters n's key, in the order the
// key digests them: its declared inputs (through their links where its
// kind reads them so, stages.LinkFollower), then the content its kind
// seals beyond them (stages.ContentKeyer), through its links.
func (g *Graph) keyedPaths(n *Node, sn *stages.Node, dg digester) []keyedPath {
	var followed []string
	if f, ok := n.Kind.(stages.LinkFollower); ok && len(sn.Common.Inputs) > 0 {
		followed = f.FollowedInputs(sn)
	}
	out := make([]keyedPath, 0, len(sn.Common.Inputs))
	for _, p := range sn.Common.Inputs {
		tree := dg.Tree
		if slices.Contains(followed, p) {
			tree = dg.ContentTree
		}
		out = append(out, keyedPath{path: p, full: filepath.Join(g.Root, p), tree: tree})
	}
	if ck, ok := n.Kind.(stages.ContentKeyer); ok {
		// Content the node seals beyond its inputs (outside the
		// workspace, a server's weights), digested through its links.
		for _, p := range ck.KeyedContent(sn, g.Root) {
			full := p
			if !filepath.IsAbs(p) {
				full = filepath.Join(g.Root, p)
			}
			out = append(out, keyedPath{path: p, full: full, tree: dg.ContentTree})
		}
	}
	return out
}

// ChangedInputs are the paths whose content entered env, n's key, and
// that no longer have the digest env holds for them: ones a user, or
// another apply, rewrote while the node ran, so that what the node read
// may not be what its key says. A path that is gone, or cannot be
// digested, has changed too. An input that is, holds or lies in one of
// the node's own outputs is not compared: the node's run writes it, and
// the next apply keys the node by what it wrote (docs/language.md,
// Inputs another stage writes).
func (g *Graph) ChangedInputs(n *Node, sn *stages.Node, env *Envelope, dg digester) []string {
	own := append(slices.Clip(sn.Common.Outputs), sn.Common.Result)
	var changed []string
	for _, kp := range g.keyedPaths(n, sn, dg) {
		want, keyed := env.Inputs[kp.path]
		if !keyed || sharesOutput(kp.path, own) {
			continue
		}
		if d, err := kp.tree(kp.full); err != nil || d != want {
			changed = append(changed, kp.path)
		}
	}
	return changed
}

// sharesOutput reports whether the input in is one of own (the node's
// declared outputs and result), holds one, or lies inside one.
func sharesOutput(in string, own []string) bool {
	for _, o := range own {
		if o == "" {
			continue
		}
		if _, ok := relUnder(in, o); ok {
			return true
		}
		if _, ok := relUnder(o, in); ok {
			return true
		}
	}
	return false
}

// InputDigests are the digests of the node's inputs as env holds them,
// with those of the paths its kind declares now (stages.InputDeclarer)
// that its inputs did not list when it was evaluated (a folder an
// upstream wrote since): what its kind reads (stages.Node.InputDigests).
// A path that cannot be digested is left out; the kind says so.
func (g *Graph) InputDigests(n *Node, sn *stages.Node, env *Envelope, dg digester) map[string]string {
	d, ok := n.Kind.(stages.InputDeclarer)
	if !ok {
		return env.Inputs
	}
	out, cloned := env.Inputs, false
	for _, p := range d.DeclaredInputs(sn, g.Root) {
		clean := filepath.Clean(g.inWorkspace(p.Path))
		if _, ok := out[clean]; ok {
			continue
		}
		dig, err := dg.Tree(filepath.Join(g.Root, clean))
		if err != nil {
			continue
		}
		if !cloned {
			out, cloned = make(map[string]string, len(env.Inputs)+1), true
			maps.Copy(out, env.Inputs)
		}
		out[clean] = dig
	}
	return out
}

// keyedArgs puts the node's arguments that enter its key into args, as
// the key holds them: by name, as canonical JSON, the node's kind's
// excluded attributes and the generic unkeyed ones left out, paths
// cleaned (cleanPathsArg), values transformed by the kind
// (stages.KeyTransformer). It returns the name of the first one (or
// "inputs") not known yet, the key then being known after apply; "" when
// all are.
func keyedArgs(n *Node, sn *stages.Node, args map[string]json.RawMessage) (unknown string) {
	return keyedArgsAs(n, sn, args, nil)
}

// keyedArgsAs is keyedArgs writing the parts of the arguments not known
// yet as unknownAs, when it is not nil (canonicalJSONAs): every argument
// is then put, and it returns "".
func keyedArgsAs(n *Node, sn *stages.Node, args map[string]json.RawMessage, unknownAs []byte) (unknown string) {
	excluded := keyExcluded(n.Kind)
	for _, name := range sortedKeys(sn.Args) {
		if notKeyed[name] || excluded[name] {
			continue
		}
		v := cleanPathsArg(name, sn)
		if kt, ok := n.Kind.(stages.KeyTransformer); ok {
			v = kt.KeyValue(name, v)
		}
		b, known := canonicalJSONAs(v, unknownAs)
		if !known {
			return name
		}
		args[name] = b
	}
	if v, ok := sn.Args["inputs"]; ok && !v.IsWhollyKnown() && unknownAs == nil {
		return "inputs"
	}
	return ""
}

// cleanPathsArg is the node's argument name as keyed: outputs and result
// as their cleaned paths (language.md: "./a.txt" and "a.txt" are one
// path), so that respelling a path keeps the key. An argument already
// clean is the value itself, so that its key is the one it always had.
func cleanPathsArg(name string, sn *stages.Node) cty.Value {
	v := sn.Args[name]
	switch {
	case name == "result" && sn.Common.Result != "" && v.Type().Equals(cty.String) && v.IsKnown() && !v.IsNull() && !v.IsMarked():
		if v.AsString() != sn.Common.Result {
			return cty.StringVal(sn.Common.Result)
		}
	case name == "outputs" && v.IsWhollyKnown() && !v.IsNull() && v.CanIterateElements() && v.LengthInt() == len(sn.Common.Outputs):
		elems := make([]cty.Value, 0, len(sn.Common.Outputs))
		changed := false
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			clean := sn.Common.Outputs[len(elems)]
			if u, marks := e.Unmark(); u.Type().Equals(cty.String) && u.AsString() != clean {
				e, changed = cty.StringVal(clean).WithMarks(marks), true
			}
			elems = append(elems, e)
		}
		if !changed {
			return v
		}
		switch {
		case v.Type().IsListType():
			return cty.ListVal(elems)
		case v.Type().IsSetType():
			return cty.SetVal(elems)
		}
		return cty.TupleVal(elems)
	}
	return v
}

// FailUpstream is the class of a node skipped because an upstream failed.
const FailUpstream = "upstream"

// FailedOutputDigest stands for the output of a dependency that failed or
// was skipped, in the keys of nodes that run on upstream failure.
func FailedOutputDigest(status Status, class string) string {
	return OutputDigest(nil, nil, string(status)+":"+class)
}

// OutputDigest identifies what a node produced: its output files' digests
// and its parsed result. Downstream keys hold it.
func OutputDigest(outputs map[string]string, result json.RawMessage, status string) string {
	var res any
	if len(result) > 0 {
		_ = json.Unmarshal(result, &res)
	}
	b, _ := json.Marshal(struct {
		V       string            `json:"v"`
		Outputs map[string]string `json:"outputs"`
		Result  any               `json:"result"`
		Status  string            `json:"status"`
	}{"cairn.output.v1", outputs, res, status})
	return sha256Hex(b)
}

// lookDigests digests input trees through the plan's look at the workspace
// (stages.Look.Tree): each path once while the look lasts.
type lookDigests struct {
	look *stages.Look
	stat *fsdigest.Cache
}

func (d lookDigests) Tree(path string) (string, error) { return d.look.Tree(d.stat, path, false) }

func (d lookDigests) ContentTree(path string) (string, error) {
	return d.look.Tree(d.stat, path, true)
}
