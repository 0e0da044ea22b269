// Package engine turns a decoded pipeline into a DAG of nodes (stage
// instances), computes node keys, plans, and applies: cache, journal,
// locks, scheduling and executors.
package engine

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dominikbraun/graph"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/stages"
)

// Node is one stage instance.
type Node struct {
	ID    int
	Addr  string
	Stage *dsl.Stage
	Kind  stages.Kind
	Inst  dsl.Instance
	// Deps are the IDs of the nodes this one depends on, sorted.
	Deps []int
	// Downs are the IDs of the nodes that depend on this one.
	Downs []int
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
	paths     *pathChecker
}

// stageRefs are the references found in one stage's expressions.
type stageRefs struct {
	forEach []dsl.Ref
	body    []dsl.Ref // attributes, after, kind blocks
	checks  []dsl.Ref // postconditions (self allowed)
}

func (r *stageRefs) all() []dsl.Ref {
	out := append([]dsl.Ref{}, r.forEach...)
	out = append(out, r.body...)
	return append(out, r.checks...)
}

// CheckReferences reports unknown references and dependency cycles
// without evaluating anything.
func CheckReferences(cfg *dsl.Config) hcl.Diagnostics {
	g := &Graph{Config: cfg, StageDeps: map[string][]string{}, refs: map[string]*stageRefs{}}
	diags := g.linkStages()
	_, d := g.orderStages()
	return append(diags, d...)
}

// linkStages collects every stage's references and its stage-level
// dependencies.
func (g *Graph) linkStages() hcl.Diagnostics {
	var diags hcl.Diagnostics
	cfg := g.Config
	for _, s := range cfg.Stages {
		r, d := collectRefs(cfg, s)
		diags = append(diags, d...)
		g.refs[s.Name] = r
		seen := map[string]bool{}
		for _, ref := range r.all() {
			if ref.Root == "stage" && !seen[ref.Name] && ref.Name != s.Name {
				if _, ok := cfg.StageMap[ref.Name]; ok {
					seen[ref.Name] = true
					g.StageDeps[s.Name] = append(g.StageDeps[s.Name], ref.Name)
				}
			}
		}
		sort.Strings(g.StageDeps[s.Name])
	}
	return diags
}

// Build expands every stage's for_each and links the nodes. It reports
// every problem at once: unknown references, dependency cycles (naming each
// stage on the cycle with its position), bad for_each values.
func Build(cfg *dsl.Config, scope *dsl.Scope, root string) (*Graph, hcl.Diagnostics) {
	g := &Graph{
		Config: cfg, Scope: scope, Root: root,
		ByAddr:     map[string]*Node{},
		StageNodes: map[string][]*Node{},
		StageDeps:  map[string][]string{},
		refs:       map[string]*stageRefs{},
	}
	diags := g.linkStages()
	if diags.HasErrors() {
		// Cycles are worth reporting alongside reference errors.
		if _, d := g.orderStages(); d.HasErrors() {
			diags = append(diags, d...)
		}
		return nil, diags
	}
	order, d := g.orderStages()
	diags = append(diags, d...)
	if d.HasErrors() {
		return nil, diags
	}
	g.StageOrder = order
	for _, s := range order {
		diags = append(diags, g.expand(s)...)
	}
	if diags.HasErrors() {
		return nil, diags
	}
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
	rc := dsl.RefContext{Stage: s, AllowEach: s.ForEach != nil}
	add := func(dst *[]dsl.Ref, e hcl.Expression, rc dsl.RefContext) {
		refs, d := dsl.References(e)
		diags = append(diags, d...)
		diags = append(diags, cfg.CheckRefs(refs, rc)...)
		*dst = append(*dst, refs...)
	}
	if s.ForEach != nil {
		add(&r.forEach, s.ForEach, dsl.RefContext{Stage: s})
		for _, ref := range r.forEach {
			if ref.Root == "stage" && (ref.HasKey || ref.KeyExpr != nil) {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError, Summary: "Invalid for_each",
					Detail:  "for_each may iterate over another stage's instances (for_each = stage.NAME), but not over one instance's results: results are known only after apply.",
					Subject: ref.Range.Ptr(),
				})
			}
		}
	}
	for _, e := range s.After {
		before := len(r.body)
		add(&r.body, e, rc)
		isRef := len(r.body) == before+1 && r.body[before].Root == "stage"
		if !isRef {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError, Summary: "Invalid after",
				Detail:  "Each element of after must be a stage reference: stage.NAME (all its instances) or stage.NAME[\"KEY\"] (one instance).",
				Subject: e.Range().Ptr(),
			})
		}
	}
	names := make([]string, 0, len(s.Attrs))
	for n := range s.Attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		add(&r.body, s.Attrs[n].Expr, rc)
	}
	for _, b := range s.KindBlocks {
		for _, e := range bodyExprs(b.Body) {
			add(&r.body, e, rc)
		}
	}
	crc := rc
	crc.AllowSelf = true
	for _, c := range s.Postconditions {
		add(&r.checks, c.Condition, crc)
		add(&r.checks, c.ErrorMessage, crc)
	}
	return r, diags
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
			parts = append(parts, fmt.Sprintf("stage.%s (%s)", n, dsl.Pos(cfg.StageMap[n].NameRange)))
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Dependency cycle",
			Detail:   "These stages depend on each other in a cycle: " + strings.Join(parts, " -> ") + ". Remove one of the references or after entries.",
			Subject:  cfg.StageMap[cycle[0]].NameRange.Ptr(),
		})
	}
	if diags.HasErrors() {
		return nil, diags
	}
	// Depth-first post-order in declaration order: deterministic and O(V+E).
	state := make(map[string]uint8, len(cfg.Stages))
	order := make([]*dsl.Stage, 0, len(cfg.Stages))
	var visit func(n string)
	visit = func(n string) {
		if state[n] != 0 {
			return
		}
		state[n] = 1
		for _, d := range g.StageDeps[n] {
			visit(d)
		}
		state[n] = 2
		order = append(order, cfg.StageMap[n])
	}
	for _, s := range cfg.Stages {
		visit(s.Name)
	}
	return order, nil
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

// expand evaluates a stage's for_each and adds its nodes with their
// dependencies.
func (g *Graph) expand(s *dsl.Stage) hcl.Diagnostics {
	kind, _ := stages.Lookup(s.Kind)
	r := g.refs[s.Name]
	var diags hcl.Diagnostics
	var extra map[string]cty.Value
	if s.ForEach != nil {
		extra = map[string]cty.Value{}
		objs := map[string]cty.Value{}
		for _, ref := range r.forEach {
			if ref.Root == "stage" {
				objs[ref.Name] = g.planStageObject(ref.Name)
			}
		}
		if len(objs) > 0 {
			extra["stage"] = cty.ObjectVal(objs)
		}
	}
	insts, d := dsl.ExpandForEach(s, g.Scope.Context(extra))
	diags = append(diags, d...)
	if d.HasErrors() {
		return diags
	}
	for _, in := range insts {
		n := &Node{ID: len(g.Nodes), Addr: dsl.InstanceAddress(s.Name, in), Stage: s, Kind: kind, Inst: in}
		deps := map[int]bool{}
		var ectx *hcl.EvalContext
		for _, ref := range r.all() {
			if ref.Root != "stage" || ref.Name == s.Name {
				continue
			}
			ups := g.StageNodes[ref.Name]
			key, keyed := ref.Key, ref.HasKey
			if ref.KeyExpr != nil {
				if ectx == nil {
					ectx = g.Scope.Context(map[string]cty.Value{"each": dsl.EachValue(in)})
				}
				kv, kd := ref.KeyExpr.Value(ectx)
				if !kd.HasErrors() && kv.IsKnown() && !kv.IsNull() && kv.Type().Equals(cty.String) && !kv.IsMarked() {
					key, keyed = kv.AsString(), true
				}
			}
			if !keyed {
				for _, u := range ups {
					deps[u.ID] = true
				}
				continue
			}
			addr := fmt.Sprintf("stage.%s[%q]", ref.Name, key)
			u, ok := g.ByAddr[addr]
			if !ok {
				diags = append(diags, noInstance(g, ref, key))
				continue
			}
			deps[u.ID] = true
		}
		for id := range deps {
			n.Deps = append(n.Deps, id)
		}
		sort.Ints(n.Deps)
		g.Nodes = append(g.Nodes, n)
		g.ByAddr[n.Addr] = n
		g.StageNodes[s.Name] = append(g.StageNodes[s.Name], n)
	}
	return diags
}

func noInstance(g *Graph, ref dsl.Ref, key string) *hcl.Diagnostic {
	var keys []string
	for _, n := range g.StageNodes[ref.Name] {
		if n.Inst.Keyed {
			keys = append(keys, n.Inst.Key)
		}
	}
	detail := fmt.Sprintf("stage.%s has no instance %q.", ref.Name, key)
	if len(keys) == 0 {
		detail = fmt.Sprintf("stage.%s has no for_each, so it has no instance %q; refer to it as stage.%s.", ref.Name, key, ref.Name)
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
	nodes := g.StageNodes[name]
	st := g.Config.StageMap[name]
	if st.ForEach == nil {
		if len(nodes) == 0 {
			return cty.DynamicVal
		}
		return unknownInstance(nodes[0])
	}
	m := make(map[string]cty.Value, len(nodes))
	for _, n := range nodes {
		m[n.Inst.Key] = unknownInstance(n)
	}
	return cty.ObjectVal(m)
}

// InstanceAttrs are the attributes of a stage instance object
// (stage.NAME[KEY].ATTR and self.ATTR).
var InstanceAttrs = []string{
	"key", "value", "result", "status", "class", "message", "exit_code",
	"duration_s", "peak_rss_mib", "peak_gpu_mib", "key_digest",
}

func unknownInstance(n *Node) cty.Value {
	attrs := map[string]cty.Value{}
	for _, a := range InstanceAttrs {
		attrs[a] = cty.DynamicVal
	}
	attrs["key"] = cty.StringVal(n.Inst.Key)
	if n.Inst.Value != cty.NilVal {
		attrs["value"] = n.Inst.Value
	} else {
		attrs["value"] = cty.NullVal(cty.DynamicPseudoType)
	}
	return cty.ObjectVal(attrs)
}
