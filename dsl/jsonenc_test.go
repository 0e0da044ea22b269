package dsl

import (
	"math/big"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// MarshalJSON writes what ctyjson.Marshal writes, and fails where it fails.
func TestMarshalJSONMatchesCty(t *testing.T) {
	negZero := new(big.Float).Neg(big.NewFloat(0))
	huge, _, _ := big.ParseFloat("123456789012345678901234567890", 10, 512, big.ToNearestEven)
	nums := []cty.Value{
		cty.NumberIntVal(0), cty.NumberIntVal(-7), cty.NumberIntVal(1 << 62), cty.NumberFloatVal(1.5),
		cty.NumberFloatVal(0.1), cty.MustParseNumberVal("0.1"), cty.MustParseNumberVal("1e30"),
		cty.MustParseNumberVal("-9223372036854775808"), cty.MustParseNumberVal("9223372036854775808"),
		cty.NumberVal(negZero), cty.NumberVal(huge), cty.MustParseNumberVal("2.50"),
	}
	vals := append([]cty.Value{
		cty.StringVal("a\"b<>&\u2028"), cty.True, cty.False, cty.NullVal(cty.String),
		cty.ListVal(nums), cty.TupleVal(nums), cty.SetVal(nums),
		cty.MapVal(map[string]cty.Value{"b": cty.NumberIntVal(2), "a": cty.NumberIntVal(1)}),
		cty.ObjectVal(map[string]cty.Value{
			"z": cty.ListValEmpty(cty.String), "seed": cty.NumberIntVal(3), "temperature": cty.NumberIntVal(0),
			"n": cty.NullVal(cty.Number), "o": cty.EmptyObjectVal,
			"s": cty.SetVal([]cty.Value{cty.StringVal("y"), cty.StringVal("x")}),
		}),
		cty.PositiveInfinity, cty.NegativeInfinity,
		cty.ListVal([]cty.Value{cty.PositiveInfinity}),
		cty.UnknownVal(cty.String), cty.ListVal([]cty.Value{cty.UnknownVal(cty.Number)}),
		cty.StringVal("s").Mark("sensitive"),
		cty.TupleVal([]cty.Value{cty.StringVal("s").Mark("sensitive")}),
		cty.CapsuleVal(cty.Capsule("c", reflect.TypeOf(0)), new(int)),
	}, nums...)
	for _, v := range vals {
		for _, ty := range []cty.Type{v.Type(), cty.DynamicPseudoType} {
			got, gerr := MarshalJSON(v, ty)
			want, werr := ctyjson.Marshal(v, ty)
			if string(got) != string(want) || (gerr == nil) != (werr == nil) ||
				(gerr != nil && gerr.Error() != werr.Error()) {
				t.Errorf("MarshalJSON(%#v, %#v) = %s, %v; cty: %s, %v", v, ty, got, gerr, want, werr)
			}
		}
	}
}

// jsonencode gives cty's text for every value, through MarshalJSON where
// it can: nested collections, numbers whole and not, marks, nulls; and
// cty's refined unknowns where the value is not wholly known.
func TestJSONEncodeAsCty(t *testing.T) {
	obj := cty.ObjectVal(map[string]cty.Value{
		"lr": cty.MustParseNumberVal("0.001"), "seed": cty.NumberIntVal(3), "neg": cty.NumberIntVal(-12),
		"tags": cty.SetVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a<&>")}),
		"m":    cty.MapVal(map[string]cty.Value{"x": cty.True}), "none": cty.NullVal(cty.List(cty.String)),
	})
	for _, v := range []cty.Value{
		obj, cty.TupleVal([]cty.Value{obj, cty.NumberFloatVal(1.5), cty.EmptyObjectVal, cty.EmptyTupleVal}),
		cty.NullVal(cty.DynamicPseudoType), cty.NullVal(cty.Number), cty.StringVal("é\u2028"),
		cty.MustParseNumberVal("123456789012345678901234567890"), cty.NumberVal(new(big.Float).Neg(big.NewFloat(0))),
		obj.Mark("sensitive"), cty.TupleVal([]cty.Value{cty.StringVal("s").Mark("sensitive")}),
		cty.UnknownVal(cty.String), cty.UnknownVal(cty.List(cty.Number)), cty.DynamicVal,
		cty.UnknownVal(cty.EmptyObject).RefineNotNull(),
		cty.TupleVal([]cty.Value{cty.UnknownVal(cty.Number)}),
		cty.PositiveInfinity,
	} {
		got, gerr := jsonEncodeFunc.Call([]cty.Value{v})
		want, werr := stdlib.JSONEncodeFunc.Call([]cty.Value{v})
		if werr != nil {
			require.Error(t, gerr, "%#v", v)
			assert.Equal(t, werr.Error(), gerr.Error())
			continue
		}
		require.NoError(t, gerr, "%#v", v)
		if !want.IsKnown() {
			require.False(t, got.IsKnown(), "%#v", v)
			assert.Equal(t, want.Range().StringPrefix(), got.Range().StringPrefix(), "%#v", v)
			assert.Equal(t, want.Range().CouldBeNull(), got.Range().CouldBeNull(), "%#v", v)
			continue
		}
		assert.True(t, got.RawEquals(want), "%#v: %#v, cty's %#v", v, got, want)
	}
}
