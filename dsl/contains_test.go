package dsl

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// contains answers as stdlib's for every list, tuple and set it is asked
// of: strings found first, last or not at all, null elements, unknown
// ones before and after a match, refined unknowns, other types, marks,
// empty and unknown collections.
func TestContainsMatchesStdlib(t *testing.T) {
	strs := func(ss ...string) []cty.Value {
		var out []cty.Value
		for _, s := range ss {
			out = append(out, cty.StringVal(s))
		}
		return out
	}
	abc := strs("a", "b", "c")
	withNull := append(strs("a"), cty.NullVal(cty.String), cty.StringVal("c"))
	unknownFirst := append([]cty.Value{cty.UnknownVal(cty.String)}, abc...)
	prefixed := append([]cty.Value{cty.UnknownVal(cty.String).Refine().StringPrefix("run-").NewValue()}, abc...)
	lists := []cty.Value{
		cty.ListVal(abc), cty.TupleVal(abc), cty.SetVal(abc),
		cty.ListVal(withNull), cty.TupleVal(withNull),
		cty.ListVal(unknownFirst), cty.TupleVal(unknownFirst), cty.SetVal(unknownFirst),
		cty.TupleVal(prefixed),
		cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(1), cty.True}),
		cty.ListVal([]cty.Value{cty.NumberIntVal(1), cty.NumberIntVal(2)}),
		cty.ListValEmpty(cty.String), cty.EmptyTupleVal, cty.SetValEmpty(cty.String),
		cty.UnknownVal(cty.List(cty.String)), cty.ListVal(abc).Mark("sensitive"),
		cty.UnknownVal(cty.List(cty.String)).Mark("sensitive"), cty.SetVal(abc).Mark("sensitive"),
		cty.DynamicVal, cty.DynamicVal.Mark("sensitive"), cty.StringVal("abc"),
		cty.TupleVal([]cty.Value{cty.StringVal("a").Mark("sensitive"), cty.StringVal("b")}),
		cty.ListVal(strs("e\u0301")), cty.NullVal(cty.List(cty.String)),
		cty.TupleVal([]cty.Value{cty.ListVal(abc), cty.StringVal("a")}),
	}
	for _, list := range lists {
		for _, v := range []cty.Value{
			cty.StringVal("a"), cty.StringVal("c"), cty.StringVal("z"), cty.StringVal("\u00e9"), cty.StringVal("run-1"),
			cty.NullVal(cty.String), cty.UnknownVal(cty.String), cty.NumberIntVal(1), cty.StringVal("a").Mark("m"),
			cty.UnknownVal(cty.String).Mark("m"), cty.DynamicVal, cty.NullVal(cty.DynamicPseudoType),
		} {
			name := fmt.Sprintf("%#v in %#v", v, list)
			got, gerr := containsFunc.Call([]cty.Value{list, v})
			want, werr := stdlib.ContainsFunc.Call([]cty.Value{list, v})
			sameCall(t, name, got, gerr, want, werr)
			// index finds strings as contains does, and answers as its
			// general path does.
			got, gerr = indexFunc.Call([]cty.Value{list, v})
			want, werr = indexAnyFunc.Call([]cty.Value{list, v})
			sameCall(t, "index: "+name, got, gerr, want, werr)
		}
	}
}

// sameCall checks one function's answer against another's: the same
// error, or the same value (unknown or not) with the same marks.
func sameCall(t *testing.T, name string, got cty.Value, gerr error, want cty.Value, werr error) {
	t.Helper()
	{
		{
			if werr != nil {
				require.Error(t, gerr, name)
				assert.Equal(t, werr.Error(), gerr.Error(), name)
				return
			}
			require.NoError(t, gerr, name)
			assert.Equal(t, want.Marks(), got.Marks(), name)
			if !want.IsKnown() {
				assert.False(t, got.IsKnown(), name)
				return
			}
			assert.True(t, got.RawEquals(want), "%s: %#v, the general path's %#v", name, got, want)
		}
	}
}

// BenchmarkContains looks for the last of 10,000 run names as contains
// does, and as stdlib's does.
//
//	go test ./dsl -run XXX -bench Contains
func BenchmarkContains(b *testing.B) {
	var names []cty.Value
	for i := range 10000 {
		names = append(names, cty.StringVal(fmt.Sprintf("run-%d", i)))
	}
	for _, c := range []struct {
		name string
		list cty.Value
	}{{"tuple", cty.TupleVal(names)}, {"set", cty.SetVal(names)}} {
		args := []cty.Value{c.list, cty.StringVal("run-9999")}
		b.Run(c.name+"/cairn", func(b *testing.B) {
			for b.Loop() {
				containsFunc.Call(args)
			}
		})
		b.Run(c.name+"/stdlib", func(b *testing.B) {
			for b.Loop() {
				stdlib.ContainsFunc.Call(args)
			}
		})
	}
}
