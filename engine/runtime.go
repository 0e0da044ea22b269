package engine

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairn-run/cairn/dsl/addrs"
	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/failpoint"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/stages"
)

// nodeRuntime is the stages.Runtime of one running node.
type nodeRuntime struct {
	a  *applier
	ns *nodeState
}

func (r *nodeRuntime) Root() string { return r.a.g.Root }

// Progress implements stages.ProgressReporter: a live display shows the
// line beside the running node.
func (r *nodeRuntime) Progress(line string) {
	r.a.emit(&events.Progress{Node: r.ns.n.Addr, Text: line})
}

// Emit implements stages.Runtime: the kind's events go to the apply's
// sink.
func (r *nodeRuntime) Emit(e events.Event) { r.a.emit(e) }

func (r *nodeRuntime) CacheDir() string { return r.a.cache.Dir }

func (r *nodeRuntime) OutDir() string { return r.a.scratchFor(r.ns) }

func (r *nodeRuntime) RunID() string { return r.a.runID }

// SimulatedGPUs implements stages.GPUSimulator: the node leased GPUs of
// a simulated inventory.
func (r *nodeRuntime) SimulatedGPUs() bool {
	return r.ns.lease != nil && r.a.opts.GPUs != nil && r.a.opts.GPUs.Simulated()
}

func (r *nodeRuntime) NoSync() bool { return r.a.opts.NoSync }

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

// NodeStarted implements stages.Journaler. The record names cairn's own
// pid and no process group: the node's processes die with cairn. It is
// synced as a process's started record is (writeStarted).
func (r *nodeRuntime) NodeStarted(logs ...string) error {
	a, ns := r.a, r.ns
	ns.began = true
	if len(logs) > 0 {
		ns.logs = [2]string{"", logs[len(logs)-1]}
	}
	err := a.writeStarted(ns, runlog.Entry{T: runlog.Started, Node: ns.n.Addr, Key: ns.key, Attempt: ns.attempts, PID: os.Getpid(), Logs: logs})
	a.emit(&events.ProcessStarted{Node: ns.n.Addr, Key: ns.key, Attempt: ns.attempts, Logs: logs, InProcess: true})
	return err
}

// writeStarted appends a node's started record: in the file before the
// node's work begins, so that a kill -9 leaves the node recorded as in
// flight, and synced by the next durable record, or at once for a stage
// with on_interrupt = "fail": after a power loss too, such a node must show
// as interrupted, so that it is not rerun silently.
func (a *applier) writeStarted(ns *nodeState, e runlog.Entry) error {
	// Its kind, for the report of a node that ends with no record
	// (failed, or cut off by a kill).
	if ns.n.Kind != nil {
		e.Kind = ns.n.Kind.Name()
	}
	if ns.n.Stage.OnInterrupt == "fail" {
		// Marked, for gc to keep the run while the interruption refuses
		// a restart.
		e.OnInterrupt = "fail"
		return a.j.Write(e)
	}
	return a.j.WriteUnsynced(e)
}

// JournalItems implements stages.Journaler: one "charged" record per
// item stored by the node, written but not synced (each item's result is
// durable in the item store already; the node's finished or failed record
// syncs them).
func (r *nodeRuntime) JournalItems(recs []stages.ItemRecord) error {
	es := make([]runlog.Entry, len(recs))
	for i, rec := range recs {
		es[i] = runlog.Entry{T: runlog.Charged, Node: r.ns.n.Addr, Attempt: r.ns.attempts, Item: rec.Item, Key: rec.Key, Count: rec.Charged}
	}
	return r.a.j.WriteBatchUnsynced(es)
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
	if p.Replica > 0 {
		named = true
	} else if ns.batchLogDir != "" && p.LogName != "" && ns.lease != nil {
		// A retried variant's attempt 2 and later add .attemptN, as a
		// node's own logs do: no attempt writes over an earlier one's.
		name := fmt.Sprintf("gpu%s_%s", intsString(ns.lease.Devices), p.LogName)
		stem := filepath.Join(ns.batchLogDir, addrs.AttemptName(name, ns.attempts))
		stdout, stderr = stem+".out", stem+".err"
		named = true
	}
	if err := a.ensureDir(filepath.Dir(stdout)); err != nil {
		return nil, err
	}
	if p.Replica == 0 {
		ns.logs = [2]string{stdout, stderr}
	}
	ce := process.Env{
		RunID: a.runID, Node: ns.n.Addr, Key: ns.key, OutDir: r.OutDir(), Attempt: ns.attempts, Workspace: a.g.Root,
		// A node that leased no GPU sees none.
		NoGPUs: ns.lease == nil && c.GPUs == 0,
		Stage:  c.Env, Set: p.Env,
	}
	var gpus []int
	if ns.lease != nil {
		gpus = ns.lease.Devices
		if p.Replica > 0 {
			gpus = replicaDevices(ns, p.Replica)
		}
		ce.GPUs = a.opts.GPUs.ChildEnv(gpus)
	}
	env := ce.List()
	var inherit []*os.File
	if ns.locked != nil {
		inherit = append(inherit, ns.locked.Files()...)
	}
	if ns.lease != nil {
		inherit = append(inherit, ns.lease.Files()...)
	}
	// started is the node's started record for its job ref.
	started := func(ref process.JobRef) runlog.Entry {
		stdout, stderr := executor.JobLogs(ref, stdout, stderr)
		return runlog.Entry{T: runlog.Started, Node: ns.n.Addr, Key: ns.key, Attempt: ns.attempts, Job: &ref, GPUs: gpus, Wave: ns.wave,
			Logs: append([]string{stdout, stderr}, p.Logs...), Replica: p.Replica}
	}
	// A failed write is the journal's error (ApplyResult.JournalErr).
	writeStarted := func(e runlog.Entry) { _ = a.writeStarted(ns, e) }
	if ns.n.Stage.OnInterrupt == "fail" {
		// Durable before the process starts: a node that then runs is
		// shown interrupted if cairn dies, whenever it dies. A start
		// that cannot be recorded is not made.
		e := runlog.Entry{T: runlog.Started, Node: ns.n.Addr, Key: ns.key, Attempt: ns.attempts, GPUs: gpus, Wave: ns.wave,
			Logs: append([]string{stdout, stderr}, p.Logs...), Replica: p.Replica}
		if err := a.writeStarted(ns, e); err != nil {
			return &process.Result{ExitCode: -1, GPUs: gpus, Class: failclass.Infra, Message: fmt.Sprintf(
				"not started: its start could not be recorded in the run's journal %s (%s), which its stage's on_interrupt = \"fail\" needs; %s, and apply again", a.j.Path(), writeCause(err), JournalWriteAdvice(err))}, nil
		}
	}
	spec := &executor.Spec{
		Node: ns.n.Addr, RunID: a.runID, Key: ns.key, Attempt: ns.attempts, Argv: p.Argv, Shell: p.Shell, Env: env, Dir: a.g.Root,
		Stdin: p.Stdin, Stdout: stdout, Stderr: stderr, NamedLogs: named, AppendLogs: p.AppendLogs,
		Timeout: c.Timeout, CPUs: c.CPUs, MemMiB: c.MemMiB, KillGrace: c.KillGrace,
		Classify: c.Classify, GPUs: gpus, Hard: a.opts.Hard, Secrets: ns.secrets,
		Started: func(ref process.JobRef) {
			failpoint.AfterStart()
			stdout, stderr := executor.JobLogs(ref, stdout, stderr)
			if p.Replica == 0 {
				// A service's replicas start side by side: the first
				// stands for them.
				ns.logs = [2]string{stdout, stderr}
				ns.began = true
			}
			e := started(ref)
			if pid, pgid, tick, ok := executor.LocalProcess(ref); ok {
				e.PID, e.PGID, e.ProcTick = pid, pgid, tick
				ns.notePID(p.Replica, pid)
			}
			writeStarted(e)
			if p.Replica == 0 {
				ns.job = ref // a service's replicas start side by side
			}
			a.emit(&events.ProcessStarted{Node: ns.n.Addr, Key: ns.key, Attempt: ns.attempts,
				Executor: ref.Executor, Job: executor.Describe(ref), JobID: ref.ID, GPUs: gpus, Wave: ns.wave, Logs: e.Logs})
			if p.Started != nil {
				p.Started(ref)
			}
		},
		// A started record without the job's id, written before its
		// submission; Started's record follows once it is submitted.
		Submitting: func(ref process.JobRef) { writeStarted(started(ref)) },
		Notice:     func(n executor.Notice) { a.notice(ns, n) },
		Local:      executor.LocalSpec{Inherit: inherit, Guarded: p.Replica > 0},
	}
	for _, o := range p.Outputs {
		spec.Outputs = append(spec.Outputs, filepath.Join(a.g.Root, o))
	}
	if len(spec.Outputs) > 0 {
		spec.Marked = ns.marked
	}
	interval := cmp.Or(a.opts.SampleInterval, gpu.DefaultSampleInterval)
	if a.opts.GPUs != nil {
		spec.Local.Sample = delayedSampler(interval, a.opts.GPUs.Sampler(gpus))
	} else {
		spec.Local.Sample = delayedSampler(interval, func(pid int) func() gpu.Peaks {
			s := gpu.StartSampler(context.Background(), pid, interval, nil, nil)
			return s.Stop
		})
	}
	job, err := a.opts.Executor.Submit(ctx, spec)
	if err != nil {
		return nil, err
	}
	if qj, ok := job.(executor.QueuedJob); ok && p.Submitted != nil {
		p.Submitted(qj.Queue)
	}
	// The job is cancelled when ctx ends (Submit's contract): wait for
	// its end all the same, to know how it ended.
	res, err := job.Wait(context.WithoutCancel(ctx))
	if res != nil && p.Replica > 0 && ns.svc != nil {
		ns.svc.notePeaks(p.Replica, res)
	}
	if res != nil {
		for _, m := range res.GPUMemory {
			a.emit(&events.GPUMemory{Node: ns.n.Addr, Attempt: ns.attempts, GPU: m.Device, Start: m.Start, T: m.T, MiB: m.MiB})
		}
	}
	return res, err
}

// WorkerLauncher implements stages.WorkerStarter: an evaluation's workers
// start through the apply's executor.
func (r *nodeRuntime) WorkerLauncher() process.Launcher { return r.a.opts.Executor }

// HardStop implements stages.HardStopper: closed on a second interrupt.
func (r *nodeRuntime) HardStop() <-chan struct{} { return r.a.opts.Hard }

// delayedSampler starts sampling one interval after the process starts:
// a process that ends sooner (most short nodes) costs no scan of /proc,
// and its peak comes from the kernel's rusage figure, which the executor
// always adds.
func delayedSampler(interval time.Duration, start func(pid int) func() gpu.Peaks) func(pid int) func() gpu.Peaks {
	return func(pid int) func() gpu.Peaks {
		var (
			mu      sync.Mutex
			stop    func() gpu.Peaks
			stopped bool
		)
		t := time.AfterFunc(interval, func() {
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
