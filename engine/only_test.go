package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
)

const onlyPipeline = `
pipeline "phases" {}

stage "command" "a" {
  run     = ["sh", "-c", "cat in.txt > a.txt"]
  inputs  = ["in.txt"]
  outputs = ["a.txt"]
}

stage "command" "b" {
  after   = [stage.a]
  run     = ["sh", "-c", "cat a.txt a.txt > b.txt"]
  outputs = ["b.txt"]
}

stage "command" "c" {
  after   = [stage.b]
  run     = ["sh", "-c", "wc -c < b.txt > c.txt"]
  outputs = ["c.txt"]
}
`

// A prerequisite whose run failed is not said to have "not run".
func TestOnlyNamesAFailedPrerequisiteAsNotCached(t *testing.T) {
	w := newWorkspace(t, strings.Replace(onlyPipeline, `"cat in.txt > a.txt"`, `"exit 3"`, 1))
	w.Write("in.txt", "x")
	res := w.apply(ApplyOptions{})
	require.Equal(t, 1, res.res.Failed, res.out)
	_, refused := w.onlyPlan("stage.c")
	assert.Contains(t, refused, "they need stage.a (it writes a.txt), which is not in the cache (it has not run, or it failed)")
	assert.NotContains(t, refused, "has not run:")
}

// onlyPlan plans with --only; it returns the refusals' text, "" for none.
func (w *workspace) onlyPlan(targets ...string) (*plan.Plan, string) {
	w.T.Helper()
	l := w.Load()
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(w.T, err)
	defer c.Close()
	p, diags := plan.Make(l.Graph, c, plan.Options{Targets: targets, Only: true})
	if diags.HasErrors() {
		var all []string
		for _, d := range diags {
			all = append(all, d.Summary+": "+d.Detail)
		}
		return nil, strings.Join(all, "\n")
	}
	return p, ""
}

// --only runs the targets alone: a target whose upstream is not cached is
// refused, naming it, the files it writes and why it would run; once the
// upstreams are cached the targets run from them, and a changed upstream
// refuses again.
func TestOnlyRunsTheTargetsAlone(t *testing.T) {
	w := newWorkspace(t, onlyPipeline)
	w.Write("in.txt", "x")
	_, refused := w.onlyPlan("stage.c")
	assert.Contains(t, refused, "they need stage.a (it writes a.txt), which is not in the cache (it has not run, or it failed)")
	assert.Contains(t, refused, "they need stage.b (it writes b.txt)")
	assert.NotContains(t, refused, "need stage.c")

	// Two targets: b may run as c's upstream; a must be cached.
	_, refused = w.onlyPlan("stage.b", "stage.c")
	assert.Contains(t, refused, "stage.a")
	assert.NotContains(t, refused, "need stage.b")

	_, refused = w.onlyPlan()
	assert.Contains(t, refused, "--only without --target")

	w.apply(ApplyOptions{})
	p, refused := w.onlyPlan("stage.c")
	require.Empty(t, refused)
	assert.Equal(t, 0, p.ToRun, "all cached")

	w.Write("in.txt", "changed")
	_, refused = w.onlyPlan("stage.c")
	assert.Contains(t, refused, "they need stage.a (it writes a.txt), which would run")
	assert.Contains(t, refused, "they need stage.b (it writes b.txt), which would run")
}
