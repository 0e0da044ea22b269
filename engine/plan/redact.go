package plan

import (
	"sort"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// SensitiveStrings lists the string forms of every sensitive value inside a
// node's evaluated attributes (a sensitive variable passed as an argument,
// an environment value, ...), longest first: messages cairn writes about
// the node have them replaced (see process.RedactSecrets).
func SensitiveStrings(args map[string]cty.Value) []string {
	seen := map[string]bool{}
	var walk func(v cty.Value, marked bool)
	walk = func(v cty.Value, marked bool) {
		if v.IsMarked() {
			marked = true
			v, _ = v.Unmark()
		}
		if !v.IsKnown() || v.IsNull() {
			return
		}
		ty := v.Type()
		switch {
		case ty.IsPrimitiveType():
			if !marked {
				return
			}
			if s, err := convert.Convert(v, cty.String); err == nil && !s.IsNull() {
				if str := s.AsString(); str != "" {
					seen[str] = true
				}
			}
		case ty.IsListType() || ty.IsSetType() || ty.IsTupleType() || ty.IsMapType() || ty.IsObjectType():
			for it := v.ElementIterator(); it.Next(); {
				_, e := it.Element()
				walk(e, marked)
			}
		}
	}
	for _, v := range args {
		walk(v, false)
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) || len(out[i]) == len(out[j]) && out[i] < out[j] })
	return out
}
