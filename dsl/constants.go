package dsl

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// evaluated is a local value's constant expression (see constant),
// replaced by its value as soon as it is parsed. Its value is the one the
// expression has in any context, and its ranges are the expression's; but
// a value takes a fraction of the memory of its syntax tree, which is
// freed then: a node for each list and for each literal in it (5 MB of
// nested lists of numbers were a 220 MB tree, for 60 MB of values).
type evaluated struct {
	hclsyntax.LiteralValueExpr
	start hcl.Range
}

// StartRange implements hcl.Expression.
func (e *evaluated) StartRange() hcl.Range { return e.start }

// evalConstants replaces the constant expressions of the attributes of b,
// a locals block's body, with their values.
func evalConstants(b *hclsyntax.Body) {
	for _, a := range b.Attributes {
		if _, done := a.Expr.(*evaluated); done || !constant(a.Expr) {
			continue
		}
		v, diags := a.Expr.Value(nil)
		if len(diags) > 0 {
			continue // a number out of range: reported where it is used
		}
		a.Expr = &evaluated{
			LiteralValueExpr: hclsyntax.LiteralValueExpr{Val: v, SrcRange: a.Expr.Range()},
			start:            a.Expr.StartRange(),
		}
	}
}

// settleBody readies a parsed file's body as the loader hands it on: its
// expressions bounded (boundBody), and the constant ones of its locals
// blocks evaluated.
func settleBody(b *hclsyntax.Body) {
	if b == nil {
		return
	}
	boundBody(b)
	for _, blk := range b.Blocks {
		if isLocals(blk) {
			evalConstants(blk.Body)
		}
	}
}

// isLocals reports whether blk is a locals block (as the file schema has
// it: no labels).
func isLocals(blk *hclsyntax.Block) bool {
	return blk.Type == "locals" && len(blk.Labels) == 0 && blk.Body != nil
}

// settleFile applies settleBody to a parsed native-syntax file.
func settleFile(f *hcl.File) {
	if f == nil {
		return
	}
	if b, ok := f.Body.(*hclsyntax.Body); ok {
		settleBody(b)
	}
}
