package dsl

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// indexed is an index expression (local.grid.models[each.value.model],
// stage.job[each.key]) bound when the file is read: its collection and
// its key are read through ExprValue, where hcl's IndexExpr reads them
// through hcl's traversal, which puts a copy of each step on the heap.
// It is otherwise hcl's IndexExpr.Value, with its result and diagnostics
// (TestIndexedIsIndexExpr holds it to them). IndexExprOf finds the index
// expression in either.
type indexed struct{ *hclsyntax.IndexExpr }

// Value implements hcl.Expression.
func (e indexed) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	coll, collDiags := ExprValue(e.Collection, ctx)
	key, keyDiags := ExprValue(e.Key, ctx)
	diags = append(diags, collDiags...)
	diags = append(diags, keyDiags...)
	val, indexDiags := hcl.Index(coll, key, &e.BracketRange)
	for _, d := range indexDiags {
		// As hclsyntax sets them on its own diagnostics.
		if d.Expression == nil {
			d.Expression = e.IndexExpr
			d.EvalContext = ctx
		}
	}
	diags = append(diags, indexDiags...)
	return val, diags
}

// IndexExprOf is the index expression e (an expression or a syntax node)
// is, hcl's or bound, if it is one.
func IndexExprOf(e any) (*hclsyntax.IndexExpr, bool) {
	switch x := e.(type) {
	case *hclsyntax.IndexExpr:
		return x, true
	case indexed:
		return x.IndexExpr, true
	}
	return nil, false
}

// relTraversal is a traversal of a value that is not a variable
// (local.grid.methods[each.value.method].command, the .command after an
// index) bound when the file is read: its source is read through
// ExprValue, and its steps where attrSteps finds them, where hcl's
// RelativeTraversalExpr reads them through hcl's traversal, which puts a
// copy of each step on the heap. Anything attrSteps leaves is hcl's
// traversal, with its diagnostics: it is otherwise hcl's
// RelativeTraversalExpr.Value (TestRelTraversalIsRelativeTraversalExpr).
// RelTraversalOf finds the traversal in either.
type relTraversal struct {
	*hclsyntax.RelativeTraversalExpr
}

// Value implements hcl.Expression.
func (e relTraversal) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	src, diags := ExprValue(e.Source, ctx)
	if v, ok := attrSteps(src, e.Traversal); ok {
		return v, diags
	}
	ret, travDiags := e.Traversal.TraverseRel(src)
	for _, d := range travDiags {
		// As hclsyntax sets them on its own diagnostics.
		if d.Expression == nil {
			d.Expression = e.RelativeTraversalExpr
			d.EvalContext = ctx
		}
	}
	return ret, append(diags, travDiags...)
}

// RelTraversalOf is the relative traversal e (an expression or a syntax
// node) is, hcl's or bound, if it is one.
func RelTraversalOf(e any) (*hclsyntax.RelativeTraversalExpr, bool) {
	switch x := e.(type) {
	case *hclsyntax.RelativeTraversalExpr:
		return x, true
	case relTraversal:
		return x.RelativeTraversalExpr, true
	}
	return nil, false
}
