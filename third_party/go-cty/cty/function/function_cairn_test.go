package function

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestCallUnmarksOnlyMarkedArguments holds cairn's patch
// (third_party/README.md) to upstream's behaviour: an argument whose
// parameter refuses marks reaches the implementation without any, and the
// result carries every mark that was in it, at any depth, for a positional
// and a variadic parameter alike; an unmarked argument is passed as it is.
func TestCallUnmarksOnlyMarkedArguments(t *testing.T) {
	var got []cty.Value
	f := New(&Spec{
		Params:   []Parameter{{Name: "v", Type: cty.DynamicPseudoType, AllowNull: true, AllowUnknown: true}},
		VarParam: &Parameter{Name: "more", Type: cty.DynamicPseudoType, AllowNull: true, AllowUnknown: true},
		Type:     StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			got = args
			for _, a := range args {
				if a.ContainsMarked() {
					return cty.NilVal, nil // fails below: the result is not a bool
				}
			}
			return cty.True, nil
		},
	})
	m := cty.NewValueMarks("sensitive")
	for _, v := range []cty.Value{
		cty.StringVal("a"), cty.StringVal("a").WithMarks(m),
		cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b").WithMarks(m)}),
		cty.ObjectVal(map[string]cty.Value{"x": cty.TupleVal([]cty.Value{cty.NumberIntVal(1).WithMarks(m)})}),
		cty.ObjectVal(map[string]cty.Value{"x": cty.TupleVal([]cty.Value{cty.NumberIntVal(1)})}),
		cty.UnknownVal(cty.String).WithMarks(m), cty.NullVal(cty.String).WithMarks(m),
	} {
		for _, args := range [][]cty.Value{{v}, {cty.StringVal("x"), v}} {
			res, err := f.Call(args)
			if err != nil {
				t.Fatalf("%#v: %s", args, err)
			}
			_, want := v.UnmarkDeep()
			if !res.Marks().Equal(want) {
				t.Errorf("%#v: result marks %#v, want %#v", args, res.Marks(), want)
			}
			if !v.ContainsMarked() && !got[len(got)-1].RawEquals(v) {
				t.Errorf("%#v reached the implementation as %#v", v, got[len(got)-1])
			}
		}
	}
}
