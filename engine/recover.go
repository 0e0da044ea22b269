package engine

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/storage/wal"
)

// interruptedNode is a node that was running when an earlier run died.
type interruptedNode struct {
	Addr  string
	RunID string
	When  time.Time
	// Unsure: the run's journal is damaged, and the node, which it
	// planned, has no record there: its started record may be the one
	// lost, so whether it was cut short cannot be told.
	Unsure bool
}

// why says, for a refusal, how n was interrupted (or may have been).
func (n interruptedNode) why() string {
	if n.Unsure {
		return fmt.Sprintf("run %s planned it and was interrupted, and its journal is damaged where the node's record may have been: whether it was running cannot be told", n.RunID)
	}
	return "interrupted in run " + n.RunID
}

// recoverRuns looks at earlier runs of this cache whose process is gone
// without a run_end record (killed, crashed, power loss): it kills what
// is left of their nodes' process groups (children die with cairn through
// PR_SET_PDEATHSIG; grandchildren may not) and returns, per address of
// this pipeline, the nodes that were in flight. Leftovers of other
// pipelines' dead runs in the same cache are reaped too.
func (a *applier) recoverRuns() (map[string]interruptedNode, error) {
	runs, err := runlog.Unfinished(a.cache.Dir)
	if err != nil {
		return nil, fmt.Errorf("reading earlier runs: %w", err)
	}
	// Oldest first, so a later run's events override an earlier one's.
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID < runs[j].ID })
	var lockLeft map[string]map[int]bool
	for _, r := range runs {
		// Leftovers of every dead run of this cache are reaped: they may
		// hold node locks other pipelines need. Interruptions are this
		// pipeline's only.
		switch r.State {
		case "interrupted":
			a.reapRun(r, &lockLeft)
		case "running":
			// Its nodes hold their keys' locks; should it die while a node
			// of this apply waits for one, its jobs are looked at then
			// (recoverFreed).
			a.liveRuns[r.ID] = true
		}
	}
	if n := len(lockLeft[""]); n > 0 {
		// Leftovers that lost their CAIRN_RUN_ID: no run to name.
		a.info("killed %d process(es) left holding node locks by runs that are gone", n)
	}
	out := interruptedIn(runs, a.pipeline)
	var addrs, unsure []string
	for addr, n := range out {
		if n.Unsure {
			unsure = append(unsure, addr)
		} else {
			addrs = append(addrs, addr)
		}
	}
	if len(addrs) > 0 {
		sort.Strings(addrs)
		a.info("%d node(s) were running when an earlier apply stopped: %s", len(addrs), strings.Join(addrs, ", "))
	}
	if len(unsure) > 0 {
		sort.Strings(unsure)
		a.info("%d node(s) may have been running when an earlier apply stopped (its journal is damaged where their records may have been): %s", len(unsure), strings.Join(unsure, ", "))
	}
	return out, nil
}

// reapRun deals, once, with what the dead run r left: the processes
// holding node locks for it (lockLeft, looked for at the first call) and
// its nodes' jobs in flight, which their executors end or keep for their
// nodes' next run; its batches in the ledger are marked interrupted. A
// marker in its folder says it was done.
func (a *applier) reapRun(r *runlog.RunInfo, lockLeft *map[string]map[int]bool) {
	marker := reapedMarker(r)
	if _, err := os.Stat(marker); err == nil {
		return
	}
	// Processes holding node locks for dead runs, whether the journal
	// names them or not (see store.ReapLockHolders): looked for once.
	if *lockLeft == nil {
		*lockLeft = store.ReapLockHolders(a.cache.Dir, "")
	}
	// A process both holding a node lock and in a node's group is
	// counted once.
	killed := map[string]bool{}
	for pid := range (*lockLeft)[r.ID] {
		killed[strconv.Itoa(pid)] = true
	}
	ended, all := a.recoverJobs(r, openJobs(r))
	for _, id := range ended {
		killed[id] = true
	}
	if n := len(killed); n > 0 {
		a.info("killed %d process(es) left running by interrupted run %s", n, r.ID)
	}
	if err := ledgerInterrupted(r.Entries); err != nil {
		a.warn("cannot mark interrupted batches in the ledger: %s", err)
	}
	// The space its journal reserved ahead goes, so that readers need not
	// skip it each time. (The journal's writer held the run's lock, free
	// now: TrimTail's journal.lock has no writer to wait for.)
	_, _ = wal.TrimTail(filepath.Join(r.Dir, "journal"))
	if !all {
		// Jobs left with an executor this apply does not use: the next
		// apply that uses it reaps the run again, and re-attaches.
		return
	}
	_ = os.WriteFile(marker, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o666)
}

// recoverFreed looks again at the runs that were alive when this apply
// began, or held a key a node of it waited for: a node lock frees when
// its holder dies, and the dead run's job for that node may still run (a
// Slurm job outlives cairn). Each run found dead is reaped as at the
// start (reapRun): its jobs go to their executors, so that the node that
// takes the lock re-attaches to its job instead of submitting another.
func (a *applier) recoverFreed() {
	var lockLeft map[string]map[int]bool
	for _, id := range slices.Sorted(maps.Keys(a.liveRuns)) {
		dir := filepath.Join(a.cache.Dir, "runs", id)
		if runlog.Alive(dir) {
			continue
		}
		delete(a.liveRuns, id)
		r, err := runlog.Load(dir)
		if err != nil || r.State != "interrupted" {
			continue // it ended, and left nothing running
		}
		a.reapRun(r, &lockLeft)
	}
}

// recoverJobs ends what is left of the jobs of a dead run r's nodes in
// flight (open), each through the executor that started it (by the name
// in its reference), in the order of the nodes' addresses, and returns
// what the executors ended, and whether every job went to its executor.
// The nodes of a job whose executor this apply does not use go to
// a.elsewhere. A started record written before job references names a
// local process group by its numbers.
func (a *applier) recoverJobs(r *runlog.RunInfo, open []runlog.Entry) (ended []string, all bool) {
	byExecutor := map[string][]process.JobRef{}
	nodesOf := map[string][]string{}
	for _, e := range open {
		var ref process.JobRef
		switch {
		case e.Job != nil:
			ref = *e.Job
		case e.PGID > 0:
			ref = executor.LocalRef(e.PGID, e.ProcTick)
		default:
			continue // work inside cairn's own process: it died with it
		}
		byExecutor[ref.Executor] = append(byExecutor[ref.Executor], ref)
		nodesOf[ref.Executor] = append(nodesOf[ref.Executor], e.Node)
		if a.executorNamed(ref.Executor) == nil {
			if a.elsewhere == nil {
				a.elsewhere = map[string]string{}
			}
			what := "its job"
			if ref.ID != "" {
				what += " " + ref.ID
			}
			a.elsewhere[e.Node] = fmt.Sprintf("%s of executor %q, left by interrupted run %s, may still be running", what, ref.Executor, r.ID)
		}
	}
	all = true
	for _, name := range slices.Sorted(maps.Keys(byExecutor)) {
		x := a.executorNamed(name)
		if x == nil {
			all = false
			a.warn("cannot end the jobs of executor %q left by interrupted run %s (%s): this apply does not use it; their nodes are not run here, and an apply with that executor re-attaches to them",
				name, r.ID, strings.Join(slices.Compact(slices.Sorted(slices.Values(nodesOf[name]))), ", "))
			continue
		}
		ended = append(ended, x.Recover(a.ctx, byExecutor[name])...)
	}
	return ended, all
}

// executorNamed is the apply's executor of that name; the local one is
// always at hand. (An apply answered by the up-to-date check has no
// other: see ClusterJobsLeft.)
func (a *applier) executorNamed(name string) executor.Executor {
	switch {
	case a.opts.Executor != nil && a.opts.Executor.Name() == name:
		return a.opts.Executor
	case name == (executor.Local{}).Name():
		return executor.Local{}
	}
	return nil
}

// reapedMarker is the file in a dead run's folder that says reapRun was
// done with it.
func reapedMarker(r *runlog.RunInfo) string { return filepath.Join(r.Dir, "reaped") }

// ClusterJobsLeft reports whether a dead run of the cache at cacheDir,
// not reaped yet, left jobs in flight on an executor other than the
// local one (a Slurm array): only a full apply, with that executor,
// re-attaches to them or ends them, so the up-to-date check leaves such
// an apply to the full path. It reports true when the runs cannot be
// read, for the full path to say why.
func ClusterJobsLeft(cacheDir string) bool {
	runs, err := runlog.Unfinished(cacheDir)
	if err != nil {
		return true
	}
	for _, r := range runs {
		if r.State != "interrupted" {
			continue
		}
		if _, err := os.Stat(reapedMarker(r)); err == nil {
			continue
		}
		for _, e := range openJobs(r) {
			if e.Job != nil && e.Job.Executor != (executor.Local{}).Name() {
				return true
			}
		}
	}
	return false
}

// openJobs are the started records of r's nodes in flight, in the order
// of their addresses: one a node, and one a replica of a service node
// (each replica is a job of its own). A node whose job was left running
// at an interrupt (--leave-jobs; its failed record says so) is in flight
// too: the next apply re-attaches to that job.
func openJobs(r *runlog.RunInfo) []runlog.Entry {
	type job struct {
		node    string
		replica int
	}
	open := map[job]runlog.Entry{}
	for _, e := range r.Entries {
		switch e.T {
		case runlog.Started:
			open[job{e.Node, e.Replica}] = e
		case runlog.Failed, runlog.Finished, runlog.Cached, runlog.Skipped:
			if e.Left {
				continue // a failed record of a job left running
			}
			for j := range open {
				if j.node == e.Node {
					delete(open, j)
				}
			}
		}
	}
	jobs := slices.SortedFunc(maps.Keys(open), func(a, b job) int {
		if c := strings.Compare(a.node, b.node); c != 0 {
			return c
		}
		return a.replica - b.replica
	})
	out := make([]runlog.Entry, len(jobs))
	for i, j := range jobs {
		out[i] = open[j]
	}
	return out
}

// openNodes are the nodes of run r started and not ended, by address.
func openNodes(r *runlog.RunInfo) map[string]runlog.Entry {
	open := map[string]runlog.Entry{}
	for _, e := range r.Entries {
		switch e.T {
		case runlog.Started:
			open[e.Node] = e
		case runlog.Finished, runlog.Failed, runlog.Cached, runlog.Skipped:
			delete(open, e.Node)
		}
	}
	return open
}

// interruptedIn is, per address of pipeline, the nodes whose last event in
// runs (oldest first) is an interruption: killed while they ran (in a run
// that died), or stopped by an interrupt (Ctrl-C, SIGTERM). Either way
// their work was cut short.
func interruptedIn(runs []*runlog.RunInfo, pipeline string) map[string]interruptedNode {
	last := map[string]runlog.Entry{}
	lastRun := map[string]string{}
	unsure := map[string]bool{}
	for _, r := range runs {
		if r.Pipeline != pipeline {
			continue
		}
		ends := nodeEnds(r)
		for addr, e := range ends {
			last[addr] = e
			lastRun[addr] = r.ID
			delete(unsure, addr)
		}
		if r.State == "interrupted" && r.Damaged != "" {
			// A node the run planned and has no record of at all may
			// have started: its started record may be the one lost.
			for _, e := range r.Entries {
				if e.T == runlog.Planned && e.Node != "" {
					if _, ok := ends[e.Node]; !ok {
						last[e.Node] = runlog.Entry{T: "interrupted", Node: e.Node, Time: r.Start}
						lastRun[e.Node] = r.ID
						unsure[e.Node] = true
					}
				}
			}
		}
	}
	out := map[string]interruptedNode{}
	for addr, e := range last {
		if cutShort(e) {
			out[addr] = interruptedNode{Addr: addr, RunID: lastRun[addr], When: e.Time, Unsure: unsure[addr]}
		}
	}
	return out
}

// nodeEnds is, per address, the last event of run r for the node: its
// last record (planned and lease records aside) or, where r died with the
// node started and not ended, an "interrupted" event at the run's start,
// marked (OnInterrupt) as the node's started record is.
func nodeEnds(r *runlog.RunInfo) map[string]runlog.Entry {
	last := map[string]runlog.Entry{}
	for _, e := range r.Entries {
		if e.Node != "" && e.T != runlog.Planned && e.T != runlog.Lease {
			last[e.Node] = e
		}
	}
	if r.State == "interrupted" {
		for addr, started := range openNodes(r) {
			last[addr] = runlog.Entry{T: "interrupted", Node: addr, Time: r.Start, OnInterrupt: started.OnInterrupt}
		}
	}
	return last
}

// cutShort reports whether e, a node's last event in a run (nodeEnds), is
// an interruption. A job left running (--leave-jobs) was not cut short:
// the next apply re-attaches to it.
func cutShort(e runlog.Entry) bool {
	return e.T == "interrupted" || e.T == runlog.Failed && e.Class == failclass.Interrupted && !e.Left
}

// refusedAsInterrupted is the interruption for which apply refuses to run
// pn: its stage declares on_interrupt = "fail", an earlier run left it
// interrupted, and it is neither cached nor replaced (--replace).
func refusedAsInterrupted(pn *plan.PlannedNode, in map[string]interruptedNode, replaced bool) (interruptedNode, bool) {
	if pn.Skipped || pn.Node.Stage.OnInterrupt != "fail" || replaced || pn.Action == plan.ActCached {
		return interruptedNode{}, false
	}
	it, ok := in[pn.Node.Addr]
	return it, ok
}

// checkInterrupted refuses to rerun, silently, nodes of stages that
// declare on_interrupt = "fail" and were interrupted: the user must ask
// with --replace.
func (a *applier) checkInterrupted(in map[string]interruptedNode) error {
	var refuse, elsewhere []string
	for _, pn := range a.opts.Plan.Nodes {
		if it, ok := refusedAsInterrupted(pn, in, a.opts.Replace[pn.Node.Addr]); ok {
			refuse = append(refuse, fmt.Sprintf("%s (%s)", pn.Node.Addr, it.why()))
		}
		if why, ok := a.elsewhere[pn.Node.Addr]; ok && !pn.Skipped && pn.Action != plan.ActCached && !a.opts.Replace[pn.Node.Addr] {
			elsewhere = append(elsewhere, fmt.Sprintf("%s (%s)", pn.Node.Addr, why))
		}
	}
	if len(refuse) == 0 && len(elsewhere) > 0 {
		sort.Strings(elsewhere)
		return fmt.Errorf("%w: a node whose job may still run under another executor is not run here, where it would run twice.\nLeft running: %s\nApply with the executor that started them (it re-attaches to them); or, once they are cancelled, pass --replace for each node to run it here",
			ErrRefused, strings.Join(elsewhere, ", "))
	}
	if len(refuse) == 0 {
		return nil
	}
	sort.Strings(refuse)
	var flags []string
	for _, r := range refuse {
		addr, _, _ := strings.Cut(r, " (")
		flags = append(flags, fmt.Sprintf("--replace '%s'", addr))
	}
	return fmt.Errorf("%w: %s declares on_interrupt = \"fail\": an interrupted node is never restarted silently.\nInterrupted: %s\nTo run it again from the start, pass %s",
		ErrRefused, "its stage", strings.Join(refuse, ", "), strings.Join(flags, " "))
}

// NoteRefusals marks, in a plan to be shown, the nodes apply would refuse
// to start (PlannedNode.Refusal), unless cached or replaced: those of
// stages declaring on_interrupt = "fail" that an earlier run of the cache
// at cacheDir left interrupted (apply then starts nothing). Those whose
// kind finds in the workspace that it will refuse (stages.PlanRefuser)
// the plan marks itself, as it plans the nodes below them. It only reads
// the journals: nothing is reaped.
func NoteRefusals(p *plan.Plan, cacheDir string) error {
	runs, err := runlog.Unfinished(cacheDir)
	if err != nil {
		return fmt.Errorf("reading earlier runs: %w", err)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID < runs[j].ID })
	in := interruptedIn(runs, p.Pipeline)
	for _, pn := range p.Nodes {
		replaced := slices.ContainsFunc(pn.Reasons, func(r string) bool { return strings.HasPrefix(r, "replace requested") })
		if it, ok := refusedAsInterrupted(pn, in, replaced); ok {
			pn.Refusal = fmt.Sprintf("%s, and its stage declares on_interrupt = \"fail\": apply refuses to restart it silently (--replace '%s' runs it again from the start)", it.why(), pn.Node.Addr)
		}
	}
	return nil
}

// checkGPUNeeds refuses nodes that ask for more GPUs than the machine has,
// alone (a service: all its replicas) or with the services they read,
// before anything starts.
func (a *applier) checkGPUNeeds() error {
	for _, pn := range a.opts.Plan.Nodes {
		if why := gpuRefusal(a.opts.Plan, pn, a.opts.GPUs); why != "" {
			return fmt.Errorf("%w: %s %s", ErrRefused, pn.Node.Addr, why)
		}
		if why := limitRefusal(pn, a.opts.NodeLimit); why != "" {
			return fmt.Errorf("%w: %s %s", ErrRefused, pn.Node.Addr, why)
		}
	}
	return nil
}

// NodeLimit says why a node asking for cpus and memMiB can never run
// where the executor runs it (the Slurm partition's largest node); ""
// when it can.
type NodeLimit func(cpus, memMiB int) string

// limitRefusal is limit's answer for pn, "" where pn will not run or no
// limit is known.
func limitRefusal(pn *plan.PlannedNode, limit NodeLimit) string {
	if limit == nil || !willRun(pn) || pn.Spec == nil {
		return ""
	}
	return limit(pn.Spec.Common.CPUs, pn.Spec.Common.MemMiB)
}

// NoteLimitRefusals marks, in a plan to be shown, the nodes apply refuses
// to start for asking more than limit allows, unless marked refused
// already.
func NoteLimitRefusals(p *plan.Plan, limit NodeLimit) {
	for _, pn := range p.Nodes {
		if pn.Refusal == "" {
			pn.Refusal = limitRefusal(pn, limit)
		}
	}
}

// NoteGPURefusals marks, in a plan to be shown, the nodes for which apply
// refuses to start (checkGPUNeeds) with the GPUs of pool (nil: none), unless
// marked refused already.
func NoteGPURefusals(p *plan.Plan, pool *gpu.Pool) {
	for _, pn := range p.Nodes {
		if pn.Refusal != "" {
			continue
		}
		if why := gpuRefusal(p, pn, pool); why != "" {
			pn.Refusal = why
		}
	}
}

// NeedsGPUs reports whether a node that p runs asks for GPUs.
func NeedsGPUs(p *plan.Plan) bool {
	return slices.ContainsFunc(p.Nodes, func(pn *plan.PlannedNode) bool {
		n, _ := gpusAsked(pn)
		return n > 0
	})
}

// gpusAsked is how many GPUs pn asks for (a service: all its replicas),
// and whether it will run at all.
func gpusAsked(pn *plan.PlannedNode) (n int, runs bool) {
	if !willRun(pn) || pn.Spec == nil {
		return 0, false
	}
	return max(pn.Spec.Common.GPUs, nodeGPUs(pn.Node, pn.Spec)), true
}

// gpuRefusal says, after the node's address, why pn needs more GPUs than
// pool has (nil: none), alone or with the services it reads; "" when it
// does not, or will not run.
func gpuRefusal(p *plan.Plan, pn *plan.PlannedNode, pool *gpu.Pool) string {
	need, runs := gpusAsked(pn)
	if !runs {
		return ""
	}
	total := 0
	if pool != nil {
		total = pool.Total()
	}
	if need > total {
		where := "this machine has none"
		if pool != nil {
			where = pool.Describe()
		}
		if pool != nil && pool.Remote() {
			return fmt.Sprintf("asks for %d GPU(s); %s. Name a partition with more in the pipeline's executor \"slurm\" block, or run it where there are GPUs with --executor local", need, where)
		}
		return fmt.Sprintf("asks for %d GPU(s); %s. Run it where there are GPUs, or try CAIRN_GPUS=sim:%d for a simulated run", need, where, need)
	}
	if total > 0 {
		return togetherRefusal(p, pn, pool)
	}
	return ""
}
