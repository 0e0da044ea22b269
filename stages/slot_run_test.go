package stages_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/stages"
	"github.com/cairn-run/cairn/stages/decision"
)

// A slot's attempt is recorded in the ledger under the run that started
// it, the run id the engine gives the kind (Runtime.RunID), whatever
// cairn's own environment holds.
func TestSlotLedgerNamesTheRun(t *testing.T) {
	t.Setenv("CAIRN_RUN_ID", "not-this-run")
	rt := &execRuntime{root: t.TempDir()}
	n := &stages.Node{
		Address: `stage.s["a"]`, Stage: "s", EachKey: "a", Key: "k1",
		Args: map[string]cty.Value{
			"run": strList("true"), "slot": cty.StringVal("a"),
			"memory_limit_mib": cty.NumberIntVal(100), "ledger": cty.StringVal("ledger"),
		},
		Ranges: map[string]hcl.Range{},
	}
	require.False(t, stages.Slot{}.Check(n).HasErrors())
	out, err := stages.Slot{}.Run(context.Background(), n, rt)
	require.NoError(t, err)
	require.Empty(t, out.Class, out.Message)
	h, err := (&decision.Ledger{Dir: filepath.Join(rt.root, "ledger")}).History("a")
	require.NoError(t, err)
	require.Len(t, h.Attempts, 1)
	assert.Equal(t, "test-run", h.Attempts[0].RunID)
	assert.Equal(t, "k1", h.Attempts[0].Key)
}
