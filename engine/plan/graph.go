// Package plan turns a decoded pipeline into a DAG of nodes (stage
// instances: load, graph, node evaluation), computes their keys (key
// envelopes over inputs and upstream outputs), and plans: per node, run,
// cached or may run, and why, and the plan files `cairn plan --out`
// saves. It starts nothing; package engine applies a plan.
package plan

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dominikbraun/graph"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/dsl/addrs"
	"github.com/cairn-run/cairn/dsl/gcpace"
	"github.com/cairn-run/cairn/dsl/par"
	"github.com/cairn-run/cairn/stages"
)

// Node is one stage instance.
type Node struct {
	ID    int
	Addr  string
	Stage *dsl.Stage
	Kind  stages.Kind
	Inst  dsl.Instance
	// Deps are the IDs of the nodes this one depends on, sorted: it starts
	// when they have finished.
	Deps []int
	// OrderOnly are the Deps named only in wait_for, sorted: the node waits
	// for them, but their outputs do not enter its key. Usually empty.
	OrderOnly []int
	// Downs are the IDs of the nodes that depend on this one.
	Downs []int
	// each is the value of each for a keyed instance.
	each cty.Value
	// eachFrom is the upstream instance a for_each = stage.X node iterates
	// over: each.value is its instance object (result and all) once known.
	eachFrom *Node
	// waiting marks the one placeholder instance of a stage whose
	// for_each waits for values (validate without values): its each.key
	// and each.value are unknown.
	waiting bool
	// unknown is UnknownInstance's value for the node, made once.
	unknown     cty.Value
	unknownOnce sync.Once
	// unknownOne is unknownOne's value for the node, made once.
	unknownOne     cty.Value
	unknownOneOnce sync.Once
	// refs are its stage's references (the graph's refs of the stage).
	refs *stageRefs
	// ahead is what linking paths evaluated of the node, until evalAhead
	// takes it.
	ahead *aheadEval
}

// Graph is the node DAG of a pipeline. Nodes are in a topological order
// that follows declaration order where dependencies allow.
type Graph struct {
	Config     *dsl.Config
	Scope      *dsl.Scope
	Root       string
	Nodes      []*Node
	ByAddr     map[string]*Node
	StageNodes map[string][]*Node
	StageOrder []*dsl.Stage
	// StageDeps maps a stage to the stages it depends on.
	StageDeps map[string][]string
	refs      map[string]*stageRefs
	eaches    map[string]cty.Value // see eachValue
	forEaches map[string]*forEach  // see forEachOf
	expanded  map[string]*forEach  // see forEachOf
	paths     *PathChecker
	// look is the kinds' memo of the workspace while a plan looks at
	// it at one moment (setPathSnapshot); nil otherwise.
	look    *stages.Look
	pathsMu sync.Mutex
	// hints are the spelling hints of missing inputs, by path
	// (spellingHint).
	hintsMu  sync.Mutex
	hints    map[string]string
	cacheDir string // see SetCacheDir
	// stat digests what kinds seal through the cache's stat cache
	// (stages.Node.Stat); set by Make, nil before.
	stat stages.ContentDigester
	// broken names the stages that cannot be expanded: unknown kind or
	// bad references.
	broken map[string]bool
	// pathDeps holds the declared paths linkPaths matched, for the nodes
	// whose paths are known only at apply.
	pathDeps *pathDeps
	// Waiting maps each stage whose for_each waits for values to what it
	// waits for ("var.variants"): validate without values expands it to
	// one placeholder instance, so that its attributes are still checked.
	Waiting map[string]string
	// unset are the required variables given no value (validate only).
	unset map[string]bool
	// Seal is what the pipeline's seal blocks pin (path -> digest),
	// checked before anything runs; it enters every node's key.
	Seal map[string]string
	// room is what a node's command inherits (see argSizeCheck).
	room *startRoom
	// required are the attributes each stage kind of the graph
	// requires, by kind name (see hasRequired).
	required map[string][]string
	// kinds are the stage kinds looked up (see lookupKind).
	kinds map[string]stages.Kind
	// slab holds the nodes newNode hands out next.
	slab []Node
	// bases counts the key bases built (envelopeBase), for tests.
	bases atomic.Int64
}

// lookupKind is stages.Lookup, remembered for the graph: a pipeline of
// thousands of stages has a few kinds. Not safe for concurrent use.
func (g *Graph) lookupKind(name string) (stages.Kind, bool) {
	if k, ok := g.kinds[name]; ok {
		return k, k != nil
	}
	k, ok := stages.Lookup(name)
	if g.kinds == nil {
		g.kinds = map[string]stages.Kind{}
	}
	g.kinds[name] = k
	return k, ok
}

// newNode returns a new zero node, taken from a slab of them: a graph of
// thousands of nodes is made in a few allocations.
func (g *Graph) newNode() *Node {
	if len(g.slab) == 0 {
		// A node a stage at least, first; then room for more
		// instances.
		size := 256
		if len(g.Nodes) == 0 && g.Config != nil {
			size = max(1, len(g.Config.Stages))
		}
		g.slab = make([]Node, size)
	}
	n := &g.slab[0]
	g.slab = g.slab[1:]
	return n
}

// stageRefs are the references found in one stage's expressions.
type stageRefs struct {
	forEach []dsl.Ref
	body    []dsl.Ref // attributes, after, kind blocks
	waitFor []dsl.Ref // wait_for: dependencies that order without keying
	checks  []dsl.Ref // postconditions (self allowed)
	// evalStage is true when attributes or kind blocks refer to stage
	// objects (after is never evaluated): only then does a node's
	// evaluation context need its upstream instances.
	evalStage bool
	// upstream are the references to other stages, for node dependencies.
	upstream []dsl.Ref
	// judges are the postconditions' references to other stages: they
	// order the node, as wait_for does, without keying it (a node's key
	// holds no postcondition: a changed threshold re-judges its result).
	judges []dsl.Ref
	// bad locates the references already reported as wrong in the
	// stage's attributes: an attribute holding one is not evaluated.
	bad []hcl.Range
	// constant is true when every attribute is made of literal values
	// only (dsl.Constant): they evaluate without a context.
	constant bool
	// same holds the attributes whose value is the same in every
	// instance (sharedAttr): evaluated once, for the first instance.
	same map[string]*sharedAttr
	// room holds body's and upstream's first reference (most stages
	// have at most one: after = [stage.x]) in the same allocation.
	room [2]dsl.Ref
}

// all yields every reference of the stage: for_each, body, wait_for,
// checks.
func (r *stageRefs) all(yield func(dsl.Ref) bool) {
	for _, refs := range [][]dsl.Ref{r.forEach, r.body, r.waitFor, r.checks} {
		for _, ref := range refs {
			if !yield(ref) {
				return
			}
		}
	}
}

// linkStages collects every stage's references and its stage-level
// dependencies.
func (g *Graph) linkStages() hcl.Diagnostics {
	var diags hcl.Diagnostics
	cfg := g.Config
	g.broken = map[string]bool{}
	// Each stage's references depend on nothing but the stage and the
	// configuration: collect them on every core.
	type collected struct {
		r *stageRefs
		d hcl.Diagnostics
	}
	all := make([]collected, len(cfg.Stages))
	par.Chunks(len(cfg.Stages), 32, 256, func(i int) {
		all[i].r, all[i].d = collectRefs(cfg, cfg.Stages[i])
	})
	for i, s := range cfg.Stages {
		r, d := all[i].r, all[i].d
		diags = append(diags, d...)
		if s.UnknownKind {
			g.broken[s.Name] = true
		}
		// A wrong reference in an attribute leaves that attribute out of
		// evaluation; elsewhere (for_each, kind blocks) the stage cannot
		// be expanded. after and postconditions are not evaluated here.
		for _, dg := range d {
			if dg.Severity != hcl.DiagError {
				continue
			}
			switch {
			case dg.Subject == nil:
				g.broken[s.Name] = true
			case inAttrs(s, *dg.Subject):
				r.bad = append(r.bad, *dg.Subject)
			case !inAfterOrChecks(s, *dg.Subject):
				g.broken[s.Name] = true
			}
		}
		g.refs[s.Name] = r
		var deps []string
		for ref := range r.all {
			if ref.Root == "stage" && ref.Name != s.Name && cfg.StageMap[ref.Name] != nil {
				deps = append(deps, ref.Name)
			}
		}
		if deps != nil {
			slices.Sort(deps)
			g.StageDeps[s.Name] = slices.Compact(deps)
		}
	}
	return diags
}

// build expands every stage's for_each and links the nodes, and keeps
// going: a stage with bad references, an unknown kind or a bad for_each is
// left out along with every stage that depends on it, and the others are
// expanded, so that one pass reports every problem. The graph it returns is
// complete only without errors; with errors, StageOrder lists just the
// stages that were expanded. With brokenValues (a variable or local failed
// to evaluate, and is unknown), a stage whose for_each is unknown is left
// out without a diagnostic. With unset (the required variables without a
// value, when validating), a stage whose for_each depends on them waits for
// values (see Waiting).
func build(cfg *dsl.Config, scope *dsl.Scope, root string, brokenValues bool, unset map[string]bool) (*Graph, hcl.Diagnostics) {
	n := len(cfg.Stages) // a node a stage, at least
	g := &Graph{
		Config: cfg, Scope: scope, Root: root,
		ByAddr:     make(map[string]*Node, n),
		StageNodes: make(map[string][]*Node, n),
		StageDeps:  make(map[string][]string, n),
		refs:       make(map[string]*stageRefs, n),
		Waiting:    map[string]string{},
		unset:      unset,
		room:       &startRoom{},
		required:   map[string][]string{},
	}
	diags := g.linkStages()
	order, d := g.orderStages()
	diags = append(diags, d...)
	if d.HasErrors() {
		return g, diags
	}
	left := map[string]bool{}
	for _, s := range order {
		skip := g.broken[s.Name]
		for _, dep := range g.StageDeps[s.Name] {
			skip = skip || left[dep]
		}
		if skip {
			left[s.Name] = true
			continue
		}
		waits := g.waitsFor(s)
		if waits == "" && brokenValues && s.ForEach != nil && !g.forEachOf(s).known {
			left[s.Name] = true
			continue
		}
		if waits != "" {
			g.Waiting[s.Name] = waits
		}
		d := g.expand(s)
		diags = append(diags, d...)
		if len(g.StageNodes[s.Name]) == 0 && s.ForEach != nil && d.HasErrors() {
			// A bad for_each: no instances to build on.
			left[s.Name] = true
			continue
		}
		g.StageOrder = append(g.StageOrder, s)
	}
	before := gcpace.HeapAllocs()
	diags = append(diags, g.linkPaths()...)
	g.linkArgReads()
	diags = append(diags, g.fileCallWarnings()...)
	// Linking's garbage, where it is large, is given back before the
	// nodes are evaluated rather than growing the heap (linkGarbage).
	gcpace.Collect(before, linkGarbage)
	for _, n := range g.Nodes {
		for _, dep := range n.Deps {
			up := g.Nodes[dep]
			up.Downs = append(up.Downs, n.ID)
		}
	}
	return g, diags
}

func collectRefs(cfg *dsl.Config, s *dsl.Stage) (*stageRefs, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	r := &stageRefs{}
	r.body, r.upstream = r.room[:0:1], r.room[1:1:2]
	rc := dsl.RefContext{Stage: s, AllowEach: s.ForEach != nil}
	add := func(dst *[]dsl.Ref, e hcl.Expression, rc dsl.RefContext) {
		before := len(*dst)
		refs, d := dsl.AppendReferences(*dst, e)
		diags = append(diags, d...)
		diags = append(diags, cfg.CheckRefs(refs[before:], rc)...)
		*dst = refs
	}
	if s.ForEach != nil {
		add(&r.forEach, s.ForEach, dsl.RefContext{Stage: s, InForEach: true})
		for _, ref := range r.forEach {
			if ref.Root != "stage" {
				continue
			}
			if ref.HasKey || ref.KeyExpr != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError, Summary: "Invalid for_each",
					Detail:  "for_each may iterate over another stage's instances (for_each = stage.NAME), but not over one instance's results: results are known only after apply.",
					Subject: ref.Range.Ptr(),
				})
			} else if up := cfg.StageMap[ref.Name]; up != nil && up.ForEach == nil && isWholeStage(s.ForEach) {
				// Without for_each, stage.NAME is the stage's one instance
				// object: iterating it would make a node per attribute name.
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError, Summary: "Invalid for_each",
					Detail:  fmt.Sprintf("%s has no for_each: it is one instance, with no instance keys to iterate, and its results are known only after apply. for_each = stage.NAME iterates a stage that has for_each; to make one node after %s, drop for_each and write after = [%s].", addrs.Stage(ref.Name), addrs.Stage(ref.Name), addrs.Stage(ref.Name)),
					Subject: ref.Range.Ptr(),
				})
			}
		}
	}
	// after and wait_for: one stage reference per element, nothing else.
	for _, dl := range []struct {
		attr  string
		exprs []hcl.Expression
		dst   *[]dsl.Ref
	}{{"after", s.After, &r.body}, {"wait_for", s.WaitFor, &r.waitFor}} {
		for _, e := range dl.exprs {
			before, nd := len(*dl.dst), len(diags)
			add(dl.dst, e, rc)
			if diags[nd:].HasErrors() {
				// The reference itself is wrong; that is reported already.
				continue
			}
			if d := checkDepElement(dl.attr, e, (*dl.dst)[before:]); d != nil {
				diags = append(diags, d)
			}
		}
	}
	names := make([]string, 0, len(s.Attrs))
	for n := range s.Attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	afterEnd := len(r.body)
	r.constant = true
	for _, n := range names {
		e := s.Attrs[n].Expr
		if dsl.Constant(e) {
			continue // no reference in it, nothing to check
		}
		r.constant = false
		before, nd := len(r.body), len(diags)
		add(&r.body, e, rc)
		if s.ForEach != nil && len(diags) == nd && sameInEveryInstance(r.body[before:], e) {
			if r.same == nil {
				r.same = map[string]*sharedAttr{}
			}
			r.same[n] = &sharedAttr{}
		}
	}
	for _, b := range s.KindBlocks {
		for _, e := range bodyExprs(b.Body) {
			add(&r.body, e, rc)
		}
	}
	for _, ref := range r.body[afterEnd:] {
		if ref.Root == "stage" {
			r.evalStage = true
		}
	}
	crc := rc
	crc.AllowSelf = true
	for _, c := range s.Postconditions {
		add(&r.checks, c.Condition, crc)
		add(&r.checks, c.ErrorMessage, crc)
	}
	for _, ref := range r.forEach {
		// for_each = stage.X: instance k needs X["k"] only (its keys are
		// known at plan time; its result when the instance runs). Any
		// other for_each reading X ({ for k, v in stage.X : k => k })
		// uses what is known at plan time, its keys: each.value is its
		// own, and it needs no instance of X.
		if ref.Root == "stage" && ref.Name != s.Name && cfg.StageMap[ref.Name] != nil && !ref.HasKey && ref.KeyExpr == nil && isWholeStage(s.ForEach) {
			ref.SameKey = true
			r.upstream = append(r.upstream, ref)
			r.evalStage = true // each.value is the upstream instance
		}
	}
	for _, ref := range r.body {
		if ref.Root == "stage" && ref.Name != s.Name && cfg.StageMap[ref.Name] != nil {
			r.upstream = append(r.upstream, ref)
		}
	}
	for _, ref := range r.checks {
		if ref.Root == "stage" && ref.Name != s.Name && cfg.StageMap[ref.Name] != nil {
			r.judges = append(r.judges, ref)
		}
	}
	return r, diags
}

// isWholeStage reports whether e is a bare stage.NAME.
func isWholeStage(e hcl.Expression) bool {
	st, ok := e.(*hclsyntax.ScopeTraversalExpr)
	return ok && len(st.Traversal) == 2 && st.Traversal.RootName() == "stage"
}

// checkDepElement checks one element of after or wait_for: exactly one
// stage reference, stage.NAME, stage.NAME["KEY"] or stage.NAME[EXPR], with
// nothing after it and around it. refs are the element's references.
func checkDepElement(attr string, e hcl.Expression, refs []dsl.Ref) *hcl.Diagnostic {
	const want = "Each element of %s must be a stage reference: stage.NAME (all its instances) or stage.NAME[\"KEY\"] (one instance), with nothing after it."
	var stage *dsl.Ref
	stageN := 0
	for i := range refs {
		if refs[i].Root == "stage" {
			stageN++
			stage = &refs[i]
		}
	}
	bare := false
	if x, ok := e.(*hclsyntax.ScopeTraversalExpr); ok {
		if len(x.Traversal) == 2 {
			bare = true
		} else if len(x.Traversal) == 3 {
			_, bare = x.Traversal[2].(hcl.TraverseIndex)
		}
	} else if x, ok := dsl.IndexExprOf(e); ok {
		st, ok := x.Collection.(*hclsyntax.ScopeTraversalExpr)
		bare = ok && len(st.Traversal) == 2
	}
	if bare && stageN == 1 && stage.Root == "stage" {
		return nil
	}
	detail := fmt.Sprintf(want, attr)
	if stageN == 1 {
		name := addrs.Stage(stage.Name).String()
		if stage.HasKey {
			name = addrs.Instance(stage.Name, stage.Key).String()
		} else if stage.KeyExpr != nil && isEachKey(stage.KeyExpr) {
			name += "[each.key]"
		} else if stage.KeyExpr != nil {
			name += "[...]"
		}
		if isLongTraversal(e) {
			detail += fmt.Sprintf(" Write %s: %s names what to wait for, not one of its attributes. To use its result, read it in an attribute of this stage; that makes it a dependency too.", name, attr)
		} else {
			detail += fmt.Sprintf(" Write %s itself, not an expression holding it.", name)
		}
	} else if v, d := e.Value(nil); !d.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
		ref := v.AsString()
		if !strings.HasPrefix(ref, "stage.") {
			ref = "stage." + ref // "b" as well as "stage.b"
		}
		detail += fmt.Sprintf(" A stage is named by a reference, not a string: write %s, without quotes.", ref)
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid " + attr, Detail: detail, Subject: e.Range().Ptr()}
}

// isLongTraversal reports whether e is a traversal that goes on past a
// stage instance: stage.NAME.ATTR, stage.NAME["KEY"].ATTR,
// stage.NAME[EXPR].ATTR.
func isLongTraversal(e hcl.Expression) bool {
	if x, ok := e.(*hclsyntax.ScopeTraversalExpr); ok {
		return len(x.Traversal) > 2
	}
	x, ok := dsl.RelTraversalOf(e)
	if !ok {
		return false
	}
	ix, ok := dsl.IndexExprOf(x.Source)
	if !ok {
		return false
	}
	st, ok := ix.Collection.(*hclsyntax.ScopeTraversalExpr)
	return ok && len(st.Traversal) == 2
}

// within reports whether inner lies inside outer.
func within(outer, inner hcl.Range) bool {
	return outer.Filename == inner.Filename && outer.Start.Byte <= inner.Start.Byte && inner.End.Byte <= outer.End.Byte
}

func inAttrs(s *dsl.Stage, r hcl.Range) bool {
	for _, a := range s.Attrs {
		if within(a.Expr.Range(), r) {
			return true
		}
	}
	return false
}

func inAfterOrChecks(s *dsl.Stage, r hcl.Range) bool {
	for _, e := range append(append([]hcl.Expression{}, s.After...), s.WaitFor...) {
		if within(e.Range(), r) {
			return true
		}
	}
	for _, c := range s.Postconditions {
		if within(c.Condition.Range(), r) || within(c.ErrorMessage.Range(), r) {
			return true
		}
	}
	return false
}

// badAttr reports whether a stage attribute holds a reference already
// reported as wrong.
func (g *Graph) badAttr(s *dsl.Stage, a *hcl.Attribute) bool {
	r := g.refs[s.Name]
	if r == nil {
		return false
	}
	for _, b := range r.bad {
		if within(a.Expr.Range(), b) {
			return true
		}
	}
	return false
}

// bodyExprs lists every attribute expression of a body, nested blocks
// included.
func bodyExprs(b hcl.Body) []hcl.Expression {
	sb, ok := b.(*hclsyntax.Body)
	if !ok {
		attrs, _ := b.JustAttributes()
		var out []hcl.Expression
		for _, a := range attrs {
			out = append(out, a.Expr)
		}
		return out
	}
	var out []hcl.Expression
	for _, a := range sb.Attributes {
		out = append(out, a.Expr)
	}
	for _, blk := range sb.Blocks {
		out = append(out, bodyExprs(blk.Body)...)
	}
	return out
}

// orderStages detects dependency cycles among stages (strongly connected
// components, once for the whole graph) and returns the stages in a
// topological order that follows declaration order.
func (g *Graph) orderStages() ([]*dsl.Stage, hcl.Diagnostics) {
	if order, ok := g.topoOrder(); ok {
		return order, nil
	}
	cfg := g.Config
	dg := graph.New(graph.StringHash, graph.Directed())
	for _, s := range cfg.Stages {
		_ = dg.AddVertex(s.Name)
	}
	for _, s := range cfg.Stages {
		for _, d := range g.StageDeps[s.Name] {
			_ = dg.AddEdge(d, s.Name)
		}
	}
	sccs, err := graph.StronglyConnectedComponents(dg)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot analyse dependencies", Detail: err.Error()}}
	}
	var diags hcl.Diagnostics
	decl := map[string]int{}
	for i, s := range cfg.Stages {
		decl[s.Name] = i
	}
	for _, scc := range sccs {
		if len(scc) < 2 {
			continue
		}
		sort.Slice(scc, func(i, j int) bool { return decl[scc[i]] < decl[scc[j]] })
		cycle := g.cyclePath(scc)
		var parts []string
		for _, n := range cycle {
			parts = append(parts, fmt.Sprintf("%s (%s)", cfg.StageMap[n].Address(), dsl.Pos(cfg.StageMap[n].NameRange)))
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Dependency cycle",
			Detail:   "These stages depend on each other in a cycle: " + strings.Join(parts, " -> ") + ". Remove one of the references, after or wait_for entries.",
			Subject:  cfg.StageMap[cycle[0]].NameRange.Ptr(),
		})
	}
	// topoOrder met a cycle, and a cycle spans two stages at least (a
	// stage's own name is no dependency): diags holds it.
	return nil, diags
}

// topoOrder is the depth-first post-order, in declaration order
// (deterministic and O(V+E)), of a graph without cycles; ok is false when
// it meets one (orderStages then finds and reports every cycle).
func (g *Graph) topoOrder() (order []*dsl.Stage, ok bool) {
	cfg := g.Config
	state := make(map[string]uint8, len(cfg.Stages))
	order = make([]*dsl.Stage, 0, len(cfg.Stages))
	ok = true
	var visit func(n string)
	visit = func(n string) {
		switch state[n] {
		case 1:
			ok = false
			return
		case 2:
			return
		}
		state[n] = 1
		for _, d := range g.StageDeps[n] {
			visit(d)
			if !ok {
				return
			}
		}
		state[n] = 2
		order = append(order, cfg.StageMap[n])
	}
	for _, s := range cfg.Stages {
		if visit(s.Name); !ok {
			return nil, false
		}
	}
	return order, true
}

// cyclePath orders the members of a strongly connected component along a
// dependency path that returns to its start.
func (g *Graph) cyclePath(scc []string) []string {
	in := map[string]bool{}
	for _, n := range scc {
		in[n] = true
	}
	start := scc[0]
	path := []string{start}
	seen := map[string]bool{start: true}
	cur := start
	for {
		next := ""
		for _, d := range g.StageDeps[cur] {
			if in[d] && d == start && len(path) > 1 {
				return append(path, start)
			}
			if in[d] && !seen[d] && next == "" {
				next = d
			}
		}
		if next == "" {
			return append(path, start)
		}
		seen[next] = true
		path = append(path, next)
		cur = next
	}
}

// waitsFor names what a stage's for_each waits for when validating
// without values: the variables without a value it depends on (through
// locals too) and the stages it iterates that wait themselves. It is ""
// when the for_each is known, or unknown for another reason.
func (g *Graph) waitsFor(s *dsl.Stage) string {
	if g.unset == nil || s.ForEach == nil || g.forEachOf(s).known {
		return ""
	}
	var names []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	var visit func(refs []dsl.Ref)
	visit = func(refs []dsl.Ref) {
		for _, ref := range refs {
			switch ref.Root {
			case "var":
				if g.unset[ref.Name] {
					add("var." + ref.Name)
				}
			case "local":
				l := g.Config.Locals[ref.Name]
				if l == nil || seen["local."+ref.Name] {
					continue
				}
				seen["local."+ref.Name] = true
				lr, _ := dsl.References(l.Expr)
				visit(lr)
			case "stage":
				if g.Waiting[ref.Name] != "" {
					add(addrs.Stage(ref.Name).String())
				}
			}
		}
	}
	visit(g.refs[s.Name].forEach)
	return strings.Join(names, ", ")
}

// expand evaluates a stage's for_each and adds its nodes with their
// dependencies.
func (g *Graph) expand(s *dsl.Stage) hcl.Diagnostics {
	kind, _ := g.lookupKind(s.Kind)
	if _, ok := g.required[s.Kind]; !ok && kind != nil {
		g.required[s.Kind] = requiredAttrs(kind)
	}
	r := g.refs[s.Name]
	var diags hcl.Diagnostics
	waiting := g.Waiting[s.Name] != ""
	insts := []dsl.Instance{{}} // no for_each: one instance, without an evaluation context
	switch {
	case waiting:
		insts = []dsl.Instance{{Keyed: true}}
	case s.ForEach != nil:
		fe := g.forEachOf(s)
		insts = fe.insts
		diags = append(diags, fe.diags...)
		if fe.diags.HasErrors() {
			return diags
		}
		if len(insts) >= parallelInstances {
			return append(diags, g.makeInstances(s, kind, r, fe)...)
		}
	}
	for _, in := range insts {
		n := g.newNode()
		d, bad, fresh := g.makeInstance(n, len(g.Nodes), s, kind, r, in, waiting)
		diags = append(diags, d...)
		r.bad = append(r.bad, bad...)
		g.addNode(n)
		if fresh {
			g.shareEach(n)
		}
	}
	return diags
}

// makeInstances is expand's loop for a for_each of many instances (fe,
// known, without errors).
func (g *Graph) makeInstances(s *dsl.Stage, kind stages.Kind, r *stageRefs, fe *forEach) hcl.Diagnostics {
	// A stage of many instances (a grid's) makes them on every core:
	// each instance's node reads the graph as the stages before it left
	// it (their nodes, the shared each objects) and writes only itself.
	// What they found wrong, and the each objects they made, are added
	// after, in the instances' order, as one at a time would have.
	g.Scope.Context(nil) // the scope's shared base, built before they read it
	nodes := make([]Node, len(fe.insts))
	fresh := make([]bool, len(fe.insts)) // made an each object others may share
	type problem struct {
		i     int
		diags hcl.Diagnostics
		bad   []hcl.Range
	}
	var mu sync.Mutex
	var problems []problem
	base := len(g.Nodes)
	par.Chunks(len(fe.insts), 32, 0, func(i int) {
		d, bad, made := g.makeInstance(&nodes[i], base+i, s, kind, r, fe.insts[i], false)
		fresh[i] = made
		if len(d) > 0 || len(bad) > 0 {
			mu.Lock()
			problems = append(problems, problem{i, d, bad})
			mu.Unlock()
		}
	})
	sort.Slice(problems, func(a, b int) bool { return problems[a].i < problems[b].i })
	var diags hcl.Diagnostics
	for _, p := range problems {
		diags = append(diags, p.diags...)
		r.bad = append(r.bad, p.bad...)
	}
	g.Nodes = slices.Grow(g.Nodes, len(nodes))
	g.StageNodes[s.Name] = slices.Grow(g.StageNodes[s.Name], len(nodes))
	for i := range nodes {
		n := &nodes[i]
		g.addNode(n)
		if fresh[i] {
			g.shareEach(n)
		}
	}
	return diags
}

// shareEach keeps n's each object for the instances of later stages
// with the same key and value (eachValue).
func (g *Graph) shareEach(n *Node) {
	if g.eaches == nil {
		g.eaches = map[string]cty.Value{}
	}
	g.eaches[n.Inst.Key] = n.each
}

// parallelInstances is the fewest instances of a stage that expand makes
// on every core.
var parallelInstances = 128

// addNode adds a node made by makeInstance to the graph.
func (g *Graph) addNode(n *Node) {
	g.Nodes = append(g.Nodes, n)
	g.ByAddr[n.Addr] = n
	g.StageNodes[n.Stage.Name] = append(g.StageNodes[n.Stage.Name], n)
}

// makeInstance makes n the node numbered id of stage s's instance in, and
// links it to the nodes of the stages before it that it names. It reads
// the graph and writes only n, so that the instances of a stage can be
// made at once. It returns what it found wrong (a reference to an
// instance that does not exist, and that reference's range), and whether
// n's each object is a new one for g.eaches (eachValue).
func (g *Graph) makeInstance(n *Node, id int, s *dsl.Stage, kind stages.Kind, r *stageRefs, in dsl.Instance, waiting bool) (diags hcl.Diagnostics, bad []hcl.Range, freshEach bool) {
	*n = Node{ID: id, Addr: dsl.InstanceAddress(s.Name, in), Stage: s, Kind: kind, Inst: in, refs: r}
	if waiting {
		n.Addr, n.waiting = addrs.Wildcard(s.Name).String(), true
		n.each = cty.ObjectVal(map[string]cty.Value{"key": cty.UnknownVal(cty.String), "value": cty.DynamicVal})
	} else if in.Keyed {
		n.each, freshEach = g.eachValue(in)
	}
	var deps []int
	var seen map[int]bool
	// addDep keeps deps free of duplicates: a linear scan while short,
	// a set once a stage-wide reference made it long.
	addDep := func(id int) {
		if len(deps) < 16 {
			if slices.Contains(deps, id) {
				return
			}
			deps = append(deps, id)
			return
		}
		if seen == nil {
			seen = make(map[int]bool, len(deps)+1)
			for _, d := range deps {
				seen[d] = true
			}
		}
		if !seen[id] {
			seen[id] = true
			deps = append(deps, id)
		}
	}
	ectx := g.eachContext(n)
	// link resolves one reference to the nodes it names.
	link := func(ref dsl.Ref, add func(int)) {
		if ref.Name == s.Name {
			return // a stage's reference to itself, which loading refused
		}
		ups := g.StageNodes[ref.Name]
		if g.Waiting[ref.Name] != "" || waiting && (ref.SameKey || ref.KeyExpr != nil) {
			// Which instance is meant waits for values: depend on
			// every one there is.
			for _, u := range ups {
				add(u.ID)
			}
			return
		}
		var key string
		var keyed bool
		if ref.SameKey {
			if in.Keyed && g.Config.StageMap[ref.Name].ForEach != nil {
				key, keyed = in.Key, true
			}
		} else {
			key, keyed = refKey(ref, in, ectx)
		}
		if !keyed {
			for _, u := range ups {
				add(u.ID)
			}
			return
		}
		addr := addrs.Instance(ref.Name, key).String()
		u, ok := g.ByAddr[addr]
		if !ok {
			diags = append(diags, noInstance(g, ref, key))
			bad = append(bad, ref.Range)
			return
		}
		add(u.ID)
		if ref.SameKey {
			n.eachFrom = u
		}
	}
	for _, ref := range r.upstream {
		link(ref, addDep)
	}
	// wait_for and postconditions: what no keyed reference named
	// already orders only.
	var order []int
	for _, refs := range [2][]dsl.Ref{r.waitFor, r.judges} {
		for _, ref := range refs {
			link(ref, func(id int) {
				had := len(deps)
				if addDep(id); len(deps) > had {
					order = append(order, id)
				}
			})
		}
	}
	sort.Ints(order)
	n.OrderOnly = order
	sort.Ints(deps)
	n.Deps = deps
	return diags, bad, freshEach
}

// refKey is the key of the instance a stage reference names from
// instance in: its static key (stage.x["k"]), in's own (stage.x[each.key])
// or its key expression's value in the context ctx gives (stage.x[var.k]).
// keyed is false where it names no one instance (stage.x, iterated), or
// none known yet (a key made of values not known).
func refKey(ref dsl.Ref, in dsl.Instance, ctx func() *hcl.EvalContext) (key string, keyed bool) {
	switch {
	case ref.KeyExpr == nil:
		return ref.Key, ref.HasKey
	case isEachKey(ref.KeyExpr):
		return in.Key, true
	}
	kv, kd := ref.KeyExpr.Value(ctx())
	if !kd.HasErrors() && kv.IsKnown() && !kv.IsNull() && kv.Type().Equals(cty.String) && !kv.IsMarked() {
		return kv.AsString(), true
	}
	return "", false
}

// eachContext gives the context n's expressions are evaluated in before
// anything runs (variables, locals and n's each), made when first asked
// for: most nodes never need it.
func (g *Graph) eachContext(n *Node) func() *hcl.EvalContext {
	var ctx *hcl.EvalContext
	return func() *hcl.EvalContext {
		if ctx == nil {
			ctx = g.Scope.Context(map[string]cty.Value{"each": n.each})
		}
		return ctx
	}
}

// isEachKey reports whether e is the expression each.key.
func isEachKey(e hcl.Expression) bool {
	t, d := hcl.AbsTraversalForExpr(e)
	if d.HasErrors() || len(t) != 2 || t.RootName() != "each" {
		return false
	}
	a, ok := t[1].(hcl.TraverseAttr)
	return ok && a.Name == "key"
}

// forEach is a stage's for_each, expanded (see dsl.ExpandForEach).
type forEach struct {
	insts []dsl.Instance
	known bool
	diags hcl.Diagnostics
}

// forEachOf is dsl.ExpandForEach of a stage, evaluated once a stage (build
// asks whether it is known before expanding it) and shared by the stages
// whose for_each is the same variable or local (for_each = local.ids):
// that value is the same for every stage, and expanding a set sorts it
// (cty orders a set's elements each time they are iterated, comparing cty
// values: the most of a grid's plan before).
func (g *Graph) forEachOf(s *dsl.Stage) *forEach {
	if fe, ok := g.expanded[s.Name]; ok {
		return fe
	}
	key, shared := sharedForEach(s.ForEach)
	fe := g.forEaches[key]
	if !shared || fe == nil {
		objs := map[string]cty.Value{}
		for _, ref := range g.refs[s.Name].forEach {
			if ref.Root == "stage" {
				objs[ref.Name] = g.planStageObject(ref.Name)
			}
		}
		extra := map[string]cty.Value{}
		if len(objs) > 0 {
			extra["stage"] = cty.ObjectVal(objs)
		}
		fe = &forEach{}
		fe.insts, fe.known, fe.diags = dsl.ExpandForEach(s, g.Scope.Context(extra))
		if len(objs) > 0 && !fe.known && len(fe.diags) == 0 && !isWholeStage(s.ForEach) && len(g.unset) == 0 {
			// Known keys, values made of another stage's results:
			// each.value would be known only after apply.
			fe.known = true
			fe.diags = hcl.Diagnostics{{
				Severity: hcl.DiagError, Summary: "Invalid for_each",
				Detail:  "The for_each values depend on stage results, which are known only after apply; for_each, keys and values, must be known at plan time. Iterate the stage's instances (for_each = stage.NAME) and read each.value.result in the attributes instead.",
				Subject: s.ForEach.Range().Ptr(),
			}}
		}
		if shared && len(fe.diags) == 0 {
			if g.forEaches == nil {
				g.forEaches = map[string]*forEach{}
			}
			g.forEaches[key] = fe
		}
	}
	if g.expanded == nil {
		g.expanded = map[string]*forEach{}
	}
	g.expanded[s.Name] = fe
	return fe
}

// sharedForEach names a for_each that is a variable or a local, or an
// attribute of one (local.grid.ids), by its traversal: its value is the
// same wherever it is written.
func sharedForEach(e hcl.Expression) (string, bool) {
	st, ok := e.(*hclsyntax.ScopeTraversalExpr)
	if !ok || len(st.Traversal) < 2 {
		return "", false
	}
	var b strings.Builder
	for i, step := range st.Traversal {
		switch t := step.(type) {
		case hcl.TraverseRoot:
			if i != 0 || (t.Name != "local" && t.Name != "var") {
				return "", false
			}
			b.WriteString(t.Name)
		case hcl.TraverseAttr:
			b.WriteByte('.')
			b.WriteString(t.Name)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// eachValue is dsl.EachValue, shared between instances whose value is
// their key (for_each over a list or set of strings): stages iterating the
// same keys then hold one each object per key.
// It reads g.eaches only: fresh says the value is a new one to share,
// which the caller adds.
func (g *Graph) eachValue(in dsl.Instance) (each cty.Value, fresh bool) {
	v := in.Value
	if v == cty.NilVal || v.IsMarked() || !v.IsKnown() || v.IsNull() || v.Type() != cty.String || v.AsString() != in.Key {
		return dsl.EachValue(in), false
	}
	if e, ok := g.eaches[in.Key]; ok {
		return e, false
	}
	return dsl.EachValue(in), true
}

func noInstance(g *Graph, ref dsl.Ref, key string) *hcl.Diagnostic {
	var keys []string
	for _, n := range g.StageNodes[ref.Name] {
		if n.Inst.Keyed {
			keys = append(keys, n.Inst.Key)
		}
	}
	stage := addrs.Stage(ref.Name)
	detail := fmt.Sprintf("%s has no instance %q.", stage, key)
	if len(keys) == 0 {
		detail = fmt.Sprintf("%s has no for_each, so it has no instance %q; refer to it as %s.", stage, key, stage)
	} else if s := dsl.Suggest(key, keys); s != "" {
		detail += fmt.Sprintf(" Did you mean %q?", s)
	} else if len(keys) <= 10 {
		detail += " Its instances: " + strings.Join(keys, ", ") + "."
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to undeclared stage instance", Detail: detail, Subject: ref.Range.Ptr()}
}

// planStageObject is the value of stage.NAME before anything ran: instance
// keys and paths known, results unknown.
func (g *Graph) planStageObject(name string) cty.Value {
	if g.Waiting[name] != "" {
		return cty.DynamicVal // its instances wait for values
	}
	nodes := g.StageNodes[name]
	st := g.Config.StageMap[name]
	if st.ForEach == nil {
		if len(nodes) == 0 {
			return cty.DynamicVal
		}
		return UnknownInstance(nodes[0])
	}
	m := make(map[string]cty.Value, len(nodes))
	for _, n := range nodes {
		m[n.Inst.Key] = UnknownInstance(n)
	}
	return cty.ObjectVal(m)
}

// InstanceAttrs are the attributes of a stage instance object
// (stage.NAME[KEY].ATTR and self.ATTR).
var InstanceAttrs = dsl.InstanceAttrs

// UnknownInstance is a node's instance object before it runs: its key and
// each value, the rest unknown. The value is made once per node.
func UnknownInstance(n *Node) cty.Value {
	n.unknownOnce.Do(func() { n.unknown = unknownInstance(n) })
	return n.unknown
}

// unknownInstancePC identifies UnknownInstance among instance functions.
var unknownInstancePC = reflect.ValueOf(UnknownInstance).Pointer()

// isUnknownInstance reports whether inst is UnknownInstance.
func isUnknownInstance(inst instanceFunc) bool {
	return inst != nil && reflect.ValueOf(inst).Pointer() == unknownInstancePC
}

// unknownOne is the object of one keyed instance, { KEY = its
// UnknownInstance }: stage.NAME in the context of a node that reads one
// instance of NAME, made once for every node reading it (the 3,744 nodes
// of seed 002's grid read the same few model servers').
func unknownOne(n *Node) cty.Value {
	n.unknownOneOnce.Do(func() {
		n.unknownOne = cty.ObjectVal(map[string]cty.Value{n.Inst.Key: UnknownInstance(n)})
	})
	return n.unknownOne
}

func unknownInstance(n *Node) cty.Value {
	attrs := lendValues()
	defer giveValues(attrs)
	for _, a := range InstanceAttrs {
		attrs[a] = cty.DynamicVal
	}
	attrs["key"] = cty.StringVal(n.Inst.Key)
	if n.waiting {
		attrs["key"] = cty.UnknownVal(cty.String)
	}
	if n.Inst.Value != cty.NilVal {
		attrs["value"] = n.Inst.Value
	} else {
		attrs["value"] = cty.NullVal(cty.DynamicPseudoType)
	}
	return cty.ObjectVal(attrs)
}

// sharedAttr is the value of a stage attribute that is the same in every
// instance, evaluated once (attrValue).
type sharedAttr struct {
	once sync.Once
	v    cty.Value
	ok   bool // evaluated without diagnostics: every instance takes v
}

// sameInEveryInstance reports whether an attribute's expression, whose
// references are refs, evaluates to the same value in every instance of
// its stage and at every moment of a run: it refers to variables, locals
// and path only (no each, self or stage), and calls no function that
// reads the workspace (an upstream node may write what file() reads).
func sameInEveryInstance(refs []dsl.Ref, e hcl.Expression) bool {
	for _, ref := range refs {
		switch ref.Root {
		case "var", "local", "path":
		default:
			return false
		}
	}
	return !dsl.ReadsWorkspace(e)
}
