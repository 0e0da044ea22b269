package dsl

import (
	"bytes"
	"math"
	"math/big"
	"sort"
	"strconv"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/cairn-run/cairn/dsl/jsonwrite"
)

// NumberText is a number the way cty writes it (big.Float's Text('f', -1):
// in JSON, and converted to a string). The shortest-decimal search Text
// runs at cty's 512-bit precision costs 30-40 µs a number (a grid's plan
// spent a fifth of its time there), so two kinds are written with strconv:
//
//   - a whole number of int64's range whose bits its precision holds
//     (intText: 2^60 made from a float64 reads back from 1152921504606847000);
//   - a number of more than 64 bits of precision (one cty parsed from
//     text: a literal, JSON) that float64's shortest decimal, read back at
//     that precision, gives exactly (0.001, 2.5e-7). Text writes the
//     same digits: any decimal that reads back as the number lies within
//     2^-(precision-1) of it, relative, and two decimals of 17 significant
//     digits or fewer that close are one number.
//
// Any other number (1/3, one made from a float64) is written by Text.
func NumberText(f *big.Float) string {
	if s, ok := intText(f); ok {
		return s
	}
	if f.Prec() > 64 && !f.IsInf() {
		if x, _ := f.Float64(); !math.IsInf(x, 0) && x != 0 {
			s := strconv.FormatFloat(x, 'f', -1, 64)
			if back, _, err := big.ParseFloat(s, 10, f.Prec(), big.ToNearestEven); err == nil && back.Cmp(f) == 0 {
				return s
			}
		}
	}
	return f.Text('f', -1)
}

// MarshalJSON is ctyjson.Marshal(v, t), byte for byte
// (TestMarshalJSONMatchesCty), with numbers written by NumberText. Values
// it does not write itself (marked, unknown, infinite, dynamic or capsule
// parts) go to ctyjson.Marshal whole, so its errors are cty's.
func MarshalJSON(v cty.Value, t cty.Type) ([]byte, error) {
	var b bytes.Buffer
	if marshalPlain(&b, v, t) {
		return b.Bytes(), nil
	}
	return ctyjson.Marshal(v, t)
}

func marshalPlain(b *bytes.Buffer, v cty.Value, t cty.Type) bool {
	if v.IsMarked() || !v.IsKnown() || t == cty.DynamicPseudoType {
		return false
	}
	if v.IsNull() {
		b.WriteString("null")
		return true
	}
	switch {
	case t == cty.String:
		b.Write(jsonwrite.String(b.AvailableBuffer(), v.AsString()))
	case t == cty.Number:
		f := v.AsBigFloat()
		if f.IsInf() {
			return false
		}
		b.WriteString(NumberText(f))
	case t == cty.Bool:
		if v.True() {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case t.IsListType() || t.IsSetType() || t.IsTupleType():
		var etys []cty.Type
		if t.IsTupleType() {
			etys = t.TupleElementTypes()
		}
		b.WriteByte('[')
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			ety := cty.NilType
			if etys != nil {
				ety = etys[i]
			} else {
				ety = t.ElementType()
			}
			_, ev := it.Element()
			if !marshalPlain(b, ev, ety) {
				return false
			}
		}
		b.WriteByte(']')
	case t.IsMapType():
		b.WriteByte('{')
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			ek, ev := it.Element()
			if !marshalPlain(b, ek, cty.String) {
				return false
			}
			b.WriteByte(':')
			if !marshalPlain(b, ev, t.ElementType()) {
				return false
			}
		}
		b.WriteByte('}')
	case t.IsObjectType():
		atys := t.AttributeTypes()
		names := make([]string, 0, len(atys))
		for k := range atys {
			names = append(names, k)
		}
		sort.Strings(names)
		b.WriteByte('{')
		for i, k := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			if !marshalPlain(b, cty.StringVal(k), cty.String) {
				return false
			}
			b.WriteByte(':')
			if !marshalPlain(b, v.GetAttr(k), atys[k]) {
				return false
			}
		}
		b.WriteByte('}')
	default:
		return false
	}
	return true
}
