package stages

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

// seedOptimizeNode is an optimize node of seed 002's experiment grid as
// plan evaluates it.
func seedOptimizeNode() *Node {
	n := seedEvalNode()
	n.Address, n.Stage = `stage.optimize["gepa/hotpotqa/centralized+json/qwen/1"]`, "optimize"
	n.Args["worker"] = strs("python3", "testdata/workers/chat_worker.py", "--bundle-system-prompt", "system.txt")
	n.Args["items"] = cty.StringVal("testdata/optimizer/data/hotpotqa/train.jsonl")
	n.Args["run"] = strs("python", "-m", "optimizers.gepa", "--seed", "1")
	n.Args["out"] = cty.StringVal("runs/gepa/hotpotqa/centralized+json/qwen/1")
	n.Args["budget"] = cty.NumberIntVal(600)
	n.Args["bundle_in_request"] = cty.True
	delete(n.Args, "scores")
	delete(n.Args, "needed")
	return n
}

// planChecks is what a plan asks of a node's kind: its check, inputs,
// outputs, out folder and refusal.
func planChecks(k Kind, n *Node, root string) []any {
	out := []any{k.Check(n).Error()}
	if d, ok := k.(InputDeclarer); ok {
		out = append(out, d.DeclaredInputs(n, root))
	}
	if d, ok := k.(OutputDeclarer); ok {
		out = append(out, d.DeclaredOutputs(n))
	}
	if c, ok := k.(WorkspaceChecker); ok {
		out = append(out, c.CheckWorkspace(n, root).Error())
	}
	if r, ok := k.(PlanRefuser); ok {
		out = append(out, r.PlanRefusal(n, root, "", false))
	}
	return out
}

// The checks a plan makes of a job, an evaluation and an optimization
// decode the node's attributes once between them, and answer what each
// decoding of their own answers. Asked again, they allocate what they
// answer (the checks' own slices and the test's): decoding for each of
// them made 105, 67 and 102 allocations. (An evaluation's check looks
// at its bundle's folders for links leading outside the workspace: two
// allocations a folder that is not there. Under the race detector, which
// make test uses, an evaluation and an optimization allocate two more:
// 27 and 35 without it.)
func TestPlanChecksDecodeOnce(t *testing.T) {
	root := t.TempDir()
	for _, c := range []struct {
		kind      Kind
		node      func() *Node
		maxAllocs float64
	}{
		{Job{}, seedJobNode, 30},
		{Evaluate{}, seedEvalNode, 30},
		{Optimize{}, seedOptimizeNode, 38},
	} {
		n := c.node()
		got := planChecks(c.kind, n, root)
		for range 2 {
			assert.Equal(t, planChecks(c.kind, c.node(), root), got, "%T", c.kind)
			assert.Equal(t, got, planChecks(c.kind, n, root), "%T", c.kind)
		}
		allocs := testing.AllocsPerRun(20, func() { planChecks(c.kind, n, root) })
		assert.LessOrEqual(t, allocs, c.maxAllocs, "%T", c.kind)
	}
}

// A check appending to the decoding's diagnostics appends to a copy.
func TestDecodedOnceDiagnosticsAreCopied(t *testing.T) {
	n := seedEvalNode()
	n.Args["scores"] = cty.StringVal("/abs/scores.jsonl")
	n.Args["model"] = cty.StringVal(" ")
	n.Common.GPUs = 1
	_, first := decodedOnce(n, decodeEvaluate)
	require.Len(t, first, 2)
	d := Evaluate{}.Check(n)
	require.Len(t, d, 3)
	_, again := decodedOnce(n, decodeEvaluate)
	assert.Equal(t, hcl.Diagnostics(first), again)
	assert.Len(t, again, 2)
}
