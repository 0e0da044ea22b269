// Package engine applies a plan (engine/plan): the schedule (the ready
// set and admission) apart from the applier's event loop, which starts
// nodes through the executor, waits for them and commits what they made
// to the cache and the run journal; batches and their slots, the ledger,
// the live display, the up-to-date memo, and recovery after a crash.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl/addrs"
	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/stages"
)

// ApplyOptions configure one apply.
type ApplyOptions struct {
	Plan        *plan.Plan
	Cache       *store.Cache
	Executor    executor.Executor
	Parallelism int           // CPU slots for nodes without GPUs (default: cores)
	LockTimeout time.Duration // how long to wait for a node another process runs (0: forever)
	// Progress receives human progress (or JSON lines with JSON set).
	Progress io.Writer
	// Stderr receives the kinds' own progress lines (an evaluation's
	// item counts, a comparison table); nil sends them to Progress.
	Stderr io.Writer
	// Summaries receives the summary lines of the nodes whose kind makes
	// one (stages.Announcer), one a line; nil sends them to Stderr.
	Summaries io.Writer
	JSON      bool
	Verbose   bool
	Live      bool // redraw a live status block (a TTY)
	NoSync    bool
	Args      []string
	// Replace lists addresses forced to run (also clears on_interrupt = "fail" refusals).
	Replace map[string]bool
	// Hard is closed on a second interrupt: kill at once.
	Hard <-chan struct{}
	// GPUs leases devices to nodes with gpus > 0; nil when no GPU work is possible.
	GPUs *gpu.Pool
	// Debug marks records of a partial run (a single batch variant).
	Debug map[string]bool
	// WaitGPUs is how long a batch waits for a free GPU (0: refuse at once).
	WaitGPUs time.Duration
	// WaitBatch is how long a batch waits for another process's batch.
	WaitBatch time.Duration
	// Exact applies a saved plan: a node whose key was known when it was
	// planned runs, or is taken from the cache, only under that key, and
	// a node planned as cached is only taken from the cache.
	Exact bool
}

// ApplyResult summarises an apply.
type ApplyResult struct {
	RunID       string
	Ran         int
	Cached      int
	Failed      int
	Skipped     int
	Interrupted bool
	Refused     string // a gate or policy refused before anything ran
	Failures    []Failure
	Dur         time.Duration

	nodes []*nodeState // every node's final state, for BuildMemo
}

// Failure is one failed node for the summary.
type Failure struct {
	Address string
	Class   string
	Message string
	// Logs are the node's log files that exist (a stream the node wrote
	// nothing to has none), stdout's first.
	Logs []string
	// NoOutput: the node's process ran and wrote nothing at all.
	NoOutput bool
	// Refused: the kind refused to run (bad input found as it ran).
	Refused bool
	// NoResume: the next apply does not resume the node (its message
	// says what it does).
	NoResume bool
	Tail     string
}

// ErrRefused wraps refusals that stop an apply before it starts (exit 1).
var ErrRefused = errors.New("apply refused")

type nodeState struct {
	n       *plan.Node
	pn      *plan.PlannedNode
	status  plan.Status
	waiting atomic.Int32 // unfinished upstreams; the loop changes it, workers read it (yieldInChain)
	worker  *worker      // the worker executing it, from launch to evDone (the loop's)
	spec    *stages.Node
	key     string
	env     *plan.Envelope
	// envJSON is env as JSON when prepare encoded it for the key (the
	// record's envelope); nil when the plan's key stands.
	envJSON []byte
	record  *store.Record
	class   string
	message string
	// refused and noResume are the last outcome's (stages.Outcome).
	refused, noResume bool
	attempts          int
	// runCounts are the kind's counts of the last attempt
	// (stages.Outcome.RunCounts), for the journal.
	runCounts map[string]int
	started   time.Time
	ended     time.Time
	res       *process.Result
	inst      cty.Value // built by finalInstance
	final     bool      // ok, cached, failed or skipped
	logs      [2]string
	prepared  bool
	locked    *store.KeyLock
	lease     *gpu.Lease
	wave      int
	// launch is set when the node starts as a variant of a batch;
	// inFlight is the most of its batch's variants running at once
	// since (written by the scheduler, read when the record is made).
	launch   *store.Launch
	inFlight atomic.Int32
	// progress is the kind's latest progress line (guarded by applier.mu).
	progress string
	// batchLogDir is set for variants of a batch: logs go there as
	// gpu<idx>_<name>.out and .err.
	batchLogDir string
	// secrets are the node's sensitive values, hidden from messages.
	secrets []string
	// scratch is the node's CAIRN_OUT_DIR once made (guarded by
	// applier.scratchMu).
	scratch string
	// fileName is runlog.NodeLogName of the node's first attempt, once
	// its worker has needed it (its logs' stem, its scratch folder's
	// name): the address is parsed once a node, not for each.
	fileName string
	// slotFreed: its CPU slot and concurrency turn were given back.
	slotFreed bool
	// seq is the number of the node's record in the cache (Commit), 0
	// when it committed none in this apply: a downstream's record names
	// the node's while it is above the cache's Durable (see persist).
	seq int64
	// persisted is made when the node may be released (see release):
	// its worker closes it once its record is written to the cache, or
	// could not be (persistFailed, set before), and sets seq before.
	// Downstreams' workers wait for it before they write theirs.
	persisted     chan struct{}
	persistFailed bool
	// released: its downstreams were made ready when its outputs were
	// stored, before its record was written (the loop's goroutine only).
	released bool
}

type applier struct {
	opts     ApplyOptions
	g        *plan.Graph
	pipeline string // the pipeline's name (recovery tells its runs from others')
	cache    *store.Cache
	j        *runlog.Journal
	runID    string
	nodes    []*nodeState
	// sched is what is left to do and what may start (schedule.go).
	sched  *schedule
	events chan event
	// The worker goroutines execute the nodes the loop launches, one
	// after another: a node does not pay for a goroutine of its own (its
	// start, and the growth of its stack to the depth a node's start
	// needs). idle are those whose last node's evDone the loop has
	// handled; workers are all of them (the loop's own lists).
	idle, workers []*worker
	mu            sync.Mutex // guards output
	out           io.Writer
	res           *ApplyResult
	ctx           context.Context
	live          *liveDisplay
	// dirs are the log folders made so far (see ensureDir).
	dirs sync.Map
	// Emptied scratch folders kept for the next node (see scratchFor).
	scratchMu   sync.Mutex
	freeScratch []string
	scratchN    int
	// finished are the nodes whose scratch folders wait to be taken back
	// (recycleScratch) once the nodes their end made ready have started:
	// the loop's own goroutine only.
	finished []*nodeState
}

// eventKind is what a node's worker reports to the apply loop.
type eventKind int

const (
	// evExited: the node's last process has ended (its outputs are being
	// stored).
	evExited eventKind = iota
	// evDone: the node's worker has ended, with err when it failed.
	evDone
	// evLocked: a node waiting for its key's lock got it (locked), or gave
	// up (err).
	evLocked
	// evSettled: a node that may be released (mayRelease) succeeded and
	// its outputs are stored; its record is being written (release).
	evSettled
)

type event struct {
	id     int
	kind   eventKind
	err    error
	locked *store.KeyLock
	// class and message: a released node's record could not be written
	// (evDone); the loop, not the worker, sets them on the node, whose
	// state its downstreams read by now.
	class, message string
}

// Apply runs a plan: nodes whose key is cached are restored, the rest run
// as resources allow. It returns when every node finished, failed or was
// skipped, or when ctx is cancelled (interrupted).
func Apply(ctx context.Context, opts ApplyOptions) (*ApplyResult, error) {
	if opts.Parallelism <= 0 {
		opts.Parallelism = runtime.NumCPU()
	}
	if opts.Executor == nil {
		opts.Executor = executor.Local{}
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	p := opts.Plan
	a := &applier{
		opts: opts, g: p.Graph, pipeline: p.Pipeline, cache: opts.Cache, out: opts.Progress,
		events: make(chan event, 64), res: &ApplyResult{}, ctx: ctx, sched: newSchedule(&opts),
	}
	start := time.Now()
	release, interrupted, err := a.begin()
	if err != nil {
		return nil, err
	}
	defer release()
	refusal := a.checkInterrupted(interrupted)
	if refusal == nil {
		refusal = a.checkGPUNeeds()
	}
	if err := a.openRun(opts.NoSync); err != nil {
		return nil, err
	}
	j := a.j
	defer j.Close()
	_ = a.runStart(opts.Args)
	if n, ok := opts.Executor.(executor.Noticer); ok {
		n.Notify(func(n executor.Notice) { a.notice(nil, n) })
		defer n.Notify(nil)
	}
	if refusal != nil {
		// A refused apply is a run too: `cairn status` shows it refused.
		a.res.Refused = refusal.Error()
		_ = j.Write(runlog.Entry{T: runlog.RunEnd, Status: "refused", Message: refusal.Error()})
		return a.res, refusal
	}

	a.nodes = make([]*nodeState, len(a.g.Nodes))
	for _, n := range a.g.Nodes {
		pn := p.Nodes[n.ID]
		ns := &nodeState{n: n, pn: pn, status: plan.Pending}
		a.nodes[n.ID] = ns
		if pn.Skipped {
			ns.status = plan.Skipped
			ns.message = "outside --target"
			continue
		}
	}
	// The journal names every node this run means to run (keys known now,
	// or known after apply), in one group commit.
	var planned []runlog.Entry
	for _, ns := range a.nodes {
		if !ns.pn.Skipped && (ns.pn.Action == plan.ActRun || ns.pn.Action == plan.ActMayRun) {
			planned = append(planned, runlog.Entry{T: runlog.Planned, Node: ns.n.Addr, Key: ns.pn.Key})
		}
	}
	if len(planned) > 0 {
		if err := j.WriteBatch(planned); err != nil {
			return nil, err
		}
	}
	a.sched.start(a.nodes)
	a.setupGroups()
	if opts.Live {
		a.live = newLiveDisplay(a)
		defer a.live.stop()
	}
	a.loop()
	for _, w := range a.workers {
		close(w.in) // idle: every node launched is done
	}
	a.dropFreeScratch()
	a.res.nodes = a.nodes
	a.res.Dur = time.Since(start)
	status := "ok"
	switch {
	case a.res.Interrupted:
		status = "interrupted"
	case a.res.Failed > 0:
		status = "failed"
	}
	// The apply is complete once every record it committed is durable.
	if err := a.cache.WaitDurable(a.cache.Written()); err != nil {
		_ = j.Write(runlog.Entry{T: runlog.RunEnd, Status: "failed", Message: err.Error(), Duration: a.res.Dur.Seconds()})
		return a.res, fmt.Errorf("the results of this run are in the cache but could not be made durable (%w): a power loss could make their nodes run again", err)
	}
	_ = j.Write(runlog.Entry{T: runlog.RunEnd, Status: status, Duration: a.res.Dur.Seconds()})
	if err := a.cache.Stat.Save(); err != nil {
		a.printf("warning: cannot save the stat cache: %s\n", err)
	}
	return a.res, nil
}

// begin takes the cache's shared gc lock, held until release, and deals
// with what earlier runs left behind: orphans to reap, interruptions to
// honour.
func (a *applier) begin() (release func(), interrupted map[string]interruptedNode, err error) {
	use, err := store.UseLock(a.cache.Dir)
	if err != nil {
		return nil, nil, err
	}
	interrupted, err = a.recoverRuns()
	if err != nil {
		_ = use.Unlock()
		return nil, nil, err
	}
	return func() { _ = use.Unlock() }, interrupted, nil
}

// openRun names the run and opens its journal.
func (a *applier) openRun(noSync bool) error {
	a.runID = runlog.NewRunID()
	a.res.RunID = a.runID
	j, err := runlog.Open(a.cache.Dir, a.runID, noSync)
	if err != nil {
		return err
	}
	a.j = j
	return nil
}

// runStart writes the run's first record.
func (a *applier) runStart(args []string) error {
	return a.j.Write(runlog.Entry{T: runlog.RunStart, RunID: a.runID, Pipeline: a.pipeline, PID: os.Getpid(), Args: args})
}

// loop is the scheduler: one goroutine owns all node state; workers report
// through events.
func (a *applier) loop() {
	interrupted := false
	done := a.ctx.Done()
	for {
		if !interrupted {
			a.dispatch()
		}
		a.recycleFinished()
		if a.sched.done(interrupted) {
			break
		}
		if a.sched.stuck() {
			// Nothing runs and nothing is waited for: no event can come,
			// so the nodes left could wait for ever.
			a.failStuck()
			continue
		}
		var tick <-chan time.Time
		if d := a.sched.pollAfter(); d > 0 {
			tick = time.After(d)
		} else if a.live != nil {
			// The live block's elapsed times advance without events.
			tick = time.After(200 * time.Millisecond)
		}
		select {
		case ev := <-a.events:
			a.handle(ev)
		case <-done:
			done = nil
			interrupted = true
			a.res.Interrupted = true
		case <-tick:
		}
		if a.live != nil {
			a.live.update()
		}
	}
	for _, grp := range a.sched.groups {
		if grp.started {
			grp.end(a, interrupted)
		}
	}
	// Whatever never started is left pending: the journal shows it planned
	// but not run, and the next apply takes it up.
}

// dispatch starts every ready node that resources allow, in plan order.
// Prepared nodes that need a CPU slot wait in the schedule's CPU queue
// and are looked at only while a slot is free, so that a run with
// thousands of nodes ready at once does not look at each of them on every
// event.
func (a *applier) dispatch() {
	var kept []int
	for {
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
	for {
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
		lk, err := store.TryKeyLock(a.cache.Dir, ns.key)
		if err != nil {
			a.fail(ns, failclass.Setup, err.Error())
			return false
		}
		if lk == nil {
			a.waitForKey(ns)
			return false
		}
		ns.locked = lk
		// Another process may have finished it just before we locked: the
		// index is read again (not for a node that runs all the same, and
		// a failed read takes nothing).
		if !a.mustRun(ns) && a.cache.Refresh() == nil && a.takeCachedIfDone(ns) {
			return false
		}
	}
	if !a.admit(ns) {
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
		ok, refusal := a.sched.takeGPUs(a.ctx, ns, gpu.Holder{RunID: a.runID, Node: ns.n.Addr, PID: os.Getpid(), Since: time.Now()})
		if !ok {
			if refusal != "" {
				a.fail(ns, failclass.Setup, refusal)
			}
			return false
		}
	} else if !a.sched.takeCPU(ns) {
		return false
	}
	a.sched.admitted(ns)
	return true
}

func (a *applier) releaseResources(ns *nodeState) {
	a.sched.releaseSlot(ns)
	a.sched.releaseLease(ns)
	if grp := a.sched.groups[ns.n.Stage.Name]; grp != nil {
		grp.release(a, ns)
	}
}

// instance is the object downstream expressions see for a node.
func (a *applier) instance(n *plan.Node) cty.Value {
	ns := a.nodes[n.ID]
	if ns.final {
		return a.finalInstance(ns)
	}
	return plan.UnknownInstance(n)
}

// upstreamDigest is an upstream's output digest for a downstream key.
func (a *applier) upstreamDigest(n *plan.Node) (string, bool) {
	ns := a.nodes[n.ID]
	switch ns.status {
	case plan.OK, plan.Cached:
		if ns.record != nil {
			return ns.record.OutputDigest, true
		}
	case plan.Failed, plan.Skipped:
		return plan.FailedOutputDigest(ns.status, ns.class), true
	}
	if ns.pn.Skipped && ns.pn.Record != nil {
		return ns.pn.Record.OutputDigest, true
	}
	return "", false
}

// prepare evaluates a ready node with its upstreams' real results,
// computes its key and takes it from the cache when possible. It returns
// true when the node finished inline (cached, skipped or failed).
func (a *applier) prepare(ns *nodeState) bool {
	ns.prepared = true
	n := ns.n
	// Upstream failures.
	var failedUp *nodeState
	for _, d := range n.Deps {
		u := a.nodes[d]
		if u.status == plan.Failed || u.status == plan.Skipped && !u.pn.Skipped {
			failedUp = u
			break
		}
	}
	if failedUp != nil && n.Stage.OnUpstreamFailure != "run" {
		a.skip(ns, fmt.Sprintf("upstream %s %s", failedUp.n.Addr, failedUp.status))
		return true
	}
	if _, cmp := n.Kind.(stages.Comparer); cmp && failedUp != nil && !a.anyUpstreamOK(n) {
		// A batch refused or failed as a whole: no table of failures
		// replaces the last comparison.
		a.skip(ns, fmt.Sprintf("nothing to compare: no upstream finished (%s %s)", failedUp.n.Addr, upstreamFailure(failedUp)))
		return true
	}
	// The plan evaluated the node already; unless its expressions read
	// upstream results, which may have changed since, that evaluation
	// stands.
	sn := ns.pn.Spec
	reused := true
	if sn == nil || sn.Key != "" || sn.Upstreams != nil || a.g.EvalsStage(n) && !a.upstreamsAsPlanned(n) {
		reused = false
		var diags hcl.Diagnostics
		sn, diags = a.g.EvalNode(n, a.instance)
		if diags.HasErrors() {
			a.fail(ns, failclass.Setup, "cannot evaluate its attributes: "+plan.OneLine(diags.Error()))
			return true
		}
	}
	for _, d := range n.Deps {
		u := a.nodes[d]
		up := stages.Upstream{Address: u.n.Addr, Status: string(u.status), Class: u.class}
		if u.record != nil {
			up.Result = u.record.Result
		}
		sn.Upstreams = append(sn.Upstreams, up)
	}
	ns.spec = sn
	if msg := a.g.LateCheck(n, &sn.Common); msg != "" {
		a.fail(ns, failclass.Setup, msg)
		return true
	}
	var env *plan.Envelope
	var why *plan.UnknownReason
	var err error
	if reused && a.samePlannedUpstreams(ns) {
		// Same arguments, no input files, the same upstream outputs as
		// planned: the planned envelope stands.
		env = ns.pn.Envelope
	} else {
		env, why, err = a.g.NodeEnvelope(n, sn, a.upstreamDigest, a.cache.Stat)
	}
	if err != nil {
		a.fail(ns, failclass.Setup, err.Error())
		return true
	}
	if env == nil {
		msg := why.String()
		if why.Input != "" {
			msg = fmt.Sprintf("input %s does not exist", why.Input)
		}
		a.fail(ns, failclass.Setup, msg)
		return true
	}
	ns.env = env
	if env == ns.pn.Envelope && ns.pn.Key != "" {
		ns.key = ns.pn.Key
	} else {
		ns.key, ns.envJSON = env.KeyJSON()
	}
	sn.Key = ns.key
	if a.opts.Exact && ns.pn.Key != "" && ns.key != ns.pn.Key {
		a.fail(ns, failclass.Setup, fmt.Sprintf("its key changed since the plan was saved (%s then, %s now): not run; make a new plan with 'cairn plan --out FILE'", store.Short(ns.pn.Key), store.Short(ns.key)))
		return true
	}
	if grp := a.sched.groups[n.Stage.Name]; grp != nil && grp.policy.Strict {
		// A strict batch decides for all its variants at once.
		ns.secrets = plan.SensitiveStrings(sn.Args)
		return a.settleStrict(grp, ns)
	}
	if !a.opts.Replace[n.Addr] && a.cache.Has(ns.key) {
		// The plan decoded this record moments ago.
		if rec := ns.pn.Record; rec != nil && rec.Key == ns.key {
			if a.takeCachedRecord(ns, rec) {
				return true
			}
		} else if a.takeCached(ns) {
			return true
		}
	}
	if a.opts.Exact && ns.pn.Action == plan.ActCached {
		a.fail(ns, failclass.Setup, "planned as cached, but its cached result is gone since the plan was saved: not run; make a new plan with 'cairn plan --out FILE'")
		return true
	}
	// It runs: what its logs must not show.
	ns.secrets = plan.SensitiveStrings(sn.Args)
	return false
}

// anyUpstreamOK reports whether some upstream of n finished (ran or
// cached).
func (a *applier) anyUpstreamOK(n *plan.Node) bool {
	for _, d := range n.Deps {
		if st := a.nodes[d].status; st == plan.OK || st == plan.Cached {
			return true
		}
	}
	return false
}

// upstreamFailure says how an upstream ended: "failed (class): message"
// or "skipped".
func upstreamFailure(u *nodeState) string {
	if u.status != plan.Failed {
		return string(u.status)
	}
	return fmt.Sprintf("failed (%s): %s", u.class, u.message)
}

// upstreamsAsPlanned reports whether every upstream of n was cached at plan
// time and was taken from that same record: the instance objects n's
// expressions read are then the ones the plan evaluated it with.
func (a *applier) upstreamsAsPlanned(n *plan.Node) bool {
	for _, d := range n.Deps {
		u := a.nodes[d]
		if !n.KeyedDep(d) {
			continue // wait_for: never read
		}
		if u.status != plan.Cached || u.record == nil || u.pn.Record == nil || u.record.Key != u.pn.Record.Key {
			return false
		}
	}
	return true
}

// samePlannedUpstreams reports whether a node's planned envelope still
// holds: it has one, declares no input files (their content is read again
// at apply), and its upstreams' output digests are those it was planned
// with.
func (a *applier) samePlannedUpstreams(ns *nodeState) bool {
	env := ns.pn.Envelope
	if env == nil || ns.pn.Key == "" || len(ns.pn.Spec.Common.Inputs) > 0 || len(env.Inputs) > 0 {
		return false
	}
	if len(env.Upstreams) != len(ns.n.Deps)-len(ns.n.OrderOnly) {
		return false
	}
	got := make([]string, 0, len(ns.n.Deps))
	for _, d := range ns.n.Deps {
		if !ns.n.KeyedDep(d) {
			continue
		}
		dg, ok := a.upstreamDigest(a.g.Nodes[d])
		if !ok {
			return false
		}
		got = append(got, dg)
	}
	sort.Strings(got)
	for i := range got {
		if got[i] != env.Upstreams[i] {
			return false
		}
	}
	return true
}

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
	if rec.Debug && !a.opts.Debug[ns.n.Addr] {
		// A single-variant debug run's result is not the batch's.
		return false
	}
	if err := a.restoreOutputs(rec); err != nil {
		if !restoreDamaged(err) {
			// The record is good: another workspace may restore it.
			a.fail(ns, failclass.Result, err.Error())
			return true
		}
		a.printf("warning: %s: the cached result is damaged (%s); evicting it and running the node again\n", ns.n.Addr, err)
		_ = a.cache.Evict(ns.key)
		return false
	}
	ns.record = rec
	ns.status = plan.Cached
	// The node's lock, taken when another process had just finished it,
	// is not needed to restore it: holding it until this apply ends would
	// make other applies wait for nothing, and two applies holding what the
	// other waits for would wait for ever.
	ns.releaseKey()
	a.res.Cached++
	a.setFinal(ns)
	_ = a.j.NoteCached(ns.n.Addr, ns.key)
	if !a.checkPost(ns) {
		return true
	}
	a.announce(ns)
	if a.opts.Verbose {
		a.line(ns, "=", "cached")
	}
	a.emitJSON(ns, "cached")
	a.finish(ns)
	return true
}

// launch starts a node's worker goroutine.
func (a *applier) launch(ns *nodeState) {
	ns.status = plan.Running
	a.sched.run(ns)
	ns.started = time.Now()
	a.mu.Lock()
	ns.progress = ""
	a.mu.Unlock()
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

// handle processes a worker's event.
func (a *applier) handle(ev event) {
	ns := a.nodes[ev.id]
	switch ev.kind {
	case evLocked:
		// Another process released the key: maybe it finished the node.
		ns.locked = ev.locked
		a.sched.stopped(ns.n.ID)
		if ev.err != nil {
			if errors.Is(ev.err, context.Canceled) {
				a.fail(ns, failclass.Interrupted, "stopped while waiting for another process running the same node")
			} else {
				a.fail(ns, failclass.Setup, ev.err.Error())
			}
			return
		}
		ns.status = plan.Pending
		_ = a.cache.Refresh()
		if a.takeCachedIfDone(ns) {
			return
		}
		a.sched.markReady(ns.n.ID)
	case evExited, evSettled:
		// Its last process has ended: on evExited cairn now stores its
		// outputs; on evSettled it has (a worker that sends evSettled may
		// have sent no evExited, see execute).
		if a.sched.usesCPUSlot(ns) {
			a.sched.releaseSlot(ns)
		}
		if ev.kind == evSettled {
			a.release(ns)
		}
	case evDone:
		// Its worker takes the next node handed to it once it has sent
		// this event: it is idle now.
		a.idle = append(a.idle, ns.worker)
		ns.worker = nil
		a.sched.stopped(ns.n.ID)
		a.releaseResources(ns)
		a.finished = append(a.finished, ns)
		ns.releaseKey()
		if ev.class != "" {
			ns.class, ns.message = ev.class, ev.message
		}
		if ev.err != nil && ns.class == "" {
			ns.class, ns.message = failclass.Setup, ev.err.Error()
		}
		if ns.class != "" {
			a.markFailed(ns)
			return
		}
		ns.status = plan.OK
		a.res.Ran++
		if ns.released {
			// Final, and its downstreams ready, since evSettled; it has
			// no postconditions.
			a.okLine(ns)
			return
		}
		a.setFinal(ns)
		// Postconditions first: a node they fail is shown failed only,
		// never "ok" first.
		if !a.checkPost(ns) {
			return
		}
		a.okLine(ns)
		a.finish(ns)
	}
}

// okLine shows a node that ran as ok: its kind's summary, its line, its
// JSON event. A node whose result records a failure its kind absorbs (a
// decision slot that ran out of memory) shows that outcome, not "ok". The
// duration is its record's, the command's own run time; the wait in a
// cluster's queue is said apart.
func (a *applier) okLine(ns *nodeState) {
	a.announce(ns)
	sym, what := "✓", "ok"
	if l, ok := ns.n.Kind.(stages.OutcomeLabeler); ok && ns.record != nil {
		if label := l.OutcomeLabel(ns.record.Result); label != "" {
			sym, what = "!", label
		}
	}
	msg := fmt.Sprintf("%s in %s", what, roundDur(ns.ranFor()))
	if r := ns.res; r != nil && (r.Queued > 0 || r.Requeued > 0) {
		msg += fmt.Sprintf(" (queued %s", roundDur(r.Queued))
		if r.Requeued > 0 {
			msg += fmt.Sprintf(", requeued %d×", r.Requeued)
		}
		msg += ")"
	}
	a.line(ns, sym, msg)
	a.emitJSON(ns, "ok")
}

// ranFor is how long the node ran: its record's duration (the command's
// own, where it ran one) once it has a record, else from its start to its
// end in this apply.
func (ns *nodeState) ranFor() time.Duration {
	if r := ns.record; r != nil && !r.Started.IsZero() && !r.Ended.IsZero() {
		return r.Ended.Sub(r.Started)
	}
	return ns.ended.Sub(ns.started)
}

// summaryLine is the summary line a node's kind makes of its result
// (stages.Announcer), read from the node's record, or "".
func (a *applier) summaryLine(ns *nodeState) string {
	an, ok := ns.n.Kind.(stages.Announcer)
	if !ok || ns.record == nil || len(ns.record.Result) == 0 {
		return ""
	}
	return an.Announce(ns.spec, ns.record.Result)
}

// announce prints the summary line of a node whose kind makes one: after
// it ran and when it is taken from the cache alike. It goes to Summaries,
// else where the node's progress lines go.
func (a *applier) announce(ns *nodeState) {
	line := a.summaryLine(ns)
	switch {
	case line == "":
	case a.opts.Summaries != nil:
		_, _ = a.writeOut(a.opts.Summaries, []byte(line+"\n"))
	default:
		_, _ = (&lockedWriter{a: a}).Write([]byte(line + "\n"))
	}
}

// notice says at once what the executor waits for, or that the wait is
// over: a progress line, the node's live progress (ns nil: the
// executor's, not one node's) and a journal note.
func (a *applier) notice(ns *nodeState, n executor.Notice) {
	status := "over"
	if n.Waiting {
		status = "waiting"
	}
	e := runlog.Entry{T: runlog.Waiting, Status: status, Message: n.String()}
	if ns == nil {
		a.printf("  … %s\n", n)
	} else {
		e.Node = ns.n.Addr
		a.line(ns, "…", n.String())
		a.mu.Lock()
		if n.Waiting {
			ns.progress = n.String()
		} else {
			ns.progress = ""
		}
		a.mu.Unlock()
	}
	_ = a.j.Note(e)
}

// finish makes a node's downstreams ready.
func (a *applier) finish(ns *nodeState) { a.sched.upstreamDone(ns) }

func (a *applier) fail(ns *nodeState, class, msg string) {
	ns.class, ns.message = class, msg
	a.markFailed(ns)
}

func (a *applier) markFailed(ns *nodeState) {
	ns.releaseKey()
	ns.status = plan.Failed
	// Nothing cairn writes about the node shows a sensitive value (a node
	// that failed before it ran has not listed them yet).
	if ns.secrets == nil && ns.spec != nil {
		ns.secrets = plan.SensitiveStrings(ns.spec.Args)
	}
	ns.message = process.RedactSecrets(ns.message, ns.secrets)
	a.res.Failed++
	a.setFinal(ns)
	f := Failure{Address: ns.n.Addr, Class: ns.class, Message: ns.message, Logs: executor.ExistingLogs(ns.logs[:])}
	f.NoOutput = ns.logs[1] != "" && len(f.Logs) == 0
	f.Refused, f.NoResume = ns.refused, ns.noResume
	if ns.res != nil {
		f.Tail = process.RedactSecrets(tailLines(ns.res.StderrTail, 8), ns.secrets)
	}
	a.res.Failures = append(a.res.Failures, f)
	_ = a.j.Write(runlog.Entry{T: runlog.Failed, Node: ns.n.Addr, Key: ns.key, Class: ns.class, Message: ns.message, Attempt: ns.attempts, Counts: ns.runCounts, Logs: f.Logs})
	a.line(ns, "✗", fmt.Sprintf("failed (%s): %s", ns.class, ns.message))
	a.emitJSON(ns, "failed")
	if !ns.released {
		a.finish(ns) // a released node's downstreams were made ready already
	}
}

func (a *applier) skip(ns *nodeState, why string) {
	ns.status = plan.Skipped
	ns.message = why
	ns.class = plan.FailUpstream
	a.res.Skipped++
	a.setFinal(ns)
	_ = a.j.Note(runlog.Entry{T: runlog.Skipped, Node: ns.n.Addr, Message: why})
	a.line(ns, "-", "skipped: "+why)
	a.emitJSON(ns, "skipped")
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

func (a *applier) printf(format string, args ...any) {
	if a.opts.JSON {
		return
	}
	_, _ = a.writeOut(a.out, fmt.Appendf(nil, format, args...))
}

// writeOut writes p to w under the output lock, clearing the live display
// first.
func (a *applier) writeOut(w io.Writer, p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.live != nil {
		a.live.clear()
	}
	return w.Write(p)
}

func (a *applier) line(ns *nodeState, sym, what string) {
	a.printf("  %s %s  %s\n", sym, ns.n.Addr, what)
}

func (a *applier) emitJSON(ns *nodeState, status string) {
	if !a.opts.JSON {
		return
	}
	ev := map[string]any{"node": ns.n.Addr, "status": status, "key": ns.key}
	if ns.class != "" {
		ev["class"], ev["message"] = ns.class, ns.message
	}
	if !ns.started.IsZero() && !ns.ended.IsZero() {
		ev["duration_s"] = ns.ranFor().Seconds()
		if ns.res != nil && ns.res.Queued > 0 {
			ev["queued_s"] = ns.res.Queued.Seconds()
		}
	}
	if line := a.summaryLine(ns); line != "" {
		ev["summary"] = json.RawMessage(line)
	}
	b, _ := json.Marshal(ev)
	a.mu.Lock()
	defer a.mu.Unlock()
	fmt.Fprintln(a.out, string(b))
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d > time.Minute:
		return d.Round(time.Second)
	case d > time.Second:
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

func tailLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// nodeRuntime is the stages.Runtime of one running node.
type nodeRuntime struct {
	a  *applier
	ns *nodeState
}

func (r *nodeRuntime) Root() string { return r.a.g.Root }

// Progress implements stages.ProgressReporter: the live display shows the
// line beside the running node.
func (r *nodeRuntime) Progress(line string) {
	r.a.mu.Lock()
	r.ns.progress = line
	r.a.mu.Unlock()
}
func (r *nodeRuntime) CacheDir() string  { return r.a.cache.Dir }
func (r *nodeRuntime) Stderr() io.Writer { return &lockedWriter{a: r.a} }
func (r *nodeRuntime) OutDir() string    { return r.a.scratchFor(r.ns) }

// Replacing implements stages.Replacer: --replace names the node or one of
// its upstreams.
func (r *nodeRuntime) Replacing() bool {
	seen := map[int]bool{}
	var walk func(n *plan.Node) bool
	walk = func(n *plan.Node) bool {
		if r.a.opts.Replace[n.Addr] {
			return true
		}
		for _, d := range n.Deps {
			if !seen[d] {
				seen[d] = true
				if walk(r.a.g.Nodes[d]) {
					return true
				}
			}
		}
		return false
	}
	return walk(r.ns.n)
}

// ReplaceCommand implements stages.Replacer: this apply's arguments, with
// --replace naming the node, each quoted for a POSIX shell where it needs
// it.
func (r *nodeRuntime) ReplaceCommand() string {
	args := append(slices.Clone(r.a.opts.Args), "--replace", r.ns.n.Addr)
	for i, a := range args {
		if a == "" || strings.ContainsFunc(a, func(c rune) bool {
			return !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", c)
		}) {
			args[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return "cairn " + strings.Join(args, " ")
}

// logName is runlog.NodeLogName(addr, attempt) of the node. Only its
// worker goroutine calls it.
func (ns *nodeState) logName(attempt int) string {
	if ns.fileName == "" {
		ns.fileName = runlog.NodeLogName(ns.n.Addr, 1)
	}
	return addrs.AttemptName(ns.fileName, attempt)
}

// scratchFor is the node's private scratch folder (CAIRN_OUT_DIR),
// <run>/out/<node>, made on first use. It is an emptied folder of an
// earlier node when there is one (a rename), so that a run of many nodes
// that leave nothing there does not make a folder per node.
func (a *applier) scratchFor(ns *nodeState) string {
	a.scratchMu.Lock()
	defer a.scratchMu.Unlock()
	if ns.scratch != "" {
		return ns.scratch
	}
	d := filepath.Join(a.j.Dir, "out", ns.logName(1))
	ns.scratch = d
	for len(a.freeScratch) > 0 {
		f := a.freeScratch[len(a.freeScratch)-1]
		a.freeScratch = a.freeScratch[:len(a.freeScratch)-1]
		// rename(2) itself, without os.Rename's look at d first: d, this
		// node's own name, is not there (and were it an empty folder, it
		// would be replaced by another).
		if syscall.Rename(f, d) == nil {
			return d
		}
		_ = os.Remove(f)
	}
	// One mkdir when the run's out folder exists, as it does after the
	// first node.
	if err := os.Mkdir(d, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		_ = os.MkdirAll(d, 0o777)
	}
	return d
}

// recycleFinished takes back the scratch folders of the nodes that ended
// since the last call. The loop calls it after dispatching what their end
// made ready, so that the next node of a chain does not wait for it.
func (a *applier) recycleFinished() {
	for _, ns := range a.finished {
		a.recycleScratch(ns)
	}
	clear(a.finished)
	a.finished = a.finished[:0]
}

// emptyDir reports whether the folder d can be read and holds nothing:
// an open and two reads of its entries, without the os.File that
// os.ReadDir would make (and offer to Go's poller).
func emptyDir(d string) bool {
	fd, err := syscall.Open(d, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	var buf [512]byte
	for {
		n, err := syscall.ReadDirent(fd, buf[:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return false
		}
		if n <= 0 {
			return true
		}
		if _, count, _ := syscall.ParseDirent(buf[:n], 1, nil); count > 0 {
			return false // ParseDirent leaves out "." and ".."
		}
	}
}

// recycleScratch takes back a finished node's scratch folder when the node
// left it empty (its processes are gone: nothing writes there any more).
// A folder with something in it stays where it is.
func (a *applier) recycleScratch(ns *nodeState) {
	a.scratchMu.Lock()
	defer a.scratchMu.Unlock()
	d := ns.scratch
	if d == "" {
		return
	}
	if !emptyDir(d) {
		return
	}
	free := filepath.Join(a.j.Dir, "out", ".free")
	if err := a.ensureDir(free); err != nil {
		return
	}
	to := filepath.Join(free, strconv.Itoa(a.scratchN))
	a.scratchN++
	if os.Rename(d, to) == nil {
		a.freeScratch = append(a.freeScratch, to)
	}
}

// dropFreeScratch removes the emptied scratch folders kept for reuse.
func (a *applier) dropFreeScratch() {
	a.scratchMu.Lock()
	defer a.scratchMu.Unlock()
	if a.scratchN > 0 {
		_ = os.RemoveAll(filepath.Join(a.j.Dir, "out", ".free"))
	}
	a.freeScratch = nil
}

// NodeStarted implements stages.Journaler. The record names cairn's own
// pid and no process group: the node's processes die with cairn.
func (r *nodeRuntime) NodeStarted(logs ...string) error {
	a, ns := r.a, r.ns
	if len(logs) > 0 {
		ns.logs = [2]string{"", logs[len(logs)-1]}
	}
	err := a.j.Write(runlog.Entry{T: runlog.Started, Node: ns.n.Addr, Key: ns.key, Attempt: ns.attempts, PID: os.Getpid(), Logs: logs})
	a.line(ns, ">", "started")
	return err
}

// JournalItems implements stages.Journaler: one "charged" record per
// item stored by the node.
func (r *nodeRuntime) JournalItems(recs []stages.ItemRecord) error {
	es := make([]runlog.Entry, len(recs))
	for i, rec := range recs {
		es[i] = runlog.Entry{T: runlog.Charged, Node: r.ns.n.Addr, Attempt: r.ns.attempts, Item: rec.Item, Key: rec.Key, Count: rec.Charged}
	}
	return r.a.j.WriteBatch(es)
}

type lockedWriter struct{ a *applier }

func (w *lockedWriter) Write(p []byte) (int, error) {
	a := w.a
	if a.opts.Stderr == nil {
		a.printf("%s", p)
		return len(p), nil
	}
	return a.writeOut(a.opts.Stderr, p)
}

// Exec implements stages.Runtime.
func (r *nodeRuntime) Exec(ctx context.Context, p stages.Proc) (*process.Result, error) {
	a, ns := r.a, r.ns
	c := ns.spec.Common
	stem := runlog.LogStem(a.j.Dir, ns.logName(ns.attempts))
	stdout, stderr := stem+".out", stem+".err"
	if p.Stdout != "" {
		stdout = p.Stdout
	}
	if p.Stderr != "" {
		stderr = p.Stderr
	}
	named := p.Stdout != "" || p.Stderr != ""
	if ns.batchLogDir != "" && p.LogName != "" && ns.lease != nil {
		stem := filepath.Join(ns.batchLogDir, fmt.Sprintf("gpu%s_%s", intsString(ns.lease.Devices), p.LogName))
		stdout, stderr = stem+".out", stem+".err"
		named = true
	}
	if err := a.ensureDir(filepath.Dir(stdout)); err != nil {
		return nil, err
	}
	ns.logs = [2]string{stdout, stderr}
	env := os.Environ()
	env = append(env,
		"CAIRN_RUN_ID="+a.runID,
		"CAIRN_NODE="+ns.n.Addr,
		"CAIRN_NODE_KEY="+ns.key,
		"CAIRN_OUT_DIR="+r.OutDir(),
		fmt.Sprintf("CAIRN_ATTEMPT=%d", ns.attempts),
		"CAIRN_WORKSPACE="+a.g.Root,
	)
	var gpus []int
	if ns.lease != nil {
		gpus = ns.lease.Devices
		env = append(env, a.opts.GPUs.ChildEnv(gpus)...)
	} else if c.GPUs == 0 {
		// A node that leased no GPU sees none.
		env = append(env, "CUDA_VISIBLE_DEVICES=")
	}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		env = append(env, k+"="+c.Env[k])
	}
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		env = append(env, k+"="+p.Env[k])
	}
	var inherit []*os.File
	if ns.locked != nil {
		inherit = append(inherit, ns.locked.File())
	}
	if ns.lease != nil {
		inherit = append(inherit, ns.lease.Files()...)
	}
	spec := &executor.Spec{
		Node: ns.n.Addr, Argv: p.Argv, Shell: p.Shell, Env: env, Dir: a.g.Root,
		Stdin: p.Stdin, Stdout: stdout, Stderr: stderr, NamedLogs: named,
		Timeout: c.Timeout, CPUs: c.CPUs, MemMiB: c.MemMiB, KillGrace: c.KillGrace,
		Classify: c.Classify, GPUs: gpus, Hard: a.opts.Hard, Secrets: ns.secrets,
		Started: func(ref process.JobRef) {
			testKillAfterStart()
			stdout, stderr := executor.JobLogs(ref, stdout, stderr)
			ns.logs = [2]string{stdout, stderr}
			e := runlog.Entry{T: runlog.Started, Node: ns.n.Addr, Key: ns.key, Attempt: ns.attempts, Job: &ref, GPUs: gpus, Wave: ns.wave, Logs: append([]string{stdout, stderr}, p.Logs...)}
			if pid, pgid, tick, ok := executor.LocalProcess(ref); ok {
				e.PID, e.PGID, e.ProcTick = pid, pgid, tick
			}
			if ns.n.Stage.OnInterrupt == "fail" {
				// After a power loss too, the node must show as
				// interrupted, so that it is not rerun silently.
				_ = a.j.Write(e)
			} else {
				_ = a.j.WriteUnsynced(e)
			}
			detail := "started (" + executor.Describe(ref)
			if len(gpus) > 0 {
				detail += fmt.Sprintf(", GPU %s", intsString(gpus))
			}
			a.line(ns, ">", detail+")")
		},
		Notice: func(n executor.Notice) { a.notice(ns, n) },
		Local:  executor.LocalSpec{Inherit: inherit},
	}
	if a.opts.GPUs != nil {
		spec.Local.Sample = delayedSampler(a.opts.GPUs.Sampler(gpus))
	} else {
		spec.Local.Sample = delayedSampler(func(pid int) func() gpu.Peaks {
			s := gpu.StartSampler(context.Background(), pid, gpu.SampleInterval(), nil, nil)
			return s.Stop
		})
	}
	job, err := a.opts.Executor.Submit(ctx, spec)
	if err != nil {
		return nil, err
	}
	// The job is cancelled when ctx ends (Submit's contract): wait for
	// its end all the same, to know how it ended.
	return job.Wait(context.WithoutCancel(ctx))
}

// WorkerLauncher implements stages.WorkerStarter: an evaluation's workers
// start through the apply's executor.
func (r *nodeRuntime) WorkerLauncher() process.Launcher { return r.a.opts.Executor }

// ensureDir makes a log folder the first time a node of this apply needs
// it; later nodes pay nothing.
func (a *applier) ensureDir(dir string) error {
	if _, ok := a.dirs.Load(dir); ok {
		return nil
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	a.dirs.Store(dir, true)
	return nil
}

// delayedSampler starts sampling one interval after the process starts:
// a process that ends sooner (most short nodes) costs no scan of /proc,
// and its peak comes from the kernel's rusage figure, which the executor
// always adds.
func delayedSampler(start func(pid int) func() gpu.Peaks) func(pid int) func() gpu.Peaks {
	return func(pid int) func() gpu.Peaks {
		var (
			mu      sync.Mutex
			stop    func() gpu.Peaks
			stopped bool
		)
		t := time.AfterFunc(gpu.SampleInterval(), func() {
			mu.Lock()
			defer mu.Unlock()
			if !stopped {
				stop = start(pid)
			}
		})
		return func() gpu.Peaks {
			t.Stop()
			mu.Lock()
			defer mu.Unlock()
			stopped = true
			if stop == nil {
				return gpu.Peaks{}
			}
			return stop()
		}
	}
}

func intsString(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// noteFinished journals a node's end once its record is in the cache.
func (a *applier) noteFinished(ns *nodeState, rec *store.Record) {
	_ = a.j.Note(runlog.Entry{T: runlog.Finished, Node: ns.n.Addr, Key: ns.key, Attempt: ns.attempts, Duration: rec.Ended.Sub(rec.Started).Seconds(), PeakRSS: rec.PeakRSSMiB, PeakGPU: rec.PeakGPUMiB, Counts: rec.RunCounts})
}

// execute runs a node with retries and commits its record. It runs on a
// worker goroutine and touches only its own node's state.
func (a *applier) execute(ns *nodeState) event {
	if ns.persisted != nil {
		defer close(ns.persisted)
	}
	retry := ns.n.Stage.Retry
	for {
		ns.attempts++
		ns.class, ns.message, ns.runCounts = "", "", nil
		marks := markOutputs(a.g.Root, ns.spec.Common, a.checkInside)
		out, err := ns.n.Kind.Run(a.ctx, ns.spec, &nodeRuntime{a: a, ns: ns})
		ns.ended = time.Now()
		if err != nil {
			ns.class, ns.message = failclass.Setup, plan.OneLine(err.Error())
		} else {
			ns.res = out.Proc
			ns.class, ns.message, ns.runCounts = out.Class, out.Message, out.RunCounts
			ns.refused, ns.noResume = out.Refused, out.NoResume
			if ns.class == "" {
				var since time.Time
				if out.Proc != nil {
					since = out.Proc.Started
				}
				if msg := marks.check(since); msg != "" {
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
				rec, class, msg := a.settle(ns, out)
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
		_ = a.j.Write(runlog.Entry{T: runlog.Failed, Node: ns.n.Addr, Key: ns.key, Class: ns.class, Message: ns.message, Attempt: ns.attempts, Counts: ns.runCounts})
		a.line(ns, "↻", fmt.Sprintf("attempt %d failed (%s): %s; retrying", ns.attempts, ns.class, ns.message))
	}
}
