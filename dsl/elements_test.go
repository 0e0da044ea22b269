package dsl

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zclconf/go-cty/cty"
)

// Elements yields what ElementIterator yields, for lists, tuples and sets,
// elements marked or not, short and longer than the table of index values.
func TestElementsIsTheElementIterator(t *testing.T) {
	long := make([]cty.Value, 100)
	for i := range long {
		long[i] = cty.NumberIntVal(int64(i * 3))
	}
	marked := cty.TupleVal([]cty.Value{cty.StringVal("a").Mark("secret"), cty.True})
	for name, v := range map[string]cty.Value{
		"tuple":          cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(1), cty.ListValEmpty(cty.String)}),
		"list":           cty.ListVal([]cty.Value{cty.StringVal("x"), cty.StringVal("y")}),
		"long list":      cty.ListVal(long),
		"long tuple":     cty.TupleVal(long),
		"set":            cty.SetVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a")}),
		"empty tuple":    cty.EmptyTupleVal,
		"marked element": marked,
	} {
		var want, got []cty.Value
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			want = append(want, e)
		}
		for e := range Elements(v) {
			got = append(got, e)
		}
		assert.Equal(t, len(want), len(got), name)
		for i := range want {
			assert.True(t, want[i].RawEquals(got[i]), "%s[%d]: %#v, want %#v", name, i, got[i], want[i])
		}
	}
	// The caller can stop early.
	n := 0
	for range Elements(cty.TupleVal(long)) {
		n++
		if n == 5 {
			break
		}
	}
	assert.Equal(t, 5, n)
}

// SetStrings reads a set of strings as iterating it does, in its order, and
// leaves every other value to the iterator: a set holding an unknown or a
// null string, a marked set, a list, a set of another type.
func TestSetStringsReadsTheSet(t *testing.T) {
	var grid []cty.Value
	for i := 0; i < 2500; i++ {
		grid = append(grid, cty.StringVal(fmt.Sprint(i*7919%2500)))
	}
	for name, v := range map[string]cty.Value{
		"grid":    cty.SetVal(grid),
		"one":     cty.SetVal([]cty.Value{cty.StringVal("x")}),
		"empty":   cty.SetValEmpty(cty.String),
		"unicode": cty.SetVal([]cty.Value{cty.StringVal("é"), cty.StringVal("e\u0301x"), cty.StringVal(""), cty.StringVal("Z"), cty.StringVal("a b")}),
	} {
		got, ok := SetStrings(v)
		if !assert.True(t, ok, "%s: the set's elements were not read", name) {
			continue
		}
		want := []string{}
		for e := range Elements(v) {
			want = append(want, e.AsString())
		}
		assert.Equal(t, want, append([]string{}, got...), name)
	}
	for name, v := range map[string]cty.Value{
		"unknown element": cty.SetVal([]cty.Value{cty.StringVal("a"), cty.UnknownVal(cty.String)}),
		"null element":    cty.SetVal([]cty.Value{cty.StringVal("a"), cty.NullVal(cty.String)}),
		"marked":          cty.SetVal([]cty.Value{cty.StringVal("a")}).Mark("secret"),
		"marked element":  cty.SetVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b").Mark("secret")}),
		"unknown":         cty.UnknownVal(cty.Set(cty.String)),
		"null":            cty.NullVal(cty.Set(cty.String)),
		"list":            cty.ListVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a")}),
		"numbers":         cty.SetVal([]cty.Value{cty.NumberIntVal(2), cty.NumberIntVal(10)}),
	} {
		_, ok := SetStrings(v)
		assert.False(t, ok, name)
	}
}
