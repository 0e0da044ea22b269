package dsl

import (
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// containsFunc is stdlib's contains with a direct path for a string looked
// for among strings. stdlib compares the string with each element through
// Equals, after sorting a set, on every call: 4.7 ms for 10,000 run names,
// and a grid filtered by such a list ([for r in local.runs : r if
// contains(local.done, r)]) took 5 s for 1,000 runs. A string equals
// another exactly when its text does (cty keeps strings in NFC), and a set
// of strings is asked through its own lookup. Anything else (another type
// looked for or among the elements, an unknown element, an empty list)
// goes through stdlib as before (TestContainsMatchesStdlib).
//
// Its parameters take any value (takingAnyValue), where stdlib's refuse
// marked, unknown, null and untyped ones: cty then neither walks the list
// for marks nor copies it without them on each call (two walks of every
// element, more than the search itself), and any value that is not plain
// goes to stdlib's function as it came, which unmarks, answers unknown,
// refuses and marks its result as before.
var containsFunc = function.New(&function.Spec{
	Description:  stdlib.ContainsFunc.Description(),
	Params:       takingAnyValue(stdlib.ContainsFunc.Params()),
	Type:         untypedOr(cty.Bool),
	RefineResult: refineNotNull,
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if found, ok := containsText(args[0], args[1]); ok {
			return cty.BoolVal(found), nil
		}
		return stdlib.ContainsFunc.Call(args)
	},
})

// containsText reports whether the known, non-null string v is an element
// of list, a known list, tuple or set of at least one element, all of them
// known strings (null or not); ok is false for anything else.
func containsText(list, v cty.Value) (found, ok bool) {
	if ty := list.Type(); ty.IsSetType() {
		if !plainSearch(list, v) || ty.ElementType() != cty.String || list.LengthInt() == 0 || !list.IsWhollyKnown() {
			return false, false
		}
		return list.HasElement(v).True(), true
	}
	i, ok := textIndex(list, v)
	return i >= 0, ok
}

// plainSearch reports whether v is a plain string (plainText) looked for
// in list, a known, non-null, unmarked value.
func plainSearch(list, v cty.Value) bool {
	return plainText(v) && list.IsKnown() && !list.IsNull() && !list.IsMarked()
}

// textIndex is the position of the first element of list equal to v (-1
// for none), where list is a known, unmarked list or tuple of at least one
// element, all of them known, unmarked strings (null or not), and v a
// plain string; ok is false for anything else.
func textIndex(list, v cty.Value) (int, bool) {
	if !plainSearch(list, v) {
		return 0, false
	}
	if t, ok := uniformPrimitive(list.Type()); !ok || t != cty.String || list.Type().IsSetType() || list.LengthInt() == 0 {
		return 0, false
	}
	s := v.AsString()
	i := 0
	for e := range Elements(list) {
		if !e.IsKnown() || e.IsMarked() {
			return 0, false
		}
		if !e.IsNull() && e.AsString() == s {
			return i, true
		}
		i++
	}
	return -1, true
}

// refineNotNull refines a function's unknown result as not null, as
// stdlib's functions that never return null do.
func refineNotNull(b *cty.RefinementBuilder) *cty.RefinementBuilder { return b.NotNull() }

// untypedOr is the type function of a function returning ty whose
// parameters take values of no known type (takingAnyValue): no type
// yet for such an argument, as cty gives the function that refuses them.
func untypedOr(ty cty.Type) function.TypeFunc {
	return func(args []cty.Value) (cty.Type, error) {
		for _, a := range args {
			if a.Type() == cty.DynamicPseudoType {
				return cty.DynamicPseudoType, nil
			}
		}
		return ty, nil
	}
}

// takingAnyValue is params taking any value: marked, unknown, null, of no
// known type. A function with such parameters hands what is not plain to
// the function whose parameters they were, which decides as before (its
// errors, unknown answers and marks).
func takingAnyValue(params []function.Parameter) []function.Parameter {
	out := append([]function.Parameter(nil), params...)
	for i := range out {
		out[i].AllowMarked, out[i].AllowUnknown, out[i].AllowDynamicType, out[i].AllowNull = true, true, true, true
	}
	return out
}
