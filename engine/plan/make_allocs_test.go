package plan_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
)

// Planning a chain where nothing ran costs a few allocations a node: its
// evaluation and why it may run, not a planned node, a list of upstream
// digests and a formatted reason each besides.
func TestMakeChainAllocs(t *testing.T) {
	root := t.TempDir()
	const n = 200
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(chainSource(n)), 0o644))
	l, diags := plan.Load(plan.LoadOptions{Path: "p.hcl", Root: root})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	c, err := store.Open(filepath.Join(t.TempDir(), "cache"), store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	allocs := testing.AllocsPerRun(3, func() { plan.Make(l.Graph, c, plan.Options{}) })
	if per := allocs / n; per > 24 {
		t.Errorf("plan of a chain: %.1f allocations a node, want at most 24 (26.5 with a planned node, a list of upstream digests and a formatted reason of their own)", per)
	}
}
