package engine

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/syncbuf"
	"github.com/cairn-run/cairn/ui"
)

// waitingHolders records the holder field of the node_waiting events (as
// events.jsonl has them) that start a wait, per node.
type waitingHolders struct {
	mu      sync.Mutex
	holders map[string]string
}

func (w *waitingHolders) Emit(e events.Event) {
	nw, ok := e.(*events.NodeWaiting)
	if !ok || nw.Over {
		return
	}
	b, err := events.Marshal(nw)
	if err != nil {
		panic(err)
	}
	var line struct{ Node, Holder string }
	if err := json.Unmarshal(b, &line); err != nil {
		panic(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.holders == nil {
		w.holders = map[string]string{}
	}
	w.holders[line.Node] = line.Holder
}

func (w *waitingHolders) get() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.holders
}

// A node that waits for another node of its apply doing the same work
// says so, even when that node has ended (and given its key's lock back)
// by the time the waiter looks for the holder: the apply knows which of
// its nodes took the lock, and no other cairn is involved. (It used to
// look in /proc only, and, when the lock was free by then, said "the same
// work is running in another cairn".)
func TestSameWorkHolderIsThisApplyWhenTheHolderEndsFirst(t *testing.T) {
	w := newWorkspace(t, `
pipeline "same" {}
stage "command" "one" {
  run = ["true"]
}
stage "command" "two" {
  run = ["true"]
}
`)
	ended := map[string]chan struct{}{"stage.one": make(chan struct{}), "stage.two": make(chan struct{})}
	sawEnd := events.Func(func(e events.Event) {
		if ne, ok := e.(*events.NodeEnded); ok {
			close(ended[ne.Node])
		}
	})
	// The waiter looks for the holder only once the holder has ended:
	// the moment at which the holder's lock is given back, every time.
	testBeforeHolderLookup = func(addr string) {
		other := "stage.one"
		if addr == other {
			other = "stage.two"
		}
		select {
		case <-ended[other]:
		case <-time.After(30 * time.Second):
			t.Errorf("%s never ended while %s waited for it", other, addr)
		}
	}
	defer func() { testBeforeHolderLookup = nil }()
	holders := &waitingHolders{}
	r := w.apply(ApplyOptions{Parallelism: 2, Events: events.Fanout{sawEnd, holders}})
	assert.Equal(t, 1, r.res.Ran, r.out)
	assert.Equal(t, 1, r.res.Cached, r.out)
	assert.Regexp(t, `stage\.(one|two) waits: the same work is running in this apply \(stage\.(one|two)\)`, r.out)
	assert.NotContains(t, r.out, "another cairn")
	got := holders.get()
	require.Len(t, got, 1, r.out)
	for waiter, holder := range got {
		other := map[string]string{"stage.one": "stage.two", "stage.two": "stage.one"}[waiter]
		assert.Equal(t, "this apply ("+other+")", holder, "the node_waiting event's holder")
	}
}

// A node whose key's lock another live apply holds names that apply's pid
// and run, as before.
func TestSameWorkHolderIsTheOtherApply(t *testing.T) {
	w := newWorkspace(t, `
pipeline "held" {}
stage "command" "held" {
  run = ["true"]
}
`)
	l := w.Load()
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	p, diags := plan.Make(l.Graph, c, plan.Options{})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	require.Len(t, p.Nodes, 1)
	key := p.Nodes[0].Key

	// The other apply: a process with the cache's use lock, its run's lock
	// and the node's key lock open.
	lk, err := store.TryKeyLock(w.Cache, key)
	require.NoError(t, err)
	require.NotNil(t, lk)
	id := runlog.NewRunID()
	runLock := filepath.Join(w.Cache, "runs", id, "lock")
	require.NoError(t, os.MkdirAll(filepath.Dir(runLock), 0o777))
	open := func(p string) *os.File {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o666)
		require.NoError(t, err)
		return f
	}
	use, run := open(filepath.Join(w.Cache, "gc.lock")), open(runLock)
	other := exec.Command("sleep", "60")
	other.ExtraFiles = []*os.File{lk.File(), use, run}
	require.NoError(t, other.Start())
	exited := false
	defer func() {
		if !exited {
			_ = other.Process.Kill()
			_ = other.Wait()
		}
	}()
	// Only the other process holds it now.
	lk.Release()
	_, _ = use.Close(), run.Close()

	out := &syncbuf.Buffer{}
	holders := &waitingHolders{}
	done := make(chan *ApplyResult, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		res, err := Apply(ctx, ApplyOptions{Plan: p, Cache: c, NoSync: true, Parallelism: 2,
			Events: events.Fanout{ui.NewTerminal(ui.Options{Progress: out}), holders}})
		assert.NoError(t, err)
		done <- res
	}()
	for !strings.Contains(out.String(), " waits: the same work is running") {
		select {
		case res := <-done:
			t.Fatalf("the apply ended before stage.held waited: %+v\n%s", res, out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	want := "pid " + strconv.Itoa(other.Process.Pid) + ", run " + id
	assert.Contains(t, out.String(), "stage.held waits: the same work is running in "+want, out.String())
	assert.Equal(t, map[string]string{"stage.held": want}, holders.get(), "the node_waiting event's holder")
	// The other apply dies without running it: this one runs it.
	require.NoError(t, other.Process.Kill())
	_ = other.Wait()
	exited = true
	res := <-done
	require.NotNil(t, res)
	assert.Equal(t, 1, res.Ran, out.String())
}

// A node that took its key's lock while waiting for it is its holder from
// that moment, before the loop hears that it has it: a third node with
// the same key, finding the lock taken, names it.
func TestKeyTableNamesTheHolderFromTheMomentItLocks(t *testing.T) {
	dir := t.TempDir()
	key := strings.Repeat("ab", 32)
	var keys keyTable
	one, two, three := &nodeState{key: key}, &nodeState{key: key}, &nodeState{key: key}

	lk, holder, _, err := keys.try(dir, one, store.NodePaths{})
	require.NoError(t, err)
	require.NotNil(t, lk)
	assert.Nil(t, holder)
	one.locked = lk

	lk, holder, _, err = keys.try(dir, two, store.NodePaths{})
	require.NoError(t, err)
	assert.Nil(t, lk)
	assert.Same(t, one, holder, "the lock is one's")

	// two waits for it, as its worker does; one gives it back.
	got := make(chan *store.KeyLock, 1)
	go func() {
		lk, err := store.WaitKeyLock(context.Background(), dir, key, store.NodePaths{}, time.Minute, func() (*store.KeyLock, string, error) {
			lk, _, output, err := keys.try(dir, two, store.NodePaths{})
			return lk, output, err
		}, nil)
		assert.NoError(t, err)
		got <- lk
	}()
	keys.release(one)
	one.locked = nil
	lk = <-got
	require.NotNil(t, lk)
	// The loop has not set two.locked yet.
	_, holder, _, err = keys.try(dir, three, store.NodePaths{})
	require.NoError(t, err)
	assert.Same(t, two, holder, "the lock is two's")

	// A node without the lock (a twin service) gives nothing back.
	keys.release(three)
	_, holder, _, _ = keys.try(dir, three, store.NodePaths{})
	assert.Same(t, two, holder)

	two.locked = lk
	keys.release(two)
	lk, holder, _, err = keys.try(dir, three, store.NodePaths{})
	require.NoError(t, err)
	require.NotNil(t, lk, "the lock is free once two gave it back")
	assert.Nil(t, holder)
	three.locked = lk
	keys.release(three)
}

// The locks of the paths a node writes are taken in the workspace's own
// lock file: where something else stands there, the node fails with class
// setup, saying which file and what to do, and writes nothing.
func TestPathLockFileInTheWayFailsTheNode(t *testing.T) {
	w := newWorkspace(t, `
stage "command" "s" {
  run     = ["sh", "-c", "echo x > o.txt"]
  outputs = ["o.txt"]
}
`)
	in := filepath.Join(w.Root, ".cairn", "locks", "paths")
	require.NoError(t, os.MkdirAll(in, 0o777))
	r := w.apply(ApplyOptions{})
	f := failureOf(r, "stage.s")
	require.NotNil(t, f, r.out)
	assert.Equal(t, "setup", f.Class)
	assert.Contains(t, f.Message, "cannot lock the paths the node writes")
	assert.Contains(t, f.Message, in)
	assert.Contains(t, f.Message, "remove it (cairn makes it again)")
	assert.NoFileExists(t, filepath.Join(w.Root, "o.txt"))
}
