package stages_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/stages"
)

// TestDecodeValueMatchesJSONOnPipelines decodes every known attribute of
// every node of the repository's pipelines (seed 002's experiment grid
// among them) both ways, directly and through the JSON form, into every
// shape the kinds decode into: the results and errors are the same.
// (pipelines/memory_decision.hcl loads only beside the files its protocol
// seals; its decision kind decodes nothing this way.)
func TestDecodeValueMatchesJSONOnPipelines(t *testing.T) {
	v := func(s string) dsl.VarArg { return dsl.VarArg{Value: s} }
	cases := []struct {
		path string
		vars []dsl.VarArg
	}{
		{"pipelines/optimizer_grid.hcl", []dsl.VarArg{v("grid=pipelines/grids/experiment.json")}},
		{"pipelines/optimizer_grid.hcl", nil},
		{"pipelines/optimizer_grid.hcl", []dsl.VarArg{v("grid=pipelines/methods/gepa_grid.json")}},
		{"pipelines/optimizer_grid.hcl", []dsl.VarArg{v("method=simgepa"), v("dataset=sums"), v("topology=single"), v("model=sim"), v("seed=0"), v("serve=true")}},
		{"pipelines/optimizer_eval.hcl", nil},
		{"pipelines/aime24_batch.hcl", []dsl.VarArg{{File: true, Value: "../pipelines/sim.tfvars"}, v("tag=demo"), v(`variants=["a","b","c","d"]`)}},
		{"pipelines/inspect_cached.hcl", []dsl.VarArg{v("endpoint=http://localhost:1/v1")}},
		{"pipelines/lm_eval_cached.hcl", []dsl.VarArg{v("endpoint=http://localhost:1/v1")}},
	}
	values, direct := 0, 0
	for _, c := range cases {
		l, diags := plan.Load(plan.LoadOptions{Path: c.path, Root: "..", Vars: dsl.VarInputs{Args: c.vars}})
		require.NotNil(t, l.Graph, "%s: %s", c.path, diags.Error())
		for _, n := range l.Graph.Nodes {
			if n.Inst.Keyed && l.Graph.StageNodes[n.Stage.Name][0] != n && n.ID%7 != 0 {
				continue // a seventh of a large grid's instances, and each stage's first
			}
			sn, _ := l.Graph.EvalNode(n, plan.UnknownInstance)
			if sn == nil {
				continue
			}
			for name, val := range sn.Args {
				if !val.IsWhollyKnown() || val.IsNull() {
					continue
				}
				d, k := stages.DecodeMismatches(val)
				if !assert.Empty(t, d, "%s: %s.%s", c.path, n.Addr, name) {
					return
				}
				values++
				direct += k
			}
		}
	}
	t.Logf("%d values, %d taken directly", values, direct)
	require.Greater(t, values, 4000, "the pipelines' attributes were not all read")
	require.Greater(t, direct, values, "the direct reading took too few of the attributes")
}
