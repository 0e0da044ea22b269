package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A variant rerun to the same result (only its duration differs) leaves
// the comparison table cached: early cutoff through the pareto kind.
func TestParetoCachedWhenVariantRerunsToSameResult(t *testing.T) {
	w := newWorkspace(t, `
pipeline "p" {}
stage "command" "v" {
  for_each = ["a", "b"]
  run      = ["sh", "-c", "mkdir -p r && sleep 0.0$((RANDOM % 9)) && printf '{\"name\":\"${each.key}\",\"throughput\":%d,\"mean@16\":0.5}' ${each.key == "a" ? 10 : 20} > r/${each.key}.json"]
  result   = "r/${each.key}.json"
}
stage "pareto" "table" {
  rows                = stage.v
  x                   = "throughput"
  y                   = "mean@16"
  on_upstream_failure = "run"
}
`)
	r := w.apply(ApplyOptions{})
	require.Equal(t, 3, r.res.Ran, r.out)
	r = w.apply(ApplyOptions{Replace: map[string]bool{`stage.v["a"]`: true}})
	assert.Equal(t, 1, r.res.Ran, r.out)
	assert.Equal(t, 2, r.res.Cached, r.out)
}
