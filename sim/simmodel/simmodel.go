// Package simmodel is a SIMULATED task model: a small OpenAI-compatible HTTP
// server (GET /v1/models, POST /v1/chat/completions; and, in openai.go, the
// completions, embeddings and tokenizer endpoints) whose answers are a
// deterministic function of the model id and the messages. It stands in for a
// vLLM replica in cairn's tests and demos; it runs no model.
//
// Arithmetic questions ("What is 17 + 25?") get the right number, except for
// a share WrongRate of (model, messages) pairs, chosen by their digest, which
// get a wrong one; a reflection request (a fenced prompt and a request for a
// new instruction) gets the prompt back with a new simulated quality (see
// reflect); anything else gets a fixed "simulated answer". Failures
// (HTTP 503) come at FailRate from a seeded generator. Every chat request is
// logged as one JSON line.
package simmodel

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// OwnedBy is the owned_by field of every model the simulated server lists.
const OwnedBy = "cairn-simulated"

// DefaultModel is served when Config.Models is empty.
const DefaultModel = "sim-model"

// Config sets up a simulated server.
type Config struct {
	// Models are the model ids served (default DefaultModel).
	Models []string
	// Latency is added to every chat completion.
	Latency time.Duration
	// FailRate is the share of chat requests answered with HTTP 503,
	// drawn from a generator seeded with Seed.
	FailRate float64
	Seed     uint64
	// WrongRate is the share of arithmetic questions answered wrongly,
	// chosen by the digest of (model, messages).
	WrongRate float64
	// MaxModelLen, when positive, is the context length in tokens (here:
	// words of the messages): a longer request is refused with HTTP 400,
	// as vLLM refuses a prompt over --max-model-len.
	MaxModelLen int
	// RequestLog gets one JSON line (a LogEntry) per chat request.
	RequestLog io.Writer
	// Warmup is how long after New chat completions fail with HTTP 503
	// while GET /health and GET /v1/models already answer, as some
	// servers list their model before their warm-up ends.
	Warmup time.Duration
	// CrashAfter, when positive, calls Crash on the chat request after
	// that many (the request gets no answer): a server that dies
	// mid-run.
	CrashAfter int
	Crash      func()
	// HangAfter, when positive, makes the server hang on the chat request
	// after that many: from then on no request (GET /health included)
	// gets an answer, while the process stays alive: a server that is
	// stuck, not dead.
	HangAfter int
	Hang      func() // called once, as the server hangs
	// Serial makes the server answer one request at a time, in the order
	// they came, GET /health and /v1/models included: a server that
	// queues its health path behind the completions before it, as
	// llama.cpp's Python server does. Busy, it answers late, not never.
	Serial bool
	// DropIdle closes each connection as soon as it has answered a
	// request, without telling the client (no "Connection: close"): a
	// server whose keep-alive timeout passed while the client's
	// connection sat idle, as uvicorn's does after 5 s.
	DropIdle bool
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// LogEntry is one line of the request log.
type LogEntry struct {
	Time      time.Time `json:"time"`
	Model     string    `json:"model"`
	Messages  string    `json:"messages"` // MessagesDigest of the request
	Status    int       `json:"status"`
	UserAgent string    `json:"user_agent,omitempty"`
}

// Server is the simulated model as an http.Handler.
type Server struct {
	cfg    Config
	models map[string]bool

	rngMu sync.Mutex
	rng   *rand.Rand

	logMu sync.Mutex

	chats  atomic.Int64
	failed atomic.Int64
	hung   atomic.Bool
	born   time.Time
	draws  atomic.Int64 // samples drawn (see serveSampledChat)
	serial sync.Mutex   // held for each request with Config.Serial
}

// wait sleeps the configured latency.
func (s *Server) wait() {
	if s.cfg.Latency > 0 {
		time.Sleep(s.cfg.Latency)
	}
}

// New returns a simulated server.
func New(cfg Config) *Server {
	if len(cfg.Models) == 0 {
		cfg.Models = []string{DefaultModel}
	}
	s := &Server{
		cfg:    cfg,
		models: make(map[string]bool, len(cfg.Models)),
		rng:    rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		born:   time.Now(),
	}
	for _, m := range cfg.Models {
		s.models[m] = true
	}
	return s
}

// ChatRequests is the number of chat requests received, failed ones included.
func (s *Server) ChatRequests() int { return int(s.chats.Load()) }

// Failed is the number of chat requests answered with a simulated 503.
func (s *Server) Failed() int { return int(s.failed.Load()) }

// Answer is this server's reply to messages (see the package function).
func (s *Server) Answer(model string, messages []Message) string {
	return Answer(model, messages, s.cfg.WrongRate)
}

// ServeHTTP serves /v1/models, /v1/chat/completions, /v1/completions,
// /v1/embeddings and vLLM's tokenizer endpoints (/tokenizer_info, /tokenize,
// /detokenize): as vLLM, the OpenAI API is under /v1 only, so an endpoint is
// the base URL http://HOST:PORT/v1.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.hung.Load() {
		// A hung server answers nothing: the request waits until its
		// client gives up or the process ends.
		<-r.Context().Done()
		return
	}
	if s.cfg.Serial {
		s.serial.Lock()
		defer s.serial.Unlock()
	}
	switch path := strings.TrimSuffix(r.URL.Path, "/"); path {
	case "/health":
		// As vLLM's: 200 once the server is up, also during warm-up.
		w.WriteHeader(http.StatusOK)
	case "/v1/models":
		if r.Method != http.MethodGet {
			writeError(w, http.StatusMethodNotAllowed, "use GET", "invalid_request_error")
			return
		}
		s.serveModels(w)
	case "/v1/chat/completions":
		if r.Method != http.MethodPost {
			writeError(w, http.StatusMethodNotAllowed, "use POST", "invalid_request_error")
			return
		}
		s.serveChat(w, r)
	case "/v1/completions", "/v1/embeddings", "/tokenize", "/detokenize":
		if r.Method != http.MethodPost {
			writeError(w, http.StatusMethodNotAllowed, "use POST", "invalid_request_error")
			return
		}
		s.serveMore(w, r, path)
	case "/tokenizer_info":
		s.serveMore(w, r, path)
	case "/models", "/chat/completions":
		writeError(w, http.StatusNotFound, "no route "+r.URL.Path+": the OpenAI API is served under /v1, as vLLM serves it; use http://HOST:PORT/v1 as the base URL", "invalid_request_error")
	default:
		writeError(w, http.StatusNotFound, "no route "+r.URL.Path+" on the simulated model server", "invalid_request_error")
	}
}

func (s *Server) serveModels(w http.ResponseWriter) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list"}
	for _, m := range s.cfg.Models {
		list.Data = append(list.Data, model{ID: m, Object: "model", OwnedBy: OwnedBy})
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request) {
	if n := s.chats.Add(1); s.cfg.CrashAfter > 0 && n > int64(s.cfg.CrashAfter) && s.cfg.Crash != nil {
		s.cfg.Crash()
		return
	}
	if s.cfg.HangAfter > 0 && s.chats.Load() > int64(s.cfg.HangAfter) {
		if !s.hung.Swap(true) && s.cfg.Hang != nil {
			s.cfg.Hang()
		}
		<-r.Context().Done()
		return
	}
	if s.cfg.Warmup > 0 && time.Since(s.born) < s.cfg.Warmup {
		s.log(LogEntry{Time: time.Now().UTC(), Status: http.StatusServiceUnavailable, UserAgent: r.UserAgent()})
		s.failed.Add(1)
		writeError(w, http.StatusServiceUnavailable, "the simulated model is warming up", "server_error")
		return
	}
	var req struct {
		Model       string    `json:"model"`
		Messages    []Message `json:"messages"`
		Stream      bool      `json:"stream"`
		Temperature *float64  `json:"temperature"`
		Seed        *int64    `json:"seed"`
		N           int       `json:"n"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	digest := MessagesDigest(req.Messages)
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(strings.Fields(m.Content))
	}
	status := http.StatusOK
	switch {
	case err != nil:
		status = http.StatusBadRequest
	case !s.models[req.Model]:
		status = http.StatusNotFound
	case s.cfg.MaxModelLen > 0 && prompt > s.cfg.MaxModelLen:
		status = http.StatusBadRequest
		err = fmt.Errorf("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", s.cfg.MaxModelLen, prompt)
	case s.fail():
		status = http.StatusServiceUnavailable
	}
	s.log(LogEntry{Time: time.Now().UTC(), Model: req.Model, Messages: digest, Status: status, UserAgent: r.UserAgent()})
	switch status {
	case http.StatusBadRequest:
		msg := err.Error()
		if prompt <= s.cfg.MaxModelLen || s.cfg.MaxModelLen <= 0 {
			msg = "request body is not a chat completion request: " + msg
		}
		writeError(w, status, msg, "BadRequestError")
		return
	case http.StatusNotFound:
		writeError(w, status, fmt.Sprintf("The model `%s` does not exist on this simulated server.", req.Model), "invalid_request_error")
		return
	case http.StatusServiceUnavailable:
		s.failed.Add(1)
		writeError(w, status, "simulated overload", "server_error")
		return
	}
	if s.cfg.Latency > 0 {
		t := time.NewTimer(s.cfg.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	answer := Answer(req.Model, req.Messages, s.cfg.WrongRate)
	if req.Temperature != nil && *req.Temperature > 0 && req.Seed == nil || req.N > 1 {
		s.serveSampledChat(w, req.Model, digest, answer, req.N, req.Stream)
		return
	}
	if req.Stream {
		s.streamChat(w, req.Model, digest, []string{answer})
		return
	}
	completion := len(strings.Fields(answer))
	writeJSON(w, http.StatusOK, map[string]any{
		"id":      "chatcmpl-sim-" + strings.TrimPrefix(digest, "sha256:")[:24],
		"object":  "chat.completion",
		"created": 0,
		"model":   req.Model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       Message{Role: "assistant", Content: answer},
			"finish_reason": "stop",
		}},
		"usage": map[string]int{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
	})
}

func (s *Server) fail() bool {
	if s.cfg.FailRate <= 0 {
		return false
	}
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Float64() < s.cfg.FailRate
}

func (s *Server) log(e LogEntry) {
	if s.cfg.RequestLog == nil {
		return
	}
	line, _ := json.Marshal(e)
	line = append(line, '\n')
	s.logMu.Lock()
	defer s.logMu.Unlock()
	_, _ = s.cfg.RequestLog.Write(line) // one write per line: appenders never interleave
}

// MessagesDigest identifies a conversation: "sha256:" and the hex sha256 of
// the messages' JSON ([{"role":...,"content":...},...]).
func MessagesDigest(messages []Message) string {
	if messages == nil {
		messages = []Message{}
	}
	b, _ := json.Marshal(messages)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

var promptWrongRate = regexp.MustCompile(`\[simulated wrong rate ([0-9.]+)\]`)

var arithmetic = regexp.MustCompile(`(-?\d+)\s*([-+*x×])\s*(-?\d+)`)

// Answer is the simulated model's reply to messages: deterministic in (model,
// messages). The last user message's first "A op B" (op one of + - * x) is
// answered with the number, wrong for a share wrongRate of (model, messages).
// A system message holding "[simulated wrong rate R]" (R between 0 and 1)
// sets the share for that request: it stands in for a prompt's quality, so
// that a simulated optimizer has something to find.
func Answer(model string, messages []Message, wrongRate float64) string {
	for _, m := range messages {
		if m.Role != "system" {
			continue
		}
		if r := promptWrongRate.FindStringSubmatch(m.Content); r != nil {
			if v, err := strconv.ParseFloat(r[1], 64); err == nil && v >= 0 && v <= 1 {
				wrongRate = v
			}
		}
	}
	h := sha256.New()
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write([]byte(MessagesDigest(messages)))
	sum := h.Sum(nil)
	var question string
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role == "user" {
			question = messages[i].Content
			break
		}
	}
	if r, ok := reflect(question, sum); ok {
		return r
	}
	m := arithmetic.FindStringSubmatch(question)
	if m == nil {
		return "simulated answer " + hex.EncodeToString(sum[:6])
	}
	a, errA := strconv.ParseInt(m[1], 10, 64)
	b, errB := strconv.ParseInt(m[3], 10, 64)
	if errA != nil || errB != nil {
		return "simulated answer " + hex.EncodeToString(sum[:6])
	}
	var v int64
	switch m[2] {
	case "+":
		v = a + b
	case "-":
		v = a - b
	default:
		v = a * b
	}
	u := float64(binary.BigEndian.Uint64(sum[:8])>>11) / (1 << 53)
	if u < wrongRate {
		v += 1 + int64(sum[8]%9)
	}
	return strconv.FormatInt(v, 10)
}

// fenced is the first block between ``` fences (a language tag after
// the opening fence is dropped).
var fenced = regexp.MustCompile("(?s)```[^\n]*\n(.*?)\n?```")

// reflect answers a reflection request, as an optimizer method sends the
// reflection model: a user message that quotes a prompt between ```
// fences and asks for a new instruction (GEPA's reflection template, and
// any like it). The answer is the quoted prompt, fenced, with its
// "[simulated wrong rate R]" tag set to a rate drawn from the request's
// digest, between 0 and 0.5 (the tag added when the prompt has none): a
// proposal the simulated task model obeys, better or worse than the
// prompt it came from, so that a real search has something to find.
func reflect(question string, sum []byte) (string, bool) {
	if !strings.Contains(strings.ToLower(question), "new instruction") {
		return "", false
	}
	m := fenced.FindStringSubmatch(question)
	if m == nil {
		return "", false
	}
	u := float64(binary.BigEndian.Uint64(sum[8:16])>>11) / (1 << 53)
	tag := fmt.Sprintf("[simulated wrong rate %.2f]", 0.5*u)
	prompt := strings.TrimSpace(m[1])
	if promptWrongRate.MatchString(prompt) {
		prompt = promptWrongRate.ReplaceAllLiteralString(prompt, tag)
	} else {
		prompt += "\n" + tag
	}
	return "```\n" + prompt + "\n```", true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func writeError(w http.ResponseWriter, status int, msg, typ string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": status}})
}

// Running is a simulated server listening on a port.
type Running struct {
	*Server
	// URL is the base URL clients use, ending in /v1.
	URL string
	// Addr is the address it listens on (host:port).
	Addr     string
	srv      *http.Server
	done     chan struct{} // closed when Serve returns
	serveErr error
	conns    atomic.Int64 // connections accepted
}

// Connections is the number of connections the server has accepted.
func (r *Running) Connections() int64 { return r.conns.Load() }

// Start listens on addr ("127.0.0.1:0" picks a free loopback port) and serves
// a simulated model until Close.
func Start(cfg Config, addr string) (*Running, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("simmodel: listen on %s: %w", addr, err)
	}
	s := New(cfg)
	run := &Running{
		Server: s,
		Addr:   ln.Addr().String(),
		URL:    "http://" + ln.Addr().String() + "/v1",
		srv:    &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second},
		done:   make(chan struct{}),
	}
	run.srv.ConnState = func(c net.Conn, st http.ConnState) {
		switch {
		case st == http.StateNew:
			run.conns.Add(1)
		case st == http.StateIdle && cfg.DropIdle:
			_ = c.Close()
		}
	}
	go func() {
		run.serveErr = run.srv.Serve(ln)
		close(run.done)
	}()
	return run, nil
}

// Close stops listening and ends the requests in progress. It may follow
// Shutdown.
func (r *Running) Close() error {
	err := r.srv.Close()
	<-r.done
	if !errors.Is(r.serveErr, http.ErrServerClosed) && err == nil {
		err = r.serveErr
	}
	return err
}

// Shutdown stops listening and waits for the requests in progress.
func (r *Running) Shutdown(ctx context.Context) error {
	err := r.srv.Shutdown(ctx)
	<-r.done
	return err
}

// ReadLog parses a request log.
func ReadLog(rd io.Reader) ([]LogEntry, error) {
	var out []LogEntry
	dec := json.NewDecoder(rd)
	for {
		var e LogEntry
		if err := dec.Decode(&e); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("simmodel: request log line %d: %w", len(out)+1, err)
		}
		out = append(out, e)
	}
}
