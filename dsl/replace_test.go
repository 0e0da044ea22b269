package dsl

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replace behaves as Terraform's: a /substring/ is a regular expression
// whose replacement may use $1; anything else is literal.
func TestReplaceLikeTerraform(t *testing.T) {
	ctx := &hcl.EvalContext{Functions: Functions(t.TempDir(), nil)}
	for src, want := range map[string]string{
		`replace("a1b22c", "/[0-9]+/", "_")`:             "a_b_c",
		`replace("llama-3-8b", "/-(\\d+)b/", "@$${1}B")`: "llama-3@8B",
		`replace("llama-3-8b", "/-(\\d+)b/", "@$1")`:     "llama-3@8",
		`replace("k=v", "/(?P<k>\\w)=(\\w)/", "$2=$k")`:  "v=k",
		`replace("a.b.c", ".", "/")`:                     "a/b/c",
		`replace("a/b", "/", "-")`:                       "a-b",
		`replace("a1b2", "[0-9]", "_")`:                  "a1b2",
	} {
		e, d := hclsyntax.ParseExpression([]byte(src), "t.hcl", hcl.InitialPos)
		require.False(t, d.HasErrors(), src)
		v, d := e.Value(ctx)
		require.False(t, d.HasErrors(), "%s: %s", src, d.Error())
		assert.Equal(t, want, v.AsString(), src)
	}
	e, _ := hclsyntax.ParseExpression([]byte(`replace("a", "/(/", "b")`), "t.hcl", hcl.InitialPos)
	_, d := e.Value(ctx)
	require.True(t, d.HasErrors(), "a bad regular expression is an error")
	assert.Contains(t, d.Error(), "missing closing )")
}
