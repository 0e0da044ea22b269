package engine

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/plan/plantest"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/ui"
)

// inProcess is an executor that runs each spec in cairn's own process,
// by run, before Submit returns; the rest is Local's.
type inProcess struct {
	executor.Local
	name string
	run  func(*executor.Spec) (*process.Result, error)
}

func (x inProcess) Name() string { return x.name }

func (x inProcess) Submit(_ context.Context, spec *executor.Spec) (executor.Job, error) {
	res, err := x.run(spec)
	return executor.Finished(process.JobRef{Executor: x.name}, res, err), nil
}

// workspace is a plantest workspace that can also be applied.
type workspace struct{ *plantest.Workspace }

func newWorkspace(t *testing.T, pipeline string) *workspace {
	t.Helper()
	return &workspace{plantest.New(t, pipeline)}
}

type applyRun struct {
	res *ApplyResult
	out string
}

func (w *workspace) apply(opts ApplyOptions, vars ...string) applyRun {
	w.T.Helper()
	l := w.Load(vars...)
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(w.T, err)
	defer c.Close()
	p, diags := plan.Make(l.Graph, c, plan.Options{})
	require.False(w.T, diags.HasErrors(), "%s", diags.Error())
	var sb strings.Builder
	var sink events.Sink = ui.NewTerminal(ui.Options{Progress: &sb})
	if opts.Events != nil {
		// The test's own sink sees the events too.
		sink = events.Fanout{sink, opts.Events}
	}
	opts.Plan, opts.Cache, opts.Events, opts.NoSync = p, c, sink, true
	if opts.Parallelism == 0 {
		opts.Parallelism = 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Apply(ctx, opts)
	require.NoError(w.T, err, sb.String())
	return applyRun{res: res, out: sb.String()}
}

var _ = io.Discard

// nodeLog is the per-node log file stem inside a run folder; the node's
// scratch folder (runs/<id>/out/<stem>) has the same name. It is
// addrs.Node.FileName, which differs for every two addresses.
func nodeLog(runDir, addr string, attempt int) string {
	return runlog.LogStem(runDir, runlog.NodeLogName(addr, attempt))
}
