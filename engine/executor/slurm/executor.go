package slurm

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/process"
)

// Executor runs each node as one Slurm job, behind cairn's executor
// interface. After a crash, Recover keeps the jobs a dead run left (it
// cancels none), and Submit of the same node — the same command, folder and
// node key — re-attaches to its job instead of submitting another: a job
// still pending or running is waited for, one that ended is collected.
type Executor struct {
	opts Options
	// Leave: at an interrupt, leave the jobs running instead of
	// cancelling them.
	Leave bool

	mu     sync.Mutex
	client *Client
	// name is the job name of a dead run that Recover found: new jobs
	// take it too, so that one query by name follows them all.
	name  string
	adopt map[string]process.JobRef // by specDigest: a dead run's jobs

	// gatherMu guards gathering: the instances waiting to be submitted
	// together, by arrayKey.
	gatherMu  sync.Mutex
	gathering map[string]*gathering

	cancelMu sync.Mutex
	cancelQ  []pendingCancel
	cancelWG sync.WaitGroup // the scancels queued and in flight

	// noteMu guards notify, where the clients' notices go (Notify);
	// defNotify is NewExecutor's Options.Notify.
	noteMu    sync.Mutex
	notify    func(executor.Notice)
	defNotify func(executor.Notice)
}

type pendingCancel struct {
	c   *Client
	ref Ref
}

// cancelWindow gathers the cancels of one interrupt into one scancel.
const cancelWindow = 100 * time.Millisecond

// cancelFor bounds the retries of an interrupt's scancel (a controller
// that is restarting answers within it).
const cancelFor = 3 * time.Minute

// NewExecutor checks that the Slurm client commands answer, under
// opts.CallTimeout, and returns the executor. A SLURM_CONF that names no
// file is an error at once: Slurm's commands would retry reading it for a
// minute each. While the commands do not answer, opts.Notify hears of it
// (and later whatever Notify sets).
func NewExecutor(ctx context.Context, opts Options) (*Executor, error) {
	opts.defaults()
	if conf := os.Getenv("SLURM_CONF"); conf != "" {
		if _, err := os.Stat(conf); err != nil {
			return nil, fmt.Errorf("SLURM_CONF names the cluster's configuration file, and %w: set it to the cluster's slurm.conf, or unset it", err)
		}
	}
	e := &Executor{adopt: map[string]process.JobRef{}, gathering: map[string]*gathering{}, notify: opts.Notify, defNotify: opts.Notify}
	opts.Notify = e.notice
	e.opts = opts
	c, err := New(ctx, "check", opts)
	if err != nil {
		return nil, err
	}
	c.Close()
	return e, nil
}

// Notify implements executor.Noticer.
func (e *Executor) Notify(f func(executor.Notice)) {
	e.noteMu.Lock()
	defer e.noteMu.Unlock()
	if f == nil {
		f = e.defNotify
	}
	e.notify = f
}

// notice passes a client's notice on.
func (e *Executor) notice(n executor.Notice) {
	e.noteMu.Lock()
	f := e.notify
	e.noteMu.Unlock()
	if f != nil {
		f(n)
	}
}

// Close sends the cancels queued, stops following the apply's jobs and
// waits until the Client's queries and goroutines have ended (see
// Client.Close); jobs still in Slurm are left there. The executor takes no
// more work after it.
func (e *Executor) Close() {
	e.cancelWG.Wait()
	e.mu.Lock()
	c := e.client
	e.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// MaxSubmitted is how many jobs may be in Slurm at once.
func (e *Executor) MaxSubmitted() int { return e.opts.MaxSubmitted }

// Name implements executor.Executor.
func (*Executor) Name() string { return "slurm" }

// CanRunMore implements executor.Executor: fewer than max_submitted of
// the apply's jobs are in Slurm.
func (e *Executor) CanRunMore() bool {
	e.mu.Lock()
	c := e.client
	e.mu.Unlock()
	return c == nil || c.CanSubmit()
}

// StartWorker implements process.Launcher: an evaluation's workers talk
// with cairn over pipes and run on this machine.
func (*Executor) StartWorker(ctx context.Context, w process.WorkerSpec) (process.Worker, error) {
	return process.LocalLauncher.StartWorker(ctx, w)
}

// clientFor is the apply's Client, made at the first job; its job name is
// a recovered run's, else run.
func (e *Executor) clientFor(ctx context.Context, run string) (*Client, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client != nil {
		return e.client, nil
	}
	if e.name != "" {
		run = e.name
	}
	c, err := New(ctx, run, e.opts)
	if err != nil {
		return nil, err
	}
	e.client = c
	return c, nil
}

// Recover implements executor.Executor. It ends nothing: the jobs of
// dead runs are kept for their nodes' next Submit, which re-attaches to
// them. A job whose node this apply does not run again is left to finish
// (scancel --name RUN ends them).
func (e *Executor) Recover(_ context.Context, refs []process.JobRef) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range refs {
		if r.Executor != e.Name() || r.Details["spec"] == "" {
			continue
		}
		e.adopt[r.Details["spec"]] = r
		if e.name == "" && e.client == nil {
			e.name = r.Details["run"]
		}
	}
	return nil
}

// Attach implements executor.Executor: the job is followed from its
// reference; ErrGone for a reference that is not a Slurm job's.
func (e *Executor) Attach(ctx context.Context, ref process.JobRef) (executor.Job, error) {
	if ref.Executor != e.Name() || ref.ID == "" {
		return nil, executor.ErrGone
	}
	c, err := e.clientFor(ctx, ref.Details["run"])
	if err != nil {
		return nil, err
	}
	r := Ref{JobID: ref.ID, Run: ref.Details["run"], ExitFile: ref.Details["exit_file"]}
	c.Attach(r)
	j := e.newJob(c, r, ref, &executor.Spec{Stdout: ref.Details["stdout"], Stderr: ref.Details["stderr"]})
	j.submitted = ref.Submitted()
	return j, nil
}

// specDigest names a node's work as the job reference keeps it: the
// command, its folder, GPUs and the node's address and key. Two specs with
// the same digest do the same work.
func specDigest(spec *executor.Spec) string {
	h := sha256.New()
	w := func(s string) { fmt.Fprintf(h, "%d:%s\n", len(s), s) }
	for _, a := range spec.Argv {
		w(a)
	}
	w(strconv.FormatBool(spec.Shell))
	w(spec.Dir)
	w(strconv.Itoa(len(spec.GPUs)))
	w(spec.Node)
	w(spec.Key)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// jobRef is the journal's reference to a submitted job: with the log
// files the job writes ("stdout", "stderr": a job re-attached to keeps the
// dead run's) and when it was submitted.
func (e *Executor) jobRef(ref Ref, spec *executor.Spec, digest string, submitted time.Time) process.JobRef {
	d := map[string]string{
		"run": ref.Run, "exit_file": ref.ExitFile, "spec": digest, "stdout": spec.Stdout, "stderr": spec.Stderr,
	}
	if !submitted.IsZero() {
		d[process.SubmittedDetail] = strconv.FormatInt(submitted.UnixNano(), 10)
	}
	return process.JobRef{Executor: e.Name(), ID: ref.JobID, Details: d}
}

// Submit implements executor.Executor: it submits the node as a job (or
// re-attaches to the job a dead run submitted for it) and returns once
// Slurm has it. When ctx ends (an interrupt), the job is cancelled, with
// the other jobs cancelled in the same moment in one scancel, unless Leave
// says to leave it running.
func (e *Executor) Submit(ctx context.Context, spec *executor.Spec) (executor.Job, error) {
	now := time.Now()
	failed := func(class, msg string) (executor.Job, error) {
		res := &process.Result{ExitCode: -1, GPUs: spec.GPUs, Class: class, Message: msg, Started: now, Ended: time.Now()}
		return executor.Finished(process.JobRef{Executor: e.Name()}, res, nil), nil
	}
	setup := func(msg string) (executor.Job, error) { return failed(failclass.Setup, msg) }
	if spec.Stdin != nil {
		return setup("the slurm executor cannot feed a node's standard input: run it with the local executor")
	}
	if len(spec.Argv) == 0 {
		return setup("nothing to run: the command is empty")
	}
	c, err := e.clientFor(ctx, cmp.Or(spec.RunID, "cairn"))
	if err != nil {
		return nil, err
	}
	digest := specDigest(spec)
	e.mu.Lock()
	old, adopted := e.adopt[digest]
	delete(e.adopt, digest)
	e.mu.Unlock()
	var ref Ref
	// submitted: when the job was submitted, by this apply or a dead one
	// (journaled with its id, or found in Slurm by its comment).
	submitted := old.Submitted()
	if adopted && old.ID == "" && (old.Details["array"] != "" || old.Details["comment"] != "") {
		// Journaled before its sbatch answered: found by its comment
		// (its array's), or submitted again where it never was.
		r, at, found, err := e.findPending(ctx, c, old)
		if err != nil {
			if ctx.Err() != nil {
				// Ctrl-C while the dead run's submission was looked
				// for: nothing was submitted, and the next apply looks
				// again.
				return failed(failclass.Interrupted, "stopped because cairn was interrupted (while the job a dead run may have submitted was looked for; nothing was submitted)")
			}
			return failed(failclass.Infra, process.RedactSecrets(err.Error(), spec.Secrets))
		}
		if found {
			old.ID, submitted = r.JobID, at
		} else {
			adopted = false
		}
	}
	if adopted {
		ref = Ref{JobID: old.ID, Run: old.Details["run"], ExitFile: old.Details["exit_file"]}
		c.Attach(ref)
		// The job writes the logs the dead run gave it: its output and
		// its end are there, not in this run's log folder.
		logs := *spec
		logs.Stdout, logs.Stderr = executor.JobLogs(old, spec.Stdout, spec.Stderr)
		spec = &logs
	} else {
		job := jobFor(spec)
		if err := os.Remove(job.ExitFile); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("slurm: %w", err)
		}
		err = c.takeSlot(ctx)
		if err == nil {
			ref, err = e.submitGathered(ctx, c, spec, job, digest)
			if err != nil {
				c.freeSlot()
			}
		}
		if err != nil {
			class := failclass.Infra
			switch {
			case ctx.Err() != nil:
				class, err = failclass.Interrupted, errors.New("stopped because cairn was interrupted (before its job was submitted)")
			case errors.Is(err, ErrRefused):
				// The stage's settings: retry on infrastructure would
				// submit the same refused job again.
				class, err = failclass.Setup, fmt.Errorf("%w; check the stage's slurm settings (partition, account, qos, gres, time) against what the cluster offers (sinfo, sacctmgr show assoc), then apply again", err)
			}
			res := &process.Result{ExitCode: -1, GPUs: spec.GPUs, Class: class, Message: process.RedactSecrets(err.Error(), spec.Secrets), Started: now, Ended: time.Now()}
			return executor.Finished(process.JobRef{Executor: e.Name()}, res, nil), nil
		}
		submitted = time.Now() // in Slurm's queue from now
	}
	jr := e.jobRef(ref, spec, digest, submitted)
	j := e.newJob(c, ref, jr, spec)
	j.started, j.submitted = now, submitted
	if spec.Notice != nil {
		c.Watch(ref.JobID, spec.Notice)
	}
	if spec.Started != nil {
		spec.Started(jr)
	}
	go func() {
		select {
		case <-ctx.Done():
			if e.Leave {
				j.leave()
			} else {
				_ = j.Cancel(false)
			}
		case <-j.ended:
		}
	}()
	return j, nil
}

// job is one node's Slurm job.
type job struct {
	e       *Executor
	c       *Client
	ref     Ref
	jr      process.JobRef
	spec    *executor.Spec
	started time.Time
	// submitted is when the job was submitted (by this apply or a dead
	// one); zero where unknown.
	submitted time.Time

	once      sync.Once
	ended     chan struct{} // Wait has its outcome
	mu        sync.Mutex
	cancelled bool
	left      chan struct{} // closed by leave: Wait returns at once
	leftOnce  sync.Once
	giveUp    chan struct{} // closed a while after a cancel that shows no end
	giveOnce  sync.Once
}

func (e *Executor) newJob(c *Client, ref Ref, jr process.JobRef, spec *executor.Spec) *job {
	return &job{e: e, c: c, ref: ref, jr: jr, spec: spec, started: time.Now(),
		ended: make(chan struct{}), left: make(chan struct{}), giveUp: make(chan struct{})}
}

// Ref implements executor.Job.
func (j *job) Ref() process.JobRef { return j.jr }

// Cancel implements executor.Job: scancel, gathered with the moment's
// other cancels (see Client.Cancel: a running job's script has SIGTERM
// first, the scancel after). Slurm sends SIGTERM, then SIGKILL after its
// KillWait, so hard and soft are the same here.
func (j *job) Cancel(bool) error {
	j.mu.Lock()
	first := !j.cancelled
	j.cancelled = true
	j.mu.Unlock()
	if first {
		j.e.cancel(j.c, j.ref)
		// A controller that does not answer must not hold the interrupt
		// up for ever.
		time.AfterFunc(cancelFor+j.e.opts.CallTimeout, func() { j.giveOnce.Do(func() { close(j.giveUp) }) })
	}
	return nil
}

func (j *job) leave() { j.leftOnce.Do(func() { close(j.left) }) }

// Queue implements executor.QueuedJob: the state and Slurm's reason from
// the last status query.
func (j *job) Queue() (string, bool) {
	j.c.mu.Lock()
	defer j.c.mu.Unlock()
	t, ok := j.c.jobs[j.ref.JobID]
	if !ok || t.state == "" {
		return "", false
	}
	st := t.state
	if t.reason != "" && t.reason != "None" {
		st += " (" + t.reason + ")"
	}
	return st, !running(t.state) && !final(t.state)
}

// Wait implements executor.Job.
func (j *job) Wait(ctx context.Context) (*process.Result, error) {
	defer j.once.Do(func() { close(j.ended) })
	res := &process.Result{ExitCode: -1, GPUs: j.spec.GPUs, Started: j.started}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		out *Outcome
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		out, err := j.c.Wait(wctx, j.ref)
		ch <- answer{out, err}
	}()
	var a answer
	select {
	case a = <-ch:
	case <-j.left:
		res.Class, res.Left = failclass.Interrupted, true
		res.Message = fmt.Sprintf("cairn was interrupted; Slurm job %s is left running (its exit file: %s)", j.ref.JobID, j.ref.ExitFile)
		res.Ended = time.Now()
		return res, nil
	case <-j.giveUp:
		res.Class = failclass.Interrupted
		res.Message = fmt.Sprintf("stopped because cairn was interrupted; Slurm job %s was cancelled (no final state seen yet)", j.ref.JobID)
		res.Ended = time.Now()
		return res, nil
	}
	if a.err != nil {
		return nil, a.err
	}
	out := a.out
	res.Ended = time.Now()
	res.StderrTail = executor.FileTail(j.spec.Stderr, 16<<10)
	if ex := out.Exit; ex != nil {
		res.ExitCode = ex.Status
		res.Requeued = ex.Restarts
		if !ex.Started.IsZero() {
			// The command's own start: a job an earlier apply submitted
			// started before this apply marked the node's outputs.
			res.Started = ex.Started
			if !j.submitted.IsZero() && ex.Started.After(j.submitted) {
				res.Queued = ex.Started.Sub(j.submitted)
			}
			if !ex.Ended.IsZero() && !ex.Ended.Before(ex.Started) {
				// The command's own end, as the script saw it: not when
				// cairn learnt of it (a poll later, or an apply later).
				res.Ended = ex.Ended
			}
		}
	}
	res.TimedOut = out.State == "TIMEOUT" || out.State == "DEADLINE" || (out.Exit != nil && out.Exit.TimedOut)
	res.Class, res.Message = out.Class, out.Message
	j.mu.Lock()
	cancelled := j.cancelled
	j.mu.Unlock()
	switch {
	case cancelled && (out.State == "CANCELLED" || out.Exit != nil && out.Exit.Term):
		// Cairn's cancel signals a running job's script first, which
		// ends the command and exits: FAILED, its exit file saying so.
		res.Class, res.Message = failclass.Interrupted, "stopped because cairn was interrupted (its Slurm job was cancelled)"
	case res.Class == "" && out.Exit != nil:
		if msg := changedOutput(out.Exit, j.spec.Dir, j.spec.Marked); msg != "" {
			res.Class, res.Message = failclass.Result, msg
		}
	case res.Class == failclass.Exit:
		sig, byShell := signalled(out.Exit, j.spec.Shell)
		if sig != 0 {
			res.Message = fmt.Sprintf("killed by signal %s (%s)", executor.SignalText(sig), byShell)
		}
		res.Class, res.Message = classifyStderr(res, j.spec.Classify)
		if sig != 0 && res.Class == failclass.Exit {
			res.Class, res.Message = failclass.Killed, res.Message+"; not sent by cairn; no out-of-memory diagnosis"
		}
	}
	if res.Message != "" {
		res.Message = process.RedactSecrets(fmt.Sprintf("Slurm job %s: %s", j.ref.JobID, res.Message), j.spec.Secrets)
	}
	return res, nil
}

// signalled is the signal that ended a job's command, from its exit
// status: the script's shell gives 128+N for a command killed by signal
// N. A command run through a shell (shell = true) is not told apart: that
// shell's own status is 128+N when its command was killed, and the local
// executor sees an exit status there too. how says so, for the message.
func signalled(ex *ExitStatus, shell bool) (sig syscall.Signal, how string) {
	if ex == nil || shell || ex.Status <= 128 || ex.Status > 128+64 {
		return 0, ""
	}
	return syscall.Signal(ex.Status - 128), fmt.Sprintf("the job's script saw exit status %d", ex.Status)
}

// classifyStderr tries a failed job's stderr against the stage's classify
// patterns, then the out-of-memory diagnosis, as the local executor does.
func classifyStderr(res *process.Result, patterns []process.ClassPattern) (string, string) {
	for _, p := range patterns {
		if m := p.Pattern.Find(res.StderrTail); m != nil {
			return p.Class, fmt.Sprintf("%s; stderr matched %s pattern %q", res.Message, p.Class, string(m))
		}
	}
	if m, ok := gpu.DiagnoseOOM(res.StderrTail, nil); ok {
		return failclass.MemoryFailure, fmt.Sprintf("%s; out of memory: %q in stderr", res.Message, m)
	}
	return res.Class, res.Message
}

// cancel queues ref's cancel; the first of a moment's cancels sends them
// all after cancelWindow, in as few scancel calls as they fit.
func (e *Executor) cancel(c *Client, ref Ref) {
	e.cancelMu.Lock()
	first := len(e.cancelQ) == 0
	e.cancelQ = append(e.cancelQ, pendingCancel{c, ref})
	e.cancelMu.Unlock()
	if !first {
		return
	}
	e.cancelWG.Add(1)
	go func() {
		defer e.cancelWG.Done()
		time.Sleep(cancelWindow)
		e.cancelMu.Lock()
		q := e.cancelQ
		e.cancelQ = nil
		e.cancelMu.Unlock()
		byClient := map[*Client][]Ref{}
		for _, p := range q {
			byClient[p.c] = append(byClient[p.c], p.ref)
		}
		for c, refs := range byClient {
			ctx, cancel := context.WithTimeout(context.Background(), cancelFor)
			if err := c.Cancel(ctx, refs); err != nil {
				e.notice(executor.Notice{Error: err.Error()})
			}
			cancel()
		}
	}()
}

// jobFor is the Slurm job for spec: its batch script and exit file beside
// the node's stdout log, in the run's log folder.
func jobFor(spec *executor.Spec) *Job {
	stem := strings.TrimSuffix(spec.Stdout, filepath.Ext(spec.Stdout))
	return &Job{
		Node: spec.Node, Attempt: max(spec.Attempt, 1), Argv: spec.Argv, Shell: spec.Shell,
		Env: spec.Env, Dir: spec.Dir, Stdout: spec.Stdout, Stderr: spec.Stderr, AppendLogs: spec.AppendLogs,
		Script: stem + ".sbatch", ExitFile: stem + ".exit", Outputs: spec.Outputs,
		GPUs: len(spec.GPUs), CPUs: spec.CPUs, MemMiB: spec.MemMiB, Timeout: spec.Timeout, KillGrace: spec.Grace(),
	}
}
