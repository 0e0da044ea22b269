package pipelines_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/sim/simmodel"
)

// The model-call cache driven by real clients, none written here:
// lm-evaluation-harness, Inspect and the official OpenAI Node.js client,
// installed pinned under bin/clients by scripts/model-cache-clients.sh.
// Without a registry the tests skip with the reason; with
// CAIRN_REQUIRE_MODEL_CLIENTS=1 (CI) they fail instead.

// modelClient installs (once) and returns the folder of one client.
func modelClient(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("real clients: installs and runs them")
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "model-cache-clients.sh"), name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("the %s client could not be installed: %v\n%s", name, err, out)
		if os.Getenv("CAIRN_REQUIRE_MODEL_CLIENTS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := os.Getenv("CAIRN_CLIENTS_DIR")
	if dir == "" {
		dir = filepath.Join(root, "bin", "clients")
	}
	return filepath.Join(dir, name)
}

// copyTree copies the repository's pipelines files into the workspace.
func (w *workspace) copyFromRepo(rels ...string) {
	w.t.Helper()
	for _, rel := range rels {
		src := filepath.Join("..", rel)
		require.NoError(w.t, filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			r, _ := filepath.Rel("..", p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			w.write(r, string(b))
			return nil
		}))
	}
}

func lmEvalArgs(endpoint, python, mode, out string, conc int) []string {
	return []string{"apply", "pipelines/lm_eval_cached.hcl", "--var", "endpoint=" + endpoint, "--var", "python=" + python,
		"--var", "mode=" + mode, "--var", "out=" + out, "--var", "num_concurrent=" + strconv.Itoa(conc)}
}

// lmEvalOutputs reads the newest samples file (without its timestamp) and
// the results' scores of an lm-eval output folder.
func lmEvalOutputs(t *testing.T, dir string) (samples string, scores string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "sim-model", "samples_*.jsonl"))
	require.NotEmpty(t, files, "no samples file in %s", dir)
	sort.Strings(files)
	b, err := os.ReadFile(files[len(files)-1])
	require.NoError(t, err)
	res, _ := filepath.Glob(filepath.Join(dir, "sim-model", "results_*.json"))
	require.NotEmpty(t, res)
	sort.Strings(res)
	var r struct {
		Results json.RawMessage `json:"results"`
	}
	rb, err := os.ReadFile(res[len(res)-1])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(rb, &r))
	return string(b), string(r.Results)
}

var startedPid = regexp.MustCompile(`stage\.\S+\s+started \(pid (\d+)\)`)

// applyUntil runs cairn apply and kills it with -9 (cairn and the harness's
// process group) once the model has received target requests; it returns
// false when the apply ended first.
func (w *workspace) applyUntil(sim *simmodel.Running, target int, args []string) bool {
	w.t.Helper()
	cmd := w.command(args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	require.NoError(w.t, cmd.Start())
	pids := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := startedPid.FindStringSubmatch(sc.Text()); m != nil {
				n, _ := strconv.Atoi(m[1])
				pids <- n
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	harness := 0
	for {
		select {
		case err := <-done:
			require.NoError(w.t, err, "apply failed before the kill")
			return false
		case harness = <-pids:
		case <-time.After(5 * time.Millisecond):
		}
		if sim.ChatRequests() >= target {
			break
		}
	}
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	if harness > 0 {
		_ = syscall.Kill(-harness, syscall.SIGKILL)
	}
	<-done
	return true
}

func TestLMEvalThroughModelCacheResumesAfterKill9(t *testing.T) {
	venv := modelClient(t, "lmeval")
	python := filepath.Join(venv, "bin", "python")
	sim, err := simmodel.Start(simmodel.Config{Latency: 20 * time.Millisecond}, "")
	require.NoError(t, err)
	defer sim.Close()

	// The uninterrupted run, on a cache of its own: the distinct requests.
	ref := newWorkspace(t, "sim:0")
	ref.copyFromRepo("pipelines/model_cache", "pipelines/lm_eval_cached.hcl")
	out, code := ref.run(lmEvalArgs(sim.URL, python, "completions", "out/lm", 1)...)
	require.Equal(t, 0, code, out)
	_, distinct := cacheFigures(t, out)
	require.Equal(t, 48, distinct, "12 items of 4 choices: one loglikelihood request each")
	require.Equal(t, distinct, sim.ChatRequests())
	refSamples, refScores := lmEvalOutputs(t, filepath.Join(ref.dir, "out/lm"))
	require.Contains(t, refScores, `"acc,none": 1.0`)

	// kill -9 at random points, then apply to the end.
	kills := 3
	if v, err := strconv.Atoi(os.Getenv("CAIRN_MODEL_CACHE_KILLS")); err == nil && v > 0 {
		kills = v
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 33))
	t.Logf("kill points drawn with seed %d", seed)
	w := newWorkspace(t, "sim:0")
	w.copyFromRepo("pipelines/model_cache", "pipelines/lm_eval_cached.hcl")
	base := sim.ChatRequests()
	killed := 0
	for k := range kills {
		sent := sim.ChatRequests() - base
		if sent >= distinct-1 {
			break
		}
		// A random point in the next stretch, sized so that every kill
		// finds requests left to kill between.
		stretch := max(1, 2*(distinct-1-sent)/(kills-k))
		target := base + sent + 1 + rng.IntN(min(stretch, distinct-1-sent))
		if w.applyUntil(sim, target, lmEvalArgs(sim.URL, python, "completions", "out/lm", 1)) {
			killed++
		}
	}
	out, code = w.run(lmEvalArgs(sim.URL, python, "completions", "out/lm", 1)...)
	require.Equal(t, 0, code, out)
	forwarded := sim.ChatRequests() - base
	t.Logf("%d kills: %d requests reached the model for %d distinct", killed, forwarded, distinct)
	require.LessOrEqual(t, forwarded, distinct+killed*1, "more forwarded than the distinct requests plus one in flight per kill")
	require.GreaterOrEqual(t, forwarded, distinct)
	samples, scores := lmEvalOutputs(t, filepath.Join(w.dir, "out/lm"))
	require.Equal(t, refSamples, samples, "samples differ from the uninterrupted run's")
	require.Equal(t, refScores, scores)

	// Another GPU count for the harness (num_concurrent 4): nothing reaches
	// the model.
	before := sim.ChatRequests()
	out, code = w.run(lmEvalArgs(sim.URL, python, "completions", "out/lm4", 4)...)
	require.Equal(t, 0, code, out)
	fromStore, fwd := cacheFigures(t, out)
	require.Equal(t, [2]int{distinct, 0}, [2]int{fromStore, fwd}, out)
	require.Equal(t, before, sim.ChatRequests())
	samples4, scores4 := lmEvalOutputs(t, filepath.Join(w.dir, "out/lm4"))
	require.Equal(t, refSamples, samples4)
	require.Equal(t, refScores, scores4)
}

func TestLMEvalChatThroughModelCache(t *testing.T) {
	venv := modelClient(t, "lmeval")
	python := filepath.Join(venv, "bin", "python")
	sim, err := simmodel.Start(simmodel.Config{}, "")
	require.NoError(t, err)
	defer sim.Close()
	w := newWorkspace(t, "sim:0")
	w.copyFromRepo("pipelines/model_cache", "pipelines/lm_eval_cached.hcl")
	out, code := w.run(lmEvalArgs(sim.URL, python, "chat", "out/a", 1)...)
	require.Equal(t, 0, code, out)
	fromStore, fwd := cacheFigures(t, out)
	require.Equal(t, [2]int{0, 12}, [2]int{fromStore, fwd}, out)
	a, scoresA := lmEvalOutputs(t, filepath.Join(w.dir, "out/a"))
	require.Contains(t, scoresA, `"exact_match,none": 1.0`, "the simulated model answers every sum rightly")
	out, code = w.run(lmEvalArgs(sim.URL, python, "chat", "out/b", 2)...)
	require.Equal(t, 0, code, out)
	fromStore, fwd = cacheFigures(t, out)
	require.Equal(t, [2]int{12, 0}, [2]int{fromStore, fwd}, out)
	b, scoresB := lmEvalOutputs(t, filepath.Join(w.dir, "out/b"))
	require.Equal(t, a, b)
	require.Equal(t, scoresA, scoresB)
	require.Equal(t, 12, sim.ChatRequests())
}

func TestOpenAINodeClientThroughModelCache(t *testing.T) {
	mods := filepath.Join(modelClient(t, "node"), "node_modules")
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	sim, err := simmodel.Start(simmodel.Config{}, "")
	require.NoError(t, err)
	defer sim.Close()
	w := newWorkspace(t, "sim:0")
	w.copyFromRepo("pipelines/model_cache/node")
	pipe := func(stage string) string {
		return fmt.Sprintf(`stage "command" %q {
  run         = ["node", "pipelines/model_cache/node/client.cjs", "%s.json"]
  outputs     = ["%s.json"]
  env         = { NODE_PATH = %q }
  model_cache = { endpoints = [%q] }
}
`, stage, stage, stage, mods, sim.URL)
	}
	w.write("a.hcl", pipe("first"))
	out, code := w.run("apply", "a.hcl")
	require.Equal(t, 0, code, out)
	_, forwarded := cacheFigures(t, out)
	require.Equal(t, 13, forwarded, out)
	requests := sim.ChatRequests()
	w.write("b.hcl", pipe("second"))
	out, code = w.run("apply", "b.hcl")
	require.Equal(t, 0, code, out)
	fromStore, forwarded := cacheFigures(t, out)
	require.Equal(t, [2]int{13, 0}, [2]int{fromStore, forwarded}, out)
	require.Equal(t, requests, sim.ChatRequests())

	read := func(name string) map[string]any {
		b, err := os.ReadFile(filepath.Join(w.dir, name))
		require.NoError(t, err)
		var v map[string]any
		require.NoError(t, json.Unmarshal(b, &v))
		return v
	}
	a, b := read("first.json"), read("second.json")
	require.NotEqual(t, a["base_url"], b["base_url"], "each process has its own cache endpoint")
	delete(a, "base_url")
	delete(b, "base_url")
	require.Equal(t, a, b, "answers differ on replay")
	require.Contains(t, a["completions"], `"token_logprobs":[null,`)
	require.Contains(t, a["chat_stream"], "data: [DONE]")
	require.NotEmpty(t, a["chat_stream_text"])
	require.NotEmpty(t, a["completions_stream_text"])
	require.EqualValues(t, 8, a["embedding_dims"])
	samples, _ := a["samples"].([]any)
	distinct := map[any]bool{}
	for _, s := range samples {
		distinct[s] = true
	}
	require.Len(t, distinct, 5, "5 samples at temperature 1 are 5 answers: %v", samples)
}

// Two harness processes on one cache, at once: each distinct request
// reaches the model once.
func TestTwoLMEvalRunsShareTheModelCache(t *testing.T) {
	venv := modelClient(t, "lmeval")
	python := filepath.Join(venv, "bin", "python")
	sim, err := simmodel.Start(simmodel.Config{Latency: 100 * time.Millisecond}, "")
	require.NoError(t, err)
	defer sim.Close()
	cache := t.TempDir()
	var ws []*workspace
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for i := range 2 {
		// Two settings of the harness (num_concurrent 1 and 2): two nodes,
		// which cairn runs at once; the same requests.
		w := newWorkspace(t, "sim:0")
		w.copyFromRepo("pipelines/model_cache", "pipelines/lm_eval_cached.hcl")
		cmd := w.command(append([]string{"--cache", cache}, lmEvalArgs(sim.URL, python, "chat", "out/lm", i+1)...)...)
		var b strings.Builder
		cmd.Stdout, cmd.Stderr = &b, &b
		require.NoError(t, cmd.Start())
		ws, cmds, outs = append(ws, w), append(cmds, cmd), append(outs, &b)
	}
	forwarded := 0
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait(), outs[i].String())
		_, f := cacheFigures(t, outs[i].String())
		forwarded += f
	}
	require.Equal(t, 12, sim.ChatRequests(), "a request reached the model twice")
	require.Equal(t, 12, forwarded)
	a, _ := lmEvalOutputs(t, filepath.Join(ws[0].dir, "out/lm"))
	b, _ := lmEvalOutputs(t, filepath.Join(ws[1].dir, "out/lm"))
	require.Equal(t, a, b)
}

func TestInspectThroughModelCache(t *testing.T) {
	venv := modelClient(t, "inspect")
	sim, err := simmodel.Start(simmodel.Config{WrongRate: 0.25}, "")
	require.NoError(t, err)
	defer sim.Close()
	w := newWorkspace(t, "sim:0")
	w.copyFromRepo("pipelines/model_cache/inspect", "pipelines/model_cache/lm_eval/arith.jsonl", "pipelines/inspect_cached.hcl")
	apply := func(out string) (int, int) {
		o, code := w.run("apply", "pipelines/inspect_cached.hcl", "--var", "endpoint="+sim.URL,
			"--var", "inspect="+filepath.Join(venv, "bin", "inspect"), "--var", "out="+out)
		require.Equal(t, 0, code, o)
		return cacheFigures(t, o)
	}
	imported := func(dir string) string {
		logs, _ := filepath.Glob(filepath.Join(w.dir, dir, "*.eval"))
		require.Len(t, logs, 1)
		o, code := w.run("import", "inspect", logs[0])
		require.Equal(t, 0, code, o)
		return o
	}
	fromStore, forwarded := apply("out/a")
	require.Equal(t, [2]int{0, 12}, [2]int{fromStore, forwarded})
	a := imported("out/a")
	require.Equal(t, 12, strings.Count(a, `"id":"arith-`), a)
	fromStore, forwarded = apply("out/b")
	require.Equal(t, [2]int{12, 0}, [2]int{fromStore, forwarded})
	require.Equal(t, 12, sim.ChatRequests())
	require.Equal(t, a, imported("out/b"), "the replayed run's items differ")
}
