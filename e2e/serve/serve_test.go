// Package serve_test proves the serve stage kind end to end: the real cairn
// binary starts the SIMULATED model server (cmd/cairn-sim-model) on
// simulated GPUs as a serve stage, and the Python chat worker of
// testdata/workers evaluates items through it. What the servers were asked
// comes from their request log; what cairn did, from the run journal.
package serve_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/sim/simmodel"
	"github.com/cairn-run/cairn/stages/items"
)

var cairnBin, simBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if _, err := exec.LookPath("python3"); err != nil {
		fmt.Println("skipping: the serve end-to-end tests need python3")
		return 0
	}
	if _, err := e2etest.GoTool(); err != nil {
		fmt.Println("skipping: no go toolchain on PATH to build cairn")
		return 0
	}
	// The engine's side of the servers under the race detector too, where
	// the tests run under it.
	bins := e2etest.Binaries{Packages: []string{"cmd/cairn", "cmd/cairn-sim-model"}, Race: e2etest.RaceEnabled}
	return bins.Main(m, os.Stdout, func(dir string) {
		cairnBin, simBin = filepath.Join(dir, "cairn"), filepath.Join(dir, "cairn-sim-model")
	})
}

const (
	model        = "sim-model"
	systemPrompt = "Answer with a number only."
)

type item struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

func (it item) digest() string {
	return simmodel.MessagesDigest([]simmodel.Message{{Role: "system", Content: systemPrompt}, {Role: "user", Content: it.Question}})
}

type workspace struct {
	t     *testing.T
	dir   string
	cache string
	lease string
	items []item
}

func newWorkspace(t *testing.T, n int) *workspace {
	t.Helper()
	w := &workspace{t: t, dir: t.TempDir(), cache: t.TempDir(), lease: t.TempDir()}
	worker, err := os.ReadFile("../../testdata/workers/chat_worker.py")
	require.NoError(t, err)
	w.write("workers/chat_worker.py", string(worker))
	w.write("bundles/seed/system.txt", systemPrompt)
	w.write("weights/model.bin", "weights v1")
	var b strings.Builder
	for i := range n {
		it := item{ID: fmt.Sprintf("q%03d", i), Question: fmt.Sprintf("What is %d + %d?", i, 3*i+1), Answer: fmt.Sprint(4*i + 1)}
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

// serveStage is a serve stage of the simulated model; run is the server's
// command line after the program (the request log and model are added).
func serveStage(name string, port, replicas, gpus int, extra string, simArgs ...string) string {
	args := []string{simBin, "--port", "{port}", "--model", "{model}", "--request-log", "requests.jsonl", "--gpu-mib", "1000"}
	args = append(args, simArgs...)
	q, _ := json.Marshal(args)
	return fmt.Sprintf(`
stage "serve" %q {
  run      = %s
  model    = %q
  weights  = "weights"
  replicas = %d
  gpus     = %d
  port     = %d
  kill_grace = "5s"
  start_timeout = "60s"
%s}
`, name, q, model, replicas, gpus, port, extra)
}

// evalStage is an evaluate stage of the items through serve stage srv.
func evalStage(name, srv string) string { return evalStageWith(name, srv, 4, 0) }

// evalStageWith is evalStage with max_in_flight and eval_seed.
func evalStageWith(name, srv string, inFlight, seed int) string {
	return fmt.Sprintf(`
stage "evaluate" %q {
  worker        = ["python3", "workers/chat_worker.py", "--system-prompt-file", "bundles/seed/system.txt"]
  items         = "data/items.jsonl"
  bundle        = ["bundles/seed/"]
  model         = %q
  runtime       = { topology = "single", temperature = 0, eval_seed = %d }
  endpoints     = stage.%s.endpoints
  max_in_flight = %d
  retry_infra   = 3
  scores        = "out/%s.jsonl"
}
`, name, model, seed, srv, inFlight, name)
}

func (w *workspace) pipeline(stages ...string) string {
	src := "pipeline \"serve-test\" {}\n" + strings.Join(stages, "")
	w.write("p.hcl", src)
	return "p.hcl"
}

func (w *workspace) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(cairnBin, append(args, "--cache", w.cache, "--no-color")...)
	cmd.Dir = w.dir
	cmd.Env = e2etest.Env("CAIRN_NO_FSYNC=1", "CAIRN_GPUS=sim:2", "CAIRN_LEASE_DIR="+w.lease)
	return cmd
}

func (w *workspace) run(args ...string) (int, string) {
	w.t.Helper()
	return e2etest.Run(w.t, w.cmd(args...))
}

// requests reads the simulated servers' request log.
func (w *workspace) requests() []simmodel.LogEntry {
	w.t.Helper()
	f, err := os.Open(filepath.Join(w.dir, "requests.jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(w.t, err)
	defer f.Close()
	es, err := simmodel.ReadLog(f)
	require.NoError(w.t, err)
	return es
}

// workerRequests are the request log's entries of the chat worker (not of
// cairn's readiness checks).
func (w *workspace) workerRequests() []simmodel.LogEntry {
	var out []simmodel.LogEntry
	for _, e := range w.requests() {
		if e.UserAgent == "cairn-chat-worker" {
			out = append(out, e)
		}
	}
	return out
}

var runID = regexp.MustCompile(`run (\d{8}T\d{6}\.\d{3}Z-[0-9a-f]+)\]`)

// journal reads the journal of the run whose summary is in out.
func (w *workspace) journal(out string) []runlog.Entry {
	w.t.Helper()
	m := runID.FindStringSubmatch(out)
	require.NotNil(w.t, m, "no run id in:\n%s", out)
	es, err := runlog.Read(filepath.Join(w.cache, "runs", m[1]))
	require.NoError(w.t, err)
	return es
}

// assertStoredOnce asserts the item store holds n items, one record each.
func (w *workspace) assertStoredOnce(n int) {
	w.t.Helper()
	records := map[string]int{}
	require.NoError(w.t, items.ScanStore(w.cache, func(key string, _ items.Result) error {
		records[key]++
		return nil
	}))
	assert.Len(w.t, records, n)
	for k, c := range records {
		assert.Equal(w.t, 1, c, "item key %s stored %d times", k, c)
	}
}

func (w *workspace) storedKeys() map[string]bool {
	keys := map[string]bool{}
	err := items.ScanStore(w.cache, func(key string, _ items.Result) error {
		keys[key] = true
		return nil
	})
	if !os.IsNotExist(err) {
		require.NoError(w.t, err)
	}
	return keys
}

func index(es []runlog.Entry, match func(runlog.Entry) bool) int {
	for i, e := range es {
		if match(e) {
			return i
		}
	}
	return -1
}

func lastIndex(es []runlog.Entry, match func(runlog.Entry) bool) int {
	for i := len(es) - 1; i >= 0; i-- {
		if match(es[i]) {
			return i
		}
	}
	return -1
}

func serveRec(node, status string) func(runlog.Entry) bool {
	return func(e runlog.Entry) bool { return e.T == runlog.Serve && e.Node == node && e.Status == status }
}

// Consumers never send a request before readiness: the server's
// completions fail for 2 s of warm-up while /health and /v1/models answer;
// no item fails and the worker's requests all succeed.
func TestServeNoRequestBeforeReady(t *testing.T) {
	w := newWorkspace(t, 12)
	port := e2etest.FreePorts(t, 4)
	f := w.pipeline(serveStage("tm", port, 2, 1, "", "--warmup", "2s"), evalStage("a", "tm"))
	code, out := w.run("apply", f)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "items 12/12: 12 evaluated, 0 from the store, 0 failed")
	assert.Contains(t, out, "infra-failures 0;")
	reqs := w.workerRequests()
	require.Len(t, reqs, 12)
	for _, e := range reqs {
		assert.Equal(t, 200, e.Status, "a request of the worker failed: %+v", e)
	}
	// The readiness checks met the warm-up (503s), so it was real.
	warm := 0
	for _, e := range w.requests() {
		if e.Status == 503 {
			warm++
		}
	}
	assert.Positive(t, warm, "the readiness checks never met the warm-up")
	es := w.journal(out)
	ready := index(es, serveRec("stage.tm", "serving"))
	started := index(es, func(e runlog.Entry) bool { return e.T == runlog.Started && e.Node == "stage.a" })
	require.True(t, ready >= 0 && started > ready, "stage.a started before stage.tm served")
}

// background is a cairn command running while the test looks on.
type background struct {
	cmd  *exec.Cmd
	out  strings.Builder
	done chan struct{}
}

// start starts cairn with args in the workspace; the test's end kills it
// if it still runs.
func (w *workspace) start(args ...string) *background {
	w.t.Helper()
	b := &background{cmd: w.cmd(args...), done: make(chan struct{})}
	b.cmd.Stdout, b.cmd.Stderr = &b.out, &b.out
	require.NoError(w.t, b.cmd.Start())
	go func() { _ = b.cmd.Wait(); close(b.done) }()
	w.t.Cleanup(func() {
		_ = b.cmd.Process.Kill()
		<-b.done
	})
	return b
}

// ended reports whether the command has ended.
func (b *background) ended() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// wait waits for the command's end.
func (b *background) wait() { <-b.done }

// output is what the command wrote, once it has ended.
func (b *background) output() string {
	if !b.ended() {
		return "(it still runs)"
	}
	return b.out.String()
}

// A server that opens its port only once its model is loaded (llama.cpp's
// Python server does: it loads before it listens): until then every
// readiness check meets a refused connection, which is not a failure;
// cairn keeps checking within start_timeout, and the replica is ready, not
// restarted, once the port opens. The "load" ends when the test writes the
// file loaded.
func TestServeReadyOnceItsPortOpens(t *testing.T) {
	w := newWorkspace(t, 6)
	port := e2etest.FreePorts(t, 2)
	script := fmt.Sprintf(`while [ ! -f loaded ]; do sleep 0.05; done; exec %s --port $CAIRN_SERVE_PORT --model %s --request-log requests.jsonl`, simBin, model)
	f := w.pipeline(fmt.Sprintf(`
stage "serve" "tm" {
  run           = ["sh", "-c", %q]
  model         = %q
  replicas      = 1
  port          = %d
  restarts      = 0
  start_timeout = "3m"
}
`, script, model, port), evalStage("a", "tm"))
	apply := w.start("apply", f)
	// The replica's process runs, and its port refuses connections.
	var startedAt time.Time
	e2etest.WaitFor(t, "the replica's start (or the apply's end)", time.Minute, func() bool {
		if rs := w.runsOldestFirst(); len(rs) == 1 {
			if i := index(rs[0].Entries, func(e runlog.Entry) bool { return e.T == runlog.Started && e.Node == "stage.tm" }); i >= 0 {
				startedAt = rs[0].Entries[i].Time
				return true
			}
		}
		return apply.ended()
	})
	require.False(t, apply.ended(), "the apply ended:\n%s", apply.output())
	if rs := w.runsOldestFirst(); len(rs) == 1 {
		require.Equal(t, -1, index(rs[0].Entries, serveRec("stage.tm", "port_skipped")), "another program took port %d", port)
	}
	_, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "the port must refuse connections while the model loads")
	// Seconds of refused readiness checks (one every 100 ms) fail nothing.
	e2etest.WaitFor(t, "2 s after the replica's start (or the apply's end)", time.Minute, func() bool {
		return time.Since(startedAt) > 2*time.Second || apply.ended()
	})
	require.False(t, apply.ended(), "the apply ended while the port was closed:\n%s", apply.output())

	w.write("loaded", "")
	apply.wait()
	require.Equal(t, 0, apply.cmd.ProcessState.ExitCode(), apply.output())
	assert.Contains(t, apply.output(), "items 6/6: 6 evaluated, 0 from the store, 0 failed")
	es := w.journal(apply.output())
	starts := 0
	for _, e := range es {
		if e.T == runlog.Started && e.Node == "stage.tm" {
			starts++
		}
		if e.T == runlog.Serve && e.Node == "stage.tm" {
			assert.NotContains(t, []string{"down", "restarting", "failed"}, e.Status, "%s", e.Message)
		}
	}
	assert.Equal(t, 1, starts, "the replica was started once, never restarted:\n%s", apply.output())
	ready := index(es, serveRec("stage.tm", "ready"))
	consumer := index(es, func(e runlog.Entry) bool { return e.T == runlog.Started && e.Node == "stage.a" })
	require.True(t, ready >= 0 && consumer > ready, "ready %d, consumer %d:\n%s", ready, consumer, apply.output())
	reqs := w.requests()
	require.NotEmpty(t, reqs, apply.output())
	assert.Equal(t, "cairn-serve-check", reqs[0].UserAgent, "the first request the server answered was a readiness check: %+v", reqs)
	assert.Len(t, w.workerRequests(), 6, "%+v\n%s", reqs, apply.output())
}

// With every evaluation in the item store, plan says the server is not
// started, and apply starts no process and leases no GPU.
func TestServePlanCachedStartsNoServer(t *testing.T) {
	w := newWorkspace(t, 6)
	port := e2etest.FreePorts(t, 4)
	f := w.pipeline(serveStage("tm", port, 2, 1, ""), evalStage("a", "tm"))
	code, out := w.run("apply", f)
	require.Equal(t, 0, code, out)
	// Another scores path: the node runs, but its items are all stored.
	w.pipeline(serveStage("tm", port, 2, 1, ""), evalStage("a", "tm"), evalStage("b", "tm"))
	code, out = w.run("plan", f)
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `= stage\.tm\s+not started: nothing to evaluate`, out)
	before := len(w.requests())
	code, out = w.run("apply", f)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "stage.tm  not started: nothing to evaluate")
	assert.Contains(t, out, "items 6/6: 0 evaluated, 6 from the store, 0 failed")
	assert.Equal(t, before, len(w.requests()), "a server was asked")
	procs, leases := 0, 0
	for _, e := range w.journal(out) {
		if e.Node == "stage.tm" && e.T == runlog.Started {
			procs++
		}
		if e.Node == "stage.tm" && (e.T == runlog.Lease || len(e.GPUs) > 0) {
			leases++
		}
	}
	assert.Zero(t, procs, "processes started")
	assert.Zero(t, leases, "GPU leases")

	// --replace runs the consumer again: its items still come from the
	// store, so the server is not started for it either.
	code, out = w.run("apply", f, "--replace", "stage.a")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "stage.tm  not started: nothing to evaluate")
	assert.Contains(t, out, "items 6/6: 0 evaluated, 6 from the store, 0 failed")
	assert.Equal(t, before, len(w.requests()), "a server was asked")
}

// Two evaluate stages share two replicas; the server stops when the second
// ends, not before; a stage waiting for its GPUs gets them only after they
// show freed.
func TestServeSharedAndStoppedAfterLastConsumer(t *testing.T) {
	w := newWorkspace(t, 10)
	port := e2etest.FreePorts(t, 4)
	f := w.pipeline(serveStage("tm", port, 2, 1, "", "--latency", "20ms"),
		evalStage("a", "tm"),
		evalStageWith("b", "tm", 4, 1),
		`
stage "command" "gpu_job" {
  run   = ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES > gpu_job.txt"]
  gpus  = 2
  after = [stage.a]
  outputs = ["gpu_job.txt"]
}
`)
	code, out := w.run("apply", f)
	require.Equal(t, 0, code, out)
	es := w.journal(out)
	fin := func(node string) int {
		return index(es, func(e runlog.Entry) bool { return e.T == runlog.Finished && e.Node == node })
	}
	stopped := index(es, serveRec("stage.tm", "stopped"))
	freed := index(es, serveRec("stage.tm", "gpus_freed"))
	gpuJob := index(es, func(e runlog.Entry) bool { return e.T == runlog.Started && e.Node == "stage.gpu_job" })
	require.True(t, fin("stage.a") >= 0 && fin("stage.b") >= 0, "the evaluations did not finish:\n%s", out)
	assert.Greater(t, stopped, fin("stage.a"), "the server stopped before stage.a ended")
	assert.Greater(t, stopped, fin("stage.b"), "the server stopped before stage.b ended")
	require.GreaterOrEqual(t, freed, 0, "no gpus_freed record")
	assert.Greater(t, gpuJob, freed, "the waiting stage got the GPUs before they were freed")
	// Both replicas answered both stages.
	ready := 0
	for _, e := range es {
		if e.T == runlog.Serve && e.Node == "stage.tm" && e.Status == "ready" {
			ready++
			assert.NotZero(t, e.PID)
			assert.Len(t, e.GPUs, 1)
		}
	}
	assert.Equal(t, 2, ready)
	assert.Len(t, w.workerRequests(), 20)
	// cairn show RUN lists the replicas' logs.
	code, show := w.run("show", runID.FindStringSubmatch(out)[1])
	require.Equal(t, 0, code, show)
	for _, l := range []string{"tm/replica1.out", "tm/replica1.err", "tm/replica2.err"} {
		assert.Contains(t, show, l)
	}
}

// firstLifeFault is serve stage "tm" of two replicas of the simulated
// model, replica 1 with the fault flags in its first life only: it writes
// its pid to the file marker, and its restart runs without them.
func firstLifeFault(port int, marker, fault, extra string) string {
	script := fmt.Sprintf(`if [ "$CAIRN_SERVE_REPLICA" = 1 ] && [ ! -e %s ]; then echo $$ > %s; exec %s --port $CAIRN_SERVE_PORT --model %s --request-log requests.jsonl --latency 100ms %s; fi; exec %s --port $CAIRN_SERVE_PORT --model %s --request-log requests.jsonl --latency 100ms`,
		marker, marker, simBin, model, fault, simBin, model)
	return fmt.Sprintf(`
stage "serve" "tm" {
  run      = ["sh", "-c", %q]
  model    = %q
  replicas = 2
  port     = %d
  kill_grace = "5s"
%s}
`, script, model, port, extra)
}

// A process that keeps GPU memory after the servers stopped holds the GPUs
// back for gpu_free_wait only: then a warning names its pid, and the GPUs
// go back to the pool; a stage waiting for them starts after that. The
// leftover is one the server started in a session of its own, so that
// stopping the server's process group leaves it, and it holds SIMULATED
// GPU memory. Either it was started as Python servers start their workers
// (subprocess: inherited descriptors closed), or it kept every descriptor
// the server had, the GPU lease's among them: the lease ends all the same
// when cairn gives the GPUs back.
func TestServeGPUsReleasedAfterLeftoverWarning(t *testing.T) {
	for _, tc := range []struct {
		name     string
		closeFDs bool
	}{
		{"descriptors closed", true},
		{"lease descriptors inherited", false},
	} {
		t.Run(tc.name, func(t *testing.T) { testLeftoverWarning(t, tc.closeFDs) })
	}
}

func testLeftoverWarning(t *testing.T, closeFDs bool) {
	w := newWorkspace(t, 6)
	port := e2etest.FreePorts(t, 4)
	leftover := `d="$CAIRN_SIM_GPU_MEMORY/$CUDA_VISIBLE_DEVICES"; mkdir -p "$d"; echo 700 > "$d/$$"; echo $$ > leftover.pid; exec sleep 300`
	closeArg := "True"
	if !closeFDs {
		closeArg = "False"
	}
	spawn := fmt.Sprintf(`import subprocess; subprocess.Popen(["sh", "-c", %q], start_new_session=True, close_fds=%s, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)`, leftover, closeArg)
	script := fmt.Sprintf(`if [ "$CAIRN_SERVE_REPLICA" = 1 ]; then python3 -c %s; fi; exec %s --port $CAIRN_SERVE_PORT --model %s --request-log requests.jsonl --gpu-mib 1000`,
		shellQuote(spawn), simBin, model)
	srv := fmt.Sprintf(`
stage "serve" "tm" {
  run      = ["sh", "-c", %q]
  model    = %q
  replicas = 2
  gpus     = 1
  port     = %d
  kill_grace = "5s"
  gpu_free_wait = "2s"
}
`, script, model, port)
	f := w.pipeline(srv, evalStage("a", "tm"), `
stage "command" "gpu_job" {
  run   = ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES > gpu_job.txt"]
  gpus  = 2
  after = [stage.a]
  outputs = ["gpu_job.txt"]
}
`)
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(w.dir, "leftover.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	code, out := w.run("apply", f)
	b, err := os.ReadFile(filepath.Join(w.dir, "leftover.pid"))
	require.NoError(t, err, "the leftover process never started:\n%s", out)
	pid := strings.TrimSpace(string(b))
	require.False(t, e2etest.ProcGone(mustAtoi(t, pid)), "the leftover process did not outlive the server")
	// The leftover holds the GPU lease's descriptors exactly when it
	// inherited them.
	if closeFDs {
		assert.Empty(t, leaseFiles(t, pid, w.lease), "the leftover kept the lease's descriptors")
	} else {
		assert.NotEmpty(t, leaseFiles(t, pid, w.lease), "the leftover did not inherit the lease's descriptors")
	}
	require.Equal(t, 0, code, out)
	// The warning names the leftover process and its GPU.
	assert.Regexp(t, `stage\.tm: 2s after its servers stopped, GPU \d: pid `+pid+` \(700 MiB\) still show memory in use`, out)
	es := w.journal(out)
	stopped := lastIndex(es, serveRec("stage.tm", "stopped"))
	notFreed := index(es, serveRec("stage.tm", "gpus_not_freed"))
	gpuJob := index(es, func(e runlog.Entry) bool { return e.T == runlog.Started && e.Node == "stage.gpu_job" })
	require.GreaterOrEqual(t, notFreed, 0, "no gpus_not_freed record:\n%s", out)
	assert.Contains(t, es[notFreed].Message, "pid "+pid)
	assert.Greater(t, notFreed, stopped, "the GPUs were given up before the servers stopped")
	assert.Equal(t, -1, index(es, serveRec("stage.tm", "gpus_freed")), "the leftover's memory was not seen")
	// The waiting stage got both GPUs, and only once they were released.
	require.GreaterOrEqual(t, gpuJob, 0, "stage.gpu_job never started:\n%s", out)
	assert.Greater(t, gpuJob, notFreed, "stage.gpu_job started on the GPUs before they were released")
	got, err := os.ReadFile(filepath.Join(w.dir, "gpu_job.txt"))
	require.NoError(t, err)
	assert.Equal(t, "0,1", strings.TrimSpace(string(got)))
}

// leaseFiles lists the GPU lease files (under the lease folder) that
// process pid holds open.
func leaseFiles(t *testing.T, pid, leaseDir string) []string {
	t.Helper()
	fds, err := os.ReadDir(filepath.Join("/proc", pid, "fd"))
	require.NoError(t, err)
	var out []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc", pid, "fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, leaseDir+"/") && strings.HasSuffix(target, ".lock") {
			out = append(out, target)
		}
	}
	return out
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// A replica killed mid-evaluation is taken out of the rotation and
// restarted once; the evaluation finishes with every item answered once.
func TestServeReplicaKilledMidEvaluation(t *testing.T) {
	w := newWorkspace(t, 24)
	port := e2etest.FreePorts(t, 4)
	// Replica 1 crashes on its 4th chat request (readiness's included),
	// in its first life only.
	f := w.pipeline(firstLifeFault(port, "crashed", "--crash-after 4", ""), evalStage("a", "tm"))
	code, out := w.run("apply", f)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "items 24/24: 24 evaluated, 0 from the store, 0 failed")
	// Every item is answered once in the store: one record each (an
	// answer the crash kept from the worker was asked again, on the
	// other replica, and stored once).
	w.assertStoredOnce(24)
	answered := map[string]int{}
	for _, e := range w.workerRequests() {
		if e.Status == 200 {
			answered[e.Messages]++
		}
	}
	for _, it := range w.items {
		assert.GreaterOrEqual(t, answered[it.digest()], 1, "item %s never answered", it.ID)
	}
	es := w.journal(out)
	restarts := 0
	for _, e := range es {
		if e.T == runlog.Serve && e.Node == "stage.tm" && e.Status == "restarting" {
			restarts++
			assert.Equal(t, 1, e.Replica)
		}
	}
	assert.Equal(t, 1, restarts, "restarts:\n%s", out)
}

// A replica that stays alive but stops answering (the SIMULATED model's
// --hang-after: /health and completions get no answer) is taken out of the
// rotation at once and restarted; the items in flight on it are
// infrastructure failures asked again on the other replica, not failures:
// the evaluation finishes with every item answered once in the store.
func TestServeReplicaHungMidEvaluation(t *testing.T) {
	w := newWorkspace(t, 24)
	port := e2etest.FreePorts(t, 4)
	// Replica 1 hangs after its 4th chat request (readiness's included),
	// in its first life only (whose pid the marker file keeps).
	f := w.pipeline(firstLifeFault(port, "hung", "--hang-after 4", `  start_timeout = "10s"`+"\n"), evalStage("a", "tm"))
	code, out := w.run("apply", f)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "items 24/24: 24 evaluated, 0 from the store, 0 failed")
	assert.Regexp(t, `infra-failures [1-9]\d*;`, out, "no item in flight on the hung replica was retried")
	w.assertStoredOnce(24)
	es := w.journal(out)
	// The hung replica failed its health check while its process lived:
	// down first, then restarted (its death was cairn's stop), then ready.
	down := index(es, func(e runlog.Entry) bool {
		return e.T == runlog.Serve && e.Node == "stage.tm" && e.Status == "down" && e.Replica == 1
	})
	require.GreaterOrEqual(t, down, 0, "replica 1 was never taken out of the rotation:\n%s", out)
	assert.Contains(t, es[down].Message, "failed its health check")
	hungPID, err := os.ReadFile(filepath.Join(w.dir, "hung"))
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(hungPID)), strconv.Itoa(es[down].PID), "the replica taken out is not the hung one")
	restarts := 0
	for i, e := range es {
		if e.T == runlog.Serve && e.Node == "stage.tm" && e.Status == "restarting" {
			restarts++
			assert.Equal(t, 1, e.Replica)
			assert.Greater(t, i, down, "restarted before it was taken out of the rotation")
			// cairn stopped it: no interrupt of cairn is named.
			assert.Contains(t, e.Message, "stopped by cairn: it had failed its health checks for")
			assert.NotContains(t, e.Message, "interrupted")
		}
	}
	assert.Equal(t, 1, restarts, "restarts:\n%s", out)
	readyAgain := lastIndex(es, func(e runlog.Entry) bool {
		return e.T == runlog.Serve && e.Node == "stage.tm" && e.Status == "ready" && e.Replica == 1
	})
	assert.Greater(t, readyAgain, down, "the restarted replica never got ready")
}

// A replica that answers one request at a time (as llama.cpp's Python
// server does) answers its health check only after the completions queued
// before it: late, while consumers are answered. It is busy, not hung, and
// stays in the rotation: no item waits and none is retried.
func TestServeBusyReplicaStaysInTheRotation(t *testing.T) {
	w := newWorkspace(t, 6)
	port := e2etest.FreePorts(t, 2)
	// Four completions of 2 s queue ahead of each health check: longer
	// than the check's 5 s.
	f := w.pipeline(serveStage("tm", port, 1, 0, "", "--serial", "--latency", "2s"), evalStage("a", "tm"))
	code, out := w.run("apply", f)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "items 6/6: 6 evaluated, 0 from the store, 0 failed")
	assert.Contains(t, out, "infra-failures 0;")
	for _, e := range w.journal(out) {
		if e.T == runlog.Serve && e.Status == "down" {
			t.Errorf("the busy replica was taken out of the rotation: %s\n%s", e.Message, out)
		}
	}
}

// A replica that dies again after its restart fails the node with its log.
func TestServeSecondDeathFailsWithLog(t *testing.T) {
	w := newWorkspace(t, 24)
	port := e2etest.FreePorts(t, 4)
	// Replica 1 crashes mid-evaluation, and its restart dies at start.
	script := fmt.Sprintf(`if [ "$CAIRN_SERVE_REPLICA" = 1 ]; then if [ -e crashed ]; then echo "SIMULATED crash at start" >&2; exit 3; fi; touch crashed; exec %s --port $CAIRN_SERVE_PORT --model %s --latency 30ms --crash-after 4; fi; exec %s --port $CAIRN_SERVE_PORT --model %s --latency 30ms`, simBin, model, simBin, model)
	srv := fmt.Sprintf(`
stage "serve" "tm" {
  run      = ["sh", "-c", %q]
  model    = %q
  replicas = 2
  port     = %d
  restarts = 1
}
`, script, model, port)
	f := w.pipeline(srv, evalStage("a", "tm"))
	code, out := w.run("apply", f)
	require.Equal(t, 1, code, out)
	assert.Regexp(t, `stage\.tm\s+failed \(infrastructure\): replica 1 \(port \d+\) died 2 times`, out)
	assert.Contains(t, out, "SIMULATED crash at start")
	// The evaluation finished on replica 2.
	assert.Contains(t, out, "items 24/24: 24 evaluated, 0 from the store, 0 failed")
}

// A node whose only replica dies without a restart left fails: its journal
// has the failed record alone (no finished before it), and its message
// counts the death in the singular.
func TestServeFailedNodeIsJournaledFailedOnly(t *testing.T) {
	w := newWorkspace(t, 12)
	port := e2etest.FreePorts(t, 2)
	f := w.pipeline(serveStage("tm", port, 1, 0, "  restarts = 0\n", "--latency", "30ms", "--crash-after", "3"), evalStage("a", "tm"))
	code, out := w.run("apply", f)
	require.Equal(t, 1, code, out)
	assert.Regexp(t, `stage\.tm\s+failed \(infrastructure\): replica 1 \(port \d+\) died once: exited with status 3`, out)
	assert.NotContains(t, out, "1 times")
	var ends []string
	for _, e := range w.journal(out) {
		if e.Node == "stage.tm" && (e.T == runlog.Finished || e.T == runlog.Failed) {
			ends = append(ends, e.T)
		}
	}
	assert.Equal(t, []string{runlog.Failed}, ends, out)
}

// A port held by another process is skipped, never bound twice.
func TestServePortCollisionSkipped(t *testing.T) {
	w := newWorkspace(t, 4)
	port := e2etest.FreePorts(t, 4)
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	require.NoError(t, err)
	defer ln.Close()
	f := w.pipeline(serveStage("tm", port, 1, 0, ""), evalStage("a", "tm"))
	code, out := w.run("apply", f)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, fmt.Sprintf("port %d is in use: skipped", port))
	assert.Contains(t, out, fmt.Sprintf("replica 1 ready at http://127.0.0.1:%d/v1", port+1))
	es := w.journal(out)
	assert.GreaterOrEqual(t, index(es, func(e runlog.Entry) bool {
		return e.T == runlog.Serve && e.Status == "port_skipped" && e.Port == port
	}), 0)
	// Our listener still has its port.
	_ = ln.(*net.TCPListener).SetDeadline(time.Now())
	_, err = ln.Accept()
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout(), "the held port was taken over: %v", err)
}

// kill -9 of cairn while it serves leaves no server process; the next
// apply starts them afresh and completes.
func TestServeKill9LeavesNoServer(t *testing.T) {
	w := newWorkspace(t, 40)
	port := e2etest.FreePorts(t, 4)
	f := w.pipeline(serveStage("tm", port, 2, 1, "", "--latency", "300ms"), evalStageWith("a", "tm", 1, 0))
	cmd, output := w.startLogged("apply", f)
	pids, deadline := servingPIDs(t, w, output)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	for _, pid := range pids {
		for !e2etest.ProcGone(pid) {
			require.True(t, time.Now().Before(deadline), "server pid %d still runs after cairn was killed", pid)
			time.Sleep(20 * time.Millisecond)
		}
	}
	code, out := w.run("apply", f)
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `items 40/40: \d+ evaluated, \d+ from the store, 0 failed`, out)
}

// Ctrl-C stops the servers cleanly: SIGTERM, their stop journaled, no
// process left, exit status 130.
func TestServeInterruptStopsServers(t *testing.T) {
	w := newWorkspace(t, 40)
	port := e2etest.FreePorts(t, 4)
	f := w.pipeline(serveStage("tm", port, 2, 1, "", "--latency", "300ms"), evalStageWith("a", "tm", 1, 0))
	cmd, output := w.startLogged("apply", f)
	pids, deadline := servingPIDs(t, w, output)
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, output())
	assert.Equal(t, 130, ee.ExitCode(), output())
	for _, pid := range pids {
		for !e2etest.ProcGone(pid) {
			require.True(t, time.Now().Before(deadline), "server pid %d still runs after Ctrl-C", pid)
			time.Sleep(20 * time.Millisecond)
		}
	}
	assert.Contains(t, output(), "replica 1 stopped")
	assert.Contains(t, output(), "replica 2 stopped")
}

// startLogged starts cairn with args in the workspace, its output in a
// log file, and returns the command and a reader of its output so far.
func (w *workspace) startLogged(args ...string) (*exec.Cmd, func() string) {
	w.t.Helper()
	cmd := w.cmd(args...)
	logPath := filepath.Join(w.t.TempDir(), "apply.log")
	logFile, err := os.Create(logPath)
	require.NoError(w.t, err)
	w.t.Cleanup(func() { _ = logFile.Close() })
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(w.t, cmd.Start())
	return cmd, func() string { b, _ := os.ReadFile(logPath); return string(b) }
}

// servingPIDs waits until an apply of w serves (its consumers started)
// and returns its replicas' pids and the tests' deadline.
func servingPIDs(t *testing.T, w *workspace, output func() string) ([]int, time.Time) {
	t.Helper()
	var pids []int
	runs := filepath.Join(w.cache, "runs")
	deadline := time.Now().Add(2 * time.Minute)
	for len(pids) < 2 {
		require.True(t, time.Now().Before(deadline), "the servers never got ready:\n%s", output())
		ents, _ := os.ReadDir(runs)
		for _, d := range ents {
			es, _ := runlog.Read(filepath.Join(runs, d.Name()))
			pids = pids[:0]
			served := false
			for _, e := range es {
				if e.T == runlog.Started && e.Node == "stage.tm" && e.PID > 0 {
					pids = append(pids, e.PID)
				}
				served = served || e.T == runlog.Serve && e.Status == "serving"
			}
			if !served {
				pids = pids[:0]
			}
		}
		if len(pids) < 2 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return pids, deadline
}

// launcherStage is a serve stage whose run starts the simulated model
// through a launcher script in the workspace (srv.sh), the script and a
// chat template folder its inputs.
func launcherStage(port int) string {
	return fmt.Sprintf(`
stage "serve" "tm" {
  run      = ["sh", "srv.sh", "{port}", "{model}"]
  inputs   = ["srv.sh", "templates/"]
  model    = %q
  weights  = "weights"
  replicas = 1
  port     = %d
  kill_grace = "5s"
  start_timeout = "60s"
}
`, model, port)
}

// A serve stage's inputs identify its server to its consumers as its
// weights do: the launcher script among them, edited to serve wrong
// answers, and a file of a folder among them, changed, each ask every
// item again; their answers are not the old server's (docs/serve.md,
// Files the server reads). The request log the launcher names, which the
// server writes, is no input: a rerun asks nothing again.
func TestServeKeysByLauncherAndInputs(t *testing.T) {
	w := newWorkspace(t, 8)
	port := e2etest.FreePorts(t, 4)
	launcher := func(wrongRate string) {
		w.write("srv.sh", fmt.Sprintf("exec %s --port \"$1\" --model \"$2\" --request-log requests.jsonl --gpu-mib 1000 --wrong-rate %s\n", shellQuote(simBin), wrongRate))
	}
	launcher("0")
	w.write("templates/chat.jinja", "{{ messages }}")
	f := w.pipeline(launcherStage(port), evalStage("a", "tm"))
	code, out := w.run("apply", f)
	require.Equal(t, 0, code, out)
	require.Len(t, w.workerRequests(), 8)
	code, out = w.run("apply", f)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "not started: nothing to evaluate")
	assert.Len(t, w.workerRequests(), 8, "the same server was asked again")
	meanScore := func() float64 {
		t.Helper()
		code, out := w.run("show", "stage.a")
		require.Equal(t, 0, code, out)
		m := regexp.MustCompile(`"mean_score": ([0-9.]+)`).FindStringSubmatch(out)
		require.NotNil(t, m, out)
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		return v
	}
	require.Equal(t, 1.0, meanScore())

	// The launcher now serves every answer wrong: a new server.
	launcher("1")
	code, out = w.run("plan", f)
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `~ stage\.a\s+run: upstream stage\.tm changed`, out)
	code, out = w.run("apply", f)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "items 8/8: 8 evaluated, 0 from the store, 0 failed")
	assert.Len(t, w.workerRequests(), 16)
	assert.Equal(t, 0.0, meanScore(), "the old server's answers were kept")

	// A file of its inputs changes: a new server too.
	w.write("templates/chat.jinja", "{{ messages | tojson }}")
	code, out = w.run("apply", f)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "items 8/8: 8 evaluated, 0 from the store, 0 failed")
	assert.Len(t, w.workerRequests(), 24)
	assert.Len(t, w.storedKeys(), 24)
}

// The same weights on other ports ask nothing again; changed weights ask
// every item again.
func TestServeKeysByWeights(t *testing.T) {
	w := newWorkspace(t, 8)
	port := e2etest.FreePorts(t, 8)
	f := w.pipeline(serveStage("tm", port, 1, 0, ""), evalStage("a", "tm"))
	code, out := w.run("apply", f)
	require.Equal(t, 0, code, out)
	require.Len(t, w.workerRequests(), 8)
	// Other ports, other replica count: 0 requests.
	w.pipeline(serveStage("tm", port+4, 2, 0, ""), evalStage("a", "tm"))
	code, out = w.run("apply", f)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "not started: nothing to evaluate")
	assert.Len(t, w.workerRequests(), 8, "the same weights were asked again")
	// New weights: every item asked again, under new keys.
	w.write("weights/model.bin", "weights v2")
	code, out = w.run("apply", f)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "items 8/8: 8 evaluated, 0 from the store, 0 failed")
	assert.Len(t, w.workerRequests(), 16)
	assert.Len(t, w.storedKeys(), 16)
	// The same weights served with a flag that changes answers: another
	// server, new keys, every item asked again (and its answers differ).
	w.pipeline(serveStage("tm", port, 1, 0, "", "--wrong-rate", "0.9"), evalStage("a", "tm"))
	code, out = w.run("apply", f)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "items 8/8: 8 evaluated, 0 from the store, 0 failed")
	assert.Len(t, w.workerRequests(), 24)
	assert.Len(t, w.storedKeys(), 24)
	// Back to the first command line: its items are in the store.
	w.pipeline(serveStage("tm", port, 1, 0, ""), evalStage("a", "tm"))
	code, out = w.run("apply", f)
	require.Equal(t, 0, code, out)
	assert.Len(t, w.workerRequests(), 24, "the first server's answers were asked again")
	// The scores name the keys; each holds the weights' identity, so a
	// plain-endpoints evaluation of the same items does not share them.
	sc, err := os.Open(filepath.Join(w.dir, "out/a.jsonl"))
	require.NoError(t, err)
	defer sc.Close()
	n := 0
	for s := bufio.NewScanner(sc); s.Scan(); n++ {
	}
	assert.Equal(t, 8, n)
}
