package llamacpp_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine/runlog"
)

// A workspace for llama.cpp's server as a serve stage: the tiny model, the
// repository's chat worker and a few questions.
type workspace struct {
	t     *testing.T
	dir   string
	cache string
}

func newWorkspace(t *testing.T, items int) *workspace {
	t.Helper()
	w := &workspace{t: t, dir: t.TempDir(), cache: t.TempDir()}
	require.NoError(t, os.MkdirAll(filepath.Join(w.dir, "models"), 0o755))
	tinyModel(t, filepath.Join(w.dir, "models"), 1)
	worker, err := os.ReadFile(filepath.Join(repoRoot(), "testdata", "workers", "chat_worker.py"))
	require.NoError(t, err)
	w.write("workers/chat_worker.py", string(worker))
	var b strings.Builder
	for i := range items {
		line, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("q%d", i), "question": fmt.Sprintf("What is %d plus %d?", i, 2*i+1), "answer": fmt.Sprint(3*i + 1)})
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

// pipeline is a serve stage running llama.cpp's server on the tiny model
// and two evaluate stages sharing it (their runtimes differ, so that each
// asks the server itself). llama-cpp-python's server has no /health: it
// loads the model before it listens, and readiness is proven by
// /v1/models and a chat completion.
func (w *workspace) pipeline(port int) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	src := fmt.Sprintf(`pipeline "llama" {}

stage "serve" "tiny" {
  run = [%s, "-m", "llama_cpp.server", "--model", "models/tiny.gguf", "--model_alias", "{model}",
         "--host", "127.0.0.1", "--port", "{port}", "--n_ctx", "256", "--n_threads", "1"]
  model         = "tiny-llama"
  weights       = "models/tiny.gguf"
  port          = %d
  ready         = { health = "/v1/models" }
  start_timeout = "5m"
}

stage "evaluate" "first" {
  worker        = ["python3", "workers/chat_worker.py"]
  items         = "data/items.jsonl"
  model         = "tiny-llama"
  runtime       = { pass = 1 }
  endpoints     = stage.tiny.endpoints
  max_in_flight = 2
  scores        = "out/first.jsonl"
}

stage "evaluate" "second" {
  worker        = ["python3", "workers/chat_worker.py"]
  items         = "data/items.jsonl"
  model         = "tiny-llama"
  runtime       = { pass = 2 }
  endpoints     = stage.tiny.endpoints
  max_in_flight = 2
  scores        = "out/second.jsonl"
}
`, q(python), port)
	w.write("main.hcl", src)
	return "main.hcl"
}

func (w *workspace) command(args ...string) *exec.Cmd {
	cmd := exec.Command(cairnBin, append(args, "--cache", w.cache, "--no-color")...)
	cmd.Dir = w.dir
	cmd.Env = e2etest.Env("CAIRN_NO_FSYNC=1", "CAIRN_GPUS=none", "CAIRN_LEASE_DIR="+filepath.Join(w.cache, "leases"))
	return cmd
}

func (w *workspace) apply(file string) (int, string) {
	w.t.Helper()
	return e2etest.Run(w.t, w.command("apply", file))
}

// runs lists the workspace's runs, oldest first.
func (w *workspace) runs() []*runlog.RunInfo {
	w.t.Helper()
	rs, err := runlog.List(w.cache)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(w.t, err)
	sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
	return rs
}

// serveRecords are the serve records of the newest run with the status.
func (w *workspace) serveRecords(status string) []runlog.Entry {
	rs := w.runs()
	if len(rs) == 0 {
		return nil
	}
	var out []runlog.Entry
	for _, e := range rs[len(rs)-1].Entries {
		if e.T == runlog.Serve && e.Status == status {
			out = append(out, e)
		}
	}
	return out
}

// scored reads a scores file: item id -> its answer (every line has one).
func (w *workspace) scored(rel string) map[string]string {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, rel))
	require.NoError(w.t, err)
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			ID      string            `json:"id"`
			Error   string            `json:"error"`
			Outputs map[string]string `json:"outputs"`
		}
		require.NoError(w.t, json.Unmarshal([]byte(l), &r), l)
		assert.Empty(w.t, r.Error, "item %s", r.ID)
		got[r.ID] = r.Outputs["answer"]
	}
	return got
}

var chatLine = regexp.MustCompile(`"POST /v1/chat/completions HTTP/1\.1" 200`)

// llama.cpp's server as a serve stage on the CPU: started, proven ready,
// shared by two evaluations (every item answered once for each, by the
// server: its own access log counts the requests), stopped when the second
// ends with no process left.
func TestLlamaServeStage(t *testing.T) {
	needLlama(t)
	const n = 5
	w := newWorkspace(t, n)
	code, out := w.apply(w.pipeline(e2etest.FreePort(t)))
	require.Equal(t, 0, code, out)

	first, second := w.scored("out/first.jsonl"), w.scored("out/second.jsonl")
	assert.Len(t, first, n)
	assert.Len(t, second, n)

	// Readiness came before the consumers' first request: the journal's
	// ready record precedes both evaluations' starts.
	rs := w.runs()
	es := rs[len(rs)-1].Entries
	ready, firstStart := -1, -1
	for i, e := range es {
		if e.T == runlog.Serve && e.Status == "ready" && ready < 0 {
			ready = i
		}
		if e.T == runlog.Started && strings.HasPrefix(e.Node, "stage.first") || e.T == runlog.Started && strings.HasPrefix(e.Node, "stage.second") {
			if firstStart < 0 {
				firstStart = i
			}
		}
	}
	require.GreaterOrEqual(t, ready, 0, "no ready record:\n%s", out)
	require.GreaterOrEqual(t, firstStart, 0, "no consumer started:\n%s", out)
	assert.Less(t, ready, firstStart, "the server was ready before a consumer started")

	// One server for both: its access log (uvicorn's, on its standard
	// output) has the readiness probe's completion and one per item of
	// each evaluation.
	readies := w.serveRecords("ready")
	require.Len(t, readies, 1)
	var logs []string
	require.NoError(t, filepath.WalkDir(w.cache, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "replica1.out" {
			logs = append(logs, p)
		}
		return err
	}))
	require.Len(t, logs, 1, "the replica's log")
	b, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	assert.Len(t, chatLine.FindAll(b, -1), 2*n+1, "the server's access log:\n%s", b)

	// Stopped, with no process left.
	stopped := w.serveRecords("stopped")
	require.Len(t, stopped, 1)
	pid := readies[0].PID
	require.Positive(t, pid)
	assert.True(t, e2etest.ProcGone(pid), "the server (pid %d) still runs after apply", pid)

	// Every evaluation in the store: a second apply starts no server.
	code, out = w.apply("main.hcl")
	require.Equal(t, 0, code, out)
	assert.Empty(t, w.serveRecords("ready"), "no server started for evaluations all in the store:\n%s", out)
}

// kill -9 of cairn while llama.cpp's server serves: the server dies with it
// (checked by pid), and the next apply starts one afresh and completes.
func TestLlamaServeKilledCairn(t *testing.T) {
	needLlama(t)
	const n = 3
	w := newWorkspace(t, n)
	file := w.pipeline(e2etest.FreePort(t))
	cmd := w.command("apply", file)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	var pid int
	e2etest.WaitFor(t, "the server to be ready", 5*time.Minute, func() bool {
		if rs := w.serveRecords("ready"); len(rs) > 0 {
			pid = rs[0].PID
			return true
		}
		return false
	})
	require.Positive(t, pid)
	require.False(t, e2etest.ProcGone(pid), "the server runs once ready")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	e2etest.WaitFor(t, fmt.Sprintf("the server (pid %d) to end with cairn", pid), time.Minute, func() bool { return e2etest.ProcGone(pid) })

	code, text := w.apply(file)
	require.Equal(t, 0, code, "%s\n(first apply:\n%s)", text, out.String())
	assert.Len(t, w.scored("out/first.jsonl"), n)
	assert.Len(t, w.scored("out/second.jsonl"), n)
	again := w.serveRecords("ready")
	require.Len(t, again, 1)
	assert.NotEqual(t, pid, again[0].PID, "a new server")
	assert.True(t, e2etest.ProcGone(again[0].PID))
}
