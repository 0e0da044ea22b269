package dsl

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
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
	v, ok, _ = decodeJSONChecked(data)
	return v, ok
}

// decodeJSONChecked is decodeJSON, with what cairn refuses in data that
// go-cty would decode changed without a word (jsonRefusal); "" when
// there is nothing.
func decodeJSONChecked(data []byte) (v cty.Value, ok bool, refusal string) {
	d := jsonDecoder{data: data}
	return d.decode()
}

// decode is decodeJSONChecked of d's data.
func (d *jsonDecoder) decode() (v cty.Value, ok bool, refusal string) {
	if !json.Valid(d.data) {
		return cty.NilVal, false, ""
	}
	v = d.value()
	return v, !d.bad, d.refusal
}

// jsonDecoder reads valid JSON text (json.Valid said so: no syntax is
// checked again) into cty values; bad is set where go-cty must decide.
// It reads the whole text whatever it finds (the text is valid JSON), and
// refusal says the first thing in it that go-cty would change without a
// word: a key given twice in one object (go-cty keeps the last where both
// values have one type), a byte that is not UTF-8 or an escape of half a
// UTF-16 surrogate pair in a string (both read as U+FFFD).
type jsonDecoder struct {
	data     []byte
	i        int
	bad      bool
	refusal  string
	hideKeys bool // a refusal does not show a key (the text is sensitive)
}

// refuse sets the refusal, what at byte offset at, unless one is set.
func (d *jsonDecoder) refuse(at int, format string, args ...any) {
	if d.refusal == "" {
		line, col := JSONLineCol(d.data, at)
		d.refusal = fmt.Sprintf(format, append(args, line, col)...)
	}
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
	start := d.i
	d.i++ // {
	var attrs map[string]cty.Value
	for {
		d.space()
		if d.data[d.i] == '}' {
			d.i++
			break
		}
		if d.data[d.i] == ',' {
			d.i++
			d.space()
		}
		at := d.i
		key := d.str()
		d.space()
		d.i++ // :
		v := d.value()
		if attrs == nil {
			attrs = map[string]cty.Value{}
		}
		// A name NFC changes: cty names attributes by their NFC form,
		// and so are they compared.
		if nfc := cty.NormalizeString(key); nfc != key {
			d.bad = true
			key = nfc
		}
		if _, twice := attrs[key]; twice {
			d.bad = true
			d.refuseRepeat(start, at, key)
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
	for {
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
	if !ascii && !utf8.Valid(raw) {
		d.refuse(start+InvalidUTF8At(raw), "holds a byte that is not UTF-8 at line %d, column %d: JSON text is UTF-8, and a JSON reader would read the byte as U+FFFD, changing the text. Re-encode the text (or the file it comes from) as UTF-8")
	}
	if escaped {
		if off := LoneSurrogate(raw); off >= 0 {
			d.refuse(start+off, "holds at line %d, column %d an escape of half a UTF-16 surrogate pair (\\uD800 to \\uDFFF without its other half), which is no character: a JSON reader would read it as U+FFFD, changing the text. Write the character itself, or both halves of its pair")
		}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		d.bad = true
	}
	return s
}

// LoneSurrogate is the offset in raw, a JSON string token, of a \u
// escape of half a surrogate pair without its other half; -1 if none.
// JSON readers read one as U+FFFD, so that texts which differ only there
// read the same: what keys or compares them refuses it (here, and the
// item and model-call keys' canonical JSON).
func LoneSurrogate(raw []byte) int {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		r, ok := escapedUnit(raw[i:])
		switch {
		case !ok:
			i++ // an escape of one character: skip it
		case utf16.IsSurrogate(r) && r < 0xDC00:
			if lo, ok := escapedUnit(raw[i+6:]); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				i += 11 // the pair
				continue
			}
			return i
		case utf16.IsSurrogate(r):
			return i
		default:
			i += 5
		}
	}
	return -1
}

// escapedUnit is the UTF-16 code unit of the \uXXXX escape b starts
// with; ok is false when b starts with no such escape.
func escapedUnit(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[2:6]), 16, 16)
	return rune(n), err == nil
}

// refuseRepeat refuses key, given again at byte offset again in the
// object that starts at offset start.
func (d *jsonDecoder) refuseRepeat(start, again int, key string) {
	if d.refusal != "" {
		return
	}
	first := again
	e := jsonDecoder{data: d.data, i: start + 1}
	for e.i < again {
		e.space()
		if e.data[e.i] == ',' {
			e.i++
			e.space()
		}
		at := e.i
		if cty.NormalizeString(e.str()) == key {
			first = at
			break
		}
		e.space()
		e.i++ // :
		e.value()
	}
	fl, fc := JSONLineCol(d.data, first)
	what := strconv.Quote(key)
	if d.hideKeys {
		what = "(sensitive, so not shown)"
	}
	detail := "gives the key %s twice in one object, at line %d, column %d, and again at line %d, column %d: an object holds one value for each key, so one of the two would be dropped without a word. Rename one of the keys, or remove one of the items"
	for _, r := range key {
		if r >= 0x80 {
			detail += ". Keys are compared as text in Unicode's composed form (NFC), as cairn reads all text: \"\\u00e9\" and \"e\\u0301\" (e and a combining accent) are one key"
			break
		}
	}
	d.refuse(again, detail, what, fl, fc)
}

// decoded is the last text decodeJSON read for jsondecode and its value:
// a call evaluates its return type, then its value, from the same text.
var decoded struct {
	sync.Mutex
	text string
	v    cty.Value
	has  bool
}

// decodeJSONOnce is decodeJSONChecked of s, kept for the next call with
// the same text; hideKeys keeps the keys of a sensitive text out of the
// refusal.
func decodeJSONOnce(s string, hideKeys bool) (cty.Value, bool, string) {
	decoded.Lock()
	if decoded.has && decoded.text == s {
		v := decoded.v
		decoded.Unlock()
		return v, true, ""
	}
	decoded.Unlock()
	d := jsonDecoder{data: []byte(s), hideKeys: hideKeys}
	v, ok, refusal := d.decode()
	if ok && refusal == "" {
		decoded.Lock()
		decoded.text, decoded.v, decoded.has = s, v, true
		decoded.Unlock()
	}
	return v, ok, refusal
}
