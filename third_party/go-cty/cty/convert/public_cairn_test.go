package convert

import (
	"reflect"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestConvertToDynamicAsBefore holds cairn's patch (third_party/README.md) to
// upstream's behaviour: converting any value to the dynamic pseudo-type gives
// what the conversion getConversion makes for it gives, marks, refinements
// and all.
func TestConvertToDynamicAsBefore(t *testing.T) {
	optional := cty.ObjectWithOptionalAttrs(map[string]cty.Type{"a": cty.String, "b": cty.Number}, []string{"b"})
	values := []cty.Value{
		cty.StringVal("x"), cty.NumberIntVal(3), cty.True, cty.DynamicVal,
		cty.NullVal(cty.String), cty.NullVal(cty.DynamicPseudoType), cty.NullVal(optional),
		cty.UnknownVal(cty.String), cty.UnknownVal(optional),
		cty.UnknownVal(cty.String).Refine().NotNull().StringPrefix("ab").NewValue(),
		cty.StringVal("secret").Mark("sensitive"),
		cty.UnknownVal(cty.Number).Mark("a").Mark("b"),
		cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b").Mark("m")}),
		cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("x"), "b": cty.NullVal(cty.Number)}),
		cty.MapVal(map[string]cty.Value{"k": cty.UnknownVal(cty.Bool)}),
		cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(1)}).Mark("t"),
		cty.SetVal([]cty.Value{cty.NumberIntVal(1), cty.NumberIntVal(2)}),
		cty.EmptyObjectVal, cty.EmptyTupleVal,
		cty.CapsuleVal(cty.Capsule("thing", reflect.TypeOf(0)), new(int)),
	}
	for _, v := range values {
		got, err := Convert(v, cty.DynamicPseudoType)
		if err != nil {
			t.Fatalf("Convert(%#v): %s", v, err)
		}
		want, err := retConversion(getConversion(v.Type(), cty.DynamicPseudoType, true))(v)
		if err != nil {
			t.Fatalf("the conversion of %#v: %s", v, err)
		}
		if !got.RawEquals(want) {
			t.Errorf("Convert(%#v) = %#v, the conversion gives %#v", v, got, want)
		}
	}
}
