package dsl

import (
	"encoding/json"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
)

// decodeJSON is jsondecode's value of data, built in one pass over it:
// the value go-cty's decoder gives (objects, tuples, numbers parsed as
// cty.ParseNumberVal parses them, strings NFC-normalized, null of no
// type). go-cty's decoder reads data three times over (the type, then
// the value, each nested value read again for each level above it): 0.35
// s for a 500 KB grid of 10,000 runs.
//
// ok is false where go-cty decides: data that is not valid JSON (its
// errors say what is wrong), a property named twice in one object or
// whose name NFC changes (go-cty refuses some, and keeps one of the others
// by rules of its own), a number it cannot parse.
func decodeJSON(data []byte) (v cty.Value, ok bool) {
	if !json.Valid(data) {
		return cty.NilVal, false
	}
	d := jsonDecoder{data: data}
	v = d.value()
	return v, !d.bad
}

// jsonDecoder reads valid JSON text (json.Valid said so: no syntax is
// checked again) into cty values; bad is set where go-cty must decide.
type jsonDecoder struct {
	data []byte
	i    int
	bad  bool
}

func (d *jsonDecoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *jsonDecoder) value() cty.Value {
	d.space()
	switch d.data[d.i] {
	case '{':
		return d.object()
	case '[':
		return d.tuple()
	case '"':
		return cty.StringVal(d.str())
	case 't':
		d.i += len("true")
		return cty.True
	case 'f':
		d.i += len("false")
		return cty.False
	case 'n':
		d.i += len("null")
		return cty.NullVal(cty.DynamicPseudoType)
	}
	start := d.i
	for d.i < len(d.data) && strings.IndexByte("+-0123456789.eE", d.data[d.i]) >= 0 {
		d.i++
	}
	n, err := cty.ParseNumberVal(string(d.data[start:d.i]))
	if err != nil {
		d.bad = true
		return cty.DynamicVal
	}
	return n
}

func (d *jsonDecoder) object() cty.Value {
	d.i++ // {
	var attrs map[string]cty.Value
	for !d.bad {
		d.space()
		if d.data[d.i] == '}' {
			d.i++
			break
		}
		if d.data[d.i] == ',' {
			d.i++
			d.space()
		}
		key := d.str()
		d.space()
		d.i++ // :
		v := d.value()
		if attrs == nil {
			attrs = map[string]cty.Value{}
		}
		// A name NFC changes: cty names attributes by their NFC form.
		if _, twice := attrs[key]; twice || cty.NormalizeString(key) != key {
			d.bad = true
		}
		attrs[key] = v
	}
	if len(attrs) == 0 {
		return cty.EmptyObjectVal
	}
	return cty.ObjectVal(attrs)
}

func (d *jsonDecoder) tuple() cty.Value {
	d.i++ // [
	var elems []cty.Value
	for !d.bad {
		d.space()
		if d.data[d.i] == ']' {
			d.i++
			break
		}
		if d.data[d.i] == ',' {
			d.i++
		}
		elems = append(elems, d.value())
	}
	if len(elems) == 0 {
		return cty.EmptyTupleVal
	}
	return cty.TupleVal(elems)
}

// str reads a string token as encoding/json decodes it: escapes and
// invalid UTF-8 (each byte of it U+FFFD) through encoding/json itself.
func (d *jsonDecoder) str() string {
	start := d.i
	d.i++ // "
	escaped, ascii := false, true
	for {
		c := d.data[d.i]
		if c == '"' {
			break
		}
		if c == '\\' {
			escaped = true
			d.i++
		} else if c >= utf8.RuneSelf {
			ascii = false
		}
		d.i++
	}
	d.i++ // "
	raw := d.data[start:d.i]
	if !escaped && (ascii || utf8.Valid(raw)) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		d.bad = true
	}
	return s
}

// decoded is the last text decodeJSON read for jsondecode and its value:
// a call evaluates its return type, then its value, from the same text.
var decoded struct {
	sync.Mutex
	text string
	v    cty.Value
	has  bool
}

// decodeJSONOnce is decodeJSON of s, kept for the next call with the same
// text.
func decodeJSONOnce(s string) (cty.Value, bool) {
	decoded.Lock()
	if decoded.has && decoded.text == s {
		v := decoded.v
		decoded.Unlock()
		return v, true
	}
	decoded.Unlock()
	v, ok := decodeJSON([]byte(s))
	if ok {
		decoded.Lock()
		decoded.text, decoded.v, decoded.has = s, v, true
		decoded.Unlock()
	}
	return v, ok
}
