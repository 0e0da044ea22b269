package pipelines_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/sim/simmodel"
)

// The optimizer tests run pipelines/optimizer_grid.hcl through the real
// cairn binary, with the simulated task model (its request log counts what
// reached the model) and the simulated method of testdata/optimizer/.

type optWorkspace struct {
	t      *testing.T
	dir    string
	cache  string
	url    string
	reqLog string
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, info.Mode().Perm())
	}))
}

func newOptWorkspace(t *testing.T) *optWorkspace {
	t.Helper()
	return newOptWorkspaceLatency(t, 0)
}

// newOptWorkspaceLatency answers every chat request after latency.
func newOptWorkspaceLatency(t *testing.T, latency time.Duration) *optWorkspace {
	t.Helper()
	return newOptWorkspaceModel(t, simmodel.Config{WrongRate: 0.25, Latency: latency})
}

// newOptWorkspaceModel serves the simulated model with cfg (its request
// log added).
func newOptWorkspaceModel(t *testing.T, cfg simmodel.Config) *optWorkspace {
	t.Helper()
	if testing.Short() {
		t.Skip("end to end")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	dir := t.TempDir()
	copyTree(t, "../testdata/optimizer", filepath.Join(dir, "testdata/optimizer"))
	copyTree(t, "../testdata/workers", filepath.Join(dir, "testdata/workers"))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "pipelines"), 0o755))
	b, err := os.ReadFile("optimizer_grid.hcl")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pipelines/optimizer_grid.hcl"), b, 0o644))
	reqLog := filepath.Join(t.TempDir(), "requests.jsonl")
	f, err := os.Create(reqLog)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	cfg.RequestLog = f
	srv, err := simmodel.Start(cfg, "")
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return &optWorkspace{t: t, dir: dir, cache: filepath.Join(t.TempDir(), "cache"), url: srv.URL, reqLog: reqLog}
}

// job applies one job; vars are NAME=VALUE.
func (w *optWorkspace) job(vars ...string) (string, int) {
	w.t.Helper()
	return w.phase(nil, vars...)
}

// phase applies one job with flags (NAME=VALUE for --NAME VALUE, or NAME).
func (w *optWorkspace) phase(flags []string, vars ...string) (string, int) {
	w.t.Helper()
	cmd := w.command(w.applyArgs(flags, vars...)...)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(w.t, err)
	}
	return string(out), code
}

// applyArgs are the arguments of phase's apply.
func (w *optWorkspace) applyArgs(flags []string, vars ...string) []string {
	args := []string{"apply", "pipelines/optimizer_grid.hcl", "--cache", w.cache, "--no-color"}
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		args = append(args, "--"+k)
		if ok {
			args = append(args, v)
		}
	}
	base := map[string]string{"method": "simgepa", "dataset": "sums", "topology": "single", "model": "sim", "seed": "0"}
	for _, v := range vars {
		k, val, _ := strings.Cut(v, "=")
		base[k] = val
	}
	for _, k := range slices.Sorted(maps.Keys(base)) {
		args = append(args, "--var", k+"="+base[k])
	}
	return args
}

func (w *optWorkspace) command(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(bins, "cairn"), args...)
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), "TASK_ENDPOINTS="+w.url, "CAIRN_NO_FSYNC=1", "NO_COLOR=1")
	return cmd
}

// killDuring starts apply with args and kills cairn (SIGKILL) once cond
// holds.
func (w *optWorkspace) killDuring(cond func() bool, args ...string) {
	w.t.Helper()
	cmd := w.command(append([]string{"apply", "pipelines/optimizer_grid.hcl", "--cache", w.cache, "--no-color"}, args...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(w.t, cmd.Start())
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	e2etest.WaitFor(w.t, "the moment to kill cairn", 60*time.Second, func() bool {
		select {
		case <-done:
			w.t.Fatalf("cairn ended before it was killed:\n%s", out.String())
		default:
		}
		return cond()
	})
	require.NoError(w.t, cmd.Process.Kill())
	<-done
}

func (w *optWorkspace) readJSON(rel string, v any) {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, rel))
	require.NoError(w.t, err)
	require.NoError(w.t, json.Unmarshal(b, v), rel)
}

// requestCount is how many chat requests the simulated model got.
func (w *optWorkspace) requestCount() (n int) {
	w.t.Helper()
	for _, c := range w.requests() {
		n += c
	}
	return n
}

// requests counts the chat requests the simulated model got, by the
// digest of their messages.
func (w *optWorkspace) requests() map[string]int {
	w.t.Helper()
	f, err := os.Open(w.reqLog)
	require.NoError(w.t, err)
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e simmodel.LogEntry
		require.NoError(w.t, json.Unmarshal(sc.Bytes(), &e))
		out[e.Messages]++
	}
	return out
}

func splitQuestions(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var qs []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var it struct{ Question string }
		require.NoError(t, json.Unmarshal([]byte(l), &it))
		qs = append(qs, it.Question)
	}
	return qs
}

var summaryRe = regexp.MustCompile(`(?m)^\{"status":.*\}$`)

// One job end to end: job.json, optimization.json with exactly the budget
// charged, the progress line every 10 charged rollouts, selection.json,
// test.json, result.json and the summary line; a second apply runs nothing.
func TestOptimizerJob(t *testing.T) {
	w := newOptWorkspace(t)
	out, code := w.job()
	require.Equal(t, 0, code, out)
	const dir = "runs/simgepa/sums/single/sim/0"
	var job map[string]any
	w.readJSON(dir+"/job.json", &job)
	assert.Equal(t, "cairn.job/1", job["format"])
	assert.Equal(t, "sums/single/sim", job["cell_id"])
	assert.Equal(t, "sim-model", job["task_model"])
	assert.Equal(t, []any{}, job["nonconformant"])
	for _, k := range []string{"method", "data", "worker", "bundle", "pipeline"} {
		assert.Regexp(t, "^sha256:[0-9a-f]{64}$", job["digests"].(map[string]any)[k], k)
	}
	var opt map[string]any
	w.readJSON(dir+"/optimization.json", &opt)
	assert.Equal(t, 600.0, opt["charged_rollouts"])
	assert.Equal(t, true, opt["proposed"])
	progress := regexp.MustCompile(`stage\.optimize\["simgepa/sums/single/sim/0"\]  rollouts: charged (\d+)/600, attempted \d+, infra-failures \d+`).FindAllStringSubmatch(out, -1)
	require.Len(t, progress, 60, out)
	assert.Equal(t, "10", progress[0][1])
	assert.Equal(t, "600", progress[59][1])
	ledger, err := os.ReadFile(filepath.Join(w.dir, dir, "optimization/rollouts.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, 600, strings.Count(string(ledger), "\n"))
	_, err = os.Stat(filepath.Join(w.dir, dir, "optimization/optimizer_result.json"))
	assert.NoError(t, err)

	var res map[string]any
	w.readJSON(dir+"/result.json", &res)
	assert.Equal(t, "ok", res["status"])
	assert.Equal(t, 600.0, res["charged_rollouts"])
	assert.Equal(t, true, res["valid_for_aggregation"])
	assert.Equal(t, 40.0, res["test_items"])
	assert.InDelta(t, 100*(res["deployed_mean"].(float64)-res["baseline_mean"].(float64)), res["delta_pp"], 1e-6)
	var test struct {
		Items []map[string]any
	}
	w.readJSON(dir+"/test.json", &test)
	require.Len(t, test.Items, 40)
	line := summaryRe.FindString(out)
	require.NotEmpty(t, line, out)
	var sum map[string]any
	require.NoError(t, json.Unmarshal([]byte(line), &sum))
	assert.Equal(t, res["delta_pp"], sum["delta_pp"])
	// The seed's seven fields, then what names the job in a grid.
	assert.Len(t, sum, 10)
	assert.Equal(t, "simgepa", sum["method"])
	assert.Equal(t, "sums/single/sim", sum["cell_id"])
	assert.Equal(t, 0.0, sum["seed"])
	assert.Equal(t, dir, sum["out"])

	// One rollout worker served the whole optimization: its 600 rollouts
	// came in 30 requests of 20 and more bundles.
	show := w.command("show", `stage.optimize["simgepa/sums/single/sim/0"]`, "--cache", w.cache)
	rec, err := show.Output()
	require.NoError(t, err)
	assert.Regexp(t, `"worker_starts": 1\b`, string(rec))

	// Applied again, the finished job runs nothing and prints its saved
	// summary: the same line, made of the cached result.
	out, code = w.job()
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "0 ran, 8 cached")
	assert.Equal(t, []string{line}, summaryRe.FindAllString(out, -1), out)

	// With --json, standard output holds the node events only, the result
	// node's with the summary in its "summary"; the summary line goes to
	// standard error, as when the node runs.
	cmd := w.command(w.applyArgs([]string{"json"})...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	assert.Equal(t, []string{line}, summaryRe.FindAllString(stderr.String(), -1), stderr.String())
	var events []string
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		// The model servers' nodes: not started, nothing to evaluate.
		if strings.Contains(l, `"status":"not_started"`) {
			assert.Regexp(t, `"node":"stage\.(reflection_model|task_model\[\\"sim\\"\])"`, l)
			continue
		}
		events = append(events, l)
	}
	require.Len(t, events, 8, stdout.String())
	summaries := 0
	for _, l := range events {
		var ev map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(l), &ev), l)
		assert.JSONEq(t, `"cached"`, string(ev["status"]), l)
		if s, ok := ev["summary"]; ok {
			summaries++
			assert.JSONEq(t, `"stage.result[\"simgepa/sums/single/sim/0\"]"`, string(ev["node"]), l)
			assert.JSONEq(t, line, string(s), l)
		}
	}
	assert.Equal(t, 1, summaries, stdout.String())

	// With --json --summaries, standard output holds the summary line
	// alone, and the node events go to standard error.
	cmd = w.command(w.applyArgs([]string{"json", "summaries"})...)
	stdout.Reset()
	stderr.Reset()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	assert.Equal(t, line+"\n", stdout.String())
	assert.Len(t, regexp.MustCompile(`(?m)^\{"key":.*"status":"cached".*\}$`).FindAllString(stderr.String(), -1), 8, stderr.String())
}

// REFLECTION_MODEL_BASE_URL in the environment reaches the method, as in
// the seed's runner, when --var reflection_base_url does not name one.
func TestOptimizerReflectionURLFromEnvironment(t *testing.T) {
	w := newOptWorkspace(t)
	const url = "http://reflect.example:8300/v1"
	cmd := w.command(w.applyArgs(nil, "budget=20", `method_args=["--batch","10"]`)...)
	cmd.Env = append(cmd.Env, "REFLECTION_MODEL_BASE_URL="+url)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var rec struct {
		Reflection struct {
			ID      string `json:"id"`
			BaseURL string `json:"base_url"`
		} `json:"reflection_model"`
	}
	w.readJSON("runs/simgepa/sums/single/sim/0/optimization/optimizer_result.json", &rec)
	assert.Equal(t, url, rec.Reflection.BaseURL, "what the method was handed")
	assert.Equal(t, "Qwen/Qwen3.5-122B-A10B-FP8", rec.Reflection.ID)
}

// The bundled pipeline applied from a project folder of the user's own
// (the pipeline file outside the workspace): the job seals the pipeline
// where it is, runs, and a second apply takes everything from the cache.
func TestOptimizerPipelineAppliedFromAnotherFolder(t *testing.T) {
	w := newOptWorkspace(t)
	require.NoError(t, os.RemoveAll(filepath.Join(w.dir, "pipelines")))
	pipeline, err := filepath.Abs("optimizer_grid.hcl")
	require.NoError(t, err)
	args := w.applyArgs(nil, "budget=20", `method_args=["--batch","10"]`)
	require.Equal(t, "pipelines/optimizer_grid.hcl", args[1])
	args[1] = pipeline
	out, err := w.command(args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	const dir = "runs/simgepa/sums/single/sim/0"
	var job struct {
		Digests map[string]string `json:"digests"`
	}
	w.readJSON(dir+"/job.json", &job)
	b, err := os.ReadFile(pipeline)
	require.NoError(t, err)
	// The digest of a one-file list (stages.bundleDigest): the file's
	// sha256 under the list's header.
	sum := sha256.Sum256(b)
	list := sha256.Sum256([]byte("cairn.bundle.v1\nfile sha256:" + hex.EncodeToString(sum[:]) + "\n"))
	assert.Equal(t, "sha256:"+hex.EncodeToString(list[:]), job.Digests["pipeline"], "the pipeline is sealed where it is")
	var res map[string]any
	w.readJSON(dir+"/result.json", &res)
	assert.Equal(t, "ok", res["status"])

	out, err = w.command(args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "0 ran, 8 cached", "%s", out)
}

// A seed bundle named without a trailing slash is the same folder: every
// evaluation of it reads its system.txt, and the job ends as with the
// slash.
func TestOptimizerSeedBundleWithoutSlash(t *testing.T) {
	w := newOptWorkspace(t)
	out, code := w.job("budget=20", `method_args=["--batch","10"]`, "seed_bundle=testdata/optimizer/bundles/seed")
	require.Equal(t, 0, code, out)
	const dir = "runs/simgepa/sums/single/sim/0"
	var res map[string]any
	w.readJSON(dir+"/result.json", &res)
	assert.Equal(t, "ok", res["status"])
	assert.Equal(t, 0.0, res["test_invalid_items"])
	assert.Equal(t, 40.0, res["test_items"])
	for _, f := range []string{"validation/seed_scores.jsonl", "test/seed_scores.jsonl"} {
		b, err := os.ReadFile(filepath.Join(w.dir, dir, f))
		require.NoError(t, err)
		assert.NotContains(t, string(b), `"failed"`, f)
		assert.Positive(t, strings.Count(string(b), `"score"`), f)
	}
}

// Sealing: the out folder of one job refuses another job (another seed),
// and the same job after a data file changed, before anything runs (exit
// 2), naming each differing field with both values.
func TestOptimizerJobSealing(t *testing.T) {
	w := newOptWorkspace(t)
	out, code := w.job("budget=40", "out=runs/j")
	require.Equal(t, 0, code, out)
	before := len(w.requests())

	out, code = w.job("budget=40", "out=runs/j", "seed=1")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "seed: the out folder's job is 0, this job is 1")
	assert.Contains(t, out, "nothing was run")

	p := filepath.Join(w.dir, "testdata/optimizer/data/sums/val.jsonl")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, append(b, []byte(`{"id": "extra", "question": "What is 1 + 1?", "answer": "2"}`+"\n")...), 0o644))
	out, code = w.job("budget=40", "out=runs/j")
	assert.Equal(t, 2, code, out)
	assert.Regexp(t, `digests\.data: the out folder.s job is\s+"sha256:[0-9a-f]+", this job is\s+"sha256:[0-9a-f]+"`, out)
	assert.Equal(t, before, len(w.requests()), "a refused job sends nothing")
}

// A method that asks for 700 rollouts gets exactly 600 charged, then the
// typed error for every request past the budget.
func TestOptimizerOverspend(t *testing.T) {
	w := newOptWorkspace(t)
	out, code := w.job(`method_args=["--mode","overspend"]`)
	require.Equal(t, 0, code, out)
	const dir = "runs/simgepa/sums/single/sim/0"
	var opt map[string]any
	w.readJSON(dir+"/optimization.json", &opt)
	assert.Equal(t, 600.0, opt["charged_rollouts"])
	assert.Equal(t, 100.0, opt["refused_rollouts"])
	var rec map[string]any
	w.readJSON(dir+"/optimization/optimizer_result.json", &rec)
	assert.Equal(t, true, rec["budget_exhausted"])
	assert.Equal(t, 600.0, rec["counts"].(map[string]any)["charged"], "what the method saw")
}

// A worse incumbent: the seed bundle is deployed with incumbent_not_better,
// and the test split reaches the model once per item. A budget below 600
// marks the job non-conformant.
func TestOptimizerFallbackAndSmoke(t *testing.T) {
	w := newOptWorkspace(t)
	out, code := w.job("budget=60", `method_args=["--mode","worse"]`, "out=runs/worse")
	require.Equal(t, 0, code, out)
	var sel, res map[string]any
	w.readJSON("runs/worse/selection.json", &sel)
	assert.Equal(t, "seed", sel["deployed"])
	assert.Equal(t, "incumbent_not_better", sel["fallback_reason"])
	assert.Less(t, sel["incumbent_validation_mean"], sel["seed_validation_mean"])
	w.readJSON("runs/worse/result.json", &res)
	assert.Equal(t, "incumbent_not_better", res["fallback_reason"])
	assert.Equal(t, 0.0, res["delta_pp"])
	assert.Equal(t, false, res["valid_for_aggregation"])
	assert.Equal(t, []any{"budget 60 is below the protocol's 600 rollouts"}, res["nonconformant"])
	reqs := w.requests()
	seedPrompt, err := os.ReadFile(filepath.Join(w.dir, "testdata/optimizer/bundles/seed/system.txt"))
	require.NoError(t, err)
	for _, q := range splitQuestions(t, filepath.Join(w.dir, "testdata/optimizer/data/sums/test.jsonl")) {
		d := simmodel.MessagesDigest([]simmodel.Message{{Role: "system", Content: string(seedPrompt)}, {Role: "user", Content: q}})
		assert.Equal(t, 1, reqs[d], "test item %q reached the model once", q)
	}

	out, code = w.job("budget=30", `method_args=["--mode","none"]`, "out=runs/none")
	require.Equal(t, 0, code, out)
	w.readJSON("runs/none/selection.json", &sel)
	assert.Equal(t, "no_incumbent", sel["fallback_reason"])
	var opt map[string]any
	w.readJSON("runs/none/optimization.json", &opt)
	assert.Equal(t, 20.0, opt["charged_rollouts"], "the warm-up rollouts are charged")
	assert.Nil(t, opt["incumbent"])

	out, code = w.job("budget=30", `method_args=["--mode","crash"]`, "out=runs/crash")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "the method failed")
	assert.Contains(t, out, "the next apply does not restart this optimization")
	_, err = os.Stat(filepath.Join(w.dir, "runs/crash/result.json"))
	assert.True(t, os.IsNotExist(err))

	// A crashed method is an interrupted optimization (#28): the next
	// apply does not run it again.
	ledger := filepath.Join(w.dir, "runs/crash/optimization/rollouts.jsonl")
	charged := lineCount(ledger)
	out, code = w.job("budget=30", `method_args=["--mode","crash"]`, "out=runs/crash")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "was interrupted")
	assert.NotContains(t, out, "the method failed", "the method was not run again")
	assert.Equal(t, charged, lineCount(ledger))
}

// The small grid end to end (2 methods x 2 datasets x 3 seeds): every job
// has its job.json, result.json and summary line; and the seed bundle's
// validation and test evaluations reach the model once per cell and seed,
// whichever method's node ran them: the second method's send nothing.
// With --summaries, standard output is the jobs' summary lines alone, as
// the seed's runner prints them (cairn apply ... | jq), each naming its
// job; the progress is on standard error.
func TestOptimizerGrid(t *testing.T) {
	w := newOptWorkspace(t)
	args := []string{"apply", "pipelines/optimizer_grid.hcl", "--cache", w.cache, "--no-color", "--summaries",
		"--var", "budget=60", "--var", `method_args=["--batch","20"]`, "--var", "include_nonconformant=true"}
	cmd := exec.Command(filepath.Join(bins, "cairn"), args...)
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), "TASK_ENDPOINTS="+w.url, "CAIRN_NO_FSYNC=1", "NO_COLOR=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s", stderr.String())
	assert.Contains(t, stderr.String(), "97 ran, 0 cached, 0 failed")
	assert.NotContains(t, stderr.String(), `{"status"`, "the summary lines are on standard output only")
	tsv, err := os.ReadFile(filepath.Join(w.dir, "reports/optimizer/aggregate.tsv"))
	require.NoError(t, err)
	rows := regexp.MustCompile(`(?m)^[^\t]+\t(simgepa|simmapro)\t(sums|products)/single/sim\t3\t.*\tok; non-conformant: seed 0: budget 60 is below the protocol's 600 rollouts; .*$`).FindAllString(string(tsv), -1)
	assert.Len(t, rows, 4, "one complete row per method and cell:\n%s", tsv)
	type summary struct {
		Status       string   `json:"status"`
		Method       string   `json:"method"`
		CellID       string   `json:"cell_id"`
		Seed         *int     `json:"seed"`
		Out          string   `json:"out"`
		DeltaPP      *float64 `json:"delta_pp"`
		BaselineMean *float64 `json:"baseline_mean"`
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	require.Len(t, lines, 12, "one line per job:\n%s", stdout.String())
	byOut := map[string]summary{}
	for _, l := range lines {
		var sum summary
		dec := json.NewDecoder(strings.NewReader(l))
		require.NoError(t, dec.Decode(&sum), "every line of standard output is a JSON object: %q", l)
		require.NotNil(t, sum.Seed, l)
		require.NotNil(t, sum.DeltaPP, l)
		assert.Equal(t, fmt.Sprintf("runs/%s/%s/%d", sum.Method, sum.CellID, *sum.Seed), sum.Out, l)
		byOut[sum.Out] = sum
	}
	for _, m := range []string{"simgepa", "simmapro"} {
		for _, d := range []string{"sums", "products"} {
			for _, s := range []string{"0", "1", "2"} {
				dir := filepath.Join("runs", m, d, "single", "sim", s)
				var job, res map[string]any
				w.readJSON(dir+"/job.json", &job)
				w.readJSON(dir+"/result.json", &res)
				assert.Equal(t, m, job["method"])
				assert.Equal(t, d+"/single/sim", res["cell_id"])
				assert.Equal(t, job["seed"], res["seed"])
				assert.Equal(t, 60.0, res["charged_rollouts"])
				sum, ok := byOut[dir]
				if assert.True(t, ok, "a summary line names %s", dir) {
					assert.Equal(t, m, sum.Method)
					assert.Equal(t, d+"/single/sim", sum.CellID)
					assert.Equal(t, res["seed"], float64(*sum.Seed))
					assert.Equal(t, res["delta_pp"], *sum.DeltaPP)
					assert.Equal(t, res["status"], sum.Status)
				}
			}
		}
	}
	reqs := w.requests()
	seedPrompt, err := os.ReadFile(filepath.Join(w.dir, "testdata/optimizer/bundles/seed/system.txt"))
	require.NoError(t, err)
	for _, d := range []string{"sums", "products"} {
		for _, split := range []string{"val", "test"} {
			for _, q := range splitQuestions(t, filepath.Join(w.dir, "testdata/optimizer/data", d, split+".jsonl")) {
				dg := simmodel.MessagesDigest([]simmodel.Message{{Role: "system", Content: string(seedPrompt)}, {Role: "user", Content: q}})
				assert.Equal(t, 3, reqs[dg], "%s %s item %q: once per seed, for both methods", d, split, q)
			}
		}
	}
}

// Phase-only runs: validation alone without the optimization is refused
// before anything runs, naming the missing prerequisite and its file; then
// each phase runs from what the one before saved.
func TestOptimizerPhases(t *testing.T) {
	w := newOptWorkspace(t)
	validate := []string{"target=stage.seed_validation", "target=stage.incumbent_validation", "target=stage.select", "only"}
	test := []string{"target=stage.seed_test", "target=stage.deployed_test", "target=stage.result", "only"}
	out, code := w.phase(validate, "budget=40")
	assert.Equal(t, 2, code, out)
	assert.Regexp(t, `they need stage\.optimize\["simgepa/sums/single/sim/0"\]\s+\(it writes\s+runs/simgepa/sums/single/sim/0/optimization\.json`, out)
	assert.Contains(t, out, "nothing was run")
	_, err := os.Stat(filepath.Join(w.dir, "runs/simgepa/sums/single/sim/0/job.json"))
	assert.True(t, os.IsNotExist(err), "a refused phase runs nothing, not even the job's first node")

	out, code = w.phase([]string{"target=stage.optimize"}, "budget=40")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "2 ran, 0 cached")
	out, code = w.phase(test, "budget=40")
	assert.Equal(t, 2, code, out)
	assert.Regexp(t, `selection\.json`, out)
	out, code = w.phase(validate, "budget=40")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "3 ran, 2 cached")
	out, code = w.phase(test, "budget=40")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "3 ran, 5 cached")
	assert.Len(t, summaryRe.FindAllString(out, -1), 1)
	out, code = w.job("budget=40")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "0 ran, 8 cached")
}

func lineCount(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// kill -9 of cairn during the optimization (#28): the next apply, on this
// cache or another, refuses to restart it silently and names the exact
// command that starts it over; a fresh out folder works; --replace starts
// it over in its folder and keeps the interrupted attempt's charged-rollout
// record, set aside and named in job.json.
func TestOptimizerKilledDuringOptimize(t *testing.T) {
	w := newOptWorkspaceLatency(t, 20*time.Millisecond)
	const dir = "runs/simgepa/sums/single/sim/0"
	ledger := filepath.Join(w.dir, dir, "optimization/rollouts.jsonl")
	vars := []string{"--var", "method=simgepa", "--var", "dataset=sums", "--var", "topology=single", "--var", "model=sim", "--var", "budget=200"}
	w.killDuring(func() bool { return lineCount(ledger) >= 40 }, append([]string{"--target", "stage.optimize"}, vars...)...)
	charged := lineCount(ledger)
	require.Less(t, charged, 200, "killed before the optimization ended")
	t.Logf("killed with %d rollouts charged in the ledger", charged)
	_, err := os.Stat(filepath.Join(w.dir, dir, "optimization.json"))
	require.True(t, os.IsNotExist(err))

	out, code := w.job("budget=200")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "was interrupted")
	assert.Contains(t, out, "is never restarted silently")
	assert.Contains(t, out, "cairn apply pipelines/optimizer_grid.hcl --cache "+w.cache+" --no-color --var budget=200 --var dataset=sums --var method=simgepa --var model=sim --var seed=0 --var topology=single --replace 'stage.optimize[\"simgepa/sums/single/sim/0\"]'")
	assert.Equal(t, charged, lineCount(ledger), "the refused apply charged nothing")

	// cairn plan says so too, before anything runs, whatever the cache.
	for _, cache := range []string{w.cache, filepath.Join(t.TempDir(), "plan")} {
		plan := exec.Command(filepath.Join(bins, "cairn"), "plan", "pipelines/optimizer_grid.hcl", "--cache", cache, "--no-color",
			"--var", "method=simgepa", "--var", "dataset=sums", "--var", "topology=single", "--var", "model=sim", "--var", "budget=200")
		plan.Dir, plan.Env = w.dir, w.command().Env
		b, err := plan.CombinedOutput()
		require.NoError(t, err, "%s", b)
		assert.Regexp(t, `! stage\.optimize\["simgepa/sums/single/sim/0"\]\s+refused: the optimization in `+dir+` was interrupted`, string(b))
		assert.Contains(t, string(b), `--replace 'stage.optimize["simgepa/sums/single/sim/0"]' starts it over`)
		assert.NotRegexp(t, `\+ stage\.optimize\S*\s+run`, string(b))
		// What apply skips below the refused node, plan lists as
		// skipped, with apply's reason.
		assert.Regexp(t, `- stage\.select\["simgepa/sums/single/sim/0"\]\s+skipped: upstream stage\.optimize\["simgepa/sums/single/sim/0"\] failed`, string(b))
		assert.Regexp(t, `- stage\.seed_test\["simgepa/sums/single/sim/0"\]\s+skipped: upstream stage\.select\["simgepa/sums/single/sim/0"\] skipped`, string(b))
		assert.NotRegexp(t, `(?m)^\s*[+?=] stage\.(incumbent_validation|select|seed_test|deployed_test|result)\b`, string(b))
	}

	other := exec.Command(filepath.Join(bins, "cairn"), "apply", "pipelines/optimizer_grid.hcl", "--cache", filepath.Join(t.TempDir(), "other"), "--no-color",
		"--var", "method=simgepa", "--var", "dataset=sums", "--var", "topology=single", "--var", "model=sim", "--var", "budget=200")
	other.Dir, other.Env = w.dir, w.command().Env
	b, _ := other.CombinedOutput()
	assert.Contains(t, string(b), "was interrupted", "another cache: the out folder's marker refuses")
	assert.Contains(t, string(b), "fresh out folder")

	// The seed's remedy: a fresh out folder.
	out, code = w.job("budget=200", "out=runs/fresh")
	require.Equal(t, 0, code, out)
	var res map[string]any
	w.readJSON("runs/fresh/result.json", &res)
	assert.Equal(t, 200.0, res["charged_rollouts"])

	out, code = w.phase([]string{`replace=stage.optimize["simgepa/sums/single/sim/0"]`}, "budget=200")
	require.Equal(t, 0, code, out)
	var opt map[string]any
	w.readJSON(dir+"/optimization.json", &opt)
	assert.Equal(t, 200.0, opt["charged_rollouts"], "started over: the budget is whole again")
	assert.Equal(t, 200, lineCount(ledger))
	var job struct {
		EarlierAttempts []struct {
			Folder          string
			Interrupted     bool
			ChargedRollouts int `json:"charged_rollouts"`
		} `json:"earlier_attempts"`
	}
	w.readJSON(dir+"/job.json", &job)
	require.Len(t, job.EarlierAttempts, 1)
	assert.Equal(t, dir+"/optimization.attempt-1", job.EarlierAttempts[0].Folder)
	assert.True(t, job.EarlierAttempts[0].Interrupted)
	assert.Equal(t, charged, job.EarlierAttempts[0].ChargedRollouts)
	assert.Equal(t, charged, lineCount(filepath.Join(w.dir, dir, "optimization.attempt-1/rollouts.jsonl")), "the interrupted attempt's record is kept")
}

// kill -9 of cairn during validation: the next apply resumes it, sending
// only the items that were not stored.
func TestOptimizerKilledDuringValidate(t *testing.T) {
	w := newOptWorkspaceLatency(t, 150*time.Millisecond)
	out, code := w.phase([]string{"target=stage.optimize"}, "budget=20")
	require.Equal(t, 0, code, out)
	seedPrompt, err := os.ReadFile(filepath.Join(w.dir, "testdata/optimizer/bundles/seed/system.txt"))
	require.NoError(t, err)
	val := map[string]bool{}
	for _, q := range splitQuestions(t, filepath.Join(w.dir, "testdata/optimizer/data/sums/val.jsonl")) {
		val[simmodel.MessagesDigest([]simmodel.Message{{Role: "system", Content: string(seedPrompt)}, {Role: "user", Content: q}})] = true
	}
	valRequests := func() (n int, distinct int) {
		for d, c := range w.requests() {
			if val[d] {
				n += c
				distinct++
			}
		}
		return n, distinct
	}
	// Killed once some answers are committed to the item store (its log
	// grew), not only received: on a loaded machine a group commit may
	// come after the next requests are sent, and a kill before any
	// commit rightly sends every item again.
	storeLog := filepath.Join(w.cache, "items", "log")
	logSize := func() int64 {
		fi, err := os.Stat(storeLog)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	optimized := logSize()
	w.killDuring(func() bool { n, _ := valRequests(); return n >= 12 && logSize() > optimized }, "--var", "method=simgepa", "--var", "dataset=sums", "--var", "topology=single", "--var", "model=sim", "--var", "budget=20",
		"--target", "stage.seed_validation", "--only")
	before, _ := valRequests()
	require.Less(t, before, 30, "killed before the validation ended")

	out, code = w.phase([]string{"target=stage.seed_validation", "only"}, "budget=20")
	require.Equal(t, 0, code, out)
	after, distinct := valRequests()
	assert.Equal(t, 30, distinct, "every item evaluated")
	resent := after - before
	t.Logf("validation: %d requests before the kill, %d after it, %d items", before, resent, distinct)
	assert.Less(t, resent, 30, "resumed, not started over")
	// Sent twice at most: the 8 items in flight at the kill, and the
	// answers not yet committed (a group commit waits up to 2 ms, longer
	// on a loaded machine), as many again, for a slot is freed, and the
	// next item sent, by its answer.
	assert.LessOrEqual(t, after, 30+2*8, "at most the items in flight at the kill and the answers not yet committed are sent twice")
	assert.Regexp(t, `from the store`, out)
}

// A cell's runtime that needs its own install: its env reaches every
// process of the job, and an unusable environment fails the job's first
// node with class setup, showing the check's output, before any rollout.
func TestOptimizerCellEnvironment(t *testing.T) {
	w := newOptWorkspace(t)
	grid := `{
  "models": {"sim": "sim-model"},
  "methods": {"simgepa": {"command": ["python3", "testdata/optimizer/methods/sim_method.py", "--method", "simgepa"],
    "code": ["testdata/optimizer/methods/"], "cells": ["sums/single+sdk/sim", "sums/single+nosdk/sim"]}},
  "runtimes": {
    "single+sdk": {"env": {"SIM_SDK": "installed"}, "check": ["sh", "-c", "test \"$SIM_SDK\" = installed"]},
    "single+nosdk": {"check": ["sh", "-c", "echo 'the simulated SDK is not importable' >&2; exit 2"]}
  }
}`
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, "grid.json"), []byte(grid), 0o644))
	out, code := w.job("grid=grid.json", "topology=single", "framework=nosdk", "budget=20")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "the cell's environment is unusable")
	assert.Contains(t, out, "the simulated SDK is not importable")
	assert.Regexp(t, `stage\.job\["simgepa/sums/single\+nosdk/sim/0"\]  failed \(setup\): the cell's environment is unusable`, out)
	assert.Contains(t, out, "0 ran, 0 cached, 1 failed, 7 skipped", "nothing of the job runs after it")
	_, err := os.Stat(filepath.Join(w.dir, "runs/simgepa/sums/single+nosdk/sim/0/optimization"))
	assert.True(t, os.IsNotExist(err), "no rollout was charged")

	out, code = w.job("grid=grid.json", "topology=single", "framework=sdk", "budget=20")
	require.Equal(t, 0, code, out)
	var res map[string]any
	w.readJSON("runs/simgepa/sums/single+sdk/sim/0/result.json", &res)
	assert.Equal(t, "sums/single+sdk/sim", res["cell_id"])
}

// Rollouts that end as infrastructure failures (the endpoint answers 503,
// no retry) are counted and not charged: the method still gets exactly the
// budget charged.
func TestOptimizerInfraFailuresNotCharged(t *testing.T) {
	w := newOptWorkspaceModel(t, simmodel.Config{WrongRate: 0.25, FailRate: 0.2, Seed: 7})
	out, code := w.phase([]string{"target=stage.optimize"}, "budget=100", "rollout_retry_infra=0")
	require.Equal(t, 0, code, out)
	var opt map[string]any
	w.readJSON("runs/simgepa/sums/single/sim/0/optimization.json", &opt)
	charged, attempted, infra := opt["charged_rollouts"].(float64), opt["attempted_rollouts"].(float64), opt["infra_failures"].(float64)
	t.Logf("charged %v, attempted %v, infrastructure failures %v", charged, attempted, infra)
	assert.Equal(t, 100.0, charged)
	assert.Greater(t, infra, 0.0)
	assert.Equal(t, attempted, charged+infra)
	assert.Equal(t, 100, lineCount(filepath.Join(w.dir, "runs/simgepa/sums/single/sim/0/optimization/rollouts.jsonl")))
	assert.Regexp(t, `rollouts: charged 100/100, attempted \d+, infra-failures [1-9]`, out)

	// The retries are told in rollouts.log, which cairn show RUN lists
	// with the method's logs.
	runs, err := filepath.Glob(filepath.Join(w.cache, "runs", "2*", "journal"))
	require.NoError(t, err)
	require.NotEmpty(t, runs)
	run := filepath.Dir(runs[len(runs)-1]) // the latest run's folder
	logs, err := filepath.Glob(filepath.Join(run, "out", "*", "rollouts.log"))
	require.NoError(t, err)
	require.Len(t, logs, 1, "the optimization's rollouts.log")
	b, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	assert.Contains(t, string(b), "infrastructure failure")
	show, err := w.command("show", filepath.Base(run), "--cache", w.cache).Output()
	require.NoError(t, err)
	assert.Contains(t, string(show), logs[0], "cairn show RUN lists rollouts.log")
}

// A rollout worker that takes its bundle in its arguments ({bundle}) gets
// the workers of each bundle, kept for the bundle's later requests: as many
// starts as bundles, every rollout charged once.
func TestOptimizerWorkerPerBundle(t *testing.T) {
	w := newOptWorkspace(t)
	p := filepath.Join(w.dir, "pipelines/optimizer_grid.hcl")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	src := strings.Replace(string(b), `rollout_worker = ["python3", var.worker, "--bundle-system-prompt", "system.txt"]`,
		`rollout_worker = ["python3", var.worker, local.prompt, "{bundle}/system.txt"]`, 1)
	src = strings.Replace(src, `bundle_in_request   = true`, ``, 1)
	require.NotEqual(t, string(b), src, "the optimize stage's worker")
	require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	out, code := w.job("budget=100")
	require.Equal(t, 0, code, out)
	const dir = "runs/simgepa/sums/single/sim/0"
	ledger, err := os.ReadFile(filepath.Join(w.dir, dir, "optimization/rollouts.jsonl"))
	require.NoError(t, err)
	bundles := map[string]bool{}
	lines := strings.Split(strings.TrimSpace(string(ledger)), "\n")
	require.Len(t, lines, 100)
	for _, l := range lines {
		var e struct{ Bundle string }
		require.NoError(t, json.Unmarshal([]byte(l), &e))
		bundles[e.Bundle] = true
	}
	rec, err := w.command("show", `stage.optimize["simgepa/sums/single/sim/0"]`, "--cache", w.cache).Output()
	require.NoError(t, err)
	assert.Regexp(t, fmt.Sprintf(`"worker_starts": %d\b`, len(bundles)), string(rec))
	var res map[string]any
	w.readJSON(dir+"/result.json", &res)
	assert.Equal(t, 100.0, res["charged_rollouts"])
}

// A grid of two task models, each served by its own simulated server and
// named in the grid file's endpoints: every job's rollouts and evaluations
// reach its own model's server only (a server answers 404 for a model it
// does not serve, which would fail the job), and both models' jobs finish.
func TestOptimizerGridEndpointsPerModel(t *testing.T) {
	w := newOptWorkspace(t) // its server serves sim-model
	altLog := filepath.Join(t.TempDir(), "alt-requests.jsonl")
	f, err := os.Create(altLog)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	alt, err := simmodel.Start(simmodel.Config{WrongRate: 0.25, Models: []string{"alt-model"}, RequestLog: f}, "")
	require.NoError(t, err)
	t.Cleanup(func() { alt.Close() })
	grid := fmt.Sprintf(`{
  "models": {"sim": "sim-model", "alt": "alt-model"},
  "endpoints": {"sim": [%q], "alt": [%q]},
  "methods": {"simgepa": {"command": ["python3", "testdata/optimizer/methods/sim_method.py", "--method", "simgepa"],
    "code": ["testdata/optimizer/methods/"], "cells": ["sums/single/sim", "sums/single/alt"]}}
}`, w.url, alt.URL)
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, "grid.json"), []byte(grid), 0o644))
	cmd := exec.Command(filepath.Join(bins, "cairn"), "apply", "pipelines/optimizer_grid.hcl", "--cache", w.cache, "--no-color",
		"--var", "grid=grid.json", "--var", "seeds=[0]", "--var", "budget=20", "--var", "include_nonconformant=true")
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), "CAIRN_NO_FSYNC=1", "NO_COLOR=1", "TASK_ENDPOINTS=", "VLLM_BASE_URL=")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	for _, m := range []string{"sim", "alt"} {
		var res map[string]any
		w.readJSON("runs/simgepa/sums/single/"+m+"/0/result.json", &res)
		assert.Equal(t, 20.0, res["charged_rollouts"], m)
	}
	models := func(path string) map[string]int {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		out := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var e simmodel.LogEntry
			require.NoError(t, json.Unmarshal([]byte(line), &e))
			out[fmt.Sprintf("%s %d", e.Model, e.Status)]++
		}
		return out
	}
	simReqs, altReqs := models(w.reqLog), models(altLog)
	assert.Len(t, simReqs, 1, "the sim model's server saw only its model, answered 200: %v", simReqs)
	assert.Positive(t, simReqs["sim-model 200"])
	assert.Len(t, altReqs, 1, "the alt model's server saw only its model, answered 200: %v", altReqs)
	assert.Positive(t, altReqs["alt-model 200"])
}

// The out folder is the truth, whatever the cache holds: a job finished
// on one cache (its model answering one way) is not replaced by another
// cache's record of the same keys. Here the out folder is written on a
// fresh cache against a model that answers differently (its settings
// are in no key); the first cache's records are then not restored over
// it: the job's nodes take the folder's artifacts as they are, its
// evaluations' scores files too, beside the test.json made from them.
func TestOutFolderIsNotReplacedByAnotherCachesRecord(t *testing.T) {
	w := newOptWorkspace(t)
	const dir = "runs/simgepa/sums/single/sim/0"
	out, code := w.job("budget=20")
	require.Equal(t, 0, code, out)
	require.NoError(t, os.Rename(filepath.Join(w.dir, "runs"), filepath.Join(w.dir, "runs.first")))

	other, err := simmodel.Start(simmodel.Config{WrongRate: 0.9, Seed: 3}, "")
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })
	first, firstURL := w.cache, w.url
	w.cache, w.url = filepath.Join(t.TempDir(), "other-cache"), other.URL
	out, code = w.job("budget=20")
	require.Equal(t, 0, code, out)
	files := []string{"job.json", "optimization.json", "selection.json", "test.json", "result.json",
		"validation/seed_scores.jsonl", "validation/incumbent_scores.jsonl", "test/seed_scores.jsonl", "test/deployed_scores.jsonl"}
	written := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(w.dir, dir, f))
		require.NoError(t, err)
		written[f] = string(b)
	}
	firstResult, err := os.ReadFile(filepath.Join(w.dir, "runs.first", strings.TrimPrefix(dir, "runs/"), "result.json"))
	require.NoError(t, err)
	require.NotEqual(t, string(firstResult), written["result.json"], "the two models answered differently")

	w.cache, w.url = first, firstURL
	sent := w.requestCount()
	plan := w.command(append([]string{"plan"}, w.applyArgs(nil, "budget=20")[1:]...)...)
	b, err := plan.CombinedOutput()
	require.NoError(t, err, "%s", b)
	assert.Contains(t, string(b), "and not the cached record's (written by another apply or on another cache, or edited): the out folder is the truth, and the node takes it as it is")
	assert.Regexp(t, `stage\.seed_test\["simgepa/sums/single/sim/0"\] +run: its out folder holds `+dir+`/test/seed_scores\.jsonl, and not the cached record's .*: it is not needed \(needed = false\), so it evaluates nothing and leaves the file as it is`, string(b))
	out, code = w.job("budget=20")
	require.Equal(t, 0, code, out)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(w.dir, dir, f))
		require.NoError(t, err)
		assert.Equal(t, written[f], string(b), "%s is the out folder's, not the first cache's", f)
	}
	assert.Equal(t, sent, w.requestCount(), "nothing was evaluated again")
}

// A validation's scores file edited by hand in a job's out folder before
// its selection is not the job's figures: plan says the evaluation runs
// again and writes the file anew, and apply does, from the item store
// (no request), the edits gone.
func TestEditedScoresFileIsEvaluatedAgain(t *testing.T) {
	w := newOptWorkspace(t)
	const scores = "runs/sv2/validation/seed_scores.jsonl"
	flags := []string{"target=stage.optimize", "target=stage.seed_validation"}
	out, code := w.phase(flags, "budget=20", "out=runs/sv2")
	require.Equal(t, 0, code, out)
	path := filepath.Join(w.dir, scores)
	written, err := os.ReadFile(path)
	require.NoError(t, err)
	edited := strings.ReplaceAll(string(written), `"score":0`, `"score":1`)
	require.NotEqual(t, string(written), edited, "some item scored 0")
	require.NoError(t, os.WriteFile(path, []byte(edited), 0o644))
	sent := w.requestCount()

	plan := w.command(append([]string{"plan"}, w.applyArgs(flags, "budget=20", "out=runs/sv2")[1:]...)...)
	b, err := plan.CombinedOutput()
	require.NoError(t, err, "%s", b)
	assert.Regexp(t, `\+ stage\.seed_validation\["simgepa/sums/single/sim/0"\] +run: its out folder holds `+scores+`, and not the cached record's .*: it evaluates its items again \(those in the item store are taken from it\) and writes the file anew`, string(b))
	assert.NotContains(t, string(b), "takes it as it is")

	out, code = w.phase(flags, "budget=20", "out=runs/sv2")
	require.Equal(t, 0, code, out)
	again, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(written), string(again), "the hand-edited scores are not kept")
	assert.Equal(t, sent, w.requestCount(), "every item came from the item store")
}

// A finished job's result.json is kept by the next apply only when it is
// what the job writes from its test.json and its artifacts: one whose
// figures were edited (consistently with each other), or a test.json
// edited with its digest, is refused, not printed, cached and aggregated
// as the job's; restored, the job is kept again.
func TestEditedJobResultIsRefused(t *testing.T) {
	w := newOptWorkspace(t)
	const dir = "runs/simgepa/sums/single/sim/0"
	out, code := w.job("budget=20")
	require.Equal(t, 0, code, out)
	resPath, testPath := filepath.Join(w.dir, dir, "result.json"), filepath.Join(w.dir, dir, "test.json")
	origRes, err := os.ReadFile(resPath)
	require.NoError(t, err)
	origTest, err := os.ReadFile(testPath)
	require.NoError(t, err)
	var res map[string]any
	require.NoError(t, json.Unmarshal(origRes, &res))
	base, dep := res["baseline_mean"].(float64), res["deployed_mean"].(float64)

	edited := maps.Clone(res)
	edited["baseline_mean"], edited["delta_pp"] = base-0.25, 100*(dep-(base-0.25))
	b, err := json.Marshal(edited)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(resPath, b, 0o644))
	plan, _ := w.command(append([]string{"plan"}, w.applyArgs(nil, "budget=20")[1:]...)...).CombinedOutput()
	assert.Regexp(t, `! stage\.result\["simgepa/sums/single/sim/0"\] +refused: `+regexp.QuoteMeta(dir+"/result.json is not what this job writes from its test.json and its artifacts: baseline_mean is"), string(plan), "plan says what apply does")
	out, code = w.job("budget=20")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, dir+"/result.json is not what this job writes from its test.json and its artifacts")
	assert.Contains(t, out, fmt.Sprintf("baseline_mean is %s where it would be %s", mustJSON(t, base-0.25), mustJSON(t, base)))
	assert.NotContains(t, out, fmt.Sprintf(`"baseline_mean":%s`, mustJSON(t, base-0.25)), "the edited figure is not printed as the job's")

	// test.json edited, and its digest in result.json with it.
	var tf map[string]any
	require.NoError(t, json.Unmarshal(origTest, &tf))
	tf["seed"] = 7.0
	tb, err := json.MarshalIndent(tf, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(testPath, tb, 0o644))
	sum := sha256.Sum256(tb)
	edited = maps.Clone(res)
	edited["test_sha256"] = "sha256:" + hex.EncodeToString(sum[:])
	b, err = json.Marshal(edited)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(resPath, b, 0o644))
	out, code = w.job("budget=20")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, dir+"/test.json is not what this job writes: seed is 7 where it would be 0")

	require.NoError(t, os.WriteFile(testPath, origTest, 0o644))
	require.NoError(t, os.WriteFile(resPath, origRes, 0o644))
	out, code = w.job("budget=20")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, fmt.Sprintf(`"baseline_mean":%s`, mustJSON(t, base)))
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// A split file the job's evaluations cannot read (two test items with
// one id) is refused when the job is sealed: before the optimization
// spends its budget, not at the test evaluation after it.
func TestJobRefusesADuplicateIDInASplitBeforeOptimizing(t *testing.T) {
	w := newOptWorkspace(t)
	test := filepath.Join(w.dir, "testdata/optimizer/data/sums/test.jsonl")
	b, err := os.ReadFile(test)
	require.NoError(t, err)
	first, _, _ := strings.Cut(string(b), "\n")
	require.NoError(t, os.WriteFile(test, append(b, first+"\n"...), 0o644))
	lines := strings.Count(string(b), "\n") + 1
	var it struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(first), &it))

	out, code := w.job("budget=20")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, fmt.Sprintf("the job's test split cannot be evaluated: testdata/optimizer/data/sums/test.jsonl:1 and testdata/optimizer/data/sums/test.jsonl:%d have the same id %q", lines, it.ID))
	assert.Empty(t, w.requests(), "no rollout, no evaluation")
	assert.NoFileExists(t, filepath.Join(w.dir, "runs/simgepa/sums/single/sim/0/optimization.json"))
}

// A runtime's env (the grid file's runtimes: its install) shapes a job's
// results: it is sealed in job.json, so a finished job refuses a changed
// one, and it is in every item key, so a fresh out folder evaluates again
// rather than reusing answers made without it.
func TestRuntimeEnvIsSealedAndKeyed(t *testing.T) {
	w := newOptWorkspace(t)
	out, code := w.job("budget=20")
	require.Equal(t, 0, code, out)
	var job map[string]any
	w.readJSON("runs/simgepa/sums/single/sim/0/job.json", &job)
	assert.NotContains(t, job, "env", "no env: job.json as before")

	grid := filepath.Join(w.dir, "testdata/optimizer/grid.json")
	var g map[string]any
	b, err := os.ReadFile(grid)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &g))
	g["runtimes"] = map[string]any{"single": map[string]any{"env": map[string]any{"SIM_SDK": "v2"}}}
	b, err = json.MarshalIndent(g, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(grid, b, 0o644))

	out, code = w.job("budget=20")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, `env: the out folder's job is (none), this job is {"SIM_SDK":"v2"}`)

	out, code = w.job("budget=20", "out=runs/with-env")
	require.Equal(t, 0, code, out)
	// The two validations (and the two tests) share their items when the
	// seed bundle is the candidate, and run at once: between them every
	// item is asked in this run, none taken from the run without the env.
	evaluated := func(stage string) int {
		re := regexp.MustCompile(regexp.QuoteMeta(stage) + `\["[^"]*"\]  charged \d+, attempted \d+, infra-failures \d+; items (\d+)/(\d+): (\d+) evaluated`)
		n := 0
		for _, m := range re.FindAllStringSubmatch(out, -1) {
			if m[1] == m[2] {
				n, _ = strconv.Atoi(m[3])
			}
		}
		return n
	}
	assert.Equal(t, 30, evaluated("stage.seed_validation")+evaluated("stage.incumbent_validation"), "validation answers made without the env are not reused:\n%s", out)
	assert.Equal(t, 40, evaluated("stage.seed_test")+evaluated("stage.deployed_test"), "test answers made without the env are not reused:\n%s", out)
	w.readJSON("runs/with-env/job.json", &job)
	assert.Equal(t, map[string]any{"SIM_SDK": "v2"}, job["env"])
}

// The servers cairn starts for a job (serve = true) are sealed in its
// job.json: the same job applied again with a server run with other flags
// is refused, naming the servers, and never mixes the two servers'
// answers in one job's phases.
func TestServersAreSealedWithTheJob(t *testing.T) {
	w := newOptWorkspace(t)
	leases := t.TempDir()
	run := func(vars ...string) (string, int) {
		cmd := w.command(w.applyArgs(nil, append([]string{"serve=true", "budget=20"}, vars...)...)...)
		cmd.Env = append(cmd.Env, "CAIRN_GPUS=sim:6", "CAIRN_LEASE_DIR="+leases, "PATH="+bins+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		require.NoError(t, err)
		return string(out), 0
	}
	out, code := run()
	require.Equal(t, 0, code, out)
	var job map[string]any
	w.readJSON("runs/simgepa/sums/single/sim/0/job.json", &job)
	servers, ok := job["servers"].(map[string]any)
	require.True(t, ok, "job.json: %v", job)
	assert.Contains(t, servers, "task")
	assert.Contains(t, servers, "reflection")

	grid := filepath.Join(w.dir, "testdata/optimizer/grid.json")
	var g map[string]any
	b, err := os.ReadFile(grid)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &g))
	sim := g["servers"].(map[string]any)["sim"].(map[string]any)
	sim["run"] = append(sim["run"].([]any), "--wrong-rate", "0.6")
	b, err = json.MarshalIndent(g, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(grid, b, 0o644))

	out, code = run()
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "servers: the out folder's job is")
	assert.Contains(t, out, "--wrong-rate")
}

// An interrupted optimization applied again without --replace (serve =
// true) is refused before it starts, and so are the evaluations after it:
// no server is started for them (the reflection model, which only the
// optimization asks, is a model on four GPUs, minutes to load), while the
// seed bundle's validation, which runs, still has its server.
func TestRefusedOptimizationStartsNoServerForIt(t *testing.T) {
	w := newOptWorkspace(t)
	const job = "simgepa/sums/single/sim/0"
	apply := func(flags ...string) (string, int) {
		cmd := w.command(w.applyArgs(flags, "serve=true", "budget=20")...)
		cmd.Env = append(cmd.Env, "CAIRN_GPUS=sim:6", "CAIRN_LEASE_DIR="+t.TempDir(), "PATH="+bins+string(os.PathListSeparator)+os.Getenv("PATH"))
		b, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(b), ee.ExitCode()
		}
		require.NoError(t, err, "%s", b)
		return string(b), 0
	}
	marker := filepath.Join(w.dir, "runs", job, "optimization/started.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(marker), 0o755))
	require.NoError(t, os.WriteFile(marker, []byte(`{"cache":"elsewhere","node":"stage.optimize[\"`+job+`\"]","started":"2026-01-01T00:00:00Z"}`+"\n"), 0o644))

	out, code := apply()
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "was interrupted")
	assert.Contains(t, out, "stage.reflection_model  not started: nothing to evaluate")
	assert.NotContains(t, out, "stage.reflection_model  started")
	assert.Contains(t, out, `stage.task_model["sim"]  started`, "the seed bundle's validation needs it")

	// The seed bundle's validation done, what is left waits for the
	// refused optimization: no server starts.
	out, code = apply()
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "was interrupted")
	assert.Contains(t, out, "stage.reflection_model  not started: nothing to evaluate")
	assert.Contains(t, out, `stage.task_model["sim"]  not started: nothing to evaluate`)
	assert.NotContains(t, out, "started (pid", "a server process was started")

	// Replaced, the optimization runs, and the servers with it.
	out, code = apply(`replace=stage.optimize["` + job + `"]`)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "stage.reflection_model  started")
	assert.Contains(t, out, `stage.task_model["sim"]  started`)
}

// A finished job applied on a fresh cache (serve = true) takes its phases
// from its out folder: no model server is started and no request sent.
func TestFinishedJobOnAFreshCacheStartsNoServer(t *testing.T) {
	w := newOptWorkspace(t)
	leases := t.TempDir()
	run := func(cache string) string {
		args := w.applyArgs(nil, "serve=true", "budget=20")
		args[3] = cache // --cache CACHE
		cmd := w.command(args...)
		cmd.Env = append(cmd.Env, "CAIRN_GPUS=sim:6", "CAIRN_LEASE_DIR="+leases, "PATH="+bins+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	require.Equal(t, "--cache", w.applyArgs(nil)[2])
	out := run(w.cache)
	assert.Contains(t, out, `stage.task_model["sim"]  started`)
	requests := func() int {
		b, err := os.ReadFile(filepath.Join(w.dir, "requests.jsonl"))
		require.NoError(t, err)
		return strings.Count(string(b), "\n")
	}
	before := requests()
	require.Positive(t, before)

	out = run(filepath.Join(t.TempDir(), "fresh"))
	assert.Contains(t, out, `stage.task_model["sim"]  not started: nothing to evaluate`)
	assert.Contains(t, out, "stage.reflection_model  not started: nothing to evaluate")
	assert.Equal(t, before, requests(), "no request, not even a readiness check:\n%s", out)
}
