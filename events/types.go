package events

import (
	"encoding/json"
	"time"
)

// RunStarted: the apply named its run and opened its folder.
type RunStarted struct {
	Head
	Pipeline string   `json:"pipeline"`
	Dir      string   `json:"dir"` // the run folder (.cairn/runs/<run>)
	PID      int      `json:"pid"`
	Args     []string `json:"args,omitempty"`
}

// RunEnded: the apply ended. Status is ok, failed, interrupted or refused.
type RunEnded struct {
	Head
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	Ran     int    `json:"ran"`
	Cached  int    `json:"cached"`
	Failed  int    `json:"failed"`
	Skipped int    `json:"skipped"`
	// Interrupted counts the nodes an interrupt stopped (not in Failed).
	Interrupted int     `json:"interrupted"`
	DurationS   float64 `json:"duration_s"`
}

// Planned is one node of the plan as the apply takes it up.
type Planned struct {
	Node string `json:"node"`
	// Action is the plan's: run, cached, may_run (its key depends on an
	// upstream's output) or skip (an upstream fails); absent for a node
	// outside the target, which the apply does not take up.
	Action  string   `json:"action,omitempty"`
	Key     string   `json:"key,omitempty"` // "" while it depends on upstream results
	Reasons []string `json:"reasons,omitempty"`
	// OutsideTarget: --target leaves it out; the apply does not take it up.
	OutsideTarget bool `json:"outside_target,omitempty"`
}

// PlanDecided: what the apply means to do, per node, in plan order.
type PlanDecided struct {
	Head
	Nodes []Planned `json:"nodes"`
}

// NodeStarted: a node was handed to a worker (it is running: its
// processes start next).
type NodeStarted struct {
	Head
	Node string `json:"node"`
	Key  string `json:"key"`
}

// ProcessStarted: a node's process (or, with InProcess, its work inside
// cairn) began.
type ProcessStarted struct {
	Head
	Node    string `json:"node"`
	Key     string `json:"key"`
	Attempt int    `json:"attempt"`
	// Executor names where it runs (local, slurm); Job describes the job
	// for people ("pid 42", "slurm job 123"); JobID is the executor's id
	// (a Slurm job id; the pid for local).
	Executor  string   `json:"executor,omitempty"`
	Job       string   `json:"job,omitempty"`
	JobID     string   `json:"job_id,omitempty"`
	GPUs      []int    `json:"gpus,omitempty"`
	Wave      int      `json:"wave,omitempty"`
	Logs      []string `json:"logs,omitempty"`
	InProcess bool     `json:"in_process,omitempty"`
}

// NodeEnded: a node reached its final state. Status is ok, cached,
// failed, skipped, or not_started (a service nothing needed; Message says
// why).
type NodeEnded struct {
	Head
	Node string `json:"node"`
	// Key is absent for a node whose key was never known (skipped while
	// its upstreams' results were unknown).
	Key    string `json:"key,omitempty"`
	Status string `json:"status"`
	// Label is the outcome its kind reads in a result that records a
	// failure the kind absorbs (status ok): shown instead of "ok".
	Label string `json:"label,omitempty"`
	// Untimed: its outcome has no run time to show (stages.OutcomeUntimer):
	// no Duration, and the line shows the label alone.
	Untimed bool   `json:"-"`
	Class   string `json:"class,omitempty"`
	Message string `json:"message,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// Duration is how long it ran (its record's, the command's own run
	// time); DurationS the same, set when it ran in this apply.
	Duration  time.Duration `json:"-"`
	DurationS float64       `json:"duration_s,omitempty"`
	// Queued is the wait in a cluster's queue; Requeued the requeues.
	Queued     time.Duration `json:"-"`
	QueuedS    float64       `json:"queued_s,omitempty"`
	Requeued   int           `json:"requeued,omitempty"`
	Executor   string        `json:"executor,omitempty"`
	JobID      string        `json:"job_id,omitempty"`
	GPUs       []int         `json:"gpus,omitempty"`
	PeakRSSMiB float64       `json:"peak_rss_mib,omitempty"`
	PeakGPUMiB float64       `json:"peak_gpu_mib,omitempty"`
	Logs       []string      `json:"logs,omitempty"` // a failed node's, those that exist
	// Summary is the summary line its kind makes of its result (one
	// JSON object), when it makes one.
	Summary json.RawMessage `json:"summary,omitempty"`
	// Refused: the kind refused to run (bad input found as it ran);
	// NoResume: the next apply does not resume it.
	Refused  bool `json:"refused,omitempty"`
	NoResume bool `json:"no_resume,omitempty"`
}

// ServeEvent: a service node's replica changed state (ready, down,
// restarting, stopped, port_skipped); Replica 0 is the node as a whole.
type ServeEvent struct {
	Head
	Node     string `json:"node"`
	Status   string `json:"status"`
	Replica  int    `json:"replica,omitempty"`
	PID      int    `json:"pid,omitempty"`
	Port     int    `json:"port,omitempty"`
	GPUs     []int  `json:"gpus,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	Message  string `json:"message,omitempty"`
}

// NodeRetry: an attempt failed and the node runs again.
type NodeRetry struct {
	Head
	Node    string `json:"node"`
	Key     string `json:"key"`
	Attempt int    `json:"attempt"` // the attempt that failed
	Class   string `json:"class"`
	Message string `json:"message"`
}

// NodeWaiting: a node waits for its key's lock, held by another node of
// this apply or another process (Holder says which), or for the lock of a
// path it writes, which another process's node writes too (Writes); Over
// when the wait ended.
type NodeWaiting struct {
	Head
	Node   string `json:"node"`
	Holder string `json:"holder,omitempty"`
	// Writes is the path the holder writes too, when the node waits for
	// that and not for the same work (workspace-relative where it is in
	// the workspace).
	Writes string `json:"writes,omitempty"`
	Over   bool   `json:"over,omitempty"`
}

// Progress is a running node's latest progress line for a live display
// (an evaluation's item counts, as often as they change). The event log
// leaves it out.
type Progress struct {
	Head
	Node string `json:"node"`
	Text string `json:"text"`
}

// ItemProgress: an evaluation's counts, every 10 charged rollouts (or
// items done) and at its end.
type ItemProgress struct {
	Head
	Node          string `json:"node"`
	Total         int    `json:"total"`
	Done          int    `json:"done"`
	Evaluated     int    `json:"evaluated"`
	FromStore     int    `json:"from_store"`
	Failed        int    `json:"failed"`
	Charged       int    `json:"charged"`
	Attempted     int    `json:"attempted"`
	InfraFailures int    `json:"infra_failures"`
	Text          string `json:"text"` // the counts as a line
}

// ItemsFromStore: where an evaluation's results came from, told once its
// scores file is written: Items is how many lines the file has, FromStore
// the spans [from, to) of its lines (0-based, the file's order) whose
// results were in the item store already; every other item that has a
// result was asked of the model in this run.
type ItemsFromStore struct {
	Head
	Node      string   `json:"node"`
	Scores    string   `json:"scores"`
	Items     int      `json:"items"`
	FromStore [][2]int `json:"from_store"`
}

// RolloutCounts: an optimization's rollout meter, every 10 charged
// rollouts and at its end.
type RolloutCounts struct {
	Head
	Node          string `json:"node"`
	Budget        int    `json:"budget"`
	Charged       int    `json:"charged"`
	Attempted     int    `json:"attempted"`
	InfraFailures int    `json:"infra_failures"`
	FromStore     int    `json:"from_store"`
	Text          string `json:"text"` // the counts as a line
}

// GPUMemory: a node's process's memory use on one GPU over its attempt,
// from the samples, told when the process ended: T[i] milliseconds after
// Start the use became MiB[i] (each point the highest sample of its span;
// a series is bounded, however long the process ran).
type GPUMemory struct {
	Head
	Node    string    `json:"node"`
	Attempt int       `json:"attempt"`
	GPU     int       `json:"gpu"`
	Start   time.Time `json:"start"`
	T       []int64   `json:"t_ms"`
	MiB     []float64 `json:"mib"`
}

// NodeNote: a line a stage kind says about its node as it runs (what it
// deploys, what it keeps from an earlier run).
type NodeNote struct {
	Head
	Node string `json:"node"`
	Text string `json:"text"`
}

// NodeOutput: text a stage kind shows whole (a comparison table, a
// replay), as it is.
type NodeOutput struct {
	Head
	Node string `json:"node"`
	Text string `json:"text"`
}

// BatchStarted: a batch of a waves stage took its GPUs.
type BatchStarted struct {
	Head
	Stage     string `json:"stage"`
	ID        string `json:"id"`
	Variants  int    `json:"variants"` // the variants that run
	GPUs      []int  `json:"gpus"`
	Simulated bool   `json:"simulated,omitempty"`
	Parallel  int    `json:"parallel"`
	Mode      string `json:"mode"` // waves or backfill
	Waves     int    `json:"waves"`
	LogDir    string `json:"log_dir"` // relative to the workspace
}

// BatchRerun: a strict batch runs its cached variants again with Node,
// or, Mixed, because they were measured in different launches.
type BatchRerun struct {
	Head
	Stage string `json:"stage"`
	Node  string `json:"node,omitempty"`
	Again int    `json:"again"`
	Mixed bool   `json:"mixed,omitempty"`
}

// WaveStarted: a variant of a batch was admitted to a wave on a GPU.
type WaveStarted struct {
	Head
	Stage string `json:"stage"`
	Node  string `json:"node"`
	Wave  int    `json:"wave"`
	GPU   int    `json:"gpu"`
}

// BatchEnded: a batch ended; State is its ledger state.
type BatchEnded struct {
	Head
	Stage string `json:"stage"`
	ID    string `json:"id"`
	State string `json:"state"`
}

// LedgerUpdated: a ledger file was created (with Sections) or had rows
// added to it.
type LedgerUpdated struct {
	Head
	Path     string   `json:"path"`
	Created  bool     `json:"created,omitempty"`
	Sections []string `json:"sections,omitempty"`
	Added    []string `json:"added,omitempty"`
}

// GPULeased: a node leased GPUs; GPUReleased: it gave them back.
type GPULeased struct {
	Head
	Node string `json:"node"`
	GPUs []int  `json:"gpus"`
}

// GPUReleased: see GPULeased.
type GPUReleased struct {
	Head
	Node string `json:"node"`
	GPUs []int  `json:"gpus"`
}

// Notice: what an executor waits for (a cluster's controller), or a node
// for GPUs, or that the wait is over; Node is "" when it is the
// executor's, not one node's.
type Notice struct {
	Head
	Node    string `json:"node,omitempty"`
	Text    string `json:"text"`
	Waiting bool   `json:"waiting"`
}

// Info: something cairn did that people should know (processes left by
// a dead run, killed; nodes found interrupted).
type Info struct {
	Head
	Text string `json:"text"`
}

// ExecutorError: an error an executor hit that fails no node (a job it
// could not cancel).
type ExecutorError struct {
	Head
	Text string `json:"text"`
}

// Warning: something went wrong that does not fail the run.
type Warning struct {
	Head
	Text string `json:"text"`
}

func (*RunStarted) Kind() string     { return "run_started" }
func (*RunEnded) Kind() string       { return "run_ended" }
func (*PlanDecided) Kind() string    { return "plan_decided" }
func (*NodeStarted) Kind() string    { return "node_started" }
func (*ProcessStarted) Kind() string { return "process_started" }
func (*NodeEnded) Kind() string      { return "node_ended" }
func (*NodeRetry) Kind() string      { return "node_retry" }
func (*NodeWaiting) Kind() string    { return "node_waiting" }
func (*Progress) Kind() string       { return "progress" }
func (*ItemProgress) Kind() string   { return "item_progress" }
func (*RolloutCounts) Kind() string  { return "rollout_counts" }
func (*ItemsFromStore) Kind() string { return "items_from_store" }
func (*NodeNote) Kind() string       { return "node_note" }
func (*GPUMemory) Kind() string      { return "gpu_memory" }
func (*NodeOutput) Kind() string     { return "node_output" }
func (*BatchStarted) Kind() string   { return "batch_started" }
func (*BatchRerun) Kind() string     { return "batch_rerun" }
func (*WaveStarted) Kind() string    { return "wave_started" }
func (*BatchEnded) Kind() string     { return "batch_ended" }
func (*LedgerUpdated) Kind() string  { return "ledger_updated" }
func (*GPULeased) Kind() string      { return "gpu_leased" }
func (*GPUReleased) Kind() string    { return "gpu_released" }
func (*Notice) Kind() string         { return "notice" }
func (*Info) Kind() string           { return "info" }
func (*Warning) Kind() string        { return "warning" }
func (*ExecutorError) Kind() string  { return "executor_error" }
func (*ServeEvent) Kind() string     { return "serve" }

// All is one zero event of each type, in the order docs/events.md lists
// them.
func All() []Event {
	return []Event{
		&RunStarted{}, &PlanDecided{}, &NodeStarted{}, &ProcessStarted{}, &NodeRetry{}, &NodeWaiting{},
		&NodeEnded{}, &ServeEvent{}, &Progress{}, &ItemProgress{}, &ItemsFromStore{}, &RolloutCounts{}, &NodeNote{}, &NodeOutput{},
		&BatchStarted{}, &WaveStarted{}, &BatchRerun{}, &BatchEnded{}, &LedgerUpdated{},
		&GPULeased{}, &GPUReleased{}, &GPUMemory{}, &Notice{}, &ExecutorError{}, &Info{}, &Warning{}, &RunEnded{},
	}
}
