package engine

import (
	"fmt"
	"os"
	"time"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
)

// releaseKey releases the node's key lock, if it holds one, and forgets it.
func (ns *nodeState) releaseKey() {
	ns.locked.Release()
	ns.locked = nil
}

// waitForKey parks a node whose key another process is running: a worker
// says who holds it, waits for the lock and reports back.
func (a *applier) waitForKey(ns *nodeState) {
	ns.status = plan.Running
	a.sched.run(ns)
	ns.started = time.Now()
	ctx := a.ctx
	go func() {
		who := "another cairn"
		// A node process between fork and exec still has this apply's
		// files open, run folder lock included: it reads as this apply.
		if h := store.KeyLockHolder(a.cache.Dir, ns.key); h.PID == os.Getpid() || h.RunID == a.runID {
			// Another node of this pipeline does the same work.
			who = "this apply"
		} else if h.PID > 0 {
			who = fmt.Sprintf("pid %d", h.PID)
			if h.RunID != "" {
				who += fmt.Sprintf(", run %s", h.RunID)
			}
		}
		a.printf("  … waiting for %s: running in %s\n", ns.n.Addr, who)
		a.mu.Lock()
		ns.progress = "waiting: the same work is running in " + who
		a.mu.Unlock()
		lk, err := store.WaitKeyLock(ctx, a.cache.Dir, ns.key, a.opts.LockTimeout, func(n int, run string) {
			if run == "" {
				run = "(unknown)"
			}
			a.printf("cairn: killed %d process(es) left holding %s by run %s, which is gone\n", n, ns.n.Addr, run)
		})
		a.events <- event{id: ns.n.ID, kind: evLocked, locked: lk, err: err}
	}()
}
