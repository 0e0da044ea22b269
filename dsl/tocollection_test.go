package dsl

import (
	"fmt"
	"testing"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// tolist and toset take a direct path for tuples of one primitive type;
// every result and error is stdlib's (upstream go-cty's) for the same
// argument.
func TestToCollectionMatchesStdlib(t *testing.T) {
	strs := func(n int) []cty.Value {
		var vs []cty.Value
		for i := 0; i < n; i++ {
			vs = append(vs, cty.StringVal(fmt.Sprint(i%7)))
		}
		return vs
	}
	args := []cty.Value{
		cty.TupleVal(strs(20)),
		cty.TupleVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a"), cty.StringVal("b")}),
		cty.TupleVal([]cty.Value{cty.NumberIntVal(3), cty.NumberFloatVal(1.5), cty.NumberIntVal(3)}),
		cty.TupleVal([]cty.Value{cty.True, cty.False}),
		cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(1)}),
		cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NullVal(cty.String)}),
		cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.UnknownVal(cty.String)}),
		cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("s").Mark("sensitive")}),
		cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}).Mark("sensitive"),
		cty.TupleVal([]cty.Value{cty.ListValEmpty(cty.String), cty.ListVal([]cty.Value{cty.StringVal("x")})}),
		cty.TupleVal([]cty.Value{cty.EmptyObjectVal}),
		cty.EmptyTupleVal,
		cty.ListVal(strs(5)),
		cty.SetVal(strs(9)),
		cty.ListValEmpty(cty.String),
		cty.MapVal(map[string]cty.Value{"a": cty.StringVal("x")}),
		cty.StringVal("a"),
		cty.NullVal(cty.Tuple([]cty.Type{cty.String})),
		cty.UnknownVal(cty.Tuple([]cty.Type{cty.String})),
		cty.DynamicVal,
	}
	for _, name := range []string{"tolist", "toset"} {
		ours := Functions(".", nil)[name]
		want := stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType))
		if name == "toset" {
			want = stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType))
		}
		for _, a := range args {
			got, gerr := ours.Call([]cty.Value{a})
			exp, eerr := want.Call([]cty.Value{a})
			if fmt.Sprint(gerr) != fmt.Sprint(eerr) {
				t.Errorf("%s(%#v): error %v, stdlib's %v", name, a, gerr, eerr)
				continue
			}
			if gerr != nil {
				continue
			}
			if !got.RawEquals(exp) || !got.Type().Equals(exp.Type()) {
				t.Errorf("%s(%#v) = %#v, stdlib's %#v", name, a, got, exp)
			}
		}
	}
}

// tostring writes numbers as stdlib's conversion does.
func TestToStringMatchesStdlib(t *testing.T) {
	ours, std := Functions(".", nil)["tostring"], stdlib.MakeToFunc(cty.String)
	for _, a := range []cty.Value{
		cty.NumberIntVal(0), cty.NumberIntVal(-12), cty.NumberIntVal(1 << 62), cty.NumberFloatVal(2.5),
		cty.MustParseNumberVal("0.1"), cty.MustParseNumberVal("1e40"), cty.MustParseNumberVal("-0"),
		cty.PositiveInfinity, cty.NullVal(cty.Number), cty.UnknownVal(cty.Number),
		cty.NumberIntVal(3).Mark("sensitive"), cty.StringVal("x"), cty.True, cty.EmptyObjectVal,
	} {
		got, gerr := ours.Call([]cty.Value{a})
		exp, eerr := std.Call([]cty.Value{a})
		if fmt.Sprint(gerr) != fmt.Sprint(eerr) || (gerr == nil && !got.RawEquals(exp)) {
			t.Errorf("tostring(%#v) = %#v, %v; stdlib's %#v, %v", a, got, gerr, exp, eerr)
		}
	}
}

// A grid's keys: 2,500 strings made a set directly, and through stdlib's
// conversion (over 100 ms before third_party/go-cty's patch of unify).
func BenchmarkToSetGrid(b *testing.B) {
	var vs []cty.Value
	for i := 0; i < 2500; i++ {
		vs = append(vs, cty.StringVal(fmt.Sprint(i)))
	}
	arg := cty.TupleVal(vs)
	for _, c := range []struct {
		name string
		fn   func([]cty.Value) (cty.Value, error)
	}{
		{"cairn", Functions(".", nil)["toset"].Call},
		{"stdlib", stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)).Call},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := c.fn([]cty.Value{arg}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
