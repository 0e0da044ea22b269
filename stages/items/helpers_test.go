package items

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-run/cairn/sim/simmodel"
)

// The test binary doubles as the workers and evaluators the tests start:
// CAIRN_ITEMS_HELPER names the part it plays.
//
//	noop      answers every request at once with score 1 (overhead benchmark);
//	          HELPER_EXIT_GATE=FILE waits, at the end of its input, until FILE
//	          exists before it exits
//	chat      asks the request's endpoint, like testdata/workers/chat_worker.py;
//	          HELPER_CRASH_EVERY=N exits after reading its Nth request,
//	          HELPER_HANG_EVERY=N stops reading and writing at its Nth request,
//	          HELPER_GARBAGE=1 writes malformed lines and duplicate answers,
//	          HELPER_SILENT_EVERY=N never answers its Nth request,
//	          HELPER_LONG_LINE=N writes an N-byte line before each answer,
//	          HELPER_INFRA_ID=ID reports an infrastructure failure for item ID,
//	          HELPER_GATE=FILE answers nothing until FILE exists
//	evaluate  runs Evaluate with the evalSpec in CAIRN_ITEMS_EVAL (a JSON file)
//	claim     claims the key in HELPER_KEY on the store in HELPER_DIR, says
//	          "claimed" and sleeps
const helperEnv = "CAIRN_ITEMS_HELPER"

func TestMain(m *testing.M) {
	switch mode := os.Getenv(helperEnv); mode {
	case "":
		os.Exit(m.Run())
	case "noop":
		noopWorker(os.Stdin, os.Stdout)
	case "chat":
		chatWorker()
	case "evaluate":
		os.Exit(evaluateChild())
	case "claim":
		claimChild()
	default:
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", mode)
		os.Exit(2)
	}
	os.Exit(0)
}

// noopWorker answers each request with score 1, flushing whenever its input
// has nothing more buffered.
func noopWorker(in io.Reader, out io.Writer) {
	br := bufio.NewReaderSize(in, 1<<20)
	bw := bufio.NewWriterSize(out, 1<<20)
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			req.ID = nil
			if json.Unmarshal(line, &req) == nil {
				bw.WriteString(`{"id":`)
				bw.Write(req.ID)
				bw.WriteString(`,"score":1}` + "\n")
			}
		}
		if err != nil {
			bw.Flush()
			if gate := os.Getenv("HELPER_EXIT_GATE"); gate != "" {
				for {
					if _, err := os.Stat(gate); err == nil {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			return
		}
		if br.Buffered() == 0 {
			bw.Flush()
		}
	}
}

// testItem is the shape of the items the tests evaluate.
type testItem struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// makeItems returns n arithmetic items with distinct questions.
func makeItems(n int) []Item {
	out := make([]Item, n)
	for i := range n {
		a, b := i, 1000+7*i
		data, _ := json.Marshal(testItem{Question: fmt.Sprintf("What is %d + %d?", a, b), Answer: strconv.Itoa(a + b)})
		out[i] = Item{ID: fmt.Sprintf("q%05d", i), Data: data}
	}
	return out
}

// chatMessages is the conversation the chat workers (Go and Python) send
// for an item.
func chatMessages(systemPrompt string, it testItem) []simmodel.Message {
	var msgs []simmodel.Message
	if systemPrompt != "" {
		msgs = append(msgs, simmodel.Message{Role: "system", Content: systemPrompt})
	}
	return append(msgs, simmodel.Message{Role: "user", Content: it.Question})
}

// itemDigest is the request-log digest of an item's conversation.
func itemDigest(t testing.TB, systemPrompt string, it Item) string {
	var ti testItem
	if err := json.Unmarshal(it.Data, &ti); err != nil {
		t.Fatal(err)
	}
	return simmodel.MessagesDigest(chatMessages(systemPrompt, ti))
}

type chatRequest struct {
	ID       string   `json:"id"`
	Bundle   string   `json:"bundle"`
	Endpoint string   `json:"endpoint"`
	Model    string   `json:"model"`
	Item     testItem `json:"item"`
}

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

// chatWorker is the Go twin of testdata/workers/chat_worker.py, with the
// misbehaviours the tests ask for.
func chatWorker() {
	crashEvery := envInt("HELPER_CRASH_EVERY")
	hangEvery := envInt("HELPER_HANG_EVERY")
	silentEvery := envInt("HELPER_SILENT_EVERY")
	garbage := os.Getenv("HELPER_GARBAGE") == "1"
	system := os.Getenv("SYSTEM_PROMPT")
	ua := os.Getenv("WORKER_USER_AGENT")
	client := &http.Client{Timeout: time.Minute}

	var outMu sync.Mutex
	write := func(lines ...string) {
		outMu.Lock()
		defer outMu.Unlock()
		for _, l := range lines {
			os.Stdout.WriteString(l)
		}
	}
	infraID := os.Getenv("HELPER_INFRA_ID")
	gate := os.Getenv("HELPER_GATE")
	answer := func(req chatRequest) map[string]any {
		for gate != "" {
			if _, err := os.Stat(gate); err == nil {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		if infraID != "" && req.ID == infraID {
			return map[string]any{"id": req.ID, "infra_failure": true, "error": "HTTP 503 Service Unavailable"}
		}
		body, _ := json.Marshal(map[string]any{"model": req.Model, "messages": chatMessages(system, req.Item), "temperature": 0})
		hreq, err := http.NewRequest(http.MethodPost, strings.TrimRight(req.Endpoint, "/")+"/chat/completions", bytes.NewReader(body))
		if err != nil {
			return map[string]any{"id": req.ID, "infra_failure": true, "error": err.Error()}
		}
		hreq.Header.Set("Content-Type", "application/json")
		hreq.Header.Set("User-Agent", ua)
		resp, err := client.Do(hreq)
		if err != nil {
			return map[string]any{"id": req.ID, "infra_failure": true, "error": err.Error()}
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return map[string]any{"id": req.ID, "infra_failure": true, "error": "HTTP " + resp.Status}
		}
		var cc struct {
			Choices []struct {
				Message simmodel.Message `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&cc); err != nil || len(cc.Choices) == 0 {
			return map[string]any{"id": req.ID, "infra_failure": true, "error": fmt.Sprint("bad completion: ", err)}
		}
		got := cc.Choices[0].Message.Content
		score := 0.0
		if strings.TrimSpace(got) == req.Item.Answer {
			score = 1
		}
		outputs := map[string]string{"answer": got}
		if req.Bundle != "" {
			outputs["bundle"] = req.Bundle
		}
		return map[string]any{"id": req.ID, "score": score, "charged": 1, "outputs": outputs}
	}

	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var pending sync.WaitGroup
	n := 0
	for sc.Scan() {
		n++
		if crashEvery > 0 && n%crashEvery == 0 {
			write(`{"id":"half a li`)
			os.Exit(3)
		}
		if hangEvery > 0 && n%hangEvery == 0 {
			time.Sleep(time.Hour)
		}
		var req chatRequest
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "bad request:", err)
			continue
		}
		if long := envInt("HELPER_LONG_LINE"); long > 0 {
			write(strings.Repeat("x", long) + "\n")
		}
		if garbage {
			write("this is not JSON\n", "[1, 2, 3]\n", `{"id": 12, "score": 1}`+"\n",
				`{"score": 1}`+"\n", `{"id":"nobody","score":1,"charged":1}`+"\n", "\n")
		}
		if silentEvery > 0 && n%silentEvery == 0 {
			continue
		}
		if bad := os.Getenv("HELPER_BAD_REPLY"); bad != "" {
			id, _ := json.Marshal(req.ID)
			write(map[string]string{
				"nan":        `{"id":` + string(id) + `,"score":NaN}`,
				"string":     `{"id":` + string(id) + `,"score":"1"}`,
				"huge":       `{"score":1e400,"id":` + string(id) + `}`,
				"negcharged": `{"id":` + string(id) + `,"score":1,"charged":-5}`,
				"dup":        `{"id":` + string(id) + `,"score":0,"score":1}`,
				"dupcase":    `{"id":` + string(id) + `,"score":0,"Score":1}`,
				"dupescape":  `{"id":` + string(id) + `,"score":0,"\u0073core":1}`,
				"bigcharged": `{"id":` + string(id) + `,"score":1,"charged":9223372036854775807}`,
				"badutf8":    `{"id":` + string(id) + `,"score":1,"outputs":{"text":"caf` + "\xe9" + `"}}`,
				"badutf8err": `{"id":` + string(id) + `,"score":1,"error":"caf` + "\xe9" + `"}`,
				"tiny":       `{"id":` + string(id) + `,"score":1e-400}`,
				"long":       `{"id":` + string(id) + `,"score":1,"outputs":{"text":"` + strings.Repeat("x", envInt("HELPER_LONG_REPLY")) + `"}}`,
			}[bad] + "\n")
			continue
		}
		k := n
		pending.Go(func() {
			resp, _ := json.Marshal(answer(req))
			lines := []string{string(resp) + "\n"}
			if garbage && k%10 == 0 {
				lines = append(lines, string(resp)+"\n") // a duplicate answer
			}
			write(lines...)
		})
	}
	pending.Wait()
}

// evalSpec configures an evaluator child.
type evalSpec struct {
	CacheDir     string
	Items        []Item
	Endpoints    []string
	ModelID      string
	Bundle       string
	Worker       []string
	Env          []string
	Replicas     int
	MaxInFlight  int
	EndpointConc int
	ItemTimeout  time.Duration
}

func evaluateChild() int {
	raw, err := os.ReadFile(os.Getenv("CAIRN_ITEMS_EVAL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var spec evalSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	store, err := OpenStore(spec.CacheDir, StoreOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer store.Close()
	sum, err := Evaluate(context.Background(), Config{
		Worker:              spec.Worker,
		Env:                 spec.Env,
		Items:               spec.Items,
		BundleDigest:        spec.Bundle,
		ModelID:             spec.ModelID,
		WorkerDigest:        "test-worker",
		Replicas:            spec.Replicas,
		MaxInFlight:         spec.MaxInFlight,
		ItemTimeout:         spec.ItemTimeout,
		Endpoints:           spec.Endpoints,
		EndpointConcurrency: spec.EndpointConc,
		Store:               store,
		Progress:            os.Stderr,
		Log:                 os.Stderr,
	})
	sum.Items = nil
	out, _ := json.Marshal(sum)
	fmt.Println(string(out))
	if err != nil {
		fmt.Fprintln(os.Stderr, "evaluate:", err)
		return 1
	}
	return 0
}

func claimChild() {
	c, err := OpenClaims(os.Getenv("HELPER_DIR"))
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	ok, err := c.TryClaim(os.Getenv("HELPER_KEY"))
	if err != nil || !ok {
		fmt.Println("not claimed", err)
		os.Exit(2)
	}
	fmt.Println("claimed")
	time.Sleep(time.Hour)
}

// self is the argv that runs this test binary as a helper.
func self(t testing.TB) []string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe}
}

// helperEnvFor is an environment that makes the test binary play mode.
func helperEnvFor(mode string, extra ...string) []string {
	env := append(os.Environ(), helperEnv+"="+mode)
	return append(env, extra...)
}
