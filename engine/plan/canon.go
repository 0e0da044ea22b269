package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/dsl/jsonwrite"
)

// canonicalJSON encodes a value canonically for node keys: object and map
// keys sorted, numbers in their shortest exact decimal form, lists, sets and
// tuples as arrays. A sensitive value becomes {"sensitive_sha256": digest}
// so that keys change when a secret changes but never hold it. known is
// false when any part of v is unknown.
func canonicalJSON(v cty.Value) (out []byte, known bool) {
	return canonicalJSONAs(v, nil)
}

// canonicalJSONAs is canonicalJSON writing each unknown part of v as
// unknown, where that is not nil: what a value holds that is known before
// apply (a saved plan's definitions).
func canonicalJSONAs(v cty.Value, unknown []byte) (out []byte, known bool) {
	b := canonBufs.get()
	defer func() {
		if b.Cap() <= maxCanonBuf {
			canonBufs.put(b)
		}
	}()
	b.Reset()
	if !writeCanon(b, v, unknown) {
		return nil, false
	}
	return bytes.Clone(b.Bytes()), true
}

// canonBufs are canonicalJSON's scratch buffers: what it returns is one
// allocation of the encoding's size. A buffer grown past maxCanonBuf (a
// value of megabytes) is not kept.
var canonBufs = freeList[*bytes.Buffer]{make: func() *bytes.Buffer { return new(bytes.Buffer) }}

const maxCanonBuf = 1 << 20

func writeCanon(b *bytes.Buffer, v cty.Value, unknown []byte) bool {
	if v.IsMarked() {
		inner, _ := v.UnmarkDeep()
		var ib bytes.Buffer
		if !writeCanon(&ib, inner, unknown) {
			return false
		}
		h := sha256.Sum256(ib.Bytes())
		b.WriteString(`{"sensitive_sha256":"`)
		b.WriteString(hex.EncodeToString(h[:]))
		b.WriteString(`"}`)
		return true
	}
	if !v.IsKnown() {
		b.Write(unknown)
		return unknown != nil
	}
	if v.IsNull() {
		b.WriteString("null")
		return true
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		b.Write(jsonwrite.String(b.AvailableBuffer(), v.AsString()))
	case ty == cty.Number:
		s, err := dsl.MarshalJSON(v, cty.Number)
		if err != nil {
			return false
		}
		b.Write(s)
	case ty == cty.Bool:
		if v.True() {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		b.WriteByte('[')
		i := 0
		for e := range dsl.Elements(v) {
			if i > 0 {
				b.WriteByte(',')
			}
			if !writeCanon(b, e, unknown) {
				return false
			}
			i++
		}
		b.WriteByte(']')
	case ty.IsMapType() || ty.IsObjectType():
		// cty yields map elements and object attributes in key order
		// (sort.Strings), the order canonical JSON wants.
		b.WriteByte('{')
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			k, e := it.Element()
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(jsonwrite.String(b.AvailableBuffer(), k.AsString()))
			b.WriteByte(':')
			if !writeCanon(b, e, unknown) {
				return false
			}
		}
		b.WriteByte('}')
	case ty == cty.DynamicPseudoType:
		return false
	default:
		return false
	}
	return true
}

// jsonToCty converts a JSON document (a node's result) into a cty value.
func jsonToCty(raw json.RawMessage) (cty.Value, error) {
	if len(raw) == 0 {
		return cty.NullVal(cty.DynamicPseudoType), nil
	}
	ty, err := ctyjson.ImpliedType(raw)
	if err != nil {
		return cty.NilVal, err
	}
	return ctyjson.Unmarshal(raw, ty)
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
