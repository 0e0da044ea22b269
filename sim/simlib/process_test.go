package simlib

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
)

// The test binary doubles as the three programs: with SIMLIB_TEST_PROGRAM
// set it runs Main, so the process-level behaviour (signals, exit statuses,
// concurrent log appends) is tested on real processes.
func TestMain(m *testing.M) {
	if p := os.Getenv("SIMLIB_TEST_PROGRAM"); p != "" {
		Main(p)
	}
	os.Exit(m.Run())
}

func (w *workdir) command(program string, env map[string]string, args ...string) *exec.Cmd {
	exe, err := os.Executable()
	require.NoError(w.t, err)
	cmd := exec.Command(exe, args...)
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), "SIMLIB_TEST_PROGRAM="+program)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

func waitStatus(t *testing.T, err error) syscall.WaitStatus {
	t.Helper()
	var ee *exec.ExitError
	if err == nil {
		return 0
	}
	require.True(t, errors.As(err, &ee), "wait: %v", err)
	return ee.Sys().(syscall.WaitStatus)
}

// startUntil starts cmd and reads its stdout until a line containing substr.
func startUntil(t *testing.T, cmd *exec.Cmd, substr string) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.Contains(sc.Text(), substr) {
			go io.Copy(io.Discard, stdout) //nolint:errcheck // drain the rest
			return
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	t.Fatalf("the program ended without printing %q", substr)
}

func TestProcessSIGTERMEndsHang(t *testing.T) {
	w := newWorkdir(t)
	cfg := w.config("v", `{"vortex_topk_val": 64, "vortex_topk_ratio": 0.5, "sim": {"duration_ms": 0, "hang": true, "stages": ["aime24"]}}`)
	env := gpu("1")
	env["SIM_RUN_LOG"] = "runs.log"
	cmd := w.command(AIME24, env, "--config", cfg)
	startUntil(t, cmd, "hanging until a signal")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	ws := waitStatus(t, cmd.Wait())
	require.True(t, ws.Signaled(), "the parent sees a death by signal, like a Python tool's: %v", ws)
	assert.Equal(t, syscall.SIGTERM, ws.Signal())

	recs := w.logRecords("runs.log")
	require.Len(t, recs, 1)
	assert.Equal(t, cmd.Process.Pid, recs[0].Pid)
	assert.Equal(t, "terminated", recs[0].Signal)
	assert.LessOrEqual(t, recs[0].StartNS, recs[0].EndNS)
	assert.False(t, w.exists("summary_submissions/me/v"))
}

func TestProcessIgnoreSIGTERM(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the ignored-signal mask from /proc")
	}
	w := newWorkdir(t)
	cfg := w.config("v", `{"vortex_topk_val": 64, "vortex_topk_ratio": 0.5, "sim": {"duration_ms": 0, "hang": true, "ignore_sigterm": true}}`)
	cmd := w.command(Ruler, gpu("0"), "--config", cfg)
	startUntil(t, cmd, "hanging until a signal")

	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	require.NoError(t, err)
	var ign uint64
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			ign, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			require.NoError(t, err)
		}
	}
	assert.NotZero(t, ign&(1<<(syscall.SIGTERM-1)), "SIGTERM is ignored by the kernel, not merely caught")

	// An ignored signal is discarded when sent; only SIGKILL ends the run.
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Process.Kill())
	ws := waitStatus(t, cmd.Wait())
	require.True(t, ws.Signaled())
	assert.Equal(t, syscall.SIGKILL, ws.Signal())
}

func TestProcessExitStatuses(t *testing.T) {
	w := newWorkdir(t)
	tests := []struct {
		program string
		sim     string
		env     map[string]string
		code    int
		stderr  string
	}{
		{Preflight, `"duration_ms": 0`, nil, 0, ""},
		{Preflight, `"duration_ms": 0, "preflight_error": "nope"`, nil, 1, "nope"},
		{Ruler, `"duration_ms": 0`, nil, 1, "no GPU visible"},
		{Ruler, `"duration_ms": 0, "exit_code": 5`, gpu("0"), 5, "sim.exit_code"},
		{AIME24, `"duration_ms": 0, "crash": true`, gpu("0"), 3, "Traceback"},
		{AIME24, `"duration_ms": 0, "oom": true`, gpu("0"), 1, OOMMessage},
	}
	for i, tt := range tests {
		cfg := w.config(fmt.Sprintf("v%d", i), `{"vortex_topk_val": 64, "vortex_topk_ratio": 0.5, "sim": {`+tt.sim+`}}`)
		args := []string{"--config", cfg}
		if tt.program == Preflight {
			args = []string{cfg}
		}
		cmd := w.command(tt.program, tt.env, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		ws := waitStatus(t, cmd.Run())
		assert.True(t, ws.Exited(), "%s %s", tt.program, tt.sim)
		assert.Equal(t, tt.code, ws.ExitStatus(), "%s %s: %s", tt.program, tt.sim, stderr.String())
		if tt.stderr != "" {
			assert.Contains(t, stderr.String(), tt.stderr)
		}
	}
}

// Concurrent runs append whole lines to one $SIM_RUN_LOG, so a test can
// count executions by counting lines.
func TestProcessConcurrentRunLog(t *testing.T) {
	w := newWorkdir(t)
	const n = 8
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cfg := w.config(fmt.Sprintf("v%d", i), fmt.Sprintf(`{"vortex_topk_val": %d, "vortex_topk_ratio": 0.5, "sim": {"duration_ms": 20}}`, 64+i))
		env := gpu(strconv.Itoa(i % 4))
		env["SIM_RUN_LOG"] = "runs.log"
		cmds[i] = w.command(AIME24, env, "--config", cfg)
		require.NoError(t, cmds[i].Start())
	}
	pids := map[int]bool{}
	for _, c := range cmds {
		require.NoError(t, c.Wait())
		pids[c.Process.Pid] = true
	}
	recs := w.logRecords("runs.log")
	require.Len(t, recs, n)
	for _, r := range recs {
		assert.True(t, pids[r.Pid], "pid %d is one of the runs", r.Pid)
		delete(pids, r.Pid)
		assert.Equal(t, 0, r.ExitCode)
		assert.True(t, w.exists(filepath.Join("summary_submissions/me", strings.TrimSuffix(filepath.Base(r.Config), ".json"), "latest.json")))
	}
	assert.Empty(t, pids, "one line per run")
}

// The thin mains under sim/work build and carry the simulation
// notice in their usage.
func TestSimworkMains(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three programs")
	}
	if _, err := e2etest.GoTool(); err != nil {
		t.Skip("no go toolchain on PATH")
	}
	bin := e2etest.Binaries{Packages: []string{"sim/work/..."}}.BuildFor(t)

	w := newWorkdir(t)
	cfg := w.config("batch_a_id0", `{"vortex_topk_val": 2048, "vortex_topk_ratio": 0.2, "sim": {"duration_ms": 0}}`)
	for _, p := range Programs {
		exe := filepath.Join(bin, p)
		help, _ := exec.Command(exe, "-h").CombinedOutput()
		assert.Contains(t, string(help), "SIMULATED", p)

		args := []string{"--config", cfg}
		if p == Preflight {
			args = []string{cfg}
		}
		cmd := exec.Command(exe, args...)
		cmd.Dir = w.dir
		cmd.Env = append(os.Environ(), "CUDA_VISIBLE_DEVICES=0")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", p, out)
	}
	assert.True(t, w.exists("summary_ruler_submissions/me/batch_a_id0/latest.json"))
	assert.True(t, w.exists("summary_submissions/me/batch_a_id0/latest.json"))
}
