package dsl

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// distinct keeps the first of equal elements, in order, as stdlib's does:
// every result and error is stdlib's for the same argument.
func TestDistinctMatchesStdlib(t *testing.T) {
	s := cty.StringVal
	args := []cty.Value{
		cty.ListVal([]cty.Value{s("b"), s("a"), s("b"), s("c"), s("a")}),
		cty.ListVal([]cty.Value{s("e\u0301"), s("\u00e9"), s("x")}), // NFD and NFC: one text
		cty.ListVal([]cty.Value{s(""), s(""), s(" ")}),
		cty.ListVal([]cty.Value{cty.True, cty.False, cty.True, cty.True}),
		cty.ListVal([]cty.Value{cty.NumberIntVal(1), cty.NumberFloatVal(1.0), cty.MustParseNumberVal("1.00"), cty.NumberIntVal(2)}),
		cty.ListVal([]cty.Value{s("a"), cty.NullVal(cty.String), s("a"), cty.NullVal(cty.String)}),
		cty.ListVal([]cty.Value{s("a"), cty.UnknownVal(cty.String), s("a")}),
		cty.ListVal([]cty.Value{s("a"), s("b").Mark("sensitive"), s("b"), s("a")}),
		cty.ListVal([]cty.Value{s("a"), s("a")}).Mark("sensitive"),
		cty.ListVal([]cty.Value{cty.ListVal([]cty.Value{s("x")}), cty.ListVal([]cty.Value{s("x")})}),
		cty.ListValEmpty(cty.String),
		cty.ListVal([]cty.Value{s("only")}),
		cty.NullVal(cty.List(cty.String)),
		cty.UnknownVal(cty.List(cty.String)),
		cty.TupleVal([]cty.Value{s("a"), s("a")}),
		cty.DynamicVal,
	}
	rng := rand.New(rand.NewSource(1))
	for range 50 {
		var vs []cty.Value
		for range 1 + rng.Intn(40) {
			vs = append(vs, s(fmt.Sprint(rng.Intn(12))))
		}
		args = append(args, cty.ListVal(vs))
	}
	ours := Functions(".", nil)["distinct"]
	for _, a := range args {
		got, gerr := ours.Call([]cty.Value{a})
		exp, eerr := stdlib.DistinctFunc.Call([]cty.Value{a})
		if fmt.Sprint(gerr) != fmt.Sprint(eerr) {
			t.Errorf("distinct(%#v): error %v, stdlib's %v", a, gerr, eerr)
			continue
		}
		if gerr == nil && (!got.RawEquals(exp) || !got.Type().Equals(exp.Type())) {
			t.Errorf("distinct(%#v) = %#v, stdlib's %#v", a, got, exp)
		}
	}
}

// 10,000 run names, all different: stdlib compares each with every one
// kept before it.
func BenchmarkDistinctRunNames(b *testing.B) {
	var vs []cty.Value
	for i := range 10000 {
		vs = append(vs, cty.StringVal(fmt.Sprintf("run-%d", i)))
	}
	arg := []cty.Value{cty.ListVal(vs)}
	ours := Functions(".", nil)["distinct"]
	b.Run("cairn", func(b *testing.B) {
		for b.Loop() {
			if _, err := ours.Call(arg); err != nil {
				b.Fatal(err)
			}
		}
	})
}
