package cty

import (
	"fmt"
	"testing"
)

// TestContainsMarkedAsDeepValues holds cairn's patch (third_party/README.md)
// to upstream's behaviour: a value contains a mark exactly when a value
// DeepValues visits is marked, and exactly when UnmarkDeep finds marks in
// it (Function.Call copies an argument without its marks only then).
func TestContainsMarkedAsDeepValues(t *testing.T) {
	visited := func(v Value) bool {
		for _, dv := range DeepValues(v) {
			if dv.IsMarked() {
				return true
			}
		}
		return false
	}
	m := NewValueMarks("sensitive")
	strs := func(n int, markedAt ...int) []Value {
		vs := make([]Value, n)
		for i := range vs {
			vs[i] = StringVal(fmt.Sprint(i))
		}
		for _, i := range markedAt {
			vs[i] = vs[i].WithMarks(m)
		}
		return vs
	}
	attrs := func(vs []Value) map[string]Value {
		out := map[string]Value{}
		for i, v := range vs {
			out[fmt.Sprintf("k%03d", i)] = v
		}
		return out
	}
	nestedUnknown := UnknownVal(List(String)).unknownWithNewNestedMarks(m)
	var vals []Value
	for _, vs := range [][]Value{
		strs(1), strs(1, 0), strs(100), strs(100, 0), strs(100, 57), strs(100, 99),
		{UnknownVal(String).WithMarks(m), StringVal("b")},
		{UnknownVal(String), StringVal("b")},
		{NullVal(String).WithMarks(m), StringVal("b")},
		{NullVal(String), StringVal("b")},
	} {
		vals = append(vals, ObjectVal(attrs(vs)), MapVal(attrs(vs)), TupleVal(vs), ListVal(vs), SetVal(vs))
	}
	vals = append(vals,
		StringVal("a"), StringVal("a").WithMarks(m), NumberIntVal(1), True.WithMarks(m),
		NullVal(String), NullVal(String).WithMarks(m), UnknownVal(String), DynamicVal, DynamicVal.WithMarks(m),
		nestedUnknown, ListVal([]Value{nestedUnknown}), ObjectVal(map[string]Value{"u": nestedUnknown}),
		ObjectVal(map[string]Value{"a": ListVal(strs(3)), "b": TupleVal(strs(2, 1))}),
		ObjectVal(map[string]Value{"a": ListVal(strs(3)), "b": TupleVal(strs(2))}),
		TupleVal([]Value{ObjectVal(map[string]Value{"x": MapVal(attrs(strs(2, 1)))}), NumberIntVal(1)}),
		TupleVal([]Value{SetVal([]Value{ListVal(strs(2, 0))})}),
		ListVal([]Value{ObjectVal(map[string]Value{"x": NullVal(DynamicPseudoType)})}),
		EmptyObjectVal, EmptyTupleVal, ListValEmpty(String), MapValEmpty(String), SetValEmpty(String),
		EmptyObjectVal.WithMarks(m), NullVal(Object(map[string]Type{"a": String})),
		ObjectVal(attrs(strs(5))).WithMarks(m), TupleVal(strs(5)).WithMarks(m),
	)
	for _, v := range vals {
		want := visited(v)
		if got := v.ContainsMarked(); got != want {
			t.Errorf("%#v.ContainsMarked() = %v, DeepValues says %v", v, got, want)
		}
		if _, marks := v.UnmarkDeep(); (len(marks) > 0) != want {
			t.Errorf("%#v: UnmarkDeep found marks %v, DeepValues says %v", v, marks, want)
		}
	}
}
