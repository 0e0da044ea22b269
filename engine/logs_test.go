package engine

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/ui"
)

const logsPipeline = `
pipeline "logs" {}
stage "command" "quiet" {
  run = ["true"]
}
stage "command" "talks" {
  shell = true
  run   = "echo hello; head -c 3000000 /dev/zero | tr '\\0' x"
}
stage "command" "fails" {
  shell = true
  run   = "echo 'it went wrong' >&2; exit 4"
}
stage "command" "dies" {
  run = ["false"]
}
`

// A stream a node writes nothing to leaves no file; what it writes is
// all there; a failure names the logs that exist.
func TestNodeLogsAreMadeWithTheirFirstByte(t *testing.T) {
	w := newWorkspace(t, logsPipeline)
	l := w.Load()
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	p, diags := plan.Make(l.Graph, c, plan.Options{})
	require.False(t, diags.HasErrors())
	var sb strings.Builder
	res, err := Apply(context.Background(), ApplyOptions{Plan: p, Cache: c, Events: ui.NewTerminal(ui.Options{Progress: &sb}), NoSync: true, Parallelism: 2})
	require.NoError(t, err)
	require.Equal(t, 2, res.Ran, sb.String())
	require.Equal(t, 2, res.Failed, sb.String())
	run := filepath.Join(w.Cache, "runs", res.RunID)
	stem := func(a string) string { return nodeLog(run, a, 1) }

	for _, p := range []string{stem("stage.quiet") + ".out", stem("stage.quiet") + ".err", stem("stage.talks") + ".err", stem("stage.fails") + ".out"} {
		assert.NoFileExists(t, p)
	}
	b, err := os.ReadFile(stem("stage.talks") + ".out")
	require.NoError(t, err)
	want := "hello\n" + strings.Repeat("x", 3000000)
	assert.Equal(t, sha256.Sum256([]byte(want)), sha256.Sum256(b), "the whole output, in order (%d bytes)", len(b))

	failures := map[string]Failure{}
	for _, f := range res.Failures {
		failures[f.Address] = f
	}
	f := failures["stage.fails"]
	assert.Equal(t, []string{stem("stage.fails") + ".err"}, f.Logs)
	assert.Contains(t, f.Tail, "it went wrong")
	assert.False(t, f.NoOutput)
	f = failures["stage.dies"]
	assert.Empty(t, f.Logs)
	assert.True(t, f.NoOutput, "the failure says the node wrote nothing")
}

// The log is written as the node writes: it can be followed while the
// node runs. The node waits (up to 60 s, then fails) for a file the test
// makes only once it has read the node's first line from the log.
func TestNodeLogIsLive(t *testing.T) {
	w := newWorkspace(t, `
pipeline "live" {}
stage "command" "waits" {
  shell = true
  run   = "echo ready; i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; test -e go"
}
`)
	done := make(chan applyRun, 1)
	go func() { done <- w.apply(ApplyOptions{}) }()
	var seen bool
	for i := 0; i < 600 && !seen; i++ {
		logs, _ := filepath.Glob(filepath.Join(w.Cache, "runs", "*", "logs", "waits.out"))
		for _, p := range logs {
			if b, _ := os.ReadFile(p); string(b) == "ready\n" {
				seen = true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.True(t, seen, "the node's first line never reached its log while it ran")
	w.Write("go", "")
	r := <-done
	assert.Equal(t, 1, r.res.Ran, r.out)
}

// A process that leaves the node's process group keeps the node's output
// pipe open; the node ends all the same, with what was written before.
func TestEscapedProcessDoesNotHoldTheNode(t *testing.T) {
	w := newWorkspace(t, `
pipeline "escape" {}
stage "command" "leaves" {
  shell = true
  run   = "echo before; setsid sh -c 'echo $$ > escaped.pid; sleep 30; touch escaped.ended' & sleep 0.2; echo after"
}
`)
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(w.Root, "escaped.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	r := w.apply(ApplyOptions{})
	assert.Equal(t, 1, r.res.Ran, r.out)
	assert.NoFileExists(t, filepath.Join(w.Root, "escaped.ended"), "the apply waited for the escaped process")
	b, err := os.ReadFile(nodeLog(filepath.Join(w.Cache, "runs", r.res.RunID), "stage.leaves", 1) + ".out")
	require.NoError(t, err)
	assert.Equal(t, "before\nafter\n", string(b))
}
