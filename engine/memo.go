package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cairn-run/cairn/engine/memo"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/stages"
)

// BuildMemo makes the memo of an apply that just ended, or says why there
// is none: a failure or skip, a --target, a stage kind that looks at the
// workspace when planning, or a file changed too recently (or during the
// run) for its stat information to be trusted later.
func BuildMemo(p *plan.Plan, res *ApplyResult, c *store.Cache, identity string) (*memo.Memo, string) {
	switch {
	case res.Failed > 0 || res.Skipped > 0 || res.Interrupted || res.Refused != "":
		return nil, "not every node ended well"
	case p.Excluded > 0:
		return nil, "--target leaves nodes out"
	case len(res.nodes) != len(p.Graph.Nodes):
		return nil, "the run did not reach every node"
	}
	g := p.Graph
	for _, n := range g.Nodes {
		if _, ok := n.Kind.(stages.PurePlanner); !ok {
			return nil, "stage " + n.Stage.Name + "'s kind looks at the workspace when planning"
		}
	}
	results := make([]memo.Result, len(res.nodes))
	for i, ns := range res.nodes {
		inputs, keyed := ns.inputs, ns.shed
		if ns.env != nil {
			inputs, keyed = ns.env.Inputs, true
		}
		r := memo.Result{Addr: ns.n.Addr, Key: ns.key, Record: ns.record, Inputs: inputs,
			Ended: (ns.status == plan.OK || ns.status == plan.Cached) && keyed}
		results[i] = r
	}
	return memo.Build(p, results, c, identity)
}

// ErrMemoStale is ApplyMemo's answer when the cache's index changed since
// the memo was checked (a gc ran meanwhile): nothing was recorded, and the
// caller applies the pipeline in full instead.
var ErrMemoStale = errors.New("the up-to-date check no longer holds")

// MemoApplyOptions configure ApplyMemo.
type MemoApplyOptions struct {
	CacheDir string
	// Events receives what recovery did (package events); nil drops them.
	Events events.Sink
	Args   []string // the command line, for the journal
}

// ApplyMemo is an apply of a pipeline the memo vouches for: every node is
// taken from the cache as it is. It does what such an apply does besides
// evaluating — recovering what earlier runs left, and journaling the run —
// and returns the same result. The run is journaled as one line of the
// up-to-date log (runlog.AppendUpToDate), not in a run folder: it has
// nothing else to record.
func ApplyMemo(ctx context.Context, m *memo.Memo, opts MemoApplyOptions) (*ApplyResult, error) {
	start := time.Now()
	a := &applier{pipeline: m.Pipeline, cache: &store.Cache{Dir: opts.CacheDir}, ev: newSerial(opts.Events), res: &ApplyResult{Cached: len(m.Nodes)}}
	release, _, err := a.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	if !m.IndexHolds(opts.CacheDir) {
		// A gc ran between the up-to-date check and the use lock (the
		// apply waited for it): the records the memo vouched for may
		// be gone.
		return nil, ErrMemoStale
	}
	res := a.res
	res.RunID = runlog.NewRunID()
	res.Dur = time.Since(start)
	err = runlog.AppendUpToDate(opts.CacheDir, runlog.UpToDateRun{
		RunID: res.RunID, Time: start.UTC(), Pipeline: m.Pipeline, PID: os.Getpid(),
		Args: opts.Args, Cached: len(m.Nodes), Duration: res.Dur.Seconds(),
	})
	if err != nil {
		return nil, fmt.Errorf("cannot record this apply (%w): nothing needed to run, but it is not recorded; make room on the cache's disk, and apply again", err)
	}
	return res, nil
}
