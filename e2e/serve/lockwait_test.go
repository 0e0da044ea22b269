package serve_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine/runlog"
)

// Two applies share a serve stage (one key): the second waits for the
// first, which evaluates every item meanwhile. Once it has the lock, the
// second asks again whether a consumer will send a request, as plan does:
// none will, so it starts no server, leases no GPU, and takes the items
// from the store.
func TestServeNotStartedAfterWaitingForAnotherApply(t *testing.T) {
	w := newWorkspace(t, 6)
	port := e2etest.FreePorts(t, 4)
	srv := serveStage("tm", port, 1, 1, "")
	// The first apply's evaluation starts only once the test writes go.
	gate := `
stage "command" "gate" {
  run     = ["sh", "-c", "while [ ! -e go ]; do sleep 0.05; done; echo ok > gate.txt"]
  outputs = ["gate.txt"]
}
`
	first := strings.Replace(evalStage("a", "tm"), "  scores", "  after         = [stage.gate]\n  scores", 1)
	w.write("p1.hcl", "pipeline \"serve-test\" {}\n"+srv+gate+first)
	w.write("p2.hcl", "pipeline \"serve-test\" {}\n"+srv+evalStage("b", "tm"))
	p1, out1 := w.startLogged("apply", "p1.hcl")
	stopAtEnd(t, p1)
	e2etest.WaitFor(t, "the first apply to serve", time.Minute, func() bool { return strings.Contains(out1(), "replica 1 ready") })
	p2, out2 := w.startLogged("apply", "p2.hcl")
	stopAtEnd(t, p2)
	e2etest.WaitFor(t, "the second apply to wait for stage.tm", time.Minute, func() bool {
		return strings.Contains(out2(), "stage.tm waits: the same work is running in pid")
	})
	w.write("go", "")
	require.NoError(t, p1.Wait(), out1())
	require.NoError(t, p2.Wait(), out2())
	out := out2()
	assert.Contains(t, out, "stage.tm  not started: nothing to evaluate")
	assert.Contains(t, out, "items 6/6: 0 evaluated, 6 from the store, 0 failed")
	started, leased := 0, 0
	for _, e := range w.journal(out) {
		if e.Node == "stage.tm" && e.T == runlog.Started {
			started++
		}
		if e.Node == "stage.tm" && len(e.GPUs) > 0 {
			leased++
		}
	}
	assert.Zero(t, started, "the second apply started the server:\n%s", out)
	assert.Zero(t, leased, "the second apply leased GPUs:\n%s", out)
	assert.Len(t, w.workerRequests(), 6, fmt.Sprintf("first:\n%s\nsecond:\n%s", out1(), out))
}
