package engine

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/syncbuf"
	"github.com/cairn-run/cairn/ui"
)

// A node waiting for the same work done elsewhere shows how long it has
// waited and what it waits for, not the time since year 1.
func TestLiveDisplayShowsAWaitingNode(t *testing.T) {
	w := newWorkspace(t, `
pipeline "wait" {}
stage "command" "a" {
  shell   = true
  run     = "while [ ! -e go ]; do sleep 0.02; done; echo hi > o.txt"
  outputs = ["o.txt"]
}
stage "command" "b" {
  shell   = true
  run     = "while [ ! -e go ]; do sleep 0.02; done; echo hi > o.txt"
  outputs = ["o.txt"]
}
`)
	l := w.Load()
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	p, _ := plan.Make(l.Graph, c, plan.Options{})
	out := &syncbuf.Buffer{}
	done := make(chan *ApplyResult)
	// Bounds the test should the display never show the line.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		tty := ui.NewTerminal(ui.Options{Progress: out, Live: true})
		defer tty.Close()
		res, err := Apply(ctx, ApplyOptions{Plan: p, Cache: c, Events: tty, NoSync: true, Parallelism: 2})
		assert.NoError(t, err)
		done <- res
	}()
	// Either node may be the one that waits.
	waiting := regexp.MustCompile(`stage\.[ab]  (\d+)s  waiting: the same work is running in this apply`)
	for !waiting.MatchString(out.String()) {
		select {
		case res := <-done:
			t.Fatalf("apply ended before the waiting node was shown: %+v\n%s", res, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(w.Root, "go"), nil, 0o644))
	res := <-done
	assert.Equal(t, 1, res.Ran)
	assert.Equal(t, 1, res.Cached)
	assert.NotRegexp(t, `stage\.[ab]  \d+h`, out.String(), "no elapsed time counted in hours")
}
