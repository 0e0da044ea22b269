package dsl

import (
	"bytes"
	"encoding/json"
	"math/big"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// WrittenJSON is MarshalJSON(v, v.Type()) for v, the value of e, an
// expression written in src (the text of its file), except that a number
// e writes as a literal keeps the digits it is written with: `1.50` is
// 1.50, `2.0e1` 2.0e1 and `-0.10` -0.10, where MarshalJSON writes 1.5, 20
// and -0.1. It finds them where e builds v in the open: a literal, a
// negated one, the elements of a list written in brackets and the values
// of an object written in braces whose keys are names or constants, at
// any depth, in parentheses too. A number computed (arithmetic, a call, a
// reference to a variable or a local, a for expression) is written by
// MarshalJSON, and so is one whose text is no JSON number (007) or does
// not read back as v's number. It is how items written in a pipeline
// reach a worker as a dataset file's do: with the digits written.
func WrittenJSON(e hcl.Expression, v cty.Value, src []byte) ([]byte, error) {
	var b bytes.Buffer
	if err := writeWritten(&b, e, v, src); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeWritten(b *bytes.Buffer, e hcl.Expression, v cty.Value, src []byte) error {
	for {
		p, ok := Syntax(e).(*hclsyntax.ParenthesesExpr)
		if !ok {
			break
		}
		e = p.Expression
	}
	if v.IsMarked() || !v.IsWhollyKnown() || v.IsNull() {
		return marshalTo(b, v)
	}
	t := v.Type()
	switch {
	case t == cty.Number:
		if text, ok := numberWritten(e, v, src); ok {
			b.WriteString(text)
			return nil
		}
	case t.IsTupleType() || t.IsListType():
		tc, ok := TupleConsOf(e)
		if !ok || len(tc.Exprs) != v.LengthInt() {
			break
		}
		b.WriteByte('[')
		for i, x := range tc.Exprs {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeWritten(b, x, v.Index(cty.NumberIntVal(int64(i))), src); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case t.IsObjectType() || t.IsMapType():
		oc, ok := ObjectConsOf(e)
		if !ok {
			break
		}
		vals := make(map[string]hcl.Expression, len(oc.Items))
		for _, it := range oc.Items {
			if k, ok := staticKey(it.KeyExpr); ok {
				vals[k] = it.ValueExpr
			}
		}
		b.WriteByte('{')
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			k, ev := it.Element()
			if err := marshalTo(b, k); err != nil {
				return err
			}
			b.WriteByte(':')
			x, ok := vals[k.AsString()]
			if !ok {
				if err := marshalTo(b, ev); err != nil {
					return err
				}
				continue
			}
			if err := writeWritten(b, x, ev, src); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	}
	return marshalTo(b, v)
}

// marshalTo appends MarshalJSON(v, v.Type()) to b.
func marshalTo(b *bytes.Buffer, v cty.Value) error {
	j, err := MarshalJSON(v, v.Type())
	if err != nil {
		return err
	}
	b.Write(j)
	return nil
}

// numberWritten is the text of e, a number literal or a negated one, in
// src, when it is a JSON number that reads back as v.
func numberWritten(e hcl.Expression, v cty.Value, src []byte) (string, bool) {
	sign := ""
	if u, ok := Syntax(e).(*hclsyntax.UnaryOpExpr); ok && u.Op == hclsyntax.OpNegate {
		sign, e = "-", u.Val
	}
	lit, ok := Syntax(e).(*hclsyntax.LiteralValueExpr)
	if !ok || lit.Val.Type() != cty.Number {
		return "", false
	}
	r := lit.SrcRange
	if r.Start.Byte < 0 || r.Start.Byte >= r.End.Byte || r.End.Byte > len(src) {
		return "", false
	}
	text := sign + string(src[r.Start.Byte:r.End.Byte])
	if !json.Valid([]byte(text)) {
		return "", false
	}
	f, _, err := big.ParseFloat(text, 10, v.AsBigFloat().Prec(), big.ToNearestEven)
	if err != nil || f.Cmp(v.AsBigFloat()) != 0 {
		return "", false
	}
	return text, true
}
