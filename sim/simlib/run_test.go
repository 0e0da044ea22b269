package simlib

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var fixedNow = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// workdir is a repository-like directory holding submissions/me/<name>.json.
type workdir struct {
	t   *testing.T
	dir string
}

func newWorkdir(t *testing.T) *workdir {
	return &workdir{t: t, dir: t.TempDir()}
}

// config writes submissions/me/<name>.json and returns its relative path.
func (w *workdir) config(name, content string) string {
	rel := filepath.Join("submissions", "me", name+".json")
	p := filepath.Join(w.dir, rel)
	require.NoError(w.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(w.t, os.WriteFile(p, []byte(content), 0o644))
	return rel
}

type runResult struct {
	Outcome
	stdout, stderr string
}

func (w *workdir) run(ctx context.Context, program string, env map[string]string, args ...string) runResult {
	var stdout, stderr bytes.Buffer
	out := Run(ctx, program, Env{
		Args:   args,
		Stdout: &stdout,
		Stderr: &stderr,
		Getenv: func(k string) string { return env[k] },
		Now:    func() time.Time { return fixedNow },
		Dir:    w.dir,
		Pid:    4242,
	})
	return runResult{Outcome: out, stdout: stdout.String(), stderr: stderr.String()}
}

func (w *workdir) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(w.dir, rel))
	return err == nil
}

func (w *workdir) readJSON(rel string, v any) {
	data, err := os.ReadFile(filepath.Join(w.dir, rel))
	require.NoError(w.t, err)
	require.NoError(w.t, json.Unmarshal(data, v))
}

func (w *workdir) logRecords(rel string) []RunLogRecord {
	f, err := os.Open(filepath.Join(w.dir, rel))
	require.NoError(w.t, err)
	defer f.Close()
	var recs []RunLogRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r RunLogRecord
		require.NoError(w.t, json.Unmarshal(sc.Bytes(), &r), "log line %q", sc.Text())
		recs = append(recs, r)
	}
	require.NoError(w.t, sc.Err())
	return recs
}

const fast = `"sim": {"duration_ms": 0}`

func gpu(ids string) map[string]string { return map[string]string{"CUDA_VISIBLE_DEVICES": ids} }

func TestPreflight(t *testing.T) {
	w := newWorkdir(t)
	tests := []struct {
		name, content string
		code          int
		stderr        string
	}{
		{"ok", `{"vortex_topk_val": 2048, "vortex_topk_ratio": 0.1, ` + fast + `}`, ExitOK, ""},
		{"bad ratio", `{"vortex_topk_val": 2048, "vortex_topk_ratio": 1.5, ` + fast + `}`, ExitFail, "vortex_topk_ratio must be in (0, 1], got 1.5"},
		{"bad json", `{"vortex_topk_val": 2048,`, ExitFail, "not valid JSON"},
		{"preflight_error", `{"vortex_topk_val": 2048, "vortex_topk_ratio": 0.1, "sim": {"duration_ms": 0, "preflight_error": "indexer: block size 7 is not a power of two"}}`, ExitFail, "indexer: block size 7 is not a power of two"},
		{"crash here", `{"vortex_topk_val": 8, "vortex_topk_ratio": 0.1, "sim": {"duration_ms": 0, "crash": true}}`, ExitCrash, "RuntimeError: simulated crash in preflight"},
		{"crash elsewhere", `{"vortex_topk_val": 8, "vortex_topk_ratio": 0.1, "sim": {"duration_ms": 0, "crash": true, "stages": ["aime24"]}}`, ExitOK, ""},
		{"exit code", `{"vortex_topk_val": 8, "vortex_topk_ratio": 0.1, "sim": {"duration_ms": 0, "exit_code": 9}}`, 9, "sim.exit_code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := w.config(strings.ReplaceAll(tt.name, " ", "_"), tt.content)
			// The preflight needs no GPU.
			r := w.run(context.Background(), Preflight, nil, cfg)
			assert.Equal(t, tt.code, r.Code, "stderr: %s", r.stderr)
			assert.Zero(t, r.Signal)
			if tt.stderr == "" {
				assert.Empty(t, r.stderr)
				assert.Contains(t, r.stdout, cfg+": ok")
			} else {
				assert.Contains(t, r.stderr, tt.stderr)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		r := w.run(context.Background(), Preflight, nil, "submissions/me/nope.json")
		assert.Equal(t, ExitFail, r.Code)
		assert.Contains(t, r.stderr, "no such file")
	})
}

func TestUsage(t *testing.T) {
	w := newWorkdir(t)
	cfg := w.config("v", `{"vortex_topk_val": 1, "vortex_topk_ratio": 1, `+fast+`}`)
	tests := []struct {
		program string
		args    []string
	}{
		{Preflight, nil},
		{Preflight, []string{cfg, cfg}},
		{Preflight, []string{"--help"}},
		{Ruler, nil},
		{Ruler, []string{cfg}},
		{Ruler, []string{"--config", cfg, "extra"}},
		{AIME24, []string{"--cfg", cfg}},
		{AIME24, []string{"-h"}},
	}
	for _, tt := range tests {
		r := w.run(context.Background(), tt.program, gpu("0"), tt.args...)
		assert.Equal(t, ExitUsage, r.Code, "%s %v", tt.program, tt.args)
		assert.Contains(t, r.stderr, "usage: "+tt.program, "%s %v", tt.program, tt.args)
		assert.Contains(t, r.stderr, "SIMULATED", "the usage says it is a simulation")
	}
	r := w.run(context.Background(), "train", nil)
	assert.Equal(t, ExitUsage, r.Code)
	assert.Contains(t, r.stderr, `unknown program "train"`)
}

func TestRuler(t *testing.T) {
	w := newWorkdir(t)
	content := `{"vortex_topk_val": 2048, "vortex_topk_ratio": 0.2, ` + fast + `}`
	cfgPath := w.config("batch_a_id0", content)
	cfg, err := ParseConfig([]byte(content))
	require.NoError(t, err)

	// Both flag spellings the Python tools accept.
	for _, args := range [][]string{{"--config", cfgPath}, {"--config=" + cfgPath}} {
		r := w.run(context.Background(), Ruler, gpu("3"), args...)
		require.Equal(t, ExitOK, r.Code, r.stderr)
		assert.Contains(t, r.stdout, "CUDA_VISIBLE_DEVICES=3: 1 device(s): 3")

		var res RulerResult
		w.readJSON("summary_ruler_submissions/me/batch_a_id0/latest.json", &res)
		assert.Equal(t, RulerResult{
			Name:        "batch_a_id0",
			Config:      cfgPath,
			ContentHash: cfg.ContentHash,
			Accuracy:    RulerAccuracy(cfg),
			NumExamples: RulerExamples,
			GPU:         "3",
			Simulated:   true,
		}, res)
	}
	entries, err := os.ReadDir(filepath.Join(w.dir, "summary_ruler_submissions/me/batch_a_id0"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "only latest.json, no temporary left behind")

	// A config the engine rejects fails before any GPU work.
	bad := w.config("bad", `{"vortex_topk_val": 0, "vortex_topk_ratio": 0.2}`)
	r := w.run(context.Background(), Ruler, gpu("0"), "--config", bad)
	assert.Equal(t, ExitFail, r.Code)
	assert.Contains(t, r.stderr, "ValueError: simlib: invalid config: vortex_topk_val must be > 0")
	assert.False(t, w.exists("summary_ruler_submissions/me/bad"))

	// A config outside submissions/ has no result directory.
	other := "elsewhere.json"
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, other), []byte(content), 0o644))
	r = w.run(context.Background(), Ruler, gpu("0"), "--config", other)
	assert.Equal(t, ExitFail, r.Code)
	assert.Contains(t, r.stderr, "not a submissions/<tag>/<name>.json file")
}

func TestNoGPU(t *testing.T) {
	w := newWorkdir(t)
	cfg := w.config("v", `{"vortex_topk_val": 64, "vortex_topk_ratio": 0.5, `+fast+`}`)
	for _, program := range []string{Ruler, AIME24} {
		for _, env := range []map[string]string{nil, gpu(""), gpu(" "), gpu("-1"), gpu("-1,0")} {
			r := w.run(context.Background(), program, env, "--config", cfg)
			assert.Equal(t, ExitFail, r.Code, "%s %v", program, env)
			assert.Contains(t, r.stderr, "no GPU visible")
		}
	}
	assert.False(t, w.exists("summary_submissions"))
	assert.False(t, w.exists("summary_ruler_submissions"))

	r := w.run(context.Background(), AIME24, gpu("1,3,-1,2"), "--config", cfg)
	require.Equal(t, ExitOK, r.Code, r.stderr)
	assert.Contains(t, r.stdout, "CUDA_VISIBLE_DEVICES=1,3,-1,2: 2 device(s): 1, 3", "devices after -1 are hidden, as with CUDA")
}

func TestAIME24(t *testing.T) {
	w := newWorkdir(t)
	content := `{"vortex_topk_val": 2048, "vortex_topk_ratio": 0.1, ` + fast + `}`
	cfgPath := w.config("batch_a_id2", content)
	cfg, err := ParseConfig([]byte(content))
	require.NoError(t, err)

	r := w.run(context.Background(), AIME24, gpu("5"), "--config", cfgPath)
	require.Equal(t, ExitOK, r.Code, r.stderr)

	want := AIME24Result{
		Name:        "batch_a_id2",
		Config:      cfgPath,
		ContentHash: cfg.ContentHash,
		Metrics:     AIME24Metrics(cfg),
		GPU:         "5",
		Simulated:   true,
	}
	var latest, stamped AIME24Result
	w.readJSON("summary_submissions/me/batch_a_id2/latest.json", &latest)
	w.readJSON("summary_submissions/me/batch_a_id2/20260314T150926Z__"+cfg.ContentHash[:12]+".json", &stamped)
	assert.Equal(t, want, latest)
	assert.Equal(t, want, stamped)

	// The file carries the seed's key names.
	var raw map[string]any
	w.readJSON("summary_submissions/me/batch_a_id2/latest.json", &raw)
	for _, k := range []string{"name", "content_hash", "mean@16", "pass@16", "throughput", "e2e_time", "gpu"} {
		assert.Contains(t, raw, k)
	}
	assert.Equal(t, true, raw["simulated"])
}

func TestFailureModes(t *testing.T) {
	tests := []struct {
		name       string
		sim        string
		code       int
		stderr     string
		hasResults bool
	}{
		{"crash", `"crash": true`, ExitCrash, "Traceback (most recent call last):", false},
		{"oom", `"oom": true`, ExitFail, OOMMessage, false},
		{"exit code after the work", `"exit_code": 7`, 7, "(sim.exit_code)", true},
		{"failure for another stage", `"crash": true, "oom": true, "stages": ["ruler"]`, ExitOK, "", true},
		{"failure for this stage", `"oom": true, "stages": ["ruler", "aime24"]`, ExitFail, OOMMessage, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkdir(t)
			cfg := w.config("v", `{"vortex_topk_val": 64, "vortex_topk_ratio": 0.5, "sim": {"duration_ms": 0, `+tt.sim+`}}`)
			r := w.run(context.Background(), AIME24, gpu("0"), "--config", cfg)
			assert.Equal(t, tt.code, r.Code, r.stderr)
			assert.Zero(t, r.Signal)
			if tt.stderr != "" {
				assert.Contains(t, r.stderr, tt.stderr)
			} else {
				assert.Empty(t, r.stderr)
			}
			assert.Equal(t, tt.hasResults, w.exists("summary_submissions/me/v/latest.json"))
		})
	}
}

func TestHangEndsOnSignal(t *testing.T) {
	w := newWorkdir(t)
	cfg := w.config("v", `{"vortex_topk_val": 64, "vortex_topk_ratio": 0.5, "sim": {"duration_ms": 0, "hang": true}}`)
	env := gpu("2")
	env["SIM_RUN_LOG"] = "runs.log"

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		ctx, cancel := context.WithCancelCause(context.Background())
		hanging := make(chan struct{})
		var stderr bytes.Buffer
		done := make(chan Outcome)
		go func() {
			done <- Run(ctx, AIME24, Env{
				Args:   []string{"--config", cfg},
				Stdout: &lineWatch{substr: "hanging until a signal", seen: hanging},
				Stderr: &stderr,
				Getenv: func(k string) string { return env[k] },
				Dir:    w.dir,
			})
		}()
		<-hanging // the run is past its work, in the hang
		cancel(&SignalError{Signal: sig})
		r := <-done
		assert.Contains(t, stderr.String(), sig.String())
		assert.Equal(t, sig, r.Signal)
		assert.Equal(t, 128+int(sig), r.Code)
	}
	assert.False(t, w.exists("summary_submissions/me/v"))

	recs := w.logRecords("runs.log")
	require.Len(t, recs, 2)
	assert.Equal(t, "terminated", recs[0].Signal)
	assert.Equal(t, "interrupt", recs[1].Signal)
	for _, rec := range recs {
		assert.Equal(t, -1, rec.ExitCode)
		assert.Equal(t, "2", rec.CUDAVisibleDevices)
	}

	// A long sleep is cut short the same way.
	slow := w.config("slow", `{"vortex_topk_val": 64, "vortex_topk_ratio": 0.5, "sim": {"duration_ms": 3600000}}`)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&SignalError{Signal: syscall.SIGTERM})
	r := w.run(ctx, Ruler, env, "--config", slow)
	assert.Equal(t, syscall.SIGTERM, r.Signal)
	assert.False(t, w.exists("summary_ruler_submissions/me/slow"))
}

func TestRunLog(t *testing.T) {
	w := newWorkdir(t)
	ok := w.config("ok", `{"vortex_topk_val": 64, "vortex_topk_ratio": 0.5, `+fast+`}`)
	crash := w.config("crash", `{"vortex_topk_val": 64, "vortex_topk_ratio": 0.5, "sim": {"duration_ms": 0, "crash": true}}`)
	env := gpu("1")
	env["SIM_RUN_LOG"] = "log/runs.jsonl"
	require.NoError(t, os.MkdirAll(filepath.Join(w.dir, "log"), 0o755))

	w.run(context.Background(), Preflight, env, ok)
	w.run(context.Background(), Ruler, env, "--config", ok)
	w.run(context.Background(), AIME24, env, "--config", crash)

	recs := w.logRecords("log/runs.jsonl")
	require.Len(t, recs, 3)
	assert.Equal(t, RunLogRecord{Program: Preflight, Config: ok, Pid: 4242, CUDAVisibleDevices: "1",
		StartNS: fixedNow.UnixNano(), EndNS: fixedNow.UnixNano(), ExitCode: 0}, recs[0])
	assert.Equal(t, Ruler, recs[1].Program)
	assert.Equal(t, AIME24, recs[2].Program)
	assert.Equal(t, crash, recs[2].Config)
	assert.Equal(t, ExitCrash, recs[2].ExitCode)

	// Without SIM_RUN_LOG nothing is written.
	w.run(context.Background(), Preflight, nil, ok)
	assert.Len(t, w.logRecords("log/runs.jsonl"), 3)
}

// lineWatch closes seen once a write contains substr.
type lineWatch struct {
	substr string
	seen   chan struct{}
	done   bool
}

func (l *lineWatch) Write(p []byte) (int, error) {
	if !l.done && bytes.Contains(p, []byte(l.substr)) {
		l.done = true
		close(l.seen)
	}
	return len(p), nil
}

func TestIgnoreSIGTERMHook(t *testing.T) {
	w := newWorkdir(t)
	tests := []struct {
		sim     string
		program string
		want    bool
	}{
		{`"ignore_sigterm": true`, AIME24, true},
		{`"ignore_sigterm": true, "stages": ["aime24"]`, AIME24, true},
		{`"ignore_sigterm": true, "stages": ["aime24"]`, Ruler, false},
		{`"crash": true`, AIME24, false},
	}
	for i, tt := range tests {
		cfg := w.config(fmt.Sprintf("v%d", i), `{"vortex_topk_val": 64, "vortex_topk_ratio": 0.5, "sim": {"duration_ms": 0, `+tt.sim+`}}`)
		called := false
		Run(context.Background(), tt.program, Env{
			Args:          []string{"--config", cfg},
			Getenv:        func(k string) string { return gpu("0")[k] },
			Dir:           w.dir,
			IgnoreSIGTERM: func() { called = true },
		})
		assert.Equal(t, tt.want, called, "%s %s", tt.program, tt.sim)
	}
}
