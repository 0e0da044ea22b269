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
