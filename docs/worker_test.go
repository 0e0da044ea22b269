package docs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// completeWorker writes the complete worker of worker-protocol.md to a
// file and returns its path.
func completeWorker(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	doc, err := os.ReadFile("worker-protocol.md")
	require.NoError(t, err)
	sec := doc[bytes.Index(doc, []byte("## A complete worker")):]
	m := regexp.MustCompile("(?s)```python\n(.*?)```").FindSubmatch(sec)
	require.NotNil(t, m, "worker-protocol.md's complete worker is a python block")
	p := filepath.Join(t.TempDir(), "worker.py")
	require.NoError(t, os.WriteFile(p, m[1], 0o644))
	return p
}

// runWorker sends the requests to the worker on its stdin, closes it, and
// returns its answers by id once it exits. Its stdin is a pipe, as cairn
// gives it, or with fromFile a file (a run by hand: worker.py < requests).
func runWorker(t *testing.T, worker string, inFlight int, reqs []map[string]any, fromFile bool) map[string]map[string]any {
	t.Helper()
	var in bytes.Buffer
	for _, r := range reqs {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		in.Write(append(b, '\n'))
	}
	// A worker that waits for a reply it has (the end of a connection
	// that stays open) is stopped, not waited for until the test's end.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", worker)
	cmd.Env = append(os.Environ(), fmt.Sprintf("CAIRN_MAX_IN_FLIGHT=%d", inFlight))
	cmd.Stdin = &in
	if fromFile {
		p := filepath.Join(t.TempDir(), "requests.jsonl")
		require.NoError(t, os.WriteFile(p, in.Bytes(), 0o644))
		f, err := os.Open(p)
		require.NoError(t, err)
		defer f.Close()
		cmd.Stdin = f
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, ctx.Err(), "the worker did not end in 2 minutes; its answers:\n%s", out)
	require.NoError(t, err, "the worker exits 0 at the end of its input; stderr:\n%s", stderr.String())
	answers := map[string]map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var a map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &a), "one JSON answer a line: %s", sc.Text())
		id, _ := a["id"].(string)
		require.NotContains(t, answers, id, "item %s answered twice", id)
		answers[id] = a
	}
	require.Len(t, answers, len(reqs), "every request answered; output:\n%s", out)
	return answers
}

func request(id, endpoint, question string) map[string]any {
	return map[string]any{"id": id, "key": strings.Repeat("0", 64), "attempt": 1, "endpoint": endpoint, "model": "m",
		"runtime": map[string]any{}, "item": map[string]any{"id": id, "question": question, "answer": "42"}}
}

// The complete worker of worker-protocol.md does what the document says of
// it: it answers every request, tells the endpoint's failures (5xx, 429, a
// refused connection) from the item's (another 4xx: a scored failure) and
// from a reply it cannot read (an error, no score), reads the replies HTTP/1.1
// allows (a length, chunks, a body ended by the connection's end), opens a
// new connection when the server closed its kept-alive one, has at most
// CAIRN_MAX_IN_FLIGHT requests outstanding, and reads its requests from a
// pipe or a file.
func TestCompleteWorkerAsDocumented(t *testing.T) {
	worker := completeWorker(t)
	var mu sync.Mutex
	inFlight, most := 0, 0
	var reached time.Time // when four were first outstanding (mu)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/chat/completions" || json.Unmarshal(body, &req) != nil || len(req.Messages) != 1 {
			http.Error(w, "not a chat completion", http.StatusNotFound)
			return
		}
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		defer func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}()
		reply := func(content string) {
			b := fmt.Appendf(nil, `{"choices":[{"message":{"role":"assistant","content":%q}}]}`, content)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			w.Write(b)
		}
		switch q := req.Messages[0].Content; {
		case q == "busy":
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		case q == "throttled":
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case q == "long":
			http.Error(w, "This model's maximum context length is 8 tokens.", http.StatusBadRequest)
		case q == "garbled":
			w.Write([]byte("not json"))
		case q == "wrong":
			reply("41")
		case q == "chunked":
			// No length: the reply goes in chunks, in two of them.
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"choices":[{"message":`))
			w.(http.Flusher).Flush()
			w.Write([]byte(`{"role":"assistant","content":"42"}}]}`))
		case q == "closing":
			// The server says it closes the connection after this reply.
			w.Header().Set("Connection", "close")
			reply("42")
		case q == "until end":
			// An HTTP/1.0-style reply: neither a length nor chunks, the
			// body ends where the connection does.
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err == nil {
				buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" +
					`{"choices":[{"message":{"role":"assistant","content":"42"}}]}`)
				buf.Flush()
				conn.Close()
			}
		case q == "close":
			// Answered, then the connection is closed without a word,
			// as a server does to an idle kept-alive connection.
			w.Header().Set("Connection", "keep-alive")
			reply("42")
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		case strings.HasPrefix(q, "slow"):
			// The first requests are held until four have been
			// outstanding at once (or 5 s have passed: a worker that
			// keeps four in flight reaches four whatever the machine's
			// load), and 100 ms more, while a worker that does not
			// stop at four sends more; later ones are answered at once.
			for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(time.Millisecond) {
				mu.Lock()
				if most >= 4 && reached.IsZero() {
					reached = time.Now()
				}
				since := reached
				mu.Unlock()
				if !since.IsZero() {
					time.Sleep(time.Until(since.Add(100 * time.Millisecond)))
					break
				}
			}
			reply("42")
		default:
			reply("42")
		}
	}))
	defer srv.Close()
	ep := srv.URL + "/v1"
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr + "/v1"
	}()

	t.Run("answers", func(t *testing.T) {
		// One thread: the requests after "close" reuse its closed
		// connection first.
		a := runWorker(t, worker, 1, []map[string]any{
			request("ok", ep, "What is 40 + 2?"),
			request("close", ep, "close"),
			request("after-close", ep, "What is 6 * 7?"),
			request("chunked", ep, "chunked"),
			request("closing", ep, "closing"),
			request("until end", ep, "until end"),
			request("after until end", ep, "What is 6 * 7?"),
			request("wrong", ep, "wrong"),
			request("busy", ep, "busy"),
			request("throttled", ep, "throttled"),
			request("long", ep, "long"),
			request("garbled", ep, "garbled"),
			request("refused", refused, "What is 40 + 2?"),
		}, false)
		for _, id := range []string{"ok", "close", "after-close", "chunked", "closing", "until end", "after until end"} {
			assert.Equal(t, 1.0, a[id]["score"], "%s: %v", id, a[id])
			assert.Equal(t, 1.0, a[id]["charged"], id)
			assert.Equal(t, map[string]any{"answer": "42"}, a[id]["outputs"], id)
			assert.NotContains(t, a[id], "infra_failure", id)
		}
		assert.Equal(t, 0.0, a["wrong"]["score"])
		for _, id := range []string{"busy", "throttled", "refused"} {
			assert.Equal(t, true, a[id]["infra_failure"], "%s is the endpoint's failure", id)
			assert.NotContains(t, a[id], "score", id)
			assert.NotEmpty(t, a[id]["error"], id)
		}
		assert.Contains(t, a["busy"]["error"], "503")
		assert.Equal(t, 0.0, a["long"]["score"], "a 400 is the item's result")
		assert.Equal(t, 1.0, a["long"]["charged"])
		assert.Contains(t, a["long"]["error"], "maximum context length")
		assert.NotContains(t, a["long"], "infra_failure")
		assert.NotContains(t, a["garbled"], "score", "a reply it cannot read has no score")
		assert.NotContains(t, a["garbled"], "infra_failure")
		assert.Contains(t, a["garbled"]["error"], "JSONDecodeError")
	})

	t.Run("from a file", func(t *testing.T) {
		a := runWorker(t, worker, 2, []map[string]any{
			request("one", ep, "What is 40 + 2?"),
			request("two", ep, "wrong"),
			request("three", ep, "chunked"),
		}, true)
		assert.Equal(t, 1.0, a["one"]["score"])
		assert.Equal(t, 0.0, a["two"]["score"])
		assert.Equal(t, 1.0, a["three"]["score"])
	})

	t.Run("in flight", func(t *testing.T) {
		mu.Lock()
		most, reached = 0, time.Time{}
		mu.Unlock()
		var reqs []map[string]any
		for i := range 24 {
			reqs = append(reqs, request(fmt.Sprint("s", i), ep, fmt.Sprint("slow ", i)))
		}
		a := runWorker(t, worker, 4, reqs, false)
		for id, ans := range a {
			assert.Equal(t, 1.0, ans["score"], id)
		}
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, 4, most, "at most CAIRN_MAX_IN_FLIGHT requests outstanding, and that many when 24 wait")
	})
}
