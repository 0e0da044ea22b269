// Package jsonpos walks a JSON document and says where each of its values
// and object keys starts, by path (`cases[0].slot_ids["a b"][2]`), so that
// a check on the decoded value can name the line and column it was
// written at. It also finds what encoding/json lets pass silently: a key
// given twice in one object, of which json.Unmarshal keeps the last.
package jsonpos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cairn-run/cairn/dsl"
)

// Visitor is told of each value and each object key of a document, with
// its path and the byte offset where it starts. Either may be nil.
type Visitor struct {
	Value func(path string, off int)
	Key   func(path string, off int)
}

// Walk reads one JSON value from dec (which reads data from its start)
// under path ("" for the document), telling v of each value and key in
// document order. It returns dec's error for a document that does not
// parse.
func Walk(dec *json.Decoder, data []byte, path string, v Visitor) error {
	start := valueStart(data, int(dec.InputOffset()))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if v.Value != nil {
		v.Value(path, start)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		for dec.More() {
			koff := valueStart(data, int(dec.InputOffset()))
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			p := Member(path, k)
			if v.Key != nil {
				v.Key(p, koff)
			}
			if err := Walk(dec, data, p, v); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := Walk(dec, data, fmt.Sprintf("%s[%d]", path, i), v); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// FirstDuplicate returns the path and key offset of the first key given
// twice in one object of data, a document that parses; ok is false when
// there is none (or data does not parse).
func FirstDuplicate(data []byte) (path string, off int, ok bool) {
	return firstDuplicate(data, func(p string) string { return p })
}

// FirstFoldDuplicate is FirstDuplicate with keys that differ only in case
// taken as one: encoding/json decodes "Deployed" into a struct's
// "deployed" field (and keeps the last of the two), where other readers
// see two keys. For documents decoded into structs alone; a map's keys
// ("PATH" and "Path" in an env) are distinct. path is the later key's.
func FirstFoldDuplicate(data []byte) (path string, off int, ok bool) {
	return firstDuplicate(data, fold)
}

// MayRepeat reports, cheaply, whether a line decoded into a struct of
// these field names may give one twice as encoding/json reads it: a name
// written twice in any letter case ("score", "Score"), or an escape
// anywhere (a key spelt "\u0073core"). Only then is the walk of
// FirstDuplicate and TopFoldDuplicate worth its cost.
func MayRepeat(line []byte, names [][]byte) bool {
	if bytes.Contains(line, []byte(`\u`)) {
		return true
	}
	// One pass over the line's quotes, each compared with every name.
	var room [8]int
	seen := room[:]
	if len(names) > len(room) {
		seen = make([]int, len(names))
	}
	for i := 0; i < len(line); {
		j := bytes.IndexByte(line[i:], '"')
		if j < 0 {
			break
		}
		at := i + j + 1
		for k, name := range names {
			end := at + len(name)
			if end < len(line) && line[end] == '"' && bytes.EqualFold(line[at:end], name) {
				if seen[k]++; seen[k] > 1 {
					return true
				}
			}
		}
		i = at
	}
	return false
}

// TopFoldDuplicate reports a key of the object data holds that another of
// its keys matches as encoding/json matches a struct field: in another
// letter case, or written with escapes. Keys of nested objects are not
// compared (they may be a map's). It returns the later key, quoted.
func TopFoldDuplicate(data []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", false
		}
		key, _ := k.(string)
		f := fold(key)
		if seen[f] {
			return strconv.Quote(key), true
		}
		seen[f] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return "", false
		}
	}
	return "", false
}

// Key is an object key of a document: its path and the byte offset of its
// opening quote.
type Key struct {
	Path string
	Off  int
}

// InexactKeys lists, in document order, the keys of data that
// encoding/json, decoding data into a value of type t, would take for a
// struct field whose name they match only in another letter case
// ("Attempts" for "attempts", "\u212a" for "k"): other readers match a
// field's name exactly, so such a key is none of the struct's fields, and
// a reader of the file must call it unknown. A map's keys are its own;
// values that decode themselves (json.Unmarshaler) or into an interface
// are not looked into. It returns nil for data that does not parse.
func InexactKeys(data []byte, t reflect.Type) []Key {
	var out []Key
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if walkTyped(dec, data, "", t, &out) != nil {
		return nil
	}
	return out
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// walkTyped reads one value from dec, at path, as decoded into t (nil: a
// value not looked into), adding to out the keys InexactKeys lists.
func walkTyped(dec *json.Decoder, data []byte, path string, t reflect.Type, out *[]Key) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType)) {
		t = nil
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		var fields map[string]reflect.Type // a struct's, by exact name
		if t != nil && t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		}
		for dec.More() {
			koff := valueStart(data, int(dec.InputOffset()))
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			p := Member(path, k)
			var vt reflect.Type
			switch {
			case fields != nil:
				ft, exact := fields[k]
				if !exact && foldsToField(k, fields) {
					*out = append(*out, Key{p, koff})
				}
				vt = ft
			case t != nil && t.Kind() == reflect.Map:
				vt = t.Elem()
			}
			if err := walkTyped(dec, data, p, vt, out); err != nil {
				return err
			}
		}
	case '[':
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walkTyped(dec, data, fmt.Sprintf("%s[%d]", path, i), et, out); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// jsonFields are the names encoding/json decodes into a struct of type t
// (its exported fields' tag names or Go names, those of embedded structs
// without a tag included), with each field's type.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, own := out[k]; !own {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = ft
	}
	return out
}

// foldsToField says whether key is one of fields' names in another letter
// case.
func foldsToField(key string, fields map[string]reflect.Type) bool {
	fk := fold(key)
	for name := range fields {
		if fold(name) == fk {
			return true
		}
	}
	return false
}

func firstDuplicate(data []byte, canon func(string) string) (path string, off int, ok bool) {
	seen := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	err := Walk(dec, data, "", Visitor{Key: func(p string, o int) {
		c := canon(p)
		if seen[c] && !ok {
			path, off, ok = p, o, true
		}
		seen[c] = true
	}})
	if err != nil {
		return "", 0, false
	}
	return path, off, ok
}

// fold maps every rune of s to the least rune of its case-folding orbit,
// so that fold(a) == fold(b) exactly when strings.EqualFold(a, b), as
// encoding/json matches a key to a struct field.
func fold(s string) string {
	var b strings.Builder
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// BOM is the UTF-8 byte-order mark some editors put at a file's start
// (dsl.JSONBOM: the pipeline's jsondecode names it too).
var BOM = dsl.JSONBOM

// BOMMessage is what a reader says of a JSON file that starts with BOM.
const BOMMessage = dsl.JSONBOMMessage

// NotUTF8 is the offset of the first byte of data that is not UTF-8, or
// -1. encoding/json reads such a byte as U+FFFD, so two names that differ
// only there would be read as one.
func NotUTF8(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	return dsl.InvalidUTF8At(data)
}

// NotUTF8Message is what a reader says of a JSON file NotUTF8 finds a
// byte in.
const NotUTF8Message = "a byte that is not UTF-8 (JSON text is UTF-8; a JSON reader would read it as U+FFFD, so two names that differ only there would be read as one): re-encode the file as UTF-8"

// TooDeep returns the offset of the first bracket ('{' or '[') of data
// that opens a value nested more than limit levels deep, in one pass over
// the bytes, strings skipped; ok is false when none does. A walk of a
// document keeps the path of every value, each as long as its depth: a
// few kilobytes nested thousands deep would take gigabytes, so a reader
// refuses such a document before it walks it.
func TooDeep(data []byte, limit int) (off int, ok bool) {
	depth, inString := 0, false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case inString && c == '\\':
			i++ // the escaped byte
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			if depth++; depth > limit {
				return i, true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return 0, false
}

// numberRe is the grammar of a JSON number (RFC 8259).
var numberRe = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// IsNumber reports whether s is a JSON number and nothing else: what a
// number written in a string must hold. Go's parsers take more ("1_0",
// "0x1p-1", "+1", ".5", "1.", " 1"), which other readers read otherwise
// or not at all.
func IsNumber(s string) bool { return numberRe.MatchString(s) }

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Member is the path of member k of the object at path: path.k, or
// path["k"] for a key that is not an identifier.
func Member(path, k string) string {
	if identRe.MatchString(k) {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	return path + "[" + strconv.Quote(k) + "]"
}

var indexRe = regexp.MustCompile(`\[[0-9]+\]`)

// ValueAt finds the value encoding/json's UnmarshalTypeError names: by
// its field, without the array indices ("items.baseline"), and its
// offset (where the value ends). It returns the value's path with them
// ("items[9].baseline") and the offset where it starts: the last value
// of that field starting at or before off. When data holds none (or does
// not parse), field and off come back as given.
func ValueAt(data []byte, field string, off int64) (string, int64) {
	path, at := field, off
	found := false
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // a number beyond float64 is a value too
	Walk(dec, data, "", Visitor{Value: func(p string, o int) {
		if int64(o) <= off && indexRe.ReplaceAllString(p, "") == field {
			path, at, found = p, int64(o), true
		}
	}})
	if !found {
		return field, off
	}
	return path, at
}

// valueStart is the offset of the next value after off: past blanks, a
// colon or a comma.
func valueStart(data []byte, off int) int {
	for off < len(data) && bytes.IndexByte([]byte(" \t\r\n:,"), data[off]) >= 0 {
		off++
	}
	return off
}
