// Package evaluate_test proves the evaluate stage kind end to end: the real
// cairn binary, the Python chat worker of testdata/workers and a simulated
// task model served in-process on a loopback port. Request counts come from
// the simulated server's request log.
package evaluate_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/sim/simmodel"
	"github.com/cairn-run/cairn/stages/items"
	"github.com/cairn-run/cairn/syncbuf"
)

// cairnBin is the cairn binary built for these tests.
var cairnBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if _, err := exec.LookPath("python3"); err != nil {
		fmt.Println("skipping: the evaluate end-to-end tests need python3")
		return 0
	}
	if _, err := e2etest.GoTool(); err != nil {
		fmt.Println("skipping: no go toolchain on PATH to build cairn")
		return 0
	}
	return e2etest.Binaries{Packages: []string{"cmd/cairn"}}.Main(m, os.Stdout, func(dir string) {
		cairnBin = filepath.Join(dir, "cairn")
	})
}

const (
	model        = "sim-model"
	systemPrompt = "Answer with a number only."
)

// workspace is a folder with the chat worker, a seed bundle and a dataset.
type workspace struct {
	t     *testing.T
	dir   string
	cache string
	items []item
}

type item struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// digest is the simulated server's log digest of the item's request.
func (it item) digest() string {
	return simmodel.MessagesDigest([]simmodel.Message{
		{Role: "system", Content: systemPrompt},
		{Role: "user", Content: it.Question},
	})
}

func newWorkspace(t *testing.T, n int) *workspace {
	t.Helper()
	w := &workspace{t: t, dir: t.TempDir(), cache: t.TempDir()}
	worker, err := os.ReadFile("../../testdata/workers/chat_worker.py")
	require.NoError(t, err)
	w.write("workers/chat_worker.py", string(worker))
	w.write("bundles/seed/system.txt", systemPrompt)
	var b strings.Builder
	for i := range n {
		it := item{ID: fmt.Sprintf("q%05d", i), Question: fmt.Sprintf("What is %d + %d?", i, 7*i+3), Answer: fmt.Sprint(8*i + 3)}
		w.items = append(w.items, it)
		line, _ := json.Marshal(it)
		b.Write(line)
		b.WriteByte('\n')
	}
	w.write("data/items.jsonl", b.String())
	return w
}

func (w *workspace) write(rel, content string) {
	w.t.Helper()
	e2etest.WriteFile(w.t, w.dir, rel, content)
}

// stageSpec is one evaluate stage of a test pipeline.
type stageSpec struct {
	pipeline, stage string
	scores          string // also names the result file
	retryInfra      int
	replicas        int
}

// pipeline writes a pipeline file holding the seed-bundle evaluation of one
// "method" and returns its name.
func (w *workspace) pipeline(s stageSpec) string {
	if s.replicas == 0 {
		s.replicas = 1
	}
	src := fmt.Sprintf(`pipeline %q {
  description = "one optimizer method's seed-bundle evaluation"
}

variable "task_endpoints" {
  type    = list(string)
  default = []
}

stage "evaluate" %q {
  worker        = ["python3", "workers/chat_worker.py", "--system-prompt-file", "bundles/seed/system.txt"]
  items         = "data/items.jsonl"
  bundle        = ["bundles/seed/"]
  model         = %q
  runtime       = { topology = "single", framework = "plain", team_size = 1, temperature = 0, eval_seed = 0 }
  endpoints     = var.task_endpoints
  replicas      = %d
  max_in_flight = 8
  retry_infra   = %d
  scores        = %q
  result        = %q
}
`, s.pipeline, s.stage, model, s.replicas, s.retryInfra, s.scores, strings.TrimSuffix(s.scores, ".jsonl")+".result.json")
	name := s.pipeline + ".hcl"
	w.write(name, src)
	return name
}

// cairn returns a cairn apply command over the shared cache, with endpoints
// from --var (none: TASK_ENDPOINTS, VLLM_BASE_URL unset).
func (w *workspace) cairn(file string, endpoints ...string) *exec.Cmd {
	args := []string{"apply", file, "--cache", w.cache, "--no-color"}
	if len(endpoints) > 0 {
		q, _ := json.Marshal(endpoints)
		args = append(args, "--var", "task_endpoints="+string(q))
	}
	cmd := exec.Command(cairnBin, args...)
	cmd.Dir = w.dir
	cmd.Env = e2etest.Env("CAIRN_NO_FSYNC=1")
	return cmd
}

// apply runs cairn apply and returns its exit code and output.
func (w *workspace) apply(file string, endpoints ...string) (int, string) {
	w.t.Helper()
	return e2etest.Run(w.t, w.cairn(file, endpoints...))
}

// nodeResult is the evaluate node's result file.
type nodeResult struct {
	ItemCount    int     `json:"item_count"`
	MeanScore    float64 `json:"mean_score"`
	ScoresFile   string  `json:"scores_file"`
	ScoresDigest string  `json:"scores_digest"`
}

// runCounts are the counts of an evaluation's last progress line.
type runCounts struct {
	Charged, Attempted, InfraFailures, Done, Total, Evaluated, FromStore, Failed int
}

var progressLine = regexp.MustCompile(`charged (\d+), attempted (\d+), infra-failures (\d+); items (\d+)/(\d+): (\d+) evaluated, (\d+) from the store, (\d+) failed`)

// counts reads the last progress line of cairn's output.
func counts(t *testing.T, text string) runCounts {
	t.Helper()
	all := progressLine.FindAllStringSubmatch(text, -1)
	require.NotEmpty(t, all, "no progress line in:\n%s", text)
	m := all[len(all)-1]
	var v [8]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return runCounts{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]}
}

func (w *workspace) result(scores string) nodeResult {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, strings.TrimSuffix(scores, ".jsonl")+".result.json"))
	require.NoError(w.t, err)
	var r nodeResult
	require.NoError(w.t, json.Unmarshal(b, &r))
	return r
}

// scoreKeys reads a scores file: item id -> item key.
func (w *workspace) scoreKeys(scores string) map[string]string {
	w.t.Helper()
	f, err := os.Open(filepath.Join(w.dir, scores))
	require.NoError(w.t, err)
	defer f.Close()
	keys := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct{ ID, Key string }
		require.NoError(w.t, json.Unmarshal(sc.Bytes(), &l))
		keys[l.ID] = l.Key
	}
	require.NoError(w.t, sc.Err())
	return keys
}

// storedKeys lists the item keys with a result in the cache's item store.
func (w *workspace) storedKeys() map[string]bool {
	w.t.Helper()
	keys := map[string]bool{}
	err := items.ScanStore(w.cache, func(key string, _ items.Result) error {
		keys[key] = true
		return nil
	})
	if os.IsNotExist(err) {
		return keys
	}
	require.NoError(w.t, err)
	return keys
}

// workersAlive counts the chat worker processes of this workspace.
func (w *workspace) workersAlive() int {
	dir, err := filepath.EvalSymlinks(w.dir)
	require.NoError(w.t, err)
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if strings.Contains(string(stat), ") Z ") {
			continue // a zombie waiting for its reaper
		}
		if bytes.Contains(cmdline, []byte("chat_worker.py")) && bytes.Contains(cmdline, []byte("bundles/seed/system.txt")) {
			if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
				n++
			}
		}
	}
	return n
}

// server is a simulated task model with an in-memory request log.
type server struct {
	*simmodel.Running
	log *requestLog
}

type requestLog struct{ syncbuf.Buffer }

// entries returns the requests logged so far.
func (l *requestLog) entries(t *testing.T) []simmodel.LogEntry {
	t.Helper()
	es, err := simmodel.ReadLog(strings.NewReader(l.String()))
	require.NoError(t, err)
	return es
}

func startServer(t *testing.T, cfg simmodel.Config) *server {
	t.Helper()
	log := &requestLog{}
	cfg.RequestLog = log
	if len(cfg.Models) == 0 {
		cfg.Models = []string{model}
	}
	r, err := simmodel.Start(cfg, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return &server{Running: r, log: log}
}

// requested counts the requests of es per item id; requests for anything
// else fail the test.
func requested(t *testing.T, w *workspace, es []simmodel.LogEntry) map[string]int {
	t.Helper()
	byDigest := make(map[string]string, len(w.items))
	for _, it := range w.items {
		byDigest[it.digest()] = it.ID
	}
	counts := map[string]int{}
	for _, e := range es {
		id, ok := byDigest[e.Messages]
		require.True(t, ok, "a request for no item of the dataset: %+v", e)
		counts[id]++
	}
	return counts
}

// kill -9 of cairn during an evaluation of 2,000 items: the next apply
// sends exactly the items without a stored result, each once.
func TestKillDuringEvaluationResumesMissingItems(t *testing.T) {
	const n = 2000
	w := newWorkspace(t, n)
	srv := startServer(t, simmodel.Config{Latency: 5 * time.Millisecond, WrongRate: 0.25})
	spec := stageSpec{pipeline: "method_a", stage: "seed_eval", scores: "out/a/seed_scores.jsonl", replicas: 2}
	file := w.pipeline(spec)

	cmd := w.cairn(file, srv.URL)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Kill cairn once the evaluation is well under way.
	for srv.ChatRequests() < 300 {
		select {
		case err := <-exited:
			t.Fatalf("cairn ended before it was killed (%v):\n%s", err, out.String())
		case <-time.After(time.Millisecond):
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	err := <-exited
	require.Error(t, err)
	assert.Contains(t, err.Error(), "killed")
	// The workers die with cairn. Once none is left, shutting the server
	// down serves what they sent before dying: the log is then complete,
	// and the resume talks to a fresh server with a log of its own.
	for w.workersAlive() > 0 {
		time.Sleep(5 * time.Millisecond)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, srv.Shutdown(sctx))
	assert.Contains(t, out.String(), "; items 10/2000: 10 evaluated", "progress lines")
	first := srv.log.entries(t)
	srv = startServer(t, simmodel.Config{Latency: 5 * time.Millisecond, WrongRate: 0.25})
	stored := w.storedKeys()
	require.NotEmpty(t, stored, "the killed run stored some items")
	require.Less(t, len(stored), n, "the run was killed before it finished")
	t.Logf("killed after %d requests with %d items stored", len(first), len(stored))

	code, text := w.apply(file, srv.URL)
	require.Equal(t, 0, code, text)
	res := w.result(spec.scores)
	keys := w.scoreKeys(spec.scores)
	require.Len(t, keys, n)

	var missing []string
	for _, it := range w.items {
		if !stored[keys[it.ID]] {
			missing = append(missing, it.ID)
		}
	}
	resumed := requested(t, w, srv.log.entries(t))
	assert.Len(t, resumed, len(missing), "the resume sends exactly the missing items")
	for _, id := range missing {
		assert.Equal(t, 1, resumed[id], "item %s", id)
	}
	assert.Contains(t, text, "were running when an earlier apply stopped: stage.seed_eval", "the killed run left the node recorded in flight")

	// The resumed run journaled one charged record per item it evaluated.
	runs, err := runlog.List(w.cache)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	journaled := map[string]int{}
	for _, e := range runs[0].Entries {
		if e.T == runlog.Charged {
			assert.Equal(t, "stage.seed_eval", e.Node)
			assert.Equal(t, keys[e.Item], e.Key)
			journaled[e.Item]++
		}
	}
	assert.Equal(t, resumed, journaled)
	for _, e := range runs[1].Entries {
		if e.T == runlog.Charged {
			assert.True(t, stored[e.Key], "the killed run journaled only stored items")
		}
	}

	assert.Equal(t, n, res.ItemCount)
	c := counts(t, text)
	assert.Equal(t, len(missing), c.Evaluated)
	assert.Equal(t, len(stored), c.FromStore)
	assert.Equal(t, len(missing), c.Charged, "only the resumed items are charged")
	assert.Len(t, w.storedKeys(), n)
	assert.InDelta(t, 0.75, res.MeanScore, 0.05, "the simulated model answers about a quarter wrongly")

	// A third apply finds the node in the cache: nothing sent.
	before := srv.ChatRequests()
	code, text = w.apply(file, srv.URL)
	require.Equal(t, 0, code, text)
	assert.Equal(t, before, srv.ChatRequests())
}

// Method A then method B on the same cell and seed, with one shared cache:
// B's seed-bundle evaluation sends no request.
func TestSecondMethodReusesSeedBundleEvaluation(t *testing.T) {
	const n = 300
	w := newWorkspace(t, n)
	srv := startServer(t, simmodel.Config{WrongRate: 0.3})
	a := stageSpec{pipeline: "method_a", stage: "mapro_seed_eval", scores: "runs/mapro/seed_scores.jsonl"}
	b := stageSpec{pipeline: "method_b", stage: "gepa_seed_eval", scores: "runs/gepa/seed_scores.jsonl", replicas: 2}
	fileA, fileB := w.pipeline(a), w.pipeline(b)

	code, text := w.apply(fileA, srv.URL)
	require.Equal(t, 0, code, text)
	assert.Contains(t, text, "items 300/300: 300 evaluated, 0 from the store")
	require.Equal(t, n, srv.ChatRequests())
	resA := w.result(a.scores)
	assert.Equal(t, n, counts(t, text).Evaluated)

	// Method B's stage differs (name, scores path, replicas): its node runs
	// and reads every item from the store.
	code, text = w.apply(fileB, srv.URL)
	require.Equal(t, 0, code, text)
	assert.Equal(t, n, srv.ChatRequests(), "B sent no request")
	resB := w.result(b.scores)
	cb := counts(t, text)
	assert.Equal(t, n, cb.FromStore)
	assert.Zero(t, cb.Evaluated)
	assert.Zero(t, cb.Charged)
	assert.Equal(t, resA.ScoresDigest, resB.ScoresDigest)
	assert.Equal(t, resA.MeanScore, resB.MeanScore)
	assert.Contains(t, text, "items 300/300: 0 evaluated, 300 from the store")

	// A third method whose stage matches A's but for its name shares A's
	// node key: the node itself is taken from the cache, and its scores
	// file restored, without running.
	c := a
	c.pipeline, c.stage = "method_c", "third_seed_eval"
	code, text = w.apply(w.pipeline(c), srv.URL)
	require.Equal(t, 0, code, text)
	assert.Contains(t, text, "1 cached")
	assert.Equal(t, n, srv.ChatRequests())

	// Without any endpoint configured, B still completes from the store.
	require.NoError(t, os.Remove(filepath.Join(w.dir, b.scores)))
	b.scores = "runs/gepa/again_scores.jsonl"
	code, text = w.apply(w.pipeline(b))
	require.Equal(t, 0, code, text)
	assert.Equal(t, n, counts(t, text).FromStore)
}

// Two applies over the same items at once, on one cache: each item is
// requested once, and between them every item is evaluated once.
func TestConcurrentAppliesEvaluateEachItemOnce(t *testing.T) {
	const n = 1000
	w := newWorkspace(t, n)
	srv := startServer(t, simmodel.Config{Latency: 2 * time.Millisecond})
	specs := []stageSpec{
		{pipeline: "method_a", stage: "a_seed_eval", scores: "runs/a/seed_scores.jsonl", replicas: 2},
		{pipeline: "method_b", stage: "b_seed_eval", scores: "runs/b/seed_scores.jsonl", replicas: 2},
	}
	var wg sync.WaitGroup
	codes := make([]int, len(specs))
	outs := make([]string, len(specs))
	files := []string{w.pipeline(specs[0]), w.pipeline(specs[1])}
	for i := range specs {
		wg.Go(func() {
			out, err := w.cairn(files[i], srv.URL).CombinedOutput()
			outs[i] = string(out)
			if ee, ok := err.(*exec.ExitError); ok {
				codes[i] = ee.ExitCode()
			} else if err != nil {
				codes[i] = -1
				outs[i] += err.Error()
			}
		})
	}
	wg.Wait()
	for i := range specs {
		require.Equal(t, 0, codes[i], outs[i])
	}
	perItem := requested(t, w, srv.log.entries(t))
	assert.Len(t, perItem, n)
	for id, c := range perItem {
		assert.Equal(t, 1, c, "item %s", id)
	}
	ra, rb := w.result(specs[0].scores), w.result(specs[1].scores)
	ca, cb := counts(t, outs[0]), counts(t, outs[1])
	assert.Equal(t, n, ca.Evaluated+cb.Evaluated, "each item evaluated by one of them")
	assert.Equal(t, n, ca.FromStore+cb.FromStore)
	assert.Equal(t, ra.ScoresDigest, rb.ScoresDigest)
	t.Logf("apply A evaluated %d, apply B %d", ca.Evaluated, cb.Evaluated)
}

// flaky wraps a simulated model: while down, chat requests get their
// connection closed without an answer (the endpoint died after preflight).
type flaky struct {
	h      http.Handler
	down   atomic.Bool
	killed atomic.Int64
}

func (f *flaky) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if f.down.Load() && strings.HasSuffix(r.URL.Path, "/chat/completions") {
		f.killed.Add(1)
		if hj, ok := rw.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		http.Error(rw, "down", http.StatusBadGateway)
		return
	}
	f.h.ServeHTTP(rw, r)
}

func startFlaky(t *testing.T) (*flaky, *simmodel.Server, string) {
	t.Helper()
	sim := simmodel.New(simmodel.Config{Models: []string{model}})
	f := &flaky{h: sim}
	srv := &http.Server{Handler: f}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return f, sim, "http://" + ln.Addr().String() + "/v1"
}

// An endpoint down: its failures are counted and retried, never stored;
// with every endpoint down the node fails (exit 1), and a later apply
// completes.
func TestEndpointDown(t *testing.T) {
	const n = 20
	t.Run("one of two endpoints down", func(t *testing.T) {
		w := newWorkspace(t, n)
		dead, deadSim, deadURL := startFlaky(t)
		dead.down.Store(true)
		live := startServer(t, simmodel.Config{})
		spec := stageSpec{pipeline: "p", stage: "seed_eval", scores: "out/scores.jsonl", retryInfra: 3}
		code, text := w.apply(w.pipeline(spec), deadURL, live.URL)
		require.Equal(t, 0, code, text)
		c := counts(t, text)
		assert.Equal(t, n, c.Evaluated)
		assert.Positive(t, c.InfraFailures, "requests to the dead endpoint failed")
		assert.Equal(t, int(dead.killed.Load()), c.InfraFailures)
		assert.Zero(t, deadSim.ChatRequests())
		counts := requested(t, w, live.log.entries(t))
		assert.Len(t, counts, n)
		for id, c := range counts {
			assert.Equal(t, 1, c, "item %s: retried on the live endpoint once", id)
		}
	})

	t.Run("every endpoint down", func(t *testing.T) {
		w := newWorkspace(t, n)
		f, sim, url := startFlaky(t)
		f.down.Store(true)
		spec := stageSpec{pipeline: "p", stage: "seed_eval", scores: "out/scores.jsonl", retryInfra: 1}
		file := w.pipeline(spec)
		code, text := w.apply(file, url)
		assert.Equal(t, 1, code, text)
		assert.Contains(t, text, "failed (infrastructure)")
		assert.Contains(t, text, "20 of 20 items failed after their retries")
		assert.Contains(t, text, "40 infrastructure failures")
		assert.EqualValues(t, 2*n, f.killed.Load(), "each item sent once and retried once")
		assert.Empty(t, w.storedKeys(), "nothing stored for infrastructure failures")
		assert.Zero(t, sim.ChatRequests())

		f.down.Store(false)
		code, text = w.apply(file, url)
		require.Equal(t, 0, code, text)
		c := counts(t, text)
		assert.Equal(t, n, c.Evaluated)
		assert.Zero(t, c.InfraFailures)
		assert.Equal(t, n, sim.ChatRequests())
		assert.Len(t, w.storedKeys(), n)
	})
}

// A task model id the endpoint does not serve: a preflight error naming
// the endpoint and what it serves, exit 1, no item sent. The workers were
// stopped before a request, and wrote nothing: no log is named (an empty
// workers.log was).
func TestModelNotServed(t *testing.T) {
	w := newWorkspace(t, 5)
	srv := startServer(t, simmodel.Config{Models: []string{"Qwen/Qwen3.5-9B", "meta-llama/Llama-3.1-8B"}})
	spec := stageSpec{pipeline: "p", stage: "seed_eval", scores: "out/scores.jsonl"}
	code, text := w.apply(w.pipeline(spec), srv.URL)
	assert.Equal(t, 1, code, text)
	assert.Contains(t, text, "failed (setup)")
	assert.Contains(t, text, "endpoint "+srv.URL+` does not serve the task model "sim-model"; it serves Qwen/Qwen3.5-9B, meta-llama/Llama-3.1-8B`)
	assert.NotContains(t, text, "workers.log", "an empty log is not named")
	assert.Zero(t, srv.ChatRequests())
	assert.Empty(t, w.storedKeys())
}

// A dataset whose content is wrong (a line that is not JSON, two items with
// one id) is bad input: the evaluation is refused (exit 2), naming the file
// and line, and nothing is sent. A dataset that is missing when the node
// starts is a setup failure (exit 1), as a missing input is. Fixed, the
// next apply evaluates every item.
func TestMalformedDatasetIsRefused(t *testing.T) {
	w := newWorkspace(t, 4)
	srv := startServer(t, simmodel.Config{Models: []string{model}})
	file := w.pipeline(stageSpec{pipeline: "p", stage: "seed_eval", scores: "out/scores.jsonl"})
	good, err := os.ReadFile(filepath.Join(w.dir, "data/items.jsonl"))
	require.NoError(t, err)
	for _, c := range []struct{ name, data, want string }{
		{"not JSON", string(good) + "{\"id\": \"q9\", question: 1}\n", "data/items.jsonl:5 is not one JSON value (a JSONL dataset has one item per line): it is not valid JSON at column 14"},
		{"one id twice", string(good) + string(good[:bytes.IndexByte(good, '\n')+1]), `have the same id "q00000"`},
	} {
		w.write("data/items.jsonl", c.data)
		code, text := w.apply(file, srv.URL)
		assert.Equal(t, 2, code, "%s:\n%s", c.name, text)
		assert.Contains(t, strings.Join(strings.Fields(text), " "), c.want, c.name)
	}
	require.NoError(t, os.Remove(filepath.Join(w.dir, "data/items.jsonl")))
	code, text := w.apply(file, srv.URL)
	assert.Equal(t, 1, code, text)
	assert.Contains(t, text, "failed (setup): input data/items.jsonl does not exist")
	assert.Zero(t, srv.ChatRequests())

	w.write("data/items.jsonl", string(good))
	code, text = w.apply(file, srv.URL)
	require.Equal(t, 0, code, text)
	assert.Equal(t, 4, srv.ChatRequests())
}

// copyInto copies the repository's file rel into dir at the same path.
func copyInto(t *testing.T, dir, rel string) {
	t.Helper()
	src := filepath.Join("../..", rel)
	st, err := os.Stat(src)
	require.NoError(t, err)
	if st.IsDir() {
		ents, err := os.ReadDir(src)
		require.NoError(t, err)
		for _, e := range ents {
			copyInto(t, dir, filepath.Join(rel, e.Name()))
		}
		return
	}
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	dst := filepath.Join(dir, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
	require.NoError(t, os.WriteFile(dst, b, 0o644))
}

// pipelines/optimizer_eval.hcl: two methods' seed-bundle evaluations run
// at once in one apply and send each item once between them.
func TestOptimizerEvalExample(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	for _, rel := range []string{"pipelines/optimizer_eval.hcl", "testdata/optimizer_eval", "testdata/workers/chat_worker.py"} {
		copyInto(t, dir, rel)
	}
	srv := startServer(t, simmodel.Config{WrongRate: 0.25})
	apply := func() (int, string) {
		cmd := exec.Command(cairnBin, "apply", "pipelines/optimizer_eval.hcl", "--cache", cache, "--no-color")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TASK_ENDPOINTS="+srv.URL, "CAIRN_NO_FSYNC=1")
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		require.NoError(t, err, "%s", out)
		return 0, string(out)
	}
	code, text := apply()
	require.Equal(t, 0, code, text)
	assert.Contains(t, text, "6 ran")

	// Requests per conversation: the seed bundle's (shared by both
	// methods) and each incumbent's, once each.
	perConversation := map[string]int{}
	for _, e := range srv.log.entries(t) {
		perConversation[e.Messages]++
	}
	const n = 60
	assert.Len(t, perConversation, 3*n)
	for d, c := range perConversation {
		assert.Equal(t, 1, c, "conversation %s", d)
	}
	for _, m := range []string{"mapro", "gepa"} {
		b, err := os.ReadFile(filepath.Join(dir, "runs", m, "seed0", "result.json"))
		require.NoError(t, err)
		var res struct {
			Method       string  `json:"method"`
			Items        int     `json:"items"`
			BaselineMean float64 `json:"baseline_mean"`
		}
		require.NoError(t, json.Unmarshal(b, &res))
		assert.Equal(t, m, res.Method)
		assert.Equal(t, n, res.Items)
		assert.Positive(t, res.BaselineMean)
	}

	code, text = apply()
	require.Equal(t, 0, code, text)
	assert.Contains(t, text, "6 cached")
	assert.Equal(t, 3*n, srv.ChatRequests())
}

// A rerun of an evaluate node answered wholly from the item store has the
// same result as the run that evaluated the items: its downstream stays
// cached (the counts of each run are in its progress lines and record,
// not in the result).
func TestRerunFromTheStoreLeavesDownstreamCached(t *testing.T) {
	const n = 30
	w := newWorkspace(t, n)
	srv := startServer(t, simmodel.Config{WrongRate: 0.3})
	src := `pipeline "p" {}
variable "task_endpoints" {
  type    = list(string)
  default = []
}
variable "note" {
  type    = string
  default = "a"
}
stage "evaluate" "val" {
  worker    = ["python3", "workers/chat_worker.py", "--system-prompt-file", "bundles/seed/system.txt"]
  items     = "data/items.jsonl"
  bundle    = ["bundles/seed/"]
  model     = "` + model + `"
  endpoints = var.task_endpoints
  env       = { NOTE = var.note }   # keys the node, not its items
  scores    = "out/val_scores.jsonl"
}
stage "command" "select" {
  run     = ["sh", "-c", "echo ${stage.val.result.mean_score} >> out/selected.txt"]
  outputs = ["out/selected.txt"]
}
`
	w.write("p.hcl", src)
	code, text := w.apply("p.hcl", srv.URL)
	require.Equal(t, 0, code, text)
	require.Equal(t, n, counts(t, text).Evaluated)

	cmd := w.cairn("p.hcl", srv.URL)
	cmd.Args = append(cmd.Args, "--var", "note=b")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	text = string(out)
	c := counts(t, text)
	assert.Equal(t, n, c.FromStore, text)
	assert.Zero(t, c.Evaluated, text)
	assert.Equal(t, n, srv.ChatRequests(), "no request sent")
	assert.Contains(t, text, "1 cached", "stage.select stays cached")
	b, err := os.ReadFile(filepath.Join(w.dir, "out/selected.txt"))
	require.NoError(t, err)
	assert.Equal(t, 1, bytes.Count(b, []byte("\n")), "stage.select ran once: %s", b)

	// The run's counts are in its journal.
	runs, err := runlog.List(w.cache)
	require.NoError(t, err)
	found := false
	for _, e := range runs[0].Entries {
		if e.T == runlog.Finished && e.Node == "stage.val" {
			found = true
			assert.Equal(t, map[string]int{"items": n, "evaluated": 0, "from_store": n, "failed": 0, "charged": 0, "attempted": 0, "infra_failures": 0, "retried": 0}, e.Counts)
		}
	}
	assert.True(t, found, "a finished record for stage.val")
}

// After a retry of the node, its counts are what its attempts did
// together, not the last attempt's alone: the results the first attempt
// stored are evaluated (once), not from the store, and its requests and
// infrastructure failures count.
func TestRetriedNodeCountsEveryAttempt(t *testing.T) {
	const n = 8
	w := newWorkspace(t, n)
	srv := startServer(t, simmodel.Config{})
	// q00004 answers an infrastructure failure to its first 4 sends (the
	// first attempt's 1 + 3 retries), then a score.
	w.write("worker.py", `import json, sys
for line in sys.stdin:
    req = json.loads(line)
    if req["id"] == "q00004":
        with open("sent.log", "a") as f:
            f.write("x")
        if len(open("sent.log").read()) <= 4:
            print(json.dumps({"id": req["id"], "infra_failure": True, "error": "HTTP 503"}), flush=True)
            continue
    print(json.dumps({"id": req["id"], "score": 1, "charged": 1}), flush=True)
`)
	w.write("p.hcl", `pipeline "p" {}
variable "task_endpoints" {
  type    = list(string)
  default = []
}
stage "evaluate" "ev" {
  worker    = ["python3", "worker.py"]
  items     = "data/items.jsonl"
  model     = "`+model+`"
  endpoints = var.task_endpoints
  scores    = "out/scores.jsonl"
  retry {
    max = 1
    on  = ["infrastructure"]
  }
}
`)
	code, text := w.apply("p.hcl", srv.URL)
	require.Equal(t, 0, code, text)
	require.Contains(t, text, "attempt 1 failed (infrastructure)")
	runs, err := runlog.List(w.cache)
	require.NoError(t, err)
	var got map[string]int
	for _, e := range runs[0].Entries {
		if e.T == runlog.Finished && e.Node == "stage.ev" {
			got = e.Counts
		}
	}
	assert.Equal(t, map[string]int{"items": n, "evaluated": n, "from_store": 0, "failed": 0, "charged": n, "attempted": n + 4, "infra_failures": 4, "retried": 3}, got)
}

// A method that gives up on a rollout request and exits does not leave
// the node waiting for it: the request is cancelled when the method ends,
// and charges nothing, as its reply had nobody to read it.
func TestOptimizeCancelsTheRequestsOfAMethodThatEnded(t *testing.T) {
	w := newWorkspace(t, 5)
	srv := startServer(t, simmodel.Config{})
	// q00003 is never answered (a hung model call).
	w.write("worker.py", `import json, sys
for line in sys.stdin:
    req = json.loads(line)
    if req["id"] != "q00003":
        print(json.dumps({"id": req["id"], "score": 1, "charged": 1}), flush=True)
`)
	w.write("method.py", `import json, os, socket
s = socket.socket(socket.AF_UNIX); s.connect(os.environ["CAIRN_ROLLOUT_SOCKET"]); s.settimeout(1.0)
s.sendall(b'{"op":"rollout","bundle":"bundles/seed","items":["q00001","q00002","q00003"]}\n')
try:
    s.makefile("rb").readline()
except socket.timeout:
    pass
json.dump({}, open(os.path.join(os.environ["CAIRN_OPTIMIZATION_DIR"], "optimizer_result.json"), "w"))
`)
	w.write("p.hcl", `pipeline "p" {}
variable "task_endpoints" {
  type    = list(string)
  default = []
}
stage "optimize" "opt" {
  run               = ["python3", "method.py"]
  out               = "job"
  budget            = 10
  bundle            = ["bundles/seed/"]
  worker            = ["python3", "worker.py"]
  bundle_in_request = true
  items             = "data/items.jsonl"
  model             = "`+model+`"
  endpoints         = var.task_endpoints
  item_timeout      = "10s"
}
`)
	start := time.Now()
	code, text := w.apply("p.hcl", srv.URL)
	took := time.Since(start)
	require.Equal(t, 0, code, text)
	assert.Less(t, took, 10*time.Second, "the node waited for the abandoned request:\n%s", text)
	var opt struct {
		Charged   int `json:"charged_rollouts"`
		Attempted int `json:"attempted_rollouts"`
	}
	b, err := os.ReadFile(filepath.Join(w.dir, "job/optimization.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &opt))
	assert.Zero(t, opt.Charged, "rollouts no method received were charged")
	assert.Zero(t, opt.Attempted)
}
