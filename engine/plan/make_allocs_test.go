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
	if per := allocs / n; per > 21 {
		t.Errorf("plan of a chain: %.1f allocations a node, want at most 21 (26.5 with a planned node, a list of upstream digests and a formatted reason of their own; 22.5 with an iterator to see the outputs known)", per)
	}
}

// Loading a chain of stage blocks costs a few dozen allocations a stage:
// its syntax tree (its nodes from slabs), its decoding, its references
// (with the first in the same allocation as the list of them) and its
// node.
func TestLoadChainAllocs(t *testing.T) {
	root := t.TempDir()
	const n = 2000 // parsed in pieces, as large files are
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(chainSource(n)), 0o644))
	allocs := testing.AllocsPerRun(3, func() { plan.Load(plan.LoadOptions{Path: "p.hcl", Root: root}) })
	if per := allocs / n; per > 34 {
		t.Errorf("load of a chain: %.1f allocations a stage, want at most 34 (46.4 with each syntax node allocated on its own)", per)
	}
}
