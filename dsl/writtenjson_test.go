package dsl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

// WrittenJSON keeps the digits of the number literals a value is built
// from in the open, at any depth; a number computed is written as
// MarshalJSON writes it.
func TestWrittenJSONKeepsLiteralDigits(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{`1.50`, `1.50`},
		{`-0.10`, `-0.10`},
		{`(2.0e1)`, `2.0e1`},
		{`12345678901234567890`, `12345678901234567890`},
		{`{ id = "a", n = 1.50, m = 2.0e1, k = 3 }`, `{"id":"a","k":3,"m":2.0e1,"n":1.50}`},
		{`[{ "x y" = [1.0, { z = 0.50 }], t = true, s = null }]`, `[{"s":null,"t":true,"x y":[1.0,{"z":0.50}]}]`},
		// Computed: arithmetic, a call, a reference, a for expression.
		{`{ a = 1.50 * 1, b = max(1.50), c = var.n, d = [for x in [1.50] : x][0] }`, `{"a":1.5,"b":1.5,"c":2,"d":1.5}`},
		{`[for x in [1.50] : x]`, `[1.5]`},
		// A literal that is no JSON number.
		{`007`, `7`},
	} {
		// env: an attribute every stage has (the loader knows no kinds).
		src := "pipeline \"p\" {}\nstage \"command\" \"s\" {\n  env = " + c.expr + "\n}\n"
		cfg, diags := NewLoader(nil).ParseSource([]byte(src), filepath.Join(t.TempDir(), "p.hcl"))
		require.False(t, diags.HasErrors(), "%s", diags.Error())
		e := cfg.Stages[0].Attrs["env"].Expr
		ctx := &hcl.EvalContext{
			Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{"n": cty.NumberFloatVal(2.0)})},
			Functions: Functions(t.TempDir(), nil),
		}
		v, diags := ExprValue(e, ctx)
		require.False(t, diags.HasErrors(), "%s: %s", c.expr, diags.Error())
		got, err := WrittenJSON(e, v, cfg.Files[e.Range().Filename].Bytes)
		require.NoError(t, err, c.expr)
		assert.Equal(t, c.want, string(got), c.expr)
		plain, err := MarshalJSON(v, v.Type())
		require.NoError(t, err)
		got, err = WrittenJSON(e, v, nil)
		require.NoError(t, err)
		assert.Equal(t, string(plain), string(got), "%s: without the text, MarshalJSON", c.expr)
	}
}

// A file parsed in pieces (a large one) locates its literals in the file
// all the same.
func TestWrittenJSONInAFileParsedInPieces(t *testing.T) {
	a, b, c := splitParseMin, splitPieceMin, splitBlockMin
	t.Cleanup(func() { splitParseMin, splitPieceMin, splitBlockMin = a, b, c })
	splitParseMin, splitPieceMin, splitBlockMin = 1, 1, 1
	path := filepath.Join(t.TempDir(), "p.hcl")
	require.NoError(t, os.WriteFile(path, []byte(`pipeline "p" {}

stage "command" "a" {
  env = { x = 0.250 }
}

stage "command" "b" {
  env = { y = [1.0, -2.50e0] }
}
`), 0o644))
	cfg, diags := NewLoader(nil).Load(path)
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	want := map[string]string{"a": `{"x":0.250}`, "b": `{"y":[1.0,-2.50e0]}`}
	for _, st := range cfg.Stages {
		e := st.Attrs["env"].Expr
		v, diags := ExprValue(e, nil)
		require.False(t, diags.HasErrors())
		got, err := WrittenJSON(e, v, cfg.Files[e.Range().Filename].Bytes)
		require.NoError(t, err)
		assert.Equal(t, want[st.Name], string(got))
	}
}
