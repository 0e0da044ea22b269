package dsl

import (
	"fmt"
	"math/big"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

// A template of literal text and references, or of text only (a quoted
// string), evaluates as hcl's TemplateExpr does, whatever the references hold: strings (NFC
// normalised as a whole), numbers and bools (converted), sensitive,
// unknown and null values, and references to nothing.
func TestPlainTemplateIsTemplateExprs(t *testing.T) {
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{
		"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal("k7"), "value": cty.StringVal("v")}),
		"v": cty.ObjectVal(map[string]cty.Value{
			"s":       cty.StringVal("out/x"),
			"empty":   cty.StringVal(""),
			"accent":  cty.StringVal("\u0301"), // a combining accent: "e" + it is one character
			"n":       cty.NumberIntVal(42),
			"neg":     cty.NumberIntVal(-7),
			"zero":    cty.NumberIntVal(0),
			"big":     cty.MustParseNumberVal("123456789012345678901234567890"),
			"e20":     cty.MustParseNumberVal("1e20"),
			"seed":    cty.MustParseNumberVal("2"),
			"f60":     cty.NumberFloatVal(1 << 60),
			"f":       cty.NumberFloatVal(0.5),
			"b":       cty.True,
			"secret":  cty.StringVal("pw").Mark("sensitive"),
			"unknown": cty.UnknownVal(cty.String),
			"dyn":     cty.DynamicVal,
			"null":    cty.NullVal(cty.String),
			"list":    cty.ListVal([]cty.Value{cty.StringVal("a")}),
		}),
	}}
	templates := []string{
		`"echo ${each.key} > out/l0_${each.key}"`,
		`"${each.key}${each.value}"`,
		`"${v.s}/${v.empty}/"`,
		`"e${v.accent}"`,
		`"n=${v.n} f=${v.f} b=${v.b}"`,
		`"${v.s}/${v.seed}/${v.neg}/${v.zero}/${v.n}"`,
		`"${v.big} ${v.e20} ${v.f60}"`,
		`"pw=${v.secret}"`,
		`"prefix-${v.unknown}-${each.key}"`,
		`"prefix-${v.dyn}"`,
		`"x${v.null}"`,
		`"x${v.list}"`,
		`"x${v.missing}"`,
		`"x${nothing.here}"`,
		`"out/c5"`,
		`""`,
		`"e\u0301 and $${not.a.reference}"`,
		"<<EOT\nline one\n  line two\nEOT\n",
	}
	for _, src := range templates {
		expr, diags := hclsyntax.ParseExpression([]byte(src), "t.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", src, diags.Error())
		}
		tmpl, ok := expr.(*hclsyntax.TemplateExpr)
		if !ok {
			t.Fatalf("%s: parsed as %T, not a template", src, expr)
		}
		want, wantDiags := tmpl.Value(ctx)
		bound := boundExpr(tmpl)
		switch bound.(type) {
		case plainTemplate, *textTemplate:
		default:
			t.Fatalf("%s: bound to a %T, not a template of text and references", src, bound)
		}
		got, gotDiags := bound.Value(ctx)
		sameResult(t, src, got, gotDiags, want, wantDiags)
	}
}

// intText writes a whole number as the conversion to a string does,
// whatever the number's precision, and declines the others.
func TestIntTextIsText(t *testing.T) {
	var nums []*big.Float
	for _, s := range []string{"0", "1", "-1", "2", "42", "-7", "1000", "1e18", "9223372036854775807",
		"-9223372036854775808", "9223372036854775808", "1e20", "0.5", "-0.5", "1.5", "123456789012345678901234567890"} {
		nums = append(nums, cty.MustParseNumberVal(s).AsBigFloat())
	}
	for _, v := range []int64{1 << 60, 1<<53 + 1, 1<<62 + 1<<10, -(1 << 62), 999999999999, 3} {
		for _, prec := range []uint{1, 2, 8, 24, 53, 64, 512} {
			nums = append(nums, new(big.Float).SetPrec(prec).SetInt64(v))
		}
	}
	negZero := new(big.Float).Neg(new(big.Float))
	nums = append(nums, negZero, cty.NumberFloatVal(1<<60).AsBigFloat(), cty.NumberIntVal(-3).AsBigFloat())
	for _, f := range []*big.Float{cty.MustParseNumberVal("2").AsBigFloat(), cty.NumberIntVal(-3).AsBigFloat(), cty.NumberFloatVal(1 << 40).AsBigFloat()} {
		if _, ok := intText(f); !ok {
			t.Errorf("intText declined %s", f.Text('f', -1))
		}
	}
	for _, f := range nums {
		want := f.Text('f', -1)
		if got, ok := intText(f); ok {
			if got != want {
				t.Errorf("intText(%s at precision %d) = %q, want %q", want, f.Prec(), got, want)
			}
		}
	}
	if _, ok := intText(negZero); ok {
		t.Errorf("intText wrote -0")
	}
}

// Evaluating a template of text and references allocates its result
// only: TemplateExpr.Value makes a buffer, a map of marks and a converted
// value for each part.
func TestPlainTemplateAllocatesItsResultOnly(t *testing.T) {
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{
		"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal("k7")}),
	}}
	expr, _ := hclsyntax.ParseExpression([]byte(`"echo l0_${each.key} > out/l0_${each.key}"`), "t.hcl", hcl.InitialPos)
	bound := boundExpr(expr.(hclsyntax.Expression))
	allocs := testing.AllocsPerRun(50, func() { _, _ = bound.Value(ctx) })
	if allocs > 2 {
		t.Errorf("a template of text and references made %.0f allocations an evaluation, want at most 2 (its text and its value)", allocs)
	}
}

// A whole number in a template (a grid's seed in its job's key) is
// written without the conversion's decimal expansion: the number read
// (a copy of its big.Float), its text, the result's text and its value.
func TestPlainTemplateWritesWholeNumbers(t *testing.T) {
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{
		"j": cty.ObjectVal(map[string]cty.Value{"method": cty.StringVal("gepa"), "seed": cty.MustParseNumberVal("12")}),
	}}
	expr, _ := hclsyntax.ParseExpression([]byte(`"${j.method}/${j.seed}"`), "t.hcl", hcl.InitialPos)
	bound := boundExpr(expr.(hclsyntax.Expression))
	if v, _ := bound.Value(ctx); v.AsString() != "gepa/12" {
		t.Fatalf("got %#v", v)
	}
	allocs := testing.AllocsPerRun(50, func() { _, _ = bound.Value(ctx) })
	if allocs > 4 {
		t.Errorf("a template with a whole number made %.0f allocations an evaluation, want at most 4", allocs)
	}
}

// A quoted string's value is made once: evaluating it allocates nothing,
// and References finds nothing in it without a walk.
func TestTextTemplateIsMadeOnce(t *testing.T) {
	expr, _ := hclsyntax.ParseExpression([]byte(`"echo c5 > out/c5"`), "t.hcl", hcl.InitialPos)
	bound := boundExpr(expr.(hclsyntax.Expression))
	if v, _ := bound.Value(nil); v != cty.StringVal("echo c5 > out/c5") {
		t.Fatalf("got %#v", v)
	}
	if allocs := testing.AllocsPerRun(50, func() { _, _ = bound.Value(nil) }); allocs > 0 {
		t.Errorf("a quoted string made %.0f allocations an evaluation, want none", allocs)
	}
	if !constant(bound) {
		t.Errorf("a quoted string is not taken for a constant")
	}
	// Its value is its one part's: the wrapper is all the file's reading
	// allocates for it.
	tmpl := expr.(*hclsyntax.TemplateExpr)
	if allocs := testing.AllocsPerRun(50, func() { boundTemplate(tmpl) }); allocs > 1 {
		t.Errorf("reading a quoted string made %.0f allocations, want 1", allocs)
	}
}

// sameExprAt reports whether a diagnostic's expression is of the kind
// written at the same place, not a stand-in.
func sameExprAt(got, want hcl.Expression) bool {
	return want != nil && got.Range() == want.Range() && fmt.Sprintf("%T", got) == fmt.Sprintf("%T", want)
}

// sameResult reports where a bound expression's value and diagnostics
// (got) differ from the syntax tree's own (want): the value, and each
// diagnostic's severity, text, ranges and expression.
func sameResult(t *testing.T, src string, got cty.Value, gotDiags hcl.Diagnostics, want cty.Value, wantDiags hcl.Diagnostics) {
	t.Helper()
	if !got.RawEquals(want) {
		t.Errorf("%s: got %#v, want %#v", src, got, want)
	}
	if len(gotDiags) != len(wantDiags) {
		t.Errorf("%s: got diagnostics %v, want %v", src, gotDiags, wantDiags)
		return
	}
	for i, g := range gotDiags {
		w := wantDiags[i]
		if g.Severity != w.Severity || g.Summary != w.Summary || g.Detail != w.Detail || fmt.Sprint(g.Subject) != fmt.Sprint(w.Subject) || fmt.Sprint(g.Context) != fmt.Sprint(w.Context) {
			t.Errorf("%s: got diagnostic %v, want %v", src, g, w)
		}
		if g.Expression != nil && !sameExprAt(g.Expression, w.Expression) {
			t.Errorf("%s: diagnostic %q names a %T at %s, want a %T at %s", src, g.Summary, g.Expression, g.Expression.Range(), w.Expression, w.Expression.Range())
		}
	}
}

// A reference alone is read as hcl reads it, diagnostics included,
// whatever it meets on the way: objects, maps, lists, unknown, marked,
// null or missing values, a name in an outer context, no context at all.
func TestExprValueIsValue(t *testing.T) {
	outer := &hcl.EvalContext{Variables: map[string]cty.Value{
		"local": cty.ObjectVal(map[string]cty.Value{"grid": cty.ObjectVal(map[string]cty.Value{
			"models":   cty.MapVal(map[string]cty.Value{"qwen": cty.StringVal("Qwen/Qwen3.5-9B")}),
			"seeds":    cty.TupleVal([]cty.Value{cty.NumberIntVal(0), cty.NumberIntVal(1)}),
			"pair":     cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.ListVal([]cty.Value{cty.NumberIntVal(3), cty.NumberIntVal(4)})}),
			"marked":   cty.ListVal([]cty.Value{cty.StringVal("x").Mark("sensitive")}),
			"unknowns": cty.ListVal([]cty.Value{cty.UnknownVal(cty.String), cty.StringVal("y")}),
		})}),
		"each": cty.StringVal("shadowed"),
	}}
	ctx := outer.NewChild()
	ctx.Variables = map[string]cty.Value{
		"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal("k"), "value": cty.ObjectVal(map[string]cty.Value{
			"out":     cty.StringVal("runs/gepa/1"),
			"seed":    cty.NumberIntVal(1),
			"split":   cty.ObjectVal(map[string]cty.Value{"val": cty.StringVal("val.jsonl")}),
			"secret":  cty.StringVal("pw").Mark("sensitive"),
			"hidden":  cty.ObjectVal(map[string]cty.Value{"x": cty.True}).Mark("sensitive"),
			"unknown": cty.UnknownVal(cty.Object(map[string]cty.Type{"x": cty.String})),
			"nested":  cty.UnknownVal(cty.Object(map[string]cty.Type{"o": cty.Object(map[string]cty.Type{"x": cty.Number}), "d": cty.DynamicPseudoType})).RefineNotNull(),
			"inside":  cty.ObjectVal(map[string]cty.Value{"dyn": cty.DynamicVal, "secret": cty.UnknownVal(cty.Object(map[string]cty.Type{"x": cty.String})).Mark("sensitive")}),
			"dyn":     cty.DynamicVal,
			"null":    cty.NullVal(cty.Object(map[string]cty.Type{"x": cty.String})),
			"list":    cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"x": cty.True})}),
		})}),
	}
	for _, src := range []string{
		"each.key", "each.value", "each.value.out", "each.value.seed", "each.value.split.val", "each.value.secret",
		"each.value.hidden.x", "each.value.unknown.x", "each.value.dyn.x", "each.value.null.x", "each.value.list.x",
		"each.value.missing", "each.value.out.x", "local.grid.models.qwen", "local.grid.models.llama", "local.grid.seeds",
		"local.grid.seeds[1]", "each.value.list[0].x", "nothing.here", "each", "local",
		"local.grid.seeds[0]", "local.grid.seeds[2]", "local.grid.seeds[-1]", "local.grid.seeds[0.5]", "local.grid.seeds[1e30]",
		"local.grid.seeds[\"1\"]", "each.value.list[0]", "each.value.list[1]", "each.value.list[0].y", "each.value.split[0]",
		"local.grid.models[0]", "each.value.unknown[0]", "each.value.null[0]", "each.value.dyn[0]", "each.value.secret[0]",
		"local.grid.pair[1][0]", "local.grid.pair[1][1]", "local.grid.pair[1][2]", "local.grid.marked[0]", "local.grid.unknowns[0]",
		"local.grid.unknowns[1]", "local.grid.pair[1]",
		"each.value.unknown.y", "each.value.unknown.x.y", "each.value.dyn.x.y.z", "each.value.nested.o", "each.value.nested.o.x",
		"each.value.nested.o.y", "each.value.nested.d.anything", "each.value.nested.o.x.y", "each.value.inside.dyn.a.b",
		"each.value.inside.secret.x", "each.value.nested.o[0]", "each.value.dyn[0].x",
	} {
		e, diags := hclsyntax.ParseExpression([]byte(src), "r.hcl", hcl.InitialPos)
		require.False(t, diags.HasErrors(), src)
		for _, c := range []*hcl.EvalContext{ctx, outer, nil} {
			want, wantDiags := e.Value(c)
			got, gotDiags := ExprValue(e, c)
			sameResult(t, src, got, gotDiags, want, wantDiags)
		}
	}
	e, _ := hclsyntax.ParseExpression([]byte("each.value.split.val"), "r.hcl", hcl.InitialPos)
	// hcl's traversal makes 4: its steps' copies.
	if allocs := testing.AllocsPerRun(20, func() { _, _ = ExprValue(e, ctx) }); allocs > 0 {
		t.Errorf("reading each.value.split.val made %.0f allocations, want none", allocs)
	}
}
