package engine

import (
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
	"github.com/cairn-run/cairn/stages"
)

// writeExecutor runs `write FILE` in-process, writing the file's own name
// into it, and reports each node it starts.
func writeExecutor(started chan<- string) executor.Executor {
	return inProcess{name: "write", run: func(spec *executor.Spec) (*stages.ProcResult, error) {
		started <- spec.Node
		return write(spec)
	}}
}

func write(spec *executor.Spec) (*stages.ProcResult, error) {
	res := &stages.ProcResult{Started: time.Now()}
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

// A dependent starts before its upstream's record is synced (group
// commit), even before it is written (release); that record is written
// without waiting for a sync round, the dependent's own record is written
// only once its upstream's is durable (records become durable in order),
// and the apply returns only once every record is durable.
func TestGroupCommitDependentStartsBeforeUpstreamSync(t *testing.T) {
	l, c, p := planDurable(t, `
pipeline "gc" {}
stage "command" "a" {
  run     = ["write", "a.txt"]
  outputs = ["a.txt"]
}
stage "command" "b" {
  run     = ["write", "b.txt"]
  outputs = ["b.txt"]
  after   = [stage.a]
}
`)
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
		res, err = Apply(context.Background(), ApplyOptions{Plan: p, Cache: c, Executor: writeExecutor(started), Parallelism: 2, Progress: &out})
		done <- err
	}()
	require.Equal(t, "stage.a", <-started)
	require.Equal(t, "stage.b", <-started, "b starts while a's record waits for its sync")
	assert.Equal(t, int64(0), c.Durable(), "no record is durable yet")
	// a's record is written without a sync round (none can end); b's
	// cannot be while no round ends.
	require.Eventually(t, func() bool { return c.Written() >= 1 }, time.Minute, time.Millisecond)
	assert.Equal(t, int64(1), c.Written(), "b's record waits for a's to be durable")

	// a's record is in the index file: another process sees it.
	other, err := store.Open(c.Dir, store.Options{NoSync: true})
	require.NoError(t, err)
	assert.True(t, other.Has(keyA), "a's record is in the index file")
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
	assert.GreaterOrEqual(t, rounds.Load(), int64(2), "a's record was synced before b's was written, b's before the end")
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
	res, err := Apply(context.Background(), ApplyOptions{Plan: p, Cache: c, Executor: writeExecutor(started), Parallelism: 4, Progress: &strings.Builder{}})
	require.NoError(t, err)
	assert.Equal(t, n, res.Ran)
	assert.Equal(t, int64(n), c.Durable())
	mu.Lock()
	defer mu.Unlock()
	assert.Less(t, rounds, n, "records share sync rounds")
}

// Sync rounds run when a starting node needs its upstreams' records
// durable, not once per record: a run of independent nodes followed by one
// dependent makes a round when the dependent starts (for every record
// written so far) and one at the end, not one per record.
func TestGroupCommitRoundsWhenNeeded(t *testing.T) {
	const n = 20
	_, c, p := planDurable(t, widePipeline(n, "stage \"command\" \"z\" {\n  run = [\"write\", \"z\"]\n  outputs = [\"z\"]\n  after = [stage.s0]\n}\n"))
	c.SyncDelay = time.Hour // no round comes unasked
	var mu sync.Mutex
	rounds := 0
	c.SyncGate = func() {
		if c.Written() > c.Durable() {
			mu.Lock()
			rounds++
			mu.Unlock()
		}
	}
	started := make(chan string, n+1)
	res, err := Apply(context.Background(), ApplyOptions{Plan: p, Cache: c, Executor: writeExecutor(started), Parallelism: 1, Progress: &strings.Builder{}})
	require.NoError(t, err)
	assert.Equal(t, n+1, res.Ran)
	assert.Equal(t, int64(n+1), c.Durable(), "every record is durable when the apply returns")
	mu.Lock()
	defer mu.Unlock()
	// z's own commit may run the round it asked for before the syncer
	// does, which then has z's record to sync: three at most.
	assert.LessOrEqual(t, rounds, 3, "a round for z's upstream (and every record before it), one at the end")
}
