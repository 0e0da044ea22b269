package plan_test

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
)

// seedGridMaxAllocBytes bounds what planning seed 002's experiment grid
// allocates (the grid loaded, 3,748 nodes): a node whose key waits for an
// upstream is not digested, a service's identity is made once for all
// its consumers, an instance object once per node, from maps lent for
// it and for the stage objects (64.7 MiB when each made its own; 55.2
// with them lent; 53.2 before the checks of what evaluations read: their
// bundles' links, their workers' folders, their writes over their reads,
// 55.7 with them). Under the race detector (make test) the standard
// library's sync.Pools drop what they hold at random: about 5 MiB more
// (60.5).
const seedGridMaxAllocBytes = 63 << 20

// TestSeedGridPlanAllocations plans seed 002's experiment grid
// (pipelines/optimizer_grid.hcl with pipelines/grids/experiment.json) and
// bounds the bytes the plan allocates.
func TestSeedGridPlanAllocations(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	l, diags := plan.Load(plan.LoadOptions{Path: "pipelines/optimizer_grid.hcl", Root: root,
		Vars: dsl.VarInputs{Args: []dsl.VarArg{{Value: "grid=pipelines/grids/experiment.json"}}}})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	require.Len(t, l.Graph.Nodes, 3748)
	c, err := store.Open(filepath.Join(t.TempDir(), "cache"), store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p, diags := plan.Make(l.Graph, c, plan.Options{})
	runtime.ReadMemStats(&after)
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.Equal(t, 3745, p.MayRun)
	bytes := after.TotalAlloc - before.TotalAlloc
	t.Logf("plan.Make allocated %.1f MiB", float64(bytes)/(1<<20))
	assert.LessOrEqual(t, bytes, uint64(seedGridMaxAllocBytes))
}
