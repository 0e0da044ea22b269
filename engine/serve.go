package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/stages"
)

// A service node (stages.Service: the serve kind) runs beside its
// consumers: once its replicas are ready, Serving makes it final with its
// result (its endpoints), so that its downstreams start, while its worker
// keeps supervising the servers; once every downstream is final (no
// consumer still needs it), the channel Serving returned is closed, the
// kind stops the servers, and the node's GPUs go back to the pool once
// their memory shows freed. It is never cached: no record is committed.

// serviceState is a service node's part of its nodeState.
type serviceState struct {
	mu sync.Mutex
	// done is closed when no consumer still needs the service.
	done     chan struct{}
	doneOnce sync.Once
	serving  bool
	// idle: no consumer needed it, and it was not started (serviceIdle).
	idle bool
	// pids are the replicas' processes, by replica number.
	pids map[int]int
	// peaks are each replica's peak resident and GPU memory (MiB), the
	// most of its processes' (a restart's included), by replica number.
	peaks map[int][2]float64
	// logs are the replicas' log files (replicaN.out and .err, by
	// replica), once the node's kind returned (serviceEnded).
	logs []string
}

// notePeaks keeps a replica's process's peaks (Exec, once it ended).
func (s *serviceState) notePeaks(replica int, res *process.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.peaks == nil {
		s.peaks = map[int][2]float64{}
	}
	p := s.peaks[replica]
	s.peaks[replica] = [2]float64{max(p[0], res.PeakRSSMiB), max(p[1], res.PeakGPUMiB)}
}

// result is what the node's replicas used, as one process's result: the
// sums of their peaks (each replica's memory is its own) and every GPU
// of the lease.
func (s *serviceState) result(lease *gpu.Lease) *process.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &process.Result{}
	for _, p := range s.peaks {
		r.PeakRSSMiB += p[0]
		r.PeakGPUMiB += p[1]
	}
	if lease != nil {
		r.GPUs = append([]int(nil), lease.Devices...)
	}
	return r
}

// isService reports whether ns is a service node.
func isService(ns *nodeState) bool {
	_, ok := ns.n.Kind.(stages.Service)
	return ok
}

// serviceDigest is a service node's output digest as its consumers' keys
// hold it: its identity, the same on every port and host.
func serviceDigest(identity json.RawMessage) string {
	return plan.OutputDigest(nil, identity, string(plan.OK))
}

// serviceNeeded reports whether a consumer of the service node will run:
// a downstream that the plan runs (or may run) and that cannot say it
// sends the service no request, or one the plan took from the cache whose
// record is gone since.
func (a *applier) serviceNeeded(ns *nodeState) bool {
	if plan.ServiceNeeded(a.opts.Plan, ns.n, ns.spec, a.g.Root, a.cache.Dir) {
		return true
	}
	if a.opts.Plan == nil {
		return false
	}
	for _, d := range ns.n.Downs {
		if pn := a.opts.Plan.Nodes[d]; pn != nil && !pn.Skipped && pn.Action == plan.ActCached && !isService(a.nodes[d]) && !a.cache.Has(pn.Key) {
			return true
		}
	}
	return false
}

// cachedBesideIdleServices reports whether ns, which the plan takes from
// the cache, may be taken so on the plan's evaluation of it: each upstream
// it is keyed by is cached as planned, or is a service that was not
// started (serviceIdle), whose endpoints the plan did not know either. Its
// attributes that read those endpoints (a command's model_cache) are then
// not evaluated: there are none to read, and the node sends no request.
func (a *applier) cachedBesideIdleServices(ns *nodeState) bool {
	if ns.pn.Action != plan.ActCached || ns.pn.Spec == nil || ns.pn.Key == "" || a.opts.Replace[ns.n.Addr] {
		return false
	}
	idle := false
	for _, d := range ns.n.Deps {
		u := a.nodes[d]
		if !ns.n.KeyedDep(d) {
			continue
		}
		if u.svc != nil && u.svc.idle {
			idle = true
			continue
		}
		if u.status != plan.Cached || u.record == nil || u.pn.Record == nil || u.record.Key != u.pn.Record.Key {
			return false
		}
	}
	return idle
}

// serviceIdle finishes a service node no consumer needs: it is not
// started, and its result is its identity with no endpoint.
func (a *applier) serviceIdle(ns *nodeState) {
	svc := ns.n.Kind.(stages.Service)
	id := svc.Identity(ns.spec)
	ns.record = &store.Record{Key: ns.key, Result: id, OutputDigest: serviceDigest(id)}
	if ns.svc != nil {
		ns.svc.idle = true
	}
	ns.status = plan.OK
	a.releaseKey(ns)
	a.setFinal(ns)
	_ = a.j.Note(runlog.Entry{T: runlog.Serve, Node: ns.n.Addr, Status: "not_started", Message: "nothing to evaluate"})
	ns.message = "nothing to evaluate"
	a.nodeEnded(ns, "not_started")
	a.finish(ns)
}

// servicesDone closes the done channel of every serving service node
// upstream of ns whose downstreams are all final now (the loop's
// goroutine).
func (a *applier) servicesDone(ns *nodeState) {
	for _, d := range ns.n.Deps {
		u := a.nodes[d]
		if u.svc == nil {
			continue
		}
		a.checkServiceDone(u)
	}
}

func (a *applier) checkServiceDone(u *nodeState) {
	u.svc.mu.Lock()
	serving := u.svc.serving
	u.svc.mu.Unlock()
	if !serving {
		return
	}
	for _, dd := range u.n.Downs {
		if x := a.nodes[dd]; !x.final && !x.pn.Skipped {
			return
		}
	}
	u.svc.doneOnce.Do(func() { close(u.svc.done) })
}

// Devices implements stages.ServiceHost.
func (r *nodeRuntime) Devices() []int {
	if r.ns.lease == nil {
		return nil
	}
	return append([]int(nil), r.ns.lease.Devices...)
}

// Serving implements stages.ServiceHost: the node becomes final with
// result (its downstreams start); the channel is closed once none of them
// still needs it.
func (r *nodeRuntime) Serving(result json.RawMessage) <-chan struct{} {
	a, ns := r.a, r.ns
	svc := ns.svc
	id := ns.n.Kind.(stages.Service).Identity(ns.spec)
	now := time.Now()
	ns.record = &store.Record{Key: ns.key, Result: result, OutputDigest: serviceDigest(id), Started: ns.started, Ended: now}
	svc.mu.Lock()
	svc.serving = true
	svc.mu.Unlock()
	_ = a.j.Write(runlog.Entry{T: runlog.Serve, Node: ns.n.Addr, Status: "serving", Message: string(result)})
	if ns.persisted == nil {
		// No downstream: nothing needs it.
		svc.doneOnce.Do(func() { close(svc.done) })
		return svc.done
	}
	ns.closePersisted()
	a.events <- event{id: ns.n.ID, kind: evSettled}
	return svc.done
}

// ServeEvent implements stages.ServiceHost.
func (r *nodeRuntime) ServeEvent(ev stages.ServeEvent) {
	a, ns := r.a, r.ns
	if ev.PID == 0 && ev.Replica > 0 {
		ns.svc.mu.Lock()
		ev.PID = ns.svc.pids[ev.Replica]
		ns.svc.mu.Unlock()
	}
	e := runlog.Entry{T: runlog.Serve, Node: ns.n.Addr, Status: ev.Status, Replica: ev.Replica, PID: ev.PID, Port: ev.Port, GPUs: ev.GPUs, Endpoint: ev.Endpoint, Message: ev.Message}
	_ = a.j.Write(e)
	a.emit(&events.ServeEvent{Node: ns.n.Addr, Status: ev.Status, Replica: ev.Replica, PID: ev.PID, Port: ev.Port,
		GPUs: ev.GPUs, Endpoint: ev.Endpoint, Message: ev.Message})
}

// notePID remembers a replica's pid (Exec's started callback).
func (ns *nodeState) notePID(replica, pid int) {
	if ns.svc == nil || replica == 0 {
		return
	}
	ns.svc.mu.Lock()
	defer ns.svc.mu.Unlock()
	if ns.svc.pids == nil {
		ns.svc.pids = map[int]int{}
	}
	ns.svc.pids[replica] = pid
}

// closePersisted closes the node's persisted channel once.
func (ns *nodeState) closePersisted() {
	if ns.persisted == nil {
		return
	}
	ns.persistOnce.Do(func() { close(ns.persisted) })
}

// replicaDevices are the GPUs a service's replica sees: its share of the
// node's lease, gpus each in lease order.
func replicaDevices(ns *nodeState, replica int) []int {
	if ns.lease == nil {
		return nil
	}
	per := ns.spec.Common.GPUs
	lo, hi := (replica-1)*per, replica*per
	if per == 0 || lo < 0 || hi > len(ns.lease.Devices) {
		return nil
	}
	return ns.lease.Devices[lo:hi]
}

// serviceEnded is a service node's end after its kind's Run returned: no
// record is committed; its GPUs are given back (by the loop, on evDone)
// once their memory shows freed. A node that ends well is journaled
// finished here; one that failed (its class set) only failed, by the loop
// (markFailed), with the same peaks.
func (a *applier) serviceEnded(ns *nodeState) event {
	a.waitGPUMemoryFreed(ns)
	// The node ran from its start until now, its servers stopped: its
	// record's times (its duration in node_ended and apply's line) say
	// so, as the journal's finished record does, not the moment it got
	// ready (Serving).
	now := time.Now()
	ns.ended = now
	a.scratchMu.Lock()
	ns.svc.logs = replicaLogs(ns.scratch)
	a.scratchMu.Unlock()
	if ns.res == nil {
		ns.res = ns.svc.result(ns.lease)
	}
	if ns.record != nil {
		ns.record.PeakRSSMiB, ns.record.PeakGPUMiB = ns.res.PeakRSSMiB, ns.res.PeakGPUMiB
		ns.record.Ended = now
	}
	if ns.class != "" {
		return event{}
	}
	_ = a.j.Note(runlog.Entry{T: runlog.Finished, Node: ns.n.Addr, Key: ns.key, Attempt: ns.attempts, Duration: now.Sub(ns.started).Seconds(),
		PeakRSS: ns.res.PeakRSSMiB, PeakGPU: ns.res.PeakGPUMiB})
	return event{}
}

// replicaLogs are the replicas' log files in a service node's folder,
// replicaN.out then replicaN.err, by replica number.
func replicaLogs(dir string) []string {
	if dir == "" {
		return nil
	}
	names, _ := filepath.Glob(filepath.Join(dir, "replica*.out"))
	var nums []int
	for _, f := range names {
		if i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "replica"), ".out")); err == nil {
			nums = append(nums, i)
		}
	}
	slices.Sort(nums)
	var out []string
	for _, i := range nums {
		stem := filepath.Join(dir, fmt.Sprintf("replica%d", i))
		out = append(out, stem+".out", stem+".err")
	}
	return out
}

// logPaths are the node's log files: its process's, or a service's
// replicas'.
func (ns *nodeState) logPaths() []string {
	if ns.svc != nil && ns.svc.logs != nil {
		return ns.svc.logs
	}
	return ns.logs[:]
}

// waitGPUMemoryFreed waits until no process shows memory on the node's
// leased GPUs (NVML, or the simulated inventory), at most the kind's
// GPUFreeWait (the serve kind's gpu_free_wait); then it warns, naming what
// is left, journals it, and the lease is given back all the same.
func (a *applier) waitGPUMemoryFreed(ns *nodeState) {
	if ns.lease == nil || a.opts.GPUs == nil || len(ns.lease.Devices) == 0 {
		return
	}
	inv := a.opts.GPUs.Inv
	wait := ns.n.Kind.(stages.Service).GPUFreeWait(ns.spec)
	deadline := time.Now().Add(wait)
	for {
		var left []string
		for _, d := range ns.lease.Devices {
			_, procs, err := inv.DeviceMemory(context.Background(), d)
			if err != nil {
				continue
			}
			for _, p := range procs {
				if p.PID == os.Getpid() {
					continue
				}
				left = append(left, fmt.Sprintf("GPU %d: pid %d (%d MiB)", d, p.PID, p.UsedMiB))
			}
		}
		if len(left) == 0 {
			_ = a.j.Write(runlog.Entry{T: runlog.Serve, Node: ns.n.Addr, Status: "gpus_freed", GPUs: ns.lease.Devices})
			a.emit(&events.ServeEvent{Node: ns.n.Addr, Status: "gpus_freed", GPUs: ns.lease.Devices,
				Message: fmt.Sprintf("GPU %s memory freed: back to the pool", intsString(ns.lease.Devices))})
			return
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("%s after its servers stopped, %s still show memory in use (gpu_free_wait); the GPUs go back to the pool all the same",
				wait, strings.Join(left, ", "))
			_ = a.j.Write(runlog.Entry{T: runlog.Serve, Node: ns.n.Addr, Status: "gpus_not_freed", GPUs: ns.lease.Devices, Message: msg})
			a.warn("%s: %s", ns.n.Addr, msg)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
