package simmodel

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The rest of the OpenAI API a harness uses, as vLLM serves it: text
// completions (echo and logprobs included, prompts as text or token ids),
// embeddings, streaming (server-sent events ending in "data: [DONE]"), and
// vLLM's tokenizer endpoints at the server's root (GET /tokenizer_info, POST
// /tokenize, POST /detokenize), which lm-evaluation-harness's remote
// tokenizer calls.
//
// The simulated tokenizer is byte level: a text's tokens are its UTF-8
// bytes (ids 0 to 255); EOSToken (256) ends a sequence. Logprobs are a
// deterministic function of the model, the preceding tokens and the token.

// EOSToken is the simulated tokenizer's end-of-sequence id.
const EOSToken = 256

// Sampled answers: a request at temperature > 0 without a seed (or with n >
// 1) gets a fresh draw each time, "<answer> (sample N)" with N counting the
// server's draws, so that repeated requests get different answers.

func (s *Server) serveMore(w http.ResponseWriter, r *http.Request, path string) {
	if path == "/tokenizer_info" {
		writeJSON(w, http.StatusOK, map[string]any{
			"tokenizer_class":  "SimulatedByteTokenizer",
			"model_max_length": 1 << 20,
			"eos_token":        "</s>",
			"bos_token":        nil,
			"pad_token":        "</s>",
			"chat_template":    nil,
		})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	var req map[string]json.RawMessage
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "request body is not a JSON object: "+fmt.Sprint(err), "BadRequestError")
		return
	}
	var model string
	_ = json.Unmarshal(req["model"], &model)
	if model != "" && !s.models[model] || model == "" && path != "/tokenize" && path != "/detokenize" {
		writeError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist on this simulated server.", model), "invalid_request_error")
		return
	}
	switch path {
	case "/tokenize":
		var text string
		if err := json.Unmarshal(req["prompt"], &text); err != nil {
			writeError(w, http.StatusBadRequest, "tokenize takes {\"prompt\": TEXT}", "BadRequestError")
			return
		}
		toks := Tokenize(text)
		writeJSON(w, http.StatusOK, map[string]any{"count": len(toks), "max_model_len": 1 << 20, "tokens": toks, "token_strs": nil})
	case "/detokenize":
		var toks []int
		if err := json.Unmarshal(req["tokens"], &toks); err != nil {
			writeError(w, http.StatusBadRequest, "detokenize takes {\"tokens\": [IDS]}", "BadRequestError")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"prompt": Detokenize(toks)})
	case "/v1/embeddings":
		s.serveEmbeddings(w, model, req["input"])
	case "/v1/completions":
		s.serveCompletions(w, model, req)
	}
}

// Tokenize is the simulated tokenizer: a text's UTF-8 bytes.
func Tokenize(text string) []int {
	out := make([]int, len(text))
	for i := 0; i < len(text); i++ {
		out[i] = int(text[i])
	}
	return out
}

// Detokenize is Tokenize's inverse; EOSToken and ids out of range read as
// nothing.
func Detokenize(toks []int) string {
	b := make([]byte, 0, len(toks))
	for _, t := range toks {
		if t >= 0 && t < 256 {
			b = append(b, byte(t))
		}
	}
	return string(b)
}

func tokenString(t int) string {
	if t == EOSToken {
		return "</s>"
	}
	return Detokenize([]int{t})
}

var mcQuestion = regexp.MustCompile(`(-?\d+)\s*([-+*x])\s*(-?\d+)\?[^\n]*Answer:( ?-?\d*)$`)

// greedy is the simulated model's most likely token after prefix: after
// "... A op B? ... Answer:" it continues with " " and the right number (so
// that a multiple-choice task scored by loglikelihood has the right answer
// most likely), elsewhere a letter chosen by digest.
func greedy(model string, prefix []int) int {
	if m := mcQuestion.FindStringSubmatch(Detokenize(prefix)); m != nil {
		a, _ := strconv.ParseInt(m[1], 10, 64)
		b, _ := strconv.ParseInt(m[3], 10, 64)
		v := a + b
		switch m[2] {
		case "-":
			v = a - b
		case "*", "x":
			v = a * b
		}
		want := " " + strconv.FormatInt(v, 10)
		if got := m[4]; len(got) < len(want) && strings.HasPrefix(want, got) {
			return int(want[len(got)])
		}
		return '\n'
	}
	h := sha256.New()
	h.Write([]byte(model))
	var b [4]byte
	for _, t := range prefix {
		binary.LittleEndian.PutUint32(b[:], uint32(t))
		h.Write(b[:])
	}
	sum := h.Sum(nil)
	return 'a' + int(sum[0]%26)
}

// Logprob is the simulated log probability of tok after prefix: -0.05 for
// the greedy token, else between -1 and -5 by digest.
func Logprob(model string, prefix []int, tok int) float64 {
	if tok == greedy(model, prefix) {
		return -0.05
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d", model, len(prefix), tok)))
	return -1 - float64(binary.BigEndian.Uint16(h[:2])%400)/100
}

// prompts decodes a completions prompt: a string, a list of strings, a list
// of token ids, or a list of lists of token ids.
func prompts(raw json.RawMessage) ([][]int, bool) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return [][]int{Tokenize(one)}, true
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil {
		out := make([][]int, len(texts))
		for i, t := range texts {
			out[i] = Tokenize(t)
		}
		return out, true
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		return [][]int{ids}, true
	}
	var lists [][]int
	if json.Unmarshal(raw, &lists) == nil {
		return lists, true
	}
	return nil, false
}

func (s *Server) serveCompletions(w http.ResponseWriter, model string, req map[string]json.RawMessage) {
	s.chats.Add(1)
	ps, ok := prompts(req["prompt"])
	if !ok || len(ps) == 0 {
		writeError(w, http.StatusBadRequest, "prompt must be a string, a list of strings, or token ids", "BadRequestError")
		return
	}
	var opt struct {
		MaxTokens   *int     `json:"max_tokens"`
		Echo        bool     `json:"echo"`
		Logprobs    *int     `json:"logprobs"`
		Stream      bool     `json:"stream"`
		Temperature *float64 `json:"temperature"`
		Seed        *int64   `json:"seed"`
	}
	raw, _ := json.Marshal(req)
	_ = json.Unmarshal(raw, &opt)
	status := http.StatusOK
	if s.fail() {
		status = http.StatusServiceUnavailable
	}
	s.log(LogEntry{Time: time.Now().UTC(), Model: model, Messages: digestJSON(req["prompt"]), Status: status})
	if status != http.StatusOK {
		s.failed.Add(1)
		writeError(w, status, "simulated overload", "server_error")
		return
	}
	s.wait()
	maxTokens := 16
	if opt.MaxTokens != nil {
		maxTokens = *opt.MaxTokens
	}
	sampled := opt.Temperature != nil && *opt.Temperature > 0 && opt.Seed == nil
	var choices []any
	var texts []string
	for i, p := range ps {
		// The continuation: greedy tokens, or a fresh draw when sampling.
		gen := make([]int, 0, maxTokens)
		seq := append([]int(nil), p...)
		var draw int64
		if sampled {
			draw = s.draws.Add(1)
		}
		for range maxTokens {
			t := greedy(model, seq)
			if sampled {
				t = 'a' + int((int64(t)+draw)%26)
			}
			gen = append(gen, t)
			seq = append(seq, t)
		}
		all := gen
		if opt.Echo {
			all = seq
		}
		text := Detokenize(all)
		texts = append(texts, text)
		c := map[string]any{"index": i, "text": text, "finish_reason": "length"}
		if opt.Logprobs != nil {
			start := 0
			if !opt.Echo {
				start = len(p)
			}
			toks := make([]string, 0, len(seq)-start)
			lps := make([]any, 0, len(seq)-start)
			tops := make([]any, 0, len(seq)-start)
			offs := make([]int, 0, len(seq)-start)
			off := 0
			for j := start; j < len(seq); j++ {
				toks = append(toks, tokenString(seq[j]))
				offs = append(offs, off)
				off += len(tokenString(seq[j]))
				if j == 0 {
					lps = append(lps, nil)
					tops = append(tops, nil)
					continue
				}
				lp := Logprob(model, seq[:j], seq[j])
				g := greedy(model, seq[:j])
				lps = append(lps, lp)
				top := map[string]float64{tokenString(g): -0.05}
				top[tokenString(seq[j])] = lp
				tops = append(tops, top)
			}
			c["logprobs"] = map[string]any{"tokens": toks, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offs}
		} else {
			c["logprobs"] = nil
		}
		choices = append(choices, c)
	}
	id := "cmpl-sim-" + strings.TrimPrefix(digestJSON(req["prompt"]), "sha256:")[:24]
	if opt.Stream {
		sse(w)
		for i, t := range texts {
			for _, piece := range chunks(t) {
				writeEvent(w, map[string]any{"id": id, "object": "text_completion", "created": 0, "model": model,
					"choices": []any{map[string]any{"index": i, "text": piece, "logprobs": nil, "finish_reason": nil}}})
			}
			writeEvent(w, map[string]any{"id": id, "object": "text_completion", "created": 0, "model": model,
				"choices": []any{map[string]any{"index": i, "text": "", "logprobs": nil, "finish_reason": "length"}}})
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "object": "text_completion", "created": 0, "model": model, "choices": choices,
		"usage": map[string]int{"prompt_tokens": len(ps[0]), "completion_tokens": maxTokens, "total_tokens": len(ps[0]) + maxTokens},
	})
}

func (s *Server) serveEmbeddings(w http.ResponseWriter, model string, input json.RawMessage) {
	s.chats.Add(1)
	var texts []string
	var one string
	switch {
	case json.Unmarshal(input, &one) == nil:
		texts = []string{one}
	case json.Unmarshal(input, &texts) == nil:
	default:
		ps, ok := prompts(input)
		if !ok {
			writeError(w, http.StatusBadRequest, "input must be a string, a list of strings, or token ids", "BadRequestError")
			return
		}
		for _, p := range ps {
			texts = append(texts, Detokenize(p))
		}
	}
	s.log(LogEntry{Time: time.Now().UTC(), Model: model, Messages: digestJSON(input), Status: http.StatusOK})
	data := make([]any, len(texts))
	for i, t := range texts {
		sum := sha256.Sum256([]byte(model + "\x00" + t))
		vec := make([]float64, 8)
		for k := range vec {
			vec[k] = float64(int(binary.BigEndian.Uint16(sum[2*k:]))-32768) / 32768
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": vec}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": model,
		"usage": map[string]int{"prompt_tokens": 0, "total_tokens": 0}})
}

// serveSampledChat answers a sampling chat request: n fresh draws.
func (s *Server) serveSampledChat(w http.ResponseWriter, model, digest, answer string, n int, stream bool) {
	n = max(n, 1)
	answers := make([]string, n)
	for i := range answers {
		answers[i] = answer + " (sample " + strconv.FormatInt(s.draws.Add(1), 10) + ")"
	}
	if stream {
		s.streamChat(w, model, digest, answers)
		return
	}
	choices := make([]any, n)
	for i, a := range answers {
		choices[i] = map[string]any{"index": i, "message": Message{Role: "assistant", Content: a}, "finish_reason": "stop"}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-sim-" + strings.TrimPrefix(digest, "sha256:")[:24], "object": "chat.completion",
		"created": 0, "model": model, "choices": choices,
	})
}

// streamChat writes answers as a chat completion's event stream.
func (s *Server) streamChat(w http.ResponseWriter, model, digest string, answers []string) {
	id := "chatcmpl-sim-" + strings.TrimPrefix(digest, "sha256:")[:24]
	sse(w)
	ev := func(i int, delta map[string]any, finish any) {
		writeEvent(w, map[string]any{"id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
			"choices": []any{map[string]any{"index": i, "delta": delta, "finish_reason": finish}}})
	}
	for i, a := range answers {
		ev(i, map[string]any{"role": "assistant", "content": ""}, nil)
		for _, piece := range chunks(a) {
			ev(i, map[string]any{"content": piece}, nil)
		}
		ev(i, map[string]any{}, "stop")
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

// chunks splits text into the pieces a stream sends: word by word, each
// piece keeping its leading space.
func chunks(text string) []string {
	var out []string
	start := 0
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' {
			out = append(out, text[start:i])
			start = i
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

func sse(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

func writeEvent(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	_, _ = io.WriteString(w, "data: "+string(b)+"\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func digestJSON(raw json.RawMessage) string {
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}
