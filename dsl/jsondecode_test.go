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
	"github.com/zclconf/go-cty/cty/function/stdlib"
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

	// A key given twice is refused, whether go-cty would refuse it (two
	// types) or keep the last value (one type).
	for _, src := range []string{`jsondecode("{\"a\": 1, \"a\": \"x\"}")`, `jsondecode("{\"a\": 1, \"a\": 2}")`} {
		_, diags = eval(src)
		require.True(t, diags.HasErrors(), src)
		assert.Contains(t, diags.Error(), `the JSON text gives the key "a" twice in one object, at line 1, column 2, and again at line 1, column 10`, src)
	}

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

// jsondecode refuses what go-cty's would change without a word, naming
// it and its line and column in the text, at the call (file:line:col): a
// key given twice in one object (go-cty keeps the last value), in any
// object, written with escapes or in another Unicode form; a byte that is
// not UTF-8 and an escape of half a surrogate pair (both read as U+FFFD).
// A sensitive text's key is not shown.
func TestJSONDecodeRefusesWhatCtyChanges(t *testing.T) {
	cfg := "{\n  \"lr\": 0.1,\n  \"grid\": {\"a\": [1, {\"x\": 1, \"y\": 2, \"x\": 1}]},\n  \"lr\": 0.5\n}"
	for _, c := range []struct {
		name, text string
		sensitive  bool
		says       string
	}{
		{"repeated key", `{"lr": 0.1, "lr": 0.5}`, false,
			`Invalid value for "str" parameter: the JSON text gives the key "lr" twice in one object, at line 1, column 2, and again at line 1, column 13: an object holds one value for each key, so one of the two would be dropped without a word. Rename one of the keys, or remove one of the items.`},
		{"the first repeat, nested", cfg, false, `the JSON text gives the key "x" twice in one object, at line 3, column 22, and again at line 3, column 38:`},
		{"written with an escape", `{"lr": 1, "l\u0072": 2}`, false, `gives the key "lr" twice in one object, at line 1, column 2, and again at line 1, column 11`},
		{"in another Unicode form", "{\"caf\u00e9\": 1, \"cafe\u0301\": 2}", false, `gives the key "café" twice in one object, at line 1, column 2, and again at line 1, column 13: an object holds one value for each key, so one of the two would be dropped without a word. Rename one of the keys, or remove one of the items. Keys are compared as text in Unicode's composed form (NFC)`},
		{"sensitive", `{"token": 1, "token": 2}`, true, `gives the key (sensitive, so not shown) twice in one object, at line 1, column 2, and again at line 1, column 14`},
		{"not UTF-8", "{\"s\": \"caf\xe9\"}", false, `the JSON text holds a byte that is not UTF-8 at line 1, column 11: JSON text is UTF-8, and a JSON reader would read the byte as U+FFFD, changing the text.`},
		{"not UTF-8, escaped too", "[\"\\n\", \"\\t\xff\"]", false, `holds a byte that is not UTF-8 at line 1, column 11:`},
		{"half a surrogate pair", `["ok \ud83d\ude00", "\ud800 x"]`, false, `the JSON text holds at line 1, column 22 an escape of half a UTF-16 surrogate pair (\uD800 to \uDFFF without its other half), which is no character: a JSON reader would read it as U+FFFD`},
		{"the low half alone", `"\udc00"`, false, `holds at line 1, column 2 an escape of half a UTF-16 surrogate pair`},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := cty.StringVal(c.text)
			if c.sensitive {
				text = text.Mark(SensitiveMark)
			}
			e, diags := hclsyntax.ParseExpression([]byte("\n  jsondecode(var.text)"), "p.hcl", hcl.InitialPos)
			require.False(t, diags.HasErrors())
			_, diags = boundExpr(e).Value(&hcl.EvalContext{
				Functions: Functions(t.TempDir(), nil),
				Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{"text": text})},
			})
			require.Len(t, diags.Errs(), 1, diags.Error())
			d := diags.Errs()[0].(*hcl.Diagnostic)
			assert.Equal(t, "Invalid function argument", d.Summary)
			assert.Equal(t, "p.hcl:2:14", Pos(*d.Subject))
			assert.Contains(t, d.Detail, c.says)
			if c.sensitive {
				assert.NotContains(t, d.Detail, "token")
			}
		})
	}
}

// On text it does not refuse, jsondecode is go-cty's: the same value,
// type and marks, and an error where go-cty gives one (its own, but for
// text that is not JSON, which JSONProblem says more of); unknown, null
// and marked arguments give what go-cty's give.
func TestJSONDecodeIsCtysOnWhatItTakes(t *testing.T) {
	texts := []string{
		`{"a": 1, "b": [true, false, null, "x"], "c": {"d": {}}, "e": []}`,
		`[]`, `{}`, `null`, `true`, `"s"`, `[null]`, `[[], {}]`,
		`0`, `-0`, `1.5`, `-12.25e-3`, `1E400`, `1e-400`, `123456789012345678901234567890`,
		`"tab\tnew\nline \u00e9 \ud83d\ude00 \" \\ \/"`,
		"\"e\u0301 composed by NFC\"", "{\"e\u0301\": 1}",
		`{"runs": {"r1": {"lr": 0.001}, "r1 ": {"lr": 0.01}}}`,
		`{"a": {"x": 1}, "b": {"x": 2}}`, `[{"a": 1}, {"a": 1}]`,
	}
	var args []cty.Value
	for _, s := range texts {
		args = append(args, cty.StringVal(s), cty.StringVal(s).Mark(SensitiveMark), cty.StringVal(s).Mark("other"))
	}
	args = append(args, cty.UnknownVal(cty.String), cty.UnknownVal(cty.String).Mark(SensitiveMark),
		cty.UnknownVal(cty.String).Refine().StringPrefix(`"`).NewValue(), cty.UnknownVal(cty.String).Refine().StringPrefix(`x`).NewValue(),
		cty.DynamicVal, cty.DynamicVal.Mark(SensitiveMark), cty.NullVal(cty.String), cty.NullVal(cty.String).Mark(SensitiveMark),
		cty.NullVal(cty.DynamicPseudoType), cty.EmptyObjectVal, cty.ListValEmpty(cty.String).Mark(SensitiveMark),
		cty.NumberIntVal(1), cty.True.Mark(SensitiveMark), cty.StringVal(`{"a": NaN}`), cty.StringVal(``))
	for _, arg := range args {
		wantTy, wantTyErr := stdlib.JSONDecodeFunc.ReturnTypeForValues([]cty.Value{arg})
		gotTy, gotTyErr := jsonDecodeFunc.ReturnTypeForValues([]cty.Value{arg})
		if text, _, isText := knownText(arg); !isText || JSONProblem([]byte(text)) == "" {
			// (text that is not JSON: JSONProblem's error, not go-cty's)
			require.Equal(t, wantTyErr, gotTyErr, "%#v", arg)
		}
		require.Equal(t, wantTyErr == nil, gotTyErr == nil, "%#v", arg)
		require.True(t, wantTy.Equals(gotTy), "%#v: type %#v, go-cty's %#v", arg, gotTy, wantTy)
		want, wantErr := stdlib.JSONDecodeFunc.Call([]cty.Value{arg})
		got, err := jsonDecodeFunc.Call([]cty.Value{arg})
		require.Equal(t, wantErr == nil, err == nil, "%#v: %v, go-cty's %v", arg, err, wantErr)
		require.True(t, got.RawEquals(want), "%#v: %#v, go-cty's %#v", arg, got, want)
	}
}
