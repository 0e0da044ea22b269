package dsl

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/dominikbraun/graph"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/cairn-run/cairn/dsl/addrs"
)

// Scope holds the values known before any stage runs.
type Scope struct {
	Vars   map[string]cty.Value
	Locals map[string]cty.Value
	Path   cty.Value
	Funcs  map[string]function.Function

	varObj, localObj cty.Value
	// pool is what is left of MaxTotalIterations to this scope's
	// evaluations.
	pool *atomic.Int64
	// base holds var, local, path and the functions; every context is a
	// child of it, so that a node's context is one small map.
	base *hcl.EvalContext
}

// NewScope builds a scope; root is the workspace root, dir the pipeline's
// folder. Its file functions note what they read in reads (nil: nowhere);
// funcs are the functions the language does not define (see Loader.Funcs).
func NewScope(vars map[string]cty.Value, root, dir string, reads *FileReads, funcs map[string]FileFunc) *Scope {
	pool := &atomic.Int64{}
	pool.Store(MaxTotalIterations)
	return &Scope{
		pool:   pool,
		Vars:   vars,
		Locals: map[string]cty.Value{},
		Path:   cty.ObjectVal(map[string]cty.Value{"pipeline": cty.StringVal(dir), "root": cty.StringVal(root)}),
		Funcs:  FunctionsReading(root, reads, funcs),
	}
}

// Context returns an evaluation context with var, local and path, plus the
// extra variables given (each, stage, self).
func (s *Scope) Context(extra map[string]cty.Value) *hcl.EvalContext {
	vars := make(map[string]cty.Value, len(extra)+1)
	for k, v := range extra {
		vars[k] = v
	}
	return s.ContextOf(vars)
}

// ContextOf is Context, with vars (each, stage, self) as the context's own
// variables: the map is the context's from then on, not copied.
func (s *Scope) ContextOf(vars map[string]cty.Value) *hcl.EvalContext {
	if s.varObj == cty.NilVal {
		s.varObj = cty.ObjectVal(s.Vars)
		s.base = nil
	}
	if s.localObj == cty.NilVal {
		s.localObj = cty.ObjectVal(s.Locals)
		s.base = nil
	}
	if s.base == nil {
		s.base = &hcl.EvalContext{
			Variables: map[string]cty.Value{"var": s.varObj, "local": s.localObj, "path": s.Path},
			Functions: s.Funcs,
		}
	}
	if vars == nil {
		vars = map[string]cty.Value{}
	}
	// Each context has its own iteration budget.
	vars[budgetName] = newBudget(s.pool)
	ctx := s.base.NewChild()
	ctx.Variables = vars
	return ctx
}

// EvalLocals evaluates every local value in dependency order. Locals may
// refer to variables, other locals and path; a cycle among them is an error
// naming every local on it.
//
// After an error, every local that could not be evaluated is unknown, so
// that expressions using it evaluate to unknown instead of reporting it
// again.
func (c *Config) EvalLocals(s *Scope) hcl.Diagnostics {
	diags := c.evalLocals(s)
	for _, n := range c.LocalOrd {
		if _, ok := s.Locals[n]; !ok {
			s.Locals[n] = cty.DynamicVal
		}
	}
	s.localObj = cty.NilVal
	return diags
}

func (c *Config) evalLocals(s *Scope) hcl.Diagnostics {
	var diags hcl.Diagnostics
	n := len(c.LocalOrd)
	index := make(map[string]int, n)
	for i, name := range c.LocalOrd {
		index[name] = i
	}
	// deps[i] are the locals local i refers to; bad[i] is set when one
	// of its references is wrong, so that it is not evaluated.
	deps := make([][]int, n)
	bad := make([]bool, n)
	for i, name := range c.LocalOrd {
		l := c.Locals[name]
		refs, d := References(l.Expr)
		d = append(d, c.CheckRefs(refs, RefContext{})...)
		for _, r := range refs {
			switch r.Root {
			case "local":
				j, ok := index[r.Name]
				if !ok {
					continue
				}
				if j == i {
					d = append(d, &hcl.Diagnostic{
						Severity: hcl.DiagError, Summary: "Local value refers to itself",
						Detail: fmt.Sprintf("local.%s cannot be defined in terms of itself.", name), Subject: r.Range.Ptr(),
					})
					continue
				}
				deps[i] = append(deps[i], j)
			case "stage":
				d = append(d, &hcl.Diagnostic{
					Severity: hcl.DiagError, Summary: "Stage reference in a local value",
					Detail:  "Local values are evaluated before any stage runs, so they cannot refer to stages. Refer to the stage inside the stage that needs it.",
					Subject: r.Range.Ptr(),
				})
			}
		}
		bad[i] = d.HasErrors()
		diags = append(diags, d...)
	}
	order, ok := localOrder(deps, nil)
	if !ok {
		// Report every cycle, each once, naming its members in
		// declaration order; the others are still evaluated.
		d, inCycle := c.localCycles(deps)
		diags = append(diags, d...)
		for i := range bad {
			bad[i] = bad[i] || inCycle[i]
		}
		order, _ = localOrder(deps, inCycle)
	}
	// Each local is evaluated with only the locals it refers to: building
	// the object of every local for each of them would cost time
	// quadratic in their number.
	for _, i := range order {
		name := c.LocalOrd[i]
		for _, j := range deps[i] {
			bad[i] = bad[i] || bad[j]
		}
		if bad[i] {
			// Unknown: what uses it is not reported again.
			s.Locals[name] = cty.DynamicVal
			continue
		}
		used := make(map[string]cty.Value, len(deps[i]))
		for _, j := range deps[i] {
			used[c.LocalOrd[j]] = s.Locals[c.LocalOrd[j]]
		}
		v, d := c.Locals[name].Expr.Value(s.localContext(used))
		diags = append(diags, d...)
		if d.HasErrors() {
			v = cty.DynamicVal
		}
		s.Locals[name] = v
	}
	return diags
}

// localContext is the context one local value is evaluated in: var, path,
// the functions, and the locals given.
func (s *Scope) localContext(locals map[string]cty.Value) *hcl.EvalContext {
	if s.varObj == cty.NilVal {
		s.varObj = cty.ObjectVal(s.Vars)
		s.base = nil
	}
	return &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": s.varObj, "local": cty.ObjectVal(locals), "path": s.Path, budgetName: newBudget(s.pool)},
		Functions: s.Funcs,
	}
}

// localOrder orders locals so that each comes after those it refers to:
// a depth-first post-order in declaration order, O(locals + references).
// The locals marked skip (nil: none) are left out. ok is false when it
// meets a cycle.
func localOrder(deps [][]int, skip []bool) (order []int, ok bool) {
	state := make([]uint8, len(deps)) // 0 new, 1 on the path, 2 done
	order = make([]int, 0, len(deps))
	ok = true
	// An explicit stack: a chain of thousands of locals must not recurse
	// once per link.
	type frame struct{ node, next int }
	var stack []frame
	for root := range deps {
		if state[root] != 0 || skip != nil && skip[root] {
			continue
		}
		stack = append(stack[:0], frame{node: root})
		state[root] = 1
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next < len(deps[top.node]) {
				d := deps[top.node][top.next]
				top.next++
				switch {
				case skip != nil && skip[d]:
				case state[d] == 1:
					ok = false
				case state[d] == 0:
					state[d] = 1
					stack = append(stack, frame{node: d})
				}
				continue
			}
			state[top.node] = 2
			order = append(order, top.node)
			stack = stack[:len(stack)-1]
		}
	}
	return order, ok
}

// localCycles reports each cycle among locals once, with its members in
// declaration order, and marks every local on one.
func (c *Config) localCycles(deps [][]int) (hcl.Diagnostics, []bool) {
	// Vertices are numbered from 1: the graph library loses a vertex 0
	// from its components.
	g := graph.New(graph.IntHash, graph.Directed())
	for i := range deps {
		_ = g.AddVertex(i + 1)
	}
	for i, ds := range deps {
		for _, d := range ds {
			_ = g.AddEdge(d+1, i+1)
		}
	}
	inCycle := make([]bool, len(deps))
	sccs, err := graph.StronglyConnectedComponents(g)
	if err != nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot order local values", Detail: err.Error()}}, inCycle
	}
	var diags hcl.Diagnostics
	for _, scc := range sccs {
		if len(scc) < 2 {
			continue
		}
		sort.Ints(scc)
		var parts []string
		for k := range scc {
			scc[k]--
		}
		for _, i := range scc {
			inCycle[i] = true
			name := c.LocalOrd[i]
			parts = append(parts, fmt.Sprintf("local.%s (%s)", name, Pos(c.Locals[name].DeclRange)))
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError, Summary: "Cycle among local values",
			Detail:  "These local values refer to each other in a cycle: " + strings.Join(parts, " -> ") + ".",
			Subject: c.Locals[c.LocalOrd[scc[0]]].DeclRange.Ptr(),
		})
	}
	return diags, inCycle
}

// Instance is one expansion of a stage's for_each.
type Instance struct {
	Key   string
	Value cty.Value
	// Keyed is false for a stage without for_each (one instance, no key).
	Keyed bool
}

// ExpandForEach evaluates a stage's for_each with ctx and returns its
// instances in order: a list keeps its order, a map or set sorts by key.
// known is whether the value is wholly known (cty's IsWhollyKnown), true
// when it failed to evaluate: a set's elements are iterated once for both,
// and cty sorts a set each time it is iterated. When it is not known, the
// diagnostics say why for_each cannot be expanded yet.
func ExpandForEach(s *Stage, ctx *hcl.EvalContext) (insts []Instance, known bool, diags hcl.Diagnostics) {
	if s.ForEach == nil {
		return []Instance{{}}, true, nil
	}
	v, diags := s.ForEach.Value(ctx)
	if diags.HasErrors() {
		return nil, true, diags
	}
	known = true
	bad := func(detail string) ([]Instance, bool, hcl.Diagnostics) {
		return nil, known, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError, Summary: "Invalid for_each", Detail: detail,
			Subject: s.ForEach.Range().Ptr(), Expression: s.ForEach, EvalContext: ctx,
		})
	}
	if v.IsMarked() {
		known = v.IsWhollyKnown()
		return bad("for_each must not use sensitive values: instance keys appear in plan output and addresses.")
	}
	if !v.IsKnown() {
		known = false
		return bad("The for_each value depends on results that are known only after apply. for_each must be known at plan time: use variables, locals or another stage's instances, not its results.")
	}
	if v.IsNull() {
		return bad("for_each must not be null.")
	}
	ty := v.Type()
	var out []Instance
	seen := map[string]bool{}
	add := func(k string, val cty.Value) bool {
		if seen[k] {
			return false
		}
		seen[k] = true
		out = append(out, Instance{Key: k, Value: val, Keyed: true})
		return true
	}
	switch {
	case ty.IsMapType() || ty.IsObjectType():
		known = v.IsWhollyKnown()
		keys := make([]string, 0, v.LengthInt())
		vals := map[string]cty.Value{}
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			keys = append(keys, k.AsString())
			vals[k.AsString()] = ev
		}
		sort.Strings(keys)
		for _, k := range keys {
			add(k, vals[k])
		}
	case ty.IsSetType() || ty.IsListType() || ty.IsTupleType():
		if keys, ok := SetStrings(v); ok {
			// Known strings, each once: the set's order is theirs.
			for _, k := range keys {
				add(k, cty.StringVal(k))
			}
			return out, known, diags
		}
		// One pass over the elements (iterating a set sorts it): an
		// element known only after apply is reported before one of
		// another type, wherever each is.
		keys := make([]string, 0, v.LengthInt())
		var notString cty.Type
		for ev := range Elements(v) {
			switch {
			case !ev.IsWhollyKnown():
				known = false
			case notString != cty.NilType:
			case !ev.Type().Equals(cty.String) || ev.IsNull():
				notString = ev.Type()
			default:
				keys = append(keys, ev.AsString())
			}
		}
		if !known {
			return bad("The for_each value holds elements known only after apply; its keys must be known at plan time.")
		}
		if notString != cty.NilType {
			return bad(fmt.Sprintf("A list or set for_each must hold strings (the instance keys); found %s. Use a map to attach other values to keys.", notString.FriendlyName()))
		}
		if ty.IsSetType() {
			sort.Strings(keys)
		}
		for _, k := range keys {
			if !add(k, cty.StringVal(k)) {
				return bad(fmt.Sprintf("The for_each list holds %q more than once; instance keys must be unique.", k))
			}
		}
	default:
		return bad(fmt.Sprintf("for_each takes a map, a set of strings or a list of strings; got %s.", ty.FriendlyName()))
	}
	return out, known, diags
}

// InstanceAddress formats a node address: stage.NAME or stage.NAME["KEY"].
func InstanceAddress(stage string, in Instance) string {
	if !in.Keyed {
		return addrs.Stage(stage).String()
	}
	return addrs.Instance(stage, in.Key).String()
}

// EachValue is the each object of an instance.
func EachValue(in Instance) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(in.Key), "value": in.Value})
}
