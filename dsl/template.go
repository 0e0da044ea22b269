package dsl

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// plainTemplate is a string template whose parts are literal text and
// references ("out/${stage.name}_${each.key}"), the way grids name their
// instances' files. When every part is a known, unmarked, non-null
// string or whole number (intText), its value is their concatenation,
// which is what TemplateExpr.Value makes of them (no marks, no refinement
// of a known string); it is made without the conversions, the marks' map
// and the buffer TemplateExpr.Value makes for every evaluation. Any other
// part (a fraction, a sensitive or unknown value,
// null, an error) sends the template to TemplateExpr.Value, which
// evaluates it again: its parts are references, which read and write
// nothing. TestPlainTemplateIsTemplateExprs holds both to one result.
type plainTemplate struct{ *hclsyntax.TemplateExpr }

// textTemplate is a template of literal text only, a quoted string such
// as "out/c5" (the parser makes every quoted string a template): its value
// is made once, when the file is read, the value TemplateExpr.Value makes
// of it at every evaluation.
type textTemplate struct {
	*hclsyntax.TemplateExpr
	val cty.Value
}

// Value implements hcl.Expression.
func (e textTemplate) Value(*hcl.EvalContext) (cty.Value, hcl.Diagnostics) { return e.val, nil }

// templateText is the text of a template of literal strings only (known,
// unmarked, not null), and whether it is one.
func templateText(t *hclsyntax.TemplateExpr) (string, bool) {
	var b strings.Builder
	for _, p := range t.Parts {
		l, ok := p.(*hclsyntax.LiteralValueExpr)
		if !ok || !plainText(l.Val) {
			return "", false
		}
		b.WriteString(l.Val.AsString())
	}
	return b.String(), true
}

// plainText reports whether v is a known, unmarked, non-null string.
func plainText(v cty.Value) bool {
	return v.Type() == cty.String && !v.IsMarked() && v.IsKnown() && !v.IsNull()
}

// boundTemplate is what replaces a template when the file is read: a
// textTemplate or a plainTemplate where one fits, else nil.
func boundTemplate(t *hclsyntax.TemplateExpr) hclsyntax.Expression {
	if len(t.Parts) == 1 {
		// A quoted string: its value is its one part's (a string made
		// by cty.StringVal, normalised: StringVal of its text is it).
		if l, ok := t.Parts[0].(*hclsyntax.LiteralValueExpr); ok && plainText(l.Val) {
			return &textTemplate{t, l.Val}
		}
	}
	if text, ok := templateText(t); ok {
		return &textTemplate{t, cty.StringVal(text)}
	}
	if plainParts(t) {
		return plainTemplate{t}
	}
	return nil
}

// plainParts reports whether a template's parts are literal text and
// references only, at least one of them a reference.
func plainParts(t *hclsyntax.TemplateExpr) bool {
	refs := 0
	for _, p := range t.Parts {
		switch p.(type) {
		case *hclsyntax.LiteralValueExpr:
		case *hclsyntax.ScopeTraversalExpr:
			refs++
		default:
			return false
		}
	}
	return refs > 0
}

// Value implements hcl.Expression.
func (e plainTemplate) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	var parts [8]string
	strs := parts[:0]
	n := 0
	for _, p := range e.Parts {
		var v cty.Value
		switch x := p.(type) {
		case *hclsyntax.LiteralValueExpr:
			v = x.Val
		case *hclsyntax.ScopeTraversalExpr:
			var ok bool
			if v, ok = attrTraversal(ctx, x.Traversal); !ok {
				return e.TemplateExpr.Value(ctx)
			}
		}
		if v.IsMarked() || !v.IsKnown() || v.IsNull() {
			return e.TemplateExpr.Value(ctx)
		}
		var s string
		switch ty := v.Type(); {
		case ty == cty.String:
			s = v.AsString()
		case ty == cty.Number:
			var ok bool
			if s, ok = intText(v.AsBigFloat()); !ok {
				return e.TemplateExpr.Value(ctx)
			}
		default:
			return e.TemplateExpr.Value(ctx)
		}
		strs = append(strs, s)
		n += len(s)
	}
	var b strings.Builder
	b.Grow(n)
	for _, s := range strs {
		b.WriteString(s)
	}
	return cty.StringVal(b.String()), nil
}

// intText is the text of a whole number that an int64 holds, as the
// conversion of a number to a string writes it (Text('f', -1), the
// shortest decimal that reads back as f at its precision): its digits,
// when f's precision holds every bit of it (no shorter decimal then reads
// back as f). ok is false for anything else (a fraction, -0, a number
// beyond an int64 or its precision), which the conversion then writes:
// seeds and indexes in keys and paths ("${j.method}/${j.seed}") are
// written without its decimal expansion of a 512-bit number.
func intText(f *big.Float) (string, bool) {
	if !f.IsInt() || f.Signbit() && f.Sign() == 0 {
		return "", false
	}
	i, acc := f.Int64()
	if acc != big.Exact {
		return "", false
	}
	mag := uint64(i)
	if i < 0 {
		mag = -mag
	}
	if uint(bits.Len64(mag)) > f.Prec() {
		return "", false
	}
	return strconv.FormatInt(i, 10), true
}

// ExprValue is e.Value(ctx). A reference alone (each.value.out, the
// attributes of a grid's stages) is read by attrTraversal where it reads
// it: hcl's traversal makes a copy of each step on the heap, and the
// steps' diagnostics, for every evaluation. Anything else, and anything
// attrTraversal leaves to hcl, is e.Value(ctx). TestExprValueIsValue
// holds both to one result.
func ExprValue(e hcl.Expression, ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if st, ok := e.(*hclsyntax.ScopeTraversalExpr); ok {
		if v, ok := attrTraversal(ctx, st.Traversal); ok {
			return v, nil
		}
	}
	return e.Value(ctx)
}

// attrTraversal is the value of a traversal of attributes only
// (each.key, local.grid.name) where hcl's traversal finds it without a
// diagnostic: the root variable in the innermost context that has it,
// then attributes of known, unmarked, non-null objects that have them.
// ok is false for anything else (an index, a missing name, a marked,
// unknown or null value on the way), which hcl's traversal then decides.
func attrTraversal(ctx *hcl.EvalContext, t hcl.Traversal) (cty.Value, bool) {
	root, ok := t[0].(hcl.TraverseRoot)
	if !ok {
		return cty.NilVal, false
	}
	var v cty.Value
	found := false
	for c := ctx; c != nil && !found; c = c.Parent() {
		v, found = c.Variables[root.Name]
	}
	if !found {
		return cty.NilVal, false
	}
	return attrSteps(v, t[1:])
}

// attrSteps is the value the steps (attributes, literal indexes) take v
// to where hcl's traversal finds it without a diagnostic; ok is false
// otherwise, as for attrTraversal. An attribute of an unknown value is
// read as hcl reads it: unknown, of the attribute's type where the
// object's type has it, of any type where the value's type is not yet
// known (stage.optimize[k].result.candidate before optimize runs).
func attrSteps(v cty.Value, steps hcl.Traversal) (cty.Value, bool) {
	for _, step := range steps {
		if v.IsMarked() || v.IsNull() {
			return cty.NilVal, false
		}
		switch s := step.(type) {
		case hcl.TraverseAttr:
			ty := v.Type()
			switch {
			case ty == cty.DynamicPseudoType:
				v = cty.DynamicVal
			case !ty.IsObjectType() || !ty.HasAttribute(s.Name):
				return cty.NilVal, false
			case !v.IsKnown():
				v = cty.UnknownVal(ty.AttributeType(s.Name))
			default:
				v = v.GetAttr(s.Name)
			}
		case hcl.TraverseIndex:
			if !v.IsKnown() {
				return cty.NilVal, false
			}
			// A literal index of a tuple or a list (p[0] of a
			// setproduct's pair) that it has.
			ty := v.Type()
			if !ty.IsTupleType() && !ty.IsListType() {
				return cty.NilVal, false
			}
			i, ok := smallIndex(s.Key)
			if !ok || i >= v.LengthInt() {
				return cty.NilVal, false
			}
			v = v.Index(s.Key)
		default:
			return cty.NilVal, false
		}
	}
	return v, true
}

// smallIndex is k as an index: a known, unmarked, whole number from 0 to
// an int's range, which is the index of that element as hcl reads it.
func smallIndex(k cty.Value) (int, bool) {
	if !plainNumber(k) {
		return 0, false
	}
	i, acc := k.AsBigFloat().Int64()
	if acc != big.Exact || i < 0 || i > math.MaxInt32 {
		return 0, false
	}
	return int(i), true
}
