package plan

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/dsl/par"
	"github.com/cairn-run/cairn/stages"
)

// A clash is a path that two nodes declare for writing (in outputs or
// result): the same path, or one inside a folder the other declares.
type clash struct {
	path string
	// folder is the declared folder that holds path; "" when the writers
	// declare path itself.
	folder string
	// folded: the writers spell the path (or the folder and the path
	// inside it) in other cases, on a filesystem that folds case.
	folded bool
	// writers are the declarations, one a node, in the graph's order:
	// for a folder, its writer then path's. Of nodes that are the same
	// work, the first stands for them all: sizes[i] counts the nodes
	// writers[i] stands for (nil: one each).
	writers []declPath
	sizes   []int
}

// writeClashes refuses the paths that two nodes declare for writing (in
// outputs or result): the same path, or a path inside a folder another
// node declares. Both would write it, perhaps at the same time, and both
// cache records would hold a copy: what the workspace holds afterwards,
// and what a later cache hit restores, would depend on timing. A node may
// declare a path twice, or a file inside a folder it declares itself; and
// two nodes that are the same work (sameWork) write the same content.
//
// specs[id] is node id's evaluation; where there is none (a node outside
// --target, skipped, or whose evaluation failed) the node's paths are
// evaluated here as they are known before anything runs. A path not known
// (made of an upstream's result that is not cached) is not compared.
//
// Clashes made by the same declarations (a for_each stage whose instances
// all write one file; two for_each stages writing the same paths key by
// key) are reported once, naming the first and counting the rest.
//
// planned, when not nil, limits the comparison to the nodes it holds (a
// plan narrowed by --target): the nodes this apply may write with. The
// others' paths would have to be evaluated here, which cost a --target
// plan of one node of a 100k grid 0.2 s and 80 MB; validate and a whole
// plan compare them.
//
// Where the workspace's filesystem folds case (macOS's default: one
// probe, caseProbe), paths are compared case-folded: out/A.txt and
// out/a.txt are one file there.
func (g *Graph) writeClashes(specs []*stages.Node, planned []bool) hcl.Diagnostics {
	w := &writers{g: g, specs: specs, planned: planned, late: g.latePaths(specs, planned), first: make(map[string]int, len(g.Nodes))}
	if caseProbe(g.Root) {
		w.spelled = map[spelling]string{}
	}
	// The node first declaring each path, and, where others do (rare),
	// every writer in groups of the same work.
	var twice []string
	w.each(func(n *Node, p string) {
		p = w.fold(n, p)
		id, ok := w.first[p]
		switch {
		case !ok:
			w.first[p] = n.ID
		case id == n.ID:
		default:
			pw := w.also[p]
			if pw == nil {
				if w.also == nil {
					w.also = map[string]*pathWriters{}
				}
				pw = &pathWriters{}
				pw.add(g.Nodes[id], w.sig(g.Nodes[id]))
				w.also[p] = pw
				twice = append(twice, p)
			}
			pw.add(n, w.sig(n))
		}
	})
	var clashes []clash
	for _, p := range twice {
		pw := w.also[p]
		if len(pw.groups) < 2 {
			continue // all the same work
		}
		c := clash{}
		var spellings []string
		for _, gr := range pw.groups {
			own := w.spelling(gr.nodes[0], p)
			if !slices.Contains(spellings, own) {
				spellings = append(spellings, own)
			}
			c.writers = append(c.writers, g.declOf(specs, gr.nodes[0], own))
			c.sizes = append(c.sizes, len(gr.nodes))
		}
		c.path, c.folded = dsl.AndList(spellings), len(spellings) > 1
		clashes = append(clashes, c)
	}
	// A path inside a folder another node declares, once a pair.
	var nested map[[2]string]bool
	w.each(func(n *Node, p string) {
		for q := range parents(w.fold(n, p)) {
			u := w.otherWriter(q, n)
			if u == nil || nested[[2]string{q, p}] {
				continue
			}
			if nested == nil {
				nested = map[[2]string]bool{}
			}
			nested[[2]string{q, p}] = true
			folder := w.spelling(u, q)
			clashes = append(clashes, clash{path: p, folder: folder, folded: !strings.HasPrefix(p, folder+"/"), writers: []declPath{g.declOf(specs, u, folder), g.declOf(specs, n, p)}})
		}
	})
	return clashDiags(clashes)
}

// writers is what writeClashes knows of the paths the nodes declare.
type writers struct {
	g       *Graph
	specs   []*stages.Node
	planned []bool // the nodes compared; nil: all
	// late are the paths of the nodes without a spec (latePaths); made
	// are the specs spec made for such nodes.
	late [][]string
	made map[int]*stages.Node
	// first is the node that first declares each path; also, where
	// other nodes declare it too, all of them, by work.
	first map[string]int
	also  map[string]*pathWriters
	// sigOf holds each compared node's work (sig).
	sigOf map[int]string
	// spelled, where the filesystem folds case (nil elsewhere), holds
	// how each node first spelled each folded path (fold).
	spelled map[spelling]string
}

// spelling is a node's folded path.
type spelling struct {
	node   int
	folded string
}

// fold is the path p that node n declares as writeClashes compares it:
// case-folded where the filesystem folds case, noting n's spelling of it
// and of its folders; p elsewhere.
func (w *writers) fold(n *Node, p string) string {
	if w.spelled == nil {
		return p
	}
	f := strings.ToLower(p)
	if _, ok := w.spelled[spelling{n.ID, f}]; !ok {
		w.spelled[spelling{n.ID, f}] = p
		for q := range parents(p) {
			if _, ok := w.spelled[spelling{n.ID, strings.ToLower(q)}]; !ok {
				w.spelled[spelling{n.ID, strings.ToLower(q)}] = q
			}
		}
	}
	return f
}

// spelling is how node n spells the path p that fold returned.
func (w *writers) spelling(n *Node, p string) string {
	if s, ok := w.spelled[spelling{n.ID, p}]; ok {
		return s
	}
	return p
}

// pathWriters are the nodes that declare one path, in groups of the same
// work, in the graph's order.
type pathWriters struct {
	groups []*workGroup
	bySig  map[string]*workGroup
	// last is the node added last: a node's paths are visited together,
	// so a node declaring the path twice is the last when it declares it
	// again.
	last *Node
}

// workGroup is nodes that are the same work (sig; "" for a node that is
// the same work as no other).
type workGroup struct {
	sig   string
	nodes []*Node
}

func (pw *pathWriters) add(n *Node, sig string) {
	if pw.last == n {
		return
	}
	pw.last = n
	if gr := pw.bySig[sig]; gr != nil && sig != "" {
		gr.nodes = append(gr.nodes, n)
		return
	}
	gr := &workGroup{sig: sig, nodes: []*Node{n}}
	pw.groups = append(pw.groups, gr)
	if sig != "" {
		if pw.bySig == nil {
			pw.bySig = map[string]*workGroup{}
		}
		pw.bySig[sig] = gr
	}
}

// each calls visit with every path each node declares in outputs and
// result, node by node.
func (w *writers) each(visit func(n *Node, p string)) {
	for _, n := range w.g.Nodes {
		if w.planned != nil && !w.planned[n.ID] {
			continue
		}
		if sn := w.specs[n.ID]; sn != nil {
			for _, p := range sn.Common.Outputs {
				visit(n, p)
			}
			if sn.Common.Result != "" {
				visit(n, sn.Common.Result)
			}
		} else if w.late != nil {
			for _, p := range w.late[n.ID] {
				visit(n, p)
			}
		}
	}
}

// otherWriter is a node declaring the path p that is neither n nor the
// same work; nil when there is none.
func (w *writers) otherWriter(p string, n *Node) *Node {
	id, ok := w.first[p]
	if !ok {
		return nil
	}
	pw := w.also[p]
	if pw == nil {
		if u := w.g.Nodes[id]; u != n && !w.sameWork(u, n) {
			return u
		}
		return nil
	}
	sig := w.sig(n)
	for _, gr := range pw.groups {
		if sig != "" && gr.sig == sig {
			continue
		}
		for _, u := range gr.nodes {
			if u != n {
				return u
			}
		}
	}
	return nil
}

// sameWork reports whether nodes a and b are, as far as is known, the same
// work: what their keys are made of is the same (sig). An apply runs such
// work once and takes the other node's result from the cache
// (docs/keys.md): the two write the same content, as two stages that
// declare the same work do.
func (w *writers) sameWork(a, b *Node) bool {
	sa := w.sig(a)
	return sa != "" && sa == w.sig(b)
}

// sig is what n's key is made of, but for its inputs' content and its
// upstreams' output, which are not known before anything runs: its kind,
// its keyed arguments as the key holds them (keyedArgs), its input paths
// and its keyed upstreams (those not only in wait_for). Nodes with one sig
// have one key. It is "" for a node that is the same work as no other: one
// without a spec, or with an argument of its key not known, or a service
// (never cached: each node of one runs). Made once a node.
func (w *writers) sig(n *Node) string {
	if s, ok := w.sigOf[n.ID]; ok {
		return s
	}
	s := ""
	_, svc := n.Kind.(stages.Service)
	if sn := w.spec(n); sn != nil && !svc {
		args := map[string]json.RawMessage{}
		if keyedArgs(n, sn, args) == "" {
			var b strings.Builder
			b.WriteString(n.Stage.Kind)
			for _, name := range slices.Sorted(maps.Keys(args)) {
				fmt.Fprintf(&b, "\x00a%s\x00%s", name, args[name])
			}
			for _, in := range slices.Compact(slices.Sorted(slices.Values(sn.Common.Inputs))) {
				fmt.Fprintf(&b, "\x00i%s", in)
			}
			for _, id := range n.Deps {
				if n.KeyedDep(id) {
					fmt.Fprintf(&b, "\x00d%d", id)
				}
			}
			s = b.String()
		}
	}
	if w.sigOf == nil {
		w.sigOf = map[int]string{}
	}
	w.sigOf[n.ID] = s
	return s
}

// spec is n's evaluation: the plan's, or one made here, as before anything
// runs, for a node the plan did not evaluate; nil when it has errors.
func (w *writers) spec(n *Node) *stages.Node {
	if sn := w.specs[n.ID]; sn != nil {
		return sn
	}
	sn, ok := w.made[n.ID]
	if !ok {
		var d hcl.Diagnostics
		if sn, d = w.g.EvalNode(n, UnknownInstance); d.HasErrors() {
			sn = nil
		}
		if w.made == nil {
			w.made = map[int]*stages.Node{}
		}
		w.made[n.ID] = sn
	}
	return sn
}

// latePaths are the paths declared in outputs and result by the nodes
// without a spec, as they are known before anything runs, by node ID; nil
// when every node has one.
func (g *Graph) latePaths(specs []*stages.Node, planned []bool) [][]string {
	if !slices.Contains(specs, nil) {
		return nil
	}
	skip := func(id int) bool { return specs[id] != nil || planned != nil && !planned[id] }
	out := make([][]string, len(g.Nodes))
	if pd := g.pathDeps; pd != nil {
		// linkPaths has them: every writer's, as known then.
		for _, ds := range pd.writes.by {
			for _, d := range ds {
				if (d.attr == "outputs" || d.attr == "result") && !skip(d.node.ID) {
					out[d.node.ID] = append(out[d.node.ID], d.path)
				}
			}
		}
		return out
	}
	// What the evaluations share is made before they start (evalAhead).
	g.Scope.Context(nil)
	par.Chunks(len(g.Nodes), 32, 64, func(i int) {
		if skip(i) {
			return
		}
		for _, attr := range [...]string{"outputs", "result"} {
			ds, _ := g.declaredPaths(g.Nodes[i], attr)
			for _, d := range ds {
				out[i] = append(out[i], d.path)
			}
		}
	})
	return out
}

// declOf is n's declaration of the path p, with the element of outputs or
// result that wrote it; a path known only from an upstream's result (a
// plan with the upstream cached) points at the whole attribute.
func (g *Graph) declOf(specs []*stages.Node, n *Node, p string) declPath {
	_, writes := g.pathAttrs(n.Stage)
	for _, pa := range writes {
		ds, _ := g.declaredPathsOf(n, pa, func() *hcl.EvalContext {
			return g.nodeContext(n, UnknownInstance, g.EvalsStage(n))
		})
		for _, d := range ds {
			if d.path == p {
				return d
			}
		}
	}
	d := declPath{node: n, attr: "outputs", path: p}
	if sn := specs[n.ID]; sn != nil && sn.Common.Result == p && !slices.Contains(sn.Common.Outputs, p) {
		d.attr = "result"
	}
	if a := n.Stage.Attrs[d.attr]; a != nil {
		d.rng = a.Expr.Range()
	}
	return d
}

// clashDiags groups clashes by the declarations that make them, and
// gives one error a group.
func clashDiags(clashes []clash) hcl.Diagnostics {
	var groups [][]clash
	at := map[string]int{}
	for _, c := range clashes {
		k := fmt.Sprint(c.folder != "", c.places())
		i, ok := at[k]
		if !ok {
			i = len(groups)
			at[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], c)
	}
	var diags hcl.Diagnostics
	for _, g := range groups {
		diags = append(diags, clashDiag(g))
	}
	return diags
}

// what says which nodes write the clash's path, and where they declare
// it; short leaves out where (said already).
func (c clash) what(short bool) string {
	if c.folder != "" {
		o, in := c.writers[0], c.writers[1]
		if short {
			return fmt.Sprintf("%s writes %s, inside %s, which %s writes", in.node.Addr, c.path, c.folder, o.node.Addr)
		}
		return fmt.Sprintf("%s writes %s (%s), inside %s, a folder %s writes (%s)",
			in.node.Addr, c.path, in.place(), c.folder, o.node.Addr, o.place())
	}
	// The place of each node named, or once when they share it (the
	// instances of a for_each stage).
	once := short || len(c.places()) == 1
	name := func(w declPath) string {
		if once {
			return w.node.Addr
		}
		return fmt.Sprintf("%s (%s)", w.node.Addr, w.place())
	}
	at := ""
	if once && !short {
		at = " (" + c.writers[0].place() + ")"
	}
	if c.sizes != nil && c.total() > len(c.writers) {
		// Groups of the same work: each group is named by its first
		// node, and counted.
		groups := make([]string, 0, 4)
		for i, w := range c.writers {
			if i == 3 && len(c.writers) > 4 {
				groups = append(groups, fmt.Sprintf("%d more groups", len(c.writers)-3))
				break
			}
			g := name(w)
			if n := c.sizes[i]; n > 1 {
				g += fmt.Sprintf(" and %d more of its work", n-1)
			}
			groups = append(groups, g)
		}
		return fmt.Sprintf("%d nodes in %d groups of the same work write %s%s: %s", c.total(), len(c.writers), c.path, at, strings.Join(groups, "; "))
	}
	names := make([]string, 0, 4)
	for i, w := range c.writers {
		if i == 3 && len(c.writers) > 4 {
			names = append(names, fmt.Sprintf("%d more", len(c.writers)-3))
			break
		}
		names = append(names, name(w))
	}
	all := "both"
	if len(c.writers) > 2 {
		all = "all"
	}
	return fmt.Sprintf("%s %s write %s%s", dsl.AndList(names), all, c.path, at)
}

// total is the number of nodes that write the clash's path.
func (c clash) total() int {
	if c.sizes == nil {
		return len(c.writers)
	}
	n := 0
	for _, k := range c.sizes {
		n += k
	}
	return n
}

// place is where d is declared: "outputs, p.hcl:4:14".
func (d declPath) place() string { return d.attr + ", " + dsl.Pos(d.rng) }

// places are the clash's declarations, each once.
func (c clash) places() []string {
	var out []string
	seen := map[declPath]bool{}
	for _, w := range c.writers {
		k := declPath{attr: w.attr, rng: w.rng}
		if !seen[k] {
			seen[k] = true
			out = append(out, w.place())
		}
	}
	return out
}

// clashDiag is the error for clashes made by the same declarations.
func clashDiag(cs []clash) *hcl.Diagnostic {
	c := cs[0]
	summary := "Two nodes write one path"
	switch {
	case c.folder != "":
		summary = "Output inside another node's output"
	case c.total() > 2:
		summary = fmt.Sprintf("%d nodes write one path", c.total())
	}
	detail := c.what(false) + "."
	if len(cs) > 1 {
		var more []string
		for i, m := range cs[1:] {
			if i == 3 && len(cs) > 5 {
				more = append(more, fmt.Sprintf("%d more", len(cs)-4))
				break
			}
			more = append(more, m.what(true))
		}
		detail += fmt.Sprintf(" The same declarations clash %d more times: %s.", len(cs)-1, strings.Join(more, "; "))
	}
	if c.folded {
		detail += " The workspace's filesystem ignores case: these spellings name one path."
	}
	detail += " Each would write it, perhaps at the same time, and each cache record would hold a copy: which content the workspace keeps, and which one a later cache hit restores, would depend on timing." +
		" Give each node a path of its own (in a for_each stage, one made of each.key: \"out/${each.key}.txt\"), or have one stage write it and the other read it through inputs."
	last := c.writers[len(c.writers)-1]
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: last.rng.Ptr()}
}
