package modelcache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/stages/items"
)

// Config sets up a cache server.
type Config struct {
	// Endpoints are the real endpoints' base URLs (each ending in /v1),
	// used round robin.
	Endpoints []string
	// Store is the item store the answers are kept in; Claims its claims.
	Store *items.Store
	// Weights maps a model id to the digest of the weights an endpoint
	// serves under it (a serve stage's identity of the model): it enters
	// the key, so that other weights under the same name are other calls.
	// A model not in the map is keyed by its id alone.
	Weights map[string]string
	// Timeout bounds one forwarded request (0: 10 minutes). A request that
	// runs past it gets 504 and nothing is stored.
	Timeout time.Duration
	// OnStored is called with each forwarded call once it is durable (the
	// run journal's record of it); nil for none.
	OnStored func(path, model, key string)
	// Client forwards the requests (nil: a client of its own).
	Client *http.Client
}

// Counts are a cache's progress figures.
type Counts struct {
	FromStore   int64 `json:"from_store"`   // answered from the store
	Forwarded   int64 `json:"forwarded"`    // sent to an endpoint (cached kinds of request)
	InFlight    int64 `json:"in_flight"`    // forwarded and not answered yet
	Failed      int64 `json:"failed"`       // forwarded and failed: 5xx, timeout, endpoint down
	Refused     int64 `json:"refused"`      // malformed: answered 400 by cairn, never forwarded
	PassThrough int64 `json:"pass_through"` // tokenizer calls, models list: forwarded, not stored
}

// String is the progress line.
func (c Counts) String() string {
	return fmt.Sprintf("model cache: %d from store, %d forwarded, %d in flight, %d failed", c.FromStore, c.Forwarded, c.InFlight, c.Failed)
}

// Server is a running cache.
type Server struct {
	cfg    Config
	picker *items.Picker
	client *http.Client
	// URL is the base URL clients use (http://127.0.0.1:PORT/v1).
	URL string

	claimsMu sync.Mutex
	claims   *items.Claims

	occMu sync.Mutex
	occ   map[string]*occurrences // occurrences of sampling requests, by base key

	flightMu sync.Mutex
	flight   map[string]chan struct{} // calls being answered in this process

	memMu    sync.RWMutex
	mem      map[string]*Stored // answers read or stored by this process, up to memLimit bytes
	memBytes int

	fromStore, forwarded, inFlight, failed, refused, pass atomic.Int64

	srv  *http.Server
	done chan struct{}
}

// Stored is one stored answer.
type Stored struct {
	Format      string `json:"format"` // "cairn.model-call/1"
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Body        []byte `json:"body"` // exactly as the endpoint sent it (base64 in JSON)
	Path        string `json:"path"`
	Model       string `json:"model"`
	Stream      bool   `json:"stream,omitempty"`

	// The header values replay sends, made once.
	contentType, contentLength []string
}

// prepare makes the header values replay sends.
func (st *Stored) prepare() *Stored {
	if st.ContentType != "" {
		st.contentType = []string{st.ContentType}
	}
	if bodyAllowed(st.Status) {
		st.contentLength = []string{strconv.Itoa(len(st.Body))}
	}
	return st
}

// bodyAllowed says whether an answer with status may have a body.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// Start opens the claims and serves on a free loopback port until Close.
func Start(cfg Config) (*Server, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("model cache: no endpoint to forward to: give model_cache.endpoints")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	cl, err := items.OpenClaims(cfg.Store.Dir())
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("model cache: listen on loopback: %w", err)
	}
	s := &Server{
		cfg:    cfg,
		picker: items.NewPicker(cfg.Endpoints, 0),
		client: cfg.Client,
		URL:    "http://" + ln.Addr().String() + "/v1",
		claims: cl,
		occ:    map[string]*occurrences{},
		flight: map[string]chan struct{}{},
		mem:    map[string]*Stored{},
		done:   make(chan struct{}),
	}
	if s.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 256
		s.client = &http.Client{Transport: tr}
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		_ = s.srv.Serve(ln)
		close(s.done)
	}()
	return s, nil
}

// Close stops serving, ends the requests in progress and releases the
// claims.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	s.claimsMu.Lock()
	defer s.claimsMu.Unlock()
	return errors.Join(err, s.claims.Close())
}

// Counts returns the progress figures so far.
func (s *Server) Counts() Counts {
	return Counts{
		FromStore: s.fromStore.Load(), Forwarded: s.forwarded.Load(), InFlight: s.inFlight.Load(),
		Failed: s.failed.Load(), Refused: s.refused.Load(), PassThrough: s.pass.Load(),
	}
}

// passPaths are forwarded as they are and never stored: they describe the
// endpoint (its models, its tokenizer), not an answer.
var passPaths = map[string]bool{
	"/v1/models": true, "/tokenizer_info": true, "/tokenize": true, "/detokenize": true,
	"/v1/tokenizer_info": true, "/v1/tokenize": true, "/v1/detokenize": true,
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch path {
	case "/v1/chat/completions", "/v1/completions", "/v1/embeddings":
		if r.Method != http.MethodPost {
			writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s takes POST, not %s", path, r.Method))
			return
		}
		s.serveCall(w, r, path)
	default:
		if passPaths[path] {
			s.pass.Add(1)
			s.passThrough(w, r, path)
			return
		}
		writeError(w, http.StatusNotFound, fmt.Sprintf("cairn's model cache serves POST /v1/chat/completions, /v1/completions and /v1/embeddings (and passes GET /v1/models, /tokenizer_info, POST /tokenize, /detokenize through); there is no route %s %s", r.Method, r.URL.Path))
	}
}

// writeError answers with status and an error body in the OpenAI API's
// shape, its type saying what went wrong (errorType).
func writeError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": errorType(status), "code": status}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// errorType is an error body's type for status: the request's fault for
// a 4xx, the endpoint's for a 5xx (a timeout said as one).
func errorType(status int) string {
	switch {
	case status == http.StatusGatewayTimeout:
		return "timeout_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// endpointURL is the endpoint's URL for path: the /v1 paths under the
// base URL, the tokenizer's at the server's root (as vLLM serves them).
func endpointURL(base, path, query string) string {
	u := base + strings.TrimPrefix(path, "/v1")
	if !strings.HasPrefix(path, "/v1/") {
		u = strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/v1") + path
	}
	if query != "" {
		u += "?" + query
	}
	return u
}

func (s *Server) passThrough(w http.ResponseWriter, r *http.Request, path string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "cannot read the request body: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	ep := s.picker.Next()
	req, _ := http.NewRequestWithContext(ctx, r.Method, endpointURL(ep, path, r.URL.RawQuery), bytes.NewReader(body))
	copyHeaders(req.Header, r.Header)
	resp, err := s.client.Do(req)
	if err != nil {
		s.gatewayError(ctx, w, ep, "did not answer", err)
		return
	}
	defer resp.Body.Close()
	sent, err := relay(w, resp, false, nil)
	switch {
	case err != nil && !sent:
		s.gatewayError(ctx, w, ep, "cut its answer off", err)
	case err != nil:
		abortCut()
	}
}

// gatewayError answers a request whose forward to ep failed (what: how)
// with err before anything was sent to the client: 504 when it ran past
// the timeout, else 502, with a JSON error saying so. Nothing is stored.
func (s *Server) gatewayError(ctx context.Context, w http.ResponseWriter, ep, what string, err error) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		writeError(w, http.StatusGatewayTimeout, fmt.Sprintf("model cache: %s did not answer within %s (not stored)", ep, s.cfg.Timeout))
		return
	}
	writeError(w, http.StatusBadGateway, fmt.Sprintf("model cache: %s %s: %v (not stored)", ep, what, err))
}

// relay sends the client an endpoint's answer as it comes, each piece
// also into keep when not nil, and flushed at once when flush (a stream,
// event by event). The status is sent with the first piece, not before:
// an answer that breaks off before any byte of it can still be answered
// with an error status. It returns whether the status was sent, and the
// error that broke the answer off (nil when it came whole).
func relay(w http.ResponseWriter, resp *http.Response, flush bool, keep *bytes.Buffer) (sent bool, err error) {
	fl, _ := w.(http.Flusher)
	chunk := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(chunk)
		if rerr != nil && rerr != io.EOF {
			return sent, rerr
		}
		if !sent {
			if ct := resp.Header.Get("Content-Type"); ct != "" {
				w.Header().Set("Content-Type", ct)
			}
			w.WriteHeader(resp.StatusCode)
			sent = true
		}
		if n > 0 {
			if keep != nil {
				keep.Write(chunk[:n])
			}
			_, _ = w.Write(chunk[:n])
			if flush && fl != nil {
				fl.Flush()
			}
		}
		if rerr == io.EOF {
			return sent, nil
		}
	}
}

func copyHeaders(dst, src http.Header) {
	for _, h := range []string{"Content-Type", "Authorization", "Accept", "User-Agent"} {
		if v := src.Get(h); v != "" {
			dst.Set(h, v)
		}
	}
}

// readBody reads a request's body, up to limit bytes: at once into a buffer
// of its length when the request gives it.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if n := r.ContentLength; n >= 0 && n <= limit {
		b := make([]byte, n)
		_, err := io.ReadFull(r.Body, b)
		return b, err
	}
	return io.ReadAll(io.LimitReader(r.Body, limit))
}

func (s *Server) serveCall(w http.ResponseWriter, r *http.Request, path string) {
	body, err := readBody(r, 256<<20)
	if err != nil {
		writeError(w, http.StatusBadRequest, "cannot read the request body: "+err.Error())
		return
	}
	req, err := Parse(path, body)
	if err != nil {
		s.refused.Add(1)
		writeError(w, http.StatusBadRequest, "cairn's model cache refused the request (it was not forwarded): "+err.Error())
		return
	}
	weights := s.cfg.Weights[req.Model]
	occ := 0
	answered := false
	if req.Sampling {
		base := req.Key(weights, 0)
		occ = s.takeOccurrence(base)
		defer func() { s.endOccurrence(base, occ, answered) }()
	}
	answered = s.answer(w, r, req, req.Key(weights, occ), body)
}

// answer answers the call under key: from the store, or forwarded once
// claimed. It says whether key has a stored answer at the end.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, req *Request, key string, body []byte) bool {
	for {
		if st := s.lookup(key); st != nil {
			s.fromStore.Add(1)
			replay(w, st)
			return true
		}
		// One answer per key in this process: a second request for a key
		// being answered waits for the first.
		s.flightMu.Lock()
		if ch, ok := s.flight[key]; ok {
			s.flightMu.Unlock()
			select {
			case <-ch:
				continue
			case <-r.Context().Done():
				return false
			}
		}
		ch := make(chan struct{})
		s.flight[key] = ch
		s.flightMu.Unlock()
		done := func() {
			s.flightMu.Lock()
			delete(s.flight, key)
			s.flightMu.Unlock()
			close(ch)
		}
		claimed, err := s.claim(r.Context(), key)
		if err != nil {
			done()
			if r.Context().Err() == nil {
				writeError(w, http.StatusInternalServerError, "model cache: "+err.Error())
			}
			return false
		}
		if !claimed { // stored by another process meanwhile
			done()
			continue
		}
		stored, cut := s.forward(w, r, req, key, body)
		s.release(key)
		done()
		if cut {
			abortCut()
		}
		return stored
	}
}

// occurrences are the occurrences of one sampling request in this
// process's life: 1..top were handed out; those in free were given back
// (their forward failed: nothing stored), the others are answered or in
// flight.
type occurrences struct {
	top  int
	free []int
}

// takeOccurrence hands out the occurrence of a sampling request: the
// lowest given back, else the next. So a retry of a request whose forward
// failed (5xx, 429, a timeout) gets the occurrence the failed one had, and
// the k-th answer stored is the k-th a replay gets.
func (s *Server) takeOccurrence(base string) int {
	s.occMu.Lock()
	defer s.occMu.Unlock()
	o := s.occ[base]
	if o == nil {
		o = &occurrences{}
		s.occ[base] = o
	}
	if len(o.free) == 0 {
		o.top++
		return o.top
	}
	i := 0
	for j, k := range o.free {
		if k < o.free[i] {
			i = j
		}
	}
	k := o.free[i]
	o.free = append(o.free[:i], o.free[i+1:]...)
	return k
}

// endOccurrence ends a request's hold of occurrence k: kept when it has a
// stored answer, given back when not.
func (s *Server) endOccurrence(base string, k int, answered bool) {
	if answered {
		return
	}
	s.occMu.Lock()
	defer s.occMu.Unlock()
	o := s.occ[base]
	o.free = append(o.free, k)
}

// lookup returns key's stored answer, nil when there is none.
func (s *Server) lookup(key string) *Stored {
	s.memMu.RLock()
	st := s.mem[key]
	s.memMu.RUnlock()
	if st != nil {
		return st
	}
	res, ok, err := s.cfg.Store.Get(key)
	if err != nil || !ok {
		return nil
	}
	var v Stored
	if json.Unmarshal(res.Outputs, &v) != nil || v.Format != storedFormat {
		return nil
	}
	v.prepare()
	s.remember(key, &v)
	return &v
}

// memLimit bounds the answers a server keeps in memory; past it, answers
// are read from the store each time.
const memLimit = 256 << 20

func (s *Server) remember(key string, st *Stored) {
	s.memMu.Lock()
	defer s.memMu.Unlock()
	if s.memBytes+len(st.Body) > memLimit {
		return
	}
	s.memBytes += len(st.Body)
	s.mem[key] = st
}

const storedFormat = "cairn.model-call/1"

// claim takes key's claim, waiting while another process holds it. It
// returns false when key got an answer meanwhile (then no claim is held).
func (s *Server) claim(ctx context.Context, key string) (bool, error) {
	wait := time.Millisecond
	for {
		s.claimsMu.Lock()
		ok, err := s.claims.TryClaim(key)
		s.claimsMu.Unlock()
		if err != nil {
			return false, err
		}
		if err := s.cfg.Store.Refresh(); err != nil {
			if ok {
				s.release(key)
			}
			return false, err
		}
		if s.cfg.Store.Has(key) {
			if ok {
				s.release(key)
			}
			return false, nil
		}
		if ok {
			return true, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

func (s *Server) release(key string) {
	s.claimsMu.Lock()
	_ = s.claims.Release(key)
	s.claimsMu.Unlock()
}

// storable says whether an answer with status is kept: 2xx always; 400
// and 422 (the endpoint refused this request for what it is: a prompt over
// the context length, a bad parameter) too, as asking again gets the same
// answer; no other status (401, 403, 404, 408, 409, 429 depend on the
// endpoint's state and settings, 5xx on its health).
func storable(status int) bool {
	return status >= 200 && status < 300 || status == http.StatusBadRequest || status == http.StatusUnprocessableEntity
}

// whole reports whether a 2xx answer that ended cleanly is all there is
// of it: a stream that ends with its "data: [DONE]" event (as the OpenAI
// API ends one; an endpoint that closed it before, with the chunked end
// or at a clean close, sent part of an answer), and a JSON answer that is
// one JSON value. What is not whole is passed on as it came, and not
// stored: asked again, the endpoint may answer whole.
func whole(resp *http.Response, body []byte) bool {
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return true
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "text/event-stream"):
		return sseDone(body)
	case strings.HasPrefix(ct, "application/json"):
		return json.Valid(body)
	}
	return true
}

// sseDone reports whether an event stream's last event is "data: [DONE]".
func sseDone(body []byte) bool {
	rest := bytes.TrimRight(body, " \t\r\n")
	i := bytes.LastIndexByte(rest, '\n')
	last := bytes.TrimSpace(rest[i+1:])
	return bytes.Equal(last, []byte("data: [DONE]")) || bytes.Equal(last, []byte("data:[DONE]"))
}

// abortCut ends the client's connection in the middle of an answer the
// endpoint broke off (it closed the connection, or ran past the timeout)
// after part of it was sent: net/http then sends neither the rest of a
// Content-Length nor the end of a chunked body, so the client's read
// fails as it would have from the endpoint, and it retries, instead of
// taking the part for a whole answer.
func abortCut() {
	panic(http.ErrAbortHandler)
}

// forward sends the call to the next endpoint, copies the answer to the
// client as it comes (a stream event by event), then stores it whole when
// storable; key's claim is held throughout. It says whether it stored it,
// and whether the answer broke off after part of it was sent to the
// client (cut: the caller aborts the connection once it let go of key).
func (s *Server) forward(w http.ResponseWriter, r *http.Request, req *Request, key string, body []byte) (stored, cut bool) {
	s.forwarded.Add(1)
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	ep, release, _ := s.picker.Acquire(ctx)
	defer release()
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpointURL(ep, req.Path, ""), bytes.NewReader(body))
	copyHeaders(hreq.Header, r.Header)
	resp, err := s.client.Do(hreq)
	if err != nil {
		s.failed.Add(1)
		s.gatewayError(ctx, w, ep, "did not answer", err)
		return false, false
	}
	defer resp.Body.Close()
	if resp.StatusCode < 500 {
		items.EndpointAnswered(ep)
	}
	var buf bytes.Buffer
	sent, err := relay(w, resp, req.Stream, &buf)
	if err != nil { // cut off: keep none, and let the client see it
		s.failed.Add(1)
		if !sent {
			s.gatewayError(ctx, w, ep, "cut its answer off", err)
		}
		return false, sent
	}
	if !storable(resp.StatusCode) || !whole(resp, buf.Bytes()) {
		s.failed.Add(1)
		return false, false
	}
	st := &Stored{Format: storedFormat, Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: buf.Bytes(), Path: req.Path, Model: req.Model, Stream: req.Stream}
	st.prepare()
	out, _ := json.Marshal(st)
	if err := s.cfg.Store.Put(key, items.Result{Outputs: out}); err != nil {
		s.failed.Add(1)
		return false, false
	}
	s.remember(key, st)
	if s.cfg.OnStored != nil {
		s.cfg.OnStored(req.Path, req.Model, key)
	}
	return true, false
}

var hitHeader = []string{"hit"}

// replay sends a stored answer whole, with its length (no chunking): the
// header values are shared by every replay of st, and net/http only reads
// them.
func replay(w http.ResponseWriter, st *Stored) {
	h := w.Header()
	if st.contentType != nil {
		h["Content-Type"] = st.contentType
	}
	if st.contentLength != nil {
		h["Content-Length"] = st.contentLength
	}
	h["X-Cairn-Model-Cache"] = hitHeader
	w.WriteHeader(st.Status)
	_, _ = w.Write(st.Body)
}
