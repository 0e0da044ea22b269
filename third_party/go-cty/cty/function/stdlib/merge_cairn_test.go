package stdlib

import (
	"fmt"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestMergeAsBefore holds cairn's patch (third_party/README.md) to upstream's
// behaviour: merge gives the value that reading every argument through its
// element iterator, as upstream's merge does, gives: objects, maps, both,
// later arguments over earlier ones, nulls, marks, unknown and empty ones.
func TestMergeAsBefore(t *testing.T) {
	obj := func(kv ...any) cty.Value {
		m := map[string]cty.Value{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(cty.Value)
		}
		return cty.ObjectVal(m)
	}
	cases := [][]cty.Value{
		{obj("a", cty.StringVal("1"), "b", cty.NumberIntVal(2))},
		{obj("a", cty.StringVal("1"), "b", cty.NumberIntVal(2)), obj("b", cty.True, "c", cty.NullVal(cty.String))},
		{obj("a", cty.StringVal("1")), cty.NullVal(cty.EmptyObject), obj("a", cty.StringVal("2"), "z", cty.UnknownVal(cty.String))},
		{obj("a", cty.StringVal("1")).Mark("m"), obj("b", cty.StringVal("2").Mark("n"))},
		{cty.MapVal(map[string]cty.Value{"a": cty.StringVal("1")}), obj("a", cty.NumberIntVal(5), "b", cty.True)},
		{obj("a", cty.StringVal("1")), cty.MapVal(map[string]cty.Value{"a": cty.StringVal("x"), "c": cty.StringVal("y")})},
		{cty.MapVal(map[string]cty.Value{"a": cty.StringVal("1")}), cty.MapVal(map[string]cty.Value{"b": cty.StringVal("2")})},
		{cty.EmptyObjectVal, obj("nested", obj("x", cty.ListValEmpty(cty.String)))},
		{obj("élan", cty.StringVal("nfc"), "b", cty.NumberIntVal(1)), obj("b", cty.NumberIntVal(2))},
	}
	for i, args := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			got, err := MergeFunc.Call(args)
			if err != nil {
				t.Fatal(err)
			}
			want := mergeByIterator(t, args)
			if !got.RawEquals(want) {
				t.Errorf("merge gives %#v, the element iterator %#v", got, want)
			}
		})
	}
}

// mergeByIterator is upstream's merge: every argument read through its
// element iterator.
func mergeByIterator(t *testing.T, args []cty.Value) cty.Value {
	retType, err := MergeFunc.ReturnTypeForValues(args)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]cty.Value{}
	var markses []cty.ValueMarks
	for _, arg := range args {
		if arg.IsNull() {
			continue
		}
		arg, marks := arg.Unmark()
		if len(marks) > 0 {
			markses = append(markses, marks)
		}
		for it := arg.ElementIterator(); it.Next(); {
			k, v := it.Element()
			out[k.AsString()] = v
		}
	}
	if retType.IsMapType() {
		return cty.MapVal(out).WithMarks(markses...)
	}
	return cty.ObjectVal(out).WithMarks(markses...)
}
