package engine

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
)

// planKeys plans the workspace and returns every node's action, key and
// reasons by address.
func planKeys(t *testing.T, root string) map[string][3]string {
	t.Helper()
	l, diags := plan.Load(plan.LoadOptions{Path: filepath.Join(root, "pipeline.hcl"), Root: root})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	c, err := store.Open(filepath.Join(root, ".cairn"), store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	p, diags := plan.Make(l.Graph, c, plan.Options{})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	out := map[string][3]string{}
	for _, pn := range p.Nodes {
		out[pn.Node.Addr] = [3]string{pn.Action, pn.Key, joinReasons(pn.Reasons)}
	}
	return out
}

func joinReasons(rs []string) string {
	s := ""
	for _, r := range rs {
		s += r + ";"
	}
	return s
}

// Nodes evaluated ahead on every core, and records decoded ahead, give the
// plan a single core gives, on an empty cache and on a full one.
func TestPlanOnEveryCoreMatchesOneCore(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "pipeline.hcl"), []byte(benchPipeline(600)), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "out"), 0o755))

	oneCore := func() map[string][3]string {
		prev := runtime.GOMAXPROCS(1)
		defer runtime.GOMAXPROCS(prev)
		return planKeys(t, root)
	}
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(1)
	}
	empty := planKeys(t, root)
	require.Len(t, empty, 600)
	assert.Equal(t, oneCore(), empty)

	l, diags := plan.Load(plan.LoadOptions{Path: filepath.Join(root, "pipeline.hcl"), Root: root})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	c, err := store.Open(filepath.Join(root, ".cairn"), store.Options{NoSync: true})
	require.NoError(t, err)
	p, diags := plan.Make(l.Graph, c, plan.Options{})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	res, err := Apply(context.Background(), ApplyOptions{Plan: p, Cache: c, Executor: touchExecutor, Parallelism: 2, NoSync: true})
	require.NoError(t, err)
	require.Equal(t, 600, res.Ran)
	require.NoError(t, c.Close())

	full := planKeys(t, root)
	for addr, v := range full {
		assert.Equal(t, plan.ActCached, v[0], addr)
		assert.NotEmpty(t, v[1], addr)
	}
	assert.Equal(t, oneCore(), full)
}
