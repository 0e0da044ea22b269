package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/stages"
)

// GPU nodes that must run together. A service node (a serve stage) holds
// its GPUs until every downstream of it has ended, so the nodes that start
// while it serves (its consumers, a service ordered after it) and the other
// services those consumers read must find their GPUs beside its own: a
// service whose replicas are left to the free GPUs leaves them that many,
// and a plan in which they cannot all be up at once on this machine is
// refused before anything runs. A node that waits for GPUs says so, and
// who holds them.

// nodeGPUs is how many GPUs a node leases at the least: a service's
// replicas (one when it leaves their number to the free GPUs) times its
// GPUs per replica, another node's gpus. 0 when its attributes are not
// known.
func nodeGPUs(n *plan.Node, sn *stages.Node) int {
	if sn == nil {
		return 0
	}
	if svc, ok := n.Kind.(stages.Service); ok {
		return svc.LeaseGPUs(sn, 0)
	}
	return sn.Common.GPUs
}

// willRun reports whether the plan runs the node (or may): not cached,
// skipped, outside --target, nor a service not needed.
func willRun(pn *plan.PlannedNode) bool {
	switch pn.Action {
	case plan.ActCached, plan.ActSkip, plan.ActNotStarted:
		return false
	}
	return !pn.Skipped
}

// togetherGPUs is how many GPUs node c needs while the services it reads
// serve: its own and those of each service upstream that the plan runs.
// services names them with their GPUs.
func togetherGPUs(p *plan.Plan, c *plan.PlannedNode) (total int, services []string) {
	total = nodeGPUs(c.Node, c.Spec)
	for _, d := range c.Node.Deps {
		u := p.Nodes[d]
		if _, ok := u.Node.Kind.(stages.Service); !ok || !willRun(u) {
			continue
		}
		if g := nodeGPUs(u.Node, u.Spec); g > 0 {
			total += g
			services = append(services, fmt.Sprintf("%s (%s)", u.Node.Addr, gpuCount(g)))
		}
	}
	return total, services
}

// togetherRefusal says why pn needs, with the services it reads, more GPUs
// than pool has: the services would wait for each other's GPUs for ever;
// "" when it does not.
func togetherRefusal(p *plan.Plan, pn *plan.PlannedNode, pool *gpu.Pool) string {
	need, services := togetherGPUs(p, pn)
	if need <= pool.Total() || len(services) == 0 {
		return ""
	}
	own := ""
	if g := nodeGPUs(pn.Node, pn.Spec); g > 0 {
		own = fmt.Sprintf(" and %s of its own", gpuCount(g))
	}
	return fmt.Sprintf("needs %s up at once%s: %d GPUs together; %s. A serve stage keeps its GPUs until its last consumer ends, so they would wait for each other for ever: give fewer replicas or gpus",
		strings.Join(services, " and "), own, need, pool.Describe())
}

func gpuCount(n int) string {
	if n == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("%d GPUs", n)
}

// gpusAlongside is how many GPUs must stay free, when service node ns
// starts, for the nodes that will start while it serves: for each of its
// downstreams not started yet, its own GPUs and those of the other
// services it reads that hold none yet; the most of them.
func (s *schedule) gpusAlongside(ns *nodeState) int {
	most := 0
	for _, d := range ns.n.Downs {
		c := s.nodes[d]
		if !s.toStart(c) {
			continue
		}
		need := s.ownGPUs(c)
		for _, u := range c.n.Deps {
			t := s.nodes[u]
			if t == ns || !isService(t) || !s.toStart(t) {
				continue
			}
			need += s.ownGPUs(t)
		}
		most = max(most, need)
	}
	return most
}

// toStart reports whether the node is still to start and holds no GPUs.
func (s *schedule) toStart(ns *nodeState) bool {
	return ns.status == plan.Pending && ns.lease == nil && !s.inFlight(ns.n.ID) && willRun(ns.pn)
}

// ownGPUs is nodeGPUs of a node of the apply: from its attributes once
// prepared, else the plan's.
func (s *schedule) ownGPUs(ns *nodeState) int {
	sn := ns.spec
	if sn == nil {
		sn = ns.pn.Spec
	}
	return nodeGPUs(ns.n, sn)
}

// gpuWaiting tells, once a wait, that a node waits for n GPUs and who
// holds them: a progress line and the journal's waiting record. A wait
// for GPUs that only this apply's other nodes hold, none of them a
// service, is not told: they end on their own, as a queue for CPU slots
// does.
func (a *applier) gpuWaiting(ns *nodeState, n int) {
	if ns.gpuWait != nil {
		return
	}
	detail, tell := a.gpuHolders()
	if !tell {
		return
	}
	ns.gpuWait = &executor.Notice{Waiting: true, What: gpuCount(n), Since: time.Now(), Detail: detail}
	a.notice(ns, *ns.gpuWait)
}

// gpuWaitOver tells that a node that waited for GPUs got them.
func (a *applier) gpuWaitOver(ns *nodeState) {
	if ns.gpuWait == nil {
		return
	}
	over := *ns.gpuWait
	over.Waiting = false
	ns.gpuWait = nil
	a.notice(ns, over)
}

// gpuHolders says who holds the GPUs that are not free: this apply's
// nodes by name, other holders as `cairn gpus` says. tell: one of them is
// a service of this apply or outside it.
func (a *applier) gpuHolders() (detail string, tell bool) {
	st, err := a.opts.GPUs.Status(context.Background())
	if err != nil {
		return "cannot read the GPUs: " + err.Error(), true
	}
	ours := map[int]*nodeState{}
	var order []string
	devs := map[string][]int{}
	for _, r := range a.sched.running {
		if r.lease == nil {
			continue
		}
		for _, d := range r.lease.Devices {
			ours[d] = r
		}
	}
	for _, x := range st {
		if x.Free {
			continue
		}
		who := x.Why
		if r, ok := ours[x.Device.Index]; ok {
			who = r.n.Addr
			tell = tell || isService(r)
		} else {
			tell = true
		}
		if _, seen := devs[who]; !seen {
			order = append(order, who)
		}
		devs[who] = append(devs[who], x.Device.Index)
	}
	parts := make([]string, len(order))
	for i, who := range order {
		parts[i] = fmt.Sprintf("GPU %s: %s", intsString(devs[who]), who)
		if _, ok := ours[devs[who][0]]; ok {
			parts[i] = fmt.Sprintf("held by %s (GPU %s)", who, intsString(devs[who]))
		}
	}
	return strings.Join(parts, "; "), tell
}
