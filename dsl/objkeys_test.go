package dsl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

// evalBounded parses src as an expression, bounds it as the loader does,
// and evaluates it with var.k = "lr_1e3".
func evalBounded(t *testing.T, src string) (cty.Value, hcl.Diagnostics) {
	t.Helper()
	e, diags := hclsyntax.ParseExpression([]byte(src), "p.hcl", hcl.InitialPos)
	require.False(t, diags.HasErrors(), diags.Error())
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{
		"var": cty.ObjectVal(map[string]cty.Value{
			"k":      cty.StringVal("lr_1e3"),
			"secret": cty.StringVal("lr_1e3").Mark(SensitiveMark),
			"u":      cty.UnknownVal(cty.String),
		}),
	}}
	return boundExpr(e).Value(ctx)
}

// A key given twice in an object constructor is an error naming the key
// and both places, written as a literal or computed, and compared in NFC;
// HCL kept the last value without a word (a grid planned two nodes of
// three).
func TestDuplicateObjectKey(t *testing.T) {
	for _, tc := range []struct {
		src, key, first, again string
	}{
		{"{\n  lr_1e3 = 0.001\n  lr_1e4 = 0.0001\n  lr_1e3 = 0.01\n}", "lr_1e3", "p.hcl:2:3", "p.hcl:4:3"},
		{`{ lr_1e3 = 1, "lr_1e3" = 2 }`, "lr_1e3", "p.hcl:1:3", "p.hcl:1:15"},
		{`{ "caf\u00e9" = "nfc", "cafe\u0301" = "nfd" }`, "caf\u00e9", "p.hcl:1:3", "p.hcl:1:24"},
		{"{ 1 = \"a\", \"1\" = \"b\" }", "1", "p.hcl:1:3", "p.hcl:1:12"},
		{`{ lr_1e3 = 1, (var.k) = 2 }`, "lr_1e3", "p.hcl:1:3", "p.hcl:1:15"},
		{`{ "${var.k}" = 1, "lr_${"1e3"}" = 2 }`, "lr_1e3", "p.hcl:1:3", "p.hcl:1:19"},
		{`[for x in [1] : { a = x, b = 2, a = 3 }]`, "a", "p.hcl:1:19", "p.hcl:1:33"},
	} {
		v, diags := evalBounded(t, tc.src)
		require.True(t, diags.HasErrors(), "%s gave %#v", tc.src, v)
		d := diags.Errs()[0].(*hcl.Diagnostic)
		assert.Equal(t, "Duplicate object key", d.Summary, tc.src)
		assert.Contains(t, d.Detail, `"`+tc.key+`" is given twice`, tc.src)
		assert.Contains(t, d.Detail, "at "+tc.first+", and again at "+tc.again, tc.src)
		assert.Equal(t, tc.again, Pos(*d.Subject), tc.src)
	}
	// A sensitive key is not shown.
	_, diags := evalBounded(t, `{ (var.secret) = 1, lr_1e3 = 2 }`)
	require.True(t, diags.HasErrors())
	assert.Contains(t, diags.Error(), "A key (sensitive, so not shown) is given twice in this object: at p.hcl:1:3, and again at p.hcl:1:21.")
	assert.NotContains(t, diags.Error(), "lr_1e3")
	// Distinct keys make the object they always made.
	for src, want := range map[string]cty.Value{
		`{ a = 1, b = 2 }`:                cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(1), "b": cty.NumberIntVal(2)}),
		`{ (var.k) = 1, b = 2 }`:          cty.ObjectVal(map[string]cty.Value{"lr_1e3": cty.NumberIntVal(1), "b": cty.NumberIntVal(2)}),
		`{ "${var.k}x" = 1, lr_1e3 = 2 }`: cty.ObjectVal(map[string]cty.Value{"lr_1e3x": cty.NumberIntVal(1), "lr_1e3": cty.NumberIntVal(2)}),
		`{ (var.u) = 1, b = 2 }`:          cty.DynamicVal,
	} {
		v, diags := evalBounded(t, src)
		require.False(t, diags.HasErrors(), "%s: %s", src, diags.Error())
		assert.True(t, v.RawEquals(want), "%s: %#v", src, v)
	}
	// A key HCL refuses is still refused as HCL refuses it.
	_, diags = evalBounded(t, `{ (null) = 1, a = 2 }`)
	require.True(t, diags.HasErrors())
	assert.Contains(t, diags.Error(), "Null value as key")
}

// A large object's keys are checked as a small one's.
func TestDuplicateObjectKeyLarge(t *testing.T) {
	var b strings.Builder
	b.WriteString("{\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "  k%d = %d\n", i, i)
	}
	_, diags := evalBounded(t, b.String()+"}")
	require.False(t, diags.HasErrors(), diags.Error())
	_, diags = evalBounded(t, b.String()+"  k500 = 0\n  k7 = 0\n}")
	require.Len(t, diags, 2)
	assert.Contains(t, diags[0].Detail, `"k500" is given twice in this object: at p.hcl:502:3, and again at p.hcl:1002:3.`)
	assert.Contains(t, diags[1].Detail, `"k7" is given twice in this object: at p.hcl:9:3, and again at p.hcl:1003:3.`)
}
