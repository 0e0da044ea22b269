package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
)

// for_each = stage.X: instance k depends on X["k"] alone, and each.value is
// X["k"]'s instance object, result included.
func TestForEachOverStageInstances(t *testing.T) {
	w := newWorkspace(t, `
pipeline "fe" {}
stage "command" "a" {
  for_each = ["x", "y"]
  run      = ["sh", "-c", "mkdir -p r && echo '{\"v\": \"${each.key}-val\"}' > r/${each.key}.json"]
  result   = "r/${each.key}.json"
}
stage "command" "b" {
  for_each = stage.a
  run      = ["sh", "-c", "mkdir -p s && echo ${each.value.result.v} > s/${each.key}.txt"]
  outputs  = ["s/${each.key}.txt"]
}
`)
	p := w.Plan(plan.Options{})
	g := p.Graph
	bx := g.ByAddr[`stage.b["x"]`]
	require.NotNil(t, bx)
	require.Len(t, bx.Deps, 1)
	assert.Equal(t, `stage.a["x"]`, g.Nodes[bx.Deps[0]].Addr)
	r := w.apply(ApplyOptions{})
	require.Equal(t, 4, r.res.Ran, r.out)
	assert.Equal(t, "x-val\n", w.Read("s/x.txt"))
	assert.Equal(t, "y-val\n", w.Read("s/y.txt"))
	p = w.Plan(plan.Options{})
	assert.Equal(t, 4, p.Cached)
}
