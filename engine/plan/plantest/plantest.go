// Package plantest makes temporary workspaces with a pipeline file, and
// loads and plans them: for the tests of engine/plan, and of engine, which
// applies what they plan (as net/http/httptest serves net/http's).
package plantest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/fsdigest"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
)

// Workspace is a temporary workspace with a pipeline file, pipeline.hcl,
// and its cache folder, .cairn.
type Workspace struct {
	T     *testing.T
	Root  string
	Cache string
}

// New makes a workspace holding pipeline as pipeline.hcl.
func New(t *testing.T, pipeline string) *Workspace {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "pipeline.hcl"), []byte(pipeline), 0o644))
	return &Workspace{T: t, Root: root, Cache: filepath.Join(root, ".cairn")}
}

// Write writes a file of the workspace, making its folder.
func (w *Workspace) Write(rel, content string) {
	w.T.Helper()
	p := filepath.Join(w.Root, rel)
	require.NoError(w.T, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(w.T, os.WriteFile(p, []byte(content), 0o644))
}

// Read reads a file of the workspace.
func (w *Workspace) Read(rel string) string {
	w.T.Helper()
	b, err := os.ReadFile(filepath.Join(w.Root, rel))
	require.NoError(w.T, err)
	return string(b)
}

// Load loads pipeline.hcl with vars (-var texts), which must load cleanly.
func (w *Workspace) Load(vars ...string) *plan.Loaded {
	w.T.Helper()
	var args []dsl.VarArg
	for _, v := range vars {
		args = append(args, dsl.VarArg{Value: v})
	}
	l, diags := plan.Load(plan.LoadOptions{Path: filepath.Join(w.Root, "pipeline.hcl"), Root: w.Root, Vars: dsl.VarInputs{Args: args}})
	require.False(w.T, diags.HasErrors(), "%s", diags.Error())
	return l
}

// Plan loads pipeline.hcl and plans it against the workspace's cache.
func (w *Workspace) Plan(opts plan.Options, vars ...string) *plan.Plan {
	w.T.Helper()
	l := w.Load(vars...)
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(w.T, err)
	defer c.Close()
	p, diags := plan.Make(l.Graph, c, opts)
	require.False(w.T, diags.HasErrors(), "%s", diags.Error())
	return p
}

// PlanText is Plan's plan as cairn plan shows it.
func (w *Workspace) PlanText(opts plan.Options, vars ...string) string {
	w.T.Helper()
	var b strings.Builder
	require.NoError(w.T, w.Plan(opts, vars...).Render(&b))
	return b.String()
}

// WaitSettled waits until the times of the files at paths can vouch for
// their content (fsdigest.Sig.Racy: they were last changed more than the
// racy window ago), so that an apply's up-to-date memo may list them; at
// most a minute.
func WaitSettled(t testing.TB, paths ...string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for _, p := range paths {
		for {
			fi, err := os.Stat(p)
			require.NoError(t, err)
			if !fsdigest.SigOf(fi).Racy(time.Now()) {
				break
			}
			require.True(t, time.Now().Before(deadline), "%s never settled", p)
			time.Sleep(50 * time.Millisecond)
		}
	}
}
