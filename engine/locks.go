package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// try takes ns's key's lock, with the locks of the paths it writes
// (outputs: outputPaths), without waiting, noting ns as its holder. When the
// key's lock is taken, it returns the node of this apply that holds it,
// nil when another process does (or a twin service's leftover, see
// twinService); when an output's is, that output (another process writes
// it: two nodes of one apply never declare one path).
func (t *keyTable) try(cacheDir string, ns *nodeState, outputs store.NodePaths) (lk *store.KeyLock, holder *nodeState, output string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	lk, output, err = store.TryNodeLock(cacheDir, ns.key, outputs)
	switch {
	case lk != nil:
		if t.held == nil {
			t.held = map[string]*nodeState{}
		}
		t.held[ns.key] = ns
	case err == nil && output == "":
		holder = t.held[ns.key]
	}
	return lk, holder, output, err
}

// outputPaths are the paths ns declares for writing (its outputs and
// result file), whose locks it holds while it runs: absolute, in the
// workspace root, the symlinks of the root and of their existing folders
// resolved, so that an apply that reached the workspace through a
// symlink locks the same paths as one that did not.
func (a *applier) outputPaths(ns *nodeState) store.NodePaths {
	root := a.g.PathCheck().RootReal()
	if ns.spec == nil {
		return store.NodePaths{Root: root}
	}
	out := make([]string, 0, len(ns.spec.Common.Outputs)+1)
	for _, p := range append(slices.Clip(ns.spec.Common.Outputs), ns.spec.Common.Result) {
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		p = filepath.Clean(p)
		out = append(out, filepath.Join(plan.ResolveExisting(filepath.Dir(p)), filepath.Base(p)))
	}
	slices.Sort(out)
	return store.NodePaths{Root: root, Abs: slices.Compact(out)}
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
// of this apply) or, when holder is nil, by another process, or, when
// output is not "", whose output's lock another process holds: a worker
// says who holds it, waits for the locks and reports back.
func (a *applier) waitForKey(ns, holder *nodeState, output string) {
	ns.status = plan.Running
	a.sched.run(ns)
	ns.started = time.Now()
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
		holderRun, writes := "", ""
		if who == "" {
			who, holderRun = a.outsideHolder(ns, output)
		}
		if output != "" {
			writes = output
			if rel, err := filepath.Rel(a.g.PathCheck().RootReal(), output); err == nil && filepath.IsLocal(rel) {
				writes = rel
			}
		}
		// Stamped as it is written, after the holder's lookup in /proc:
		// the log stays in the order of its times.
		a.emit(&events.NodeWaiting{Node: ns.n.Addr, Holder: who, Writes: writes})
		outputs := a.outputPaths(ns)
		lk, err := store.WaitKeyLock(ctx, a.cache.Dir, ns.key, outputs, a.opts.LockTimeout, func() (*store.KeyLock, string, error) {
			lk, _, output, err := a.keys.try(a.cache.Dir, ns, outputs)
			return lk, output, err
		}, func(n int, run string) {
			if run == "" {
				run = "(unknown)"
			}
			a.info("killed %d process(es) left holding %s by run %s, which is gone", n, ns.n.Addr, run)
		})
		a.events <- event{id: ns.n.ID, kind: evLocked, locked: lk, err: err, holder: holderRun}
	}()
}

// outsideHolder says who holds ns's key's lock (output's, when not "")
// when no node of this apply does, as /proc tells: the pid and run of the
// live apply holding it, and that run ("" when unknown).
func (a *applier) outsideHolder(ns *nodeState, output string) (who, run string) {
	h := store.KeyLockHolder(a.cache.Dir, ns.key)
	if output != "" {
		h = store.OutputLockHolder(a.g.PathCheck().RootReal(), output)
	}
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
