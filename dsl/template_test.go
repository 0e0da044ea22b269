package dsl

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
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
		case plainTemplate, textTemplate:
		default:
			t.Fatalf("%s: bound to a %T, not a template of text and references", src, bound)
		}
		got, gotDiags := bound.Value(ctx)
		if !got.RawEquals(want) {
			t.Errorf("%s: got %#v, want %#v", src, got, want)
		}
		if len(gotDiags) != len(wantDiags) {
			t.Errorf("%s: got diagnostics %v, want %v", src, gotDiags, wantDiags)
			continue
		}
		for i := range gotDiags {
			if gotDiags[i].Summary != wantDiags[i].Summary || gotDiags[i].Detail != wantDiags[i].Detail || *gotDiags[i].Subject != *wantDiags[i].Subject {
				t.Errorf("%s: got diagnostic %v, want %v", src, gotDiags[i], wantDiags[i])
			}
		}
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
}
