package dsl

import (
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// makeToCollectionFunc is tolist or toset: stdlib.MakeToFunc's function,
// with a direct path for the case grids are written with, a tuple (or
// list, or set) whose elements all have one primitive type, say
// toset([for p in setproduct(...) : tostring(...)]). go-cty v1.20.0's
// conversion unified the element types pairwise (O(n²) in the elements:
// 2,500 strings cost over 100 ms; third_party/go-cty's patch makes it one
// pass); when every element already has the one type, the result is the
// same collection of the same values, built directly, without the
// conversion's copies (2,500 strings: 2.7 -> 2.3 ms with the patch,
// BenchmarkToSetGrid). Anything else (mixed or structural element types, null,
// unknown or sensitive elements) goes through stdlib's conversion as
// before, so results and errors are upstream's (TestToCollectionMatchesStdlib).
func makeToCollectionFunc(wantTy cty.Type) function.Function {
	std := stdlib.MakeToFunc(wantTy)
	build := cty.ListVal
	if wantTy.IsSetType() {
		build = cty.SetVal
	}
	return function.New(&function.Spec{
		Description: std.Description(),
		Params: []function.Parameter{{
			Name: "v", Type: cty.DynamicPseudoType, AllowNull: true, AllowDynamicType: true,
		}},
		Type: func(args []cty.Value) (cty.Type, error) {
			if _, ok := uniformPrimitive(args[0].Type()); ok {
				// A conversion exists: stdlib's type is wantTy then too.
				return wantTy, nil
			}
			return std.ReturnTypeForValues(args)
		},
		Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
			if vals, ok := plainElements(args[0]); ok {
				return build(vals), nil
			}
			return std.Call(args)
		},
	})
}

// uniformPrimitive reports the element type of a tuple, list or set type
// whose elements all have one primitive type (string, number or bool).
func uniformPrimitive(ty cty.Type) (cty.Type, bool) {
	switch {
	case ty.IsListType() || ty.IsSetType():
		ety := ty.ElementType()
		return ety, ety.IsPrimitiveType()
	case ty.IsTupleType():
		etys := ty.TupleElementTypes()
		if len(etys) == 0 || !etys[0].IsPrimitiveType() {
			return cty.NilType, false
		}
		for _, et := range etys[1:] {
			if !et.Equals(etys[0]) {
				return cty.NilType, false
			}
		}
		return etys[0], true
	}
	return cty.NilType, false
}

// plainElements is v's elements when v is a known, non-null, unmarked
// tuple, list or set of at least one element, every element of one
// primitive type, known, not null and unmarked: the case a conversion to a
// list or set keeps every value as it is.
func plainElements(v cty.Value) ([]cty.Value, bool) {
	if !v.IsKnown() || v.IsNull() || v.IsMarked() {
		return nil, false
	}
	if _, ok := uniformPrimitive(v.Type()); !ok || v.LengthInt() == 0 {
		return nil, false
	}
	vals := make([]cty.Value, 0, v.LengthInt())
	for e := range Elements(v) {
		if !e.IsKnown() || e.IsNull() || e.IsMarked() {
			return nil, false
		}
		vals = append(vals, e)
	}
	return vals, true
}

// makeToStringFunc is tostring: stdlib.MakeToFunc(cty.String), with a
// number written by NumberText (the same text cty's conversion writes,
// without its shortest-decimal search for whole numbers).
func makeToStringFunc() function.Function {
	std := stdlib.MakeToFunc(cty.String)
	return function.New(&function.Spec{
		Description: std.Description(),
		Params: []function.Parameter{{
			Name: "v", Type: cty.DynamicPseudoType, AllowNull: true, AllowDynamicType: true,
		}},
		Type: func(args []cty.Value) (cty.Type, error) {
			if args[0].Type() == cty.Number {
				return cty.String, nil
			}
			return std.ReturnTypeForValues(args)
		},
		Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
			v := args[0]
			if v.Type() == cty.Number && v.IsKnown() && !v.IsNull() && !v.IsMarked() {
				return cty.StringVal(NumberText(v.AsBigFloat())), nil
			}
			return std.Call(args)
		},
	})
}
