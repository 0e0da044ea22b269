package dsl

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What is wrong with JSON text is said with its line and column, and what
// to do for the two that editors and Python make: a byte-order mark, NaN.
func TestJSONProblem(t *testing.T) {
	for in, want := range map[string]string{
		`{"a": 1}`:                  "",
		`{"loss": NaN, "acc": 0.5}`: `is not valid JSON at line 1, column 10: invalid character 'N' looking for beginning of value. JSON has no NaN or Infinity (Python's json.dump writes them unless allow_nan=False): write null for a number that is not one, or a string ("NaN")`,
		"{\n  \"é\": -Infinity\n}":  `is not valid JSON at line 2, column 9: invalid character 'I' in numeric literal. JSON has no NaN or Infinity`,
		"\xef\xbb\xbf{\"a\": 1}":    "starts with a UTF-8 byte-order mark (bytes EF BB BF), which JSON does not have: save the file without it (UTF-8 without BOM)",
		`{"a": 1`:                   "is not valid JSON at line 1, column 8: unexpected end of JSON input (the text ends before the value does: cut short?)",
		" \n":                       "is empty: it holds no JSON value",
	} {
		got := JSONProblem([]byte(in))
		if want == "" {
			assert.Empty(t, got, in)
			continue
		}
		assert.Contains(t, got, want, in)
	}
}

// A line of JSON Lines is placed by its column alone (its file's line is
// the caller's), counted from the line's start, with the same advice.
func TestJSONLineProblem(t *testing.T) {
	assert.Empty(t, JSONLineProblem([]byte(`{"a": 1}`), 0))
	assert.Equal(t, `is not valid JSON at column 12: invalid character 'N' looking for beginning of value. JSON has no NaN or Infinity (Python's json.dump writes them unless allow_nan=False): write null for a number that is not one, or a string ("NaN")`,
		JSONLineProblem([]byte(`{"loss": NaN}`), 2))
	assert.Equal(t, "is not valid JSON at column 8: unexpected end of JSON input (the text ends before the value does: cut short?)", JSONLineProblem([]byte(`{"a": 1`), 0))
}

// jsondecode of a file saved with a byte-order mark says so, not
// "invalid character 'ï' looking for beginning of value".
func TestJSONDecodeNamesByteOrderMark(t *testing.T) {
	e, diags := hclsyntax.ParseExpression([]byte(`jsondecode("\ufeff{\"a\": 1}")`), "p.hcl", hcl.InitialPos)
	require.False(t, diags.HasErrors())
	_, diags = boundExpr(e).Value(&hcl.EvalContext{Functions: Functions(t.TempDir(), nil)})
	require.True(t, diags.HasErrors())
	assert.Contains(t, diags.Error(), "the JSON text starts with a UTF-8 byte-order mark (bytes EF BB BF), which JSON does not have: save the file without it (UTF-8 without BOM)")
	assert.NotContains(t, diags.Error(), "invalid character")

	e, _ = hclsyntax.ParseExpression([]byte(`jsondecode("{\"a\": NaN}")`), "p.hcl", hcl.InitialPos)
	_, diags = boundExpr(e).Value(&hcl.EvalContext{Functions: Functions(t.TempDir(), nil)})
	assert.Contains(t, diags.Error(), "is not valid JSON at line 1, column 7: invalid character 'N' looking for beginning of value. JSON has no NaN")
}
