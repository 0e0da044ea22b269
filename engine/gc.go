package engine

import (
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
)

// GCResult says what GC did: the cache's gc, and the runs it kept though
// they were old enough to go.
type GCResult struct {
	*store.GCResult
	// KeptRuns is how many run folders old enough to go were kept, because
	// apply reads the refusals of Refused from them (refusalRuns).
	KeptRuns int
	// Refused are the interrupted nodes apply refuses to restart silently
	// (their stage declared on_interrupt = "fail"), by pipeline and
	// address: set where KeptRuns is not 0.
	Refused []RefusedNode
	// LeftRunning are the runs, old enough to go, whose folders were kept
	// because processes their nodes started still run: apply reads from
	// the folder what to stop (recoverRuns), and stops it.
	LeftRunning []string
}

// RefusedNode is a node of a stage declaring on_interrupt = "fail" that
// run RunID left interrupted, and that has not run since.
type RefusedNode struct {
	Pipeline, Addr, RunID string
}

// GC is cairn gc: store.GC (old records, blobs no record references, the
// index compacted) with the runs of the cache folder, which the cache
// itself does not know: the run folders and the lines of the up-to-date log
// older than opts.OlderThan go too, except the run folders that the
// refusal to restart an interrupted node is read from.
func GC(c *store.Cache, opts store.GCOptions) (*GCResult, error) {
	res := &GCResult{}
	opts.Runs = func(dir string, olderThan time.Duration, dryRun bool) (int, error) {
		n, kept, refused, left, err := trimRuns(dir, olderThan, dryRun)
		res.KeptRuns, res.LeftRunning = kept, left
		if kept > 0 {
			res.Refused = refused
		}
		return n, err
	}
	r, err := store.GC(c, opts)
	res.GCResult = r
	return res, err
}

// trimRuns removes the runs of the cache folder dir that ended longer
// than olderThan ago (runlog.RunInfo.Ended), oldest first, and returns how many it
// removed (or, with dryRun, would), and how many of them it kept for the
// refusals it returns (refusalRuns). Oldest first: a gc killed on the way
// leaves the newer runs, so that a node's last event in the runs left is
// still its last. A run that died leaving processes running keeps its
// folder too (left): the next apply reads there what to stop (its
// journal names the nodes' process groups), and stops it; gone, nothing
// would, and they would hold their nodes' locks and GPUs as long as they
// run.
func trimRuns(dir string, olderThan time.Duration, dryRun bool) (removed, kept int, refused []RefusedNode, left []string, err error) {
	keep, refused, err := refusalRuns(dir)
	if err != nil {
		return 0, 0, nil, nil, fmt.Errorf("reading the runs' journals, which say which runs hold interruptions that refuse a restart: %w (no run folder was removed)", err)
	}
	runs, _ := runlog.List(dir)
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID < runs[j].ID })
	var procs map[string][]int
	for _, r := range runs {
		// Aged by its end, as records are by their node's: a run that
		// ran longer than olderThan is not removed the moment it ends.
		if end := r.Ended(); r.Dir == "" || r.State == "running" || end.IsZero() || time.Since(end) <= olderThan {
			continue
		}
		if keep[r.ID] {
			kept++
			continue
		}
		if r.State == "interrupted" {
			if procs == nil {
				procs = store.RunProcesses()
			}
			if len(procs[r.ID]) > 0 {
				left = append(left, r.ID)
				continue
			}
		}
		removed++
		if !dryRun {
			_ = os.RemoveAll(r.Dir)
		}
	}
	// The runs the up-to-date check answered: lines of one log.
	m, err := runlog.TrimUpToDate(dir, time.Now().Add(-olderThan), dryRun)
	return removed + m, kept, refused, left, err
}

// refusalRuns returns the runs of the cache folder dir that apply's refusal
// to restart interrupted nodes is read from, by id, and those nodes: the
// nodes whose last event, in the runs apply reads (runlog.Unfinished), is
// an interruption of a node whose stage declared on_interrupt = "fail"
// (the journal says so: Entry.OnInterrupt). Kept, with those runs, are
// the runs apply then reads the same from, and no other refusal:
//
//   - for every other node cut short in a kept run, the run of its last
//     event (a node --replace ran again since is not refused again);
//   - where a kept run ended with its run_end record (ok, failed), the
//     first run apply reads: runlog.Unfinished skips the runs that ended
//     so before any that did not.
func refusalRuns(dir string) (map[string]bool, []RefusedNode, error) {
	runs, err := runlog.Unfinished(dir)
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID < runs[j].ID })
	type node struct{ pipeline, addr string }
	ends := make([]map[string]runlog.Entry, len(runs))
	last := map[node]int{}
	for i, r := range runs {
		if r.Pipeline == "" {
			continue // apply reads no refusal from a run of no pipeline
		}
		ends[i] = nodeEnds(r)
		for addr := range ends[i] {
			last[node{r.Pipeline, addr}] = i
		}
	}
	keep := map[int]bool{}
	var todo []int
	add := func(i int) {
		if !keep[i] {
			keep[i] = true
			todo = append(todo, i)
		}
	}
	var refused []RefusedNode
	for n, i := range last {
		if e := ends[i][n.addr]; cutShort(e) && e.OnInterrupt == "fail" {
			refused = append(refused, RefusedNode{Pipeline: n.pipeline, Addr: n.addr, RunID: runs[i].ID})
			add(i)
			if runs[i].State != "interrupted" {
				add(0)
			}
		}
	}
	for len(todo) > 0 {
		i := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for addr, e := range ends[i] {
			if j := last[node{runs[i].Pipeline, addr}]; j != i && cutShort(e) {
				add(j)
			}
		}
	}
	ids := map[string]bool{}
	for i := range keep {
		ids[runs[i].ID] = true
	}
	sort.Slice(refused, func(i, j int) bool {
		a, b := refused[i], refused[j]
		if a.Pipeline != b.Pipeline {
			return a.Pipeline < b.Pipeline
		}
		return a.Addr < b.Addr
	})
	return ids, refused, nil
}
