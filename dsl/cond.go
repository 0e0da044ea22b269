package dsl

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// maxCondElemTypes bounds the distinct element types tupleCond unifies
// itself; beyond them ConditionalExpr.Value unifies.
const maxCondElemTypes = 16

// tupleCond is a conditional expression whose results may be tuples of
// different lengths, as in `var.one != "" ? local.one : local.all` over a
// grid's jobs: ConditionalExpr.Value unifies the two tuple types into a
// list type by unifying the types of all their elements, sorting the
// thousands of types of a grid's objects (most of a grid's locals' time).
// The element types of such tuples are a few distinct types repeated;
// unifying each once gives the type unifying them all. When the
// condition is a known, unmarked bool and both results are known,
// unmarked, non-null tuples of different lengths, the value is the chosen
// result converted to that list type, which is what ConditionalExpr.Value
// makes of it (it converts the chosen result only, and keeps its
// diagnostics after the condition's); where the chosen tuple's elements
// are all of that type, the conversion (which unifies their types again)
// is their list. Anything else is decided by
// ConditionalExpr.Value on the values already evaluated (each operand is
// evaluated once, in its order: true, false, condition). A conditional
// with a result that is never a tuple (a literal, a template: mayBeTuple)
// is left as it is.
// TestTupleCondIsConditionalExpr holds both to one result.
type tupleCond struct{ *hclsyntax.ConditionalExpr }

// evaluatedExpr is an operand already evaluated: it answers its value and
// diagnostics, and is the original expression for everything else.
type evaluatedExpr struct {
	hclsyntax.Expression
	val   cty.Value
	diags hcl.Diagnostics
}

// Value implements hcl.Expression.
func (e *evaluatedExpr) Value(*hcl.EvalContext) (cty.Value, hcl.Diagnostics) { return e.val, e.diags }

// Value implements hcl.Expression.
func (e tupleCond) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	t, td := e.TrueResult.Value(ctx)
	f, fd := e.FalseResult.Value(ctx)
	c, cd := e.Condition.Value(ctx)
	if v, ok := tuplesAsList(t, f, c); ok {
		diags := cd
		if c.True() {
			diags = append(diags, td...)
		} else {
			diags = append(diags, fd...)
		}
		return v, diags
	}
	// One allocation for the stand-ins and the expression holding them.
	x := &struct {
		in      hclsyntax.ConditionalExpr
		t, f, c evaluatedExpr
	}{in: *e.ConditionalExpr, t: evaluatedExpr{e.TrueResult, t, td}, f: evaluatedExpr{e.FalseResult, f, fd}, c: evaluatedExpr{e.Condition, c, cd}}
	x.in.TrueResult, x.in.FalseResult, x.in.Condition = &x.t, &x.f, &x.c
	v, diags := x.in.Value(ctx)
	for _, d := range diags {
		// What ConditionalExpr.Value reports names the expression
		// written, not the stand-ins.
		switch de := d.Expression.(type) {
		case *hclsyntax.ConditionalExpr:
			if de == &x.in {
				d.Expression = e.ConditionalExpr
			}
		case *evaluatedExpr:
			d.Expression = de.Expression
		}
		if d.Context == &x.in.SrcRange {
			d.Context = &e.SrcRange
		}
	}
	return v, diags
}

// mayBeTuple reports whether e may evaluate to a tuple: it is not an
// expression whose value is never one (a literal, a template, an object,
// an operator's result, a for expression making an object).
func mayBeTuple(e hclsyntax.Expression) bool {
	switch x := e.(type) {
	case *hclsyntax.LiteralValueExpr, checkedLiteral, *hclsyntax.TemplateExpr, plainTemplate, *textTemplate,
		*hclsyntax.TemplateWrapExpr, *hclsyntax.ObjectConsExpr, checkedObject, *repeatedKeyObject, staticObject,
		*hclsyntax.BinaryOpExpr, checkedOp, *hclsyntax.UnaryOpExpr:
		return false
	case *boundedFor:
		return x.KeyExpr == nil
	}
	return true
}

// tuplesAsList is the value of a conditional whose condition is c, true
// result t and false result f, when c is a known, unmarked bool and t and
// f are known, unmarked, non-null tuples of different lengths whose
// elements are of at most maxCondElemTypes distinct types: the chosen one
// converted to the list type unifying both. ok is false otherwise, or
// where no such list type exists or the conversion fails (the general
// path reports it).
func tuplesAsList(t, f, c cty.Value) (cty.Value, bool) {
	if c.Type() != cty.Bool || c.IsMarked() || !c.IsKnown() || c.IsNull() {
		return cty.NilVal, false
	}
	for _, v := range []cty.Value{t, f} {
		if !v.Type().IsTupleType() || v.IsMarked() || !v.IsKnown() || v.IsNull() {
			return cty.NilVal, false
		}
	}
	tt, ft := t.Type(), f.Type()
	if len(tt.TupleElementTypes()) == len(ft.TupleElementTypes()) {
		return cty.NilVal, false
	}
	var distinct []cty.Type
	for _, ty := range []cty.Type{tt, ft} {
	elems:
		for _, ety := range ty.TupleElementTypes() {
			for _, d := range distinct {
				if ety.Equals(d) {
					continue elems
				}
			}
			if len(distinct) == maxCondElemTypes {
				return cty.NilVal, false
			}
			distinct = append(distinct, ety)
		}
	}
	ety, _ := convert.UnifyUnsafe(distinct)
	if ety == cty.NilType {
		return cty.NilVal, false
	}
	list := cty.List(ety)
	tc, fc := convert.GetConversionUnsafe(tt, list), convert.GetConversionUnsafe(ft, list)
	if tc == nil || fc == nil {
		return cty.NilVal, false
	}
	conv, v := fc, f
	if c.True() {
		conv, v = tc, t
	}
	if elems, ok := elemsOf(v, ety); ok {
		return cty.ListVal(elems), true
	}
	out, err := conv(v)
	if err != nil {
		return cty.NilVal, false
	}
	return out, true
}

// elemsOf is the elements of tuple v when each is of type ety, a type
// unification gives (it gives it again for elements of that type), with
// no dynamic type in it: converting v to a list of ety then converts no
// element, and unifies their types (all of them, again) to ety, which
// keeps them as they are. ok is false for anything else, an empty tuple
// included.
func elemsOf(v cty.Value, ety cty.Type) ([]cty.Value, bool) {
	etys := v.Type().TupleElementTypes()
	if len(etys) == 0 || ety.HasDynamicTypes() {
		return nil, false
	}
	for _, t := range etys {
		if !t.Equals(ety) {
			return nil, false
		}
	}
	return v.AsValueSlice(), true
}
