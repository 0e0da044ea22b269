package dsl

import (
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// distinctFunc is stdlib's distinct with a direct path for lists of known,
// non-null strings or bools. stdlib compares each element with every one
// kept before it (O(n²) for n different values: 10,000 run names took 38 s
// of CPU); a string equals another exactly when its text does (cty keeps
// strings in NFC), so a set of the texts seen keeps the same first
// occurrences, in the same order. Anything else (numbers, whose equal
// values may be written differently, structural or unknown elements, null)
// goes through stdlib as before (TestDistinctMatchesStdlib).
var distinctFunc = function.New(&function.Spec{
	Description: stdlib.DistinctFunc.Description(),
	Params:      stdlib.DistinctFunc.Params(),
	Type: func(args []cty.Value) (cty.Type, error) {
		return args[0].Type(), nil
	},
	RefineResult: refineNotNull,
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if out, ok := distinctTexts(args[0]); ok {
			return out, nil
		}
		return stdlib.DistinctFunc.Call(args)
	},
})

// distinctTexts is list's distinct elements when list is a list of known,
// non-null, unmarked strings or bools (plainElements), at least one; ok is
// false otherwise.
func distinctTexts(list cty.Value) (cty.Value, bool) {
	if !list.Type().IsListType() || (list.Type().ElementType() != cty.String && list.Type().ElementType() != cty.Bool) {
		return cty.NilVal, false
	}
	vals, ok := plainElements(list)
	if !ok {
		return cty.NilVal, false
	}
	seen := make(map[string]bool, len(vals))
	kept := vals[:0]
	for _, e := range vals {
		text := "false"
		if e.Type() == cty.String {
			text = e.AsString()
		} else if e.True() {
			text = "true"
		}
		if !seen[text] {
			seen[text] = true
			kept = append(kept, e)
		}
	}
	return cty.ListVal(kept), true
}
