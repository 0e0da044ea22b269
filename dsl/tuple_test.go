package dsl

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

// constructorContexts are contexts to evaluate tuple and object
// constructors in: an instance's (each) inside the pipeline's (local,
// var, a variable named like a key), the pipeline's alone, and none. The
// two that exist carry an iteration budget, as cairn's contexts do.
func constructorContexts() []*hcl.EvalContext {
	outer := &hcl.EvalContext{Variables: map[string]cty.Value{
		"local": cty.ObjectVal(map[string]cty.Value{
			"bundle":  cty.StringVal("bundles/seed/"),
			"models":  cty.MapVal(map[string]cty.Value{"qwen": cty.StringVal("Qwen/Qwen3.5-9B")}),
			"seeds":   cty.TupleVal([]cty.Value{cty.NumberIntVal(0), cty.StringVal("one")}),
			"marked":  cty.ListVal([]cty.Value{cty.StringVal("x").Mark("sensitive")}),
			"unknown": cty.UnknownVal(cty.List(cty.String)),
			"null":    cty.NullVal(cty.Object(map[string]cty.Type{"x": cty.String})),
		}),
		"var":      cty.ObjectVal(map[string]cty.Value{"worker": cty.StringVal("w.py"), "secret": cty.StringVal("pw").Mark("sensitive")}),
		"method":   cty.StringVal("a variable, not the key"),
		budgetName: newBudget(nil),
	}}
	outer.Functions = Functions("", nil)
	ctx := outer.NewChild()
	ctx.Variables = map[string]cty.Value{
		"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal("k"), "value": cty.ObjectVal(map[string]cty.Value{
			"out":     cty.StringVal("runs/gepa/1"),
			"split":   cty.ObjectVal(map[string]cty.Value{"val": cty.StringVal("val.jsonl")}),
			"unknown": cty.UnknownVal(cty.Object(map[string]cty.Type{"x": cty.String})),
			"dyn":     cty.DynamicVal,
		})}),
		budgetName: newBudget(nil),
	}
	return []*hcl.EvalContext{ctx, outer, nil}
}

// A tuple constructor is bound, and gives what hcl's gives, diagnostics
// included, whatever its elements meet: references through objects,
// maps, lists, unknown, marked, null or missing values, names in an outer
// context, no context at all, nested tuples, calls, templates, errors in
// several elements.
func TestTupleConsIsTupleConsExpr(t *testing.T) {
	ctxs := constructorContexts()
	for _, src := range []string{
		"[]", "[local.bundle]", "[var.worker, each.key, each.value.out]", "[each.value.split.val, 1, true, null]",
		"[local.models.qwen, local.models.llama]", "[local.seeds[0], local.seeds[1], local.seeds[2]]",
		"[var.secret, local.marked[0]]", "[local.unknown, each.value.unknown.x, each.value.dyn.x]",
		"[local.null.x, nothing.here, each.value.missing]", "[[local.bundle], [each.key, [var.worker]]]",
		"[\"${local.bundle}system.txt\", upper(each.key), length(local.seeds)]", "[each.value.split]",
		"[local.bundle, \"a\"][1]",
	} {
		boundIsPlain(t, src, ctxs...)
	}

	// It is bound, keeps hcl's elements, and reads them without hcl's
	// traversal, which puts a copy of the root and of each step on the
	// heap.
	const src = "[each.value.split.val, each.value.out]"
	plain, _ := hclsyntax.ParseExpression([]byte(src), "r.hcl", hcl.InitialPos)
	bound, _ := hclsyntax.ParseExpression([]byte(src), "r.hcl", hcl.InitialPos)
	bound = boundExpr(bound)
	require.IsType(t, tupleCons{}, bound)
	tc, ok := TupleConsOf(bound)
	require.True(t, ok)
	require.IsType(t, &hclsyntax.ScopeTraversalExpr{}, tc.Exprs[0])
	require.Len(t, bound.Variables(), 2)
	list, diags := hcl.ExprList(bound)
	require.False(t, diags.HasErrors())
	require.Len(t, list, 2)
	hclAllocs := testing.AllocsPerRun(20, func() { _, _ = plain.Value(ctxs[0]) })
	if allocs := testing.AllocsPerRun(20, func() { _, _ = bound.Value(ctxs[0]) }); allocs+5 > hclAllocs {
		t.Errorf("%s made %.0f allocations, hcl's %.0f: want 5 fewer at least (2 roots, 3 steps)", src, allocs, hclAllocs)
	}
}

// An object constructor whose keys are written as literals is bound, and
// gives what hcl's gives, diagnostics included: bare, quoted, number and
// bool keys, keys in and out of NFC, a key named like a variable, values
// through objects, maps, lists, unknown, marked, null or missing values,
// nested constructors, errors in several values.
func TestStaticObjectIsObjectConsExpr(t *testing.T) {
	ctxs := constructorContexts()
	for _, src := range []string{
		"{}", "{ method = each.key }", "{ method = each.key, seed = 1, out = each.value.out }",
		`{ "quoted key" = local.bundle, 1.50 = "a number", true = "a bool", "e\u0301" = "nfc" }`,
		"{ a = local.models.qwen, b = local.models.llama }", "{ a = var.secret, b = local.marked[0] }",
		"{ a = local.unknown, b = each.value.unknown.x, c = each.value.dyn.x }",
		"{ a = local.null.x, b = nothing.here, c = each.value.missing }",
		"{ split = { val = each.value.split[\"val\"] } }",
		"{ a = { b = [each.key, { c = var.worker }] } }", "{ a = upper(each.key), b = \"${local.bundle}x\" }",
		"{ method = method }", "{ a = each.value.split }.a.val",
	} {
		boundIsPlain(t, src, ctxs...)
	}

	bound, _ := hclsyntax.ParseExpression([]byte("{ method = each.key, out = each.value.out }"), "r.hcl", hcl.InitialPos)
	bound = boundExpr(bound)
	require.IsType(t, staticObject{}, bound)
	oc, ok := ObjectConsOf(bound)
	require.True(t, ok)
	require.Len(t, oc.Items, 2)
	require.Len(t, bound.Variables(), 2, "the keys are no references")
}
