package dsl

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadsWorkspace(t *testing.T) {
	for src, want := range map[string]bool{
		`"a"`:                                   false,
		`var.x`:                                 false,
		`["python3", var.w, "${local.b}s.txt"]`: false,
		`merge(local.a, { x = upper(var.y) })`:  false,
		`{ for k, v in local.m : k => length(v) }`: false,
		`file("a.txt")`:                           true,
		`[for p in var.ps : filesha256(p)]`:       true,
		`try(fileexists("x") ? 1 : 0, 2)`:         true,
		`decision_slots("protocol.json")`:         true, // a kind's own: not in the table
		`local.x[jsondecode(file("k.json")).key]`: true,
	} {
		e, diags := hclsyntax.ParseExpression([]byte(src), "t.hcl", hcl.InitialPos)
		require.False(t, diags.HasErrors(), src)
		assert.Equal(t, want, ReadsWorkspace(e), src)
		assert.Equal(t, want, ReadsWorkspace(boundExpr(e)), "bound: "+src)
	}
}
