package plan

import (
	"fmt"
	"iter"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/dsl/par"
	"github.com/cairn-run/cairn/stages"
)

// A path a node declares: an element of inputs, outputs or result, with
// the position of the expression that wrote it.
type declPath struct {
	node *Node
	attr string // inputs, outputs or result
	path string // cleaned, workspace-relative
	rng  hcl.Range
	// args: named in an argument list (stages.PathAttr.Args).
	args bool
}

// pathIndex finds the declared paths that overlap a path: the same path, a
// folder above it, or a path below it.
type pathIndex struct {
	by     map[string][]declPath
	sorted []string
}

// grow makes room for n paths more (at most: a path declared again
// takes none).
func (x *pathIndex) grow(n int) {
	if x.by == nil {
		x.by = make(map[string][]declPath, n)
	}
	x.sorted = slices.Grow(x.sorted, n)
}

func (x *pathIndex) add(ps []declPath) {
	if x.by == nil {
		x.by = map[string][]declPath{}
	}
	for _, p := range ps {
		if x.by[p.path] == nil {
			x.sorted = append(x.sorted, p.path)
		}
		x.by[p.path] = append(x.by[p.path], p)
	}
}

// overlapping lists the indexed paths that overlap p. sorted must be
// sorted (seal).
func (x *pathIndex) overlapping(p string) iter.Seq[declPath] {
	return func(yield func(declPath) bool) {
		if x == nil || len(x.by) == 0 {
			return
		}
		for _, d := range x.by[p] {
			if !yield(d) {
				return
			}
		}
		for q := range parents(p) {
			for _, d := range x.by[q] {
				if !yield(d) {
					return
				}
			}
		}
		prefix := p + "/"
		if p == "." {
			prefix = ""
		}
		for i := sort.SearchStrings(x.sorted, prefix); i < len(x.sorted) && strings.HasPrefix(x.sorted[i], prefix); i++ {
			if x.sorted[i] == p {
				continue
			}
			for _, d := range x.by[x.sorted[i]] {
				if !yield(d) {
					return
				}
			}
		}
	}
}

func (x *pathIndex) seal() { sort.Strings(x.sorted) }

// parents yields the folders above a clean workspace-relative path,
// nearest first: "a/b/c" gives "a/b", then "a".
func parents(p string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := strings.LastIndexByte(p, '/'); i > 0; i = strings.LastIndexByte(p[:i], '/') {
			if !yield(p[:i]) {
				return
			}
		}
	}
}

// pathDeps is what linkPaths knew when the graph was built, for the paths
// known only at apply (LateCheck).
type pathDeps struct {
	writes, reads pathIndex
	// late are the nodes whose inputs, outputs or result were not known
	// when the graph was built.
	late map[*Node]bool
	// argReads are, for a node, the paths its kind's argument lists name
	// that another stage writes (linkArgReads).
	argReads map[*Node][]string
}

// linkPaths makes a node whose inputs name another stage's declared output
// depend on the node that writes it, as make and ninja do: an input equal
// to an output, below an output folder, or a folder holding an output. The
// dependency is a data dependency: the node waits for the writer, and the
// writer's output digest enters the node's key. Paths known when the graph
// is built (from variables, locals and each) are matched here; a path
// computed from a result is checked when its node is about to start
// (LateCheck).
//
// Two nodes of one stage cannot wait for each other, and a writer that
// itself depends on the reader would make a cycle: both are errors that
// say what to change.
func (g *Graph) linkPaths() hcl.Diagnostics {
	var readers, writers []*dsl.Stage
	for _, s := range g.StageOrder {
		reads, writes := g.readsWrites(s)
		if reads {
			readers = append(readers, s)
		}
		if writes {
			writers = append(writers, s)
		}
	}
	if len(readers) == 0 || len(writers) == 0 {
		return nil
	}
	pd := &pathDeps{late: map[*Node]bool{}}
	g.pathDeps = pd
	// Each node's paths, evaluated on every core: what a node's path
	// attributes hold, for a grid of thousands, is most of linking.
	nodes, found := g.evalNodePaths()
	ins := make(map[*Node][]declPath, len(nodes))
	var nw, nr int
	for i := range found {
		nw, nr = nw+len(found[i].writes), nr+len(found[i].reads)
	}
	pd.writes.grow(nw)
	pd.reads.grow(nr)
	for i, n := range nodes {
		f := &found[i]
		pd.writes.add(f.writes)
		pd.reads.add(f.reads)
		if len(f.reads) > 0 {
			ins[n] = f.reads
		}
		if f.late {
			pd.late[n] = true
		}
	}
	pd.writes.seal()
	pd.reads.seal()

	var diags hcl.Diagnostics
	reported := map[string]bool{}
	added := false
	reaches := map[[2]string]bool{} // stageReaches, until a stage dependency is added
	for _, s := range readers {
		for _, n := range g.StageNodes[s.Name] {
			var add []int // the node's new dependencies, merged in once
			for _, in := range ins[n] {
				for out := range pd.writes.overlapping(in.path) {
					u := out.node
					if u == n {
						continue
					}
					if u.Stage == n.Stage {
						if k := n.Addr + "\x00" + in.path; !reported[k] {
							reported[k] = true
							diags = append(diags, &hcl.Diagnostic{
								Severity: hcl.DiagError, Summary: "Input written by the same stage",
								Detail: fmt.Sprintf("%s reads %s (%s), which %s of the same stage writes (%s): nodes of one stage do not wait for each other, so it would read whatever is there when it starts. %s",
									n.Addr, in.path, in.attr, u.Addr, out.attr, sameStageAdvice(in, out)),
								Subject: in.rng.Ptr(),
							})
						}
						continue
					}
					pair := [2]string{u.Stage.Name, n.Stage.Name}
					reach, ok := reaches[pair]
					if !ok {
						reach = g.stageReaches(pair[0], pair[1])
						reaches[pair] = reach
					}
					if reach {
						if k := n.Stage.Name + "\x00" + u.Stage.Name + "\x00" + in.path; !reported[k] {
							reported[k] = true
							diags = append(diags, &hcl.Diagnostic{
								Severity: hcl.DiagError, Summary: "Dependency cycle",
								Detail: fmt.Sprintf("%s reads %s (%s), which %s writes (%s); but stage.%s itself runs after stage.%s, so neither could start first. Read the file in a later stage, or have stage.%s write it elsewhere.",
									n.Addr, in.path, in.attr, u.Addr, out.attr, u.Stage.Name, n.Stage.Name, u.Stage.Name),
								Subject: in.rng.Ptr(),
							})
						}
						continue
					}
					add = append(add, u.ID)
					n.OrderOnly = removeInt(n.OrderOnly, u.ID)
					if !slices.Contains(g.StageDeps[n.Stage.Name], u.Stage.Name) {
						g.StageDeps[n.Stage.Name] = append(g.StageDeps[n.Stage.Name], u.Stage.Name)
						sort.Strings(g.StageDeps[n.Stage.Name])
						added = true
						clear(reaches)
					}
				}
			}
			if len(add) > 0 {
				// One sort for all of them: a summary over a grid's
				// folder gains thousands (seed 002's, 3,200).
				had := len(n.Deps)
				n.Deps = append(n.Deps, add...)
				sort.Ints(n.Deps)
				n.Deps = slices.Compact(n.Deps)
				if len(n.Deps) > had {
					// What was evaluated of it had not these
					// upstreams in its stage objects.
					n.ahead = nil
				}
			}
		}
	}
	if added {
		g.reorderNodes()
	}
	return diags
}

// stagePaths are a stage's path attributes, read and written, and whether
// any refers to stage objects.
type stagePaths struct {
	reads, writes []stages.PathAttr
	withStage     bool
}

// nodePaths are the paths a node's path attributes declare, and whether
// some are known only from results (late).
type nodePaths struct {
	reads, writes []declPath
	late          bool
}

// evalNodePaths evaluates the path attributes of every node of a stage
// that has some, on every core: the nodes, and what each declares.
func (g *Graph) evalNodePaths() ([]*Node, []nodePaths) {
	var nodes []*Node
	var of []*stagePaths
	for _, s := range g.StageOrder {
		reads, writes := g.pathAttrs(s)
		if len(reads) == 0 && len(writes) == 0 {
			continue
		}
		sp := &stagePaths{reads: reads, writes: writes}
		for _, pa := range append(slices.Clip(reads), writes...) {
			sp.withStage = sp.withStage || refersToStages(s.Attrs[pa.Attr])
		}
		for _, n := range g.StageNodes[s.Name] {
			nodes = append(nodes, n)
			of = append(of, sp)
		}
	}
	found := make([]nodePaths, len(nodes))
	g.Scope.Context(nil) // what the evaluations share, made first
	par.Chunks(len(nodes), 32, 64, func(i int) {
		found[i] = g.nodePathsOf(nodes[i], of[i])
	})
	return nodes, found
}

// nodePathsOf evaluates n's path attributes, in one context made when the
// first needs it. The node's evaluation with its upstreams unknown takes
// the values found here, and the context where it is the one that
// evaluation makes (aheadEval).
func (g *Graph) nodePathsOf(n *Node, sp *stagePaths) nodePaths {
	var ctx *hcl.EvalContext
	full := g.EvalsStage(n)
	context := func() *hcl.EvalContext {
		if ctx == nil {
			ctx = g.nodeContext(n, UnknownInstance, sp.withStage && full)
		}
		return ctx
	}
	var f nodePaths
	keep := &aheadEval{}
	for _, pa := range sp.writes {
		var known bool
		f.writes, known = g.appendDeclaredPaths(f.writes, n, pa, context, keep)
		f.late = f.late || !known
	}
	for _, pa := range sp.reads {
		var known bool
		f.reads, known = g.appendDeclaredPaths(f.reads, n, pa, context, keep)
		f.late = f.late || !known
	}
	if ctx != nil && (sp.withStage || !full) {
		keep.ctx = ctx
	}
	if keep.ctx != nil || len(keep.names) > 0 {
		n.ahead = keep
	}
	return f
}

// generalPathAttrs are the path attributes of every kind.
var generalPathAttrs = [...]stages.PathAttr{{Attr: "inputs"}, {Attr: "outputs", Write: true}, {Attr: "result", Write: true}}

// stagePathAttrs yields the attributes of a stage that name paths its
// nodes read and write: inputs, outputs and result, and its kind's
// (PathLinker), those written in the stage or with a default.
func (g *Graph) stagePathAttrs(s *dsl.Stage) iter.Seq[stages.PathAttr] {
	return func(yield func(stages.PathAttr) bool) {
		for _, pa := range generalPathAttrs {
			if s.Attrs[pa.Attr] != nil && !yield(pa) {
				return
			}
		}
		k, ok := g.lookupKind(s.Kind)
		l, linker := k.(stages.PathLinker)
		if !ok || !linker {
			return
		}
		for _, pa := range l.PathAttrs() {
			if (s.Attrs[pa.Attr] != nil || pa.Default != nil) && !yield(pa) {
				return
			}
		}
	}
}

// pathAttrs lists a stage's path attributes (stagePathAttrs), read and
// written.
func (g *Graph) pathAttrs(s *dsl.Stage) (reads, writes []stages.PathAttr) {
	for pa := range g.stagePathAttrs(s) {
		if pa.Write {
			writes = append(writes, pa)
		} else {
			reads = append(reads, pa)
		}
	}
	return reads, writes
}

// readsWrites reports whether a stage has path attributes its nodes read,
// and ones they write (stagePathAttrs), without listing them.
func (g *Graph) readsWrites(s *dsl.Stage) (reads, writes bool) {
	for pa := range g.stagePathAttrs(s) {
		reads, writes = reads || !pa.Write, writes || pa.Write
	}
	return reads, writes
}

// declaredPaths is declaredPathsOf for inputs, outputs or result.
func (g *Graph) declaredPaths(n *Node, attr string) (paths []declPath, known bool) {
	return g.declaredPathsOf(n, stages.PathAttr{Attr: attr}, func() *hcl.EvalContext {
		return g.nodeContext(n, UnknownInstance, g.EvalsStage(n))
	})
}

// inWorkspace is p relative to the workspace root where p is an absolute
// path inside it (paths are matched as relative ones); else p as it is.
func (g *Graph) inWorkspace(p string) string {
	if filepath.IsAbs(p) {
		if rel, err := filepath.Rel(g.Root, p); err == nil && filepath.IsLocal(rel) {
			return rel
		}
	}
	return p
}

// refersToStages reports whether an attribute's expression refers to
// stage objects (false for none): its value needs them in its context.
func refersToStages(a *hcl.Attribute) bool {
	if a == nil {
		return false
	}
	for _, t := range a.Expr.Variables() {
		if t.RootName() == "stage" {
			return true
		}
	}
	return false
}

// declaredPathsOf evaluates one of a node's path attributes (a path or a
// list of them) as far as it is known before anything runs; known is false
// when the value depends on results. Values that are wrong (reported when
// the node is evaluated) give nothing. context gives the node's evaluation
// context.
func (g *Graph) declaredPathsOf(n *Node, pa stages.PathAttr, context func() *hcl.EvalContext) (paths []declPath, known bool) {
	return g.appendDeclaredPaths(nil, n, pa, context, nil)
}

// appendDeclaredPaths is declaredPathsOf, appending the paths to dst and
// giving keep the attribute's value where it evaluated without
// diagnostics.
func (g *Graph) appendDeclaredPaths(dst []declPath, n *Node, pa stages.PathAttr, context func() *hcl.EvalContext, keep *aheadEval) (paths []declPath, known bool) {
	a := n.Stage.Attrs[pa.Attr]
	var list []string
	var rng hcl.Range
	var elems []hclsyntax.Expression
	switch {
	case a == nil && pa.Default != nil:
		list, rng = []string{pa.Default(n.Stage.Name)}, n.Stage.DeclRange
	case a == nil || g.badAttr(n.Stage, a):
		return dst, true
	default:
		v, d := attrValue(g.stageRefs(n), pa.Attr, a, nil, context)
		if d.HasErrors() {
			return dst, true
		}
		if len(d) == 0 && keep != nil {
			keep.keep(pa.Attr, v)
		}
		expr := a.Expr
		if pa.Field != "" {
			v, expr = fieldOf(v, expr, pa.Field)
		}
		if !v.IsWhollyKnown() {
			return dst, false
		}
		rng = expr.Range()
		v, _ = v.Unmark()
		switch {
		case v.IsNull() && pa.Default != nil:
			// null is the attribute left out.
			list = []string{pa.Default(n.Stage.Name)}
		case v.IsNull():
			return dst, true
		case v.Type() == cty.String:
			list = []string{v.AsString()}
		case pa.Attr == "result":
			return dst, true
		case v.Type().IsObjectType() || v.Type().IsMapType():
			// A kind's map of paths or of lists of them (a job's
			// splits and files).
			for _, e := range v.AsValueMap() {
				if e.Type() == cty.String && !e.IsNull() {
					list = append(list, e.AsString())
				} else if l, err := stages.StringList(e); err == nil {
					list = append(list, l...)
				}
			}
		default:
			var err error
			if list, err = stages.StringList(v); err != nil {
				return dst, true
			}
		}
		if tc, ok := dsl.TupleConsOf(expr); ok && len(tc.Exprs) == len(list) {
			elems = tc.Exprs
		}
	}
	out := slices.Grow(dst, len(list)*max(1, len(pa.Files)))
	for i, elem := range list {
		r := rng
		if elems != nil {
			r = elems[i].Range()
		}
		cands := []string{elem}
		if pa.Args {
			cands = stages.ArgPaths(elem)
		}
		for _, p := range cands {
			p = g.inWorkspace(p)
			if p == "" || filepath.IsAbs(p) {
				continue
			}
			clean := filepath.Clean(p)
			if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
				continue
			}
			if len(pa.Files) == 0 {
				out = append(out, declPath{node: n, attr: pa.Attr, path: clean, rng: r, args: pa.Args})
			}
			for _, f := range pa.Files {
				out = append(out, declPath{node: n, attr: pa.Attr, path: filepath.Join(clean, f), rng: r})
			}
		}
	}
	return out, true
}

// fieldOf is the member field of v, an object attribute's value, and the
// expression that gives it where e, the attribute's, is an object
// constructor (else e): null where v has no such member, unknown where
// v is.
func fieldOf(v cty.Value, e hcl.Expression, field string) (cty.Value, hcl.Expression) {
	if it, ok := dsl.ObjectItem(e, func(k string) bool { return k == field }); ok {
		e = it.ValueExpr
	}
	v, _ = v.Unmark()
	switch {
	case !v.IsKnown():
		return v, e
	case v.IsNull():
	case v.Type().IsObjectType() && v.Type().HasAttribute(field):
		return v.GetAttr(field), e
	case v.Type().IsMapType() && v.HasIndex(cty.StringVal(field)).True():
		return v.Index(cty.StringVal(field)), e
	}
	return cty.NullVal(cty.DynamicPseudoType), e
}

// linkArgReads finds, once linkPaths has linked them, the paths a node's
// kind names in an argument list (a worker's "--prompts=gen") that a node
// it depends on writes. Its kind counts such a path among its inputs only
// once it exists (stages.InputDeclarer), and when the plan is made it
// may not yet: argInputs makes it an input at plan and at apply alike.
func (g *Graph) linkArgReads() {
	pd := g.pathDeps
	if pd == nil {
		return
	}
	for _, p := range pd.reads.sorted {
		for _, r := range pd.reads.by[p] {
			if !r.args || slices.Contains(pd.argReads[r.node], r.path) {
				continue
			}
			for w := range pd.writes.overlapping(r.path) {
				if w.node != r.node && containsInt(r.node.Deps, w.node.ID) {
					if pd.argReads == nil {
						pd.argReads = map[*Node][]string{}
					}
					pd.argReads[r.node] = append(pd.argReads[r.node], r.path)
					break
				}
			}
		}
	}
}

// argInputs adds to sn's inputs the paths n's kind names in an argument
// list that an upstream writes (linkArgReads), whether or not they exist
// yet: like an input that names another stage's output, each is digested
// when the writer has finished (known after apply while it will run), so
// that plan and apply key the node alike. A path that is, holds or lies
// inside one the node writes itself is no input of it (an evaluation's
// folder holding its scores).
func (g *Graph) argInputs(n *Node, sn *stages.Node) {
	if g.pathDeps == nil || len(g.pathDeps.argReads[n]) == 0 {
		return
	}
	own := append(slices.Clip(sn.Common.Outputs), sn.Common.Result)
	if d, ok := n.Kind.(stages.OutputDeclarer); ok {
		for _, o := range d.DeclaredOutputs(sn) {
			own = append(own, filepath.Clean(g.inWorkspace(o.Path)))
		}
	}
	for _, p := range g.pathDeps.argReads[n] {
		if slices.Contains(sn.Common.Inputs, p) || slices.ContainsFunc(own, func(o string) bool {
			_, below := relUnder(o, p)
			_, above := relUnder(p, o)
			return o != "" && (below || above)
		}) {
			continue
		}
		sn.Common.Inputs = append(sn.Common.Inputs, p)
	}
}

// LateCheck is linkPaths for a node whose paths were known only once its
// upstreams had run, called just before it would start: an input that a
// node of another stage writes, or an output that another node reads,
// with no dependency between the two, would be a race (the reader might
// start before the writer, or after it). It says which, and what to
// write; "" when there is none. The paths are sn's inputs (its kind's
// among them, and what it keys by content: a serve stage's weights, a
// model cache's), outputs and result, and those its kind writes.
func (g *Graph) LateCheck(n *Node, sn *stages.Node) string {
	c := &sn.Common
	pd := g.pathDeps
	if pd == nil || !pd.late[n] {
		return ""
	}
	ins := slices.Clip(c.Inputs)
	if svc, ok := n.Kind.(stages.Service); ok {
		if w := svc.WeightsPath(sn); w != "" {
			ins = append(ins, filepath.Clean(g.inWorkspace(w)))
		}
	}
	if ck, ok := n.Kind.(stages.ContentKeyer); ok {
		// What it reads by content besides its inputs: a model cache's
		// weights.
		for _, p := range ck.KeyedContent(sn, g.Root) {
			ins = append(ins, filepath.Clean(g.inWorkspace(p)))
		}
	}
	for _, p := range ins {
		for w := range pd.writes.overlapping(p) {
			if w.node != n && !g.dependsOn(n, w.node) {
				return fmt.Sprintf("input %s is written by %s (%s, as %s), and nothing makes this node wait for it: its inputs are computed from results, so cairn could not see this when planning. %s",
					p, w.node.Addr, w.attr, w.path, lateAdvice(w.node, n))
			}
		}
	}
	outs := append([]string{}, c.Outputs...)
	if c.Result != "" {
		outs = append(outs, c.Result)
	}
	if d, ok := n.Kind.(stages.OutputDeclarer); ok {
		for _, o := range d.DeclaredOutputs(sn) {
			outs = append(outs, filepath.Clean(o.Path))
		}
	}
	for _, p := range outs {
		for r := range pd.reads.overlapping(p) {
			if r.node != n && !g.dependsOn(r.node, n) {
				return fmt.Sprintf("%s is read by %s (%s, as %s), which does not wait for this node: its outputs are computed from results, so cairn could not see this when planning. %s",
					p, r.node.Addr, r.attr, r.path, lateAdvice(n, r.node))
			}
		}
	}
	return ""
}

// sameStageAdvice says what to change where a node reads what another
// node of its stage writes: the writing moved into a stage of its own,
// or, for a path the kind writes itself (a ledger), that path moved out
// of the input.
func sameStageAdvice(in, out declPath) string {
	if out.attr != "outputs" && out.attr != "result" {
		return fmt.Sprintf("Set %s to a path outside %s, or list in %s the files the nodes read.", out.attr, in.path, in.attr)
	}
	return fmt.Sprintf("Move the part that writes %s into a stage of its own; the reader then waits for it.", out.path)
}

// lateAdvice says how a reader comes to wait for a writer: an after entry,
// or, for two nodes of one stage (which cannot wait for each other), a
// stage of its own for the writing.
func lateAdvice(writer, reader *Node) string {
	if writer.Stage == reader.Stage {
		return fmt.Sprintf("Nodes of one stage do not wait for each other: move the part that writes it into a stage of its own, or have %s write elsewhere", writer.Addr)
	}
	return fmt.Sprintf("Add after = [%s] to stage.%s", writer.Addr, reader.Stage.Name)
}

// dependsOn reports whether node n depends on node u, directly or through
// other nodes.
func (g *Graph) dependsOn(n, u *Node) bool {
	if _, direct := slices.BinarySearch(n.Deps, u.ID); direct {
		return true // most often: linkPaths made it
	}
	seen := map[int]bool{}
	stack := append([]int{}, n.Deps...)
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if id == u.ID {
			return true
		}
		if seen[id] || id < u.ID {
			continue // nodes are in topological order: no path from below u
		}
		seen[id] = true
		stack = append(stack, g.Nodes[id].Deps...)
	}
	return false
}

// stageReaches reports whether stage from depends on stage to, directly or
// through other stages.
func (g *Graph) stageReaches(from, to string) bool {
	seen := map[string]bool{}
	stack := []string{from}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s == to {
			return true
		}
		if seen[s] {
			continue
		}
		seen[s] = true
		stack = append(stack, g.StageDeps[s]...)
	}
	return false
}

// reorderNodes puts the nodes back in a topological order after new
// stage dependencies were added: stages in the order orderStages gives
// them, each stage's nodes together as expanded, with IDs renumbered.
func (g *Graph) reorderNodes() {
	order, d := g.orderStages()
	if d.HasErrors() {
		return
	}
	expanded := map[string]bool{}
	for _, s := range g.StageOrder {
		expanded[s.Name] = true
	}
	stageOrder := make([]*dsl.Stage, 0, len(g.StageOrder))
	nodes := make([]*Node, 0, len(g.Nodes))
	for _, s := range order {
		if !expanded[s.Name] {
			continue
		}
		stageOrder = append(stageOrder, s)
		nodes = append(nodes, g.StageNodes[s.Name]...)
	}
	newID := make([]int, len(g.Nodes))
	for i, n := range nodes {
		newID[n.ID] = i
	}
	for i, n := range nodes {
		n.ID = i
		remap := func(ids []int) {
			for j, id := range ids {
				ids[j] = newID[id]
			}
			sort.Ints(ids)
		}
		remap(n.Deps)
		remap(n.OrderOnly)
	}
	g.Nodes, g.StageOrder = nodes, stageOrder
}

func containsInt(xs []int, x int) bool {
	i := sort.SearchInts(xs, x)
	return i < len(xs) && xs[i] == x
}

// removeInt returns xs, sorted, without x.
func removeInt(xs []int, x int) []int {
	if i := sort.SearchInts(xs, x); i < len(xs) && xs[i] == x {
		return append(xs[:i], xs[i+1:]...)
	}
	return xs
}
