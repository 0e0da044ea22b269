package engine

import (
	"container/heap"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/stages"
)

// schedule is what an apply has left to do and what it may start now, as
// ninja's Plan is to its Builder: the ready set (nodes whose upstreams are
// all done), prepared nodes queued for a CPU slot, the nodes in flight,
// admission (a stage's concurrency, CPU slots, GPU leases from the pool,
// whether the executor takes more), and the stuck check. It starts and
// waits for nothing: the applier (apply.go, admit.go) runs the event loop, prepares
// nodes, starts them and commits what they made, and tells the schedule
// as nodes start and end. A batch group's admission (batch.go) is the
// applier's, since it journals and keeps the ledger.
type schedule struct {
	nodes       []*nodeState
	groups      map[string]*batchGroup // the batch stages' groups (admitted by batch.go)
	parallelism int
	exec        executor.Executor
	gpus        *gpu.Pool // nil when no GPU work is possible
	waitGPUs    time.Duration

	ready []int // node ids, kept sorted (topological order)
	// cpuWait holds prepared nodes that wait for a CPU slot.
	cpuWait idHeap
	// cpuQueued is cpuWait's length, for workers to read: whether a node
	// waits for the CPU slot theirs frees (see applier.execute).
	cpuQueued atomic.Int32
	running   map[int]*nodeState
	// inFlightN is running's size, for workers to read (see
	// applier.yieldInChain).
	inFlightN atomic.Int32
	stageN    map[string]int
	cpuUsed   int
	// outsideWait is set when a node waits for what is outside this
	// apply's hands (GPUs another process holds, an executor that takes
	// no more jobs now): the loop then polls.
	outsideWait bool
	// noGPUSince is when a GPU node first found no device it could ever
	// get from this apply (all busy, none of them ours); see noFreeGPUs.
	noGPUSince time.Time
}

func newSchedule(opts *ApplyOptions) *schedule {
	return &schedule{
		groups: map[string]*batchGroup{}, parallelism: opts.Parallelism, exec: opts.Executor,
		gpus: opts.GPUs, waitGPUs: opts.WaitGPUs,
		running: map[int]*nodeState{}, stageN: map[string]int{},
	}
}

// start counts each node's upstreams within --target and makes those
// with none ready.
func (s *schedule) start(nodes []*nodeState) {
	s.nodes = nodes
	for _, ns := range nodes {
		if ns.pn.Skipped {
			continue
		}
		for _, d := range ns.n.Deps {
			if !nodes[d].pn.Skipped {
				ns.waiting.Add(1)
			}
		}
		if ns.waiting.Load() == 0 {
			s.ready = append(s.ready, ns.n.ID)
		}
	}
}

// markReady makes a node ready (again).
func (s *schedule) markReady(id int) { s.ready = append(s.ready, id) }

// upstreamDone: ns reached a final state; the downstreams it was the last
// upstream of are ready.
func (s *schedule) upstreamDone(ns *nodeState) {
	for _, d := range ns.n.Downs {
		dn := s.nodes[d]
		if dn.pn.Skipped {
			continue
		}
		if dn.waiting.Add(-1) == 0 && dn.status == plan.Pending {
			s.ready = append(s.ready, d)
		}
	}
}

// takeReady hands over the ready set, emptied.
func (s *schedule) takeReady() []int {
	q := s.ready
	s.ready = nil
	return q
}

// queueCPU queues a prepared node for a CPU slot.
func (s *schedule) queueCPU(id int) {
	heap.Push(&s.cpuWait, id)
	s.cpuQueued.Store(int32(s.cpuWait.Len()))
}

// nextCPU is the queued CPU node earliest in the plan, while a CPU slot
// is free.
func (s *schedule) nextCPU() (int, bool) {
	if s.cpuWait.Len() == 0 || s.cpuUsed >= s.parallelism {
		return 0, false
	}
	id := heap.Pop(&s.cpuWait).(int)
	s.cpuQueued.Store(int32(s.cpuWait.Len()))
	return id, true
}

// running: the node is in flight (its worker runs, or it waits for its
// key's lock); stopped: no longer.
func (s *schedule) run(ns *nodeState) {
	s.running[ns.n.ID] = ns
	s.inFlightN.Store(int32(len(s.running)))
}

func (s *schedule) stopped(id int) {
	delete(s.running, id)
	s.inFlightN.Store(int32(len(s.running)))
}

func (s *schedule) inFlight(id int) bool {
	_, ok := s.running[id]
	return ok
}

// done reports whether the apply has nothing left to wait for: nothing
// in flight, and nothing ready (or interrupted, when nothing more starts).
func (s *schedule) done(interrupted bool) bool {
	return len(s.running) == 0 && (interrupted || len(s.ready) == 0 && s.cpuWait.Len() == 0)
}

// stuck reports whether nodes are left that nothing can free room for:
// nothing runs and nothing outside this apply is waited for, so no event
// can come.
func (s *schedule) stuck() bool {
	return len(s.running) == 0 && !s.outsideWait
}

// takeStuck empties the ready set and the CPU queue and returns the nodes
// that were pending in them, in plan order.
func (s *schedule) takeStuck() []*nodeState {
	ids := append(append([]int(nil), s.ready...), s.cpuWait...)
	s.ready, s.cpuWait = nil, nil
	s.cpuQueued.Store(0)
	sort.Ints(ids)
	var out []*nodeState
	for _, id := range ids {
		if ns := s.nodes[id]; ns.status == plan.Pending {
			out = append(out, ns)
		}
	}
	return out
}

// stuckMessage is the failure of each node takeStuck returned.
func stuckMessage(stuck []*nodeState) string {
	names := make([]string, len(stuck))
	for i, ns := range stuck {
		names[i] = ns.n.Addr
	}
	return fmt.Sprintf("cannot start, and nothing running could make room for it (stuck: %s); this is a bug in cairn's scheduler, please report it", strings.Join(names, ", "))
}

// pollAfter is how soon the loop looks again without an event: 250 ms
// once after a node waited for something outside the apply, else 0 (no
// poll).
func (s *schedule) pollAfter() time.Duration {
	if !s.outsideWait {
		return 0
	}
	s.outsideWait = false
	return 250 * time.Millisecond
}

// canRunMore asks the executor whether it takes another job now; when
// not, the loop asks again after a while.
func (s *schedule) canRunMore() bool {
	if s.exec.CanRunMore() {
		return true
	}
	// A cluster's queue is full, say.
	s.waitOutside()
	return false
}

// waitOutside: a node waits for what is outside this apply's hands (GPUs
// another process holds, a machine-wide batch lock, an executor that
// takes no more jobs now); the loop polls, since no event of this apply
// says when it frees.
func (s *schedule) waitOutside() { s.outsideWait = true }

// usesCPUSlot: the node is admitted by CPU slots (no GPUs, no batch group).
func (s *schedule) usesCPUSlot(ns *nodeState) bool {
	return ns.spec.Common.GPUs == 0 && s.groups[ns.n.Stage.Name] == nil
}

// underConcurrency: the node's stage runs fewer nodes than its
// concurrency allows.
func (s *schedule) underConcurrency(ns *nodeState) bool {
	c := ns.spec.Common
	return c.Concurrency == 0 || s.stageN[ns.n.Stage.Name] < c.Concurrency
}

// couldAdmit is admission's answer for a node that needs only a CPU
// slot, without taking anything; nodes with GPUs or in a batch group are
// left to admission.
func (s *schedule) couldAdmit(ns *nodeState) bool {
	return s.underConcurrency(ns) && (!s.usesCPUSlot(ns) || s.cpuUsed < s.parallelism)
}

func cpuSlots(cpus, parallelism int) int {
	return max(1, min(cpus, parallelism))
}

// takeCPU takes a node's CPU slots (at most all of them, so that a node
// asking for more than --parallelism still runs, alone).
func (s *schedule) takeCPU(ns *nodeState) bool {
	need := cpuSlots(ns.spec.Common.CPUs, s.parallelism)
	if s.cpuUsed+need > s.parallelism {
		return false
	}
	s.cpuUsed += need
	return true
}

// takeGPUs leases the GPUs a node outside a batch needs (n of them). Not
// ok with a refusal: the node fails with it; not ok without one: it waits.
func (s *schedule) takeGPUs(ctx context.Context, ns *nodeState, h gpu.Holder) (ok bool, n int, refusal string) {
	n = ns.spec.Common.GPUs
	if s.gpus == nil {
		return false, n, fmt.Sprintf("needs %d GPU(s), but this apply was given no GPUs", n)
	}
	if svc, ok := ns.n.Kind.(stages.Service); ok {
		// A service leases its replicas' GPUs, as many replicas as are
		// free when it says none, less those the nodes that must run
		// while it serves need.
		free := len(s.gpus.FreeIndices(ctx)) - s.gpusAlongside(ns)
		n = max(n, svc.LeaseGPUs(ns.spec, max(free, 0)))
	}
	lease, err := s.gpus.Acquire(ctx, n, h)
	if err != nil || lease == nil {
		if msg := s.noFreeGPUs(n); msg != "" {
			return false, n, msg
		}
		s.waitOutside()
		return false, n, ""
	}
	s.noGPUSince = time.Time{}
	ns.lease = lease
	return true, n, ""
}

// admitted counts an admitted node in its stage's concurrency.
func (s *schedule) admitted(ns *nodeState) {
	s.stageN[ns.n.Stage.Name]++
	ns.slotFreed = false
}

// releaseSlot gives back the node's turn in its stage's concurrency and,
// for a CPU node, its CPU slots, once: when its process has exited (before
// cairn stores its outputs, so that the next process starts meanwhile) or
// when it is done.
func (s *schedule) releaseSlot(ns *nodeState) {
	if ns.slotFreed {
		return
	}
	ns.slotFreed = true
	s.stageN[ns.n.Stage.Name]--
	if s.usesCPUSlot(ns) {
		s.cpuUsed -= cpuSlots(ns.spec.Common.CPUs, s.parallelism)
	}
}

// releaseLease gives a node's GPUs back to the pool.
func (s *schedule) releaseLease(ns *nodeState) {
	if ns.lease != nil {
		s.gpus.Release(ns.lease)
		ns.lease = nil
	}
}

// noFreeGPUs decides for a node that needs n GPUs and got none whether it
// may wait: while devices leased to this apply's own running nodes will
// free, or for --wait-gpus. Otherwise (every device busy with other
// users' work) it returns the refusal that fails the node ("No free GPUs.
// Wait, do not launch.", as docs/language.md gives it), with why each
// device is busy.
func (s *schedule) noFreeGPUs(n int) string {
	if s.gpus == nil {
		return ""
	}
	if s.holdsLeases() {
		s.noGPUSince = time.Time{}
		return ""
	}
	if len(s.gpus.FreeIndices(context.Background())) >= n {
		// Free now, taken by someone else between look and lease.
		return ""
	}
	if s.noGPUSince.IsZero() {
		s.noGPUSince = time.Now()
	}
	if time.Since(s.noGPUSince) < s.waitGPUs {
		return ""
	}
	need := ""
	if n > 1 {
		need = fmt.Sprintf(" (this node needs %d)", n)
	}
	return "No free GPUs" + need + ". Wait, do not launch. (" + busyGPUs(s.gpus) + "; " + waitedFor("--wait-gpus", s.waitGPUs, "one") + ")"
}

// waitedFor is the end of a refusal that a wait flag could have avoided:
// how to wait, or, when the flag was given, that the wait ran out.
func waitedFor(flag string, waited time.Duration, what string) string {
	if waited > 0 {
		return fmt.Sprintf("none came in the %s %s gave; give a longer %s", waited, flag, flag)
	}
	return fmt.Sprintf("pass %s DURATION to wait for %s", flag, what)
}

// holdsLeases reports whether a running node of this apply holds GPUs:
// they will free, so a node waiting for one is not refused.
func (s *schedule) holdsLeases() bool {
	for _, r := range s.running {
		if r.lease != nil {
			return true
		}
	}
	return false
}

// idHeap is a min-heap of node ids (container/heap).
type idHeap []int

func (h idHeap) Len() int           { return len(h) }
func (h idHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h idHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *idHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *idHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
