package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/stages"
)

// launch starts a node's worker goroutine.
func (a *applier) launch(ns *nodeState) {
	ns.status = plan.Running
	a.sched.run(ns)
	ns.started = time.Now()
	a.emit(&events.NodeStarted{Head: events.Head{Time: ns.started}, Node: ns.n.Addr, Key: ns.key})
	if a.mayRelease(ns) {
		ns.persisted = make(chan struct{})
	}
	var w *worker
	if n := len(a.idle); n > 0 {
		w, a.idle = a.idle[n-1], a.idle[:n-1]
	} else {
		w = &worker{in: make(chan *nodeState, 1)}
		a.workers = append(a.workers, w)
		go a.work(w)
	}
	ns.worker = w
	w.in <- ns // never blocks: w is idle, its one place empty
}

// worker is a goroutine that executes nodes (applier.work).
type worker struct{ in chan *nodeState }

// work executes the nodes handed to w, reporting each one's end, until in
// is closed.
func (a *applier) work(w *worker) {
	for ns := range w.in {
		ev := a.execute(ns)
		ev.id, ev.kind = ns.n.ID, evDone
		a.events <- ev
	}
}

// yieldInChain lets the loop run now on this worker's thread, after the
// worker released ns (evSettled), when ns is the only node in flight and
// the last upstream of a downstream: the loop can start that downstream,
// and nothing else runs meanwhile (a chain). The event readied the loop on
// this thread's run queue, where another thread takes it only once woken
// (tens of µs later on a small virtual machine), or this thread once the
// worker blocks, after writing the node's record: the downstream would
// wait for the record after all. Where other nodes run, the CPUs are busy
// with them, and a yield (which wakes another thread) costs more than it
// gains. The counts are the loop's, read as they stand.
func (a *applier) yieldInChain(ns *nodeState) {
	if a.sched.inFlightN.Load() != 1 {
		return
	}
	for _, d := range ns.n.Downs {
		if a.nodes[d].waiting.Load() == 1 {
			runtime.Gosched()
			return
		}
	}
}

// queuedOf is a node's last attempt's wait in a cluster's queue, in
// seconds (0 for a local process).
func queuedOf(ns *nodeState) float64 {
	if ns.res == nil {
		return 0
	}
	return ns.res.Queued.Seconds()
}

// noteFinished journals a node's end once its record is in the cache.
func (a *applier) noteFinished(ns *nodeState, rec *store.Record) {
	_ = a.j.Note(runlog.Entry{T: runlog.Finished, Node: ns.n.Addr, Key: ns.key, Attempt: ns.attempts, Duration: rec.Ended.Sub(rec.Started).Seconds(), PeakRSS: rec.PeakRSSMiB, PeakGPU: rec.PeakGPUMiB, Counts: rec.RunCounts, Queued: queuedOf(ns)})
}

// mergeRunCounts are a node's run counts after an attempt that counted
// last: with the earlier attempts' where its kind adds them up (a retry,
// stages.RunCountsMerger), else the last attempt's.
func mergeRunCounts(k stages.Kind, earlier, last map[string]int) map[string]int {
	m, ok := k.(stages.RunCountsMerger)
	switch {
	case !ok || earlier == nil:
		return last
	case last == nil:
		return earlier
	}
	return m.MergeRunCounts(earlier, last)
}

// runKind runs ns's kind once. A kind that works in cairn's own process
// (no stages.TimeoutKeeper) is ended at the stage's timeout: its context
// is cancelled then, and whatever it returns after, the node fails with
// class timeout, as a process killed at its timeout does.
func (a *applier) runKind(ns *nodeState) (*stages.Outcome, error) {
	rt := &nodeRuntime{a: a, ns: ns}
	limit := ns.spec.Common.Timeout
	if _, keeps := ns.n.Kind.(stages.TimeoutKeeper); keeps || limit <= 0 {
		return ns.n.Kind.Run(a.ctx, ns.spec, rt)
	}
	ctx, cancel := context.WithTimeout(a.ctx, limit)
	defer cancel()
	out, err := ns.n.Kind.Run(ctx, ns.spec, rt)
	if a.ctx.Err() != nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return out, err
	}
	timedOut := &stages.Outcome{Class: failclass.Timeout, Message: fmt.Sprintf("ended at its timeout of %s", limit)}
	if out != nil {
		timedOut.Proc, timedOut.RunCounts = out.Proc, out.RunCounts
	}
	return timedOut, nil
}

// execute runs a node with retries and commits its record. It runs on a
// worker goroutine and touches only its own node's state.
func (a *applier) execute(ns *nodeState) event {
	if ns.persisted != nil {
		defer ns.closePersisted()
	}
	retry := ns.n.Stage.Retry
	for {
		ns.attempts++
		ns.began, ns.lastRan = false, 0
		attemptStart := time.Now()
		earlier := ns.runCounts
		// This attempt's logs are its own: one that fails before it
		// opens any names none of the last attempt's.
		ns.class, ns.message, ns.runCounts, ns.logs = "", "", nil, [2]string{}
		var rewritten []string
		if rw, ok := ns.n.Kind.(stages.Rewriter); ok {
			rewritten = rw.RewrittenOutputs(ns.spec)
		}
		marks := markOutputs(a.g.Root, ns.spec.Common, rewritten, a.checkInside)
		ns.marked = marks.before()
		if a.cache != nil {
			marks.held, marks.key = func() (*store.Record, string) { return a.heldRecord(ns) }, ns.key
			marks.stat = a.cache.Stat
		}
		out, err := a.runKind(ns)
		ns.ended = time.Now()
		if ns.svc != nil && err == nil {
			ns.res = out.Proc
			ns.class, ns.message = out.Class, out.Message
			return a.serviceEnded(ns)
		}
		if ns.began || err == nil && out.Proc == nil {
			// Its own run time: its process's, else this attempt's (a
			// kind that works in cairn's process). An attempt whose
			// process never started (its program not found) has none.
			ns.lastRan = ns.ended.Sub(attemptStart)
			if err == nil && out.Proc != nil && out.Proc.Ended.After(out.Proc.Started) {
				ns.lastRan = out.Proc.Ended.Sub(out.Proc.Started)
			}
		}
		if err != nil {
			ns.class, ns.message = failclass.Setup, plan.OneLine(err.Error())
			ns.runCounts = mergeRunCounts(ns.n.Kind, earlier, nil)
		} else {
			ns.res = out.Proc
			ns.class, ns.message = out.Class, out.Message
			out.RunCounts = mergeRunCounts(ns.n.Kind, earlier, out.RunCounts)
			ns.runCounts = out.RunCounts
			ns.refused, ns.noResume = out.Refused, out.NoResume
			if ns.class == "" {
				var since time.Time
				if out.Proc != nil {
					since = out.Proc.Started
				}
				if msg := marks.check(since); msg != "" {
					ns.class, ns.message = failclass.Result, msg
				} else if msg := a.changedInput(ns); msg != "" {
					ns.class, ns.message = failclass.Result, msg
				}
			}
			if ns.class == "" {
				if (retry == nil || ns.attempts > retry.Max) && (ns.persisted == nil || a.sched.cpuQueued.Load() > 0) {
					// No process of this node runs again: its CPU
					// slot can go to the next node while the outputs
					// are stored and synced. A node that may be
					// released frees it with evSettled, once its
					// outputs are stored, where no node waits for a
					// slot now: one event less to wake the loop for.
					a.events <- event{id: ns.n.ID, kind: evExited}
				}
				rec, class, msg := a.settle(ns, out, marks.kept)
				if class == "" && ns.persisted != nil {
					// Its downstreams may start now: the loop reads
					// the node's state from here on, and a record that
					// cannot be written fails the node through the
					// event, without a retry.
					ns.record = rec
					a.events <- event{id: ns.n.ID, kind: evSettled}
					a.yieldInChain(ns)
					if class, msg := a.persist(ns, rec); class != "" {
						ns.persistFailed = true
						return event{class: class, message: msg}
					}
					a.noteFinished(ns, rec)
					return event{}
				}
				if class == "" {
					class, msg = a.persist(ns, rec)
				}
				if class != "" {
					ns.class, ns.message = class, msg
				} else {
					ns.record = rec
					a.noteFinished(ns, rec)
					return event{}
				}
			}
		}
		marks.release()
		if ns.class == failclass.Interrupted || retry == nil || ns.attempts > retry.Max || !slices.Contains(retry.On, ns.class) {
			return event{}
		}
		ns.message = process.RedactSecrets(ns.message, ns.secrets)
		ns.ranBefore += ns.lastRan
		// Its logs, as the last attempt's failure has them: an attempt
		// whose process never started (class setup) has no started
		// record to name its .err, where cairn said why.
		_ = a.j.Write(runlog.Entry{T: runlog.Failed, Node: ns.n.Addr, Key: ns.key, Class: ns.class, Message: ns.message, Attempt: ns.attempts, Counts: ns.runCounts, Queued: queuedOf(ns),
			Duration: ns.lastRan.Seconds(), Logs: executor.ExistingLogs(ns.logPaths())})
		a.emit(&events.NodeRetry{Node: ns.n.Addr, Key: ns.key, Attempt: ns.attempts, Class: ns.class, Message: ns.message})
	}
}

// heldRecord returns the record whose outputs ns's address was last given
// (committed, or taken from the cache), and its key: another
// configuration's where its key is not ns's; nil and "" when there is
// none. Where the record is gone (collected, evicted) it returns nil and
// the key if this workspace held it, whose files may then be in its
// folders: the last one committed in another workspace says nothing of
// them.
func (a *applier) heldRecord(ns *nodeState) (*store.Record, string) {
	if a.cache == nil {
		return nil, ""
	}
	k := a.cache.HeldKey(a.g.Config.Name, ns.n.Addr)
	if k == "" {
		return nil, ""
	}
	rec, ok := a.cache.Lookup(k)
	switch {
	case ok:
		return rec, k
	case a.cache.HeldHere(a.g.Config.Name, ns.n.Addr) == k:
		return nil, k
	}
	return nil, ""
}
