package dsl

import (
	"iter"
	"reflect"
	"sort"

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

// SetStrings returns the elements of a known, non-null, unmarked set of
// strings in cty's order for them (sorted), when every element is a known,
// non-null string: what v.ElementIterator yields, without cty's ordering.
// cty sorts a set each time it is iterated, comparing two cty values by
// equality first: 24 ms for a grid's 2,500 keys, where sorting the
// strings takes 0.2 ms. The elements are read from the set's buckets;
// ok is false (iterate the set instead) for any other value or when the
// set is not laid out as go-cty v1.20 lays it out (TestSetStringsReadsTheSet
// holds the two to the same result).
func SetStrings(v cty.Value) (keys []string, ok bool) {
	if !v.Type().Equals(cty.Set(cty.String)) || !v.IsKnown() || v.IsNull() || v.IsMarked() {
		return nil, false
	}
	// cty.Value{ty, v}: v holds a set.Set{vals map[int][]any, rules}, the
	// elements bucketed by hash.
	inner := reflect.ValueOf(v).FieldByName("v")
	if inner.Kind() != reflect.Interface || inner.IsNil() || inner.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	buckets := inner.Elem().FieldByName("vals")
	if buckets.Kind() != reflect.Map {
		return nil, false
	}
	n := v.LengthInt()
	keys = make([]string, 0, n)
	for it := buckets.MapRange(); it.Next(); {
		b := it.Value()
		if b.Kind() != reflect.Slice {
			return nil, false
		}
		for i := 0; i < b.Len(); i++ {
			e := b.Index(i)
			if e.Kind() == reflect.Interface {
				e = e.Elem()
			}
			if e.Kind() != reflect.String {
				// Unknown, null or marked: cty orders those.
				return nil, false
			}
			keys = append(keys, e.String())
		}
	}
	if len(keys) != n {
		return nil, false
	}
	sort.Strings(keys)
	return keys, true
}
