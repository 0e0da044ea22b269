package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/stages"
)

// fullExecutor takes no more jobs.
type fullExecutor struct{ executor.Local }

func (fullExecutor) CanRunMore() bool { return false }

// a -> c <- b, and d outside --target: the schedule readies a and b, then
// c once both are done, and never d.
func TestScheduleReadiness(t *testing.T) {
	st := &dsl.Stage{Name: "s"}
	mk := func(id int, deps, downs []int, skipped bool) *nodeState {
		return &nodeState{n: &plan.Node{ID: id, Stage: st, Deps: deps, Downs: downs}, pn: &plan.PlannedNode{Skipped: skipped}, status: plan.Pending, spec: &stages.Node{}}
	}
	nodes := []*nodeState{mk(0, nil, []int{2}, false), mk(1, nil, []int{2}, false), mk(2, []int{0, 1, 3}, nil, false), mk(3, nil, []int{2}, true)}
	s := newSchedule(&ApplyOptions{Parallelism: 1, Executor: executor.Local{}})
	s.start(nodes)
	assert.Equal(t, []int{0, 1}, s.takeReady())

	s.run(nodes[0])
	assert.True(t, s.inFlight(0))
	assert.False(t, s.done(false), "a node in flight")
	s.stopped(0)
	s.upstreamDone(nodes[0])
	assert.Empty(t, s.ready, "c still waits for b")
	s.upstreamDone(nodes[1])
	assert.Equal(t, []int{2}, s.ready)

	// Nothing runs and nothing outside is waited for: stuck, and the
	// nodes pending are handed back in plan order.
	assert.True(t, s.stuck())
	stuck := s.takeStuck()
	assert.Len(t, stuck, 1)
	assert.Contains(t, stuckMessage(stuck), "(stuck: ")
	assert.True(t, s.done(false))
}

// CPU slots: one node takes one slot of --parallelism; its release gives
// it back once.
func TestScheduleCPUSlots(t *testing.T) {
	st := &dsl.Stage{Name: "s"}
	ns := &nodeState{n: &plan.Node{ID: 0, Stage: st}, pn: &plan.PlannedNode{}, spec: &stages.Node{}}
	s := newSchedule(&ApplyOptions{Parallelism: 1, Executor: executor.Local{}})
	s.nodes = []*nodeState{ns}
	assert.True(t, s.couldAdmit(ns))
	assert.True(t, s.takeCPU(ns))
	s.admitted(ns)
	assert.False(t, s.couldAdmit(ns))
	s.queueCPU(0)
	_, ok := s.nextCPU()
	assert.False(t, ok, "no slot free")
	s.releaseSlot(ns)
	s.releaseSlot(ns)
	assert.Equal(t, 0, s.cpuUsed)
	id, ok := s.nextCPU()
	assert.True(t, ok)
	assert.Equal(t, 0, id)
}

// An executor that takes no more jobs holds nodes back, and the loop
// polls instead of calling the apply stuck.
func TestScheduleAsksExecutor(t *testing.T) {
	s := newSchedule(&ApplyOptions{Parallelism: 1, Executor: fullExecutor{}})
	assert.False(t, s.canRunMore())
	assert.False(t, s.stuck())
	assert.Equal(t, 250*time.Millisecond, s.pollAfter())
	assert.Equal(t, time.Duration(0), s.pollAfter())
	assert.True(t, s.stuck())
}
