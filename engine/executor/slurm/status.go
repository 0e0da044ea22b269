package slurm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/executor"
)

// tracked is one job the client follows.
type tracked struct {
	ref          Ref
	since        time.Time // submitted or attached
	missingSince time.Time // zero while status queries show it
	state        string
	reason       string
	finishing    bool // final state seen; the outcome is being decided
	slot         bool
	cancelled    bool // cairn's own scancel cancelled it
	// never is Slurm's reason for keeping it pending where that reason
	// means it never runs (see neverRuns); "" otherwise.
	never    string
	ran      bool      // seen running since it was followed or last requeued
	requeued time.Time // when it was seen waiting again after it ran; zero otherwise
	// failedSince is when a query first showed it in a final state other
	// than COMPLETED (zero otherwise): see settled.
	failedSince time.Time
	notify      func(executor.Notice)
	done        chan struct{}
	out         *Outcome
}

// Outcome is how a job ended.
type Outcome struct {
	JobID string
	// State is Slurm's final state (its first word), or LOST for a job
	// no status source showed for LostAfter.
	State string
	Exit  *ExitStatus // nil: no exit file
	// Class is "" for success, else a dsl failure class; Message says
	// why for people.
	Class   string
	Message string
}

// failedSettle is how long a final state other than COMPLETED must stand,
// over two queries at least, before it is taken: a job Slurm requeues
// (scontrol requeue, a preemption, a node failure) can show its killed run
// as FAILED for a moment before it is pending again, and that run is not
// the job's end.
const failedSettle = 2 * time.Second

// settled reports whether a job seen in final state state at now may be
// decided: COMPLETED at once, any other once it has stood for
// failedSettle (and the poll interval) since a query first showed it.
func (t *tracked) settled(state string, now time.Time, interval time.Duration) bool {
	if state == "COMPLETED" {
		return true
	}
	if t.failedSince.IsZero() {
		t.failedSince = now
		return false
	}
	return now.Sub(t.failedSince) >= max(failedSettle, interval)
}

// final says whether a state (its first word) is one a job does not leave.
// A requeued job goes back to PENDING: REQUEUED and the like are not final.
func final(state string) bool {
	switch state {
	case "COMPLETED", "FAILED", "TIMEOUT", "DEADLINE", "OUT_OF_MEMORY",
		"NODE_FAIL", "BOOT_FAIL", "PREEMPTED", "CANCELLED", "REVOKED":
		return true
	}
	return false
}

// neverRuns says whether Slurm's reason for keeping a job pending is one
// the job does not leave by itself: what it asks for is more than its
// partition, account or qos allows (Slurm's "Job Reason Codes"), not
// busy nodes or limits that free up.
func neverRuns(reason string) bool {
	switch reason {
	case "PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints",
		"DependencyNeverSatisfied", "InvalidAccount", "InvalidQOS", "AccountNotAllowed", "QOSNotAllowed":
		return true
	}
	return false
}

// neverOutcome decides a job pending for a reason it never leaves (t.never):
// cairn cancels it, and its node fails class setup with Slurm's reason and
// what to check, as for a job sbatch refuses.
func (c *Client) neverOutcome(t *tracked) *Outcome {
	ctx, cancel := context.WithTimeout(c.life, cancelFor)
	err := c.Cancel(ctx, []Ref{t.ref})
	cancel()
	msg := fmt.Sprintf("Slurm keeps the job pending for reason %s, which it never leaves by itself: the job asks for more than the partition, account or qos allows; ", t.never)
	if err != nil {
		msg += "cancelling it failed (" + err.Error() + "): scancel " + t.ref.JobID + "; "
	} else {
		msg += "cairn cancelled it; "
	}
	msg += "check the stage's cpus, memory, gpus and timeout against the partition's nodes (sinfo -N -o '%N %c %m %G') and its limits (scontrol show partition), then apply again"
	return &Outcome{JobID: t.ref.JobID, State: "PENDING", Class: failclass.Setup, Message: msg}
}

// firstWord is a State column's first word ("CANCELLED by 1000" is
// CANCELLED); squeue's and sacct's spellings agree on it.
func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return strings.TrimSuffix(f[0], "+")
}

// classify maps a final state and the exit file to a failure class. Only
// COMPLETED with an exit file saying 0 is a success: an unknown state is
// never taken for one.
func classify(state string, ex *ExitStatus, exitWait time.Duration, exitFile string) (string, string) {
	if ex != nil && ex.TimedOut && state != "OUT_OF_MEMORY" {
		// The script ended the command at the stage's timeout, as the
		// local executor does, whatever the command did then.
		return failclass.Timeout, fmt.Sprintf("killed at its timeout of %s", ex.Timeout)
	}
	switch state {
	case "COMPLETED":
		if ex == nil {
			return failclass.Infra, fmt.Sprintf("the job completed but its exit file %s did not appear within %s", exitFile, exitWait)
		}
		if ex.Status != 0 {
			return failclass.Exit, fmt.Sprintf("exited with status %d", ex.Status)
		}
		return "", ""
	case "FAILED":
		if ex == nil {
			return failclass.Exit, fmt.Sprintf("the job failed (no exit file %s within %s)", exitFile, exitWait)
		}
		return failclass.Exit, fmt.Sprintf("exited with status %d", ex.Status)
	case "TIMEOUT", "DEADLINE":
		return failclass.Timeout, "Slurm ended the job at its time limit (" + state + ")"
	case "OUT_OF_MEMORY":
		msg := "Slurm reports OUT_OF_MEMORY"
		if ex != nil && ex.Status == 0 {
			msg += " (the command's exit status was 0)"
		}
		return failclass.MemoryFailure, msg
	case "NODE_FAIL", "BOOT_FAIL", "PREEMPTED", "REVOKED":
		return failclass.Infra, "Slurm reports " + state
	case "CANCELLED":
		return failclass.Killed, "the job was cancelled (scancel, by cairn or someone else)"
	case "LOST":
		// Gone from Slurm's memory (older than MinJobAge, say, when cairn
		// comes back after a crash): the exit file the job's own script
		// wrote is all that is left, and it is enough for the status.
		if ex != nil && ex.Status == 0 {
			return "", ""
		}
		if ex != nil {
			return failclass.Exit, fmt.Sprintf("exited with status %d (from its exit file; Slurm no longer knows the job)", ex.Status)
		}
		// A pending job (an array's pending task) cancelled by someone
		// else leaves no trace where the cluster keeps no accounting:
		// squeue drops it and scontrol no longer knows it. Nothing tells
		// that from a job lost otherwise, so it is not called cancelled.
		return failclass.Infra, "no Slurm status source has shown the job for too long, and it left no exit file (a job cancelled while pending leaves no trace on a cluster without accounting)"
	}
	return failclass.Infra, "Slurm reports " + state
}

// takeSlot waits until fewer than MaxSubmitted jobs are in flight.
func (c *Client) takeSlot(ctx context.Context) error {
	for {
		c.slotMu.Lock()
		if c.inFlight < c.opts.MaxSubmitted {
			c.inFlight++
			c.slotMu.Unlock()
			return nil
		}
		freed := c.freed
		c.slotMu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *Client) freeSlot() {
	c.slotMu.Lock()
	c.inFlight--
	close(c.freed)
	c.freed = make(chan struct{})
	c.slotMu.Unlock()
}

// CanSubmit says whether a Submit now would not wait for a slot.
func (c *Client) CanSubmit() bool {
	c.slotMu.Lock()
	defer c.slotMu.Unlock()
	return c.inFlight < c.opts.MaxSubmitted
}

// Attach follows a job a previous cairn submitted (from the journal). It
// counts against MaxSubmitted until it ends. The status queries ask for
// its job name from now on.
func (c *Client) Attach(ref Ref) {
	c.addName(ref.Run)
	c.slotMu.Lock()
	c.inFlight++
	c.slotMu.Unlock()
	c.follow(ref, true)
}

// follow adds ref to the jobs the poller queries and wakes it.
func (c *Client) follow(ref Ref, slot bool) *tracked {
	now := time.Now()
	c.mu.Lock()
	t, ok := c.jobs[ref.JobID]
	if !ok {
		t = &tracked{ref: ref, since: now, slot: slot, done: make(chan struct{})}
		c.jobs[ref.JobID] = t
		if c.start.IsZero() || now.Before(c.start) {
			c.start = now
		}
	} else if slot && !t.slot {
		t.slot = true
	}
	start := !c.polling
	c.polling = true
	if start {
		c.pollWG.Add(1)
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	if start {
		go c.poll()
	}
	return t
}

// Wait blocks until the job ends, or ctx ends (the job keeps running).
func (c *Client) Wait(ctx context.Context, ref Ref) (*Outcome, error) {
	c.mu.Lock()
	t, ok := c.jobs[ref.JobID]
	c.mu.Unlock()
	if !ok {
		t = c.follow(ref, false)
	}
	select {
	case <-t.done:
		return t.out, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Watch sends f what the job waits for that people should know at once:
// that Slurm requeued it and it waits to run again (with its state and
// Slurm's reason), and when it runs again.
func (c *Client) Watch(jobID string, f func(executor.Notice)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.jobs[jobID]; ok {
		t.notify = f
	}
}

// running says whether a state is one of a job that has started.
func running(state string) bool {
	switch state {
	case "RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT":
		return true
	}
	return false
}

// requeuedState says whether a state and reason are a requeued job's
// whatever came before: Slurm's REQUEUE states, or pending for BeginTime,
// which is how Slurm holds a requeued job back, where the job was not
// submitted with a begin time of its own (begins).
func requeuedState(st jobState, begins bool) bool {
	return strings.HasPrefix(st.state, "REQUEUE") || st.state == "PENDING" && st.reason == "BeginTime" && !begins
}

// watch notes t's new state and returns the notice it makes, if any: a
// job that ran and is seen waiting again (Slurm requeued it: also when no
// query saw it run, by its state), or that runs again or has ended since. begins: the jobs
// were submitted with a begin time. c.mu is held.
func (t *tracked) watch(st jobState, now time.Time, begins bool) *executor.Notice {
	switch {
	case (running(st.state) || final(st.state)) && !t.requeued.IsZero():
		// It ran again (also when it ended before a query saw it run).
		return t.ranAgain()
	case running(st.state):
		t.ran = true
	case t.requeued.IsZero() && !final(st.state) && (t.ran || requeuedState(st, begins)):
		t.requeued, t.ran = now, false
		detail := "Slurm requeued it; it is " + st.state
		if st.reason != "" && st.reason != "None" {
			detail += " (" + st.reason + ")"
			if st.reason == "BeginTime" {
				detail += ": Slurm holds a requeued job back for a while"
			}
		}
		return &executor.Notice{Waiting: true, What: t.again(), Since: now, Detail: detail}
	}
	return nil
}

// ranAgain ends the wait of a requeued job that was seen waiting: the
// notice that it ran again. c.mu is held.
func (t *tracked) ranAgain() *executor.Notice {
	since := t.requeued
	t.requeued, t.ran = time.Time{}, true
	return &executor.Notice{What: t.again(), Since: since}
}

// again is what a requeued job's notices say it waits for.
func (t *tracked) again() string { return "Slurm to run job " + t.ref.JobID + " again" }

// State is the job's last seen state ("" before the first answer).
func (c *Client) State(jobID string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.jobs[jobID]; ok {
		return t.state
	}
	return ""
}

// poll queries the status of every unfinished job once per cycle, until
// none is left. The interval starts at PollInterval, grows by half at each
// quiet cycle up to MaxPollInterval, and falls back when a job changes or
// a new one is followed. A failed query changes nothing (the jobs' states
// are unknown, not final) and doubles the interval. Whatever wakes it, no
// query starts less than PollInterval after the previous one ended: a
// burst of submissions, or of jobs ending, is seen by the next cycle's one
// query, not by a query each.
func (c *Client) poll() {
	defer c.pollWG.Done()
	interval := c.opts.PollInterval
	timer := time.NewTimer(0)
	defer timer.Stop()
	var last time.Time // when the previous query ended
	for {
		select {
		case <-c.closed:
			c.mu.Lock()
			c.polling = false
			c.mu.Unlock()
			return
		case <-timer.C:
		case <-c.wake:
			interval = c.opts.PollInterval
			timer.Stop()
			if wait := time.Until(last.Add(c.opts.PollInterval)); wait > 0 {
				// The next cycle, not this moment, sees what woke it.
				timer.Reset(wait)
				continue
			}
		}
		c.mu.Lock()
		pending := 0
		for _, t := range c.jobs {
			if !t.finishing {
				pending++
			}
		}
		if pending == 0 {
			c.polling = false
			c.mu.Unlock()
			return
		}
		start := c.start
		c.queries++
		c.mu.Unlock()

		states, err := c.query(start)
		now := time.Now()
		last = now
		changed := false
		type note struct {
			f func(executor.Notice)
			n executor.Notice
		}
		var notes []note
		c.mu.Lock()
		if err == nil {
			for id, t := range c.jobs {
				if t.finishing {
					continue
				}
				st, ok := states[id]
				if !ok {
					if t.missingSince.IsZero() {
						t.missingSince = now
					}
					// Its exit file there, the job's script has ended:
					// Slurm forgot the job (older than MinJobAge), and
					// there is nothing more to wait for. Without it, a job
					// cairn cancelled was cancelled before it ran.
					exited := exitWritten(t.ref.ExitFile)
					if !exited && t.cancelled {
						t.state, t.finishing, changed = "CANCELLED", true, true
						c.begin()
						go c.finish(t)
						continue
					}
					if exited && !t.requeued.IsZero() && t.notify != nil {
						// Requeued, it ran again and ended before a
						// query saw it: its wait is over all the same.
						notes = append(notes, note{t.notify, *t.ranAgain()})
					}
					if exited || now.Sub(t.missingSince) >= c.opts.LostAfter && now.Sub(t.since) >= c.opts.LostAfter {
						t.state, t.finishing, changed = "LOST", true, true
						c.begin()
						go c.finish(t)
					}
					continue
				}
				t.missingSince = time.Time{}
				if st.state != t.state {
					changed = true
				}
				if n := t.watch(st, now, c.begins); n != nil && t.notify != nil {
					notes = append(notes, note{t.notify, *n})
				}
				t.state, t.reason = st.state, st.reason
				if st.state == "PENDING" && neverRuns(st.reason) {
					t.never, t.finishing, changed = st.reason, true, true
					c.begin()
					go c.finish(t)
					continue
				}
				if !final(st.state) {
					t.failedSince = time.Time{} // requeued: its killed run was no end
				}
				if final(st.state) && !t.settled(st.state, now, c.opts.PollInterval) {
					changed = true // look again at the next short interval
					continue
				}
				if final(st.state) {
					t.finishing = true
					c.begin()
					go c.finish(t)
				}
			}
		}
		c.mu.Unlock()
		for _, n := range notes {
			n.f(n.n)
		}
		switch {
		case err != nil:
			interval = min(interval*2, c.opts.MaxPollInterval)
		case changed:
			interval = c.opts.PollInterval
		default:
			interval = min(interval*3/2, c.opts.MaxPollInterval)
		}
		timer.Reset(interval)
	}
}

type jobState struct{ state, reason string }

// query is one status query for all of the jobs followed: sacct by job
// name since the first submission where the cluster keeps accounting,
// squeue -t all by job name otherwise; by every name they carry (a dead
// run's re-attached jobs carry its own).
func (c *Client) query(start time.Time) (map[string]jobState, error) {
	names := c.nameList()
	name, args := "squeue", []string{"--noheader", "--states=all", "--name=" + names, "--format=%i|%T|%r"}
	if c.accounting {
		name, args = "sacct", []string{"-X", "--parsable2", "--noheader", "--name=" + names,
			"--starttime=" + start.Add(-time.Minute).Format("2006-01-02T15:04:05"), "--format=JobID,State,Reason"}
	}
	b, err := c.call(c.life, name, args...)
	if err != nil {
		return nil, err
	}
	// Both print id|state|reason lines.
	out := map[string]jobState{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, "|")
		if len(f) < 2 {
			continue
		}
		st := jobState{state: firstWord(f[1])}
		if len(f) > 2 {
			st.reason = strings.TrimSpace(f[2])
		}
		for _, id := range jobIDs(strings.TrimSpace(f[0])) {
			out[id] = st
		}
	}
	return out, nil
}

// jobIDs are the jobs a status line's id names: itself, or for the
// pending tasks of a job array, which squeue and sacct print as one line
// (1234_[0-3,7], 1234_[5-999%10] with a limit on tasks at once), each
// task's id (1234_0, ...). An id it cannot read is kept as it is.
func jobIDs(id string) []string {
	base, tasks, ok := strings.Cut(id, "_[")
	if !ok || !strings.HasSuffix(tasks, "]") {
		return []string{id}
	}
	tasks, _, _ = strings.Cut(strings.TrimSuffix(tasks, "]"), "%")
	var out []string
	for _, r := range strings.Split(tasks, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b-a > maxTasks {
			return []string{id}
		}
		for i := a; i <= b; i++ {
			out = append(out, base+"_"+strconv.Itoa(i))
		}
	}
	return out
}

// maxTasks bounds the tasks one range may name (Slurm's MaxArraySize is
// at most 4000001).
const maxTasks = 4000001

// finish decides a job that reached a final state: it reads the exit
// file, waiting up to ExitFileWait for it where the state leaves the exit
// status to say (COMPLETED, FAILED), and closes done. Close cuts the wait
// short and leaves the job undecided.
func (c *Client) finish(t *tracked) {
	defer c.end()
	c.mu.Lock()
	state, ref, never := t.state, t.ref, t.never
	c.mu.Unlock()
	if never != "" {
		c.decided(t, c.neverOutcome(t))
		return
	}
	wait := time.Duration(0)
	if state == "COMPLETED" || state == "FAILED" {
		wait = c.opts.ExitFileWait
	}
	var want func(ExitStatus) bool
	if state == "COMPLETED" {
		// A completed job's script exited 0, and so did the command it
		// wrote the exit file for: a file saying otherwise is an earlier
		// run's, of a job requeued (scontrol requeue, a preemption) whose
		// next run has not written its own yet.
		want = func(ex ExitStatus) bool { return ex.Status == 0 }
	}
	ex, msgErr := c.awaitExit(ref.ExitFile, wait, want)
	if ex == nil && c.life.Err() != nil {
		return
	}
	class, msg := classify(state, ex, c.opts.ExitFileWait, ref.ExitFile)
	if msgErr != nil && ex == nil {
		msg += " (" + msgErr.Error() + ")"
	}
	c.decided(t, &Outcome{JobID: ref.JobID, State: state, Exit: ex, Class: class, Message: msg})
}

// decided gives t its outcome, ends its waits and frees its slot.
func (c *Client) decided(t *tracked, out *Outcome) {
	c.mu.Lock()
	t.out = out
	slot := t.slot
	c.mu.Unlock()
	close(t.done)
	if slot {
		c.freeSlot()
	}
}

// exitWritten says whether a job's exit file is there.
func exitWritten(path string) bool {
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return err == nil
}

// awaitExit reads the exit file, retrying for up to wait; with want, for
// one that want takes (the file another is replaced by: a requeued job's
// next run writes its own), else, at the end of the wait, the last read.
func (c *Client) awaitExit(path string, wait time.Duration, want func(ExitStatus) bool) (*ExitStatus, error) {
	deadline := time.Now().Add(wait)
	step := 50 * time.Millisecond
	var other *ExitStatus // a file want did not take, kept for the end
	for {
		refreshDir(filepath.Dir(path))
		st, ok, err := readExit(path)
		if ok && (want == nil || want(st)) {
			return &st, nil
		}
		if ok {
			other = &st
		}
		if time.Now().After(deadline) {
			if other != nil {
				return other, nil
			}
			return nil, err
		}
		select {
		case <-time.After(step):
		case <-c.life.Done():
			return nil, c.life.Err()
		}
		step = min(step*2, 2*time.Second)
	}
}
