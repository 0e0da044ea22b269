package dsl

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

// A bound function call gives what hcl's FunctionCallExpr gives, value
// and diagnostics (the expressions they name included), whether it is
// evaluated directly or hcl decides: calls that succeed, with unknown,
// marked, null and variadic arguments; arguments with errors, ones that do
// not convert, calls that fail, try and can, expanded arguments, unknown
// functions, wrong counts of arguments, no function table.
func TestCheckedCallIsFunctionCallExpr(t *testing.T) {
	vars := map[string]cty.Value{
		"local": cty.ObjectVal(map[string]cty.Value{
			"xs":      cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
			"nums":    cty.ListVal([]cty.Value{cty.NumberIntVal(3), cty.NumberIntVal(7)}),
			"obj":     cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(1), "s": cty.StringVal("x/y/z")}),
			"unk":     cty.UnknownVal(cty.String),
			"unklist": cty.UnknownVal(cty.List(cty.String)),
			"dyn":     cty.DynamicVal,
			"secret":  cty.StringVal("pw").Mark("sensitive"),
			"nul":     cty.NullVal(cty.String),
		}),
	}
	withFuncs := func() *hcl.EvalContext {
		return (&hcl.EvalContext{Variables: vars, Functions: Functions(".", nil)}).NewChild()
	}
	contexts := map[string]func() *hcl.EvalContext{
		"functions":    withFuncs,
		"no functions": func() *hcl.EvalContext { return &hcl.EvalContext{Variables: vars} },
		"nil":          func() *hcl.EvalContext { return nil },
	}
	for _, src := range []string{
		`upper("a")`, `join(",", local.xs)`, `merge(local.obj, { b = 2 })`, `concat(local.xs, ["c"])`,
		`length(local.xs)`, `split("/", local.obj.s)`, `tostring(1)`, `max(1, 2, 3)`, `format("%s-%d", "a", 1)`,
		`upper(local.unk)`, `length(local.unklist)`, `upper(local.dyn)`, `upper(local.secret)`, `join(",", [local.secret, "b"])`,
		`upper(local.nul)`, `upper(null)`, `upper(local.missing)`, `join(",", [for x in local.xs : x.nope])`,
		`upper({ a = 1 })`, `upper(local.xs)`, `tonumber("x")`, `element([], 0)`, `max("a", 1)`, `max()`,
		`try(local.missing, "d")`, `can(local.missing)`, `max(local.nums...)`, `max(local.xs...)`, `nosuch(1)`,
		`upper()`, `upper("a", "b")`, `upper(lower(local.missing))`, `format("%d", upper("x"))`,
		`concat(local.missing, local.nope)`, `merge(local.obj, local.missing, { c = upper(1) })`,
		`coalesce(local.nul, local.unk, "z")`, `length([for x in local.xs : upper(x)])`,
	} {
		e, diags := hclsyntax.ParseExpression([]byte(src), "c.hcl", hcl.InitialPos)
		require.False(t, diags.HasErrors(), src)
		bound := boundExpr(e)
		call, ok := bound.(checkedCall)
		require.True(t, ok, "%s: %T", src, bound)
		for name, ctx := range contexts {
			want, wantDiags := call.FunctionCallExpr.Value(ctx())
			got, gotDiags := call.call(ctx())
			sameResult(t, name+": "+src, got, gotDiags, want, wantDiags)
		}
	}
}

// The signatures kept are the language's own functions', made once and
// alike in every function table; a table's file functions and a kind's,
// made for each scope, are read at each call and never kept, however many
// scopes a process makes.
func TestCallSpecsAreTheLanguagesOwn(t *testing.T) {
	a, b := Functions("a", nil), Functions("b", nil)
	for _, name := range []string{"tostring", "toset", "merge", "length"} {
		require.True(t, a[name] == b[name], "%s: one function in every table", name)
		_, kept := callSpecs()[a[name]]
		require.True(t, kept, name)
	}
	require.False(t, a["file"] == b["file"], "file is made for each table's root")
	before := len(callSpecs())
	for range 100 {
		f := Functions(t.TempDir(), nil)["fileexists"]
		_, kept := callSpecs()[f]
		require.False(t, kept)
		require.Len(t, callSpecOf(f).params, 1)
	}
	require.Equal(t, before, len(callSpecs()))
}
