package jsonpos

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFirstDuplicate(t *testing.T) {
	for doc, want := range map[string]string{
		`{"a": 1, "b": {"c": 1, "c": 2}}`:    "b.c",
		`{"a": 1, "a": 1}`:                   "a",
		`[{"x y": 1}, {"x y": 2, "x y": 3}]`: `[1]["x y"]`,
		`{"a": {"k": 1}, "b": {"k": 1}}`:     "",
		`{"a": [1, 2], "b": [{"a": 1}]}`:     "",
		`{"a": 1, "a": `:                     "", // does not parse
	} {
		p, off, ok := FirstDuplicate([]byte(doc))
		assert.Equal(t, want, p, doc)
		assert.Equal(t, want != "", ok, doc)
		if ok {
			// The offset is the second key's opening quote.
			assert.Equal(t, byte('"'), doc[off], doc)
			assert.Equal(t, bytes.LastIndex([]byte(doc[:off+1]), []byte(`"`)), off, doc)
		}
	}
}

func TestWalkPositions(t *testing.T) {
	doc := []byte("{\n  \"a\": [10, {\"b\": true}],\n  \"c d\": null\n}")
	vals, keys := map[string]int{}, map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(doc))
	require.NoError(t, Walk(dec, doc, "", Visitor{
		Value: func(p string, off int) { vals[p] = off },
		Key:   func(p string, off int) { keys[p] = off },
	}))
	at := func(s string) int { return bytes.Index(doc, []byte(s)) }
	assert.Equal(t, map[string]int{"": 0, "a": at("[10"), "a[0]": at("10"), "a[1]": at(`{"b"`), "a[1].b": at("true"), `["c d"]`: at("null")}, vals)
	assert.Equal(t, map[string]int{"a": at(`"a"`), "a[1].b": at(`"b"`), `["c d"]`: at(`"c d"`)}, keys)
}

func TestMayRepeat(t *testing.T) {
	names := [][]byte{[]byte("id"), []byte("score")}
	for line, want := range map[string]bool{
		`{"id":"a","score":1}`:                   false,
		`{"id":"a","score":1,"score":2}`:         true,
		`{"id":"a","score":1,"Score":2}`:         true,
		`{"id":"a","\u0073core":1}`:              true,
		`{"id":"a","score":1,"outputs":"score"}`: true, // cheap: a value may look like a key
		`{"id":"a","scores":1,"score":1}`:        false,
	} {
		assert.Equal(t, want, MayRepeat([]byte(line), names), line)
	}
}

func TestInexactKeys(t *testing.T) {
	type inner struct {
		State    string `json:"state"`
		Attempts int    `json:"attempts"`
	}
	type doc struct {
		Name  string           `json:"name"`
		Kid   inner            `json:"kid"`
		Kids  []inner          `json:"kids"`
		ByID  map[string]inner `json:"by_id"`
		Raw   json.RawMessage  `json:"raw"`
		Any   any              `json:"any"`
		Plain int
	}
	for text, want := range map[string][]string{
		`{"name": "a", "kid": {"state": "x", "attempts": 2}, "Plain": 1}`: nil,
		`{"Name": "a"}`:                                             {"Name"},
		`{"name": "a", "NAME": "b"}`:                                {"NAME"},
		`{"kid": {"state": "x", "Attempts": 2}}`:                    {"kid.Attempts"},
		`{"kids": [{"state": "x"}, {"STATE": "y"}]}`:                {"kids[1].STATE"},
		`{"by_id": {"Kid": {"State": "x"}, "kid": {"state": "y"}}}`: {"by_id.Kid.State"},
		`{"raw": {"Name": 1}, "any": {"Name": 1}, "plain": 1}`:      {"plain"},
		`{"extra": 1, "kid": "not an object", "kids": {"Name": 1}}`: nil,                // unknown, or of another kind: the decoder says
		"{\"\u212aid\": {}}":                                        {"[\"\u212aid\"]"}, // the Kelvin sign folds to k
		`{"name": `:                                                 nil,                // does not parse
	} {
		var got []string
		for _, k := range InexactKeys([]byte(text), reflect.TypeFor[doc]()) {
			got = append(got, k.Path)
			assert.Equal(t, byte('"'), text[k.Off], text)
		}
		assert.Equal(t, want, got, text)
	}
	// A map of structs at the top, as an outcomes file is read.
	keys := InexactKeys([]byte(`{"s1": "x", "s2": {"State": "y", "attempts": 1}}`), reflect.TypeFor[map[string]inner]())
	assert.Equal(t, []Key{{"s2.State", 19}}, keys)
}

func TestTooDeep(t *testing.T) {
	for doc, want := range map[string]int{
		`{"a": [[1]]}`:                 -1,
		`{"a": [[[1]]]}`:               8,  // the fourth bracket
		`{"[[[[": "{{{{"}`:             -1, // brackets in strings are text
		`{"a\"[[[[": [1]}`:             -1, // and so after an escaped quote
		`[{"k": {"k": []}}]`:           13,
		`[[[]]], [[[]]]`:               -1, // depth falls back
		strings.Repeat("[", 1e6):       3,
		`"\\" [[[[`:                    8, // an escaped backslash ends no string
		`{"a": 1}` + "\n" + `[[[[]]]]`: 12,
	} {
		off, deep := TooDeep([]byte(doc), 3)
		if want < 0 {
			assert.False(t, deep, doc)
			continue
		}
		assert.True(t, deep, doc)
		assert.Equal(t, want, off, doc)
	}
}

func TestValueAt(t *testing.T) {
	doc := []byte(`{"items": [{"b": 1}, {"b": true}, {"b": 1e400}], "b": 2}`)
	at := func(s string) int64 { return int64(bytes.Index(doc, []byte(s))) }
	// encoding/json gives the offset after the value.
	path, off := ValueAt(doc, "items.b", at("true")+4)
	assert.Equal(t, "items[1].b", path)
	assert.Equal(t, at("true"), off)
	path, off = ValueAt(doc, "items.b", at("1e400")+5)
	assert.Equal(t, "items[2].b", path)
	assert.Equal(t, at("1e400"), off)
	path, off = ValueAt(doc, "nothing.here", 7)
	assert.Equal(t, "nothing.here", path)
	assert.Equal(t, int64(7), off)
}
