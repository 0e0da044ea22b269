// Package executor runs a node's processes: the Executor interface, which
// the engine's scheduler and recovery use, and Local, which runs them on
// this machine. A cluster executor (engine/executor/slurm) implements the
// same interface.
//
// The interface is shaped by what a cluster can do, not by what a local
// process offers. A node's job is submitted and returns at once (a cluster
// may queue it), then waited for or cancelled; it is named by a process.JobRef,
// which the journal keeps, so that an apply after a crash finds it again:
// Attach waits for a job an earlier apply started, Recover ends what dead
// applies left running (Local kills the process groups; a cluster cancels
// or re-attaches its jobs). The scheduler asks CanRunMore before it starts
// a node, as ninja's Builder asks its CommandRunner. What only a process on
// this machine has (descriptors it inherits, the /proc memory sampler, the
// parent-death signal) is in LocalSpec and inside Local: another executor
// ignores Spec.Local.
//
// The package is executor, not exec, so that it does not read as os/exec,
// which it imports.
package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/process"
)

// JobLogs are the log files a job writes: its reference's "stdout" and
// "stderr" details where it names them (a cluster job that an apply
// re-attached to writes the logs the dead run gave it), else the spec's.
func JobLogs(ref process.JobRef, stdout, stderr string) (string, string) {
	if p := ref.Details["stdout"]; p != "" {
		stdout = p
	}
	if p := ref.Details["stderr"]; p != "" {
		stderr = p
	}
	return stdout, stderr
}

// Notice is an executor's word on something it waits for and cannot go
// on without (a cluster's controller that does not answer, a job the
// cluster requeued), said once when the wait begins, with why (the
// client command's own error, the job's state), and once when it ends.
type Notice struct {
	Waiting bool      // the wait begins; false: it is over
	What    string    // what it waits for, for people: "the Slurm controller"
	Since   time.Time // when the wait began
	Detail  string    // why
	// Error, when set, is not a wait but an error the executor hit that
	// fails no node (a job it could not cancel): the notice says it alone.
	Error string
}

// String is the notice for people: "waiting for WHAT since 15:04:05:
// DETAIL", then "done waiting for WHAT after 28s".
func (n Notice) String() string {
	if n.Error != "" {
		return n.Error
	}
	if !n.Waiting {
		return fmt.Sprintf("done waiting for %s after %s", n.What, time.Since(n.Since).Round(time.Second))
	}
	s := fmt.Sprintf("waiting for %s since %s", n.What, n.Since.Format("15:04:05"))
	if n.Detail != "" {
		s += ": " + n.Detail
	}
	return s
}

// Noticer is an executor that says what it waits for: Notify sends its
// notices to f from now on (nil: back to its default).
type Noticer interface {
	Notify(f func(Notice))
}

// ErrGone is Attach's answer for a job that no longer exists.
var ErrGone = errors.New("executor: the job is gone")

// Executor runs nodes' processes as jobs.
type Executor interface {
	// Name names the executor in job references ("local").
	Name() string
	// Submit starts spec's process (a cluster queues it) and returns at
	// once. When ctx ends, the job is cancelled softly (as Cancel(false)):
	// its Wait still returns how it ended.
	Submit(ctx context.Context, spec *Spec) (Job, error)
	// Attach finds a job an earlier apply started, by the reference its
	// journal recorded: the job can be waited for or cancelled. ErrGone
	// when it no longer exists.
	Attach(ctx context.Context, ref process.JobRef) (Job, error)
	// CanRunMore reports whether the executor takes another job now; the
	// scheduler asks before it starts a node.
	CanRunMore() bool
	// Recover ends what is left of jobs that dead applies recorded as
	// started and never saw end, and returns what it ended (Local: the
	// pids of the processes it killed).
	Recover(ctx context.Context, refs []process.JobRef) []string
	// Launcher starts an evaluation's worker processes (stages/items)
	// where the executor runs things.
	process.Launcher
}

// Job is a submitted node process.
type Job interface {
	Ref() process.JobRef
	// Wait returns once the job has ended, with how it ended; when ctx
	// ends first it returns ctx's error and the job goes on.
	Wait(ctx context.Context) (*process.Result, error)
	// Cancel stops the job: softly (SIGTERM, then SIGKILL after the
	// spec's KillGrace) or, hard, at once. Its Wait then reports it
	// interrupted.
	Cancel(hard bool) error
}

// QueuedJob is a Job that a cluster may hold in its queue before it runs.
type QueuedJob interface {
	Job
	// Queue is the job's state as the cluster last showed it, for
	// people ("PENDING (Resources)"; "" before the first answer), and
	// whether that state is a wait in the queue (neither running nor
	// ended).
	Queue() (state string, queued bool)
}

// OutputMark is the modification time cairn gives each existing output
// of a node before an attempt (the engine's freshness marks), to tell
// later whether the attempt wrote it. A cluster executor that compares an
// output with what a job left (Spec.Outputs) takes a file of the same
// inode and size that carries it as the job left it when the time it had
// before the mark (Spec.Marked) is the job's: a job that ended before the
// attempt began (one a dead run submitted, re-attached to) left it so,
// and cairn marked it since.
var OutputMark = time.Date(2001, 9, 9, 1, 46, 40, 0, time.UTC)

// Spec is one process to run for a node: what any executor needs.
type Spec struct {
	Node string
	// RunID names the apply's run, Key the node's key and Attempt which
	// attempt this is (1 for the first): the engine sets them, and a
	// cluster executor names and describes its jobs by them. The process
	// sees them in Env too (CAIRN_RUN_ID, CAIRN_NODE_KEY, CAIRN_ATTEMPT),
	// but an executor reads them here.
	RunID   string
	Key     string
	Attempt int
	Argv    []string
	Shell   bool
	Env     []string // the complete environment
	Dir     string
	Stdin   io.Reader
	Stdout  string // log file paths
	Stderr  string
	// NamedLogs: the stage named the log files (a batch's per-GPU logs),
	// so they are made even when the process writes nothing to them.
	// cairn's own per-node logs are made with their first byte.
	NamedLogs bool
	// AppendLogs: the process's output is added to the log files' end
	// (a service replica restarted after a death keeps its predecessor's
	// output), not written over it.
	AppendLogs bool
	Timeout    time.Duration
	// CPUs is the stage's cpus (0: not said); a cluster executor asks
	// for that many.
	CPUs int
	// MemMiB is the stage's memory in MiB (0: not said); a cluster
	// executor asks for that much. The local executor does not enforce it.
	MemMiB int
	// KillGrace is the wait between SIGTERM and SIGKILL.
	KillGrace time.Duration
	Classify  []process.ClassPattern // tried in order (see stages.Common)
	GPUs      []int
	// Hard, when closed, kills at once instead of SIGTERM-then-wait (a
	// second Ctrl-C).
	Hard <-chan struct{}
	// Started is called once the job runs (for the journal), with its
	// reference.
	Started func(process.JobRef)
	// Submitting, when set, is called before a cluster executor submits
	// the job in a way whose answer it journals only afterwards (an
	// sbatch), with a reference that finds the job without its id: the
	// journal keeps it, so that a cairn killed in between re-attaches to
	// the job instead of submitting it again. Started follows as usual.
	Submitting func(process.JobRef)
	// Notice, when set, gets what the job waits for that people should
	// know at once (a cluster that requeued it); an executor may send
	// none.
	Notice func(Notice)
	// Secrets are sensitive values (arguments, environment) that cairn's
	// messages must not show.
	Secrets []string
	// Outputs are the absolute paths of the node's outputs that this
	// process alone writes (stages.Proc.Outputs). A cluster executor,
	// which learns of a job's end a poll later, records their state when
	// the command ends and fails the node with class result where one
	// changed before it collected the job. The local executor ignores
	// them: it sees its process end at once.
	Outputs []string
	// Marked are the modification times (ns) the files of those outputs
	// had before cairn gave them OutputMark for this attempt, by absolute
	// path: a cluster executor re-attached to a job that ended while
	// cairn was down finds the mark on a file the job left, and compares
	// the time under the mark with the job's, so that an edit made
	// meanwhile that kept the file's size is seen. nil: none marked.
	Marked map[string]int64
	// Local is what only the local executor uses; others ignore it.
	Local LocalSpec
}

// LocalSpec is the part of a Spec that only a process on this machine has.
type LocalSpec struct {
	// Inherit are descriptors the child keeps for its whole life: the
	// per-key lock and GPU leases, so that they are never released while
	// the process (or anything it started) still runs.
	Inherit []*os.File
	// Sample starts memory sampling of the process tree; nil for none.
	Sample func(pid int) func() gpu.Peaks
	// Guarded: a guard ends the process's whole group when cairn's
	// process ends, a kill -9 included (Linux; see sysproc.Guarded): a
	// service's replica, whose server may run its work in children of its
	// own.
	Guarded bool
}

// Finished is a job that has already ended with res (or err): what an
// executor that runs a spec at once, in-process, returns from Submit.
func Finished(ref process.JobRef, res *process.Result, err error) Job {
	return finished{ref, res, err}
}

type finished struct {
	ref process.JobRef
	res *process.Result
	err error
}

func (f finished) Ref() process.JobRef                           { return f.ref }
func (f finished) Wait(context.Context) (*process.Result, error) { return f.res, f.err }
func (f finished) Cancel(bool) error                             { return nil }

// Describe names a job for people: "pid 123" for a local process, "slurm
// job 42" for a cluster's.
func Describe(ref process.JobRef) string {
	if ref.Executor == localName {
		return "pid " + ref.ID
	}
	return ref.Executor + " job " + ref.ID
}
