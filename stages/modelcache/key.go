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
	"errors"
	"fmt"
	"strconv"

	"github.com/cairn-run/cairn/dsl/jsonwrite"
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

// Parse checks a request body for path and returns its key parts. The body
// is read once: checked, split into its members and each made canonical in
// one pass (items.CanonicalObject).
func Parse(path string, body []byte) (*Request, error) {
	members, err := items.CanonicalObject(body)
	if err != nil {
		if isNull(body) {
			return nil, &BadRequest{fmt.Sprintf("the request body of POST %s is null: send a JSON object", path)}
		}
		var te *items.TextError
		if errors.As(err, &te) {
			return nil, &BadRequest{fmt.Sprintf("the request body of POST %s is JSON, but %v", path, err)}
		}
		return nil, &BadRequest{fmt.Sprintf("the request body of POST %s is not a JSON object: %v", path, err)}
	}
	r := &Request{Path: path}
	need := map[string]string{
		"/v1/chat/completions": "messages",
		"/v1/completions":      "prompt",
		"/v1/embeddings":       "input",
	}[path]
	var model, needed, messages, stream, temperature []byte
	seeded := false
	n := 2
	for _, m := range members {
		switch string(m.Key) {
		case "model":
			model = m.Value
		case "messages":
			messages = m.Value
		case "stream":
			stream = m.Value
		case "temperature":
			temperature = m.Value
		case "seed":
			seeded = !isNull(m.Value)
		}
		if string(m.Key) == need {
			needed = m.Value
		}
		if !ignored[string(m.Key)] {
			n += len(m.Enc) + 1
		}
	}
	if model == nil || model[0] != '"' || jsonUnquote(model, &r.Model) != nil || r.Model == "" {
		return nil, &BadRequest{fmt.Sprintf("the request body of POST %s has no \"model\" string: name the model", path)}
	}
	if needed == nil || isNull(needed) {
		return nil, &BadRequest{fmt.Sprintf("the request body of POST %s has no %q: it is required", path, need)}
	}
	if path == "/v1/chat/completions" && messages[0] != '[' {
		return nil, &BadRequest{fmt.Sprintf("the request body of POST %s has \"messages\" that is not a list", path)}
	}
	if stream != nil {
		switch string(stream) {
		case "true":
			r.Stream = true
		case "false", "null":
		default:
			return nil, &BadRequest{fmt.Sprintf("the request body of POST %s has \"stream\" that is not true or false", path)}
		}
	}
	if path != "/v1/embeddings" {
		temp := 1.0 // the OpenAI API's default, and vLLM's
		if temperature != nil && !isNull(temperature) {
			if temperature[0] != '-' && (temperature[0] < '0' || temperature[0] > '9') {
				return nil, &BadRequest{fmt.Sprintf("the request body of POST %s has \"temperature\" that is not a number", path)}
			}
			// As json.Unmarshal reads a number into a float64.
			if temp, err = strconv.ParseFloat(string(temperature), 64); err != nil {
				return nil, &BadRequest{fmt.Sprintf("the request body of POST %s has \"temperature\" that is not a number", path)}
			}
		}
		r.Sampling = temp > 0 && !seeded
	}
	// The canonical object: the members in order (keys sorted, the last of
	// duplicate keys kept), each canonical, without the ignored fields.
	buf := make([]byte, 0, n)
	buf = append(buf, '{')
	for _, m := range members {
		if ignored[string(m.Key)] {
			continue
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = append(buf, m.Enc...)
	}
	r.Canonical = append(buf, '}')
	return r, nil
}

// jsonUnquote decodes v, a canonical JSON string, into s.
func jsonUnquote(v []byte, s *string) error {
	if len(v) >= 2 && bytes.IndexByte(v, '\\') < 0 {
		*s = string(v[1 : len(v)-1])
		return nil
	}
	return json.Unmarshal(v, s)
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
	var arr [1024]byte
	b := append(arr[:0], `{"v":"`+KeyVersion+`","path":`...)
	b = strconv.AppendQuote(b, r.Path)
	b = append(b, `,"model":`...)
	b = jsonwrite.String(b, r.Model)
	b = append(b, `,"weights":`...)
	b = jsonwrite.String(b, weights)
	b = append(b, `,"occurrence":`...)
	b = strconv.AppendInt(b, int64(occurrence), 10)
	b = append(b, `,"request":`...)
	b = append(b, r.Canonical...)
	b = append(b, '}')
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
