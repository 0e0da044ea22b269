package stages

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/cairn-run/cairn/dsl"
)

// Diag returns one error diagnostic at r.
func Diag(summary, detail string, r hcl.Range) hcl.Diagnostics {
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail}
	if r.Filename != "" {
		d.Subject = r.Ptr()
	}
	return hcl.Diagnostics{d}
}

// StringList converts a known list, set or tuple of strings (numbers and
// bools are converted) to a Go slice.
func StringList(v cty.Value) ([]string, error) {
	if out, ok := plainStrings(v); ok {
		return out, nil
	}
	v = unmarkDeep(v)
	if v.IsNull() {
		return nil, nil
	}
	ty := v.Type()
	if !(ty.IsListType() || ty.IsSetType() || ty.IsTupleType()) {
		return nil, fmt.Errorf("got %s, not a list", ty.FriendlyName())
	}
	out := make([]string, 0, v.LengthInt())
	for e := range dsl.Elements(v) {
		s, err := convert.Convert(e, cty.String)
		if e.IsNull() {
			return nil, fmt.Errorf("element %d is null, not a string", len(out))
		}
		if err != nil {
			return nil, fmt.Errorf("element %d is %s, not a string", len(out), e.Type().FriendlyName())
		}
		out = append(out, s.AsString())
	}
	return out, nil
}

// StringElementsError says which element of v, a list, set or tuple
// known or not, is of a type no string is made from (a list, an object):
// a value only known later is checked by its type, so that validate
// finds ["echo", var.list] as plan would. nil when every element's type
// converts to a string, or is not known yet.
func StringElementsError(v cty.Value) error {
	ty := v.Type()
	switch {
	case ty.IsTupleType():
		for i, et := range ty.TupleElementTypes() {
			if !TypeFits(et, cty.String) {
				return fmt.Errorf("element %d is %s, not a string", i, et.FriendlyName())
			}
		}
	case ty.IsListType() || ty.IsSetType():
		if et := ty.ElementType(); !TypeFits(et, cty.String) {
			return fmt.Errorf("its elements are %s, not strings", et.FriendlyName())
		}
	}
	return nil
}

// TypeFits reports whether a value of type t, known or not, may convert
// to one of want: a value only known later is checked by its type.
func TypeFits(t cty.Type, want ...cty.Type) bool {
	if t == cty.DynamicPseudoType {
		return true
	}
	for _, w := range want {
		// A type is no conversion of itself: cty has none to give.
		if t.Equals(w) || convert.GetConversionUnsafe(t, w) != nil {
			return true
		}
	}
	return false
}

// plainStrings is StringList's fast path for the common case, a list or
// tuple of known, unmarked, non-null strings: no copy of the value is made.
func plainStrings(v cty.Value) ([]string, bool) {
	if v.IsMarked() || !v.IsKnown() || v.IsNull() {
		return nil, false
	}
	ty := v.Type()
	if !(ty.IsListType() || ty.IsTupleType()) {
		return nil, false
	}
	out := make([]string, 0, v.LengthInt())
	for e := range dsl.Elements(v) {
		if e.IsMarked() || !e.IsKnown() || e.IsNull() || e.Type() != cty.String {
			return nil, false
		}
		out = append(out, e.AsString())
	}
	return out, true
}

// unmarkDeep is v.UnmarkDeep() without the copy when nothing in v is
// marked (cty's UnmarkDeep rebuilds the whole value all the same).
func unmarkDeep(v cty.Value) cty.Value {
	if !hasMarks(v) {
		return v
	}
	v, _ = v.UnmarkDeep()
	return v
}

// hasMarks reports whether v or a value inside it is marked: what
// v.ContainsMarked() reports, without making a path for every value.
func hasMarks(v cty.Value) bool {
	if v.IsMarked() {
		return true
	}
	if !v.IsKnown() || v.IsNull() {
		return false
	}
	ty := v.Type()
	switch {
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		for e := range dsl.Elements(v) {
			if hasMarks(e) {
				return true
			}
		}
	case ty.IsMapType():
		for it := v.ElementIterator(); it.Next(); {
			if _, e := it.Element(); hasMarks(e) {
				return true
			}
		}
	case ty.IsObjectType():
		for name := range ty.AttributeTypes() {
			if hasMarks(v.GetAttr(name)) {
				return true
			}
		}
	}
	return false
}

// WhollyKnown is v.IsWhollyKnown(), without making an iterator and an
// index value for every element of v (TestWhollyKnownMatchesCty).
func WhollyKnown(v cty.Value) bool { return whollyKnown(v) }

// whollyKnown is WhollyKnown.
func whollyKnown(v cty.Value) bool {
	if v.IsMarked() {
		v, _ = v.Unmark()
	}
	if !v.IsKnown() {
		return false
	}
	if v.IsNull() {
		return true
	}
	ty := v.Type()
	switch {
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		for e := range dsl.Elements(v) {
			if !whollyKnown(e) {
				return false
			}
		}
	case ty.IsMapType():
		for it := v.ElementIterator(); it.Next(); {
			if _, e := it.Element(); !whollyKnown(e) {
				return false
			}
		}
	case ty.IsObjectType():
		for name := range ty.AttributeTypes() {
			if !whollyKnown(v.GetAttr(name)) {
				return false
			}
		}
	}
	return true
}

// StringArg is a node's string attribute when it is known: ok is false
// when it is absent, unknown or null. A value that is not a non-empty
// string is an error at the attribute.
func StringArg(n *Node, attr string) (s string, ok bool, diags hcl.Diagnostics) {
	v, present := n.Args[attr]
	if !present || !whollyKnown(v) || v.IsNull() {
		return "", false, nil
	}
	v = unmarkDeep(v)
	c, err := convert.Convert(v, cty.String)
	if err != nil || c.IsNull() || c.AsString() == "" {
		return "", false, Diag("Invalid "+attr, attr+" must be a non-empty string.", n.Range(attr))
	}
	return c.AsString(), true, nil
}
