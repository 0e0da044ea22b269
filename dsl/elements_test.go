package dsl

import (
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
