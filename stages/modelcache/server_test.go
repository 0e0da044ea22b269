package modelcache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-run/cairn/sim/simmodel"
	"github.com/cairn-run/cairn/stages/items"
)

type env struct {
	t     *testing.T
	sim   *simmodel.Running
	cache string
}

func newEnv(t *testing.T, cfg simmodel.Config) *env {
	t.Helper()
	sim, err := simmodel.Start(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	return &env{t: t, sim: sim, cache: t.TempDir()}
}

// start opens a cache server on the env's store (a process of its own, as
// far as claims go).
func (e *env) start(weights map[string]string) *Server {
	e.t.Helper()
	st, err := items.OpenStore(e.cache, items.StoreOptions{NoSync: true})
	if err != nil {
		e.t.Fatal(err)
	}
	s, err := Start(Config{Endpoints: []string{e.sim.URL}, Store: st, Weights: weights})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { s.Close(); st.Close() })
	return s
}

func post(t *testing.T, url, body string) (int, string, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

func TestCacheReplaysEveryKindByteIdentical(t *testing.T) {
	e := newEnv(t, simmodel.Config{})
	reqs := map[string]string{
		"/chat/completions":        `{"model":"sim-model","messages":[{"role":"user","content":"What is 2 + 3?"}],"temperature":0}`,
		"/chat/completions#stream": `{"model":"sim-model","messages":[{"role":"user","content":"say something long"}],"temperature":0,"stream":true}`,
		"/completions":             `{"model":"sim-model","prompt":[[72,105,32,116,104,101,114,101]],"echo":true,"logprobs":1,"max_tokens":1,"temperature":0}`,
		"/completions#stream":      `{"model":"sim-model","prompt":"Once upon","max_tokens":8,"temperature":0,"stream":true}`,
		"/embeddings":              `{"model":"sim-model","input":["a","b"]}`,
	}
	first := map[string][]byte{}
	s := e.start(nil)
	for p, body := range reqs {
		path, _, _ := strings.Cut(p, "#")
		code, ct, b := post(t, s.URL+path, body)
		if code != 200 {
			t.Fatalf("%s: status %d: %s", p, code, b)
		}
		if strings.HasSuffix(p, "#stream") && !strings.HasPrefix(ct, "text/event-stream") || !strings.HasSuffix(p, "#stream") && ct != "application/json" {
			t.Errorf("%s: content type %q", p, ct)
		}
		first[p] = b
	}
	if c := s.Counts(); c.Forwarded != int64(len(reqs)) || c.FromStore != 0 {
		t.Fatalf("first pass counts %+v, want %d forwarded", c, len(reqs))
	}
	if !bytes.Contains(first["/completions"], []byte(`"token_logprobs":[null,`)) {
		t.Errorf("echo+logprobs answer lacks the prompt's logprobs: %s", first["/completions"])
	}
	if !bytes.HasSuffix(first["/chat/completions#stream"], []byte("data: [DONE]\n\n")) {
		t.Errorf("stream does not end in [DONE]: %q", first["/chat/completions#stream"])
	}
	// A new process on the same store (a resumed run): everything from the
	// store, byte for byte, none forwarded.
	before := e.sim.ChatRequests()
	s2 := e.start(nil)
	for p, body := range reqs {
		path, _, _ := strings.Cut(p, "#")
		_, _, b := post(t, s2.URL+path, body)
		if !bytes.Equal(b, first[p]) {
			t.Errorf("%s: replay differs:\n%s\nwant\n%s", p, b, first[p])
		}
	}
	if c := s2.Counts(); c.Forwarded != 0 || c.FromStore != int64(len(reqs)) {
		t.Errorf("replay counts %+v, want all %d from the store", c, len(reqs))
	}
	if got := e.sim.ChatRequests(); got != before {
		t.Errorf("the model got %d requests on replay", got-before)
	}
}

func TestCacheIgnoresFieldsThatDoNotChangeTheAnswer(t *testing.T) {
	e := newEnv(t, simmodel.Config{})
	s := e.start(nil)
	post(t, s.URL+"/chat/completions", `{"model":"sim-model","messages":[{"role":"user","content":"hi"}],"temperature":0,"user":"alice"}`)
	_, _, b := post(t, s.URL+"/chat/completions", `{ "user":"bob", "temperature":0, "messages":[{"content":"hi","role":"user"}],"model":"sim-model","metadata":{"x":"y"}}`)
	if c := s.Counts(); c.Forwarded != 1 || c.FromStore != 1 {
		t.Errorf("counts %+v: a request differing in user, metadata, key order and spacing must be a hit: %s", c, b)
	}
	post(t, s.URL+"/chat/completions", `{"model":"sim-model","messages":[{"role":"user","content":"hi"}],"temperature":0,"max_tokens":5}`)
	if c := s.Counts(); c.Forwarded != 2 {
		t.Errorf("counts %+v: max_tokens changes the answer and must be forwarded", c)
	}
}

func TestCacheWeightsEnterTheKey(t *testing.T) {
	e := newEnv(t, simmodel.Config{})
	body := `{"model":"sim-model","messages":[{"role":"user","content":"hi"}],"temperature":0}`
	post(t, e.start(map[string]string{"sim-model": "sha256:aaaa"}).URL+"/chat/completions", body)
	s := e.start(map[string]string{"sim-model": "sha256:bbbb"})
	post(t, s.URL+"/chat/completions", body)
	if c := s.Counts(); c.Forwarded != 1 {
		t.Errorf("other weights under the same model id were answered from the store: %+v", c)
	}
	s3 := e.start(map[string]string{"sim-model": "sha256:aaaa"})
	post(t, s3.URL+"/chat/completions", body)
	if c := s3.Counts(); c.FromStore != 1 {
		t.Errorf("the same weights were forwarded again: %+v", c)
	}
}

func chatContent(t *testing.T, b []byte) string {
	t.Helper()
	var v struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &v); err != nil || len(v.Choices) == 0 {
		t.Fatalf("not a chat completion: %s", b)
	}
	return v.Choices[0].Message.Content
}

func TestCacheSamplingKeepsOccurrences(t *testing.T) {
	e := newEnv(t, simmodel.Config{})
	body := `{"model":"sim-model","messages":[{"role":"user","content":"tell a story"}],"temperature":1}`
	s := e.start(nil)
	var first []string
	seen := map[string]bool{}
	for range 5 {
		_, _, b := post(t, s.URL+"/chat/completions", body)
		a := chatContent(t, b)
		first = append(first, a)
		seen[a] = true
	}
	if len(seen) != 5 || s.Counts().Forwarded != 5 {
		t.Fatalf("5 samples at temperature 1 gave %d distinct answers, %d forwarded: %q", len(seen), s.Counts().Forwarded, first)
	}
	// The next run: the k-th request gets the k-th stored answer.
	s2 := e.start(nil)
	for k := range 5 {
		_, _, b := post(t, s2.URL+"/chat/completions", body)
		if a := chatContent(t, b); a != first[k] {
			t.Errorf("sample %d replayed as %q, want %q", k+1, a, first[k])
		}
	}
	if c := s2.Counts(); c.Forwarded != 0 {
		t.Errorf("replay forwarded %d", c.Forwarded)
	}
	// A sixth asks the model.
	post(t, s2.URL+"/chat/completions", body)
	if c := s2.Counts(); c.Forwarded != 1 {
		t.Errorf("a 6th sample was not forwarded: %+v", c)
	}
	// With a seed, identical requests are one request.
	seeded := `{"model":"sim-model","messages":[{"role":"user","content":"tell a story"}],"temperature":1,"seed":7}`
	post(t, s2.URL+"/chat/completions", seeded)
	post(t, s2.URL+"/chat/completions", seeded)
	if c := s2.Counts(); c.Forwarded != 2 {
		t.Errorf("a seeded request was forwarded twice: %+v", c)
	}
}

func TestCacheRefusesMalformedWithoutForwarding(t *testing.T) {
	e := newEnv(t, simmodel.Config{})
	s := e.start(nil)
	for body, want := range map[string]string{
		`{"model":"sim-model","messages":`:                        "not a JSON object",
		`{"messages":[]}`:                                         `no "model"`,
		`{"model":"sim-model"}`:                                   `no "messages"`,
		`{"model":"sim-model","messages":"hi"}`:                   `"messages" that is not a list`,
		`{"model":"sim-model","messages":[],"temperature":"hot"}`: `"temperature" that is not a number`,
	} {
		code, _, raw := post(t, s.URL+"/chat/completions", body)
		var v struct{ Error struct{ Message string } }
		_ = json.Unmarshal(raw, &v)
		b := v.Error.Message
		if code != 400 || !strings.Contains(b, want) || !strings.Contains(b, "not forwarded") {
			t.Errorf("%s: got %d %s, want 400 saying %q", body, code, b, want)
		}
	}
	if e.sim.ChatRequests() != 0 || s.Counts().Refused != 5 {
		t.Errorf("malformed requests reached the model (%d) or were not counted: %+v", e.sim.ChatRequests(), s.Counts())
	}
}

// TestCacheRefusesLoneSurrogates: requests that differ only in an escape
// of half a surrogate pair would share one key (a JSON reader reads each
// as U+FFFD) and so one answer: they are refused, never forwarded, as a
// string that is not UTF-8 is; U+FFFD itself is text.
func TestCacheRefusesLoneSurrogates(t *testing.T) {
	e := newEnv(t, simmodel.Config{})
	s := e.start(nil)
	ask := func(content string) (int, string) {
		code, _, raw := post(t, s.URL+"/chat/completions", `{"model":"sim-model","messages":[{"role":"user","content":"`+content+`"}],"temperature":0}`)
		var v struct{ Error struct{ Message string } }
		_ = json.Unmarshal(raw, &v)
		return code, v.Error.Message
	}
	for _, c := range []string{`sur\ud800`, `sur\udbff`} {
		if code, msg := ask(c); code != 400 || !strings.Contains(msg, "half a UTF-16 surrogate pair") || !strings.Contains(msg, "not forwarded") {
			t.Errorf("%s: got %d %q, want 400 naming the escape", c, code, msg)
		}
	}
	if code, msg := ask(`sur\ufffd`); code != 200 {
		t.Errorf(`sur\ufffd: got %d %q, want the model's answer`, code, msg)
	}
	if c := s.Counts(); c.Refused != 2 || c.Forwarded != 1 || e.sim.ChatRequests() != 1 {
		t.Errorf("counts %+v, %d requests reached the model: want 2 refused and 1 forwarded", c, e.sim.ChatRequests())
	}
}

func TestCacheDoesNotStoreServerErrors(t *testing.T) {
	e := newEnv(t, simmodel.Config{FailRate: 1})
	s := e.start(nil)
	body := `{"model":"sim-model","messages":[{"role":"user","content":"hi"}],"temperature":0}`
	for range 2 {
		if code, _, _ := post(t, s.URL+"/chat/completions", body); code != 503 {
			t.Fatalf("status %d, want the endpoint's 503", code)
		}
	}
	if c := s.Counts(); c.Forwarded != 2 || c.Failed != 2 || c.FromStore != 0 {
		t.Errorf("a 503 was stored: %+v", c)
	}
	// 4xx: a 404 (model not served) is not stored; a 400 from the model is.
	nf := `{"model":"nope","messages":[{"role":"user","content":"hi"}],"temperature":0}`
	post(t, s.URL+"/chat/completions", nf)
	post(t, s.URL+"/chat/completions", nf)
	if c := s.Counts(); c.Forwarded != 4 {
		t.Errorf("a 404 was stored: %+v", c)
	}
}

func TestCacheStoresBadRequestAnswers(t *testing.T) {
	e := newEnv(t, simmodel.Config{MaxModelLen: 2})
	s := e.start(nil)
	body := `{"model":"sim-model","messages":[{"role":"user","content":"one two three"}],"temperature":0}`
	c1, _, b1 := post(t, s.URL+"/chat/completions", body)
	c2, _, b2 := post(t, s.URL+"/chat/completions", body)
	if c1 != 400 || c2 != 400 || !bytes.Equal(b1, b2) || s.Counts().Forwarded != 1 {
		t.Errorf("the model's 400 (context too long) is not replayed: %d %d %+v", c1, c2, s.Counts())
	}
}

func TestCachePassesTokenizerThrough(t *testing.T) {
	e := newEnv(t, simmodel.Config{})
	s := e.start(nil)
	root := strings.TrimSuffix(s.URL, "/v1")
	code, _, b := post(t, root+"/tokenize", `{"model":"sim-model","prompt":"Hi"}`)
	if code != 200 || !strings.Contains(string(b), `"tokens":[72,105]`) {
		t.Errorf("tokenize: %d %s", code, b)
	}
	code, _, b = post(t, root+"/detokenize", `{"model":"sim-model","tokens":[72,105]}`)
	if code != 200 || !strings.Contains(string(b), `"prompt":"Hi"`) {
		t.Errorf("detokenize: %d %s", code, b)
	}
	resp, err := http.Get(root + "/tokenizer_info")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("tokenizer_info: %v %v", err, resp)
	}
	resp.Body.Close()
	if c := s.Counts(); c.PassThrough != 3 || c.Forwarded != 0 {
		t.Errorf("counts %+v", c)
	}
}

func TestCacheTwoProcessesForwardEachRequestOnce(t *testing.T) {
	e := newEnv(t, simmodel.Config{Latency: 20 * time.Millisecond})
	a, b := e.start(nil), e.start(nil)
	const distinct = 20
	var wg sync.WaitGroup
	for _, s := range []*Server{a, b, a, b} {
		for i := range distinct {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := fmt.Sprintf(`{"model":"sim-model","messages":[{"role":"user","content":"What is %d + 1?"}],"temperature":0}`, i)
				if code, _, out := post(t, s.URL+"/chat/completions", body); code != 200 {
					t.Errorf("status %d: %s", code, out)
				}
			}()
		}
	}
	wg.Wait()
	if got := e.sim.ChatRequests(); got != distinct {
		t.Errorf("the model got %d requests for %d distinct ones", got, distinct)
	}
	if f := a.Counts().Forwarded + b.Counts().Forwarded; f != distinct {
		t.Errorf("forwarded %d, want %d", f, distinct)
	}
}

// TestCacheHitAllocatesLittle: answering a stored request costs a handful
// of allocations (the body, its parse, the key), not one per JSON value
// decoded and re-encoded. Counted by the runtime, not timed.
func TestCacheHitAllocatesLittle(t *testing.T) {
	e := newEnv(t, simmodel.Config{})
	s := e.start(nil)
	body := benchBody(7)
	if code, _, b := post(t, s.URL+"/chat/completions", string(body)); code != 200 {
		t.Fatalf("status %d: %s", code, b)
	}
	allocs := testing.AllocsPerRun(200, func() {
		if st := hitRequest(s, body); st != 200 {
			t.Fatalf("status %d", st)
		}
	})
	// 10 of them are the test's own request (http.NewRequest, the
	// recorder's header).
	if allocs > 32 {
		t.Errorf("a hit took %.0f allocations, want at most 32", allocs)
	}
	if c := s.Counts(); c.Forwarded != 1 || c.FromStore < 200 {
		t.Errorf("the hits were not answered from the store: %+v", c)
	}
}

// TestCacheFailedSampleKeepsItsOccurrence: a sampling request whose forward
// failed (503) does not use up its occurrence, so the client's retry takes
// it, and a rerun of the finished harness gets the first run's answers, in
// order, all from the store.
func TestCacheFailedSampleKeepsItsOccurrence(t *testing.T) {
	e := newEnv(t, simmodel.Config{FailRate: 0.5, Seed: 7})
	body := `{"model":"sim-model","messages":[{"role":"user","content":"Write a haiku"}],"temperature":1}`
	// sample asks for n answers, retrying each 503 as OpenAI clients do.
	sample := func(s *Server, n int) []string {
		var answers []string
		for tries := 0; len(answers) < n; tries++ {
			if tries > 100 {
				t.Fatalf("no answer after %d tries", tries)
			}
			code, _, b := post(t, s.URL+"/chat/completions", body)
			if code == 503 {
				continue
			}
			if code != 200 {
				t.Fatalf("status %d: %s", code, b)
			}
			answers = append(answers, chatContent(t, b))
		}
		return answers
	}
	s := e.start(nil)
	first := sample(s, 5)
	if c := s.Counts(); c.Failed == 0 {
		t.Fatalf("no forward failed (counts %+v): the test shows nothing", c)
	}
	s2 := e.start(nil)
	again := sample(s2, 5)
	if strings.Join(again, "\n") != strings.Join(first, "\n") {
		t.Errorf("the rerun got other samples:\n%q\nwant the first run's\n%q", again, first)
	}
	if c := s2.Counts(); c.Forwarded != 0 || c.FromStore != 5 {
		t.Errorf("rerun counts %+v, want all 5 from the store and none forwarded", c)
	}
}

// cuttingUpstream is an endpoint that breaks its answers off, by the
// prompt's start: "body" declares 200 bytes and sends 27; "stream" sends two
// events of a chunked stream and not its end; "silent" sends its headers
// and no byte of the body; "hang" sends one event, "wait" only its
// headers, and then nothing until the test ends. Each then closes the
// connection.
func cuttingUpstream(t *testing.T) string {
	t.Helper()
	end := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		chunked := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
		event := "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
		chunk := fmt.Sprintf("%x\r\n%s\r\n", len(event), event)
		switch {
		case bytes.Contains(b, []byte("body:")):
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n"+`{"id":"x","choices":[{"mess`)
		case bytes.Contains(b, []byte("stream:")):
			io.WriteString(conn, chunked+chunk+chunk)
		case bytes.Contains(b, []byte("silent:")):
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n")
		case bytes.Contains(b, []byte("hang:")):
			io.WriteString(conn, chunked+chunk)
			<-end
		case bytes.Contains(b, []byte("wait:")):
			io.WriteString(conn, chunked)
			<-end
		case bytes.Contains(b, []byte("nodone:")):
			// Ended cleanly (the chunked end), without "data: [DONE]".
			io.WriteString(conn, chunked+chunk+"0\r\n\r\n")
		case bytes.Contains(b, []byte("badjson:")):
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n"+`{"id":"x"`+"\n")
		}
	}))
	t.Cleanup(func() { close(end); up.Close() })
	return up.URL + "/v1"
}

// TestCacheLetsTheClientSeeACutAnswer: an answer the endpoint breaks off
// after cairn sent part of it reaches the client broken (its read fails,
// as it would from the endpoint), never as a shorter answer that looks
// whole; one broken off before any byte, or past the timeout before any,
// gets 502 or 504 with a JSON error that says it is the endpoint's
// fault (server_error, timeout_error). None is stored. A tokenizer call
// passed through is cut as the endpoint cut it too. An answer that ended
// cleanly but is not whole (a stream without [DONE], JSON that does not
// parse) is passed on, and not stored.
func TestCacheLetsTheClientSeeACutAnswer(t *testing.T) {
	st, err := items.OpenStore(t.TempDir(), items.StoreOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := Start(Config{Endpoints: []string{cuttingUpstream(t)}, Store: st, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ask := func(prompt string, stream bool) (*http.Response, []byte, error) {
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"%s: say a lot"}],"temperature":0,"stream":%t}`, prompt, stream)
		resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	for _, c := range []struct {
		prompt string
		stream bool
	}{{"body", false}, {"stream", true}, {"hang", true}} {
		for try := range 2 {
			resp, b, err := ask(c.prompt, c.stream)
			if err == nil {
				t.Errorf("%s (try %d): the client read a whole answer %d %q; want its read to fail", c.prompt, try+1, resp.StatusCode, b)
			}
		}
	}
	for prompt, want := range map[string]struct {
		status int
		typ    string
	}{"silent": {502, "server_error"}, "wait": {504, "timeout_error"}} {
		resp, b, err := ask(prompt, false)
		var v struct {
			Error struct{ Message, Type string }
		}
		if err != nil || resp.StatusCode != want.status || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &v) != nil || !strings.HasPrefix(v.Error.Message, "model cache: ") || v.Error.Type != want.typ {
			t.Errorf("%s: got %v %v %s, want %d with a JSON error of type %s", prompt, resp, err, b, want.status, want.typ)
		}
	}
	// Passed through, the same.
	resp, err := http.Post(strings.TrimSuffix(s.URL, "/v1")+"/tokenize", "application/json", strings.NewReader(`{"model":"m","prompt":"body: x"}`))
	if err == nil {
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr == nil {
			t.Errorf("tokenize: the client read a whole answer %d %q; want its read to fail", resp.StatusCode, b)
		}
	}
	if c := s.Counts(); c.Forwarded != 8 || c.Failed != 8 || c.FromStore != 0 {
		t.Errorf("counts %+v: every cut answer must be forwarded again, none stored", c)
	}
	// Ended cleanly but not whole: a stream without its "data: [DONE]",
	// a JSON answer that is no JSON value. The client gets what the
	// endpoint sent; nothing is stored, and the next ask is forwarded.
	for _, c := range []struct {
		prompt string
		stream bool
	}{{"nodone", true}, {"badjson", false}} {
		for try := range 2 {
			if _, _, err := ask(c.prompt, c.stream); err != nil {
				t.Errorf("%s (try %d): %v; want what the endpoint sent", c.prompt, try+1, err)
			}
		}
	}
	if c := s.Counts(); c.Forwarded != 12 || c.FromStore != 0 {
		t.Errorf("counts %+v: an answer that is not whole must not be stored", c)
	}
}
