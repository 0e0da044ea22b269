package slurm

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/failpoint"
	"github.com/cairn-run/cairn/process"
)

// The instances of a stage that the engine hands over together (a
// for_each stage's ready instances, a waves batch) are submitted as one
// job array: each Submit of an instance joins the moment's gathering of
// its stage and resources, which is submitted once no other instance has
// joined for ArrayGap, ArrayMax after it began, or once it holds the
// cluster's MaxArraySize tasks. A gathering of one is submitted as a
// single job. The engine hands a stage's thousand ready instances over
// within a second or two on a busy login node, with pauses of tens of
// milliseconds; a node that is no stage's instance is never held back.
const (
	ArrayGap = 200 * time.Millisecond
	ArrayMax = 5 * time.Second
)

// gathering is the Submits of instances waiting to be submitted together.
type gathering struct {
	stage   string
	members []*member
	last    time.Time // the last join
	full    chan struct{}
}

// member is one Submit in a gathering: its answer comes on done.
type member struct {
	ctx    context.Context
	spec   *executor.Spec
	job    *Job
	digest string
	done   chan struct{}
	ref    Ref
	err    error
}

// arrayKey is what instances must share to be one array's tasks: their
// stage, resources and folder; "" for a node that is no stage's instance.
func arrayKey(job *Job) (stage, key string) {
	stage, _, ok := strings.Cut(job.Node, "[")
	if !ok {
		return "", ""
	}
	return stage, fmt.Sprintf("%s|%d|%d|%d|%d|%s", stage, job.GPUs, job.CPUs, job.MemMiB, job.timeLimit(), job.Dir)
}

// submitGathered submits job with the other instances of its stage that
// come in the same moment, and returns its reference once Slurm has it.
// The caller took job's slot.
func (e *Executor) submitGathered(ctx context.Context, c *Client, spec *executor.Spec, job *Job, digest string) (Ref, error) {
	stage, key := arrayKey(job)
	m := &member{ctx: ctx, spec: spec, job: job, digest: digest, done: make(chan struct{})}
	if key == "" || c.maxArray < 2 {
		e.submitAlone(c, m)
		return m.ref, m.err
	}
	e.gatherMu.Lock()
	g := e.gathering[key]
	if g == nil {
		g = &gathering{stage: stage, full: make(chan struct{})}
		e.gathering[key] = g
		go e.gather(c, key, g)
	}
	g.members = append(g.members, m)
	g.last = time.Now()
	if len(g.members) >= c.maxArray {
		delete(e.gathering, key)
		close(g.full)
	}
	e.gatherMu.Unlock()
	<-m.done
	return m.ref, m.err
}

// gather waits until g is complete and submits it.
func (e *Executor) gather(c *Client, key string, g *gathering) {
	began := time.Now()
	t := time.NewTimer(ArrayGap)
	defer t.Stop()
	for done := false; !done; {
		select {
		case <-g.full:
			done = true
		case <-t.C:
			e.gatherMu.Lock()
			wait := min(time.Until(g.last.Add(ArrayGap)), time.Until(began.Add(ArrayMax)))
			if wait <= 0 {
				if e.gathering[key] == g {
					delete(e.gathering, key)
				}
				done = true
			} else {
				t.Reset(wait)
			}
			e.gatherMu.Unlock()
		}
	}
	e.submitArray(c, g.stage, g.members)
}

// submitAlone submits m's job as a single job. Before the sbatch, the
// member's Submitting journals a reference that finds the job by its
// comment (a cairn killed before Started's record re-attaches by it);
// Started follows with the job's id.
func (e *Executor) submitAlone(c *Client, m *member) {
	defer close(m.done)
	m.job.prelude = ""
	if err := writeScript(m.job); err != nil {
		m.err = fmt.Errorf("slurm: writing the batch script of %s: %w", m.job.Node, err)
		return
	}
	token := newToken()
	if m.spec.Submitting != nil {
		m.spec.Submitting(e.pendingRef(c.run, m, "comment", comment(m.job, token)))
	}
	id, err := c.submitAs(m.ctx, m.job, token)
	if err != nil {
		m.err = err
		return
	}
	m.ref = Ref{JobID: id, Run: c.run, ExitFile: m.job.ExitFile}
	c.follow(m.ref, true)
}

// submitArray submits members as one job array (as single jobs when
// there is one, or when a task's environment cannot be set from the
// array's). Before the sbatch, each member's Submitting journals a
// reference that finds its task by the array's comment; Started follows
// with the task's id.
func (e *Executor) submitArray(c *Client, stage string, members []*member) {
	alone := func() {
		var wg sync.WaitGroup
		for _, m := range members {
			wg.Add(1)
			go func() { defer wg.Done(); e.submitAlone(c, m) }()
		}
		wg.Wait()
	}
	if len(members) == 1 {
		alone()
		return
	}
	jobs := make([]*Job, len(members))
	for i, m := range members {
		jobs[i] = m.job
	}
	a, ok, err := NewArray(stage, jobs)
	if !ok {
		alone()
		return
	}
	fail := func(err error) {
		for _, m := range members {
			m.err = err
			close(m.done)
		}
	}
	if err != nil {
		fail(fmt.Errorf("slurm: preparing a job array of %s: %w", stage, err))
		return
	}
	var wg sync.WaitGroup
	for i, m := range members {
		if m.spec.Submitting == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.spec.Submitting(e.pendingRef(c.run, m, "array", a.Comment, "task", strconv.Itoa(i)))
		}()
	}
	wg.Wait()
	// The sbatch is the members' as long as one of them wants it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var left atomic.Int64
	left.Store(int64(len(members)))
	for _, m := range members {
		stop := context.AfterFunc(m.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	refs, err := c.SubmitArray(ctx, a)
	if err != nil {
		fail(err)
		return
	}
	failpoint.AfterArraySubmit()
	for i, m := range members {
		m.ref = refs[i]
		close(m.done)
	}
}

// pendingRef is the journal's reference to m's job before Slurm gave it
// an id: kv names it ("comment" and the job's --comment; "array" and the
// array's --comment with "task" and its index); "submitting_ns" is when
// (its sbatch starts after).
func (e *Executor) pendingRef(run string, m *member, kv ...string) process.JobRef {
	d := map[string]string{
		"run": run, "exit_file": m.job.ExitFile, "spec": m.digest, "stdout": m.spec.Stdout, "stderr": m.spec.Stderr,
		"submitting_ns": strconv.FormatInt(time.Now().UnixNano(), 10),
	}
	for i := 0; i+1 < len(kv); i += 2 {
		d[kv[i]] = kv[i+1]
	}
	return process.JobRef{Executor: e.Name(), Details: d}
}

// pendingSettle is how long after an sbatch's call timeout a submission
// it made is sure to show in squeue.
const pendingSettle = 5 * time.Second

// findPending is the job of a dead run's node that was journaled before
// its job's id (old has no ID): a single job found by its comment, an
// array's task by the array's. found is false where Slurm shows no such
// job and the node's job left no exit file (it was never submitted): the
// node is submitted again. A job Slurm has forgotten whose exit file is
// there is followed under its reference, and collected from that file.
//
// The dead run's sbatch may still have been on its way when it died (a
// slow controller): no such sbatch outlives its call's timeout after the
// reference was journaled (nor cairn: it dies with it, see callEnv), so
// "never submitted" is concluded only once that time has passed; until
// then a job not shown is looked for again.
//
// submitted is when the job was submitted, for its time in the queue:
// Slurm's submit time (to the second), or where later the journaled
// start of the dead run's submission, which the sbatch followed.
func (e *Executor) findPending(ctx context.Context, c *Client, old process.JobRef) (ref Ref, submitted time.Time, found bool, err error) {
	ref = Ref{Run: old.Details["run"], ExitFile: old.Details["exit_file"]}
	want, what := old.Details["comment"], "job"
	if a := old.Details["array"]; a != "" {
		want, what = a, "job array"
	}
	// The dead run named its jobs after itself.
	c.addName(ref.Run)
	backoff := c.opts.RetryBackoff
	deadline := time.Now().Add(c.opts.SubmitRetryFor)
	var submitting, settled time.Time // settled: no sbatch of the dead run is on its way after it
	if ns, err := strconv.ParseInt(old.Details["submitting_ns"], 10, 64); err == nil {
		submitting = time.Unix(0, ns)
		settled = submitting.Add(c.opts.CallTimeout + pendingSettle)
	}
	for {
		base, at, found, err := c.findByComment(ctx, want)
		if err == nil {
			task := old.Details["task"]
			if found {
				ref.JobID = base
				if old.Details["array"] != "" {
					ref.JobID += "_" + task
				}
				if at.Before(submitting) {
					at = submitting
				}
				return ref, at, true, nil
			}
			if _, err := os.Stat(ref.ExitFile); err == nil {
				ref.JobID = "the job of " + want
				if old.Details["array"] != "" {
					ref.JobID = "task " + task + " of " + want
				}
				return ref, submitting, true, nil
			}
			if wait := time.Until(settled); wait > 0 {
				select {
				case <-time.After(min(wait, max(backoff, time.Second))):
				case <-ctx.Done():
					return Ref{}, time.Time{}, false, ctx.Err()
				}
				continue
			}
			return Ref{}, time.Time{}, false, nil
		}
		if ctx.Err() != nil || time.Now().Add(backoff).After(deadline) {
			return Ref{}, time.Time{}, false, fmt.Errorf("slurm: looking up the %s a killed cairn submitted (%s): %w", what, want, err)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}
