package engine

import (
	"fmt"
	"os"
	"time"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/events"
)

// releaseKey releases the node's key lock, if it holds one, and forgets it.
func (ns *nodeState) releaseKey() {
	ns.locked.Release()
	ns.locked = nil
}

// keyHolder is the node of this apply that holds ns's key's lock (the
// same work), nil when none does: the lock is another process's, or free.
func (a *applier) keyHolder(ns *nodeState) *nodeState {
	for _, o := range a.nodes {
		if o != nil && o != ns && o.key == ns.key && o.locked != nil {
			return o
		}
	}
	return nil
}

// waitForKey parks a node whose key another process is running: a worker
// says who holds it, waits for the lock and reports back.
func (a *applier) waitForKey(ns *nodeState) {
	ns.status = plan.Running
	a.sched.run(ns)
	ns.started = time.Now()
	started := ns.started
	ctx := a.ctx
	// The node of this apply that runs the same work, if one does: the
	// line names it.
	sibling := ""
	if h := a.keyHolder(ns); h != nil && h.status == plan.Running {
		sibling = h.n.Addr
	}
	go func() {
		who, holder := "another cairn", ""
		// A node process between fork and exec still has this apply's
		// files open, run folder lock included: it reads as this apply.
		if h := store.KeyLockHolder(a.cache.Dir, ns.key); h.PID == os.Getpid() || h.RunID == a.runID {
			// Another node of this pipeline does the same work.
			who = "this apply"
			if sibling != "" {
				who += " (" + sibling + ")"
			}
		} else if h.PID > 0 {
			who = fmt.Sprintf("pid %d", h.PID)
			if h.RunID != "" {
				who += fmt.Sprintf(", run %s", h.RunID)
				holder = h.RunID
			}
		}
		a.emit(&events.NodeWaiting{Head: events.Head{Time: started}, Node: ns.n.Addr, Holder: who})
		lk, err := store.WaitKeyLock(ctx, a.cache.Dir, ns.key, a.opts.LockTimeout, func(n int, run string) {
			if run == "" {
				run = "(unknown)"
			}
			a.info("killed %d process(es) left holding %s by run %s, which is gone", n, ns.n.Addr, run)
		})
		a.events <- event{id: ns.n.ID, kind: evLocked, locked: lk, err: err, holder: holder}
	}()
}
