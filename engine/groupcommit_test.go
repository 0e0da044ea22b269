package engine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/ui"
)

// writeExecutor runs `write FILE` in-process, writing the file's own name
// into it, and reports each node it starts.
func writeExecutor(started chan<- string) executor.Executor {
	return inProcess{name: "write", run: func(spec *executor.Spec) (*process.Result, error) {
		started <- spec.Node
		return write(spec)
	}}
}

func write(spec *executor.Spec) (*process.Result, error) {
	res := &process.Result{Started: time.Now()}
	for _, f := range spec.Argv[1:] {
		if err := os.WriteFile(filepath.Join(spec.Dir, f), []byte(f), 0o644); err != nil {
			return nil, err
		}
	}
	res.Ended = time.Now()
	return res, nil
}

// planDurable plans a pipeline on a cache that syncs (closed when the
// test ends).
func planDurable(t *testing.T, pipeline string) (*plan.Loaded, *store.Cache, *plan.Plan) {
	t.Helper()
	w := newWorkspace(t, pipeline)
	l := w.Load()
	c, err := store.Open(w.Cache, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	p, diags := plan.Make(l.Graph, c, plan.Options{})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	return l, c, p
}

// writeChain is pipeline "pl": stage b after stage a, each writing a file
// with the write executor.
const writeChain = `
pipeline "pl" {}
stage "command" "a" {
  run     = ["write", "a.txt"]
  outputs = ["a.txt"]
}
stage "command" "b" {
  run     = ["write", "b.txt"]
  outputs = ["b.txt"]
  after   = [stage.a]
}
`

// A dependent starts before its upstream's record is synced (group
// commit), even before it is written (release); both records are written
// without waiting for a sync round, the dependent's naming its upstream's
// (which is not durable yet), and the apply returns only once every record
// is durable.
func TestGroupCommitDependentStartsBeforeUpstreamSync(t *testing.T) {
	l, c, p := planDurable(t, writeChain)
	keyA := p.Nodes[l.Graph.ByAddr["stage.a"].ID].Key
	require.NotEmpty(t, keyA)

	// Every sync round waits until the test lets it go.
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	defer open()
	var rounds atomic.Int64
	c.SyncGate = func() { rounds.Add(1); <-release }

	started := make(chan string, 4)
	var out strings.Builder
	done := make(chan error, 1)
	var res *ApplyResult
	go func() {
		var err error
		res, err = Apply(context.Background(), ApplyOptions{Plan: p, Cache: c, Executor: writeExecutor(started), Parallelism: 2, Events: ui.NewTerminal(ui.Options{Progress: &out})})
		done <- err
	}()
	require.Equal(t, "stage.a", <-started)
	require.Equal(t, "stage.b", <-started, "b starts while a's record waits for its sync")
	// Both records are written while no round can end.
	require.Eventually(t, func() bool { return c.Written() >= 2 }, time.Minute, time.Millisecond)
	assert.Equal(t, int64(0), c.Durable(), "no record is durable yet")

	// Both are in the index file: another process sees them, b's because
	// a's, which it names, is there too.
	other, err := store.Open(c.Dir, store.Options{NoSync: true})
	require.NoError(t, err)
	assert.True(t, other.Has(keyA), "a's record is in the index file")
	keyB := other.LastKey("pl", "stage.b")
	assert.True(t, keyB != "" && other.Has(keyB), "b's record is in the index file")
	require.NoError(t, other.Close())

	select {
	case err := <-done:
		t.Fatalf("the apply returned before its records were durable: %v", err)
	default:
	}
	open()
	require.NoError(t, <-done, out.String())
	assert.Equal(t, 2, res.Ran)
	assert.Equal(t, int64(2), c.Written())
	assert.Equal(t, c.Written(), c.Durable(), "every record is durable when the apply returns")
	assert.GreaterOrEqual(t, rounds.Load(), int64(1))
}

// widePipeline is a pipeline of n independent stages s0.. (each writes
// out<i>), followed by the text more.
func widePipeline(n int, more string) string {
	var b strings.Builder
	b.WriteString("pipeline \"wide\" {}\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "stage \"command\" \"s%d\" {\n  run = [\"write\", \"out%d\"]\n  outputs = [\"out%d\"]\n}\n", i, i, i)
	}
	return b.String() + more
}

// Records committed together share sync rounds: a wide cold apply makes
// fewer rounds than it commits records, and ends with all of them durable.
func TestGroupCommitSharesSyncs(t *testing.T) {
	const n = 40
	_, c, p := planDurable(t, widePipeline(n, ""))
	var mu sync.Mutex
	rounds := 0
	// The first round waits until every node has committed, so that one
	// round has many records to sync.
	all := make(chan struct{})
	c.SyncGate = func() {
		mu.Lock()
		rounds++
		first := rounds == 1
		mu.Unlock()
		if first {
			<-all
		}
	}
	started := make(chan string, n)
	go func() {
		for i := 0; i < n; i++ {
			<-started
		}
		for c.Written() < n {
			time.Sleep(time.Millisecond)
		}
		close(all)
	}()
	res, err := Apply(context.Background(), ApplyOptions{Plan: p, Cache: c, Executor: writeExecutor(started), Parallelism: 4, Events: ui.NewTerminal(ui.Options{Progress: &strings.Builder{}})})
	require.NoError(t, err)
	assert.Equal(t, n, res.Ran)
	assert.Equal(t, int64(n), c.Durable())
	mu.Lock()
	defer mu.Unlock()
	assert.Less(t, rounds, n, "records share sync rounds")
}

// A chain's records share sync rounds too: no node's record waits for its
// upstream's to be durable (it names it instead), so a chain with no round
// due before its end syncs once, at the end, with every record in the
// index and durable.
func TestGroupCommitChainSyncsOnce(t *testing.T) {
	const n = 20
	var b strings.Builder
	b.WriteString("pipeline \"chain\" {}\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "stage \"command\" \"s%d\" {\n  run = [\"write\", \"out%d\"]\n  outputs = [\"out%d\"]\n", i, i, i)
		if i > 0 {
			fmt.Fprintf(&b, "  after = [stage.s%d]\n", i-1)
		}
		b.WriteString("}\n")
	}
	_, c, p := planDurable(t, b.String())
	c.SyncDelay = time.Hour // no round comes unasked
	var rounds atomic.Int64
	c.SyncGate = func() {
		if c.Written() > c.Durable() {
			rounds.Add(1)
		}
	}
	started := make(chan string, n)
	res, err := Apply(context.Background(), ApplyOptions{Plan: p, Cache: c, Executor: writeExecutor(started), Parallelism: 2, Events: ui.NewTerminal(ui.Options{Progress: &strings.Builder{}})})
	require.NoError(t, err)
	assert.Equal(t, n, res.Ran)
	assert.Equal(t, int64(n), c.Durable(), "every record is durable when the apply returns")
	assert.Equal(t, int64(1), rounds.Load(), "one round, at the end")
	other, err := store.Open(c.Dir, store.Options{NoSync: true})
	require.NoError(t, err)
	defer other.Close()
	for i := 0; i < n; i++ {
		k := other.LastKey("chain", fmt.Sprintf("stage.s%d", i))
		require.NotEmpty(t, k, "s%d has a record", i)
		assert.True(t, other.Has(k), "s%d's record counts", i)
	}
}

// What a power loss can leave: the downstream's record reached the disk,
// its upstream's (written just before it, not synced yet) did not. The
// downstream's record names the upstream's, so it does not count either:
// the next apply runs both, although the upstream writes the same output
// again.
func TestDownstreamRecordDoesNotOutliveItsUpstreams(t *testing.T) {
	w := newWorkspace(t, writeChain)
	apply := func() *ApplyResult {
		l := w.Load()
		c, err := store.Open(w.Cache, store.Options{Warn: func(string, ...any) {}})
		require.NoError(t, err)
		defer c.Close()
		c.SyncDelay = time.Hour // no round before the end: b's record names a's
		p, diags := plan.Make(l.Graph, c, plan.Options{})
		require.False(t, diags.HasErrors(), "%s", diags.Error())
		var out strings.Builder
		res, err := Apply(context.Background(), ApplyOptions{Plan: p, Cache: c, Executor: writeExecutor(make(chan string, 4)), Parallelism: 2, Events: ui.NewTerminal(ui.Options{Progress: &out})})
		require.NoError(t, err, out.String())
		return res
	}
	require.Equal(t, 2, apply().Ran)
	require.Equal(t, 2, apply().Cached, "both records count")

	// a's record (the first action record) is lost: its bytes fail their
	// checksum, as a page the disk never got would.
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	keyA := c.LastKey("pl", "stage.a")
	require.NoError(t, c.Close())
	idx := filepath.Join(w.Cache, "index.log")
	data, err := os.ReadFile(idx)
	require.NoError(t, err)
	at := bytes.Index(data, []byte("A"+keyA+"{"))
	require.Positive(t, at, "a's action record")
	data[at+100] ^= 0xff
	require.NoError(t, os.WriteFile(idx, data, 0o644))

	res := apply()
	assert.Equal(t, 2, res.Ran, "a runs again, and b, whose record named a's")
	assert.Zero(t, res.Cached)
}
