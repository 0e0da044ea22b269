package dsl

import (
	"runtime"
	"sync/atomic"

	"github.com/cairn-run/cairn/dsl/par"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// parallelForMin is the number of elements from which a for expression's
// elements are evaluated on every core: a grid's locals (seed 002's job
// specs, a setproduct of ids) evaluate hundreds to thousands of elements
// one after the other before any node can be planned.
var parallelForMin = 256

// parallelFors counts the for expressions evaluated in chunks (for tests).
var parallelFors atomic.Int64

// parallelFor evaluates e over coll, a known collection, in chunks of
// consecutive elements, one for expression over each chunk, on every
// core, and joins their results in order: the value hcl gives for the
// whole collection. ok is false, and nothing is charged to the budget,
// where the result could differ or where something is to be reported
// (any diagnostic, a duplicate key across chunks, marks, an unknown
// result): the caller then evaluates the whole collection as always, so
// errors read as they do without chunks.
//
// The elements keep their keys where the for expression can see them: a
// map's or object's chunks are maps or objects; a list's, tuple's or
// set's are tuples, used only where the expression names no key (a
// tuple's keys are its indexes).
func (e *boundedFor) parallelFor(ctx *hcl.EvalContext, coll cty.Value, b *iterBudget) (cty.Value, bool) {
	if runtime.GOMAXPROCS(0) < 2 || coll.IsMarked() || !coll.IsKnown() || coll.IsNull() || !coll.CanIterateElements() {
		return cty.NilVal, false
	}
	n := coll.LengthInt()
	ty := coll.Type()
	keyed := ty.IsMapType() || ty.IsObjectType()
	if n < parallelForMin || !keyed && e.KeyVar != "" {
		return cty.NilVal, false
	}
	chunks := chunksOf(coll, keyed, ty.IsMapType(), 4*runtime.GOMAXPROCS(0))
	// The chunks charge a budget of their own, a copy of this one: one
	// that goes over reports it, and the whole evaluation is then made
	// again against the real budget, which reports it the same way.
	var pool atomic.Int64
	pool.Store(1 << 62)
	if b.pool != nil {
		pool.Store(b.pool.Load())
	}
	own := &iterBudget{pool: &pool}
	left := b.left.Load()
	own.left.Store(left)
	chunkCtx := ctx.NewChild()
	chunkCtx.Variables = map[string]cty.Value{budgetName: cty.CapsuleVal(budgetType, own)}
	results := make([]cty.Value, len(chunks))
	failed := make([]bool, len(chunks))
	par.Chunks(len(chunks), 1, 2, func(i int) {
		fe := *e.ForExpr
		fe.CollExpr = &hclsyntax.LiteralValueExpr{Val: chunks[i], SrcRange: e.CollExpr.Range()}
		v, d := fe.Value(chunkCtx)
		results[i], failed[i] = v, len(d) > 0 || v.IsMarked() || !v.IsKnown() || v.IsNull()
	})
	for _, f := range failed {
		if f {
			return cty.NilVal, false
		}
	}
	v, ok := joinFor(results, e.KeyExpr != nil, e.Group)
	if !ok {
		return cty.NilVal, false
	}
	parallelFors.Add(1)
	used := left - own.left.Load()
	b.left.Add(-used)
	if b.pool != nil {
		b.pool.Add(-used)
	}
	return v, true
}

// chunksOf splits coll's elements, in iteration order, into about parts
// collections of consecutive elements: objects or maps of their keys
// where keyed, tuples of their values otherwise.
func chunksOf(coll cty.Value, keyed, isMap bool, parts int) []cty.Value {
	n := coll.LengthInt()
	size := (n + parts - 1) / parts
	out := make([]cty.Value, 0, parts)
	var vals []cty.Value
	var attrs map[string]cty.Value
	flush := func() {
		switch {
		case !keyed:
			out = append(out, cty.TupleVal(vals))
			vals = nil
		case isMap:
			out = append(out, cty.MapVal(attrs))
			attrs = nil
		default:
			out = append(out, cty.ObjectVal(attrs))
			attrs = nil
		}
	}
	i := 0
	for it := coll.ElementIterator(); it.Next(); i++ {
		k, v := it.Element()
		if keyed {
			if attrs == nil {
				attrs = make(map[string]cty.Value, size)
			}
			attrs[k.AsString()] = v
		} else {
			vals = append(vals, v)
		}
		if (i+1)%size == 0 {
			flush()
		}
	}
	if i%size != 0 {
		flush()
	}
	return out
}

// joinFor joins the results of a for expression over consecutive chunks
// into its result over them all: tuples end to end; objects merged, a
// key made twice refused (ok false: hcl reports it); grouped objects
// merged key by key, each key's values in element order.
func joinFor(results []cty.Value, object, group bool) (cty.Value, bool) {
	if !object {
		var all []cty.Value
		for _, r := range results {
			all = append(all, r.AsValueSlice()...)
		}
		return cty.TupleVal(all), true
	}
	merged := map[string]cty.Value{}
	var groups map[string][]cty.Value
	if group {
		groups = map[string][]cty.Value{}
	}
	for _, r := range results {
		for k, v := range r.AsValueMap() {
			if group {
				groups[k] = append(groups[k], v.AsValueSlice()...)
				continue
			}
			if _, twice := merged[k]; twice {
				return cty.NilVal, false
			}
			merged[k] = v
		}
	}
	for k, vs := range groups {
		merged[k] = cty.TupleVal(vs)
	}
	return cty.ObjectVal(merged), true
}
