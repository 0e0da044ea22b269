package stages

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/assert"
)

// A node's attribute is located by Ranges where it holds it, else by its
// expression in Attributes; one neither holds is at the zero Range.
func TestNodeRangeLooksInRangesThenAttributes(t *testing.T) {
	f, diags := hclsyntax.ParseConfig([]byte("run = [\"a\"]\nshell = true\n"), "p.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	attrs, _ := f.Body.JustAttributes()
	given := hcl.Range{Filename: "other.hcl", Start: hcl.Pos{Line: 9, Column: 1, Byte: 90}, End: hcl.Pos{Line: 9, Column: 5, Byte: 94}}
	n := &Node{Ranges: map[string]hcl.Range{"shell": given}, Attributes: attrs}
	assert.Equal(t, attrs["run"].Expr.Range(), n.Range("run"))
	assert.Equal(t, given, n.Range("shell"))
	assert.Equal(t, hcl.Range{}, n.Range("gpus"))
	r, ok := n.LookupRange("run")
	assert.True(t, ok)
	assert.Equal(t, "p.hcl:1,7-12", r.String())
	_, ok = n.LookupRange("gpus")
	assert.False(t, ok)
	// As a map of ranges alone.
	n = &Node{Ranges: map[string]hcl.Range{"run": given}}
	assert.Equal(t, given, n.Range("run"))
	assert.Equal(t, hcl.Range{}, n.Range("shell"))
}
