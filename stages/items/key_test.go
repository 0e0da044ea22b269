package items

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestItemKeyEnvelope(t *testing.T) {
	key, err := ItemKey("sha256:bundle", json.RawMessage(`{ "b": 2, "a": [1.50, "x<y"] }`), "qwen",
		map[string]any{"topology": "centralized", "team_size": 3, "temperature": 0.7}, "sha256:worker")
	require.NoError(t, err)
	envelope := `{"v":"cairn.item.v1","bundle":"sha256:bundle","item":{"a":[1.50,"x<y"],"b":2},` +
		`"model":"qwen","runtime":{"team_size":3,"temperature":0.7,"topology":"centralized"},"worker":"sha256:worker"}`
	sum := sha256.Sum256([]byte(envelope))
	assert.Equal(t, hex.EncodeToString(sum[:]), key)
}

func TestItemKeyInputs(t *testing.T) {
	base := func() (string, json.RawMessage, string, map[string]any, string) {
		return "b1", json.RawMessage(`{"q":"What is 1 + 2?","a":"3"}`), "m1", map[string]any{"seed": 0, "topology": "single"}, "w1"
	}
	key := func(b string, item json.RawMessage, m string, rt map[string]any, w string) string {
		k, err := ItemKey(b, item, m, rt, w)
		require.NoError(t, err)
		return k
	}
	ref := key(base())

	same := map[string]func() string{
		"whitespace and member order": func() string {
			b, _, m, rt, w := base()
			return key(b, json.RawMessage("{\n  \"a\": \"3\",\n  \"q\": \"What is 1 + 2?\"\n}"), m, rt, w)
		},
		"runtime built in another order": func() string {
			b, item, m, _, w := base()
			rt := map[string]any{}
			rt["topology"] = "single"
			rt["seed"] = 0
			return key(b, item, m, rt, w)
		},
	}
	for name, f := range same {
		assert.Equal(t, ref, f(), name)
	}

	differ := map[string]func() string{
		"bundle": func() string { _, i, m, rt, w := base(); return key("b2", i, m, rt, w) },
		"item": func() string {
			b, _, m, rt, w := base()
			return key(b, json.RawMessage(`{"q":"What is 1 + 2?","a":"4"}`), m, rt, w)
		},
		"model": func() string { b, i, _, rt, w := base(); return key(b, i, "m2", rt, w) },
		"runtime": func() string {
			b, i, m, _, w := base()
			return key(b, i, m, map[string]any{"seed": 1, "topology": "single"}, w)
		},
		"worker":     func() string { b, i, m, rt, _ := base(); return key(b, i, m, rt, "w2") },
		"no runtime": func() string { b, i, m, _, w := base(); return key(b, i, m, nil, w) },
	}
	seen := map[string]string{ref: "base"}
	for name, f := range differ {
		k := f()
		prev, dup := seen[k]
		assert.False(t, dup, "changing the %s gives the key of %s", name, prev)
		seen[k] = name
	}

	// The bundle and the model are separate fields: moving text between
	// them changes the key.
	assert.NotEqual(t, key("ab", base2item(), "c", nil, ""), key("a", base2item(), "bc", nil, ""))
}

func base2item() json.RawMessage { return json.RawMessage(`1`) }

func TestItemKeyRejectsBadItems(t *testing.T) {
	for _, raw := range []string{``, `{`, `{"a":1} {"b":2}`, `nul`} {
		_, err := ItemKey("b", json.RawMessage(raw), "m", nil, "w")
		assert.Error(t, err, "%q", raw)
	}
}

func TestCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"a":{"d":[true,null],"c":"é"}}`, `{"a":{"c":"é","d":[true,null]},"b":1}`},
		{`"\u00e9<&>"`, `"é<&>"`},
		{` 1e3 `, `1e3`},
		{`[ ]`, `[]`},
	}
	for _, tt := range tests {
		got, err := Canonical(json.RawMessage(tt.in))
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, string(got), tt.in)
	}
}

// canonicalReference is the definition Canonical implements: decode with
// UseNumber, encode without HTML escaping.
func canonicalReference(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one value")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func TestCanonicalMatchesReference(t *testing.T) {
	inputs := []string{
		`{"b":1,"a":{"d":[true,null],"c":"é"}}`,
		`{"z":{"y":{"x":[{"b":2,"a":1},{"d":[],"c":{}}]}},"a":-0.5e+10}`,
		`{"a":1,"a":2,"b":{"k":1,"k":{"n":3}}}`,
		`{"\u0062":1,"a":2,"\u0061b":3}`,
		`"tab\there, quote \" slash \\ \/ \b\f\n\r \u0001 \u2028 \u2029 \ud83d\ude00 <&>"`,
		"\"raw \u2028 line separator\"",
		`[1, 2.50, -0, 0e0, 1E-7, 123456789012345678901234567890]`,
		` { "question" : "What is 17 + 25?" , "answer" : "42" , "meta" : { "tags" : [ "a" , "b" ] } } `,
		`{"é":1,"e":2,"É":3,"z":4,"":5}`,
		`[]`, `{}`, `[[[[]]]]`, `null`, `true`, `false`, `0`, `""`,
	}
	for _, in := range inputs {
		want, err := canonicalReference([]byte(in))
		require.NoError(t, err, in)
		got, err := Canonical(json.RawMessage(in))
		require.NoError(t, err, in)
		assert.Equal(t, string(want), string(got), in)
	}
	for _, bad := range []string{``, ` `, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `01`, `-`, `1.`, `1e`, `.5`,
		`tru`, `nulll`, `"abc`, "\"ctl \x01\"", `{"a":1}}`, `"\x"`, `{a:1}`, `[1]]`} {
		_, err := Canonical(json.RawMessage(bad))
		assert.Error(t, err, "%q", bad)
	}
}

// A string that is not UTF-8 is refused, where Go's decoder would make
// each bad byte U+FFFD and give two different items one key.
func TestCanonicalRefusesBytesThatAreNotUTF8(t *testing.T) {
	for _, bad := range []string{"\"invalid utf8 \xff here\"", "{\"q\": \"\xfe\"}", "{\"\xc3\": 1}", "[\"ok\", \"caf\xc3\"]"} {
		_, err := Canonical(json.RawMessage(bad))
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), "bytes that are not UTF-8", "%q", bad)
	}
	_, err := Canonical(json.RawMessage("{\"q\": \"\xfe\"}"))
	assert.Contains(t, err.Error(), "(offset 7)", "the first bad byte")
	a, err := ItemKey("b", json.RawMessage(`{"q":"\ufffd"}`), "m", nil, "w")
	require.NoError(t, err, "U+FFFD itself is text")
	assert.NotEmpty(t, a)
}

// An escape of half a UTF-16 surrogate pair is refused: Go's decoder
// would make it U+FFFD, and give "\ud800", "\udbff" and "\ufffd" one key.
func TestCanonicalRefusesLoneSurrogates(t *testing.T) {
	for _, bad := range []string{`"sur\ud800"`, `{"q": "sur\udbff"}`, `{"\udc00": 1}`, `["ok \ud83d\ude00", "\ud83d x"]`, `"\ud800\ud800"`} {
		_, err := Canonical(json.RawMessage(bad))
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), "half a UTF-16 surrogate pair", "%q", bad)
		var te *TextError
		assert.ErrorAs(t, err, &te)
	}
	_, err := Canonical(json.RawMessage(`{"q": "sur\udbff"}`))
	assert.Contains(t, err.Error(), "offset 10", "the escape")
	for _, good := range []string{`"sur\ufffd"`, `"\ud83d\ude00"`, `"\\ud800"`} {
		_, err := Canonical(json.RawMessage(good))
		assert.NoError(t, err, good)
	}
}

// CanonicalMember gives Canonical's text and, in the same pass, the
// canonical text of one top-level member; never a nested member of that
// name. What readers take differently, it refuses, saying where.
func TestCanonicalMember(t *testing.T) {
	cases := []struct{ in, member string }{
		{`{"q": "What is 1 + 2?", "id": "q1"}`, `"q1"`},
		{`{"id": 7.50, "x": 1}`, `7.50`},
		{`{"x": {"id": "nested"}}`, ``},
		{`{"id": "a", "x": [1e308, -1e-300, 0e400, 0.0e-999, 4.9e-324, 1797693134862315708145274237317043567980705675258449.7e256]}`, `"a"`},
		{`{"id": "caf\u00e9"}`, `"café"`},
		{`["id", "q1"]`, ``},
		{`"id"`, ``},
	}
	for _, tc := range cases {
		canon, member, err := CanonicalMember(json.RawMessage(tc.in), "id")
		require.NoError(t, err, tc.in)
		want, err := Canonical(json.RawMessage(tc.in))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(canon), tc.in)
		if tc.member == "" {
			assert.Nil(t, member, tc.in)
		} else {
			assert.Equal(t, tc.member, string(member), tc.in)
		}
	}
	_, _, err := CanonicalMember(json.RawMessage(`{"id": 1} {}`), "id")
	assert.ErrorContains(t, err, "more than one JSON value")

	for _, tc := range []struct {
		in, msg string
		off     int
	}{
		{`{"id": "a", "id": {"b": [1, 2]}}`, `the key "id" is given twice in one object`, 12},
		{`{"id": "q", "x": {"k": 1, "k": 2}}`, `the key "k" is given twice in one object`, 26},
		{`{"id": "q", "x": {"\u006b": 1, "k": 2}}`, `the key "k" is given twice in one object`, 31},
		{`{"id": "q", "x": [1e400]}`, `the number 1e400 is beyond what a float64 holds`, 18},
		{`{"id": "q", "x": -1e-400}`, `the number -1e-400 is beyond what a float64 holds`, 17},
		{`{"id": "q", "x": 2e-324}`, `the number 2e-324 is beyond`, 17},
		{`{"id": "q", "x": 1` + strings.Repeat("0", 309) + `}`, `is beyond what a float64 holds`, 17},
	} {
		_, _, err := CanonicalMember(json.RawMessage(tc.in), "id")
		var amb *AmbiguousError
		require.ErrorAs(t, err, &amb, tc.in)
		assert.Contains(t, amb.Msg, tc.msg, tc.in)
		assert.Equal(t, tc.off, amb.Offset, tc.in)
		// Canonical, which keys other values, takes them as before.
		_, err = Canonical(json.RawMessage(tc.in))
		assert.NoError(t, err, tc.in)
	}

	canons, members, errs := CanonicalMembers([]json.RawMessage{json.RawMessage(`{"id":"a"}`), json.RawMessage(`{"id":`)}, "id")
	assert.Equal(t, `{"id":"a"}`, string(canons[0]))
	assert.Equal(t, `"a"`, string(members[0]))
	assert.NoError(t, errs[0])
	assert.Error(t, errs[1])
}

// CanonicalMembers reads a chunk of items with one canonicalizer: each
// item's result is its own, also after an item that failed halfway
// through an object (whose members were left on the stack).
func TestCanonicalMembersShareNothing(t *testing.T) {
	ins := []string{
		`{"id": "q1", "b": {"z": 1, "a": [{"y": 2, "x": 3}]}, "a": 0}`,
		`{"id": "q2", "c": {"d": {"e": {"f": `,
		`{"z": 1, "id": "q3"}`,
		`{"b": {"id": "nested"}, "a": 1}`,
		`{"id": "q5", "id": "q5b", "m": {"k": "v", "j": "w"}}`,
		`{"id": {"x": [1, 2}}`,
		`[{"b": 1, "a": 2}, {"id": "no"}]`,
		`{"id": "q8"}`,
	}
	raws := make([]json.RawMessage, 0, 2000)
	for i := range 2000 { // many items a canonicalizer
		raws = append(raws, json.RawMessage(ins[i%len(ins)]))
	}
	canons, members, errs := CanonicalMembers(raws, "id")
	for i, raw := range raws {
		canon, member, err := CanonicalMember(raw, "id")
		assert.Equal(t, err, errs[i], "%d: %s", i, raw)
		assert.Equal(t, string(canon), string(canons[i]), "%d: %s", i, raw)
		assert.Equal(t, string(member), string(members[i]), "%d: %s", i, raw)
	}
}

// Strings of ASCII only skip the checks that other strings get (valid
// UTF-8, no U+2028 or U+2029): each string here, alone and as a key and a
// value, is canonicalized as the reference does, or refused by both.
func TestCanonicalStringsOfEveryKind(t *testing.T) {
	strs := []string{"", "plain ascii", "tab\\there", "quote \\\" end", "slash \\/", "\\u00e9 escaped", "é raw", "日本",
		"raw \u2028 sep", "raw \u2029 sep", "\\u2028 escaped", "ends in ascii é x", "\x7f del", "~ tilde", "\\ud83d\\ude00"}
	for _, s := range strs {
		for _, in := range []string{`"` + s + `"`, `{"` + s + `":"` + s + `"}`, `["` + s + `",1]`} {
			want, werr := canonicalReference([]byte(in))
			got, gerr := Canonical(json.RawMessage(in))
			if werr != nil || gerr != nil {
				assert.Equal(t, werr != nil, gerr != nil, "%q: reference %v, Canonical %v", in, werr, gerr)
				continue
			}
			assert.Equal(t, string(want), string(got), in)
		}
	}
	for _, bad := range []string{"\"ctl \x01\"", "\"nl \n\"", "\"bad \xff\"", "{\"k\x1f\":1}"} {
		_, err := Canonical(json.RawMessage(bad))
		assert.Error(t, err, "%q", bad)
	}
}
