package engine

import (
	"fmt"

	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/process"
)

// takeCachedIfDone takes a node from the cache when the index holds its
// record and nothing makes it run all the same (--replace, a strict batch
// that runs whole): another process finished it while this apply waited.
func (a *applier) takeCachedIfDone(ns *nodeState) bool {
	return !a.mustRun(ns) && a.cache.Has(ns.key) && a.takeCached(ns)
}

// takeCached finishes a node from its cache record: outputs restored and
// verified, postconditions evaluated. A damaged entry is evicted and the
// node runs instead (returns false); when the workspace keeps an output
// from being written, the node fails and the record stays.
func (a *applier) takeCached(ns *nodeState) bool {
	rec, ok := a.cache.Lookup(ns.key)
	if !ok {
		return false
	}
	return a.takeCachedRecord(ns, rec)
}

// takeCachedRecord is takeCached with the node's record already read.
func (a *applier) takeCachedRecord(ns *nodeState, rec *store.Record) bool {
	if a.interrupted() {
		// No restore begins after an interrupt: the node stays pending,
		// and the next apply takes it from the cache.
		return false
	}
	if rec.Debug && !a.opts.Debug[ns.n.Addr] {
		// A single-variant debug run's result is not the batch's.
		return false
	}
	if why, _ := plan.NotNeededStale(ns.n, ns.spec, rec); why != "" {
		// Made while the node was not needed, and it is now.
		return false
	}
	if _, differs := plan.OutFolderDiffers(a.g.Root, ns.n, rec, a.cache.Stat); differs {
		// The out folder is the truth: the node runs and takes it.
		return false
	}
	todo := a.outputsToRestore(rec)
	if a.waitsToRestore(ns, len(todo) > 0) {
		return true
	}
	if why := a.clearInTheWay(ns, rec); why != "" {
		// The record is good: another workspace may restore it.
		a.fail(ns, failclass.Result, why)
		return true
	}
	if err := a.restoreOutputs(rec, todo); err != nil {
		if !restoreDamaged(err) {
			// The record is good: another workspace may restore it.
			a.fail(ns, failclass.Result, err.Error())
			return true
		}
		a.warn("%s: the cached result is damaged (%s); evicting it and running the node again", ns.n.Addr, err)
		_ = a.cache.Evict(ns.key)
		return false
	}
	a.removeOtherConfigurations(ns, rec)
	if err := a.cache.Point(a.g.Config.Name, ns.n.Addr, ns.key); err != nil {
		a.warn("%s: the cache's index cannot note that the workspace holds this configuration's outputs (%s): plan's reasons compare with the configuration run before it", ns.n.Addr, err)
	}
	ns.record = rec
	ns.status = plan.Cached
	// The node's lock, taken when another process had just finished it,
	// is not needed to restore it: holding it until this apply ends would
	// make other applies wait for nothing, and two applies holding what the
	// other waits for would wait for ever.
	a.releaseKey(ns)
	a.res.Cached++
	a.setFinal(ns)
	_ = a.j.NoteCached(ns.n.Addr, ns.key)
	if !a.checkPost(ns) {
		return true
	}
	a.nodeEnded(ns, "cached")
	ns.shedRun()
	a.finish(ns)
	return true
}

// waitsToRestore takes, for a restore that writes in the workspace (writes:
// an output missing or not as cached), the locks of the paths ns writes, as
// a node that runs does (TryNodeLock): a node of another apply that writes
// one of them (other work, another --var) may be writing it now, and a
// restore under it would leave that node to record the cached content as
// its own. When one is held it parks ns until it is free (waitForKey; the
// loop then takes the node from the cache again, under the locks) and
// reports true. The locks are given back once the node is restored.
func (a *applier) waitsToRestore(ns *nodeState, writes bool) bool {
	if ns.locked != nil || !writes {
		return false
	}
	outputs := a.outputPaths(ns)
	if len(outputs.Abs) == 0 {
		return false
	}
	lk, holder, output, err := a.keys.try(a.cache.Dir, ns, outputs)
	switch {
	case err != nil:
		// No lock to be had (the lock file cannot be opened): the restore
		// goes on as before locks were taken for it.
		return false
	case lk == nil:
		a.waitForKey(ns, holder, output)
		return true
	}
	ns.locked = lk
	return false
}

// mayRelease reports whether a node's downstreams may start once its
// outputs are stored, while its record is being written to the cache
// (release): when its success is known then. A node with postconditions
// is judged on its record in the loop, and a batch's variants end with
// their batch; a node without downstreams has nothing to release.
func (a *applier) mayRelease(ns *nodeState) bool {
	return len(ns.n.Downs) > 0 && len(ns.n.Stage.Postconditions) == 0 && a.sched.groups[ns.n.Stage.Name] == nil
}

// release makes a node's downstreams ready on its evSettled event: it has
// succeeded, its outputs are in the cache's blobs and its record is made,
// and its worker is writing the record to the index. The ok line and the
// count wait for evDone, when the record is in the index (a node shown ok
// is not run again by the next apply). Should the record not be written,
// the node fails then; its downstreams made ready before that fail too,
// without writing a record (persist), and the others are skipped.
func (a *applier) release(ns *nodeState) {
	ns.released = true
	ns.status = plan.OK
	a.setFinal(ns)
	a.finish(ns)
}

// finish makes a node's downstreams ready.
func (a *applier) finish(ns *nodeState) { a.sched.upstreamDone(ns) }

func (a *applier) fail(ns *nodeState, class, msg string) {
	ns.class, ns.message = class, msg
	a.markFailed(ns)
}

func (a *applier) markFailed(ns *nodeState) {
	if ns.attempts > 0 && ns.key != "" && workFailure[ns.class] && a.failedWork[ns.key] == nil {
		// It ran the work, which failed: a node with its key does not
		// run it again (sameWorkFailed).
		if a.failedWork == nil {
			a.failedWork = map[string]*nodeState{}
		}
		a.failedWork[ns.key] = ns
	}
	a.releaseKey(ns)
	ns.status = plan.Failed
	// Nothing cairn writes about the node shows a sensitive value (a node
	// that failed before it ran has not listed them yet).
	if ns.secrets == nil && ns.spec != nil {
		ns.secrets = plan.SensitiveStrings(ns.spec.Args)
	}
	ns.message = process.RedactSecrets(ns.message, ns.secrets)
	f := Failure{Address: ns.n.Addr, Class: ns.class, Message: ns.message, Logs: executor.ExistingLogs(ns.logPaths())}
	f.Stopped = a.interrupted() && ns.class == failclass.Interrupted
	f.RefusesRestart = f.Stopped && ns.n.Stage != nil && ns.n.Stage.OnInterrupt == "fail"
	if f.Stopped {
		a.res.Stopped++
	} else {
		a.res.Failed++
	}
	a.setFinal(ns)
	f.NoOutput = ns.logs[1] != "" && len(f.Logs) == 0
	f.Refused, f.NoResume = ns.refused, ns.noResume
	if ns.res != nil {
		f.Tail = process.RedactSecrets(tailLines(ns.res.StderrTail, 8), ns.secrets)
	}
	a.res.Failures = append(a.res.Failures, f)
	e := runlog.Entry{T: runlog.Failed, Node: ns.n.Addr, Key: ns.key, Class: ns.class, Message: ns.message, Attempt: ns.attempts, Counts: ns.runCounts, Logs: f.Logs, Queued: queuedOf(ns),
		Duration: ns.lastRan.Seconds()}
	if ns.n.Kind != nil {
		e.Kind = ns.n.Kind.Name()
	}
	if ns.n.Stage != nil && ns.n.Stage.OnInterrupt == "fail" {
		e.OnInterrupt = "fail" // for gc (see writeStarted)
	}
	if ns.res != nil {
		// What the failed process used: an out-of-memory victim's peak is
		// the figure its user looks for.
		e.PeakRSS, e.PeakGPU = ns.res.PeakRSSMiB, ns.res.PeakGPUMiB
		e.Left = ns.res.Left && ns.class == failclass.Interrupted
	}
	_ = a.j.Write(e)
	a.nodeEnded(ns, "failed")
	if !ns.released {
		a.finish(ns) // a released node's downstreams were made ready already
	}
}

// workFailure are the classes of a failure of the work itself, which
// the same work (one key) meets again: not one of the node's own limits
// (its memory), of the machine (a kill, the infrastructure) or of the
// apply (interrupted). A timeout is one where the other node's timeout is
// no longer (sameWorkFailed).
var workFailure = map[string]bool{failclass.Exit: true, failclass.Result: true, failclass.Setup: true, failclass.Timeout: true}

// sameWorkFailed fails ns, with the class and message of the node of
// this apply that ran the same work (ns's key) and failed, and reports
// whether it did: run again, one node after another, the work would fail
// again, where plan said it runs once.
func (a *applier) sameWorkFailed(ns *nodeState) bool {
	f := a.failedWork[ns.key]
	if f == nil || f == ns {
		return false
	}
	if f.class == failclass.Timeout {
		// The timeout is the node's own: one given longer (or none)
		// runs the work.
		mine, its := ns.spec.Common.Timeout, f.spec.Common.Timeout
		if mine <= 0 || mine > its {
			return false
		}
	}
	a.fail(ns, f.class, fmt.Sprintf("the same work failed in this apply (%s): %s", f.n.Addr, f.message))
	return true
}

func (a *applier) skip(ns *nodeState, why string) {
	ns.status = plan.Skipped
	ns.message = why
	ns.class = plan.FailUpstream
	a.res.Skipped++
	a.setFinal(ns)
	_ = a.j.Note(runlog.Entry{T: runlog.Skipped, Node: ns.n.Addr, Message: why})
	a.nodeEnded(ns, "skipped")
	a.finish(ns)
}

// checkPost evaluates postconditions with self bound to the node; a false
// condition fails the node with its error_message.
func (a *applier) checkPost(ns *nodeState) bool {
	self := func() cty.Value { return a.finalInstance(ns) }
	msg, _ := a.g.EvalPostconditions(ns.n, self, a.instance)
	if msg == "" {
		return true
	}
	a.undoSuccess(ns)
	a.fail(ns, failclass.Postcondition, msg)
	return false
}

func (a *applier) undoSuccess(ns *nodeState) {
	switch ns.status {
	case plan.OK:
		a.res.Ran--
	case plan.Cached:
		a.res.Cached--
	}
}

// setFinal marks a node as having reached a final state; its instance
// object is built when an expression first needs it.
func (a *applier) setFinal(ns *nodeState) {
	ns.final = true
	ns.inst = cty.NilVal
	a.servicesDone(ns)
}

// finalInstance is the instance object of a node in a final state.
func (a *applier) finalInstance(ns *nodeState) cty.Value {
	if ns.inst == cty.NilVal {
		ns.inst = a.finishedInstance(ns)
	}
	return ns.inst
}

// finishedInstance is the instance object of a node that reached a final
// state.
func (a *applier) finishedInstance(ns *nodeState) cty.Value {
	status := ns.status
	if status == plan.Cached {
		status = plan.OK
	}
	if ns.record != nil || ns.res == nil && ns.launch == nil {
		return plan.InstanceObject(ns.n, ns.record, status, ns.class, ns.message, ns.key)
	}
	// It ran (or was admitted to its batch) and failed: no record.
	started, exit := ns.started, cty.NullVal(cty.Number)
	dur, rss, gpuMiB := cty.NumberFloatVal(0), cty.NumberFloatVal(0), cty.NumberFloatVal(0)
	if r := ns.res; r != nil {
		started = r.Started
		if r.ExitCode >= 0 {
			exit = cty.NumberIntVal(int64(r.ExitCode))
		}
		dur = cty.NumberFloatVal(r.Ended.Sub(r.Started).Seconds())
		rss, gpuMiB = cty.NumberFloatVal(r.PeakRSSMiB), cty.NumberFloatVal(r.PeakGPUMiB)
	}
	return plan.NodeInstance(ns.n, cty.NullVal(cty.DynamicPseudoType), exit, dur, rss, gpuMiB,
		plan.LaunchValue(a.runID, started, ns.launchRecord()), status, ns.class, ns.message, ns.key)
}
