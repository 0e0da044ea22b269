package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
)

// upstreamsPipeline: a for_each stage, a node below all its instances that
// fails while the file stop exists (not an input: its key does not see
// it), and one below a single instance.
const upstreamsPipeline = `
pipeline "ups" {}

variable "sizes" {
  type    = map(number)
  default = { small = 10, large = 1000 }
}

stage "command" "gen" {
  for_each = var.sizes
  run      = ["sh", "-c", "mkdir -p data && seq ${each.value} > data/${each.key}.txt"]
  outputs  = ["data/${each.key}.txt"]
}

stage "command" "all" {
  run     = ["sh", "-c", "test ! -e stop && echo all > all.txt"]
  after   = [stage.gen]
  outputs = ["all.txt"]
}

stage "command" "one" {
  run     = ["sh", "-c", "echo one > one.txt"]
  after   = [stage.gen["small"]]
  outputs = ["one.txt"]
}
`

// reasonsOf is a plan's reasons by address.
func reasonsOf(p *plan.Plan) map[string][]string {
	out := map[string][]string{}
	for _, pn := range p.Nodes {
		out[pn.Node.Addr] = pn.Reasons
	}
	return out
}

// A node whose upstreams changed says which, by address, in one wording:
// an upstream whose output changed, and a for_each instance removed from
// the pipeline or an upstream no longer depended on, which the cache's
// last record of that address names.
func TestPlanNamesTheUpstreamThatChangedOrWasRemoved(t *testing.T) {
	w := newWorkspace(t, upstreamsPipeline)
	r := w.apply(ApplyOptions{})
	require.Equal(t, 4, r.res.Ran, r.out)

	// The instance "large" removed.
	p := w.Plan(plan.Options{}, "sizes={small=10}")
	assert.Equal(t, []string{`upstream stage.gen["large"] removed`}, reasonsOf(p)["stage.all"])
	assert.Equal(t, plan.ActCached, p.Nodes[len(p.Nodes)-1].Action)

	// "large" removed and "small" changed, in a run in which stage.all
	// failed: its last key holds both earlier outputs.
	w.Write("stop", "")
	r = w.apply(ApplyOptions{}, "sizes={small=11}")
	require.Equal(t, 1, r.res.Failed, r.out)
	p = w.Plan(plan.Options{}, "sizes={small=11}")
	assert.Equal(t, []string{`upstream stage.gen["small"] changed`, `upstream stage.gen["large"] removed`}, reasonsOf(p)["stage.all"])

	// An upstream no longer depended on, still in the pipeline.
	w.Write("pipeline.hcl", strings.Replace(upstreamsPipeline, `after   = [stage.gen["small"]]`, "", 1))
	p = w.Plan(plan.Options{}, "sizes={small=11}")
	assert.Equal(t, []string{`upstream stage.gen["small"] removed`}, reasonsOf(p)["stage.one"])
}
