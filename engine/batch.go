package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/cairn-run/cairn/dsl/addrs"
	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/stages"
)

// Batch states: a batch's state in its journal record, and the word in its
// row of a waves stage's ledger table (stages.Ledger).
const (
	BatchRunning     = "RUNNING"
	BatchDone        = "DONE"
	BatchFailed      = "FAILED"
	BatchInterrupted = "INTERRUPTED"
)

// batchGroup schedules one waves stage as a batch: a machine-wide batch
// lock (one batch at a time per machine), parallelism min(free GPUs,
// batch size) fixed at the batch's start, every variant pinned to one of
// the devices free then, and either waves (the next wave starts when the
// whole previous wave ended) or backfill (a variant starts as soon as any
// of the batch's devices frees).
type batchGroup struct {
	stage  string
	policy stages.BatchPolicy
	// order is the launch order: the order given (waves), or longest
	// known duration first (backfill).
	order []int
	// state
	started  bool
	refused  string
	lock     *flock.Flock
	devices  []int // pinned devices, the free ones at batch start
	par      int
	slots    *slotPolicy
	batch    *runlog.Batch
	deadline time.Time
	failed   bool
	launched int // variants the batch launched (set at its start)
	// A strict batch (strict_batch) decides once every variant's key is
	// known: all from the cache, or all run (runAll).
	decided, runAll bool
}

// setupGroups creates a batch group for every batch stage with nodes to
// run.
func (a *applier) setupGroups() {
	for _, s := range a.g.StageOrder {
		k, _ := stages.Lookup(s.Kind)
		b, ok := k.(stages.Batcher)
		if !ok {
			continue
		}
		var ids []int
		var pol stages.BatchPolicy
		for _, n := range a.g.StageNodes[s.Name] {
			pn := a.opts.Plan.Nodes[n.ID]
			if pn.Skipped || pn.Action == plan.ActCached {
				continue
			}
			if pol.Mode == "" && pn.Spec != nil {
				pol = b.BatchPolicy(pn.Spec)
			}
			ids = append(ids, n.ID)
		}
		if len(ids) == 0 {
			continue
		}
		if pol.Mode == stages.ModeBackfill {
			a.longestFirst(ids)
		}
		a.sched.groups[s.Name] = &batchGroup{stage: s.Name, policy: pol, order: ids}
	}
}

// longestFirst orders a backfill batch's variants longest first where
// earlier durations of the same addresses are known (the batch ends
// sooner), the others in the order given. Waves keep the order given (on
// reruns too): the y-th variant of a wave runs on the y-th of the batch's
// devices, as docs/language.md promises.
func (a *applier) longestFirst(ids []int) {
	dur := map[int]float64{}
	for _, id := range ids {
		if k := a.cache.LastKey(a.g.Config.Name, a.g.Nodes[id].Addr); k != "" {
			if r, ok := a.cache.Lookup(k); ok {
				dur[id] = r.Ended.Sub(r.Started).Seconds()
			}
		}
	}
	sort.SliceStable(ids, func(i, j int) bool { return dur[ids[i]] > dur[ids[j]] })
}

// mustRun reports whether a node runs even though its result is cached:
// --replace, or a strict batch that runs whole.
func (a *applier) mustRun(ns *nodeState) bool {
	if a.opts.Replace[ns.n.Addr] {
		return true
	}
	grp := a.sched.groups[ns.n.Stage.Name]
	return grp != nil && grp.policy.Strict && grp.runAll
}

// cacheable reports whether a prepared node would be taken from the cache.
func (a *applier) cacheable(ns *nodeState) bool {
	if a.opts.Replace[ns.n.Addr] {
		return false
	}
	rec, ok := a.cache.Lookup(ns.key)
	if why, _ := plan.NotNeededStale(ns.n, ns.spec, rec); ok && why != "" {
		return false
	}
	return ok && (!rec.Debug || a.opts.Debug[ns.n.Addr])
}

// settleStrict is prepare's end for a variant of a strict batch: the
// variant waits until every variant of the batch is prepared (or has
// failed or been skipped); then, if all of them are cached, all are taken
// from the cache, and if any must run, all run, so that the batch is
// measured together. It returns true when ns finished inline.
func (a *applier) settleStrict(g *batchGroup, ns *nodeState) bool {
	if g.decided {
		return !g.runAll && a.takeCached(ns)
	}
	var pending []*nodeState
	var runs *nodeState
	for _, id := range g.order {
		o := a.nodes[id]
		if o.status != plan.Pending {
			continue
		}
		if !o.prepared {
			return false // the batch waits for its key
		}
		pending = append(pending, o)
		if runs == nil && !a.cacheable(o) {
			runs = o
		}
	}
	g.decided = true
	mixed := false
	if runs == nil && len(pending) > 0 {
		// All cached: from one launch, or the batch runs again together.
		recs := make([]*store.Record, len(pending))
		for i, o := range pending {
			recs[i], _ = a.cache.Lookup(o.key)
		}
		if mixed = plan.MixedLaunches(recs); mixed {
			runs = pending[0]
		}
	}
	if runs == nil {
		done := false
		for _, o := range pending {
			if a.takeCached(o) {
				done = done || o == ns
			} else if o != ns {
				a.sched.markReady(o.n.ID) // a damaged entry: it runs
			}
		}
		return done
	}
	g.runAll = true
	again := 0
	for _, o := range pending {
		if (o != runs || mixed) && a.cacheable(o) {
			again++
		}
		// Dispatched again, in the batch's order, now that it may start.
		a.sched.markReady(o.n.ID)
	}
	switch {
	case mixed:
		a.emit(&events.BatchRerun{Stage: g.stage, Again: again, Mixed: true})
	case again > 0:
		a.emit(&events.BatchRerun{Stage: g.stage, Node: runs.n.Addr, Again: again})
	}
	return false
}

// admit decides whether a variant of the batch starts now, and on which
// device.
func (g *batchGroup) admit(a *applier, ns *nodeState) bool {
	if g.refused != "" {
		a.fail(ns, failclass.Setup, g.refused)
		return false
	}
	if !g.started {
		// The batch starts once every variant that may still run has its
		// upstreams done. Variants that wait for their own upstreams would
		// otherwise start one by one as each is ready, neither together
		// nor in the order given.
		for _, id := range g.order {
			if o := a.nodes[id]; o.status == plan.Pending && o.waiting.Load() > 0 {
				return false
			}
		}
		if !g.start(a) {
			if g.refused != "" {
				a.fail(ns, failclass.Setup, g.refused)
			}
			return false
		}
	}
	// The batch's order decides which variant goes next.
	for _, id := range g.order {
		o := a.nodes[id]
		if o == ns {
			break
		}
		if o.status == plan.Pending && o.waiting.Load() == 0 && o.prepared {
			return false
		}
	}
	dev, wave, ok := g.slots.next()
	if !ok {
		return false
	}
	lease, _ := a.opts.GPUs.AcquireExact([]int{dev}, gpu.Holder{RunID: a.runID, Node: ns.n.Addr, PID: os.Getpid(), Since: time.Now()})
	if lease == nil {
		a.sched.waitOutside()
		return false
	}
	ns.lease = lease
	g.slots.take(dev, wave, ns.n.ID)
	ns.wave = wave
	g.noteLaunch(a, ns, dev)
	ns.batchLogDir = g.batch.LogDir
	_ = a.j.Write(runlog.Entry{T: runlog.Lease, Node: ns.n.Addr, GPUs: []int{dev}, Wave: ns.wave})
	a.emit(&events.GPULeased{Node: ns.n.Addr, GPUs: []int{dev}})
	a.emit(&events.WaveStarted{Stage: g.stage, Node: ns.n.Addr, Wave: ns.wave, GPU: dev})
	return true
}

// noteLaunch records which launch a variant starting on dev belongs to,
// and raises the in-flight count of every variant of the batch running
// with it.
func (g *batchGroup) noteLaunch(a *applier, ns *nodeState, dev int) {
	ns.launch = &store.Launch{
		Batch: g.batch.ID, BatchStarted: g.batch.Start, GPU: dev, Wave: ns.wave,
		Launched: g.launched, BatchSize: g.policy.Size,
	}
	running := []*nodeState{ns}
	for _, id := range g.order {
		if o := a.nodes[id]; o != ns && o.status == plan.Running {
			running = append(running, o)
		}
	}
	n := int32(len(running))
	for _, o := range running {
		if o.inFlight.Load() < n {
			o.inFlight.Store(n)
		}
	}
}

// launchRecord is the Launch of a variant's record: as it started, with
// the in-flight count it reached.
func (ns *nodeState) launchRecord() *store.Launch {
	if ns.launch == nil {
		return nil
	}
	l := *ns.launch
	l.InFlight = int(ns.inFlight.Load())
	return &l
}

// holdsOtherBatch reports whether this apply holds the machine's batch
// lock for a batch other than g.
func (a *applier) holdsOtherBatch(g *batchGroup) bool {
	for _, o := range a.sched.groups {
		if o != g && o.lock != nil {
			return true
		}
	}
	return false
}

// start takes the machine-wide batch lock and fixes the batch's devices.
func (g *batchGroup) start(a *applier) bool {
	if g.deadline.IsZero() {
		g.deadline = time.Now().Add(a.opts.WaitGPUs)
	}
	if a.opts.GPUs == nil || a.opts.GPUs.Total() == 0 {
		g.refused = "No free GPUs. Wait, do not launch. (" + noGPUs(a.opts.GPUs) + ")"
		return false
	}
	if g.lock == nil {
		lk, other, err := tryBatchLock(a.opts.GPUs.Leases.Path())
		if err != nil {
			g.refused = err.Error()
			return false
		}
		if lk == nil {
			if a.holdsOtherBatch(g) {
				// This apply's own batch of another stage: one batch at a
				// time on the machine, so this one starts after it,
				// whatever --wait-batch says of other applies' batches.
				a.sched.waitOutside()
				return false
			}
			if time.Now().After(g.deadline.Add(a.opts.WaitBatch - a.opts.WaitGPUs)) {
				how := "wait for it, or pass --wait-batch DURATION"
				if a.opts.WaitBatch > 0 {
					how = fmt.Sprintf("it did not end in the %s --wait-batch gave; give a longer --wait-batch", a.opts.WaitBatch)
				}
				g.refused = fmt.Sprintf("another batch is running on this machine: %s. One batch at a time: %s", other, how)
				return false
			}
			a.sched.waitOutside()
			return false
		}
		g.lock = lk
	}
	free := a.opts.GPUs.FreeIndices(context.Background())
	if len(free) == 0 {
		if time.Now().After(g.deadline) && !a.sched.holdsLeases() {
			g.refused = "No free GPUs. Wait, do not launch. (" + busyGPUs(a.opts.GPUs) + "; " + waitedFor("--wait-gpus", a.opts.WaitGPUs, "one") + ")"
			g.releaseLock()
			return false
		}
		a.sched.waitOutside()
		return false
	}
	// The variants that still run here (others may have come from the
	// cache once their keys were known).
	toRun := 0
	for _, id := range g.order {
		if st := a.nodes[id].status; st == plan.Pending || st == plan.Running {
			toRun++
		}
	}
	g.launched = toRun
	g.par = min(len(free), g.policy.Size)
	if g.par <= 0 {
		g.par = min(len(free), toRun)
	}
	g.devices = free[:g.par]
	g.slots = newSlotPolicy(g.policy.Mode, g.devices)
	g.started = true
	var names []string
	debug := false
	for _, id := range g.order {
		names = append(names, a.g.Nodes[id].Inst.Key)
		debug = debug || a.opts.Debug[a.g.Nodes[id].Addr]
	}
	logDir := g.policy.LogDir
	if logDir == "" {
		logDir = filepath.Join("logs", g.stage)
	}
	now := batchNow().UTC()
	g.batch = &runlog.Batch{
		ID: a.runID + "/" + g.stage, Tag: g.policy.Tag, Stage: g.stage, Start: now,
		LogDir: makeBatchLogDir(filepath.Join(a.g.Root, logDir), now), Variants: names, State: BatchRunning, Debug: debug,
	}
	if g.policy.Ledger != "" {
		g.batch.Ledger = ledgerPath(a, g)
	}
	writeBatchLock(g.lock, g.batch, a.runID)
	_ = a.j.Write(runlog.Entry{T: runlog.BatchEvent, Node: addrs.Stage(g.stage).String(), Batch: g.batch, GPUs: g.devices})
	waves := (toRun + g.par - 1) / g.par
	mode := g.policy.Mode
	if mode != "backfill" {
		mode = "waves"
	}
	a.emit(&events.BatchStarted{Stage: g.stage, ID: g.batch.ID, Variants: toRun, GPUs: slices.Clone(g.devices),
		Simulated: a.opts.GPUs.Simulated(), Parallel: g.par, Mode: mode, Waves: waves, LogDir: relTo(a.g.Root, g.batch.LogDir)})
	if g.policy.Ledger != "" {
		ledgerStart(a, g)
	}
	return true
}

// batchNow is the clock a batch's start, and its log folder's name, are
// read from (a test sets it, to start batches in one second).
var batchNow = time.Now

// makeBatchLogDir makes a batch's log folder, base_<UTC YYYYmmdd_HHMMSS>
// of start, and returns its path. The folder is made exclusively, so that
// no two batches share one, whenever they start (two batches of one apply,
// two applies, in one second): where that name is taken (by a folder, a
// file or a link), base_<UTC>_2, _3, ... the first free. Each name tried
// was taken, so the names run out no later than the folder's entries do.
// A folder that cannot be made for another reason (a parent that is a
// file, one that may not be written) is named all the same: the variants'
// logs cannot be opened there, and their failures say why.
func makeBatchLogDir(base string, start time.Time) string {
	stem := base + "_" + start.UTC().Format("20060102_150405")
	_ = os.MkdirAll(filepath.Dir(stem), 0o777)
	for n := 1; ; n++ {
		dir := stem
		if n > 1 {
			dir = stem + "_" + strconv.Itoa(n)
		}
		if err := os.Mkdir(dir, 0o777); !errors.Is(err, fs.ErrExist) {
			return dir
		}
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func relTo(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

func noGPUs(pool *gpu.Pool) string {
	if pool == nil {
		return "no GPU inventory"
	}
	return pool.Describe()
}

// release frees a variant's device; when the batch is over, the batch
// lock goes too.
func (g *batchGroup) release(a *applier, ns *nodeState) {
	if g.slots != nil {
		g.slots.free(ns.n.ID, ns.wave)
	}
	if ns.class != "" {
		g.failed = true
	}
	// ns itself is still marked running; the batch is over when no other
	// variant is pending or running (variants taken from the cache or
	// skipped never pass through here).
	for _, id := range g.order {
		if o := a.nodes[id]; o != ns && (o.status == plan.Pending || o.status == plan.Running) {
			return
		}
	}
	g.end(a, a.res.Interrupted)
}

// batchOrder puts the variants of each batch found in queue in the
// batch's launch order (see batchGroup.order), keeping
// every other node where it is: the scheduler admits them in that order.
func (a *applier) batchOrder(queue []int) []int {
	for _, g := range a.sched.groups {
		rank := make(map[int]int, len(g.order))
		for i, id := range g.order {
			rank[id] = i
		}
		var at, members []int
		for i, id := range queue {
			if _, ok := rank[id]; ok {
				at = append(at, i)
				members = append(members, id)
			}
		}
		sort.SliceStable(members, func(i, j int) bool { return rank[members[i]] < rank[members[j]] })
		for k, i := range at {
			queue[i] = members[k]
		}
	}
	return queue
}

// busyGPUs says why each device is not free, in one line.
func busyGPUs(pool *gpu.Pool) string {
	if pool == nil {
		return "no GPU inventory"
	}
	st, err := pool.Status(context.Background())
	if err != nil {
		return "cannot read the GPUs: " + err.Error()
	}
	// Devices busy for the same reason share one entry.
	var whys []string
	devs := map[string][]int{}
	for _, s := range st {
		if s.Free {
			continue
		}
		if _, ok := devs[s.Why]; !ok {
			whys = append(whys, s.Why)
		}
		devs[s.Why] = append(devs[s.Why], s.Device.Index)
	}
	if len(whys) == 0 {
		return noGPUs(pool)
	}
	parts := make([]string, len(whys))
	for i, why := range whys {
		parts[i] = fmt.Sprintf("GPU%s %s: %s", plural(len(devs[why])), intsString(devs[why]), why)
	}
	return strings.Join(parts, "; ")
}

// end closes the batch: its state in the journal and ledger, the lock.
func (g *batchGroup) end(a *applier, interrupted bool) {
	if g.batch == nil || g.batch.State != BatchRunning {
		g.releaseLock()
		return
	}
	switch {
	case interrupted:
		g.batch.State = BatchInterrupted
	case g.failed:
		g.batch.State = BatchFailed
	default:
		g.batch.State = BatchDone
	}
	_ = a.j.Write(runlog.Entry{T: runlog.BatchEvent, Node: addrs.Stage(g.stage).String(), Batch: g.batch, Status: g.batch.State})
	a.emit(&events.BatchEnded{Stage: g.stage, ID: g.batch.ID, State: g.batch.State})
	if g.policy.Ledger != "" {
		ledgerEnd(a, g)
	}
	g.releaseLock()
}

func (g *batchGroup) releaseLock() {
	if g.lock != nil {
		_ = g.lock.Unlock()
		g.lock = nil
	}
}

type batchLockInfo struct {
	RunID    string    `json:"run_id"`
	PID      int       `json:"pid"`
	Start    time.Time `json:"start"`
	Stage    string    `json:"stage"`
	Variants []string  `json:"variants"`
}

// tryBatchLock takes the machine-wide batch lock (in the lease folder).
// When another process holds it, it returns nil and a description of the
// batch in flight.
func tryBatchLock(leaseDir string) (*flock.Flock, string, error) {
	p := filepath.Join(leaseDir, "batch.lock")
	lk := flock.New(p, store.SharedLock)
	ok, err := lk.TryLock()
	if err != nil {
		return nil, "", fmt.Errorf("batch lock %s: %w", p, err)
	}
	if ok {
		// The lease folder is every user's: so is the lock (best
		// effort, as for the GPU leases; only its creator may).
		_ = os.Chmod(p, 0o666)
		return lk, "", nil
	}
	b, _ := os.ReadFile(p)
	var info batchLockInfo
	if json.Unmarshal(b, &info) != nil {
		return nil, "a batch of another cairn", nil
	}
	return nil, fmt.Sprintf("run %s (pid %d), stage.%s, started %s UTC, variants %s",
		info.RunID, info.PID, info.Stage, info.Start.Format("2006-01-02 15:04:05"), strings.Join(info.Variants, ", ")), nil
}

func writeBatchLock(lk *flock.Flock, b *runlog.Batch, runID string) {
	info := batchLockInfo{RunID: runID, PID: os.Getpid(), Start: b.Start, Stage: b.Stage, Variants: b.Variants}
	data, _ := json.Marshal(info)
	_ = os.WriteFile(lk.Path(), append(data, '\n'), 0o666)
}

// The batch ledger (stages.Ledger) is the markdown file a waves stage names
// in `ledger`: a batch's row is added when it starts and its state set when
// it ends, with a line per failed variant.

func ledgerPath(a *applier, g *batchGroup) string {
	p := g.policy.Ledger
	if !filepath.IsAbs(p) {
		p = filepath.Join(a.g.Root, p)
	}
	return p
}

// ledgerNotice says once which sections cairn added to the ledger.
func ledgerNotice(a *applier, path string, existed bool, added []string) {
	if len(added) == 0 {
		return
	}
	rel := relTo(a.g.Root, path)
	if !existed {
		a.emit(&events.LedgerUpdated{Path: rel, Created: true, Sections: []string{stages.LedgerBatches, stages.LedgerErrors}})
		return
	}
	a.emit(&events.LedgerUpdated{Path: rel, Added: added})
}

func ledgerStart(a *applier, g *batchGroup) {
	b := g.batch
	row := stages.LedgerRow(b.Tag, b.ID, b.Start, relTo(a.g.Root, b.LogDir), b.Variants, b.Debug, BatchRunning)
	path := ledgerPath(a, g)
	ledgerStaleRunning(a, path)
	_, statErr := os.Stat(path)
	added, err := stages.Ledger{Path: path}.AddRow(row)
	if err != nil {
		a.warn("cannot update the ledger %s: %s", g.policy.Ledger, err)
		return
	}
	ledgerNotice(a, path, statErr == nil, added)
}

// ledgerStaleRunning marks INTERRUPTED the ledger's RUNNING rows of runs
// of this cache that are dead: those ledgerInterrupted could not find, the
// run's journal damaged before its batch record. A row of a run this cache
// does not hold (another cache's, or one collected) is left as it is.
func ledgerStaleRunning(a *applier, path string) {
	ids, err := stages.Ledger{Path: path}.RowsInState(BatchRunning)
	if err != nil {
		return
	}
	for _, id := range ids {
		run, _, ok := strings.Cut(id, "/")
		if !ok || run == a.runID {
			continue
		}
		ri, err := runlog.Load(filepath.Join(a.cache.Dir, "runs", run))
		if err != nil || ri.State != "interrupted" {
			continue // not this cache's, still running, or it ended
		}
		if _, err := (stages.Ledger{Path: path}).SetState(id, BatchRunning, BatchInterrupted, nil); err != nil {
			a.warn("cannot mark batch %s interrupted in the ledger %s: %s", id, path, err)
		}
	}
}

// ledgerInterrupted marks the rows of the batches a dead run left RUNNING
// as INTERRUPTED.
func ledgerInterrupted(entries []runlog.Entry) error {
	last := map[string]*runlog.Batch{}
	var order []string
	for _, e := range entries {
		if e.T == runlog.BatchEvent && e.Batch != nil {
			if last[e.Batch.ID] == nil {
				order = append(order, e.Batch.ID)
			}
			last[e.Batch.ID] = e.Batch
		}
	}
	var errs []error
	for _, id := range order {
		b := last[id]
		if b.State != BatchRunning || b.Ledger == "" {
			continue
		}
		if _, err := os.Stat(b.Ledger); err != nil {
			continue // moved or removed since: nothing to mark
		}
		_, err := stages.Ledger{Path: b.Ledger}.SetState(id, BatchRunning, BatchInterrupted, nil)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func ledgerEnd(a *applier, g *batchGroup) {
	b := g.batch
	var errs []string
	for _, id := range g.order {
		ns := a.nodes[id]
		// A skipped variant (its upstream failed) did not fail: the
		// upstream's own failure is what the errors list.
		if ns.status != plan.Skipped && (ns.status == plan.Failed || ns.class != "") {
			errs = append(errs, stages.LedgerError(time.Now(), b.Tag, b.ID, ns.n.Inst.Key, ns.class, ns.message))
		}
	}
	path := ledgerPath(a, g)
	_, statErr := os.Stat(path)
	// The batch's row as it started, in its final state: put back if the
	// file lost it while the batch ran.
	row := stages.LedgerRow(b.Tag, b.ID, b.Start, relTo(a.g.Root, b.LogDir), b.Variants, b.Debug, b.State)
	added, err := stages.Ledger{Path: path}.SetStateOrAdd(b.ID, BatchRunning, b.State, row, errs)
	ledgerNotice(a, path, statErr == nil, added)
	if err != nil {
		a.warn("cannot update the ledger %s: %s", g.policy.Ledger, err)
	}
}
