package dsl

import (
	"fmt"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// condContext is what the conditionals of TestTupleCondIsConditionalExpr
// see: a grid's one job and all its jobs, and values of every kind.
func condContext() *hcl.EvalContext {
	job := func(m string, seed int64) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"method": cty.StringVal(m), "seed": cty.NumberIntVal(seed)})
	}
	var all []cty.Value
	for i := range 40 {
		all = append(all, job(fmt.Sprintf("m%d", i%3), int64(i)))
	}
	var distinct []cty.Value
	for i := range maxCondElemTypes + 1 {
		distinct = append(distinct, cty.ObjectVal(map[string]cty.Value{fmt.Sprintf("a%d", i): cty.True}))
	}
	return &hcl.EvalContext{Variables: map[string]cty.Value{
		budgetName: newBudget(nil),
		"local": cty.ObjectVal(map[string]cty.Value{
			"one":      cty.TupleVal([]cty.Value{job("one", 0)}),
			"all":      cty.TupleVal(all),
			"empty":    cty.EmptyTupleVal,
			"distinct": cty.TupleVal(distinct),
			"marked":   cty.TupleVal([]cty.Value{cty.StringVal("pw").Mark("sensitive"), cty.StringVal("x")}),
			"markedt":  cty.TupleVal([]cty.Value{cty.StringVal("a")}).Mark("sensitive"),
			"unknowns": cty.TupleVal([]cty.Value{cty.UnknownVal(cty.String), cty.StringVal("x")}),
			"unknownt": cty.UnknownVal(cty.Tuple([]cty.Type{cty.String, cty.String})),
			"dyn":      cty.TupleVal([]cty.Value{cty.DynamicVal, cty.StringVal("x")}),
			"nulls":    cty.TupleVal([]cty.Value{cty.NullVal(cty.String), cty.StringVal("x")}),
			"nullt":    cty.NullVal(cty.Tuple([]cty.Type{cty.String})),
			"list":     cty.ListVal([]cty.Value{cty.StringVal("l")}),
		}),
		"var": cty.ObjectVal(map[string]cty.Value{
			"yes":     cty.True,
			"no":      cty.False,
			"unknown": cty.UnknownVal(cty.Bool),
			"null":    cty.NullVal(cty.Bool),
			"secret":  cty.True.Mark("sensitive"),
			"word":    cty.StringVal("true"),
			"n":       cty.NumberIntVal(1),
			"method":  cty.StringVal(""),
		}),
	}}
}

// A conditional over tuples of different lengths gives what
// ConditionalExpr.Value gives, its diagnostics included, whatever its
// condition and results: tupleCond's own unification or the general
// path.
func TestTupleCondIsConditionalExpr(t *testing.T) {
	ctx := condContext()
	var exprs []string
	for _, c := range []string{"var.yes", "var.no", `var.method != ""`, "var.unknown", "var.null", "var.secret", "var.word", "var.n", "nosuch.x"} {
		for _, pair := range [][2]string{
			{"local.one", "local.all"}, {"local.all", "local.one"}, {"local.empty", "local.all"},
			{`[1, "a"]`, "[2]"}, {"[1]", `[true, "yes", 3]`}, {`[{a = 1}]`, `[{a = 1}, {b = 2}]`},
			{`[{a = 1}]`, "[[1], [2]]"}, {"[[1], [1, 2]]", "[[3]]"}, {"local.distinct", "local.one"},
			{"local.marked", "[]"}, {"local.markedt", `["b", "c"]`}, {"local.unknowns", "[]"},
			{"local.unknownt", "[]"}, {"local.dyn", "[]"}, {"local.nulls", "[]"}, {"local.nullt", "[]"},
			{"local.list", `["a", "b"]`}, {"[nosuch.y]", "[1, 2]"}, {"[1, 2]", "[3, 4]"}, {"null", "[1]"},
			{`[for j in local.all : j.method]`, `["x"]`}, {"[1]", "{a = 1}"},
			{"[{a = [1]}]", "[{a = [2, 3]}, {a = [4]}]"}, {"[{a = [1]}, {a = [5]}]", "[{a = [2, 3]}]"},
			{"[local.list]", "[local.list, local.list]"}, {"[local.nullt]", "[]"}, {"[[]]", "[[], []]"},
			{`"a"`, "[1]"}, {"local.all", "1 + 1"}, {"{for j in local.all : j.method => j...}", "local.one"},
			{"[for j in local.all : j.method]", "local.empty"}, {"(local.one)", "local.all[*]"},
		} {
			exprs = append(exprs, fmt.Sprintf("%s ? %s : %s", c, pair[0], pair[1]))
		}
	}
	fast := 0
	for _, src := range exprs {
		parse := func() hclsyntax.Expression {
			expr, diags := hclsyntax.ParseExpression([]byte(src), "c.hcl", hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatalf("%s: %s", src, diags.Error())
			}
			return expr
		}
		plain := parse()
		want, wantDiags := plain.Value(ctx)
		expr := parse()
		cond, ok := expr.(*hclsyntax.ConditionalExpr)
		if !ok {
			t.Fatalf("%s: parsed as %T", src, expr)
		}
		bound := boundExpr(expr)
		if _, ok := bound.(tupleCond); !ok && (mayBeTuple(cond.TrueResult) && mayBeTuple(cond.FalseResult) || bound != expr) {
			t.Fatalf("%s: bound to a %T, not a tupleCond", src, bound)
		}
		tr, _ := cond.TrueResult.Value(ctx)
		fa, _ := cond.FalseResult.Value(ctx)
		c, _ := cond.Condition.Value(ctx)
		if _, ok := tuplesAsList(tr, fa, c); ok {
			fast++
		}
		got, gotDiags := bound.Value(ctx)
		sameResult(t, src, got, gotDiags, want, wantDiags)
	}
	if fast < 20 {
		t.Errorf("tuplesAsList decided %d of the %d conditionals, want the tuples of different lengths", fast, len(exprs))
	}
}

// Choosing between a grid's one job and its thousands of jobs unifies
// each distinct element type once: the general path sorts the types of
// all the jobs, allocating for each of them many times over.
func TestTupleCondUnifiesDistinctTypes(t *testing.T) {
	ctx := condContext()
	var all []cty.Value
	for i := range 2000 {
		all = append(all, cty.ObjectVal(map[string]cty.Value{"method": cty.StringVal("m"), "seed": cty.NumberIntVal(int64(i))}))
	}
	ctx.Variables["local"] = cty.ObjectVal(map[string]cty.Value{
		"one": cty.TupleVal(all[:1]),
		"all": cty.TupleVal(all),
	})
	expr, _ := hclsyntax.ParseExpression([]byte(`var.method != "" ? local.one : local.all`), "c.hcl", hcl.InitialPos)
	bound := boundExpr(expr)
	v, diags := bound.Value(ctx)
	if diags.HasErrors() || v.LengthInt() != 2000 || !v.Type().IsListType() {
		t.Fatalf("got %#v, %s", v.Type(), diags.Error())
	}
	allocs := testing.AllocsPerRun(5, func() { _, _ = bound.Value(ctx) })
	// The list of the jobs: about 2 allocations an element. Converting
	// the tuple to it (which unifies the types again) makes 5, unifying
	// the 2,001 types too 10.
	if allocs > 3*2000 {
		t.Errorf("the conditional made %.0f allocations, want at most %d", allocs, 3*2000)
	}
}
