package jsonpos

import (
	"bytes"
	"encoding/json"
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
