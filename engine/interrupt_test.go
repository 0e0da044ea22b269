package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/ui"
)

// applyInterrupted is w.apply with the apply interrupted (its context
// cancelled, as Ctrl-C does) when the first node is taken from the cache,
// from within that event: while the apply restores cached nodes.
func (w *workspace) applyInterrupted(vars ...string) applyRun {
	w.T.Helper()
	l := w.Load(vars...)
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(w.T, err)
	defer c.Close()
	p, diags := plan.Make(l.Graph, c, plan.Options{})
	require.False(w.T, diags.HasErrors(), "%s", diags.Error())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var sb strings.Builder
	stop := events.Func(func(e events.Event) {
		if ne, ok := e.(*events.NodeEnded); ok && ne.Status == "cached" {
			cancel()
		}
	})
	opts := ApplyOptions{Plan: p, Cache: c, NoSync: true, Parallelism: 2,
		Events: events.Fanout{ui.NewTerminal(ui.Options{Progress: &sb}), stop}}
	res, err := Apply(ctx, opts)
	require.NoError(w.T, err, sb.String())
	return applyRun{res: res, out: sb.String()}
}

const interruptPipeline = `
pipeline "t" {}
variable "v" {
  default = "1"
}
stage "command" "gen" {
  for_each = toset(["a", "b", "c", "d"])
  run      = ["sh", "-c", "mkdir -p out && echo ${each.key} > out/${each.key}.txt"]
  outputs  = ["out/${each.key}.txt"]
}
stage "command" "last" {
  after   = [stage.gen]
  run     = ["sh", "-c", "echo ${var.v} >> last.log"]
  outputs = ["last.log"]
}
`

// An interrupt while cached outputs are restored stops the apply there:
// no further restore begins, no node starts (last, whose key changed,
// would run next), and the apply ends interrupted, also when every node
// is cached. The next apply takes up what was left.
func TestInterruptWhileRestoringStartsNothing(t *testing.T) {
	w := newWorkspace(t, interruptPipeline)
	r := w.apply(ApplyOptions{})
	require.Equal(t, 5, r.res.Ran, r.out)
	require.NoError(t, os.RemoveAll(filepath.Join(w.Root, "out")))

	r = w.applyInterrupted("v=2")
	assert.True(t, r.res.Interrupted, r.out)
	assert.Equal(t, 1, r.res.Cached, "no restore begins after the interrupt: %s", r.out)
	assert.Equal(t, 0, r.res.Ran, r.out)
	assert.Equal(t, "1\n", w.Read("last.log"), "no node starts after the interrupt")

	// Every node cached: the apply is interrupted all the same.
	require.NoError(t, os.RemoveAll(filepath.Join(w.Root, "out")))
	r = w.applyInterrupted()
	assert.True(t, r.res.Interrupted, r.out)
	assert.Equal(t, 1, r.res.Cached, r.out)

	r = w.apply(ApplyOptions{}, "v=2")
	assert.False(t, r.res.Interrupted, r.out)
	assert.Equal(t, 1, r.res.Ran, r.out)
	assert.Equal(t, 4, r.res.Cached, r.out)
	assert.Equal(t, "1\n2\n", w.Read("last.log"))
}
