package dsl

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// tupleCons is a tuple constructor ([local.seed_bundle], [var.worker,
// each.key]) bound when the file is read: its elements are read through
// ExprValue, where hcl's TupleConsExpr reads them through hcl's traversal,
// which puts a copy of each step on the heap (a grid's stages name lists
// of references in attribute after attribute, for every instance). It is
// otherwise hcl's TupleConsExpr.Value, with its result and diagnostics
// (TestTupleConsIsTupleConsExpr holds it to them). Its elements stay hcl's
// expressions, so walks over the syntax tree see the same references.
// TupleConsOf finds the tuple constructor in either.
type tupleCons struct{ *hclsyntax.TupleConsExpr }

// Value implements hcl.Expression.
func (e tupleCons) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	vals := make([]cty.Value, len(e.Exprs))
	var diags hcl.Diagnostics
	for i, x := range e.Exprs {
		v, d := ExprValue(x, ctx)
		vals[i] = v
		diags = append(diags, d...)
	}
	return cty.TupleVal(vals), diags
}

// TupleConsOf is the tuple constructor e (an expression or a syntax
// node) is, hcl's or bound, if it is one.
func TupleConsOf(e any) (*hclsyntax.TupleConsExpr, bool) {
	x, ok := e.(hcl.Expression)
	if !ok {
		return nil, false
	}
	tc, ok := Syntax(x).(*hclsyntax.TupleConsExpr)
	return tc, ok
}
