package dsl

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

// An index expression, bound, evaluates as hcl's: the same value and the
// same diagnostics, whatever its collection and key are (maps, objects,
// lists, tuples, sets, unknown, marked and null values, keys of the wrong
// type, missing keys), in a context, an outer one or none.
func TestIndexedIsIndexExpr(t *testing.T) {
	outer := &hcl.EvalContext{Variables: map[string]cty.Value{
		"local": cty.ObjectVal(map[string]cty.Value{
			"models":  cty.MapVal(map[string]cty.Value{"qwen": cty.StringVal("Qwen/Qwen3.5-9B"), "llama": cty.StringVal("L")}),
			"methods": cty.ObjectVal(map[string]cty.Value{"gepa": cty.ObjectVal(map[string]cty.Value{"cells": cty.ListVal([]cty.Value{cty.StringVal("c1")})})}),
			"seeds":   cty.TupleVal([]cty.Value{cty.NumberIntVal(0), cty.StringVal("one")}),
			"list":    cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
			"set":     cty.SetVal([]cty.Value{cty.StringVal("a")}),
			"marked":  cty.MapVal(map[string]cty.Value{"qwen": cty.StringVal("x")}).Mark("sensitive"),
			"unknown": cty.UnknownVal(cty.Map(cty.String)),
			"null":    cty.NullVal(cty.Map(cty.String)),
			"dyn":     cty.DynamicVal,
		}),
	}}
	ctx := outer.NewChild()
	ctx.Variables = map[string]cty.Value{
		"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal("qwen"), "value": cty.ObjectVal(map[string]cty.Value{
			"model":   cty.StringVal("qwen"),
			"method":  cty.StringVal("gepa"),
			"i":       cty.NumberIntVal(1),
			"half":    cty.NumberFloatVal(0.5),
			"secret":  cty.StringVal("qwen").Mark("sensitive"),
			"unknown": cty.UnknownVal(cty.String),
			"null":    cty.NullVal(cty.String),
			"list":    cty.ListVal([]cty.Value{cty.StringVal("qwen")}),
		})}),
	}
	for _, src := range []string{
		"local.models[each.value.model]", "local.models[each.key]", "local.models[each.value.method]",
		"local.methods[each.value.method]", "local.methods[each.value.method].cells", "local.methods[each.value.model]",
		"local.seeds[each.value.i]", "local.seeds[each.value.i - 1]", "local.seeds[each.value.half]", "local.seeds[each.value.model]",
		"local.list[each.value.i]", "local.list[each.value.i + 1]", "local.list[each.value.model]", "local.set[each.value.i]",
		"local.marked[each.key]", "local.models[each.value.secret]", "local.unknown[each.key]", "local.models[each.value.unknown]",
		"local.null[each.key]", "local.models[each.value.null]", "local.dyn[each.key]", "local.models[each.value.list]",
		"local.models[each.value.missing]", "nothing[each.key]", "local.models[nothing]", "[local.models[each.key], local.list[each.value.i]]",
		"local.models[local.list[each.value.i - 1] == \"a\" ? each.key : \"llama\"]", "local.models[\"${each.key}\"]",
		"{ m = local.methods[each.value.method].cells[0] }", "local.seeds[each.value.i][0]",
		"nothing[nothing]", "local.list[each.value.i][each.key]",
	} {
		boundIsPlain(t, src, ctx, outer, nil)
	}

	// It is bound, and reads its collection without hcl's traversal.
	plain, _ := hclsyntax.ParseExpression([]byte("local.models[each.value.model]"), "r.hcl", hcl.InitialPos)
	bound, _ := hclsyntax.ParseExpression([]byte("local.models[each.value.model]"), "r.hcl", hcl.InitialPos)
	bound = boundExpr(bound)
	ix, ok := IndexExprOf(bound)
	require.True(t, ok)
	require.IsType(t, indexed{}, bound)
	require.Same(t, ix.Collection, bound.(indexed).Collection)
	hclAllocs := testing.AllocsPerRun(20, func() { _, _ = plain.Value(ctx) })
	allocs := testing.AllocsPerRun(20, func() { _, _ = bound.Value(ctx) })
	if allocs >= hclAllocs {
		t.Errorf("a bound index made %.0f allocations, hcl's %.0f: want fewer", allocs, hclAllocs)
	}
}

// A traversal after an index or a call is read as hcl reads it,
// diagnostics included, whatever its steps meet: objects, maps, lists,
// tuples, unknown, marked, null or missing values, no context at all.
func TestRelTraversalIsRelativeTraversalExpr(t *testing.T) {
	outer := &hcl.EvalContext{Variables: map[string]cty.Value{
		"local": cty.ObjectVal(map[string]cty.Value{
			"methods": cty.ObjectVal(map[string]cty.Value{
				"gepa":    cty.ObjectVal(map[string]cty.Value{"command": cty.ListVal([]cty.Value{cty.StringVal("run")}), "cells": cty.TupleVal([]cty.Value{cty.StringVal("c1"), cty.ObjectVal(map[string]cty.Value{"x": cty.True})})}),
				"secret":  cty.ObjectVal(map[string]cty.Value{"command": cty.StringVal("pw")}).Mark("sensitive"),
				"unknown": cty.UnknownVal(cty.Object(map[string]cty.Type{"command": cty.String})),
				"null":    cty.NullVal(cty.Object(map[string]cty.Type{"command": cty.String})),
				"dyn":     cty.DynamicVal,
			}),
			"models": cty.MapVal(map[string]cty.Value{"qwen": cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("Q")})}),
		}),
	}}
	outer.Functions = Functions("", nil)
	ctx := outer.NewChild()
	ctx.Variables = map[string]cty.Value{
		"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal("gepa"), "value": cty.StringVal("qwen")}),
	}
	for _, src := range []string{
		"local.methods[each.key].command", "local.methods[each.key].cells[0]", "local.methods[each.key].cells[1].x",
		"local.methods[each.key].cells[2]", "local.methods[each.key].cells[1].y", "local.methods[each.key].missing",
		"local.methods[\"secret\"].command", "local.methods[\"unknown\"].command", "local.methods[\"null\"].command",
		"local.methods[\"dyn\"].command", "local.methods[each.value].command", "local.models[each.value].id",
		"local.models[each.value].id.x", "local.models[each.key].id", "upper(each.key).x", "tolist([\"a\"])[0]",
		"local.methods[each.key].command[0]", "local.methods[each.key].command[1]", "nothing[each.key].x",
		"local.methods[each.key].cells[*]", "local.methods[each.key].cells[\"0\"]",
	} {
		boundIsPlain(t, src, ctx, outer, nil)
	}
	bound, _ := hclsyntax.ParseExpression([]byte("local.methods[each.key].command"), "r.hcl", hcl.InitialPos)
	bound = boundExpr(bound)
	require.IsType(t, relTraversal{}, bound)
	rt, ok := RelTraversalOf(bound)
	require.True(t, ok)
	require.IsType(t, indexed{}, rt.Source)
	// Static analysis reads it as hcl's: a traversal where the source is
	// one (stage.x[0].result), none otherwise.
	for _, src := range []string{"local.methods[each.key].command", "upper(each.key).x"} {
		plain, _ := hclsyntax.ParseExpression([]byte(src), "r.hcl", hcl.InitialPos)
		bound, _ := hclsyntax.ParseExpression([]byte(src), "r.hcl", hcl.InitialPos)
		bound = boundExpr(bound)
		want, wantDiags := hcl.AbsTraversalForExpr(plain)
		got, gotDiags := hcl.AbsTraversalForExpr(bound)
		require.Equal(t, len(wantDiags), len(gotDiags), src)
		require.Equal(t, len(want), len(got), src)
	}
	require.Len(t, bound.Variables(), 2, "local and each")
}

// boundIsPlain checks that src, bound as a file's expressions are, gives
// in each context what hcl's own syntax tree gives: the value, the
// diagnostics, and the expression and context they name.
func boundIsPlain(t *testing.T, src string, ctxs ...*hcl.EvalContext) {
	t.Helper()
	plain, diags := hclsyntax.ParseExpression([]byte(src), "r.hcl", hcl.InitialPos)
	require.False(t, diags.HasErrors(), src)
	bound, diags := hclsyntax.ParseExpression([]byte(src), "r.hcl", hcl.InitialPos)
	require.False(t, diags.HasErrors(), src)
	bound = boundExpr(bound)
	for _, c := range ctxs {
		want, wantDiags := plain.Value(c)
		got, gotDiags := bound.Value(c)
		sameResult(t, src, got, gotDiags, want, wantDiags)
		for i := range min(len(gotDiags), len(wantDiags)) {
			if (gotDiags[i].Expression == nil) != (wantDiags[i].Expression == nil) || gotDiags[i].EvalContext != wantDiags[i].EvalContext {
				t.Errorf("%s: diagnostic %q names expression %v in context %p, want %v in %p", src, gotDiags[i].Summary,
					gotDiags[i].Expression, gotDiags[i].EvalContext, wantDiags[i].Expression, wantDiags[i].EvalContext)
			}
		}
	}
}
