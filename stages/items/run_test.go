package items

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/sim/simmodel"
	"github.com/cairn-run/cairn/syncbuf"
)

const testModel = "sim-model"

// fixture is a cache directory, a store and a simulated model with a
// request log.
type fixture struct {
	t       *testing.T
	dir     string
	store   *Store
	sim     *simmodel.Running
	logPath string
	diag    *syncbuf.Buffer
}

func newFixture(t *testing.T, simCfg simmodel.Config) *fixture {
	t.Helper()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "requests.jsonl")
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { lf.Close() })
	simCfg.RequestLog = lf
	if simCfg.Models == nil {
		simCfg.Models = []string{testModel}
	}
	sim, err := simmodel.Start(simCfg, "")
	require.NoError(t, err)
	t.Cleanup(func() { sim.Close() })
	store, err := OpenStore(dir, StoreOptions{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	f := &fixture{t: t, dir: dir, store: store, sim: sim, logPath: logPath, diag: &syncbuf.Buffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("diagnostics:\n%s", f.diag.String())
		}
	})
	return f
}

// config evaluates items with the Go chat worker against the simulated
// model.
func (f *fixture) config(items []Item, env ...string) Config {
	return Config{
		Worker:       self(f.t),
		Env:          helperEnvFor("chat", append([]string{"WORKER_USER_AGENT=in-process"}, env...)...),
		Items:        items,
		BundleDigest: "sha256:seed-bundle",
		ModelID:      testModel,
		Runtime:      map[string]any{"topology": "single", "seed": 0},
		WorkerDigest: "sha256:chat-worker",
		Replicas:     2,
		MaxInFlight:  4,
		Endpoints:    []string{f.sim.URL},
		Store:        f.store,
		Log:          f.diag,
		Retry:        RetryPolicy{Backoff: time.Millisecond},
	}
}

func (f *fixture) requests() []simmodel.LogEntry {
	raw, err := os.ReadFile(f.logPath)
	require.NoError(f.t, err)
	entries, err := simmodel.ReadLog(bytes.NewReader(raw))
	require.NoError(f.t, err)
	return entries
}

// requestsPerItem counts the successful requests per item digest.
func requestsPerItem(entries []simmodel.LogEntry, userAgent string) map[string]int {
	n := map[string]int{}
	for _, e := range entries {
		if e.Status == 200 && (userAgent == "" || e.UserAgent == userAgent) {
			n[e.Messages]++
		}
	}
	return n
}

// storedPerKey counts the records of each key in the store's log.
func storedPerKey(t testing.TB, dir string) map[string]int {
	n := map[string]int{}
	require.NoError(t, ScanStore(dir, func(key string, _ Result) error {
		n[key]++
		return nil
	}))
	return n
}

// assertOneResultEach checks that the log holds exactly one record for each
// item and nothing else.
func assertOneResultEach(t testing.TB, dir string, sum Summary) {
	t.Helper()
	stored := storedPerKey(t, dir)
	want := map[string]int{}
	for _, o := range sum.Items {
		want[o.Key] = 1
	}
	assert.Equal(t, want, stored)
}

// journal records the OnResult calls.
type journal struct {
	mu    sync.Mutex
	calls map[string]int
	keys  map[string]string
}

func newJournal() *journal {
	return &journal{calls: map[string]int{}, keys: map[string]string{}}
}

func (j *journal) hook(id, key string, _ Result) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls[id]++
	j.keys[id] = key
}

func TestEvaluateChatWorker(t *testing.T) {
	f := newFixture(t, simmodel.Config{WrongRate: 0.3})
	items := makeItems(200)
	cfg := f.config(items)
	var progress syncbuf.Buffer
	cfg.Progress = &progress
	j := newJournal()
	cfg.OnResult = j.hook

	sum, err := Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, Counts{Total: 200, Done: 200, Evaluated: 200, Charged: 200, Attempted: 200}, sum.Counts)

	// Scores are what the simulated model's answers deserve.
	var want float64
	for i, it := range items {
		var ti testItem
		require.NoError(t, json.Unmarshal(it.Data, &ti))
		expected := 0.0
		if f.sim.Answer(testModel, chatMessages("", ti)) == ti.Answer {
			expected = 1
		}
		want += expected
		o := sum.Items[i]
		require.NotNil(t, o.Score, it.ID)
		assert.Equal(t, expected, *o.Score, it.ID)
		assert.Equal(t, it.ID, o.ID)
		assert.False(t, o.Cached)
		assert.Equal(t, 1, j.calls[it.ID], "journaled once: %s", it.ID)
		assert.Equal(t, o.Key, j.keys[it.ID])
		r, ok, err := f.store.Get(o.Key)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, expected, *r.Score)
		assert.Equal(t, 1, r.Charged)
		assert.JSONEq(t, `{"answer":"`+f.sim.Answer(testModel, chatMessages("", ti))+`"}`, string(r.Outputs))
	}
	assert.Equal(t, 200, sum.Scored)
	assert.InDelta(t, want/200, sum.MeanScore, 1e-12)
	assert.Less(t, sum.MeanScore, 1.0, "some answers are wrong")

	perItem := requestsPerItem(f.requests(), "")
	assert.Len(t, perItem, 200)
	for _, it := range items {
		assert.Equal(t, 1, perItem[itemDigest(t, "", it)], it.ID)
	}
	assertOneResultEach(t, f.dir, sum)

	// One line every 10 charged rollouts (each item charges one). A
	// rollout is charged when its result is stored, never ahead of it;
	// attempted counts the requests sent, at least the items charged.
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	require.Len(t, lines, 20)
	line := regexp.MustCompile(`^charged (\d+), attempted (\d+), infra-failures 0; items (\d+)/200: (\d+) evaluated, 0 from the store, 0 failed$`)
	for i, l := range lines {
		m := line.FindStringSubmatch(l)
		require.NotNil(t, m, l)
		charged, _ := strconv.Atoi(m[1])
		attempted, _ := strconv.Atoi(m[2])
		done, _ := strconv.Atoi(m[3])
		evaluated, _ := strconv.Atoi(m[4])
		assert.Equal(t, 10*(i+1), charged, l)
		assert.Equal(t, charged, evaluated, "charged as stored: %s", l)
		assert.Equal(t, done, evaluated, l)
		assert.GreaterOrEqual(t, attempted, charged, l)
	}
	assert.Equal(t, "charged 200, attempted 200, infra-failures 0; items 200/200: 200 evaluated, 0 from the store, 0 failed", lines[19])
}

// Each commit's results are journaled (OnResult, then OnCommit) before any
// of its items counts as done: a journal that writes its records at
// OnCommit loses none to a kill -9 once an item is reported.
func TestEvaluateJournalsBeforeItemsAreDone(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(makeItems(100))
	var mu sync.Mutex
	added, committed, early := 0, 0, 0
	cfg.OnResult = func(string, string, Result) {
		mu.Lock()
		added++
		mu.Unlock()
	}
	cfg.OnCommit = func() {
		mu.Lock()
		committed = added
		mu.Unlock()
	}
	cfg.OnProgress = func(c Counts) {
		mu.Lock()
		if c.Evaluated > committed {
			early++
		}
		mu.Unlock()
	}
	sum, err := Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, 100, sum.Evaluated)
	assert.Equal(t, 100, committed)
	assert.Zero(t, early, "items counted done before their commit was journaled")
}

// Results that come in while others are out wait for them in one group
// commit, and the last results of an evaluation are committed as soon as
// they are in: with a window of an hour, 200 items make one commit, and
// the evaluation does not wait the hour.
func TestResultsWaitForOneCommitAndTheLastCommitAtOnce(t *testing.T) {
	defer func(w time.Duration) { commitWindow = w }(commitWindow)
	commitWindow = time.Hour
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(makeItems(200))
	commits := 0
	cfg.OnCommit = func() { commits++ }
	// A guard against the hour, not a measure of speed.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := Evaluate(ctx, cfg)
	require.NoError(t, err)
	assert.Equal(t, 200, sum.Evaluated)
	assert.Equal(t, 1, commits, "group commits")
	assert.Equal(t, 200, f.store.Len())
}

// Items of the same content are sent once, and their result's rollouts
// are charged once: in the counts, and in the journal, where the first
// item's record charges them and the others' charge nothing.
func TestEvaluateJournalChargesSameContentOnce(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	list := makeItems(3)
	list = append(list, Item{ID: "again0", Data: list[0].Data}, Item{ID: "again0b", Data: list[0].Data}, Item{ID: "again2", Data: list[2].Data})
	cfg := f.config(list)
	var mu sync.Mutex
	charged := map[string]int{}
	cfg.OnResult = func(id, _ string, r Result) {
		mu.Lock()
		defer mu.Unlock()
		charged[id] = r.Charged
	}
	sum, err := Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	assert.Len(t, f.requests(), 3, "one request for each content")
	assert.Equal(t, 3, sum.Charged)
	assert.Equal(t, 3, sum.Attempted)
	assert.Equal(t, 6, sum.Evaluated, "each item of a shared request counts")
	assert.Equal(t, sum.Total, sum.Evaluated+sum.FromCache+sum.Failed, "the items add up")
	require.Len(t, charged, 6, "a record for each item")
	total := 0
	for _, c := range charged {
		total += c
	}
	assert.Equal(t, sum.Charged, total, "the journal charges what the counts do: %v", charged)
	assert.Equal(t, 1, charged["q00000"]+charged["again0"]+charged["again0b"])
	assert.Equal(t, 1, charged["q00002"]+charged["again2"])
}

func TestEvaluateSharesResultsAcrossMethods(t *testing.T) {
	f := newFixture(t, simmodel.Config{WrongRate: 0.5})
	items := makeItems(150)

	// Method A evaluates the seed bundle.
	a, err := Evaluate(context.Background(), f.config(items))
	require.NoError(t, err)
	assert.Equal(t, 150, a.Evaluated)
	assert.Len(t, f.requests(), 150)

	// Method B, in another process (a fresh Store on the same cache),
	// evaluates the same seed bundle on the same cell: no worker, no
	// endpoint, not one request.
	store, err := OpenStore(f.dir, StoreOptions{})
	require.NoError(t, err)
	defer store.Close()
	cfg := f.config(items)
	cfg.Store = store
	cfg.Worker = []string{"/nonexistent/worker"}
	cfg.Endpoints = []string{deadEndpoint(t)}
	j := newJournal()
	cfg.OnResult = j.hook
	var progress syncbuf.Buffer
	cfg.Progress = &progress
	b, err := Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, "charged 0, attempted 0, infra-failures 0; items 150/150: 0 evaluated, 150 from the store, 0 failed\n", progress.String())
	assert.Equal(t, Counts{Total: 150, Done: 150, FromCache: 150}, b.Counts)
	assert.Zero(t, b.WorkerStarts)
	assert.Len(t, f.requests(), 150, "B sent no request")
	assert.Empty(t, j.calls, "nothing new to journal")
	assert.Equal(t, a.MeanScore, b.MeanScore)
	var scoresA, scoresB bytes.Buffer
	require.NoError(t, a.WriteScores(&scoresA, f.store))
	require.NoError(t, b.WriteScores(&scoresB, store))
	assert.Equal(t, scoresA.String(), scoresB.String(), "the same results make the same scores file")
	first := strings.SplitN(scoresA.String(), "\n", 2)[0]
	assert.Regexp(t, `^\{"id":"q00000","key":"[0-9a-f]{64}","score":[01],"outputs":\{"answer":"1000"\}\}$`, first)
	for i := range items {
		assert.Equal(t, a.Items[i].Key, b.Items[i].Key)
		assert.Equal(t, *a.Items[i].Score, *b.Items[i].Score)
		assert.True(t, b.Items[i].Cached)
	}

	// Anything that changes a result changes the keys: a new bundle is
	// evaluated afresh.
	cfg = f.config(items)
	cfg.BundleDigest = "sha256:incumbent-bundle"
	c, err := Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, 150, c.Evaluated)
	assert.Len(t, f.requests(), 300)
}

func TestEvaluateMisbehavingWorkers(t *testing.T) {
	tests := []struct {
		name      string
		items     int
		env       []string
		timeout   time.Duration
		maxLine   int
		wantInLog string
	}{
		{name: "crashes every 100 items", items: 450, env: []string{"HELPER_CRASH_EVERY=100"}, wantInLog: "exited (exit status 3)"},
		{name: "prints garbage and never answers some items", items: 200, env: []string{"HELPER_GARBAGE=1", "HELPER_SILENT_EVERY=25"},
			timeout: 300 * time.Millisecond, wantInLog: "ignoring a line"},
		{name: "prints over-long lines", items: 50, env: []string{"HELPER_LONG_LINE=300000"}, maxLine: 100000,
			wantInLog: "longer than the limit of 100000 bytes"},
		{name: "hangs", items: 200, env: []string{"HELPER_HANG_EVERY=50"}, timeout: 300 * time.Millisecond, wantInLog: "did not answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, simmodel.Config{})
			items := makeItems(tt.items)
			cfg := f.config(items, tt.env...)
			if tt.timeout > 0 {
				cfg.ItemTimeout = tt.timeout
			}
			if tt.maxLine > 0 {
				defer func(n int) { maxLine = n }(maxLine)
				maxLine = tt.maxLine
			}
			cfg.Retry.Crashes = 10
			cfg.Retry.Timeouts = 10
			j := newJournal()
			cfg.OnResult = j.hook
			sum, err := Evaluate(context.Background(), cfg)
			require.NoError(t, err)
			assert.Equal(t, tt.items, sum.Evaluated)
			assert.Zero(t, sum.Failed)
			assert.Equal(t, tt.items, sum.Charged, "charged once per stored result")
			if tt.maxLine == 0 {
				assert.Positive(t, sum.Retried)
				assert.Greater(t, sum.WorkerStarts, cfg.Replicas, "fresh workers took over")
			}
			assertOneResultEach(t, f.dir, sum)
			for _, it := range items {
				assert.Equal(t, 1, j.calls[it.ID], it.ID)
			}
			assert.Contains(t, f.diag.String(), tt.wantInLog)
			t.Logf("retried %d, worker starts %d", sum.Retried, sum.WorkerStarts)
		})
	}
}

// A worker that hangs at its first request, every time, is stopped for
// the items' timeouts again and again: its items end failed once their
// timeout retries are spent (ErrIncomplete, an infrastructure failure of
// the node), not as workers that "died without answering" (ErrWorker, a
// setup failure): cairn stopped them.
func TestWorkersStoppedForTimeoutsAreNotDeadWorkers(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(makeItems(6), "HELPER_HANG_EVERY=1")
	cfg.ItemTimeout = 100 * time.Millisecond
	cfg.Retry.Timeouts = 12 // more stopped workers than the dead-worker limit allows
	sum, err := Evaluate(context.Background(), cfg)
	require.ErrorIs(t, err, ErrIncomplete, "%v", err)
	assert.NotErrorIs(t, err, ErrWorker)
	assert.Equal(t, 6, sum.Failed)
	assert.Zero(t, sum.Evaluated)
	assert.Contains(t, f.diag.String(), "did not answer")
}

// A reply to an item in flight that cairn cannot read fails that attempt
// at once, with the reason, instead of leaving the item to time out: a
// worker that always answers so ends the evaluation in seconds, its items
// failed, nothing stored. So does a reply longer than the line limit
// whose id comes before what made it long.
func TestEvaluateBadRepliesFailTheirItems(t *testing.T) {
	for mode, why := range map[string]string{
		"nan":        "invalid character 'N' looking for beginning of value",
		"string":     "score is a string, where a response gives a number or null",
		"huge":       "score is the number 1e400, beyond what a float64 holds",
		"negcharged": "charged is -5, want a whole number from 0 to 1099511627776",
		"bigcharged": "charged is 9223372036854775807, want a whole number from 0 to 1099511627776",
		"dup":        "score is given twice",
		"dupcase":    `"Score" is given twice, in two spellings JSON readers disagree on`,
		"dupescape":  "score is given twice",
		"badutf8":    "outputs hold bytes that are not UTF-8",
		"badutf8err": "the reply holds bytes that are not UTF-8",
		"tiny":       "score is the number 1e-400, too near 0 for a float64",
		"long":       "longer than the limit of 100000 bytes",
	} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, simmodel.Config{})
			cfg := f.config(makeItems(20), "HELPER_BAD_REPLY="+mode, "HELPER_LONG_REPLY=300000")
			defer func(n int) { maxLine = n }(maxLine)
			maxLine = 100000
			cfg.ItemTimeout = time.Hour // a timeout would hang the test
			cfg.Retry.Crashes = 1
			sum, err := Evaluate(context.Background(), cfg)
			require.ErrorIs(t, err, ErrIncomplete)
			assert.Equal(t, 20, sum.Failed)
			assert.Zero(t, sum.Evaluated)
			assert.Zero(t, f.store.Len(), "nothing is stored from a reply cairn cannot read")
			for _, it := range sum.Items {
				assert.Contains(t, it.Reason, "answered it with a reply cairn cannot read ("+why, it.ID)
			}
			assert.Contains(t, f.diag.String(), "crash retry 1 of 1")
		})
	}
}

func TestEvaluateInfrastructureFailures(t *testing.T) {
	t.Run("HTTP 503 from the endpoint", func(t *testing.T) {
		f := newFixture(t, simmodel.Config{FailRate: 0.3, Seed: 7})
		items := makeItems(200)
		cfg := f.config(items)
		cfg.Retry.InfraFailures = 20
		sum, err := Evaluate(context.Background(), cfg)
		require.NoError(t, err)
		reqs := f.requests()
		failed := 0
		for _, e := range reqs {
			if e.Status == 503 {
				failed++
			}
		}
		require.Positive(t, failed)
		assert.Equal(t, failed, sum.InfraFailures)
		assert.Equal(t, failed, sum.Retried)
		// The run succeeds, and its log still shows every retry.
		assert.Equal(t, failed, strings.Count(f.diag.String(), "; sending it again after "), f.diag.String())
		assert.Contains(t, f.diag.String(), "infrastructure failure: HTTP 503")
		assert.Contains(t, f.diag.String(), "(infrastructure-failure retry 1 of 20)")
		assert.Equal(t, 200, sum.Charged)
		assert.Zero(t, sum.Failed)
		perItem := requestsPerItem(reqs, "")
		assert.Len(t, perItem, 200)
		for d, n := range perItem {
			assert.Equal(t, 1, n, d)
		}
		assertOneResultEach(t, f.dir, sum)
	})

	t.Run("an endpoint goes down after preflight", func(t *testing.T) {
		f := newFixture(t, simmodel.Config{})
		items := makeItems(100)
		cfg := f.config(items)
		cfg.Endpoints = []string{f.sim.URL, deadEndpoint(t)}
		cfg.SkipPreflight = true
		sum, err := Evaluate(context.Background(), cfg)
		require.NoError(t, err)
		// Each item that met the dead endpoint is retried on the other one.
		assert.Positive(t, sum.InfraFailures)
		assert.Equal(t, sum.InfraFailures, sum.Retried)
		assert.Equal(t, 100, sum.Evaluated)
		assert.Equal(t, 100, sum.Charged)
		assert.Len(t, f.requests(), 100)
		assertOneResultEach(t, f.dir, sum)
	})

	t.Run("every endpoint down: nothing stored, resumable", func(t *testing.T) {
		f := newFixture(t, simmodel.Config{})
		items := makeItems(40)
		cfg := f.config(items)
		cfg.Endpoints = []string{deadEndpoint(t)}
		cfg.SkipPreflight = true
		cfg.Retry.InfraFailures = 2
		sum, err := Evaluate(context.Background(), cfg)
		require.ErrorIs(t, err, ErrIncomplete)
		assert.Equal(t, 40, sum.Failed)
		assert.Equal(t, 40*3, sum.InfraFailures)
		assert.Zero(t, sum.Charged)
		assert.Zero(t, sum.Scored)
		for _, o := range sum.Items {
			assert.True(t, o.Failed)
			assert.Contains(t, o.Reason, "infrastructure failure")
		}
		var scores bytes.Buffer
		require.NoError(t, sum.WriteScores(&scores, nil))
		assert.Contains(t, strings.SplitN(scores.String(), "\n", 2)[0], `"score":null,"failed":"`)
		assert.Zero(t, f.store.Len())
		assert.Empty(t, storedPerKey(t, f.dir))

		sum, err = Evaluate(context.Background(), f.config(items))
		require.NoError(t, err)
		assert.Equal(t, 40, sum.Evaluated)
	})
}

func TestEvaluatePreflight(t *testing.T) {
	f := newFixture(t, simmodel.Config{Models: []string{"llama-3.1-8b"}})
	cfg := f.config(makeItems(10))
	sum, err := Evaluate(context.Background(), cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "endpoint "+f.sim.URL+` does not serve the task model "sim-model"; it serves llama-3.1-8b`)
	// The workers started during the check are stopped without a request.
	assert.LessOrEqual(t, sum.WorkerStarts, cfg.Replicas)
	assert.Zero(t, f.sim.ChatRequests())
	assert.Zero(t, f.store.Len())
}

// startSignal is a Launcher that says when it started a worker.
type startSignal struct {
	started chan struct{}
	once    sync.Once
}

func (s *startSignal) StartWorker(ctx context.Context, w process.WorkerSpec) (process.Worker, error) {
	p, err := process.LocalLauncher.StartWorker(ctx, w)
	if err == nil {
		s.once.Do(func() { close(s.started) })
	}
	return p, err
}

// The workers start while the endpoints are checked, not after: the
// check's round trip and a worker's start were paid one after the other
// before the first request of every evaluation (#34).
func TestWorkersStartDuringPreflight(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	launcher := &startSignal{started: make(chan struct{})}
	target, err := url.Parse(f.sim.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	// The model list is answered once a worker has started: an
	// evaluation that starts its workers after the check never gets it.
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/models") {
			select {
			case <-launcher.started:
			case <-time.After(30 * time.Second):
				http.Error(w, "no worker started while the model list was asked for", http.StatusServiceUnavailable)
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	defer gate.Close()
	cfg := f.config(makeItems(20))
	cfg.Endpoints = []string{gate.URL + target.Path}
	cfg.Launcher = launcher
	sum, err := Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, 20, sum.Evaluated)
	assert.Equal(t, 20, f.sim.ChatRequests())
}

func TestEvaluateCancelAndResume(t *testing.T) {
	f := newFixture(t, simmodel.Config{Latency: time.Millisecond})
	items := makeItems(300)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := f.config(items)
	cfg.OnProgress = func(c Counts) {
		if c.Done >= 100 {
			cancel()
		}
	}
	first, err := Evaluate(ctx, cfg)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, f.store.Refresh())
	stored := f.store.Len()
	assert.Equal(t, first.Evaluated, stored)
	require.Less(t, stored, 300)
	before := len(f.requests())

	second, err := Evaluate(context.Background(), f.config(items))
	require.NoError(t, err)
	assert.Equal(t, stored, second.FromCache)
	assert.Equal(t, 300-stored, second.Evaluated)
	// The second run asks for each item the first did not store, and for
	// no other. A request of the first run that was in flight when it was
	// cancelled can reach the model's log after the first run returned:
	// it is for an item the first run did not store, which the second
	// asks for too, so the items are counted, not the requests.
	asked := requestsPerItem(f.requests()[before:], "")
	assert.Len(t, asked, 300-stored)
	for msgs, n := range asked {
		assert.LessOrEqual(t, n, 2, "item %s asked for %d times", msgs, n)
	}
	assertOneResultEach(t, f.dir, second)
}

func TestEvaluateItemsSharingContent(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	items := makeItems(3)
	items = append(items, Item{ID: "copy-of-q00001", Data: json.RawMessage(" " + string(items[1].Data))})
	j := newJournal()
	cfg := f.config(items)
	cfg.OnResult = j.hook
	sum, err := Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, 4, sum.Evaluated)
	assert.Len(t, f.requests(), 3, "one request per distinct item")
	assert.Equal(t, sum.Items[1].Key, sum.Items[3].Key)
	assert.Equal(t, *sum.Items[1].Score, *sum.Items[3].Score)
	assert.Equal(t, 1, j.calls["copy-of-q00001"])

	cfg.Items = append(items, items[0])
	_, err = Evaluate(context.Background(), cfg)
	assert.ErrorContains(t, err, `item ID "q00000" appears twice`)
}

func TestEvaluateBrokenWorker(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(makeItems(20))
	cfg.Worker = []string{"/nonexistent/worker"}
	_, err := Evaluate(context.Background(), cfg)
	assert.ErrorIs(t, err, ErrWorker)

	falsePath, err := exec.LookPath("false")
	require.NoError(t, err)
	cfg.Worker = []string{falsePath}
	cfg.Retry.Crashes = 100
	sum, err := Evaluate(context.Background(), cfg)
	require.ErrorIs(t, err, ErrWorker)
	assert.Contains(t, err.Error(), "died without answering any item")
	assert.Zero(t, f.store.Len())
	assert.Zero(t, sum.Evaluated)
}

func TestPythonChatWorker(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	f := newFixture(t, simmodel.Config{WrongRate: 0.4, FailRate: 0.1, Seed: 3})
	prompt := "Answer with the number only."
	promptFile := filepath.Join(t.TempDir(), "system.txt")
	require.NoError(t, os.WriteFile(promptFile, []byte(prompt), 0o644))
	items := makeItems(60)
	cfg := f.config(items)
	cfg.Worker = []string{python, "../../testdata/workers/chat_worker.py", "--system-prompt-file", promptFile}
	cfg.Env = append(os.Environ(), "WORKER_USER_AGENT=python")
	cfg.Retry.InfraFailures = 20
	sum, err := Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, 60, sum.Evaluated)
	assert.Equal(t, 60, sum.Charged)
	assert.Equal(t, f.sim.Failed(), sum.InfraFailures)
	for i, it := range items {
		var ti testItem
		require.NoError(t, json.Unmarshal(it.Data, &ti))
		want := 0.0
		if f.sim.Answer(testModel, chatMessages(prompt, ti)) == ti.Answer {
			want = 1
		}
		require.NotNil(t, sum.Items[i].Score)
		assert.Equal(t, want, *sum.Items[i].Score, it.ID)
	}
	perItem := requestsPerItem(f.requests(), "python")
	for _, it := range items {
		assert.Equal(t, 1, perItem[itemDigest(t, prompt, it)], it.ID)
	}
	assertOneResultEach(t, f.dir, sum)
}

// documentedWorker writes the worker printed in docs/worker-protocol.md to
// a file and returns the command that runs it.
func documentedWorker(t *testing.T) []string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	doc, err := os.ReadFile("../../docs/worker-protocol.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)```python\n(.*?)```").FindSubmatch(doc)
	require.NotNil(t, m, "the doc has a python block")
	code := string(m[1])
	lines := 0
	for _, l := range strings.Split(code, "\n") {
		if strings.TrimSpace(l) != "" {
			lines++
		}
	}
	// It speaks HTTP/1.1 itself, on one asyncio loop, to keep up with
	// the server at a thousand requests in flight (#34): 85 lines.
	assert.LessOrEqual(t, lines, 85, "the documented worker fits on a screen")
	path := filepath.Join(t.TempDir(), "worker.py")
	require.NoError(t, os.WriteFile(path, []byte(code), 0o644))
	return []string{python, path}
}

// TestDocumentedWorker runs the worker printed in docs/worker-protocol.md.
func TestDocumentedWorker(t *testing.T) {
	worker := documentedWorker(t)
	f := newFixture(t, simmodel.Config{WrongRate: 0.5, FailRate: 0.2, Seed: 11, MaxModelLen: 40})
	items := makeItems(50)
	// An item the server refuses (over the context length: HTTP 400) and
	// one the worker cannot read (no question: a KeyError) are answered
	// as the items' results, never retried as infrastructure failures.
	long, _ := json.Marshal(testItem{Question: "What is 1 + 2?" + strings.Repeat(" please", 60), Answer: "3"})
	items = append(items, Item{ID: "long", Data: long}, Item{ID: "noq", Data: json.RawMessage(`{"answer":"3"}`)})
	cfg := f.config(items)
	cfg.Worker = worker
	cfg.Env = os.Environ()
	cfg.Retry.InfraFailures = 20
	cfg.ItemTimeout = time.Minute // an item left unanswered would wait this long, and fail the test
	sum, err := Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, 52, sum.Evaluated)
	assert.Zero(t, sum.Failed)
	assert.Equal(t, f.sim.Failed(), sum.InfraFailures, "only the 503s were infrastructure failures")
	rl, ok, err := f.store.Get(sum.Items[50].Key)
	require.NoError(t, err)
	require.True(t, ok)
	require.NotNil(t, rl.Score)
	assert.Zero(t, *rl.Score)
	assert.Contains(t, rl.Error, "HTTP 400")
	assert.Contains(t, rl.Error, "maximum context length")
	rq, ok, err := f.store.Get(sum.Items[51].Key)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Nil(t, rq.Score)
	assert.Contains(t, rq.Error, "KeyError")
	f.assertScoredAsAnswered(items[:50], sum)
	assertOneResultEach(t, f.dir, sum)
}

// The documented worker keeps its connections open from one request to
// the next, one per request in flight at most (#34): at hundreds of requests in flight, a connection
// per request costs more than the server's own time. Its results are the
// model's answers, scored.
func TestDocumentedWorkerKeepsConnectionsAlive(t *testing.T) {
	items := makeItems(120)
	f, sum := evaluateWithDocumentedWorker(t, simmodel.Config{WrongRate: 0.5, Seed: 5}, items, 4)
	assert.Equal(t, 120, sum.Evaluated)
	assert.Zero(t, sum.InfraFailures)
	assert.LessOrEqual(t, f.sim.Connections(), int64(4)+1,
		"cairn's preflight and one connection per request in flight, kept open: not one per request")
	f.assertScoredAsAnswered(items, sum)
}

// assertScoredAsAnswered checks that the first items of sum have score 1
// where the simulated model answers them right, 0 where it does not.
func (f *fixture) assertScoredAsAnswered(items []Item, sum Summary) {
	t := f.t
	t.Helper()
	for i, it := range items {
		var ti testItem
		require.NoError(t, json.Unmarshal(it.Data, &ti))
		want := 0.0
		if f.sim.Answer(testModel, chatMessages("", ti)) == ti.Answer {
			want = 1
		}
		require.NotNil(t, sum.Items[i].Score, it.ID)
		assert.Equal(t, want, *sum.Items[i].Score, it.ID)
	}
}

// A server that closes a kept-alive connection while it sits idle (uvicorn
// does after 5 s) costs the documented worker a new connection, not an
// infrastructure failure.
func TestDocumentedWorkerReconnectsWhenTheServerDropsIdleConnections(t *testing.T) {
	f, sum := evaluateWithDocumentedWorker(t, simmodel.Config{DropIdle: true}, makeItems(30), 2)
	assert.Equal(t, 30, sum.Evaluated)
	assert.Zero(t, sum.Failed)
	assert.Zero(t, sum.InfraFailures, "a dropped idle connection is opened again, not reported")
	assert.Greater(t, f.sim.Connections(), int64(2), "the server dropped connections")
}

// evaluateWithDocumentedWorker evaluates items with one documented worker
// at inFlight requests against a simulated model set up by simCfg.
func evaluateWithDocumentedWorker(t *testing.T, simCfg simmodel.Config, items []Item, inFlight int) (*fixture, Summary) {
	t.Helper()
	worker := documentedWorker(t)
	f := newFixture(t, simCfg)
	cfg := f.config(items)
	cfg.Worker, cfg.Env = worker, os.Environ()
	cfg.Replicas, cfg.MaxInFlight = 1, inFlight
	sum, err := Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	return f, sum
}

// The worker log says where the items of a dead worker go: sent again, or,
// on their last attempt, nowhere.
func TestWorkerLogSaysWhereItemsGo(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(makeItems(1), "HELPER_CRASH_EVERY=1")
	cfg.Replicas, cfg.MaxInFlight = 1, 1
	cfg.Retry.Crashes = 1
	cfg.Retry.Backoff = time.Millisecond
	sum, err := Evaluate(context.Background(), cfg)
	require.ErrorIs(t, err, ErrIncomplete)
	assert.Equal(t, 1, sum.Failed)
	log := f.diag.String()
	assert.NotContains(t, log, "fresh worker")
	assert.Equal(t, 1, strings.Count(log, "item q00000: "), log)
	assert.Regexp(t, `item q00000: worker 0\.0 \(pid \d+\) exited \(exit status 3\); sending it again \(crash retry 1 of 1\)`, log)
	assert.Regexp(t, `item q00000 failed: worker 0\.1 \(pid \d+\) exited`, log)
}

// A worker that cannot get going: its stderr lines carry its name and pid,
// and the error quotes its last one.
func TestWorkerThatDiesAtOnceShowsItsStderr(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(makeItems(3))
	cfg.Worker = []string{"sh", "-c", "echo starting >&2; echo \"ModuleNotFoundError: No module named 'openai'\" >&2; exit 1"}
	cfg.Replicas = 1
	cfg.Retry.Crashes = 10
	cfg.Retry.Backoff = time.Millisecond
	_, err := Evaluate(context.Background(), cfg)
	require.ErrorIs(t, err, ErrWorker)
	assert.Contains(t, err.Error(), `its last line on stderr: "ModuleNotFoundError: No module named 'openai'"`)
	assert.Regexp(t, `(?m)^worker 0\.0 \(pid \d+\): starting$`, f.diag.String())
	assert.Regexp(t, `(?m)^worker 0\.4 \(pid \d+\): ModuleNotFoundError`, f.diag.String())

	// When an item spends its crash retries first (each worker reads it,
	// then dies), its failure says so too.
	cfg.Worker = []string{"sh", "-c", "read request; echo \"ModuleNotFoundError: No module named 'openai'\" >&2; exit 1"}
	cfg.Items, cfg.MaxInFlight = cfg.Items[:1], 1
	cfg.Retry.Crashes = 1
	sum, err := Evaluate(context.Background(), cfg)
	require.ErrorIs(t, err, ErrIncomplete)
	assert.Contains(t, sum.Items[0].Reason, `exited (exit status 1); its last line on stderr: "ModuleNotFoundError: No module named 'openai'"`)
	// The log says how many items were in flight beside how it ended,
	// as docs/worker-protocol.md shows it, then its last line.
	assert.Regexp(t, `items: worker 0\.\d \(pid \d+\) exited \(exit status 1\) with 1 items in flight; its last line on stderr: "ModuleNotFoundError`, f.diag.String())
}

// A line whose id is not a string names no item, even when encoding/json
// leaves a pointer to "" for it: it is logged as not a response and
// ignored, and its item times out.
func TestReplyWithANumericIDIsIgnored(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(makeItems(1))
	cfg.Worker = []string{"sh", "-c", "read request; echo '{\"id\":5,\"score\":1}'; sleep 30"}
	cfg.Replicas, cfg.MaxInFlight = 1, 1
	cfg.ItemTimeout = 200 * time.Millisecond
	cfg.Retry.Timeouts = 0
	sum, err := Evaluate(context.Background(), cfg)
	require.ErrorIs(t, err, ErrIncomplete)
	assert.Equal(t, 1, sum.Failed)
	log := f.diag.String()
	assert.Contains(t, log, `not a response: id is a number, where a response gives a string`)
	assert.NotContains(t, log, `no item "" is in flight`)
}

// A failed evaluation's results file still shows, by item id, the score and
// outputs of every item stored and why the others failed.
func TestScoresOfAFailedEvaluation(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(makeItems(5), "HELPER_INFRA_ID=q00003")
	cfg.Retry.InfraFailures = 1
	cfg.Retry.Backoff = time.Millisecond
	sum, err := Evaluate(context.Background(), cfg)
	require.ErrorIs(t, err, ErrIncomplete)
	var scores bytes.Buffer
	require.NoError(t, sum.WriteScores(&scores, f.store))
	lines := strings.Split(strings.TrimSpace(scores.String()), "\n")
	require.Len(t, lines, 5)
	for i, l := range lines {
		var line struct {
			ID      string
			Score   *float64
			Outputs map[string]string
			Failed  string
		}
		require.NoError(t, json.Unmarshal([]byte(l), &line))
		assert.Equal(t, "q0000"+strconv.Itoa(i), line.ID)
		if i == 3 {
			assert.Nil(t, line.Score)
			assert.Contains(t, line.Failed, "infrastructure failure: HTTP 503")
			continue
		}
		assert.NotNil(t, line.Score, l)
		assert.NotEmpty(t, line.Outputs["answer"], l)
		assert.Empty(t, line.Failed)
	}
}

// Two evaluations of the same items share them to the last: while one has
// an item in flight that its worker does not answer, the other evaluates
// every other item, none of them held idle by the first.
func TestConcurrentEvaluationsShareTheTail(t *testing.T) {
	const n = 100
	f := newFixture(t, simmodel.Config{})
	items := makeItems(n)
	gate := filepath.Join(t.TempDir(), "gate")

	// A: one worker, one item at a time, held until the gate opens.
	cfgA := f.config(items, "HELPER_GATE="+gate, "WORKER_USER_AGENT=apply-a")
	cfgA.Replicas, cfgA.MaxInFlight = 1, 1
	sentA := make(chan struct{})
	var once sync.Once
	cfgA.OnProgress = func(c Counts) {
		if c.Attempted > 0 {
			once.Do(func() { close(sentA) })
		}
	}
	type outcome struct {
		sum Summary
		err error
	}
	doneA := make(chan outcome, 1)
	go func() {
		sum, err := Evaluate(context.Background(), cfgA)
		doneA <- outcome{sum, err}
	}()
	<-sentA

	// B, in another store (as another process), evaluates all the rest
	// while A's item is in flight.
	store, err := OpenStore(f.dir, StoreOptions{NoSync: true})
	require.NoError(t, err)
	defer store.Close()
	cfgB := f.config(items, "WORKER_USER_AGENT=apply-b")
	cfgB.Store = store
	restDone := make(chan struct{})
	var onceB sync.Once
	cfgB.OnProgress = func(c Counts) {
		if c.Evaluated == n-1 {
			onceB.Do(func() { close(restDone) })
		}
	}
	doneB := make(chan outcome, 1)
	go func() {
		sum, err := Evaluate(context.Background(), cfgB)
		doneB <- outcome{sum, err}
	}()
	select {
	case <-restDone:
	case b := <-doneB:
		t.Fatalf("B ended before evaluating the rest: %+v, %v", b.sum.Counts, b.err)
	case <-time.After(2 * time.Minute):
		t.Fatal("B did not evaluate the items A held but was not sending")
	}
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	a, b := <-doneA, <-doneB
	require.NoError(t, a.err)
	require.NoError(t, b.err)
	assert.Equal(t, 1, a.sum.Evaluated)
	assert.Equal(t, n-1, a.sum.FromCache)
	assert.Equal(t, n-1, b.sum.Evaluated)
	assert.Equal(t, 1, b.sum.FromCache)
	for d, c := range requestsPerItem(f.requests(), "") {
		assert.Equal(t, 1, c, d)
	}
	assert.Len(t, storedPerKey(t, f.dir), n)
}

// A worker that reports no charges still shows progress: a line every 10
// items done.
func TestProgressWithoutCharges(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(makeItems(25))
	cfg.Env = helperEnvFor("noop")
	cfg.Replicas, cfg.MaxInFlight = 1, 1
	var progress syncbuf.Buffer
	cfg.Progress = &progress
	_, err := Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	require.Len(t, lines, 3, progress.String())
	assert.Contains(t, lines[0], "charged 0, attempted ")
	assert.Contains(t, lines[0], "; items 10/25: 10 evaluated")
	assert.Contains(t, lines[1], "; items 20/25: 20 evaluated")
	assert.Equal(t, "charged 0, attempted 25, infra-failures 0; items 25/25: 25 evaluated, 0 from the store, 0 failed", lines[2])
}

// The items found in the store when an evaluation starts make one
// OnProgress call with all of them, not one per item: a resumed
// evaluation of many stored items does not format its counts for each.
func TestOnProgressOnceForTheStoredItems(t *testing.T) {
	f := newFixture(t, simmodel.Config{})
	list := makeItems(120)
	_, err := Evaluate(context.Background(), f.config(list[:100]))
	require.NoError(t, err)

	var calls []Counts
	cfg := f.config(list)
	cfg.OnProgress = func(c Counts) { calls = append(calls, c) }
	sum, err := Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, 20, sum.Evaluated)
	require.NotEmpty(t, calls)
	assert.Equal(t, Counts{Total: 120, Done: 100, FromCache: 100}, calls[0], "the stored items, at once")
	for _, c := range calls[1:] {
		assert.GreaterOrEqual(t, c.Done, 100)
	}
}

// Once every item is resolved, OnResolved gets the summary while the
// workers exit (#34): a worker that takes its time to end (a Python worker
// of 1,024 threads, 200 ms and more) no longer holds up what needs the
// results alone, like the per-item results file. The worker here exits
// only once OnResolved has run; Evaluate returns after both, with the
// summary OnResolved got, and nothing is killed.
func TestOnResolvedRunsWhileTheWorkersExit(t *testing.T) {
	dir := t.TempDir()
	store, err := OpenStore(dir, StoreOptions{NoSync: true})
	require.NoError(t, err)
	defer store.Close()
	gate := filepath.Join(dir, "gate")
	var diag syncbuf.Buffer
	var resolved []Summary
	cfg := Config{
		Worker: self(t), Env: helperEnvFor("noop", "HELPER_EXIT_GATE="+gate), Items: makeItems(30),
		BundleDigest: "sha256:b", ModelID: "m", WorkerDigest: "sha256:w",
		MaxInFlight: 4, Replicas: 2, Store: store, Log: &diag,
		ShutdownGrace: time.Minute, // a worker still waiting at its end would hold the test this long
		OnResolved: func(s Summary) {
			resolved = append(resolved, s)
			require.NoError(t, os.WriteFile(gate, nil, 0o666))
		},
	}
	sum, err := Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, resolved, 1)
	assert.Equal(t, sum.Counts, resolved[0].Counts)
	assert.Equal(t, sum.Items, resolved[0].Items)
	assert.Equal(t, 30, sum.Evaluated)
	assert.NotContains(t, diag.String(), "killing it")

	// Every item in the store: no worker, and OnResolved all the same.
	resolved = nil
	sum, err = Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, resolved, 1)
	assert.Equal(t, 30, resolved[0].FromCache)
	assert.Zero(t, sum.WorkerStarts)
}

// What a worker may write stays accepted: escapes in outputs, and keys of
// its own inside outputs that differ only in case.
func TestResponseCheckKeepsWhatWorkersMayWrite(t *testing.T) {
	for _, line := range []string{
		`{"id":"a","score":1,"outputs":{"text":"caf\u00e9 \u2014 ok"}}`,
		`{"id":"a","score":1,"outputs":{"A":1,"a":2,"Score":3}}`,
		`{"id":"a","score":1,"charged":1099511627776}`,
		`{"id":"a","score":0.5,"outputs":"plain"}`,
	} {
		var r response
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		assert.NoError(t, r.check([]byte(line)), line)
	}
}

// Finite scores whose sum overflows float64 have a finite mean, and the
// evaluation reports it (it failed on +Inf, on every apply).
func TestMeanOfScoresWhoseSumOverflows(t *testing.T) {
	score := func(x float64) *float64 { return &x }
	r := &run{outcomes: []ItemOutcome{{Score: score(1.5e308)}, {Score: score(1.5e308)}, {Score: score(-1.5e308)}, {Score: score(7), Failed: true}}}
	s := r.summary()
	assert.Equal(t, 3, s.Scored)
	assert.Equal(t, 5e307, s.MeanScore)
	a, b := 0.1, 0.2
	r = &run{outcomes: []ItemOutcome{{Score: score(a)}, {Score: score(b)}}}
	assert.Equal(t, (a+b)/2, r.summary().MeanScore, "an ordinary sum: its mean as the float sum gives it")
}

// The mean does not depend on the order of the items: 1e16, 1 and -1e16
// added as floats in that order lose the 1 (mean 0); their exact mean is
// 1/3, in any order.
func TestMeanDoesNotDependOnTheItemsOrder(t *testing.T) {
	score := func(x float64) *float64 { return &x }
	for _, xs := range [][]float64{{1e16, 1, -1e16}, {1e16, -1e16, 1}, {1, 1e16, -1e16}} {
		r := &run{}
		for _, x := range xs {
			r.outcomes = append(r.outcomes, ItemOutcome{Score: score(x)})
		}
		assert.Equal(t, 1.0/3, r.summary().MeanScore, "%v", xs)
	}
}

// Every request carries the stage's runtime settings, canonical, as the
// item key holds them: a worker makes its calls with them, so a result
// stored under temperature 0.7 is one made at 0.7.
func TestRequestsCarryTheRuntimeSettings(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the echoing worker is a Python one-liner")
	}
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(makeItems(3))
	cfg.Worker = []string{"python3", "-c", "import sys, json\nfor l in sys.stdin:\n    r = json.loads(l)\n    print(json.dumps({'id': r['id'], 'score': 1, 'outputs': {'runtime': r['runtime']}}), flush=True)\n"}
	cfg.Env = nil
	cfg.Endpoints = nil
	cfg.Runtime = map[string]any{"temperature": 0.7, "eval_seed": 3}
	sum, err := Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, sum.Items, 3)
	for _, it := range sum.Items {
		require.NotNil(t, it.Result, it.ID)
		assert.JSONEq(t, `{"runtime": {"eval_seed": 3, "temperature": 0.7}}`, string(it.Result.Outputs), it.ID)
	}
}

// A reply line that starts with a UTF-8 byte-order mark is ignored as not
// a response, and the log names the mark rather than Go's "invalid
// character 'ï'".
func TestReplyWithAByteOrderMarkIsNamed(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the worker is a Python one-liner")
	}
	f := newFixture(t, simmodel.Config{})
	cfg := f.config(makeItems(2))
	cfg.Worker = []string{"python3", "-c", "import sys, json\nfor l in sys.stdin:\n    r = json.loads(l)\n    out = json.dumps({'id': r['id'], 'score': 1})\n    sys.stdout.write('\\ufeff' + out + '\\n' + out + '\\n')\n    sys.stdout.flush()\n"}
	cfg.Env = nil
	cfg.Endpoints = nil
	sum, err := Evaluate(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, 2, sum.Evaluated)
	assert.Contains(t, f.diag.String(), "not a response: the line starts with a UTF-8 byte-order mark")
	assert.NotContains(t, f.diag.String(), "invalid character")
}
