package dsl

import (
	"bytes"
	"encoding/json"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// NumberText is a number the way cty writes it (big.Float's Text('f', -1):
// in JSON, and converted to a string). A whole number of int64's range is
// written with strconv: the shortest-decimal search Text runs at cty's
// 512-bit precision cost a grid's plan a fifth of its time.
func NumberText(f *big.Float) string {
	if i, acc := f.Int64(); acc == big.Exact && (i != 0 || !f.Signbit()) {
		return strconv.FormatInt(i, 10)
	}
	return f.Text('f', -1)
}

// AppendJSONString appends s as json.Marshal writes it. Printable ASCII,
// newlines and tabs (a path, a command line with its quotes and
// redirections) it escapes itself, as json.Marshal does: quotes and
// backslashes with a backslash, <, > and & as \u003c, \u003e and \u0026;
// other control bytes and non-ASCII text go through json.Marshal
// (TestAppendJSONStringMatchesMarshal, FuzzAppendJSONString).
func AppendJSONString(dst []byte, s string) []byte {
	plain := 0
	for plain < len(s) && jsonPlain[s[plain]] {
		plain++
	}
	if plain == len(s) {
		// Nothing to escape (an id, a key, a model name): one copy.
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	for i := plain; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c > 0x7e {
			q, _ := json.Marshal(s)
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '"':
			esc = `\"`
		case '\\':
			esc = `\\`
		case '\n':
			esc = `\n`
		case '\r':
			esc = `\r`
		case '\t':
			esc = `\t`
		case '<':
			esc = `\u003c`
		case '>':
			esc = `\u003e`
		case '&':
			esc = `\u0026`
		default:
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = append(dst, esc...)
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// jsonPlain marks the bytes json.Marshal writes as they are: printable
// ASCII but for quotes, backslashes, <, > and &.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = !strings.ContainsRune(`"\<>&`, rune(c))
	}
	return t
}()

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
		b.Write(AppendJSONString(b.AvailableBuffer(), v.AsString()))
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
