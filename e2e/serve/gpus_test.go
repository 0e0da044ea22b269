package serve_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine/runlog"
)

// runWithin runs cairn with args and waits at most limit for its end
// (a hang fails the test instead of blocking it).
func (w *workspace) runWithin(limit time.Duration, args ...string) (int, string) {
	w.t.Helper()
	b := w.start(args...)
	e2etest.WaitFor(w.t, "cairn "+strings.Join(args, " ")+" to end (it hangs?)", limit, b.ended)
	return b.cmd.ProcessState.ExitCode(), b.output()
}

// stopAtEnd stops cmd at the test's end if it still runs (a test that
// failed while it ran): Ctrl-C, so that it stops its servers, then a kill.
func stopAtEnd(t *testing.T, cmd *exec.Cmd) {
	t.Cleanup(func() {
		if cmd.ProcessState != nil {
			return
		}
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
}

// defaultReplicas is serveStage with replicas left to the free GPUs.
func defaultReplicas(name string, port, gpus int, simArgs ...string) string {
	return strings.Replace(serveStage(name, port, 1, gpus, "", simArgs...), "  replicas = 1\n", "", 1)
}

// otherServer is a flag that makes a serve stage of the simulated model
// another server than serveStage's (another key).
var otherServer = []string{"--latency", "1ms"}

// Two serve stages of one apply that are the same server (one key: the
// same model, weights and command line) are two servers: the second does
// not wait for the first's key, which its consumer holds up, and the
// consumer of both runs.
func TestServeTwinStagesBothRun(t *testing.T) {
	w := newWorkspace(t, 1)
	port := e2etest.FreePorts(t, 8)
	f := w.pipeline(serveStage("a", port, 1, 1, ""), serveStage("b", port+4, 1, 1, ""), bothConsumer)
	code, out := w.runWithin(time.Minute, "apply", f)
	require.Equal(t, 0, code, out)
	ready := map[string]int{}
	for _, e := range w.journal(out) {
		if e.T == runlog.Serve && e.Status == "ready" {
			ready[e.Node]++
		}
	}
	assert.Equal(t, map[string]int{"stage.a": 1, "stage.b": 1}, ready, out)
	assert.NotContains(t, out, "waits: the same work is running")
}

// bothConsumer is a command stage reading the endpoints of serve stages a
// and b at once.
const bothConsumer = `
stage "command" "both" {
  run     = ["sh", "-c", "mkdir -p out; echo $A $B > out/both.txt"]
  env     = { A = join(",", stage.a.endpoints), B = join(",", stage.b.endpoints) }
  outputs = ["out/both.txt"]
}
`

// A stage consuming two serve stages whose replicas are left to the free
// GPUs: the first to start leaves the second its GPU, instead of taking
// both and waiting for ever for the second, which waits for its GPUs.
func TestServeLeavesGPUsForTheOtherServerOfItsConsumer(t *testing.T) {
	w := newWorkspace(t, 1)
	port := e2etest.FreePorts(t, 8)
	f := w.pipeline(defaultReplicas("a", port, 1), defaultReplicas("b", port+4, 1, otherServer...), bothConsumer)
	code, out := w.runWithin(time.Minute, "apply", f)
	require.Equal(t, 0, code, out)
	replicas := map[string]int{}
	for _, e := range w.journal(out) {
		if e.T == runlog.Serve && e.Status == "ready" {
			replicas[e.Node]++
		}
	}
	assert.Equal(t, map[string]int{"stage.a": 1, "stage.b": 1}, replicas, out)
	b, err := os.ReadFile(filepath.Join(w.dir, "out/both.txt"))
	require.NoError(t, err)
	assert.Regexp(t, `^http://127.0.0.1:\d+/v1 http://127.0.0.1:\d+/v1\n$`, string(b))
}

// Serve stages whose declared GPUs cannot be up at once for the stage
// that consumes them are refused before anything runs (exit 1), naming
// them, instead of waiting for each other for ever.
func TestServeTogetherOverThePoolRefused(t *testing.T) {
	w := newWorkspace(t, 1)
	port := e2etest.FreePorts(t, 8)
	f := w.pipeline(serveStage("a", port, 2, 1, ""), serveStage("b", port+4, 1, 1, "", otherServer...), bothConsumer)
	code, out := w.runWithin(time.Minute, "apply", f)
	require.Equal(t, 1, code, out)
	assert.Contains(t, out, "stage.both needs stage.a (2 GPUs) and stage.b (1 GPU) up at once: 3 GPUs together; this machine has 2")
	assert.NotContains(t, out, "started", "something ran:\n%s", out)
}

// A serve node waiting for GPUs another serve node holds says so: which
// node waits, for how many GPUs, held by whom, on the progress output and
// in the journal, and when the wait is over.
func TestServeGPUWaitIsTold(t *testing.T) {
	w := newWorkspace(t, 1)
	port := e2etest.FreePorts(t, 8)
	// Each server's consumer holds it until the test writes the file go.
	consumer := func(srv string) string {
		return fmt.Sprintf(`
stage "command" "use_%s" {
  run     = ["sh", "-c", "while [ ! -e go ]; do sleep 0.05; done; mkdir -p out; echo $E > out/%s.txt"]
  env     = { E = join(",", stage.%s.endpoints) }
  outputs = ["out/%s.txt"]
}
`, srv, srv, srv, srv)
	}
	f := w.pipeline(serveStage("a", port, 1, 2, ""), serveStage("b", port+4, 1, 2, "", otherServer...), consumer("a"), consumer("b"))
	cmd, output := w.startLogged("apply", f)
	stopAtEnd(t, cmd)
	waitLine := regexp.MustCompile(`… (stage\.[ab])\s+waiting for 2 GPUs since [0-9:]+: held by (stage\.[ab]) \(GPU 0,1\)`)
	e2etest.WaitFor(t, "a line saying a serve node waits for GPUs", time.Minute, func() bool { return waitLine.MatchString(output()) })
	m := waitLine.FindStringSubmatch(output())
	waiter, holder := m[1], m[2]
	assert.NotEqual(t, waiter, holder)
	w.write("go", "")
	require.NoError(t, cmd.Wait(), output())
	out := output()
	assert.Regexp(t, `… `+regexp.QuoteMeta(waiter)+`\s+done waiting for 2 GPUs after`, out)
	var waits []runlog.Entry
	for _, e := range w.journal(out) {
		if e.T == runlog.Waiting && e.Node == waiter {
			waits = append(waits, e)
		}
	}
	require.Len(t, waits, 2, out)
	assert.Equal(t, "waiting", waits[0].Status)
	assert.Contains(t, waits[0].Message, "held by "+holder+" (GPU 0,1)")
	assert.Equal(t, "over", waits[1].Status)
}

// Two serve stages given the same port: the one that starts second skips
// the port the first was given, and says so on the progress output and in
// the journal (port_skipped), as for a port another program holds.
func TestServePortOfAnotherServeStageSkippedAndSaid(t *testing.T) {
	w := newWorkspace(t, 1)
	port := e2etest.FreePorts(t, 4)
	f := w.pipeline(serveStage("a", port, 1, 0, ""), serveStage("b", port, 1, 0, "", otherServer...), bothConsumer)
	code, out := w.runWithin(time.Minute, "apply", f)
	require.Equal(t, 0, code, out)
	said := regexp.MustCompile(fmt.Sprintf(`(stage\.[ab])\s+port %d is in use \(given to (stage\.[ab]) of this apply\): skipped`, port))
	m := said.FindStringSubmatch(out)
	require.NotNil(t, m, "no line says the port was skipped:\n%s", out)
	skipper, holder := m[1], m[2]
	assert.NotEqual(t, skipper, holder)
	assert.Regexp(t, fmt.Sprintf(`%s\s+replica 1 ready at http://127.0.0.1:%d/v1`, regexp.QuoteMeta(holder), port), out)
	other := regexp.MustCompile(regexp.QuoteMeta(skipper) + `\s+replica 1 ready at http://127.0.0.1:(\d+)/v1`).FindStringSubmatch(out)
	require.NotNil(t, other, out)
	assert.NotEqual(t, fmt.Sprint(port), other[1], "the port was given twice")
	records := 0
	for _, e := range w.journal(out) {
		if e.T == runlog.Serve && e.Status == "port_skipped" && e.Node == skipper && e.Port == port {
			records++
		}
	}
	assert.Equal(t, 1, records, "port_skipped records:\n%s", out)
}
