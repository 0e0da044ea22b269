package plan_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	var src strings.Builder
	src.WriteString("pipeline \"chain\" {}\n")
	const n = 200
	for i := range n {
		fmt.Fprintf(&src, "stage \"command\" \"c%d\" {\n  run     = [\"sh\", \"-c\", \"echo c%d > out/c%d\"]\n  outputs = [\"out/c%d\"]\n", i, i, i, i)
		if i > 0 {
			fmt.Fprintf(&src, "  after   = [stage.c%d]\n", i-1)
		}
		src.WriteString("}\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src.String()), 0o644))
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
