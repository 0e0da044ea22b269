// Package runreport builds a run's report: what `cairn report` and
// `cairn apply --report` write (report.html, one self-contained page, and
// trace.tsv beside it), and what `cairn show RUN --json` prints. It reads
// a run's journal (engine/runlog) and the cache's records (engine/store);
// nothing in the engine imports it.
package runreport

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/stages/decision"
	"github.com/cairn-run/cairn/stages/report"
)

// Report is one run, as the page and `cairn show RUN --json` give it.
type Report struct {
	Run   Run     `json:"run"`
	Nodes []*Node `json:"nodes"`
	// Batches are the run's GPU batches with their waves.
	Batches []*Batch `json:"batches,omitempty"`
	// Stages are GPU-seconds and node-seconds per stage.
	Stages []*StageUse `json:"stages,omitempty"`
	// Artifacts are the tables and plots the run's nodes wrote (taken
	// from their cached records): the seed's comparison table and
	// Pareto plot, the aggregate table and forest plot, a replay table.
	Artifacts []*Artifact `json:"artifacts,omitempty"`
	// Charges are the rollout charge curves of the nodes that charge a
	// budget (an optimizer's rollouts), from the journal's charged records.
	Charges []*Charge `json:"charges,omitempty"`
	// GPUMemory is each GPU's memory use over the run, a series per node
	// attempt that held it (from the event log's gpu_memory events).
	GPUMemory []*GPUSeries `json:"gpu_memory,omitempty"`
	// Ledger is a decision protocol's attempt ledger: every attempt of
	// its slots, from the slot nodes' results, in the order they started.
	Ledger []*LedgerAttempt `json:"ledger,omitempty"`

	// openEnd is when an attempt without an end is shown to end: now
	// for a run still going; for one that ended without its end record
	// (kill -9), its journal's last record, the last thing known of it.
	openEnd time.Time
}

// LedgerAttempt is one attempt of a decision slot: how it ended, whether
// it was charged (every started attempt is), and whether it was a
// replacement, counted under the cap on replacements (the protocol's
// max_repair_allocations).
type LedgerAttempt struct {
	Node        string     `json:"node"`
	Slot        string     `json:"slot"`
	Attempt     int        `json:"attempt"`
	State       string     `json:"state"`
	Class       string     `json:"class,omitempty"`
	SetupClass  string     `json:"setup_class,omitempty"`
	Charged     bool       `json:"charged"`
	Replacement bool       `json:"replacement"`
	Started     time.Time  `json:"started"`
	Ended       *time.Time `json:"ended"`
	// EndUnseen: cairn stopped while it ran; no end time is known.
	EndUnseen  bool    `json:"end_unseen,omitempty"`
	PeakGPUMiB float64 `json:"peak_gpu_mib"`
	// Simulated: it ran on simulated GPUs, its peak (and so its outcome)
	// made up.
	Simulated bool `json:"simulated,omitempty"`
}

// GPUSeries is one node attempt's memory use on one GPU: at T[i] the use
// became MiB[i].
type GPUSeries struct {
	GPU     int         `json:"gpu"`
	Node    string      `json:"node"`
	Attempt int         `json:"attempt"`
	T       []time.Time `json:"t"`
	MiB     []float64   `json:"mib"`
}

// Run is the report's header.
type Run struct {
	ID       string `json:"id"`
	Pipeline string `json:"pipeline"`
	State    string `json:"state"` // running, ok, failed, interrupted, refused
	Message  string `json:"message,omitempty"`
	Host     string `json:"host,omitempty"`
	Version  string `json:"version,omitempty"`
	Dir      string `json:"dir,omitempty"`
	Executor string `json:"executor,omitempty"`
	// GPUs are the devices the run could lease (journaled since the
	// report came).
	GPUs  []runlog.Device `json:"gpus,omitempty"`
	Start time.Time       `json:"start"`
	End   time.Time       `json:"end,omitzero"`
	// Duration is End-Start, or, for a run without an end (running or
	// killed), the last journal record's time less Start.
	Duration float64 `json:"duration_s"`
	// ExitStatus is the exit code apply gave (or gives) for the run's
	// state: 0 ok, 1 failed or refused, 130 interrupted; -1 while running;
	// -2 for a run that never ended (killed: it gave no exit code).
	ExitStatus int      `json:"exit_status"`
	Args       []string `json:"args,omitempty"`
	Vars       []Var    `json:"vars,omitempty"`
	Command    string   `json:"command,omitempty"`
	Counts     Counts   `json:"counts"`
	Damaged    string   `json:"damaged,omitempty"`
	// Notes are the event log's warnings and notes for people, and the
	// report's own (Gone).
	Notes []string `json:"notes,omitempty"`
	// Gone are the nodes that finished in the run whose records the cache
	// no longer holds (collected by cairn gc, or evicted as damaged), or
	// holds another run's record of in their place (Replaced): their
	// results, tables, plots and items are not shown.
	Gone []string `json:"gone,omitempty"`
	// Replaced are the nodes of Gone whose key holds a record another run
	// made since, each with that run's id: its results are that run's.
	Replaced map[string]string `json:"replaced,omitempty"`
}

// Var is a variable given on the command line (a sensitive one's value
// is "(sensitive)": apply journals it so).
type Var struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	File  bool   `json:"file,omitempty"` // a --var-file: Value is its path
	// Env is, for a sensitive variable, the environment variable the
	// command to run it again reads its value from (the journal has
	// none): the shell refuses to run the command while it is unset.
	Env string `json:"env,omitempty"`
}

// sensitiveValue is how apply journals a sensitive variable's value.
const sensitiveValue = "(sensitive)"

// Counts are a run's nodes by how each ended (by its last record, as
// `cairn status` counts them), and its failed attempts apart.
type Counts struct {
	Ran            int `json:"ran"`
	Cached         int `json:"cached"`
	Failed         int `json:"failed"`
	Skipped        int `json:"skipped"`
	Running        int `json:"running"`
	Planned        int `json:"planned"`
	Interrupted    int `json:"interrupted"`
	FailedAttempts int `json:"failed_attempts"`
}

// Node is one node of the run.
type Node struct {
	Addr  string `json:"address"`
	Stage string `json:"stage"`
	Kind  string `json:"kind,omitempty"`
	// State: ok (ran), cached, failed, skipped, running, interrupted,
	// planned (not started).
	State   string `json:"state"`
	Class   string `json:"class,omitempty"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Key     string `json:"key,omitempty"`
	// Times of the last attempt (zero when it did not start).
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	// Duration is the sum of the attempts' durations, in seconds.
	Duration float64 `json:"duration_s"`
	// QueueWait is the time from when the node could start (its
	// upstreams in this run done, or the run started) to its first
	// attempt's start (a cluster job's wait in the cluster's queue
	// included); -1 when unknown.
	QueueWait  float64    `json:"queue_wait_s"`
	PeakRSS    float64    `json:"peak_rss_mib"`
	PeakGPU    float64    `json:"peak_gpu_mib"`
	GPUSeconds float64    `json:"gpu_seconds"`
	Attempts   int        `json:"attempts"`
	Retries    int        `json:"retries"`
	GPUs       []int      `json:"gpus,omitempty"`
	Wave       int        `json:"wave,omitempty"`
	Tries      []*Attempt `json:"tries,omitempty"`
	Logs       []string   `json:"logs,omitempty"`
	// Counts are the kind's run counts (items evaluated, rollouts
	// charged...).
	Counts map[string]int `json:"counts,omitempty"`
	// From is, for a cached node, the run that made its record, and when.
	From     string    `json:"from_run,omitempty"`
	FromTime time.Time `json:"from_time,omitzero"`

	upstreams []string // keys, from the record's envelope
	waits     []string // addresses of the upstreams that only order it (journal)
	result    map[string]any
	scores    string // an evaluation's scores file (a record output)
	// fromStore are the scores file's lines whose results were in the
	// item store (spans [from, to)), when the event log says (origins).
	fromStore [][2]int
	origins   bool
	record    *store.Record
	// settled is when a node without an attempt was skipped or failed:
	// the end a downstream that runs after it waits for.
	settled time.Time
	// taken is when a cached node was taken from the cache (its cached
	// record): the record it took was made before.
	taken time.Time
}

// Attempt is one attempt of a node: a row of trace.tsv.
type Attempt struct {
	N     int       `json:"attempt"`
	State string    `json:"state"` // ok, failed, running, interrupted
	Class string    `json:"class,omitempty"`
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	// Submit and Queued are, for a cluster job, when it was submitted
	// and how long it waited in the cluster's queue (Start is when it
	// began to run).
	Submit   time.Time `json:"submit,omitzero"`
	Queued   float64   `json:"queued_s,omitempty"`
	Executor string    `json:"executor,omitempty"`
	Job      string    `json:"job,omitempty"`
	GPUs     []int     `json:"gpus,omitempty"`
	Wave     int       `json:"wave,omitempty"`
	PeakRSS  float64   `json:"peak_rss_mib,omitempty"`
	PeakGPU  float64   `json:"peak_gpu_mib,omitempty"`
	Logs     []string  `json:"logs,omitempty"`
	// Lane is the timeline lane the attempt is drawn in: "gpu N" per
	// device it held, else a CPU slot ("cpu N") or a Slurm slot.
	Lane string `json:"lane,omitempty"`

	ran time.Duration // a finished record's duration_s: its own run time
}

// Seconds is the attempt's duration (0 for one that did not start or
// end).
func (a *Attempt) Seconds() float64 {
	if a.Start.IsZero() || a.End.IsZero() {
		return 0
	}
	return a.End.Sub(a.Start).Seconds()
}

// endOf is when t ended, or, for an attempt without an end (running, or
// cut off by a kill), when it is shown to end: now for a run still going,
// else the last thing the run's journal knows (never before t started).
func (r *Report) endOf(t *Attempt) time.Time {
	if !t.End.IsZero() || t.Start.IsZero() {
		return t.End
	}
	if r.openEnd.IsZero() {
		return time.Now()
	}
	if r.openEnd.Before(t.Start) {
		return t.Start
	}
	return r.openEnd
}

// Batch is a GPU batch and its waves.
type Batch struct {
	ID       string   `json:"id"`
	Stage    string   `json:"stage"`
	Tag      string   `json:"tag,omitempty"`
	State    string   `json:"state"`
	Variants []string `json:"variants"`
	Waves    []*Wave  `json:"waves"`
}

// Wave is one wave of a batch: its variants run side by side, and the
// GPUs that finished first idle until its slowest ends.
type Wave struct {
	N     int       `json:"wave"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Nodes []string  `json:"nodes"`
	// IdleGPUSeconds is what the wave cost against its slowest variant:
	// the sum, over its variants, of (wave end - variant end) x GPUs.
	IdleGPUSeconds float64 `json:"idle_gpu_seconds"`
}

// StageUse is a stage's share of the run.
type StageUse struct {
	Stage      string  `json:"stage"`
	Nodes      int     `json:"nodes"`
	Seconds    float64 `json:"seconds"`
	GPUSeconds float64 `json:"gpu_seconds"`
}

// Artifact is a table or plot a node of the run wrote.
type Artifact struct {
	Node string `json:"node"`
	Path string `json:"path"`
	Type string `json:"type"` // svg, table, text, omitted
	// SVG is a plot's bytes (Type svg); Rows a table's cells, header
	// first (Type table: a markdown file's first table); Text anything
	// else shown as it is.
	SVG  string     `json:"svg,omitempty"`
	Rows [][]string `json:"rows,omitempty"`
	Text string     `json:"text,omitempty"`
	// Parts are a markdown file whole, in order: its tables and the
	// text around them (a table's legend, its caveats).
	Parts []*Part `json:"parts,omitempty"`
	// Size is, for a file left out of the page (Type omitted: too big,
	// Text says why and where it is), its size in bytes.
	Size int64 `json:"size,omitempty"`
}

// Part is a piece of a markdown file: a table's cells (header first), or
// the text between tables, as written.
type Part struct {
	Rows [][]string `json:"rows,omitempty"`
	Text string     `json:"text,omitempty"`
}

// Charge is one node's rollout charge curve.
type Charge struct {
	Node string `json:"node"`
	// T are seconds since the run started, N the rollouts charged by
	// then.
	T      []float64      `json:"t"`
	N      []int          `json:"n"`
	Counts map[string]int `json:"counts,omitempty"`
	// From the event log (FromEvents): the rollouts attempted and the
	// infrastructure failures by then, and the budget.
	FromEvents bool  `json:"from_events,omitempty"`
	Attempted  []int `json:"attempted,omitempty"`
	Infra      []int `json:"infra_failures,omitempty"`
	Budget     int   `json:"budget,omitempty"`
}

// Options are what Build reads besides the run's journal.
type Options struct {
	// Cache gives the records of the run's nodes (kinds, plots, tables,
	// where a cached node came from); nil leaves those out.
	Cache *store.Cache
	// Now is the time a running run is shown at (default time.Now).
	Now time.Time
}

// Build reads a run folder (cache/runs/ID).
func Build(runDir string, opts Options) (*Report, error) {
	ri, err := runlog.Load(runDir)
	if err != nil {
		return nil, err
	}
	return FromRunInfo(ri, opts), nil
}

// FromRunInfo builds the report of a loaded run.
func FromRunInfo(ri *runlog.RunInfo, opts Options) *Report {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	// Nodes is [] for a run that planned none (a refused apply), never
	// null: `jq '.nodes[]'` reads both alike.
	r := &Report{Run: Run{ID: ri.ID, Pipeline: ri.Pipeline, State: ri.State, Start: ri.Start, End: ri.End, Damaged: ri.Damaged}, Nodes: []*Node{}}
	b := &builder{r: r, byAddr: map[string]*Node{}, ri: ri, opts: opts}
	b.read()
	b.finish()
	if ri.Dir != "" {
		b.readEvents(ri.Dir)
	}
	return r
}

type builder struct {
	r      *Report
	ri     *runlog.RunInfo
	opts   Options
	byAddr map[string]*Node
	last   time.Time // the last record's time
	// rerun are the run_start's arguments that run the same
	// configuration again, where they differ from its args.
	rerun []string
	// charged entries per node
	charges map[string]*Charge
	batches map[string]*Batch
}

func (b *builder) node(addr string) *Node {
	n, ok := b.byAddr[addr]
	if !ok {
		n = &Node{Addr: addr, Stage: stageOf(addr), State: "planned", QueueWait: -1}
		b.byAddr[addr] = n
		b.r.Nodes = append(b.r.Nodes, n)
	}
	return n
}

// stageOf is an address without its instance key: stage.x["a"] is
// stage.x.
func stageOf(addr string) string {
	if i := strings.IndexByte(addr, '['); i > 0 {
		return addr[:i]
	}
	return addr
}

// lastTry is n's attempt number a (appended when new).
func lastTry(n *Node, a int) *Attempt {
	if a <= 0 {
		a = max(1, len(n.Tries))
	}
	for _, t := range n.Tries {
		if t.N == a {
			return t
		}
	}
	t := &Attempt{N: a, State: "running"}
	n.Tries = append(n.Tries, t)
	return t
}

func (b *builder) read() {
	run := &b.r.Run
	b.charges = map[string]*Charge{}
	b.batches = map[string]*Batch{}
	for _, e := range b.ri.Entries {
		if e.Time.After(b.last) {
			b.last = e.Time
		}
		switch e.T {
		case runlog.RunStart:
			run.Host, run.Version, run.Dir, run.Args, run.GPUs = e.Host, e.Version, e.Dir, e.Args, e.Devices
			b.rerun = e.Rerun
			continue
		case runlog.RunEnd:
			run.Message = e.Message
			continue
		case runlog.BatchEvent:
			if e.Batch != nil {
				bt, ok := b.batches[e.Batch.ID]
				if !ok {
					bt = &Batch{ID: e.Batch.ID, Stage: e.Batch.Stage, Tag: e.Batch.Tag, Variants: e.Batch.Variants}
					b.batches[e.Batch.ID] = bt
					b.r.Batches = append(b.r.Batches, bt)
				}
				bt.State = e.Batch.State
			}
			continue
		}
		if e.Node == "" {
			continue
		}
		n := b.node(e.Node)
		if e.Key != "" && e.T != runlog.Charged {
			n.Key = e.Key
		}
		if e.Kind != "" {
			n.Kind = e.Kind // a record's, read later, says the same
		}
		switch e.T {
		case runlog.Planned:
			if len(e.Reasons) > 0 {
				n.Reason = "run: " + strings.Join(e.Reasons, "; ")
			}
			n.waits = e.Waits
		case runlog.Lease:
			if len(n.GPUs) == 0 {
				n.GPUs = e.GPUs
			}
			n.Wave = max(n.Wave, e.Wave)
		case runlog.Started:
			t := lastTry(n, e.Attempt)
			if e.Replica > 0 && !t.Start.IsZero() {
				// Another replica of a serve node's attempt (or a
				// restart): the attempt holds every replica's GPUs and
				// logs, from its first start.
				t.GPUs, t.Logs = unionInts(t.GPUs, e.GPUs), appendNew(t.Logs, e.Logs)
				n.GPUs = unionInts(n.GPUs, e.GPUs)
				n.addLogs(e.Logs)
				continue
			}
			t.State, t.Start, t.GPUs, t.Wave, t.Logs = "running", e.Time, e.GPUs, e.Wave, e.Logs
			if e.Job != nil {
				// A cluster job's submission: this run's, or the dead
				// run's whose job this one re-attached to.
				t.Executor, t.Job, t.Submit = e.Job.Executor, e.Job.ID, e.Job.Submitted()
			}
			// A node running has no failure: an earlier attempt's class
			// and message are that attempt's (its try keeps them), not
			// the node's, if this run ends without another word of it.
			n.State, n.GPUs, n.Class, n.Message = "running", e.GPUs, "", ""
			n.Wave = max(n.Wave, e.Wave)
			n.addLogs(e.Logs)
		case runlog.Finished:
			t := lastTry(n, e.Attempt)
			t.State, t.End, t.PeakRSS, t.PeakGPU, t.Queued = "ok", e.Time, e.PeakRSS, e.PeakGPU, e.Queued
			t.ran = time.Duration(e.Duration * float64(time.Second))
			if t.Start.IsZero() && e.Duration > 0 {
				t.Start = e.Time.Add(-time.Duration(e.Duration * float64(time.Second)))
			}
			n.State, n.Class, n.Message = "ok", "", ""
			if len(e.Counts) > 0 {
				n.Counts = e.Counts
			}
		case runlog.Failed:
			// Attempt 0 with no attempt begun: the node failed with none
			// (a cached result its postcondition fails, a refusal).
			if e.Attempt > 0 || len(n.Tries) > 0 {
				t := lastTry(n, e.Attempt)
				t.State, t.End, t.Class, t.PeakRSS, t.PeakGPU, t.Queued = "failed", e.Time, e.Class, e.PeakRSS, e.PeakGPU, e.Queued
				t.ran = time.Duration(e.Duration * float64(time.Second))
				if t.Start.IsZero() {
					t.Start = e.Time // failed before its process started (class setup)
				}
				t.Logs = appendNew(t.Logs, e.Logs)
			} else {
				n.settled = e.Time
			}
			n.State, n.Class, n.Message = "failed", e.Class, e.Message
			n.addLogs(e.Logs)
			if len(e.Counts) > 0 {
				n.Counts = e.Counts
			}
		case runlog.Cached:
			n.State, n.taken = "cached", e.Time
		case runlog.Skipped:
			n.State, n.Message, n.settled = "skipped", e.Message, e.Time
		case runlog.Charged:
			c, ok := b.charges[e.Node]
			if !ok {
				c = &Charge{Node: e.Node}
				b.charges[e.Node] = c
				b.r.Charges = append(b.r.Charges, c)
			}
			total := e.Count
			if len(c.N) > 0 {
				total += c.N[len(c.N)-1]
			}
			c.T = append(c.T, e.Time.Sub(b.ri.Start).Seconds())
			c.N = append(c.N, total)
		}
	}
}

func (n *Node) addLogs(logs []string) { n.Logs = appendNew(n.Logs, logs) }

// unionInts is to with from's numbers it lacks, sorted.
func unionInts(to, from []int) []int {
	for _, x := range from {
		if !slices.Contains(to, x) {
			to = append(to, x)
		}
	}
	slices.Sort(to)
	return to
}

func appendNew(to, from []string) []string {
	for _, l := range from {
		if !slices.Contains(to, l) {
			to = append(to, l)
		}
	}
	return to
}

func (b *builder) finish() {
	run := &b.r.Run
	live := run.State == "running"
	b.r.openEnd = b.last
	if live {
		b.r.openEnd = b.opts.Now
	}
	if !run.End.IsZero() {
		run.Duration = run.End.Sub(run.Start).Seconds()
	} else if !run.Start.IsZero() {
		run.Duration = b.r.openEnd.Sub(run.Start).Seconds()
	}
	switch run.State {
	case "ok":
		run.ExitStatus = 0
	case "interrupted":
		run.ExitStatus = 130
		if run.End.IsZero() {
			run.ExitStatus = -2 // killed (kill -9, a crash): no end, no exit code
		}
	case "running":
		run.ExitStatus = -1
	default:
		run.ExitStatus = 1
	}
	// The variables and the command are the run's configuration: what
	// its command line gave, and what it took from CAIRN_VAR_ or a saved
	// plan (rerun).
	again := run.Args
	if b.rerun != nil {
		again = b.rerun
	}
	run.Vars = varsOf(again)
	run.Command = commandOf(run.Dir, again)
	var gone []string // finished nodes whose record the cache no longer holds
	replaced := map[string]string{}
	for _, n := range b.r.Nodes {
		var rec *store.Record
		if b.opts.Cache != nil && n.Key != "" {
			rec, _ = b.opts.Cache.Lookup(n.Key)
		}
		rec, by := b.ownRecord(n, rec)
		b.ranTimes(n, rec)
		for _, t := range n.Tries {
			if t.Queued > 0 && !t.Start.IsZero() {
				// It ran from the end of its wait in the cluster's
				// queue, which began when it was submitted: where its
				// reference does not say, when it was journaled (at
				// its submission). A job re-attached to was submitted
				// by an earlier run, before this run's record of it.
				if t.Submit.IsZero() {
					t.Submit = t.Start
				}
				t.Start = t.Submit.Add(time.Duration(t.Queued * float64(time.Second)))
				if t.ran > 0 {
					// Its command ran its own run time from there (the
					// exit file's start and end, as apply's line and
					// the record give it): it ended then, not at its
					// record, which comes a poll or more later.
					t.End = t.Start.Add(t.ran)
				}
			}
			if t.State == "running" && !live || t.State == "failed" && runlog.Stopped(t.Class, run.State) {
				t.State = "interrupted"
			}
			if t.Executor != "" {
				run.Executor = t.Executor
			}
		}
		if n.State == "running" && !live {
			n.State = "interrupted"
		}
		if n.State == "failed" && runlog.Stopped(n.Class, run.State) {
			// Stopped by Ctrl-C: interrupted, as a node a killed run
			// left running is (runlog.Stopped).
			n.State = "interrupted"
		}
		n.Attempts = len(n.Tries)
		n.Retries = max(0, n.Attempts-1)
		for _, t := range n.Tries {
			end := b.r.endOf(t)
			if !t.Start.IsZero() && !end.IsZero() {
				d := end.Sub(t.Start).Seconds()
				n.Duration += d
				n.GPUSeconds += d * float64(len(t.GPUs))
			}
			n.PeakRSS = max(n.PeakRSS, t.PeakRSS)
			n.PeakGPU = max(n.PeakGPU, t.PeakGPU)
		}
		if k := len(n.Tries); k > 0 {
			n.Start, n.End = n.Tries[k-1].Start, n.Tries[k-1].End
		}
		if rec != nil {
			b.fromRecord(n, rec)
		} else if b.opts.Cache != nil && n.Key != "" && n.Kind != "serve" && (n.State == "ok" || n.State == "cached") {
			// A serve node makes no record (docs/serve.md): none is gone.
			gone = append(gone, n.Addr)
			if by != "" {
				replaced[n.Addr] = by
			}
		}
		if n.State == "cached" {
			// A node the plan said may run (its upstream ran again)
			// that apply found in the cache: what the plan gave is
			// not what happened.
			n.Reason = "cached"
			if n.From != "" {
				n.Reason = "cached: from run " + n.From + " at " + n.FromTime.UTC().Format("2006-01-02 15:04:05") + " UTC"
			}
		}
	}
	run.Gone = gone
	if len(replaced) > 0 {
		run.Replaced = replaced
	}
	if len(gone) > 0 {
		// Their results, tables, plots and items were in their records.
		run.Notes = append(run.Notes, "note: "+GoneText(run)+"; their results, tables, plots and items are not shown")
	}
	b.queueWaits()
	b.lanes()
	b.waves()
	b.stages()
	run.Counts = countNodes(b.ri.Entries, run.State, b.r.Nodes)
	if run.Executor == "" {
		run.Executor = "local"
	}
	// Charge curves are an optimizer's: an evaluation charges its items
	// too, and its item table says more.
	var charges []*Charge
	for _, c := range b.r.Charges {
		if n := b.byAddr[c.Node]; n != nil && (n.Kind == "" || n.Kind == "optimize") {
			c.Counts = n.Counts
			charges = append(charges, c)
		}
	}
	b.r.Charges = charges
	b.resultTables()
	sort.SliceStable(b.r.Ledger, func(i, j int) bool {
		x, y := b.r.Ledger[i], b.r.Ledger[j]
		if !x.Started.Equal(y.Started) {
			return x.Started.Before(y.Started)
		}
		if x.Slot != y.Slot {
			return x.Slot < y.Slot
		}
		return x.Attempt < y.Attempt
	})
}

// ownRecord is rec, n's key's record in the cache, where it is the one
// this run made (n ran in it) or took (n was taken from the cache); else
// nil, with the id of the run that made rec. A key's record is replaced
// when cairn gc collects it and a later apply runs the key again, or
// apply --replace runs it again: the record is then that run's, and its
// results are not this run's.
func (b *builder) ownRecord(n *Node, rec *store.Record) (*store.Record, string) {
	switch {
	case rec == nil:
		return nil, ""
	case n.State == "cached":
		// Made by an earlier run, before this run took it: one that
		// ended after that replaced it.
		if !n.taken.IsZero() && rec.Ended.After(n.taken) {
			return nil, rec.RunID
		}
	case len(n.Tries) > 0 && rec.RunID != b.ri.ID:
		// Each apply is a run of its own id: the record names the run
		// that committed it.
		return nil, rec.RunID
	}
	return rec, ""
}

// GoneText says which of run's finished nodes have no record of the run
// in the cache (Gone), and why: what the page's note and cairn report's
// warning say.
func GoneText(run *Run) string {
	name := func(addrs []string) string {
		s := strings.Join(addrs[:min(3, len(addrs))], ", ")
		if len(addrs) > 3 {
			s += fmt.Sprintf(" and %d more", len(addrs)-3)
		}
		return s
	}
	var collected, replaced []string
	for _, a := range run.Gone {
		if by, ok := run.Replaced[a]; ok {
			replaced = append(replaced, a+" by run "+by)
		} else {
			collected = append(collected, a)
		}
	}
	var parts []string
	if len(collected) > 0 {
		parts = append(parts, fmt.Sprintf("the cache no longer holds the records of %d node(s) that finished in this run (%s): collected by cairn gc, or evicted as damaged", len(collected), name(collected)))
	}
	if len(replaced) > 0 {
		parts = append(parts, fmt.Sprintf("the cache's records of %d node(s) that finished in this run were replaced since by records other runs made (%s): cairn gc collected them and a later apply ran the node again, or apply --replace did", len(replaced), name(replaced)))
	}
	return strings.Join(parts, "; ")
}

// ownSpan is where an attempt journaled from start to end whose own run
// time was ran ran: it ends ran after start, or at end where that is
// sooner, and starts ran before it ends.
func ownSpan(start, end time.Time, ran time.Duration) (time.Time, time.Time) {
	e := start.Add(ran)
	if end.Before(e) {
		e = end
	}
	return e.Add(-ran), e
}

// ranTimes puts n's finished attempt where its process ran. The finished
// record is journaled once the node's record is in the cache, after a
// group commit: later than the process ended, and after the next node
// started in the slot its end freed. Its duration_s is the node's own
// run time, and the cache record of a node that ran in this run has its
// process's own start and end: those are taken where they are the last
// attempt's. Else the attempt ends its duration after its started record
// (written once the process started, so no earlier than it did), or at
// its finished record where that is sooner, and starts its duration
// before. A cluster job's (its time in the queue journaled) is left to
// its caller, which starts it at the end of that wait and ends it its own
// run time later.
// A failed attempt whose record has its own run time is placed so too:
// a node's duration is then its attempts' own run times added, as apply
// and cairn show give it (runlog.AttemptSeconds).
func (b *builder) ranTimes(n *Node, rec *store.Record) {
	k := len(n.Tries)
	if k == 0 {
		return
	}
	for _, t := range n.Tries {
		if t.State == "failed" && t.ran > 0 && t.Queued == 0 && !t.Start.IsZero() && !t.End.IsZero() {
			t.Start, t.End = ownSpan(t.Start, t.End, t.ran)
		}
	}
	t := n.Tries[k-1]
	if t.State != "ok" || t.ran <= 0 || t.Queued > 0 || t.Start.IsZero() || t.End.IsZero() {
		return
	}
	start, end := ownSpan(t.Start, t.End, t.ran)
	if rec != nil && rec.RunID == b.ri.ID && rec.Attempts == t.N && rec.Ended.After(rec.Started) && !rec.Started.IsZero() {
		start, end = rec.Started, rec.Ended
	}
	// Not before the attempt before it ended, nor the run started: a
	// node whose duration counts from its first attempt (one run in
	// cairn's process) starts at its started record.
	floor := b.ri.Start
	if k > 1 && floor.Before(n.Tries[k-2].End) {
		floor = n.Tries[k-2].End
	}
	if start.Before(floor) {
		start = t.Start
	}
	t.Start, t.End = start, end
}

// maxResultRows bounds a stage's results table.
const maxResultRows = 5000

// resultTables adds, per stage whose nodes' results are JSON objects, a
// table of their plain fields (numbers, strings, booleans; a list of
// strings joined), one row a node in the order the nodes started: an
// optimizer job's selection and fallback, a decision slot's outcome in
// collection order, an evaluation's mean score.
func (b *builder) resultTables() {
	byStage := map[string][]*Node{}
	var stages []string
	for _, n := range b.r.Nodes {
		if n.result == nil {
			continue
		}
		if _, ok := byStage[n.Stage]; !ok {
			stages = append(stages, n.Stage)
		}
		byStage[n.Stage] = append(byStage[n.Stage], n)
	}
	for _, st := range stages {
		nodes := byStage[st]
		sort.SliceStable(nodes, func(i, j int) bool {
			a, c := firstStart(nodes[i]), firstStart(nodes[j])
			return !a.IsZero() && (c.IsZero() || a.Before(c))
		})
		cols := map[string]bool{}
		for _, n := range nodes {
			for k, v := range n.result {
				if plain(v) != nil {
					cols[k] = true
				}
			}
		}
		if len(cols) == 0 {
			continue
		}
		names := slices.Sorted(mapKeys(cols))
		rows := [][]string{append([]string{"node"}, names...)}
		for _, n := range nodes[:min(len(nodes), maxResultRows)] {
			row := []string{n.Addr}
			for _, k := range names {
				v := plain(n.result[k])
				if v == nil {
					row = append(row, "")
				} else {
					row = append(row, *v)
				}
			}
			rows = append(rows, row)
		}
		b.r.Artifacts = append(b.r.Artifacts, &Artifact{Node: st, Path: "results of " + st + " (in start order)", Type: "table", Rows: rows})
	}
}

func firstStart(n *Node) time.Time {
	if len(n.Tries) == 0 {
		return time.Time{}
	}
	return n.Tries[0].Start
}

// plain is a result field as a table cell, or nil for one that is not a
// number, string, boolean, null or list of strings.
func plain(v any) *string {
	var s string
	switch v := v.(type) {
	case nil:
		s = "null"
	case string:
		s = v
	case bool:
		s = strconv.FormatBool(v)
	case float64:
		s = strconv.FormatFloat(v, 'g', -1, 64)
	case []any:
		var parts []string
		for _, x := range v {
			str, ok := x.(string)
			if !ok {
				return nil
			}
			parts = append(parts, str)
		}
		s = strings.Join(parts, ", ")
	default:
		return nil
	}
	return &s
}

// fromRecord takes what n's cached record says: its kind, where a cached
// node came from, its plots and tables, an evaluation's scores file.
func (b *builder) fromRecord(n *Node, rec *store.Record) {
	n.record = rec
	var env struct {
		Kind      string   `json:"kind"`
		Upstreams []string `json:"upstreams"`
	}
	if json.Unmarshal(rec.Envelope, &env) == nil {
		n.Kind, n.upstreams = env.Kind, env.Upstreams
	}
	if n.State == "cached" {
		n.From, n.FromTime = rec.RunID, rec.Ended
		if n.PeakRSS == 0 {
			n.PeakRSS, n.PeakGPU = rec.PeakRSSMiB, rec.PeakGPUMiB
		}
	}
	var obj map[string]any
	if len(rec.Result) > 0 && json.Unmarshal(rec.Result, &obj) == nil {
		n.result = obj
	}
	if n.Kind == "slot" {
		var slot struct {
			Slot   string           `json:"slot"`
			Ledger []*LedgerAttempt `json:"ledger"`
		}
		if json.Unmarshal(rec.Result, &slot) == nil {
			for _, a := range slot.Ledger {
				a.Node, a.Slot = n.Addr, slot.Slot
				b.r.Ledger = append(b.r.Ledger, a)
			}
		}
	}
	var res struct {
		Scores string `json:"scores_file"`
	}
	if len(rec.Result) > 0 && json.Unmarshal(rec.Result, &res) == nil && res.Scores != "" {
		if _, ok := rec.Outputs[res.Scores]; ok {
			n.scores = res.Scores
		}
	}
	if n.State != "ok" && n.State != "cached" {
		return
	}
	for _, p := range slices.Sorted(mapKeys(rec.Outputs)) {
		switch path.Ext(p) {
		case ".svg", ".md":
		case ".tsv":
			// The same table as markdown is shown once.
			if _, ok := rec.Outputs[strings.TrimSuffix(p, ".tsv")+".md"]; ok {
				continue
			}
		default:
			continue
		}
		data, err := b.opts.Cache.OutputBytes(rec, p)
		if err != nil || len(data) > maxArtifact {
			b.r.Artifacts = append(b.r.Artifacts, b.leftOut(n, p, len(data), err))
			continue
		}
		a := artifactOf(n.Addr, p, data)
		if n.Kind == "decision" && path.Base(p) == decision.Files[1] {
			replayInputs(a, rec.Result)
		}
		b.r.Artifacts = append(b.r.Artifacts, a)
	}
}

// replayInputs heads a decision node's replay table with what the
// replay read, as its terminal table and replay.json do (replay.tsv
// leaves them out): the protocol and outcomes files with their sha256,
// what was checked of the files the protocol froze, and the outcomes
// that are not measurements (absent, SIMULATED). result is the node's
// result, the replay's JSON.
func replayInputs(a *Artifact, result []byte) {
	var r struct {
		Inputs *decision.Inputs `json:"inputs"`
	}
	if a.Type != "table" || json.Unmarshal(result, &r) != nil || r.Inputs == nil || r.Inputs.Protocol.SHA256 == "" {
		return
	}
	a.Parts = []*Part{{Text: r.Inputs.Describe()}, {Rows: a.Rows}}
}

// maxArtifact is the largest table or plot the page carries.
const maxArtifact = 2 << 20

// leftOut is a table or plot the page does not carry (over maxArtifact,
// or unreadable in the cache): Type omitted, its Text saying why and
// where the file is.
func (b *builder) leftOut(n *Node, p string, size int, err error) *Artifact {
	where := p
	if b.r.Run.Dir != "" && !path.IsAbs(p) {
		where = path.Join(b.r.Run.Dir, p)
	}
	why := fmt.Sprintf("%.1f MiB, over the %.0f MiB a page carries", float64(size)/(1<<20), float64(maxArtifact)/(1<<20))
	if err != nil {
		why = "it could not be read from the cache: " + err.Error()
	}
	return &Artifact{Node: n.Addr, Path: p, Type: "omitted", Size: int64(size),
		Text: "Left out of this page: " + why + ". It is at " + where + " (where the run wrote it), and in the cache with " + n.Addr + "'s record (cairn show " + shellQuote(n.Addr) + ")."}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// artifactOf reads a table (markdown's pipe table, or TSV) into cells, or
// keeps a plot's SVG.
func artifactOf(node, p string, data []byte) *Artifact {
	a := &Artifact{Node: node, Path: p}
	switch path.Ext(p) {
	case ".svg":
		a.Type, a.SVG = "svg", string(data)
		return a
	case ".tsv":
		for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
			a.Rows = append(a.Rows, strings.Split(line, "\t"))
		}
	case ".md":
		a.Parts = mdParts(string(data))
		for _, p := range a.Parts {
			if len(p.Rows) > 0 {
				a.Rows = p.Rows
				break
			}
		}
	}
	if len(a.Rows) > 0 {
		a.Type = "table"
	} else {
		a.Type, a.Text, a.Parts = "text", string(data), nil
	}
	return a
}

// mdParts reads a markdown text into its pipe tables (header and rows,
// without the separator line) and the text between them, in order;
// blank lines around a text are dropped.
func mdParts(s string) []*Part {
	var parts []*Part
	var text []string
	flush := func() {
		if t := strings.Trim(strings.Join(text, "\n"), "\n"); strings.TrimSpace(t) != "" {
			parts = append(parts, &Part{Text: t})
		}
		text = nil
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			if len(rows) > 0 {
				parts = append(parts, &Part{Rows: rows})
			}
			rows = nil
			text = append(text, line)
			continue
		}
		if rows == nil {
			flush()
		}
		rows = mdRow(rows, strings.TrimSpace(line))
	}
	if len(rows) > 0 {
		parts = append(parts, &Part{Rows: rows})
	}
	flush()
	return parts
}

// mdRow adds a pipe table's line to its rows: its cells, unescaped (the
// separator line adds none, but makes rows non-nil).
func mdRow(rows [][]string, line string) [][]string {
	if rows == nil {
		rows = [][]string{}
	}
	cells := report.Cells(line)
	sep := true
	for i, c := range cells {
		cells[i] = report.UnescapeCell(c)
		if strings.Trim(cells[i], ":-") != "" {
			sep = false
		}
	}
	if sep {
		return rows
	}
	return append(rows, cells)
}

// queueWaits sets each started node's wait: from when its last upstream
// in this run ended (or the run started) to its first attempt; for a
// cluster job an earlier run submitted, its time in the queue. A node's
// record names its upstreams by their output digests: the nodes of this
// run with that output (where several have it, the latest of them to end
// before the node started).
func (b *builder) queueWaits() {
	byDigest := map[string][]*Node{}
	for _, n := range b.r.Nodes {
		if d := outputDigest(n); d != "" {
			byDigest[d] = append(byDigest[d], n)
		}
	}
	byAddr := map[string]*Node{}
	for _, n := range b.r.Nodes {
		byAddr[n.Addr] = n
	}
	for _, n := range b.r.Nodes {
		if len(n.Tries) == 0 || n.Tries[0].Start.IsZero() || b.ri.Start.IsZero() {
			continue
		}
		if t := n.Tries[0]; !t.Submit.IsZero() && t.Submit.Before(b.ri.Start) {
			// A cluster job an earlier run submitted, re-attached to:
			// it waited in the queue from its submission, before this
			// run began.
			n.QueueWait = t.Queued
			continue
		}
		start := n.Tries[0].Start
		ready := b.ri.Start
		waitFor := func(up *Node) {
			end := up.End
			if end.IsZero() {
				end = up.settled
			}
			if end.After(start) {
				// Its record was journaled after n started: n was
				// released as soon as its outputs were stored, and
				// waited for nothing after it.
				end = start
			}
			if up != n && end.After(ready) {
				ready = end
			}
		}
		for _, d := range n.upstreams {
			// Nodes with one output digest (instances of a for_each
			// stage without outputs, say) cannot be told apart: the
			// upstream is one of them, and the latest of them to end
			// before n started counts (each of them, for a node after
			// the whole stage). Taking the run's start instead counted
			// the whole stage's time as the queue's.
			for _, up := range byDigest[d] {
				waitFor(up)
			}
		}
		// What orders it without keying it (wait_for, a postcondition's
		// references) is waited for too: that wait is not the queue's.
		for _, a := range n.waits {
			if up := byAddr[a]; up != nil {
				waitFor(up)
			}
		}
		n.QueueWait = max(0, start.Sub(ready).Seconds())
	}
}

// outputDigest is the digest n's downstreams' records name it by: its
// record's output, or, for a node that failed or was skipped in this run,
// the digest apply gives a downstream that runs after such an upstream
// (on_upstream_failure = "run"). Failed nodes of one class share it, so
// the latest of them to end before a downstream started counts, as for
// upstreams with one output.
func outputDigest(n *Node) string {
	switch {
	case n.State == "failed":
		return plan.FailedOutputDigest(plan.Failed, n.Class)
	case n.State == "skipped":
		return plan.FailedOutputDigest(plan.Skipped, plan.FailUpstream)
	case n.record != nil:
		return n.record.OutputDigest
	}
	return ""
}

// lanes puts every attempt in a timeline lane: one per GPU it held, else
// the first CPU (or Slurm) slot free when it started.
func (b *builder) lanes() {
	type slotted struct {
		t    *Attempt
		node *Node
	}
	var cpu []slotted
	for _, n := range b.r.Nodes {
		for _, t := range n.Tries {
			if t.Start.IsZero() {
				continue
			}
			if len(t.GPUs) > 0 {
				t.Lane = laneGPU(t.GPUs[0])
				continue
			}
			cpu = append(cpu, slotted{t, n})
		}
	}
	sort.SliceStable(cpu, func(i, j int) bool { return cpu[i].t.Start.Before(cpu[j].t.Start) })
	var free []time.Time // per slot, when it is free again
	for _, s := range cpu {
		end := b.r.endOf(s.t)
		slot := -1
		for i, f := range free {
			if !f.After(s.t.Start) {
				slot = i
				break
			}
		}
		if slot < 0 {
			slot = len(free)
			free = append(free, time.Time{})
		}
		free[slot] = end
		prefix := "cpu "
		if s.t.Executor == "slurm" {
			prefix = "slurm "
		}
		s.t.Lane = prefix + itoa(slot)
	}
}

func laneGPU(i int) string { return "gpu " + itoa(i) }

func itoa(i int) string { return strconv.Itoa(i) }

// waves groups a batch's variants by wave.
func (b *builder) waves() {
	for _, bt := range b.r.Batches {
		waves := map[int]*Wave{}
		for _, n := range b.r.Nodes {
			if n.Stage != "stage."+bt.Stage || n.Wave == 0 || len(n.Tries) == 0 {
				continue
			}
			t := n.Tries[len(n.Tries)-1]
			w, ok := waves[n.Wave]
			if !ok {
				w = &Wave{N: n.Wave, Start: t.Start}
				waves[n.Wave] = w
				bt.Waves = append(bt.Waves, w)
			}
			w.Nodes = append(w.Nodes, n.Addr)
			if t.Start.Before(w.Start) {
				w.Start = t.Start
			}
			if t.End.After(w.End) {
				w.End = t.End
			}
		}
		sort.Slice(bt.Waves, func(i, j int) bool { return bt.Waves[i].N < bt.Waves[j].N })
		for _, w := range bt.Waves {
			for _, a := range w.Nodes {
				n := b.byAddr[a]
				t := n.Tries[len(n.Tries)-1]
				if !t.End.IsZero() {
					w.IdleGPUSeconds += w.End.Sub(t.End).Seconds() * float64(max(1, len(t.GPUs)))
				}
			}
		}
	}
}

func (b *builder) stages() {
	by := map[string]*StageUse{}
	for _, n := range b.r.Nodes {
		s, ok := by[n.Stage]
		if !ok {
			s = &StageUse{Stage: n.Stage}
			by[n.Stage] = s
			b.r.Stages = append(b.r.Stages, s)
		}
		s.Nodes++
		s.Seconds += n.Duration
		s.GPUSeconds += n.GPUSeconds
	}
}

// countNodes counts each node once, by its last record: a node that
// failed twice and then succeeded is one ran node with two failed
// attempts.
func countNodes(entries []runlog.Entry, state string, nodes []*Node) Counts {
	var c Counts
	for _, e := range entries {
		// A failure before any attempt ran (a setup refusal, a cached
		// result's postcondition) is no failed attempt, nor is an
		// attempt Ctrl-C stopped.
		if e.T == runlog.Failed && e.Attempt > 0 && !runlog.Stopped(e.Class, state) {
			c.FailedAttempts++
		}
	}
	for _, n := range nodes {
		switch n.State {
		case "ok":
			if n.Kind == "serve" {
				continue // makes no result: not in ran, as apply counts
			}
			c.Ran++
		case "cached":
			c.Cached++
		case "failed":
			c.Failed++
		case "skipped":
			c.Skipped++
		case "running":
			c.Running++
		case "interrupted":
			c.Interrupted++
		default:
			c.Planned++
		}
	}
	return c
}

// varsOf reads the variables of a journaled command line: --var NAME=V
// (and -var, --var=), --var-file FILE.
func varsOf(args []string) []Var {
	var out []Var
	for i := 0; i < len(args); i++ {
		a := args[i]
		flag, val, eq := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (flag != "var" && flag != "var-file") {
			continue
		}
		if !eq {
			if i+1 >= len(args) {
				break
			}
			i++
			val = args[i]
		}
		if flag == "var-file" {
			out = append(out, Var{Name: "(file)", Value: val, File: true})
			continue
		}
		name, v, _ := strings.Cut(val, "=")
		vr := Var{Name: name, Value: v}
		if v == sensitiveValue {
			vr.Env = sensitiveEnv(name)
		}
		out = append(out, vr)
	}
	return out
}

// VarFiles are the --var-file arguments of a run's command line args, as
// given (relative to the folder the run was started in, or its --chdir).
func VarFiles(args []string) []string {
	var out []string
	for _, v := range varsOf(args) {
		if v.File {
			out = append(out, v.Value)
		}
	}
	return out
}

// commandOf is the shell command that runs the run again. A sensitive
// variable's value is not in the journal: the command reads it from an
// environment variable (sensitiveEnv), and the shell refuses to run it
// while that is unset, rather than apply with the value "(sensitive)".
func commandOf(dir string, args []string) string {
	if len(args) == 0 {
		return ""
	}
	var b strings.Builder
	if dir != "" {
		b.WriteString("cd " + shellQuote(dir) + " && ")
	}
	b.WriteString("cairn")
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			for _, rest := range args[i:] {
				b.WriteString(" " + shellQuote(rest))
			}
			break
		}
		flag, val, eq := strings.Cut(a, "=")
		if flag != "--var" && flag != "-var" {
			b.WriteString(" " + shellQuote(a))
			continue
		}
		if !eq && i+1 < len(args) {
			i++
			val = args[i]
		} else if !eq {
			b.WriteString(" " + shellQuote(a))
			continue
		}
		b.WriteString(" " + flag + " " + varArg(val))
	}
	return b.String()
}

// varArg is a --var's NAME=VALUE for the shell; a sensitive one's value
// is its environment variable, required. The message after ":?" has no
// quote of either kind: inside "${...}", bash reads an apostrophe there as
// the start of a quoted string, and the command would not parse.
func varArg(kv string) string {
	name, v, _ := strings.Cut(kv, "=")
	if v != sensitiveValue || strings.ContainsAny(name, "\"$`\\}") {
		return shellQuote(kv)
	}
	env := sensitiveEnv(name)
	return `"` + name + "=${" + env + ":?set " + env + " to the value of the sensitive variable " + name + ": the journal of the run does not keep it}" + `"`
}

// sensitiveEnv is the environment variable the command to run a run
// again reads a sensitive variable's value from: CAIRN_VAR_ and its name,
// in capitals, with "_" for any other character than a letter or digit.
func sensitiveEnv(name string) string {
	b := []byte("CAIRN_VAR_")
	for _, c := range strings.ToUpper(name) {
		if c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b = append(b, byte(c))
		} else {
			b = append(b, '_')
		}
	}
	return string(b)
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
