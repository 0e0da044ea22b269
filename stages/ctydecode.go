package stages

import (
	"bytes"
	"encoding/json"
	"math/big"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
)

// decodeValue sets *dst from a known, non-null attribute value as decoding
// its JSON form (dsl.MarshalJSON) with encoding/json would. The common
// shapes (strings, whole numbers, bools, lists of strings, objects of
// strings or of lists of strings, and, with useNumber, any value into an
// interface) are read straight from the value: the same result, without
// writing and parsing the JSON. Anything else, and any value the direct
// reading does not take whole (a null part, a number that is not a whole
// int64, a string that is not UTF-8, a mismatched type), goes through the
// JSON form, so its result and its error are encoding/json's
// (TestDecodeValueMatchesJSON).
func decodeValue(v cty.Value, dst any, strict, useNumber bool) error {
	if decodeDirect(v, dst, useNumber) {
		return nil
	}
	return decodeJSON(v, dst, strict, useNumber)
}

// decodeJSON is decodeValue through the JSON form: strict disallows
// unknown fields of structs, useNumber keeps numbers in interfaces as
// json.Number.
func decodeJSON(v cty.Value, dst any, strict, useNumber bool) error {
	v = unmarkDeep(v)
	b, err := dsl.MarshalJSON(v, v.Type())
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	if useNumber {
		dec.UseNumber()
	}
	return dec.Decode(dst)
}

// decodeDirect is decodeValue's direct reading; false (dst untouched) when
// v or dst is not of a shape it takes.
func decodeDirect(v cty.Value, dst any, useNumber bool) bool {
	switch d := dst.(type) {
	case *string:
		s, ok := directString(v)
		if ok {
			*d = s
		}
		return ok
	case *int:
		i, ok := directInt(v)
		if ok {
			*d = i
		}
		return ok
	case *bool:
		b, ok := directBool(v)
		if ok {
			*d = b
		}
		return ok
	case *[]string:
		l, ok := directStrings(v)
		if ok {
			*d = l
		}
		return ok
	case *map[string]string:
		return directMap(v, d, directString)
	case *map[string][]string:
		return directMap(v, d, directStrings)
	case *map[string]any:
		if !useNumber {
			return false
		}
		return directMap(v, d, directAny)
	}
	return false
}

// plain is v unmarked when it is known and not null.
func plain(v cty.Value) (cty.Value, bool) {
	if v.IsMarked() {
		v, _ = v.Unmark()
	}
	if !v.IsKnown() || v.IsNull() {
		return v, false
	}
	return v, true
}

func directString(v cty.Value) (string, bool) {
	v, ok := plain(v)
	if !ok || v.Type() != cty.String {
		return "", false
	}
	s := v.AsString()
	// json.Marshal writes invalid UTF-8 as U+FFFD.
	return s, utf8.ValidString(s)
}

func directInt(v cty.Value) (int, bool) {
	v, ok := plain(v)
	if !ok || v.Type() != cty.Number {
		return 0, false
	}
	f := v.AsBigFloat()
	i, acc := f.Int64()
	// -0 is written "-0": encoding/json reads it as 0 all the same, but
	// it is left to the JSON form.
	// A number beyond int (a 32-bit system's) is left to the JSON form,
	// which refuses it.
	if acc != big.Exact || (i == 0 && f.Signbit()) || int64(int(i)) != i {
		return 0, false
	}
	return int(i), true
}

func directBool(v cty.Value) (bool, bool) {
	v, ok := plain(v)
	if !ok || v.Type() != cty.Bool {
		return false, false
	}
	return v.True(), true
}

// directStrings reads a list, tuple or set of strings.
func directStrings(v cty.Value) ([]string, bool) { return directSlice(v, directString) }

// directSlice reads a list, tuple or set with elem for its elements; an
// empty one is an empty slice, not nil, as encoding/json makes it.
func directSlice[T any](v cty.Value, elem func(cty.Value) (T, bool)) ([]T, bool) {
	v, ok := plain(v)
	if !ok {
		return nil, false
	}
	ty := v.Type()
	if !(ty.IsListType() || ty.IsTupleType() || ty.IsSetType()) {
		return nil, false
	}
	out := make([]T, 0, v.LengthInt())
	for e := range dsl.Elements(v) {
		x, ok := elem(e)
		if !ok {
			return nil, false
		}
		out = append(out, x)
	}
	return out, true
}

// directMap reads a map or object into *dst with elem for its values: a
// nil *dst is made, and the entries of one already made are kept beside
// the new ones, as encoding/json does.
func directMap[T any](v cty.Value, dst *map[string]T, elem func(cty.Value) (T, bool)) bool {
	v, ok := plain(v)
	if !ok {
		return false
	}
	ty := v.Type()
	var keys []string
	var vals []T
	switch {
	case ty.IsObjectType():
		atys := ty.AttributeTypes()
		keys = make([]string, 0, len(atys))
		vals = make([]T, 0, len(atys))
		for k := range atys {
			e, ok := elem(v.GetAttr(k))
			if !ok {
				return false
			}
			keys, vals = append(keys, k), append(vals, e)
		}
	case ty.IsMapType():
		n := v.LengthInt()
		keys, vals = make([]string, 0, n), make([]T, 0, n)
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			ks, ok := directString(k)
			if !ok {
				return false
			}
			e, ok := elem(ev)
			if !ok {
				return false
			}
			keys, vals = append(keys, ks), append(vals, e)
		}
	default:
		return false
	}
	if *dst == nil {
		*dst = make(map[string]T, len(keys))
	}
	for i, k := range keys {
		(*dst)[k] = vals[i]
	}
	return true
}

// directAny reads v as encoding/json reads JSON into an interface with
// UseNumber: strings, json.Number, bools, []any and map[string]any.
func directAny(v cty.Value) (any, bool) {
	v, ok := plain(v)
	if !ok {
		return nil, false
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return directString(v)
	case ty == cty.Number:
		f := v.AsBigFloat()
		if f.IsInf() {
			return nil, false
		}
		return json.Number(dsl.NumberText(f)), true
	case ty == cty.Bool:
		return v.True(), true
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		out, ok := directSlice(v, directAny)
		if !ok {
			return nil, false
		}
		return out, true
	case ty.IsObjectType() || ty.IsMapType():
		var m map[string]any
		if !directMap(v, &m, directAny) {
			return nil, false
		}
		return m, true
	}
	return nil, false
}
