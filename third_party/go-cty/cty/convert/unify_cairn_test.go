package convert

import (
	"fmt"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestUnifyHappyPathIsTheGeneralPath holds cairn's patch (third_party/README.md)
// to upstream's behaviour: for lists of equal types, unify's happy path gives
// the type and the conversions the general path gives.
func TestUnifyHappyPathIsTheGeneralPath(t *testing.T) {
	capsule := cty.Capsule("thing", nil)
	catalogue := []cty.Type{
		cty.String, cty.Number, cty.Bool, cty.DynamicPseudoType, capsule,
		cty.List(cty.String), cty.Set(cty.Number), cty.Map(cty.Bool),
		cty.Object(map[string]cty.Type{"a": cty.String}),
		cty.Tuple([]cty.Type{cty.String, cty.Number}),
	}
	for _, ty := range catalogue {
		for _, n := range []int{1, 2, 3, 17} {
			types := make([]cty.Type, n)
			for i := range types {
				types[i] = ty
			}
			for _, unsafe := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s x%d unsafe=%v", ty.FriendlyName(), n, unsafe), func(t *testing.T) {
					got, gotConvs := unify(types, unsafe)
					want, wantConvs := unifyByPreference(types, unsafe)
					if !got.Equals(want) {
						t.Fatalf("unify gives %#v, the general path %#v", got, want)
					}
					if len(gotConvs) != len(wantConvs) {
						t.Fatalf("%d conversions, the general path %d", len(gotConvs), len(wantConvs))
					}
					for i := range gotConvs {
						if (gotConvs[i] == nil) != (wantConvs[i] == nil) {
							t.Fatalf("conversion %d: nil %v, the general path's nil %v", i, gotConvs[i] == nil, wantConvs[i] == nil)
						}
					}
				})
			}
		}
	}
}

// TestUnifyMixedTypesTakeTheGeneralPath checks that lists whose types differ
// are unified as before the patch.
func TestUnifyMixedTypesTakeTheGeneralPath(t *testing.T) {
	cases := []struct {
		types []cty.Type
		want  cty.Type
	}{
		{[]cty.Type{cty.String, cty.String, cty.Number}, cty.String},
		{[]cty.Type{cty.Number, cty.Number, cty.String}, cty.String},
		{[]cty.Type{cty.Number, cty.Bool}, cty.NilType},
		{[]cty.Type{cty.Number, cty.DynamicPseudoType, cty.Number}, cty.DynamicPseudoType},
	}
	for _, c := range cases {
		got, _ := unify(c.types, false)
		want, _ := unifyByPreference(c.types, false)
		if !got.Equals(c.want) || !want.Equals(c.want) {
			t.Errorf("unify(%#v) = %#v, general path %#v; want %#v", c.types, got, want, c.want)
		}
	}
}

// TestTupleToListIsNotQuadratic counts the type comparisons a conversion of
// a long tuple of strings to a list makes: one pass, not one a pair.
func TestTupleToListIsNotQuadratic(t *testing.T) {
	elems := make([]cty.Value, 5000)
	for i := range elems {
		elems[i] = cty.StringVal(fmt.Sprint(i))
	}
	for _, want := range []cty.Type{cty.List(cty.DynamicPseudoType), cty.List(cty.String), cty.Set(cty.DynamicPseudoType)} {
		got, err := Convert(cty.TupleVal(elems), want)
		if err != nil {
			t.Fatal(err)
		}
		if got.LengthInt() != len(elems) || !got.Type().ElementType().Equals(cty.String) {
			t.Fatalf("converted to %#v, %d elements", got.Type(), got.LengthInt())
		}
	}
	types := make([]cty.Type, 5000)
	for i := range types {
		types[i] = cty.String
	}
	allocs := testing.AllocsPerRun(5, func() { unify(types, false) })
	if allocs > 2 {
		t.Errorf("unify of 5000 equal types made %v allocations; the happy path makes 1", allocs)
	}
}
