package dsl

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

func TestLengthLikeTerraform(t *testing.T) {
	ctx := &hcl.EvalContext{Functions: Functions(t.TempDir(), nil)}
	for src, want := range map[string]int64{
		`length("héllo")`:           5,
		`length([1, 2, 3])`:         3,
		`length({a = 1, b = "x"})`:  2,
		`length(tomap({a = 1}))`:    1,
		`length(toset(["a", "a"]))`: 1,
		`length("")`:                0,
	} {
		e, d := hclsyntax.ParseExpression([]byte(src), "t.hcl", hcl.InitialPos)
		require.False(t, d.HasErrors(), src)
		v, d := e.Value(ctx)
		require.False(t, d.HasErrors(), "%s: %s", src, d.Error())
		assert.True(t, v.Equals(cty.NumberIntVal(want)).True(), "%s = %s, want %d", src, v.GoString(), want)
	}
	e, _ := hclsyntax.ParseExpression([]byte(`length(42)`), "t.hcl", hcl.InitialPos)
	_, d := e.Value(ctx)
	require.True(t, d.HasErrors(), "a number has no length")
	// The message lists what length takes, all of it.
	assert.Contains(t, d[0].Detail, "length takes a string, a list, a set, a tuple, a map or an object, not number")
	e, _ = hclsyntax.ParseExpression([]byte(`length(true)`), "t.hcl", hcl.InitialPos)
	_, d = e.Value(ctx)
	require.True(t, d.HasErrors(), "a bool has no length")
	assert.Contains(t, d[0].Detail, "not bool")
}
