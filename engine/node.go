package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl/addrs"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/stages"
)

// nodeState is one node of the apply. Its fields are grouped by who owns
// them: the loop's goroutine hands a node to a worker at launch and takes
// it back at the worker's evDone (or, for a node released early, at
// evSettled); the fields shared while it runs say how they are guarded.
type nodeState struct {
	// Set when the apply begins; read by everyone, written by no one.
	n  *plan.Node
	pn *plan.PlannedNode

	// The loop's alone (schedule, admission, commit of cached, failed and
	// skipped nodes).
	status   plan.Status
	worker   *worker   // the worker executing it, from launch to evDone
	prepared bool      // prepare has run
	final    bool      // ok, cached, failed or skipped
	inst     cty.Value // built by finalInstance
	// locked is its key's lock and lease its GPU lease, taken at
	// admission; its worker hands their files to the node's processes.
	locked *store.KeyLock
	lease  *gpu.Lease
	// gpuWait is the wait for GPUs told (a GPU node that found too few
	// free); nil when it does not wait.
	gpuWait *executor.Notice
	wave    int
	// launch is set when the node starts as a variant of a batch.
	launch *store.Launch
	// slotFreed: its CPU slot and concurrency turn were given back.
	slotFreed bool
	// released: its downstreams were made ready when its outputs were
	// stored, before its record was written.
	released bool
	// endedOut: its node_ended event is out; endedHeld: it waits for an
	// upstream's (heldEnds are the downstreams' events that wait for
	// its own). See emitEnded.
	endedOut, endedHeld bool
	heldEnds            []heldEnd

	// Set by the loop before launch (prepare, admission), read by its
	// worker while it runs.
	spec *stages.Node
	key  string
	env  *plan.Envelope
	// envJSON is env as JSON when prepare encoded it for the key (the
	// record's envelope); nil when the plan's key stands.
	envJSON []byte
	// secrets are the node's sensitive values, hidden from messages.
	secrets []string
	// batchLogDir is set for variants of a batch: logs go there as
	// gpu<idx>_<name>.out and .err.
	batchLogDir string
	started     time.Time

	// inputNames are the entries of its folder inputs as its key was
	// taken (noteInputNames), for the check after its run.
	inputNames map[string]map[string]bool
	// marked are the times its outputs' files had before the attempt's
	// freshness marks (freshMarks.before), for its process's spec.
	marked map[string]int64

	// Its worker's from launch to evDone, the loop's before and after
	// (fail and skip write them for nodes that never ran).
	class   string
	message string
	// refused and noResume are the last outcome's (stages.Outcome).
	refused, noResume bool
	attempts          int
	// runCounts are the kind's counts of the last attempt
	// (stages.Outcome.RunCounts), merged with the earlier attempts' where
	// the kind is a stages.RunCountsMerger, for the journal.
	runCounts map[string]int
	ended     time.Time
	// ranBefore is the own run time of its attempts before the last,
	// lastRan the last's (0 for an attempt whose process never started:
	// a program not found, say); began says the attempt's process (or
	// an evaluation's work, NodeStarted) started.
	ranBefore, lastRan time.Duration
	began              bool
	res                *process.Result
	job                process.JobRef // its last process's, once started
	record             *store.Record
	logs               [2]string
	// fileName is runlog.NodeLogName of the node's first attempt, once
	// its worker has needed it (its logs' stem, its scratch folder's
	// name): the address is parsed once a node, not for each.
	fileName string
	// seq is the number of the node's record in the cache (Commit), 0
	// when it committed none in this apply: a downstream's record names
	// the node's while it is above the cache's Durable (see persist).
	seq           int64
	persistFailed bool

	// Shared while it runs, each guarded as it says.
	// waiting is its unfinished upstreams: the loop changes it, workers
	// read it (yieldInChain).
	waiting atomic.Int32
	// inFlight is the most of its batch's variants running at once
	// since launch (written by the scheduler, read when the record is
	// made).
	inFlight atomic.Int32
	// scratch is the node's CAIRN_OUT_DIR once made (guarded by
	// applier.scratchMu).
	scratch string
	// persisted is made when the node may be released (see release):
	// its worker closes it once its record is written to the cache, or
	// could not be (persistFailed, set before), and sets seq before.
	// Downstreams' workers wait for it before they write theirs.
	persisted   chan struct{}
	persistOnce sync.Once
	// svc is a service node's state (serve.go); nil for other nodes.
	svc *serviceState

	// shed: the node ended with its record and told so; what it no
	// longer needs is dropped (see shed), its envelope's inputs kept in
	// inputs for the memo.
	shed   bool
	inputs map[string]string
}

// shed drops what a node that ended with its record (ran or taken from
// the cache) no longer needs once its end is told, so that an apply of
// many nodes does not hold every node's run to its end: its process's
// result (the stderr tail, GPU samples), job reference, logs' names, the
// entries its input folders held, spec
// and the plan's, secrets, key envelope and the plan's (its inputs are
// kept for the memo) and the
// envelope's JSON, and its record's copy of the envelope, the contents of
// its small outputs and their modes (outputs are restored before this,
// and the cache's index holds the record whole). What later nodes read
// of it stays: its status, key, record (result, output digests, times
// and peaks) and instance object. The loop calls it; its worker is done
// with it.
func (ns *nodeState) shedRun() {
	if ns.record == nil || ns.svc != nil || ns.class != "" || ns.shed {
		return
	}
	ns.shed = true
	if ns.env != nil {
		ns.inputs = ns.env.Inputs
	}
	ns.env, ns.envJSON, ns.spec, ns.secrets = nil, nil, nil, nil
	// The plan's spec and envelope of the node were read by its prepare
	// alone (its record stays: a downstream compares it, see
	// upstreamsAsPlanned).
	ns.pn.Spec, ns.pn.Envelope = nil, nil
	ns.res, ns.job, ns.logs, ns.inputNames = nil, process.JobRef{}, [2]string{}, nil
	ns.record.Envelope, ns.record.Inline, ns.record.Modes = nil, nil, nil
}

// ranFor is how long the node ran: its record's duration (the command's
// own, where it ran one) once it has a record, else from its start to its
// end in this apply.
func (ns *nodeState) ranFor() time.Duration {
	if r := ns.record; r != nil && !r.Started.IsZero() && !r.Ended.IsZero() {
		return r.Ended.Sub(r.Started)
	}
	return ns.ended.Sub(ns.started)
}

// logName is runlog.NodeLogName(addr, attempt) of the node. Only its
// worker goroutine calls it.
func (ns *nodeState) logName(attempt int) string {
	if ns.fileName == "" {
		ns.fileName = runlog.NodeLogName(ns.n.Addr, 1)
	}
	return addrs.AttemptName(ns.fileName, attempt)
}
