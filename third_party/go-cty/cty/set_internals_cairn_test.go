package cty

import "testing"

// TestSetRulesLessStringsAsBefore holds cairn's patch (third_party/README.md)
// to upstream's behaviour: for every pair of string values (known, null,
// unknown, equal, in NFC), Less answers what lessValues, upstream's Less,
// answers.
func TestSetRulesLessStringsAsBefore(t *testing.T) {
	vals := []Value{
		StringVal(""), StringVal("a"), StringVal("b"), StringVal("run-10"), StringVal("run-9"),
		StringVal("Z"), StringVal("caf\u00e9"), StringVal("cafe\u0301"), StringVal("\u00e9"),
		NullVal(String), UnknownVal(String), UnknownVal(String).RefineNotNull(),
	}
	r := setRules{Type: String}
	for _, a := range vals {
		for _, b := range vals {
			got, want := r.Less(a.v, b.v), r.lessValues(a.v, b.v)
			if got != want {
				t.Errorf("Less(%#v, %#v) = %v, upstream's %v", a, b, got, want)
			}
		}
	}
	set := SetVal([]Value{StringVal("b"), StringVal("a"), UnknownVal(String), StringVal("c")})
	var order []string
	for it := set.ElementIterator(); it.Next(); {
		_, v := it.Element()
		if v.IsKnown() {
			order = append(order, v.AsString())
		} else {
			order = append(order, "(unknown)")
		}
	}
	if got := order; len(got) != 4 || got[0] != "a" || got[1] != "b" || got[2] != "c" || got[3] != "(unknown)" {
		t.Errorf("a set of strings iterates as %v, want [a b c (unknown)]", got)
	}
}
