// Package modelcache is cairn's content-addressed model-call cache: a
// loopback OpenAI-compatible HTTP endpoint that answers each request from
// cairn's item store when it was answered before, and otherwise forwards it
// to the real endpoints (round robin), stores the response whole and
// returns it (docs/model-cache.md).
package modelcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/cairn-run/cairn/stages/items"
)

// KeyVersion names the envelope a call's key hashes; it changes whenever
// the envelope does, so old keys are never confused with new ones.
const KeyVersion = "cairn.model-call.v1"

// IgnoredFields are the request fields left out of a call's key: they
// change how a request is delivered or billed, never the answer.
var IgnoredFields = []string{
	"user",            // the end user's id, for abuse monitoring
	"timeout",         // client-side timeouts some clients put in the body
	"request_timeout", // (LiteLLM, older openai clients)
	"metadata",        // tags kept with a stored completion
	"store",           // whether the provider keeps the completion
	"service_tier",    // billing tier
	"prompt_cache_key",
	"safety_identifier",
}

var ignored = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range IgnoredFields {
		m[f] = true
	}
	return m
}()

// Request is a parsed call: what its key is made of.
type Request struct {
	Path  string // /v1/chat/completions, /v1/completions, /v1/embeddings
	Model string
	// Canonical is the request's canonical JSON without IgnoredFields.
	Canonical []byte
	// Sampling: the request draws a sample (temperature > 0, or not
	// given, and no seed): identical requests are distinct occurrences.
	Sampling bool
	Stream   bool
}

// BadRequest is a request body cairn refuses without forwarding it.
type BadRequest struct{ Msg string }

func (e *BadRequest) Error() string { return e.Msg }

// Parse checks a request body for path and returns its key parts.
func Parse(path string, body []byte) (*Request, error) {
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
		return nil, &BadRequest{fmt.Sprintf("the request body of POST %s has no \"model\" string: name the model", path)}
	}
	need := map[string]string{
		"/v1/chat/completions": "messages",
		"/v1/completions":      "prompt",
		"/v1/embeddings":       "input",
	}[path]
	if v, ok := obj[need]; !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil, &BadRequest{fmt.Sprintf("the request body of POST %s has no %q: it is required", path, need)}
	}
	if path == "/v1/chat/completions" {
		var msgs []json.RawMessage
		if json.Unmarshal(obj["messages"], &msgs) != nil {
			return nil, &BadRequest{fmt.Sprintf("the request body of POST %s has \"messages\" that is not a list", path)}
		}
	}
	if s, ok := obj["stream"]; ok {
		if err := json.Unmarshal(s, &r.Stream); err != nil {
			var null any
			if json.Unmarshal(s, &null) != nil || null != nil {
				return nil, &BadRequest{fmt.Sprintf("the request body of POST %s has \"stream\" that is not true or false", path)}
			}
		}
	}
	if path != "/v1/embeddings" {
		temp := 1.0 // the OpenAI API's default, and vLLM's
		if t, ok := obj["temperature"]; ok && !isNull(t) {
			if err := json.Unmarshal(t, &temp); err != nil {
				return nil, &BadRequest{fmt.Sprintf("the request body of POST %s has \"temperature\" that is not a number", path)}
			}
		}
		_, seeded := obj["seed"]
		if seeded && isNull(obj["seed"]) {
			seeded = false
		}
		r.Sampling = temp > 0 && !seeded
	}
	// The canonical object, member by member: keys sorted, each value
	// canonical (the decoder kept the last of duplicate keys).
	keys := make([]string, 0, len(obj))
	for f := range obj {
		if !ignored[f] {
			keys = append(keys, f)
		}
	}
	sort.Strings(keys)
	buf := make([]byte, 0, len(body))
	buf = append(buf, '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		kb, _ := json.Marshal(k)
		kb, _ = items.Canonical(kb) // no HTML escaping, as in the values
		buf = append(buf, kb...)
		buf = append(buf, ':')
		v, err := items.Canonical(obj[k])
		if err != nil {
			return nil, &BadRequest{fmt.Sprintf("the request body of POST %s: %q: %v", path, k, err)}
		}
		buf = append(buf, v...)
	}
	r.Canonical = append(buf, '}')
	return r, nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// Key is the call's key in the item store: the hex sha256 of
//
//	{"v":"cairn.model-call.v1","path":P,"model":M,"weights":W,"occurrence":K,"request":R}
//
// P, M and W are JSON strings: the path, the model id and the weights'
// digest ("" when no serve stage gives one); K is the occurrence (0 for a
// request that does not sample, 1, 2, ... for the k-th identical sampling
// request of a run); R is the canonical request.
func (r *Request) Key(weights string, occurrence int) string {
	var b bytes.Buffer
	b.Grow(128 + len(r.Canonical))
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
