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
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// ctyDecode is go-cty's jsondecode of data: its implied type, then the
// value of that type.
func ctyDecode(data []byte) (cty.Value, error) {
	ty, err := ctyjson.ImpliedType(data)
	if err != nil {
		return cty.NilVal, err
	}
	return ctyjson.Unmarshal(data, ty)
}

// sameAsCty checks that decodeJSON gives go-cty's value of data, type and
// all, where it gives one; where it does not, go-cty decides.
func sameAsCty(t testing.TB, data []byte) (decided bool) {
	t.Helper()
	got, ok := decodeJSON(data)
	if !ok {
		return false
	}
	want, err := ctyDecode(data)
	require.NoError(t, err, "go-cty refuses %q, which decodeJSON decoded to %#v", data, got)
	require.True(t, got.Type().Equals(want.Type()), "%q: type %#v, go-cty's %#v", data, got.Type(), want.Type())
	require.True(t, got.RawEquals(want), "%q: %#v, go-cty's %#v", data, got, want)
	// Numbers keep go-cty's precision: a later division shows it.
	if got.Type().Equals(cty.Number) && !got.IsNull() {
		require.Equal(t, want.AsBigFloat().Prec(), got.AsBigFloat().Prec(), "%q: precision", data)
		three := cty.NumberIntVal(3)
		require.Zero(t, want.Divide(three).AsBigFloat().Cmp(got.Divide(three).AsBigFloat()), "%q divided by 3", data)
	}
	return true
}

// jsondecode builds go-cty's value for every kind of JSON value:
// objects and arrays nested, empty ones, null in them, numbers in every
// form (at go-cty's precision), strings with escapes, surrogate pairs,
// text NFC changes and invalid UTF-8.
func TestDecodeJSONAsCty(t *testing.T) {
	for _, in := range []string{
		`{"a": 1, "b": [true, false, null, "x"], "c": {"d": {}}, "e": []}`,
		`[]`, `{}`, `null`, `true`, `"s"`, `[null]`, `[[], {}]`,
		`0`, `-0`, `1.5`, `-12.25e-3`, `1E400`, `1e-400`, `123456789012345678901234567890`, `0.1`,
		` { "sp" :	[ 1 , 2 ]
		} `,
		`"tab\tnew\nline \u00e9 \ud83d\ude00 \" \\ \/"`,
		`"\ud800 lone surrogate"`,
		"\"e\u0301 composed by NFC\"",
		"\"invalid \xff\xfe UTF-8\"",
		`{"runs": {"r1": {"lr": 0.001, "seed": 1}, "r2": {"lr": 0.01, "seed": 2}}}`,
		`{"é": 1}`,
	} {
		assert.True(t, sameAsCty(t, []byte(in)), "%q: decodeJSON left it to go-cty", in)
	}
}

// Where go-cty decides, decodeJSON gives nothing: text that is not JSON
// (go-cty's errors, and JSONProblem's, say what is wrong), a property
// named twice (go-cty refuses it with two types, keeps the last with one),
// a name NFC changes.
func TestDecodeJSONLeavesToCty(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{"a": 1`, `{"a": NaN}`, "\xef\xbb\xbf{}", `1 2`, `[1,]`,
		`{"a": 1, "a": "x"}`, `{"a": 1, "a": 2}`,
		"{\"e\u0301\": 1}",
	} {
		_, ok := decodeJSON([]byte(in))
		assert.False(t, ok, "%q", in)
	}
}

// Through the language: jsondecode's value, its errors unchanged, and a
// grid of runs decoded as before.
func TestJSONDecodeFunction(t *testing.T) {
	eval := func(src string) (cty.Value, hcl.Diagnostics) {
		e, diags := hclsyntax.ParseExpression([]byte(src), "p.hcl", hcl.InitialPos)
		require.False(t, diags.HasErrors(), diags.Error())
		return e.Value(&hcl.EvalContext{Functions: Functions(t.TempDir(), nil)})
	}
	v, diags := eval(`jsondecode("{\"a\": [1, \"x\"], \"a2\": {\"b\": null}}")`)
	require.False(t, diags.HasErrors(), diags.Error())
	want, err := ctyDecode([]byte(`{"a": [1, "x"], "a2": {"b": null}}`))
	require.NoError(t, err)
	assert.True(t, v.RawEquals(want), "%#v", v)

	_, diags = eval(`jsondecode("{\"a\": 1, \"a\": \"x\"}")`)
	require.True(t, diags.HasErrors())
	assert.Contains(t, diags.Error(), `duplicate "a" property in JSON object`)
	v, diags = eval(`jsondecode("{\"a\": 1, \"a\": 2}")`)
	require.False(t, diags.HasErrors(), diags.Error())
	assert.True(t, v.RawEquals(cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(2)})), "%#v", v)

	var grid strings.Builder
	grid.WriteString("{")
	for i := range 300 {
		fmt.Fprintf(&grid, `%s"run%03d": {"lr": %g, "seed": %d, "tags": ["a", "b"]}`, map[bool]string{true: ", "}[i > 0], i, float64(i)/1000, i)
	}
	grid.WriteString("}")
	sameAsCty(t, []byte(grid.String()))
}

// decodeJSON agrees with go-cty on any text it decodes.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5e3, null, {"b": "\u00e9\n"}]}`, `[]`, `"\ud83d\ude00"`, `-0.0`, "\"\xff\"", `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsCty(t, data)
	})
}

// BenchmarkJSONDecodeGrid decodes a grid of 10,000 runs (about 500 KB)
// as jsondecode does, and as go-cty's decoder does.
//
//	go test ./dsl -run XXX -bench JSONDecodeGrid -benchmem
func BenchmarkJSONDecodeGrid(b *testing.B) {
	var grid strings.Builder
	grid.WriteString("{")
	for i := range 10000 {
		if i > 0 {
			grid.WriteString(", ")
		}
		fmt.Fprintf(&grid, `"run%05d": {"lr": %g, "seed": %d, "method": "gepa", "tags": ["a", "b"]}`, i, float64(i)/1000, i)
	}
	grid.WriteString("}")
	data := []byte(grid.String())
	b.Run("cairn", func(b *testing.B) {
		for b.Loop() {
			if _, ok := decodeJSON(data); !ok {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("go-cty", func(b *testing.B) {
		for b.Loop() {
			if _, err := ctyDecode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
