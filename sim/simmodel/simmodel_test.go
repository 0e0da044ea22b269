package simmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/syncbuf"
)

// lockedBuffer is a request log the server writes while the test reads.
type lockedBuffer struct{ syncbuf.Buffer }

func (l *lockedBuffer) entries(t *testing.T) []LogEntry {
	e, err := ReadLog(strings.NewReader(l.String()))
	require.NoError(t, err)
	return e
}

func chat(t *testing.T, url, model string, msgs []Message) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": model, "messages": msgs})
	req, err := http.NewRequest(http.MethodPost, url+"/chat/completions", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("User-Agent", "simmodel-test")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, string(raw)
	}
	var cc struct {
		Model   string `json:"model"`
		Choices []struct {
			Message Message `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal(raw, &cc))
	require.Len(t, cc.Choices, 1)
	assert.Equal(t, model, cc.Model)
	return resp.StatusCode, cc.Choices[0].Message.Content
}

func TestModelsAndChat(t *testing.T) {
	var log lockedBuffer
	srv, err := Start(Config{Models: []string{"qwen", "llama"}, WrongRate: 0.3, RequestLog: &log}, "")
	require.NoError(t, err)
	defer srv.Close()
	assert.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"))
	assert.True(t, strings.HasSuffix(srv.URL, "/v1"))

	resp, err := http.Get(srv.URL + "/models")
	require.NoError(t, err)
	var list struct {
		Data []struct {
			ID      string `json:"id"`
			OwnedBy string `json:"owned_by"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	resp.Body.Close()
	require.Len(t, list.Data, 2)
	assert.Equal(t, "qwen", list.Data[0].ID)
	assert.Equal(t, "cairn-simulated", list.Data[0].OwnedBy)

	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "What is 17 + 25?"}}
	status, answer := chat(t, srv.URL, "qwen", msgs)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, srv.Answer("qwen", msgs), answer)
	_, again := chat(t, srv.URL, "qwen", msgs)
	assert.Equal(t, answer, again, "deterministic")

	status, body := chat(t, srv.URL, "mistral", msgs)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, body, "mistral")

	entries := log.entries(t)
	require.Len(t, entries, 3)
	assert.Equal(t, MessagesDigest(msgs), entries[0].Messages)
	assert.Equal(t, "qwen", entries[0].Model)
	assert.Equal(t, 200, entries[0].Status)
	assert.Equal(t, "simmodel-test", entries[0].UserAgent)
	assert.Equal(t, 404, entries[2].Status)
	assert.Equal(t, 3, srv.ChatRequests())
}

func TestAnswer(t *testing.T) {
	q := func(s string) []Message { return []Message{{Role: "user", Content: s}} }
	assert.Equal(t, "42", Answer("m", q("What is 17 + 25?"), 0))
	assert.Equal(t, "-8", Answer("m", q("compute 2 - 10"), 0))
	assert.Equal(t, "63", Answer("m", q("7 x 9 = ?"), 0))
	assert.True(t, strings.HasPrefix(Answer("m", q("Who wrote Hamlet?"), 0), "simulated answer "))
	assert.NotEqual(t, "42", Answer("m", q("What is 17 + 25?"), 1), "always wrong at rate 1")

	// The share of wrong answers follows the rate, and changes with the
	// prompt and the model.
	wrong := map[string]int{}
	for i := range 2000 {
		for _, model := range []string{"a", "b"} {
			msgs := []Message{{Role: "system", Content: "prompt"}, {Role: "user", Content: "What is 1000 + " + string(rune('0'+i%10)) + "?" + strings.Repeat(" ", i/10)}}
			if Answer(model, msgs, 0.25) != Answer(model, msgs, 0) {
				wrong[model]++
			}
		}
	}
	for model, n := range wrong {
		assert.InDelta(t, 500, n, 100, "model %s", model)
	}
}

// A system prompt's "[simulated wrong rate R]" sets the share of wrong
// answers for its requests.
func TestPromptSetsTheWrongRate(t *testing.T) {
	count := func(system string) int {
		n := 0
		for i := range 1000 {
			msgs := []Message{{Role: "system", Content: system}, {Role: "user", Content: fmt.Sprintf("What is %d + 7?", i)}}
			if Answer("m", msgs, 0.25) != fmt.Sprint(i+7) {
				n++
			}
		}
		return n
	}
	assert.InDelta(t, 250, count("Answer with the number."), 60)
	assert.InDelta(t, 50, count("Answer with the number. [simulated wrong rate 0.05]"), 30)
	assert.InDelta(t, 600, count("[simulated wrong rate 0.6] Answer."), 60)
	assert.Equal(t, 0, count("[simulated wrong rate 0]"))
}

func TestFailRateIsSeeded(t *testing.T) {
	statuses := func(seed uint64) []int {
		srv, err := Start(Config{FailRate: 0.5, Seed: seed}, "")
		require.NoError(t, err)
		defer srv.Close()
		var out []int
		for range 40 {
			st, _ := chat(t, srv.URL, DefaultModel, []Message{{Role: "user", Content: "1 + 1"}})
			out = append(out, st)
		}
		assert.Equal(t, countOf(out, 503), srv.Failed())
		return out
	}
	a, b, c := statuses(1), statuses(1), statuses(2)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c)
	assert.Positive(t, countOf(a, 503))
	assert.Positive(t, countOf(a, 200))
}

func countOf(xs []int, v int) int {
	n := 0
	for _, x := range xs {
		if x == v {
			n++
		}
	}
	return n
}

// Close after Shutdown returns (tests shut a server down, then clean up).
func TestShutdownThenClose(t *testing.T) {
	srv, err := Start(Config{}, "")
	require.NoError(t, err)
	require.NoError(t, srv.Shutdown(context.Background()))
	require.NoError(t, srv.Close()) // before the fix, this waited forever
	_, err = http.Get(srv.URL + "/models")
	assert.Error(t, err, "no longer listening")
}

// As vLLM, the simulated server serves the OpenAI API under /v1 only: an
// endpoint without it fails at once, in tests as against a real server.
func TestServesOnlyUnderV1(t *testing.T) {
	srv, err := Start(Config{}, "")
	require.NoError(t, err)
	defer srv.Close()
	root := strings.TrimSuffix(srv.URL, "/v1")
	resp, err := http.Get(root + "/models")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, string(b), "served under /v1")
	status, body := chat(t, root, DefaultModel, []Message{{Role: "user", Content: "What is 1 + 2?"}})
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, body, "served under /v1")
	status, _ = chat(t, srv.URL, DefaultModel, []Message{{Role: "user", Content: "What is 1 + 2?"}})
	assert.Equal(t, http.StatusOK, status)
}

// A request over MaxModelLen gets vLLM's HTTP 400, not a 5xx.
func TestContextLengthIsABadRequest(t *testing.T) {
	srv, err := Start(Config{MaxModelLen: 5}, "")
	require.NoError(t, err)
	defer srv.Close()
	status, body := chat(t, srv.URL, DefaultModel, []Message{{Role: "user", Content: "What is 1 + 2? Answer with one number only."}})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, "maximum context length is 5 tokens")
	status, _ = chat(t, srv.URL, DefaultModel, []Message{{Role: "user", Content: "What is 1 + 2?"}})
	assert.Equal(t, http.StatusOK, status)
}

// A reflection request (a fenced prompt, a request for a new instruction,
// as GEPA's template sends it) gets the prompt back, fenced, with a new
// simulated wrong rate that the model then obeys; the examples' arithmetic
// in it is not answered.
func TestReflectionRequestProposesAPrompt(t *testing.T) {
	ask := func(prompt string) string {
		return Answer("reflect", []Message{{Role: "user", Content: "I provided an assistant with the following instructions:\n```\n" + prompt +
			"\n```\nExamples: What is 17 + 25? answered 41.\nYour task is to write a new instruction for the assistant.\nProvide the new instructions within ``` blocks."}}, 0)
	}
	got := ask("Answer with the number only.")
	m := regexp.MustCompile("^```\nAnswer with the number only.\n\\[simulated wrong rate (0\\.\\d\\d)\\]\n```$").FindStringSubmatch(got)
	require.NotNil(t, m, got)
	rate, _ := strconv.ParseFloat(m[1], 64)
	assert.LessOrEqual(t, rate, 0.5)
	assert.Equal(t, got, ask("Answer with the number only."), "deterministic")

	again := ask("Be exact. [simulated wrong rate 0.40]")
	assert.Regexp(t, "^```\nBe exact. \\[simulated wrong rate 0\\.\\d\\d\\]\n```$", again, "the tag is replaced, not added")

	// Not a reflection request: the arithmetic is answered.
	assert.Equal(t, "42", Answer("m", []Message{{Role: "user", Content: "```\nx\n```\nWhat is 17 + 25?"}}, 0))
}
