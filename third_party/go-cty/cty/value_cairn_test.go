package cty

import (
	"fmt"
	"testing"
)

// TestIsWhollyKnownSetsInAnyOrder holds cairn's patch (third_party/README.md)
// to upstream's behaviour: a set is wholly known exactly when every element
// its (sorted) iterator gives is.
func TestIsWhollyKnownSetsInAnyOrder(t *testing.T) {
	iterated := func(v Value) bool {
		if !v.IsKnown() {
			return false
		}
		if v.IsNull() {
			return true
		}
		for it := v.ElementIterator(); it.Next(); {
			if _, ev := it.Element(); !ev.IsWhollyKnown() {
				return false
			}
		}
		return true
	}
	strs := func(n int, unknownAt ...int) []Value {
		vs := make([]Value, n)
		for i := range vs {
			vs[i] = StringVal(fmt.Sprint(i))
		}
		for _, i := range unknownAt {
			vs[i] = UnknownVal(String)
		}
		return vs
	}
	sets := []Value{
		SetVal(strs(1)),
		SetVal(strs(100)),
		SetVal(strs(100, 0)),
		SetVal(strs(100, 57)),
		SetVal(strs(100, 99, 3)),
		SetVal([]Value{UnknownVal(String)}),
		SetValEmpty(String),
		NullVal(Set(String)),
		UnknownVal(Set(String)),
		SetVal([]Value{ListVal(strs(3)), ListVal(strs(3, 1))}),
		SetVal([]Value{ListVal(strs(3)), ListVal(strs(4))}),
		SetVal([]Value{ObjectVal(map[string]Value{"a": UnknownVal(Number)})}),
		SetVal([]Value{ObjectVal(map[string]Value{"a": NumberIntVal(1)})}),
		SetVal(strs(5)).Mark("sensitive"),
		SetVal(strs(5, 2)).Mark("sensitive"),
	}
	for _, s := range sets {
		want := iterated(s.unmarkForce())
		if got := s.IsWhollyKnown(); got != want {
			t.Errorf("%#v.IsWhollyKnown() = %v, its elements say %v", s, got, want)
		}
		if !s.IsMarked() && s.IsKnown() && !s.IsNull() {
			if got, want := s.Length(), NumberIntVal(int64(s.LengthInt())); want.IsKnown() && got.IsKnown() && s.IsWhollyKnown() && !got.RawEquals(want) {
				t.Errorf("%#v.Length() = %#v, want %#v", s, got, want)
			}
		}
	}
}

// TestIsWhollyKnownCollectionsAsIterated holds cairn's patch
// (third_party/README.md) to upstream's behaviour: an object, map, tuple
// or list is wholly known exactly when every element its iterator gives
// is, unknowns first, last, nested, marked or not.
func TestIsWhollyKnownCollectionsAsIterated(t *testing.T) {
	var iterated func(v Value) bool
	iterated = func(v Value) bool {
		v = v.unmarkForce()
		if !v.IsKnown() {
			return false
		}
		if v.IsNull() || !v.CanIterateElements() {
			return true
		}
		for it := v.ElementIterator(); it.Next(); {
			if _, ev := it.Element(); !iterated(ev) {
				return false
			}
		}
		return true
	}
	vals := func(n int, unknownAt ...int) []Value {
		vs := make([]Value, n)
		for i := range vs {
			vs[i] = StringVal(fmt.Sprint(i))
		}
		for _, i := range unknownAt {
			vs[i] = UnknownVal(String)
		}
		return vs
	}
	attrs := func(vs []Value) map[string]Value {
		m := map[string]Value{}
		for i, v := range vs {
			m[fmt.Sprintf("k%03d", i)] = v
		}
		return m
	}
	var all []Value
	for _, vs := range [][]Value{
		vals(1), vals(1, 0), vals(100), vals(100, 0), vals(100, 57), vals(100, 99, 3),
		{StringVal("a").Mark("sensitive"), StringVal("b")},
		{UnknownVal(String).Mark("sensitive"), StringVal("b")},
		{NullVal(String), StringVal("b")},
		{UnknownVal(String).Refine().StringPrefix("run-").NewValue()},
	} {
		all = append(all, ObjectVal(attrs(vs)), MapVal(attrs(vs)), TupleVal(vs), ListVal(vs))
	}
	nested := []Value{
		ObjectVal(map[string]Value{"a": ListVal(vals(3)), "b": TupleVal(vals(2, 1))}),
		ObjectVal(map[string]Value{"a": ListVal(vals(3)), "b": TupleVal(vals(2))}),
		TupleVal([]Value{ObjectVal(map[string]Value{"x": UnknownVal(Number)}), NumberIntVal(1)}),
		TupleVal([]Value{MapVal(attrs(vals(2))), SetVal(vals(3, 2))}),
		ListVal([]Value{ObjectVal(map[string]Value{"x": DynamicVal})}),
		TupleVal([]Value{DynamicVal, NullVal(DynamicPseudoType)}),
		ObjectVal(map[string]Value{"a": ListVal(vals(3)).Mark("m"), "b": UnknownVal(List(String)).Mark("m")}),
		EmptyObjectVal, EmptyTupleVal, ListValEmpty(String), MapValEmpty(String),
		NullVal(Object(map[string]Type{"a": String})), UnknownVal(Tuple([]Type{String})),
		ObjectVal(attrs(vals(5))).Mark("sensitive"), TupleVal(vals(5, 4)).Mark("sensitive"),
	}
	for _, v := range append(all, nested...) {
		if got, want := v.IsWhollyKnown(), iterated(v); got != want {
			t.Errorf("%#v.IsWhollyKnown() = %v, its elements say %v", v, got, want)
		}
	}
}
