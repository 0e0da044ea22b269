package modelcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/stages/items"
)

// parseReference is Parse as it was first written, in three passes (the
// body decoded into a map, the fields decoded again, each value made
// canonical): the keys of every store written since are its keys, so
// Parse must agree with it on every body, refusals included.
func parseReference(path string, body []byte) (*Request, error) {
	if !utf8.Valid(body) {
		// A string of bytes that are not UTF-8 is refused (items.Canonical:
		// decoded, they would become U+FFFD, and two requests one key);
		// outside strings the decoder refuses them anyway.
		return nil, &BadRequest{"not UTF-8"}
	}
	if dsl.LoneSurrogate(body) >= 0 {
		// So is an escape of half a surrogate pair, for the same reason.
		return nil, &BadRequest{"half a surrogate pair"}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, &BadRequest{fmt.Sprintf("the request body of POST %s is not a JSON object: %v", path, err)}
	}
	if obj == nil {
		return nil, &BadRequest{fmt.Sprintf("the request body of POST %s is null: send a JSON object", path)}
	}
	r := &Request{Path: path}
	m, ok := obj["model"]
	if !ok || json.Unmarshal(m, &r.Model) != nil || r.Model == "" {
		return nil, &BadRequest{"model"}
	}
	need := map[string]string{
		"/v1/chat/completions": "messages",
		"/v1/completions":      "prompt",
		"/v1/embeddings":       "input",
	}[path]
	if v, ok := obj[need]; !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil, &BadRequest{"need"}
	}
	if path == "/v1/chat/completions" {
		var msgs []json.RawMessage
		if json.Unmarshal(obj["messages"], &msgs) != nil {
			return nil, &BadRequest{"messages"}
		}
	}
	if s, ok := obj["stream"]; ok {
		if err := json.Unmarshal(s, &r.Stream); err != nil {
			var null any
			if json.Unmarshal(s, &null) != nil || null != nil {
				return nil, &BadRequest{"stream"}
			}
		}
	}
	if path != "/v1/embeddings" {
		temp := 1.0
		if t, ok := obj["temperature"]; ok && !isNull(t) {
			if err := json.Unmarshal(t, &temp); err != nil {
				return nil, &BadRequest{"temperature"}
			}
		}
		_, seeded := obj["seed"]
		if seeded && isNull(obj["seed"]) {
			seeded = false
		}
		r.Sampling = temp > 0 && !seeded
	}
	keys := make([]string, 0, len(obj))
	for f := range obj {
		if !ignored[f] {
			keys = append(keys, f)
		}
	}
	sort.Strings(keys)
	buf := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		kb, _ := json.Marshal(k)
		kb, _ = items.Canonical(kb)
		buf = append(buf, kb...)
		buf = append(buf, ':')
		v, err := items.Canonical(obj[k])
		if err != nil {
			return nil, &BadRequest{"canonical"}
		}
		buf = append(buf, v...)
	}
	r.Canonical = append(buf, '}')
	return r, nil
}

var parseSeeds = []string{
	"{\"model\":\"0\",\"messages\":[],\"\xf2\":0}",
	"{\"model\":\"sim-model\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}",
	`{"model":"sim-model","messages":[{"role":"user","content":"What is 2 + 3?"}],"temperature":0}`,
	`{"model":"sim-model","messages":[{"role":"user","content":"say something long"}],"temperature":0,"stream":true}`,
	`{"model":"sim-model","prompt":[[72,105,32,116,104,101,114,101]],"echo":true,"logprobs":1,"max_tokens":1,"temperature":0}`,
	`{"model":"sim-model","prompt":"Once upon","max_tokens":8,"temperature":0,"stream":true}`,
	`{"model":"sim-model","input":["a","b"]}`,
	` { "user" : "u1", "model" : "m", "messages" : [ ] , "seed" : null, "temperature" : 1e-3, "z": {"b":1,"a":[1.50,"x\u00e9\n"]} } `,
	`{"model":"m","model":"n","messages":[],"messages":"x","stream":null,"temperature":null,"seed":7}`,
	`{"model":"a<b>&\u2028","messages":[{"c":"<tag>\ud83d\ude00"}],"\u0075ser":"x","metadata":{"a":1},"temperature":-0}`,
	`{"model":"m","messages":[],"stream":"yes"}`,
	`{"model":"m","messages":[],"temperature":"hot"}`,
	`{"model":"m","messages":[],"temperature":1e400}`,
	`{"model":null,"messages":[]}`,
	`{"model":"","messages":[]}`,
	`{"model":5,"messages":[]}`,
	`{"messages":[]}`,
	`{"model":"m","messages":null}`,
	`{"model":"m","messages":{}}`,
	`{"model":"m","messages":[]} x`,
	`{"model":"m","messages":[],}`,
	`{"model":"m","messages":[01]}`,
	`{"model":"m","messages":["\x"]}`,
	"{\"model\":\"m\xff\",\"messages\":[\"\xfe\"]}",
	`{"model":"m","messages":[]`,
	`[1,2]`, `"s"`, `null`, ` null `, `3`, ``, `{}`, `{"":1}`,
	`{"model":"m","messages":[{"content":"sur\ud800"}]}`, `{"model":"m","messages":[{"content":"sur\ufffd \\ud800"}]}`,
}

// TestParseMatchesReference: Parse gives every body the key parts the
// first Parse gave it, and refuses what it refused.
func TestParseMatchesReference(t *testing.T) {
	for _, path := range []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings"} {
		for _, body := range parseSeeds {
			checkParse(t, path, []byte(body))
		}
	}
}

func checkParse(t *testing.T, path string, body []byte) {
	t.Helper()
	got, gerr := Parse(path, body)
	want, werr := parseReference(path, body)
	if (gerr != nil) != (werr != nil) {
		t.Fatalf("%s %q: Parse error %v, the reference's %v", path, body, gerr, werr)
	}
	if gerr != nil {
		if _, ok := gerr.(*BadRequest); !ok {
			t.Fatalf("%s %q: error %T, want *BadRequest", path, body, gerr)
		}
		return
	}
	if got.Model != want.Model || got.Sampling != want.Sampling || got.Stream != want.Stream || !bytes.Equal(got.Canonical, want.Canonical) {
		t.Fatalf("%s %q:\n got %+v %s\nwant %+v %s", path, body, got, got.Canonical, want, want.Canonical)
	}
	for _, w := range []string{"", "sha256:0f3a", "w<&>\"\u00e9"} {
		for _, occ := range []int{0, 2} {
			if got.Key(w, occ) != keyReference(want, w, occ) {
				t.Fatalf("%s %q: keys differ", path, body)
			}
		}
	}
}

// keyReference is Request.Key as it was first written.
func keyReference(r *Request, weights string, occurrence int) string {
	var b bytes.Buffer
	b.WriteString(`{"v":"` + KeyVersion + `","path":`)
	b.WriteString(strconv.Quote(r.Path))
	b.WriteString(`,"model":`)
	q, _ := json.Marshal(r.Model)
	b.Write(q)
	b.WriteString(`,"weights":`)
	q, _ = json.Marshal(weights)
	b.Write(q)
	b.WriteString(`,"occurrence":`)
	b.WriteString(strconv.Itoa(occurrence))
	b.WriteString(`,"request":`)
	b.Write(r.Canonical)
	b.WriteByte('}')
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:])
}

func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings"} {
			checkParse(t, path, []byte(body))
		}
	})
}
