package engine

import (
	"os"
	"slices"
	"sort"
	"time"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/gpu"
)

// dispatch starts every ready node that resources allow, in plan order.
// Prepared nodes that need a CPU slot wait in the schedule's CPU queue
// and are looked at only while a slot is free, so that a run with
// thousands of nodes ready at once does not look at each of them on every
// event.
func (a *applier) dispatch() {
	var kept []int
	for !a.interrupted() {
		if len(a.sched.ready) > 0 {
			kept = append(kept, a.dispatchReady()...)
		}
		a.startCPUNodes()
		// Nodes finished inline there (a cache hit found once locked) may
		// have made others ready: another round.
		if len(a.sched.ready) == 0 {
			break
		}
	}
	sort.Ints(kept)
	a.sched.ready = slices.Compact(kept)
}

// failStuck fails the nodes that are ready but cannot start while nothing
// runs that could free what they wait for, naming them, so that a scheduler
// that can make no progress ends instead of waiting for ever.
func (a *applier) failStuck() {
	stuck := a.sched.takeStuck()
	msg := stuckMessage(stuck)
	for _, ns := range stuck {
		if ns.status == plan.Pending {
			a.fail(ns, failclass.Setup, msg)
		}
	}
}

// dispatchReady prepares the ready nodes (which finishes some inline:
// cached, skipped, failed), queues those that need a CPU slot and tries to
// start the others. It returns those that stay ready.
func (a *applier) dispatchReady() (kept []int) {
	queue := a.batchOrder(a.sched.takeReady())
	for i := 0; i < len(queue); i++ {
		id := queue[i]
		if a.interrupted() {
			// Nothing more starts: the rest stay pending.
			return append(kept, queue[i:]...)
		}
		ns := a.nodes[id]
		if ns.status == plan.Pending && !a.sched.inFlight(id) {
			switch {
			case !ns.prepared && a.prepare(ns):
				// Finished inline.
			case a.sched.usesCPUSlot(ns):
				a.sched.queueCPU(id)
			default:
				// A node refused while being admitted (no free GPU) has
				// failed: it is not kept waiting.
				if a.tryStart(ns) && ns.status == plan.Pending {
					kept = append(kept, id)
				}
			}
		}
		// Nodes finished inline may have made others ready: finish
		// made them ready in the schedule.
		if len(a.sched.ready) > 0 {
			queue = append(queue, a.batchOrder(a.sched.ready)...)
			a.sched.ready = a.sched.ready[:0]
		}
	}
	return kept
}

// startCPUNodes starts queued CPU nodes, lowest (earliest in the plan)
// first, while CPU slots are free. A node that cannot start for another
// reason (its stage's concurrency, more slots than are free) stays queued
// and the next one is tried.
func (a *applier) startCPUNodes() {
	var blocked []int
	for !a.interrupted() {
		id, ok := a.sched.nextCPU()
		if !ok {
			break
		}
		ns := a.nodes[id]
		if ns.status != plan.Pending || a.sched.inFlight(id) {
			continue
		}
		if a.tryStart(ns) && ns.status == plan.Pending {
			blocked = append(blocked, id)
		}
	}
	for _, id := range blocked {
		a.sched.queueCPU(id)
	}
}

// tryStart prepares a ready node and starts it if it can. It returns
// whether the node stays ready (it could not start now); false when it is
// in flight or finished.
func (a *applier) tryStart(ns *nodeState) (requeue bool) {
	if !ns.prepared {
		if done := a.prepare(ns); done {
			return false
		}
	}
	if grp := a.sched.groups[ns.n.Stage.Name]; grp != nil && grp.policy.Strict && !grp.decided {
		// A strict batch's variant waits for the others' keys.
		return true
	}
	if !a.sched.canRunMore() {
		return true
	}
	if ns.locked == nil && !a.sched.couldAdmit(ns) {
		// No slot for it now: it takes its key's lock (a file descriptor
		// held until it ends) only when it can start, so that thousands of
		// ready nodes do not hold thousands of descriptors.
		return true
	}
	if ns.locked == nil {
		lk, holder, output, err := a.keys.try(a.cache.Dir, ns, a.outputPaths(ns))
		if err != nil {
			a.fail(ns, failclass.Setup, err.Error())
			return false
		}
		if lk == nil && (output != "" || !twinService(ns, holder)) {
			a.waitForKey(ns, holder, output)
			return false
		}
		ns.locked = lk
		// Another process may have finished it just before we locked: the
		// index is read again (not for a node that runs all the same, and
		// a failed read takes nothing).
		if !a.mustRun(ns) && a.cache.Refresh() == nil && a.takeCachedIfDone(ns) {
			return false
		}
		if a.sameWorkFailed(ns) {
			return false
		}
	}
	if a.interrupted() || !a.admit(ns) {
		return true
	}
	a.launch(ns)
	return false
}

// admit checks and takes the resources a node needs: its stage's
// concurrency, a CPU slot or GPU leases, and its batch group's turn.
func (a *applier) admit(ns *nodeState) bool {
	if !a.sched.underConcurrency(ns) {
		return false
	}
	if grp := a.sched.groups[ns.n.Stage.Name]; grp != nil {
		if !grp.admit(a, ns) {
			return false
		}
	} else if ns.spec.Common.GPUs > 0 {
		ok, n, refusal := a.sched.takeGPUs(a.ctx, ns, gpu.Holder{RunID: a.runID, Node: ns.n.Addr, PID: os.Getpid(), Since: time.Now()})
		if !ok {
			if refusal != "" {
				a.fail(ns, failclass.Setup, refusal)
			} else {
				a.gpuWaiting(ns, n)
			}
			return false
		}
		a.gpuWaitOver(ns)
		a.emit(&events.GPULeased{Node: ns.n.Addr, GPUs: ns.lease.Devices})
	} else if !a.sched.takeCPU(ns) {
		return false
	}
	a.sched.admitted(ns)
	return true
}

func (a *applier) releaseResources(ns *nodeState) {
	a.sched.releaseSlot(ns)
	if ns.lease != nil {
		a.emit(&events.GPUReleased{Node: ns.n.Addr, GPUs: ns.lease.Devices})
	}
	a.sched.releaseLease(ns)
	if grp := a.sched.groups[ns.n.Stage.Name]; grp != nil {
		grp.release(a, ns)
	}
}

// twinService reports whether ns is a service whose key another service
// node of this apply holds (holder, see keyTable.try): two serve stages of
// one pipeline with the same model, weights and command line. Each is a
// server of its own (a service is never cached), and waiting for the
// other's key would wait for its consumers, which may wait for this one:
// ns starts without the key's lock.
func twinService(ns, holder *nodeState) bool {
	return ns.svc != nil && holder != nil && holder.svc != nil
}
