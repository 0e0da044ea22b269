// Package process holds what the stage kinds and the executors both speak of
// a process a node runs: how it ended (Result), the classify patterns that
// give a failed one its class, the redaction of secrets from what is shown,
// the launcher of an evaluation's worker processes, the reference to a
// node's job that the run journal keeps, and who listens on a port
// (ForeignListener). It imports no stage
// kind and, of the engine, only engine/sysproc: an executor runs a spec
// without depending on the stage kinds, and the stage kinds start processes
// without depending on an executor.
package process

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ClassPattern is one classify pattern: stderr it matches gives a failed
// process its Class.
type ClassPattern struct {
	Class   string
	Pattern *regexp.Regexp
}

// Result is how a supervised process ended.
type Result struct {
	ExitCode   int    // -1 when killed by a signal
	Signal     string // "" or the signal's name
	TimedOut   bool
	Class      string // "" on success, else a failure class (dsl/failclass)
	Message    string // a one-line diagnosis for people
	StderrTail []byte
	Started    time.Time
	Ended      time.Time
	// Queued is the wait before the command started that a cluster
	// executor knows of: from the job's submission to its (last) start;
	// Requeued counts the times the cluster started it again.
	Queued   time.Duration
	Requeued int
	// Left: cairn was interrupted and left the job running (a cluster
	// job, cairn apply --leave-jobs); a later apply re-attaches to it.
	Left       bool
	PeakRSSMiB float64
	PeakGPUMiB float64
	// GPUMemory is the memory use on each GPU over the process's life,
	// from the samples, bounded (see GPUMemory); nil where the executor
	// does not sample (a cluster job) or the node held no GPU.
	GPUMemory []GPUMemory
	GPUs      []int
	PID       int
}

// GPUMemory is a process tree's memory use on one GPU over time, from the
// memory samples (every 100 ms by default), downsampled to at most a few
// hundred points however long it ran: each point is where the use changed
// to MiB[i], T[i] milliseconds after Start, and the highest sample of its
// span (a peak is never smoothed away). The last point is the last
// sample's.
type GPUMemory struct {
	Device int
	Start  time.Time
	T      []int64
	MiB    []float64
}

// JobRef names a node's job as the executor that started it knows it, so
// that an apply after a crash can find it again: Executor is the executor's
// Name; for a local process ID is its pid, with the process group and start
// time in Details; for a cluster job the job's id and what the executor
// needs to collect it. The executor owns what ID and Details mean; the run
// journal keeps the reference in the node's started record.
type JobRef struct {
	Executor string            `json:"executor"`
	ID       string            `json:"id"`
	Details  map[string]string `json:"details,omitempty"`
}

// SubmittedDetail is the detail of a cluster job's reference that says
// when the job was submitted (Unix nanoseconds): kept from the submitting
// apply in the reference of every apply that re-attaches to the job, so
// that its time in the cluster's queue counts from its submission.
const SubmittedDetail = "submitted_ns"

// Submitted is when the job was submitted (its SubmittedDetail); zero
// where the reference does not say (a local process, an older cairn's).
func (r JobRef) Submitted() time.Time {
	ns, err := strconv.ParseInt(r.Details[SubmittedDetail], 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// RedactSecrets replaces every occurrence of the secrets in s.
func RedactSecrets(s string, secrets []string) string {
	for _, x := range secrets {
		s = strings.ReplaceAll(s, x, "(sensitive)")
	}
	return s
}
