// Package stages holds cairn's stage kinds, one file each, behind one small
// interface and a registry listed in a stable order.
//
// A kind declares the attributes it adds to the generic stage schema and
// runs one node (a stage instance after for_each expansion). The engine
// evaluates the node's attributes, computes its key, checks the cache,
// leases resources and hands the node to the kind's Run with a Runtime that
// starts supervised processes.
package stages

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/process"
)

// Kind is a stage kind.
type Kind interface {
	// Name is the first label of `stage "KIND" "NAME"`.
	Name() string
	// Version is the implementation version; it is part of every node key,
	// so bumping it reruns the kind's nodes.
	Version() int
	// Schema lists the attributes and blocks the kind adds to the generic
	// stage schema.
	Schema() *hcl.BodySchema
	// Check validates a node's evaluated attributes. At plan time some
	// values may be unknown; Check must accept unknown values.
	Check(n *Node) hcl.Diagnostics
	// Run executes the node.
	Run(ctx context.Context, n *Node, rt Runtime) (*Outcome, error)
}

// KeyExcluder is implemented by kinds with attributes that do not change a
// node's result (scheduling knobs); they are left out of the key.
type KeyExcluder interface {
	KeyExcluded() []string
}

// PurePlanner is implemented by kinds whose plan-time work (attribute
// checks, stage checks, key values, declared inputs) looks at nothing but
// attribute values: no file, no clock, no environment. A pipeline made of
// such kinds only can be remembered as up to date (engine/memo) and
// checked later without being evaluated again.
type PurePlanner interface {
	PurePlan()
}

// InputDeclarer is implemented by kinds whose attributes name files the
// node reads (a dataset, a worker script): the engine adds the paths it
// returns to the node's declared inputs, so their content enters the node
// key as if the stage had listed them in inputs. root is the workspace
// root; paths are workspace-relative. Attr names the attribute, for the
// error's position.
type InputDeclarer interface {
	DeclaredInputs(n *Node, root string) []DeclaredPath
}

// ChangeNoter is implemented by kinds with keyed attributes whose change
// reruns the node without changing what it takes from a store of its own
// (an evaluation's env: its items are not keyed by it): plan's reason for
// a change of attr ends with the note ChangeNote gives ("" for none).
type ChangeNoter interface {
	ChangeNote(attr string) string
}

// LinkFollower is implemented by InputDeclarers whose node reads some of
// its declared inputs through their symbolic links (an evaluation's
// bundle): the engine digests those paths through their links, each link
// as what it points to (docs/keys.md), not as its target's name.
type LinkFollower interface {
	FollowedInputs(n *Node) []string
}

// ContentKeyer is implemented by kinds whose node is keyed by the content
// of files or folders that are not its declared inputs: paths outside the
// workspace (a job's sealed files kept elsewhere), or the weights a model
// server reads (a job's servers' weights). The planner digests each path
// KeyedContent returns (absolute, or relative to root) through its links,
// as a serve stage's weights, through the stat cache, into the node's key:
// what the node seals is then what its cached record was made with.
type ContentKeyer interface {
	KeyedContent(n *Node, root string) []string
}

// ContentDigester digests a file or folder through its links (the stat
// cache's ContentTree): lowercase hex sha256.
type ContentDigester interface {
	ContentTree(path string) (string, error)
}

// OutputDeclarer is implemented by kinds whose attributes name files or
// folders the node (or cairn for it) writes in the workspace (a report
// folder, a scores file, a log folder): the engine checks each path at plan
// time as it checks outputs (inside the workspace, not the workspace root,
// neither holding nor inside the cache folder). Attr names the attribute,
// for the error's position.
type OutputDeclarer interface {
	DeclaredOutputs(n *Node) []DeclaredPath
}

// Rewriter is implemented by kinds whose node writes some of its declared
// outputs anew on every attempt that succeeds (an evaluation's scores
// file). The engine marks them before each attempt as it marks a stage's
// result and outputs: a cairn killed while the node runs leaves an
// earlier configuration's file carrying the mark, not looking current,
// and an attempt that succeeds without rewriting one fails.
type Rewriter interface {
	RewrittenOutputs(n *Node) []string
}

// WorkspaceChecker is implemented by kinds that refuse, before anything
// runs, a node the workspace's state makes wrong (an optimizer job's out
// folder sealed for another job): the engine calls it at plan time, once
// the node's attributes are known, and reports its diagnostics as bad
// input (exit 2).
type WorkspaceChecker interface {
	CheckWorkspace(n *Node, root string) hcl.Diagnostics
}

// PathAttr is an attribute of a kind that names a path the node reads or
// writes, or a list of them, as written in the pipeline. The graph links
// stages by these as by inputs and outputs, when it is built: a node reading
// a path another stage writes waits for it, and its output digest enters
// the key.
type PathAttr struct {
	Attr  string
	Write bool
	// Files are, for a folder the node writes only some files of, the
	// names of those under it; none: the path itself.
	Files []string
	// Default, where set, is the path when the attribute is absent, from
	// the stage's name.
	Default func(stage string) string
	// Args: the attribute is an argument list (a worker's), whose
	// elements name paths among other arguments. An element names one
	// whole (unless it begins with "-") or after its first "="
	// ("--prompt=p.txt"); one that names no path another stage writes
	// is a plain argument, and links nothing.
	Args bool
	// Field, where set: the attribute is an object, and the paths are
	// its Field member's (a path, a list of them, or a map of them: a
	// model_cache's weights by model); its other members name none.
	Field string
}

// ArgPaths yields what the argument a may name as a path (PathAttr.Args):
// a itself, unless it begins with "-", and what follows its first "=".
// Neither is checked to be a path: the caller matches them against paths.
func ArgPaths(a string) []string {
	if a == "" || strings.Contains(a, "://") {
		return nil
	}
	var out []string
	if !strings.HasPrefix(a, "-") {
		out = append(out, a)
	}
	if eq := strings.IndexByte(a, '='); eq >= 0 && eq+1 < len(a) {
		out = append(out, a[eq+1:])
	}
	return out
}

// PathLinker is implemented by kinds whose attributes name paths the node
// reads or writes (an InputDeclarer's or OutputDeclarer's, as far as plain
// paths go): see PathAttr.
type PathLinker interface {
	PathAttrs() []PathAttr
}

// reportsDefault is the default out_dir of the kinds writing a report
// folder: reports/<stage name>.
func reportsDefault(stage string) string { return "reports/" + stage }

// DeclaredPath is a workspace-relative path a kind's attribute names.
type DeclaredPath struct {
	Attr, Path string
}

// declaredPaths are paths, all named by the attribute attr.
func declaredPaths(attr string, paths ...string) []DeclaredPath {
	out := make([]DeclaredPath, len(paths))
	for i, p := range paths {
		out[i] = DeclaredPath{Attr: attr, Path: p}
	}
	return out
}

// ProgressReporter is implemented by runtimes that show a running node's
// progress (the live display on a terminal): a kind calls it with a short
// line, as often as it likes.
type ProgressReporter interface {
	Progress(line string)
}

// KeyTransformer is implemented by kinds that keep only part of an
// attribute's value in the key: e.g. the pareto kind keeps each row's
// result and status, not its duration, so that a variant rerun to the same
// result leaves the table cached.
type KeyTransformer interface {
	KeyValue(attr string, v cty.Value) cty.Value
}

// OutFolderKeeper is implemented by the kinds whose outputs are an
// optimizer job's artifacts in its out folder (job.json, optimization.json,
// selection.json, test.json, result.json): the out folder is the truth
// (docs/job-artifacts.md). A cached record is restored only where the out
// folder holds no different file; when it does (the folder written by
// another apply, on another cache), the node runs instead, and its kind
// takes the folder's artifacts as they are, or refuses them.
type OutFolderKeeper interface {
	KeepsOutFolder()
}

// Comparer is implemented by kinds that compare their upstreams' results
// (the pareto kind): with on_upstream_failure = "run" a failed upstream is
// still listed, but a node none of whose upstreams finished has nothing to
// compare and is skipped, writing nothing.
type Comparer interface {
	Compares()
}

// Announcer is implemented by kinds whose result holds a summary for
// people (an optimizer job's summary line): apply prints the line Announce
// makes of the node (its evaluated attributes; nil when not known) and its
// result when the node runs, and again when it is taken from the cache
// (from the cached record's result), so that applying a finished pipeline
// again shows its summaries. "" prints nothing. The line goes where the
// node's progress lines go (standard error), or alone on standard output
// with apply --summaries; --json's node event of the node carries it too.
type Announcer interface {
	Announce(n *Node, result json.RawMessage) string
}

// OutcomeLabeler is implemented by kinds whose node succeeds with a result
// that records a failure the kind absorbs as data (a decision slot whose
// process ran out of memory, timed out or crashed, or needed a
// replacement): apply shows the node with the label OutcomeLabel makes of
// its result in place of "ok", so that a failed process never reads as one
// that went well. "" shows "ok".
type OutcomeLabeler interface {
	OutcomeLabel(result json.RawMessage) string
}

// OutcomeUntimer is implemented by OutcomeLabelers whose result can record
// an outcome with no run time to show: apply shows its label alone, with
// no "in DURATION" and no duration_s (a decision slot whose attempt ended
// unseen while cairn was stopped: the moment this apply took to record it
// is no run time).
type OutcomeUntimer interface {
	OutcomeUntimed(result json.RawMessage) bool
}

// PlanRefuser is implemented by kinds whose node can find, before it
// runs, that it will refuse to (an optimizer job whose out folder holds
// an interrupted optimization, a decision slot its ledger holds under
// another key): cairn plan shows the node as refused with the reason
// PlanRefusal gives, "" when it would run. root is the workspace; key is
// the node's key as the plan finds it ("" when known only after apply:
// n.Key is set only when the node runs); replaced says --replace names
// the node. It only reads.
type PlanRefuser interface {
	PlanRefusal(n *Node, root, key string, replaced bool) string
}

// StageChecker is implemented by kinds that validate a stage as a whole
// (all its instances), e.g. a batch of exactly four variants.
type StageChecker interface {
	CheckStage(s *StageInfo) hcl.Diagnostics
}

// StageInfo describes a stage and its instances for StageChecker.
type StageInfo struct {
	Name      string
	Keys      []string
	Nodes     []*Node
	DeclRange hcl.Range
	// ForEach locates the stage's for_each (nil without one): what a
	// check of its instances points at.
	ForEach *hcl.Range
}

// Node is one stage instance as a kind sees it.
type Node struct {
	Address string // stage.NAME or stage.NAME["KEY"]
	Stage   string
	EachKey string
	// Args holds the node's evaluated attributes by name: generic and
	// kind-specific. Sensitive values carry dsl.SensitiveMark.
	Args map[string]cty.Value
	// Ranges locate attributes in their file, for diagnostics (see
	// Range).
	Ranges map[string]hcl.Range
	// Attributes are the stage's attributes: they locate those that
	// Ranges does not (see Range).
	Attributes map[string]*hcl.Attribute
	// Common is the decoded generic part.
	Common Common
	// Upstreams are the nodes this node depends on, with their state at
	// the time it runs (for on_upstream_failure = "run").
	Upstreams []Upstream
	// Key is the node key (hex sha256), known when the node runs.
	Key string
	// WeightsDigest is the digest of the weights a service node names
	// (Service.WeightsPath), set by the engine; "" when it names none.
	WeightsDigest string
	// FilesDigest is the digest of a service node's inputs, the files
	// its server reads besides its weights, set by the engine; "" when
	// it declares none.
	FilesDigest string
	// InputDigests are the digests of the node's inputs (Common.Inputs)
	// as its key holds them (hex, docs/keys.md), by path, and of the
	// paths its kind declares (InputDeclarer) that an upstream wrote
	// since they were listed; set by the engine once the key is known,
	// nil before.
	InputDigests map[string]string
	// Stat digests files and folders through the cache's stat cache
	// (set by the planner; nil where there is none): a kind that seals
	// large trees (a job's servers' weights) reads them again only when
	// a file of them changed.
	Stat ContentDigester
	// Look remembers the kinds' looks at the workspace while a plan
	// looks at it at one moment (set by the planner; nil otherwise).
	Look *Look
	// Source is where the node's attributes are written, set by the
	// planner; nil otherwise. A kind reads there what a value does not
	// keep: the digits a number literal is written with (Source.Written).
	Source *Source
	// Blocks are the kind's own blocks, evaluated by the kind.
	Blocks []*hcl.Block
	// EvalContext evaluates expressions inside Blocks (nil when the
	// node has none and its attributes are constant).
	EvalContext *hcl.EvalContext
	// decoded is the kind's decoding of Args for its checks (decodedOnce).
	decoded struct {
		mu   sync.Mutex
		spec any
	}
}

// Source is where a node's attributes are written: the stage's attributes
// as parsed, by name, and the pipeline's files, by name.
type Source struct {
	Attrs map[string]*hcl.Attribute
	Files map[string]*hcl.File
}

// Written is the expression attribute attr is written as, and the text
// of the file it is written in (nil where that is not at hand); a nil
// expression where the stage does not write attr.
func (s *Source) Written(attr string) (hcl.Expression, []byte) {
	if s == nil || s.Attrs[attr] == nil {
		return nil, nil
	}
	e := s.Attrs[attr].Expr
	if f := s.Files[e.Range().Filename]; f != nil {
		return e, f.Bytes
	}
	return e, nil
}

// Range locates attribute attr in its file, for diagnostics: its range in
// Ranges, or its expression's in Attributes; the zero Range where
// neither has it.
func (n *Node) Range(attr string) hcl.Range {
	r, _ := n.LookupRange(attr)
	return r
}

// LookupRange is Range, and whether Ranges or Attributes has attr.
func (n *Node) LookupRange(attr string) (hcl.Range, bool) {
	if r, ok := n.Ranges[attr]; ok {
		return r, true
	}
	if a := n.Attributes[attr]; a != nil {
		return a.Expr.Range(), true
	}
	return hcl.Range{}, false
}

// Common are the generic attributes every kind shares, decoded.
type Common struct {
	Inputs       []string          // workspace-relative
	Result       string            // workspace-relative, "" when none
	Outputs      []string          // workspace-relative
	Env          map[string]string // sensitive values included; never logged
	SensitiveEnv map[string]bool
	CPUs         int
	MemMiB       int // the stage's memory, MiB (0: not said)
	GPUs         int
	Timeout      time.Duration // 0: none
	KillGrace    time.Duration
	Concurrency  int // 0: unlimited
	// Classify are the stage's classify patterns, compiled when its
	// attributes were validated, in the order a failed process's stderr is
	// tried against them: by class in failclass.All order, each
	// class's patterns as written.
	Classify []process.ClassPattern
}

// Upstream is the state of one upstream node.
type Upstream struct {
	Address string
	Status  string // "ok", "failed", "skipped"
	Class   string
	Result  json.RawMessage
	// Args are the upstream's evaluated attributes where this apply
	// evaluated it (nil otherwise): what a kind may need of how an
	// upstream that gave no result was meant to run (a slot's ledger).
	Args map[string]cty.Value
}

// Proc is a process for the Runtime to start.
type Proc struct {
	Argv   []string
	Shell  bool // run Argv[0] through /bin/sh -c
	Env    map[string]string
	Stdin  io.Reader
	Stdout string // log file path; "" for the node's default log
	Stderr string
	// LogName names the logs of a batch variant: with a batch log folder,
	// they are <folder>/gpu<idx>_<LogName>.out and .err, with .attemptN
	// before the extension for attempt 2 and later.
	LogName string
	// Replica numbers a service node's replica (from 1; 0 for other
	// processes): it sees its own share of the node's GPUs (gpus each, in
	// lease order), and its logs are Stdout and Stderr.
	Replica int
	// AppendLogs: the process's output is added to Stdout's and Stderr's
	// end (a replica's restart), not written over what they hold.
	AppendLogs bool
	// Logs are more log files the node writes beside the process's own
	// (an optimization's rollouts.log): the journal lists them with the
	// process's, and so does cairn show RUN.
	Logs []string
	// Started, when set, is called once the process runs (a cluster's
	// job is submitted), with its reference: the log files of a cluster
	// job that an apply re-attached to are the dead run's ("stdout",
	// "stderr" of its details).
	Started func(process.JobRef)
	// Submitted, when set, is called once a cluster's job is submitted
	// (under a cluster executor only), with what says whether it waits
	// in the cluster's queue: its state as the cluster last showed it
	// ("PENDING (Resources)"; "" before the first answer) and whether
	// that is a wait in the queue.
	Submitted func(queue func() (state string, queued bool))
	// Outputs are the node's outputs (workspace-relative) where this
	// process is the node's only one, so that nothing else of the node
	// writes them after it ends: a cluster executor notes their state
	// when the command ends and, before the result is taken, fails the
	// node if one changed since. Empty: no such check.
	Outputs []string
}

// Batcher is implemented by kinds whose stage runs as one GPU batch
// (the waves kind): the scheduler gives the batch a machine-wide lock,
// pins its variants to the GPUs free at its start, and runs them in waves
// or backfills.
type Batcher interface {
	BatchPolicy(n *Node) BatchPolicy
}

// BatchPolicy describes a batch.
type BatchPolicy struct {
	Mode   string // "waves" or "backfill"
	Size   int    // exact number of variants
	LogDir string // workspace-relative; cairn appends _<UTC timestamp>
	Tag    string
	Ledger string // workspace-relative markdown file to keep rows in; "" for none
	// Strict reruns every variant whenever one must run, so that the
	// batch's results are always measured together.
	Strict bool
}

// Runtime is what the engine offers a running node.
type Runtime interface {
	// Exec starts p under supervision (own process group, timeout, logs,
	// leases held for its lifetime, memory sampling) and waits for it.
	Exec(ctx context.Context, p Proc) (*process.Result, error)
	// Root is the workspace root.
	Root() string
	// OutDir is a private scratch folder for the node.
	OutDir() string
	// CacheDir is the cache root (shared stores live under it).
	CacheDir() string
	// Emit tells what the node does as it runs (package events: notes,
	// item progress, rollout counts, tables): the kind prints nothing.
	Emit(events.Event)
	// RunID names the apply's run (its journal under the cache's runs/).
	RunID() string
	// NoSync says that the stores and ledgers a kind writes skip fsync
	// (CAIRN_NO_FSYNC=1, which only the command line reads; tests and
	// benchmarks): a power loss may then lose their last records.
	NoSync() bool
}

// ItemRecord is one unit of a node's work that was finished and stored: an
// item of an evaluation.
type ItemRecord struct {
	Item    string // the item's id
	Key     string // the item key its result is stored under
	Charged int    // rollouts the item charged
}

// Replacer is implemented by the engine's Runtime.
type Replacer interface {
	// Replacing reports whether --replace names the node or one of its
	// upstreams: the node may then rewrite what an earlier run left in
	// the workspace.
	Replacing() bool
	// ReplaceCommand is this apply's command line with --replace naming
	// the node: the command that runs it again from the start.
	ReplaceCommand() string
}

// GPUSimulator is implemented by the engine's Runtime: whether the GPUs
// leased to the node are simulated ones (CAIRN_GPUS=sim:N), whose memory
// readings are made up. A Runtime without it has real GPUs or none.
type GPUSimulator interface {
	SimulatedGPUs() bool
}

// simulatedGPUs says whether rt's node runs on simulated GPUs.
func simulatedGPUs(rt Runtime) bool {
	s, ok := rt.(GPUSimulator)
	return ok && s.SimulatedGPUs()
}

// WorkerStarter is implemented by the engine's Runtime: evaluate's worker
// processes start through the apply's executor, as its nodes' processes
// do.
type WorkerStarter interface {
	WorkerLauncher() process.Launcher
}

// ElsewhereServer is implemented by kinds whose node may only publish
// servers run elsewhere (a serve stage given endpoints): such a node
// starts nothing, so it holds none of the GPUs its gpus attribute asks
// for, and the engine neither leases them nor refuses it for want of
// them.
type ElsewhereServer interface {
	ServesElsewhere(n *Node) bool
}

// HardStopper is implemented by the engine's Runtime: the channel closed
// when the run is to stop at once (a second Ctrl-C), for kinds that end
// their own processes (an evaluation's workers) after the stage's
// kill_grace otherwise.
type HardStopper interface {
	HardStop() <-chan struct{}
}

// Journaler is implemented by the engine's Runtime. Kinds that finish their
// work in units (the items of an evaluation) record each unit in the run
// journal as it is stored, so the journal shows what a run did and charged
// even when it is killed before the node finishes.
type Journaler interface {
	// NodeStarted records that the node began work it does inside cairn's
	// own process (it starts no supervised process through Exec), and the
	// log files it writes: the journal then shows the node in flight, and
	// a run killed meanwhile leaves it recorded as interrupted.
	NodeStarted(logs ...string) error
	// JournalItems appends one "charged" record per item and returns once
	// they are in the journal's file: a kill -9 of cairn cannot lose them.
	// They are not synced on their own (what they record is durable in the
	// item store, or the rollout ledger, first); the node's next durable
	// record syncs them.
	JournalItems(recs []ItemRecord) error
}

// RunCountsMerger is implemented by kinds whose run counts add up over a
// node's attempts in one apply (a retry of the node): the engine keeps,
// in the node's record and journal, MergeRunCounts(earlier, last) — what
// the attempts did together — instead of the last attempt's counts alone.
// earlier is what the attempts before last merged to.
type RunCountsMerger interface {
	MergeRunCounts(earlier, last map[string]int) map[string]int
}

// Outcome is a node's result as the kind reports it.
type Outcome struct {
	// Result is the node's parsed result (the result file's JSON, or what
	// the kind computed). The engine reads the declared result file itself
	// when Result is nil and a result path is declared.
	Result json.RawMessage
	// Class is "" on success, else a failure class.
	Class   string
	Message string
	Proc    *process.Result
	// Files the kind wrote that are outputs besides the declared ones.
	Files []string
	// Refused: the kind refused to run, for a reason found only once it
	// ran (an out folder another apply holds, a saved artifact it would
	// rewrite): bad input, and apply exits 2.
	Refused bool
	// NoResume: the node's work is not resumed by the next apply (an
	// interrupted optimization): its Message says what the next apply does.
	NoResume bool
	// RunCounts are counts that describe this run, not the result (items
	// evaluated now or taken from the store, rollouts charged now): the
	// engine keeps them in the node's record and its journal entry, never
	// in the result, so that a rerun that reaches the same result leaves
	// the node's downstream cached.
	RunCounts map[string]int
	// NotNeeded: the node did nothing because it is not needed (see
	// NeedDeclarer); its record answers for it only while it is not.
	NotNeeded bool
}

// NeedDeclarer is implemented by kinds whose node can be declared not
// needed (evaluate's needed = false): it then does nothing, and its result
// is null. The attribute is out of the key, so that a node cached when it
// was needed stays cached once it is not; a record made while it was not
// needed (Outcome.NotNeeded) answers for it only while it is not: once it
// is needed again, it runs. known is false while the value waits for an
// upstream.
type NeedDeclarer interface {
	Needed(n *Node) (needed, known bool)
}

// TimeoutKeeper is implemented by kinds that keep the stage's timeout
// themselves: each process they run through Runtime.Exec is killed at it
// (command, waves, slot, job, optimize, serve), or the kind stops at it
// (evaluate). Any other kind works in
// cairn's own process, and the engine ends it at the timeout: its context
// is cancelled, and the node fails with class timeout.
type TimeoutKeeper interface {
	KeepsTimeout()
}

var (
	regMu sync.RWMutex
	reg   = map[string]Kind{}
)

// Register adds a kind; it panics on a duplicate name (a programming error).
func Register(k Kind) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := reg[k.Name()]; dup {
		panic(fmt.Sprintf("stages: kind %q registered twice", k.Name()))
	}
	reg[k.Name()] = k
}

// Lookup returns the kind named name.
func Lookup(name string) (Kind, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	k, ok := reg[name]
	return k, ok
}

// Registry adapts the registry to dsl.Kinds.
type Registry struct{}

// KindSchema implements dsl.Kinds.
func (Registry) KindSchema(kind string) (*hcl.BodySchema, bool) {
	k, ok := Lookup(kind)
	if !ok {
		return nil, false
	}
	return k.Schema(), true
}

// KindNames implements dsl.Kinds.
func (Registry) KindNames() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	names := make([]string, 0, len(reg))
	for n := range reg {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
