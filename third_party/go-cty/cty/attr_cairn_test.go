package cty

import (
	"fmt"
	"reflect"
	"testing"
)

// upstreamObjectVal is ObjectVal as go-cty v1.20.0 wrote it: the type made
// by Object from the normalized names.
func upstreamObjectVal(attrs map[string]Value) Value {
	attrTypes := make(map[string]Type, len(attrs))
	attrVals := make(map[string]any, len(attrs))
	for attr, val := range attrs {
		attr = NormalizeString(attr)
		attrTypes[attr] = val.ty
		attrVals[attr] = val.v
	}
	return Value{ty: Object(attrTypes), v: attrVals}
}

// upstreamGetAttr is GetAttr as go-cty v1.20.0 wrote it.
func upstreamGetAttr(val Value, name string) Value {
	if val.IsMarked() {
		val, valMarks := val.Unmark()
		return upstreamGetAttr(val, name).WithMarks(valMarks)
	}
	if val.IsNull() {
		panic("object is null")
	}
	if val.ty == DynamicPseudoType {
		return DynamicVal.WithMarks(val.unknownValueNestedMarks())
	}
	if !val.ty.IsObjectType() {
		panic("value is not an object")
	}
	name = NormalizeString(name)
	if !val.ty.HasAttribute(name) {
		panic("value has no attribute of that name")
	}
	attrType := val.ty.AttributeType(name)
	if !val.IsKnown() {
		return UnknownVal(attrType).WithMarks(val.unknownValueNestedMarks())
	}
	return Value{ty: attrType, v: val.v.(map[string]any)[name]}
}

// attrCases are objects to read attributes of: ASCII and other names,
// names written in another normal form than NFC ("e" and a combining
// acute accent is "é" in NFC), nested, empty, unknown, null and marked
// objects, and values that are no object.
func attrCases() []map[string]Value {
	return []map[string]Value{
		{},
		{"a": StringVal("x")},
		{"a": StringVal("x"), "b": NumberIntVal(2), "c": True, "d": NullVal(String), "e": UnknownVal(Number)},
		{"caf\u00e9": StringVal("nfc"), "na\u0303o": StringVal("nfd in, nfc kept")},
		{"nested": ObjectVal(map[string]Value{"inner": ListVal([]Value{StringVal("l")})}), "t": TupleVal([]Value{StringVal("t"), NumberIntVal(1)})},
		{"marked": StringVal("s").Mark("sensitive"), "dyn": DynamicVal},
		{"日本": NumberIntVal(3), "x y": StringVal("space"), "": StringVal("empty name")},
	}
}

// TestObjectValAsBefore holds cairn's patch to ObjectVal
// (third_party/README.md) to upstream's: the same type, attribute for
// attribute, and the same values. It fails when a name is left
// unnormalized.
func TestObjectValAsBefore(t *testing.T) {
	for i, attrs := range attrCases() {
		got, want := ObjectVal(attrs), upstreamObjectVal(attrs)
		if !got.Type().Equals(want.Type()) || !want.Type().Equals(got.Type()) {
			t.Errorf("case %d: type %#v, upstream's %#v", i, got.Type(), want.Type())
		}
		if !reflect.DeepEqual(got.ty.typeImpl, want.ty.typeImpl) {
			t.Errorf("case %d: type held as %#v, upstream's as %#v", i, got.ty.typeImpl, want.ty.typeImpl)
		}
		if !reflect.DeepEqual(got.v, want.v) {
			t.Errorf("case %d: values %#v, upstream's %#v", i, got.v, want.v)
		}
		if eq := got.Equals(want); eq.IsKnown() && !eq.True() {
			t.Errorf("case %d: %#v does not equal upstream's %#v", i, got, want)
		}
		if !got.Type().IsObjectType() || len(got.Type().OptionalAttributes()) != 0 {
			t.Errorf("case %d: %#v is no object of required attributes", i, got.Type())
		}
	}
}

// TestGetAttrAsBefore holds cairn's patch to GetAttr to upstream's: every
// attribute, by its NFC name and by another spelling of it, of known,
// unknown and marked objects, reads as upstream reads it, and a missing
// name, a null object and a value that is no object panic as they did.
func TestGetAttrAsBefore(t *testing.T) {
	read := func(f func(Value, string) Value, v Value, name string) (got Value, panicked any) {
		defer func() { panicked = recover() }()
		return f(v, name), nil
	}
	same := func(what string, v Value, name string) {
		t.Helper()
		got, gotPanic := read(Value.GetAttr, v, name)
		want, wantPanic := read(upstreamGetAttr, v, name)
		if fmt.Sprint(gotPanic) != fmt.Sprint(wantPanic) {
			t.Errorf("%s.%q: panic %v, upstream's %v", what, name, gotPanic, wantPanic)
			return
		}
		if wantPanic != nil {
			return
		}
		if !got.RawEquals(want) {
			t.Errorf("%s.%q = %#v, upstream's %#v", what, name, got, want)
		}
	}
	for i, attrs := range attrCases() {
		obj := ObjectVal(attrs)
		names := []string{"missing", "A", "cafe\u0301", "nao"}
		for n := range attrs {
			names = append(names, n)
		}
		for _, v := range []Value{
			obj,
			obj.Mark("m"),
			UnknownVal(obj.Type()),
			UnknownVal(obj.Type()).Mark("m"),
			NullVal(obj.Type()),
			DynamicVal,
			StringVal("no object"),
			MapVal(map[string]Value{"a": StringVal("a map")}),
		} {
			for _, n := range names {
				same(fmt.Sprintf("case %d %#v", i, v), v, n)
			}
		}
	}
	// It fails when the name is not normalized before it is looked up.
	v := ObjectVal(map[string]Value{"caf\u00e9": StringVal("x")})
	if got := v.GetAttr("cafe\u0301"); !got.RawEquals(StringVal("x")) {
		t.Errorf(`GetAttr("cafe\u0301") = %#v, want the attribute "caf\u00e9"`, got)
	}
}
