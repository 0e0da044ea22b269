package dsl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// A value given for a variable of an object type (a default, --var, a
// variable file) is converted to that type, and conversion drops every
// attribute the type does not have without a word: `{ lr = 0.1, step =
// 10 }` for object({ lr = number, steps = optional(number, 1000) }) ran
// with 1000 steps. cairn refuses such an attribute instead, naming it,
// the variable and where it was written. A map's keys are its own: only
// an object type has a fixed set of attributes.

// strayAttr is an attribute of a value given for a variable that the
// variable's type does not have.
type strayAttr struct {
	path  cty.Path // of the object that holds it, in the variable's value
	name  string
	attrs []string // the attributes of the type at path, sorted
}

// findStrayAttr is the first attribute of v, a value given for a variable
// of type ty (before it is converted), that an object type of ty at the
// same place does not have: attributes compared in name order, an
// object's own before those of the values it holds. ok is false when
// there is none.
func findStrayAttr(v cty.Value, ty cty.Type, path cty.Path) (_ strayAttr, ok bool) {
	v, _ = v.Unmark()
	if !v.IsKnown() || v.IsNull() || ty == cty.DynamicPseudoType {
		return strayAttr{}, false
	}
	vt := v.Type()
	keyed := vt.IsObjectType() || vt.IsMapType()
	listed := vt.IsTupleType() || vt.IsListType() || vt.IsSetType()
	switch {
	case ty.IsObjectType() && keyed:
		atys := ty.AttributeTypes()
		keys := valueKeys(v)
		for _, k := range keys {
			if _, has := atys[k]; !has {
				names := make([]string, 0, len(atys))
				for n := range atys {
					names = append(names, n)
				}
				slices.Sort(names)
				return strayAttr{path: path, name: k, attrs: names}, true
			}
		}
		for _, k := range keys {
			if s, ok := findStrayAttr(member(v, k), atys[k], appendStep(path, cty.GetAttrStep{Name: k})); ok {
				return s, true
			}
		}
	case ty.IsMapType() && keyed:
		for _, k := range valueKeys(v) {
			if s, ok := findStrayAttr(member(v, k), ty.ElementType(), appendStep(path, cty.IndexStep{Key: cty.StringVal(k)})); ok {
				return s, true
			}
		}
	case (ty.IsListType() || ty.IsSetType() || ty.IsTupleType()) && listed:
		var etys []cty.Type
		if ty.IsTupleType() {
			etys = ty.TupleElementTypes()
		}
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			_, e := it.Element()
			et := cty.DynamicPseudoType
			switch {
			case etys == nil:
				et = ty.ElementType()
			case i < len(etys):
				et = etys[i]
			}
			if s, ok := findStrayAttr(e, et, appendStep(path, cty.IndexStep{Key: cty.NumberIntVal(int64(i))})); ok {
				return s, true
			}
		}
	}
	return strayAttr{}, false
}

// valueKeys are the attribute names or keys of v, an object or a map,
// sorted.
func valueKeys(v cty.Value) []string {
	var keys []string
	if v.Type().IsObjectType() {
		for k := range v.Type().AttributeTypes() {
			keys = append(keys, k)
		}
	} else {
		for it := v.ElementIterator(); it.Next(); {
			k, _ := it.Element()
			keys = append(keys, k.AsString())
		}
	}
	slices.Sort(keys)
	return keys
}

// member is v's attribute or element k, v an object or a map.
func member(v cty.Value, k string) cty.Value {
	if v.Type().IsObjectType() {
		return v.GetAttr(k)
	}
	return v.Index(cty.StringVal(k))
}

// appendStep is path with st after it, in a path of its own.
func appendStep(path cty.Path, st cty.PathStep) cty.Path {
	return append(slices.Clip(path), st)
}

// strayAttrDetail says what is wrong with s in the value given for
// variable name, where from is where it came from ("The value from
// v.json", "The default value"), and what to do.
func strayAttrDetail(name string, s strayAttr, from string) string {
	owner := "var." + pathString(name, s.path)
	has := "no attributes"
	if len(s.attrs) > 0 {
		has = "only " + AndList(s.attrs)
	}
	detail := fmt.Sprintf("%s sets %q, but %q is not an attribute of %s's type, which has %s: converted to the type, the value would lose it without a word.",
		from, s.name, s.name, owner, has)
	if sug := Suggest(s.name, s.attrs); sug != "" {
		detail += fmt.Sprintf(" Did you mean %q?", sug)
	}
	return detail + " Correct the attribute's name, remove it, or add it to the variable's type (optional(T) where it may be left out)."
}

// AndList joins "a", "a and b", "a, b and c".
func AndList(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// strayAttrRange is where the attribute s of the value expr gives was
// written: its name where expr writes the objects out (HCL or JSON),
// else the nearest value holding it that can be found; nil for no expr.
func strayAttrRange(expr hcl.Expression, s strayAttr) *hcl.Range {
	if expr == nil {
		return nil
	}
	for _, st := range s.path {
		var next hcl.Expression
		switch st := st.(type) {
		case cty.GetAttrStep:
			next, _ = memberExpr(expr, st.Name)
		case cty.IndexStep:
			if st.Key.Type() == cty.String {
				next, _ = memberExpr(expr, st.Key.AsString())
			} else if i, acc := st.Key.AsBigFloat().Int64(); acc == 0 {
				if elems, d := hcl.ExprList(expr); !d.HasErrors() && int(i) < len(elems) {
					next = elems[i]
				}
			}
		}
		if next == nil {
			return expr.Range().Ptr()
		}
		expr = next
	}
	if _, key := memberExpr(expr, s.name); key != nil {
		return key.Range().Ptr()
	}
	return expr.Range().Ptr()
}

// memberExpr is the value and the key expression of the item of object
// expression expr whose key is k; nils when expr writes no such item.
func memberExpr(expr hcl.Expression, k string) (val, key hcl.Expression) {
	items, d := hcl.ExprMap(expr)
	if d.HasErrors() {
		return nil, nil
	}
	for _, it := range items {
		kv, d := it.Key.Value(nil)
		if d.HasErrors() {
			continue
		}
		if text, ok := keyText(kv); ok && text == k {
			return it.Value, it.Key
		}
	}
	return nil, nil
}

// strayAttrDiag is the error for an attribute of the value given for
// variable v (from given) that v's type does not have; nil when there is
// none.
func strayAttrDiag(v *Variable, given varValue) *hcl.Diagnostic {
	s, ok := findStrayAttr(given.val, v.Type, nil)
	if !ok {
		return nil
	}
	from := "The value from " + given.source
	rng := strayAttrRange(given.expr, s)
	if given.rng == nil && rng != nil {
		// A value on the command line or in the environment: its
		// column says where, in the value as given.
		if v.Sensitive {
			from += fmt.Sprintf(" (at column %d of the value, which is sensitive, so not shown)", rng.Start.Column)
		} else {
			from += fmt.Sprintf(" (at column %d of %q)", rng.Start.Column, given.text)
		}
		rng = nil
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Invalid value for variable %q", v.Name),
		Detail:   strayAttrDetail(v.Name, s, from),
		Subject:  rng,
		Context:  v.DeclRange.Ptr(),
		Extra:    ValueInput{Source: given.source},
	}
}
