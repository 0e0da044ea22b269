package engine

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/stages"
)

// inProcess is an executor that runs each spec in cairn's own process,
// by run, before Submit returns; the rest is Local's.
type inProcess struct {
	executor.Local
	name string
	run  func(*executor.Spec) (*stages.ProcResult, error)
}

func (x inProcess) Name() string { return x.name }

func (x inProcess) Submit(_ context.Context, spec *executor.Spec) (executor.Job, error) {
	res, err := x.run(spec)
	return executor.Finished(executor.JobRef{Executor: x.name}, res, err), nil
}

// workspace is a temporary workspace with a pipeline file.
type workspace struct {
	t     *testing.T
	root  string
	cache string
}

func newWorkspace(t *testing.T, pipeline string) *workspace {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "pipeline.hcl"), []byte(pipeline), 0o644))
	return &workspace{t: t, root: root, cache: filepath.Join(root, ".cairn")}
}

func (w *workspace) write(rel, content string) {
	w.t.Helper()
	p := filepath.Join(w.root, rel)
	require.NoError(w.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(w.t, os.WriteFile(p, []byte(content), 0o644))
}

func (w *workspace) read(rel string) string {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.root, rel))
	require.NoError(w.t, err)
	return string(b)
}

func (w *workspace) load(vars ...string) *Loaded {
	w.t.Helper()
	var args []dsl.VarArg
	for _, v := range vars {
		args = append(args, dsl.VarArg{Value: v})
	}
	l, diags := Load(LoadOptions{Path: filepath.Join(w.root, "pipeline.hcl"), Root: w.root, Vars: dsl.VarInputs{Args: args}})
	require.False(w.t, diags.HasErrors(), "%s", diags.Error())
	return l
}

func (w *workspace) plan(opts PlanOptions, vars ...string) *Plan {
	w.t.Helper()
	l := w.load(vars...)
	c, err := store.Open(w.cache, store.Options{NoSync: true})
	require.NoError(w.t, err)
	defer c.Close()
	p, diags := MakePlan(l.Graph, c, opts)
	require.False(w.t, diags.HasErrors(), "%s", diags.Error())
	return p
}

type applyRun struct {
	res *ApplyResult
	out string
}

func (w *workspace) apply(opts ApplyOptions, vars ...string) applyRun {
	w.t.Helper()
	l := w.load(vars...)
	c, err := store.Open(w.cache, store.Options{NoSync: true})
	require.NoError(w.t, err)
	defer c.Close()
	p, diags := MakePlan(l.Graph, c, PlanOptions{})
	require.False(w.t, diags.HasErrors(), "%s", diags.Error())
	var sb strings.Builder
	opts.Plan, opts.Cache, opts.Progress, opts.NoSync = p, c, &sb, true
	if opts.Parallelism == 0 {
		opts.Parallelism = 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Apply(ctx, opts)
	require.NoError(w.t, err, sb.String())
	return applyRun{res: res, out: sb.String()}
}

var _ = io.Discard
