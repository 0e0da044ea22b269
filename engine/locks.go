package engine

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/events"
)

// testBeforeHolderLookup, set by engine's own tests, is called by a node
// waiting for its key's lock before it looks up who holds it (in /proc,
// when no node of this apply does) and says so. It is nil otherwise.
var testBeforeHolderLookup func(addr string)

// keyTable is which node of this apply holds each key's lock. A lock is
// taken (and given back) under its mutex together with its entry: a node
// that finds the lock taken reads, under the same mutex, the node of this
// apply that holds it, and when none does, the holder is outside this
// apply. The loop takes locks and gives them back; the workers of the
// nodes waiting for a lock take it too. The zero value is ready to use.
type keyTable struct {
	mu   sync.Mutex
	held map[string]*nodeState
}

// try takes ns's key's lock without waiting, noting ns as its holder. When
// the lock is taken, it returns the node of this apply that holds it, nil
// when another process does (or a twin service's leftover, see
// twinService).
func (t *keyTable) try(cacheDir string, ns *nodeState) (lk *store.KeyLock, holder *nodeState, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	lk, err = store.TryKeyLock(cacheDir, ns.key)
	switch {
	case lk != nil:
		if t.held == nil {
			t.held = map[string]*nodeState{}
		}
		t.held[ns.key] = ns
	case err == nil:
		holder = t.held[ns.key]
	}
	return lk, holder, err
}

// release gives back ns's key's lock, if it holds one.
func (t *keyTable) release(ns *nodeState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ns.locked != nil && t.held[ns.key] == ns {
		delete(t.held, ns.key)
	}
	ns.locked.Release()
}

// releaseKey releases the node's key lock, if it holds one, and forgets it.
func (a *applier) releaseKey(ns *nodeState) {
	a.keys.release(ns)
	ns.locked = nil
}

// waitForKey parks a node whose key's lock is taken, by holder (a node
// of this apply) or, when holder is nil, by another process: a worker
// says who holds it, waits for the lock and reports back.
func (a *applier) waitForKey(ns, holder *nodeState) {
	ns.status = plan.Running
	a.sched.run(ns)
	ns.started = time.Now()
	started := ns.started
	ctx := a.ctx
	who := ""
	if holder != nil {
		// Another node of this pipeline does the same work: what it does
		// now, and whether it is still at it when the line is written,
		// does not change who took the lock.
		who = "this apply (" + holder.n.Addr + ")"
	}
	go func() {
		if testBeforeHolderLookup != nil {
			testBeforeHolderLookup(ns.n.Addr)
		}
		holderRun := ""
		if who == "" {
			who, holderRun = a.outsideHolder(ns)
		}
		a.emit(&events.NodeWaiting{Head: events.Head{Time: started}, Node: ns.n.Addr, Holder: who})
		lk, err := store.WaitKeyLock(ctx, a.cache.Dir, ns.key, a.opts.LockTimeout, func() (*store.KeyLock, error) {
			lk, _, err := a.keys.try(a.cache.Dir, ns)
			return lk, err
		}, func(n int, run string) {
			if run == "" {
				run = "(unknown)"
			}
			a.info("killed %d process(es) left holding %s by run %s, which is gone", n, ns.n.Addr, run)
		})
		a.events <- event{id: ns.n.ID, kind: evLocked, locked: lk, err: err, holder: holderRun}
	}()
}

// outsideHolder says who holds ns's key's lock when no node of this
// apply does, as /proc tells: the pid and run of the live apply holding
// it, and that run ("" when unknown).
func (a *applier) outsideHolder(ns *nodeState) (who, run string) {
	h := store.KeyLockHolder(a.cache.Dir, ns.key)
	switch {
	case h.PID == os.Getpid() || h.RunID == a.runID:
		// A node process of this apply between fork and exec still has
		// its files open, another node's lock and the run folder lock
		// included: it reads as this apply.
		return "this apply", ""
	case h.PID > 0:
		who = fmt.Sprintf("pid %d", h.PID)
		if h.RunID != "" {
			who += fmt.Sprintf(", run %s", h.RunID)
		}
		return who, h.RunID
	}
	return "another cairn", ""
}
