// Package engine applies a plan (engine/plan): the schedule (the ready
// set and admission) apart from the applier's event loop, which starts
// nodes through the executor, waits for them and commits what they made
// to the cache and the run journal; batches and their slots, the ledger,
// the up-to-date memo, and recovery after a crash. It prints nothing: what
// it does goes out as typed events (package events).
package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/gpu"
)

// ApplyOptions configure one apply.
type ApplyOptions struct {
	Plan        *plan.Plan
	Cache       *store.Cache
	Executor    executor.Executor
	Parallelism int           // CPU slots for nodes without GPUs (default: cores)
	LockTimeout time.Duration // how long to wait for a node another process runs (0: forever)
	// Events receives what the apply does, as it happens (package
	// events): the apply itself prints nothing. nil drops them.
	Events events.Sink
	NoSync bool
	// SampleInterval is how often a node's memory is sampled
	// (CAIRN_SAMPLE_INTERVAL; 0: gpu.DefaultSampleInterval).
	SampleInterval time.Duration
	Args           []string
	// Rerun are the arguments that run the same configuration again,
	// where they differ from Args (variables taken from CAIRN_VAR_, a
	// saved plan's pipeline, variables and targets); sensitive values
	// redacted as in Args. For the journal's run_start record.
	Rerun []string
	// Version is cairn's version, for the journal's run_start record.
	Version string
	// Replace lists addresses forced to run (also clears on_interrupt = "fail" refusals).
	Replace map[string]bool
	// Hard is closed on a second interrupt: kill at once.
	Hard <-chan struct{}
	// GPUs leases devices to nodes with gpus > 0; nil when no GPU work is possible.
	GPUs *gpu.Pool
	// NodeLimit refuses, before anything starts, a node asking for more
	// CPUs or memory than the executor can ever give it; nil: no limit.
	NodeLimit NodeLimit
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
	RunID   string
	Ran     int
	Cached  int
	Failed  int
	Skipped int
	// Stopped counts the nodes an interrupt stopped (Ctrl-C, SIGTERM):
	// not failed, and not in Failed; the next apply resumes them.
	Stopped     int
	Interrupted bool
	Refused     string // a gate or policy refused before anything ran
	Failures    []Failure
	Dur         time.Duration
	// JournalErr is the first error writing the run's journal (a full
	// disk, a read-only file system): records of this run are missing
	// from it, though the nodes' results are in the cache. It names the
	// journal and the cause; JournalWriteAdvice says what to do.
	JournalErr error

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
	// Stopped: an interrupt of the apply stopped the node; it did not
	// fail (ApplyResult.Stopped counts it).
	Stopped bool
	// RefusesRestart: a stopped node whose stage declares on_interrupt =
	// "fail": the next apply refuses to restart it without --replace.
	RefusesRestart bool
	Tail           string
}

// ErrRefused wraps refusals that stop an apply before it starts (exit 1).
var ErrRefused = errors.New("apply refused")

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
	// keys is which node holds each key's lock (the loop's and the
	// waiting nodes' workers').
	keys keyTable
	// The worker goroutines execute the nodes the loop launches, one
	// after another: a node does not pay for a goroutine of its own (its
	// start, and the growth of its stack to the depth a node's start
	// needs). idle are those whose last node's evDone the loop has
	// handled; workers are all of them (the loop's own lists).
	idle, workers []*worker
	// ev stamps the events with the run and passes them to the options'
	// sink, one at a time.
	ev  *events.Serial
	res *ApplyResult
	ctx context.Context
	// dirs are the log folders made so far (see ensureDir).
	dirs sync.Map
	// Emptied scratch folders kept for the next node (see scratchFor).
	scratchMu   sync.Mutex
	freeScratch []string
	scratchN    int
	// scratchLeft is how many nodes may still ask for a scratch folder:
	// an emptied folder beyond them is removed at once, not kept for
	// the run's end.
	scratchLeft int
	// liveRuns are the runs of the cache that were alive when this apply
	// began, or held a key one of its nodes waited for, and were not
	// seen dead since: see recoverFreed (the loop's own).
	liveRuns map[string]bool
	// elsewhere are the nodes whose jobs a dead run left with an executor
	// this apply does not use (a Slurm job, on an apply --executor
	// local), by address: what may still be running. They are refused
	// (checkInterrupted): running them here would run them twice.
	elsewhere map[string]string
	// finished are the nodes whose scratch folders wait to be taken back
	// (recycleScratch) once the nodes their end made ready have started:
	// the loop's own goroutine only.
	finished []*nodeState
	// failedWork maps the key of each node that ran and failed in this
	// apply to that node: another node with that key (the same work) fails
	// with it instead of running it again (sameWorkFailed). The loop's own.
	failedWork map[string]*nodeState
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
	// holder is the run that held the key's lock while the node waited
	// (evLocked), where known.
	holder string
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
	p := opts.Plan
	a := &applier{
		opts: opts, g: p.Graph, pipeline: p.Pipeline, cache: opts.Cache, ev: newSerial(opts.Events),
		events: make(chan event, 64), res: &ApplyResult{}, ctx: ctx, sched: newSchedule(&opts),
		liveRuns: map[string]bool{},
	}
	start := time.Now()
	release, interrupted, err := a.begin(ctx)
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
	defer a.noteJournalErr()
	_ = a.runStart(opts.Args, opts.Rerun)
	if n, ok := opts.Executor.(executor.Noticer); ok {
		n.Notify(func(n executor.Notice) { a.notice(nil, n) })
		defer n.Notify(nil)
	}
	a.initNodes()
	if err := a.journalPlan(); err != nil {
		return nil, err
	}
	// What the apply means to do is recorded before a refusal, so that
	// the journal and the event log of a refused run hold its plan too.
	a.planDecided()
	if refusal != nil {
		// A refused apply is a run too: `cairn status` shows it refused.
		a.res.Refused = refusal.Error()
		_ = j.Write(runlog.Entry{T: runlog.RunEnd, Status: "refused", Message: refusal.Error()})
		a.runEnded("refused", refusal.Error())
		return a.res, refusal
	}
	a.sched.start(a.nodes)
	a.setupGroups()
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
		a.runEnded("failed", err.Error())
		return a.res, fmt.Errorf("the results of this run are in the cache but could not be made durable (%w): a power loss could make their nodes run again", err)
	}
	_ = j.Write(runlog.Entry{T: runlog.RunEnd, Status: status, Duration: a.res.Dur.Seconds()})
	a.runEnded(status, "")
	if err := a.cache.Stat.Save(); err != nil {
		a.warn("cannot save the stat cache: %s", err)
	}
	return a.res, nil
}

// initNodes makes the apply's node states from the plan; a node that
// --target leaves out is skipped from the start.
func (a *applier) initNodes() {
	p := a.opts.Plan
	a.nodes = make([]*nodeState, len(a.g.Nodes))
	for _, n := range a.g.Nodes {
		pn := p.Nodes[n.ID]
		ns := &nodeState{n: n, pn: pn, status: plan.Pending}
		a.nodes[n.ID] = ns
		if isService(ns) {
			ns.svc = &serviceState{done: make(chan struct{})}
		}
		if pn.Skipped {
			ns.status = plan.Skipped
			ns.message = "outside --target"
			continue
		}
	}
}

// journalPlan names in the journal every node this run means to run (keys
// known now, or known after apply), in one group commit.
func (a *applier) journalPlan() error {
	var planned []runlog.Entry
	for _, ns := range a.nodes {
		if !ns.pn.Skipped && (ns.pn.Action == plan.ActRun || ns.pn.Action == plan.ActMayRun) {
			e := runlog.Entry{T: runlog.Planned, Node: ns.n.Addr, Key: ns.pn.Key, Reasons: ns.pn.Reasons}
			for _, id := range ns.n.OrderOnly {
				e.Waits = append(e.Waits, a.g.Nodes[id].Addr)
			}
			planned = append(planned, e)
		}
	}
	a.scratchLeft = len(planned)
	if len(planned) == 0 {
		return nil
	}
	return a.j.WriteBatch(planned)
}

// begin takes the cache's shared gc lock, held until release, and deals
// with what earlier runs left behind: orphans to reap, interruptions to
// honour. A gc running, or waiting for the applies that run, is waited
// for, and the apply says so; ctx cancelled (Ctrl-C) ends the wait.
func (a *applier) begin(ctx context.Context) (release func(), interrupted map[string]interruptedNode, err error) {
	use, err := store.UseLock(ctx, a.cache.Dir, func() { a.info("waiting for cairn gc to finish") })
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

// pathErrorText is err as people read it: the operation, the path and
// the cause where err has them, without the prefixes of the packages it
// went through.
func pathErrorText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + " " + pe.Path + ": " + pe.Err.Error()
	}
	return err.Error()
}

// journalAdvice is what to do when the run's journal cannot be started in
// the cache folder dir: it depends on the cause.
func journalAdvice(err error, dir string) string {
	switch {
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return fmt.Sprintf("you may not write in the cache folder %s: check its owner and group (docs/durability.md, \"Sharing a cache\": a setgid group folder and umask 002), or use another cache (--cache)", dir)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "make room on the cache's disk, and apply again"
	}
	return "apply again once that is fixed"
}

// openRun names the run and opens its journal.
func (a *applier) openRun(noSync bool) error {
	a.runID = runlog.NewRunID()
	a.res.RunID = a.runID
	j, err := runlog.Open(a.cache.Dir, a.runID, noSync)
	if err != nil {
		return fmt.Errorf("cannot start this run's journal (%s): nothing was run; %s", pathErrorText(err), journalAdvice(err, a.cache.Dir))
	}
	a.j = j
	j.OnError = func(err error) {
		a.warn("cannot write the run's journal %s: %s; records of this run are missing from it from here on (the results of its nodes still go to the cache)", j.Path(), writeCause(err))
	}
	a.ev.SetRun(a.runID)
	return nil
}

// noteJournalErr tells the apply's result that the journal could not be
// written (the first error).
func (a *applier) noteJournalErr() {
	if err := a.j.Err(); err != nil {
		a.res.JournalErr = &journalError{path: a.j.Path(), err: err}
	}
}

// devices are the GPUs the run may lease, for the journal (none without
// a pool).
func (a *applier) devices() []runlog.Device {
	if a.opts.GPUs == nil {
		return nil
	}
	var out []runlog.Device
	for _, d := range a.opts.GPUs.Devices() {
		out = append(out, runlog.Device{Index: d.Index, Name: d.Name, MemoryMiB: d.MemTotalMiB})
	}
	return out
}

// runStart writes the run's first record.
func (a *applier) runStart(args, rerun []string) error {
	host, _ := os.Hostname()
	dir, _ := os.Getwd()
	a.emit(&events.RunStarted{Pipeline: a.pipeline, Dir: a.j.Dir, PID: os.Getpid(), Args: args})
	return a.j.Write(runlog.Entry{T: runlog.RunStart, RunID: a.runID, Pipeline: a.pipeline, PID: os.Getpid(), Args: args, Rerun: rerun,
		Host: host, Dir: dir, Version: a.opts.Version, Devices: a.devices()})
}

// newSerial is the apply's event sink: sink, or one that drops them.
func newSerial(sink events.Sink) *events.Serial {
	if sink == nil {
		sink = events.Discard
	}
	return &events.Serial{Sink: sink}
}

// loop is the scheduler: one goroutine owns all node state; workers report
// through events.
func (a *applier) loop() {
	done := a.ctx.Done()
	for {
		if !a.interrupted() {
			a.dispatch()
		}
		a.recycleFinished()
		if a.sched.done(a.interrupted()) {
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
		}
		select {
		case ev := <-a.events:
			a.handle(ev)
		case <-done:
			done = nil
			a.interrupted()
		case <-tick:
		}
	}
	for _, grp := range a.sched.groups {
		if grp.started {
			grp.end(a, a.res.Interrupted)
		}
	}
	// Whatever never started is left pending: the journal shows it planned
	// but not run, and the next apply takes it up.
}

// interrupted reports whether the apply was interrupted (Ctrl-C, SIGTERM:
// its context is cancelled), noting it in the result the first time. From
// then on no node starts and no cached result is restored: the loop and
// dispatch ask between nodes, not only when the loop waits for an event,
// since restoring many cached nodes keeps it from waiting at all.
func (a *applier) interrupted() bool {
	if !a.res.Interrupted && a.ctx.Err() != nil {
		a.res.Interrupted = true
	}
	return a.res.Interrupted
}

// handle processes a worker's event.
func (a *applier) handle(ev event) {
	ns := a.nodes[ev.id]
	switch ev.kind {
	case evLocked:
		// Another process released the key: maybe it finished the node.
		ns.locked = ev.locked
		a.sched.stopped(ns.n.ID)
		a.emit(&events.NodeWaiting{Node: ns.n.Addr, Over: true})
		if ev.err != nil {
			if errors.Is(ev.err, context.Canceled) {
				a.fail(ns, failclass.Interrupted, "stopped while waiting for its key's lock: another node of this apply, or another process, was running the same work")
			} else {
				a.fail(ns, failclass.Setup, ev.err.Error())
			}
			return
		}
		ns.status = plan.Pending
		_ = a.cache.Refresh()
		if a.takeCachedIfDone(ns) || a.sameWorkFailed(ns) {
			return
		}
		if ns.svc != nil && !a.serviceNeeded(ns) {
			// The holder served the same consumers' requests meanwhile:
			// none is left to send (as prepare decides before a wait).
			a.serviceIdle(ns)
			return
		}
		// The holder may have died with the node's job still running
		// (a Slurm job): its executor hears of that job first, and the
		// node re-attaches to it instead of submitting another.
		if ev.holder != "" && ev.holder != a.runID {
			a.liveRuns[ev.holder] = true
		}
		a.recoverFreed()
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
		a.releaseKey(ns)
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
		if ns.svc == nil {
			// A service (a serve stage) makes no result: its line
			// says how it ended, the count is of nodes that did.
			a.res.Ran++
		}
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
