package cty

import (
	"fmt"
	"math/big"
	"sync"
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

// TestNumberIntValSharedAsMade holds cairn's patch (third_party/README.md)
// to upstream's behaviour: NumberIntVal of a small whole number, shared,
// is the number upstream makes (value, precision, sign, mode), for any
// goroutine, and a copy taken of it and changed changes no other.
func TestNumberIntValSharedAsMade(t *testing.T) {
	check := func(i int64) {
		t.Helper()
		got, want := NumberIntVal(i), NumberVal(new(big.Float).SetInt64(i))
		g, w := got.v.(*big.Float), want.v.(*big.Float)
		if g.Cmp(w) != 0 || g.Prec() != w.Prec() || g.Mode() != w.Mode() || g.Signbit() != w.Signbit() || g.Acc() != w.Acc() || !got.RawEquals(want) {
			t.Errorf("NumberIntVal(%d) = %v (prec %d), upstream makes %v (prec %d)", i, g, g.Prec(), w, w.Prec())
		}
	}
	for _, i := range []int64{-1 << 63, -65537, -1, 0, 1, 2, 63, 64, 1023, 1024, 65534, 65535, 65536, 1 << 40, 1<<63 - 1} {
		check(i)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range int64(3000) {
				check(i)
			}
		})
	}
	wg.Wait()
	c := NumberIntVal(7).AsBigFloat()
	c.SetInt64(8)
	if NumberIntVal(7).AsBigFloat().Cmp(big.NewFloat(7)) != 0 {
		t.Error("changing a copy of NumberIntVal(7) changed NumberIntVal(7)")
	}
}
