package dsl

import (
	"iter"

	"github.com/zclconf/go-cty/cty"
)

// indexKeys are the index values of the first elements of a list or
// tuple, made once: cty's element iterator makes a number value (a
// big.Float) for every element it yields.
var indexKeys = func() []cty.Value {
	keys := make([]cty.Value, 64)
	for i := range keys {
		keys[i] = cty.NumberIntVal(int64(i))
	}
	return keys
}()

// Elements yields the elements of a known, non-null, unmarked list, tuple
// or set v, in order: what v.ElementIterator yields, without making the
// index values of the list and tuple elements. The elements keep their
// own marks.
func Elements(v cty.Value) iter.Seq[cty.Value] {
	return func(yield func(cty.Value) bool) {
		ty := v.Type()
		if ty.IsSetType() {
			for it := v.ElementIterator(); it.Next(); {
				if _, e := it.Element(); !yield(e) {
					return
				}
			}
			return
		}
		n := v.LengthInt()
		for i := 0; i < n; i++ {
			var key cty.Value
			if i < len(indexKeys) {
				key = indexKeys[i]
			} else {
				key = cty.NumberIntVal(int64(i))
			}
			if !yield(v.Index(key)) {
				return
			}
		}
	}
}
