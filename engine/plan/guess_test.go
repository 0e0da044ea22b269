package plan_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
)

// A node reading its upstreams' instances is evaluated ahead, on every
// core, when its upstreams did not run before; when its turn comes and an
// upstream is cached after all (its key recorded under another address),
// it is evaluated again. The plan is the one made node by node.
func TestPlanGuessedNodesMatchInTurn(t *testing.T) {
	root := t.TempDir()
	keys := quotedKeys(40)
	src := `pipeline "guess" {}
stage "command" "a" {
  for_each = toset([` + strings.Join(keys, ", ") + `])
  run      = ["sh", "-c", "echo ${each.key}"]
}
stage "command" "b" {
  for_each = toset([` + strings.Join(keys, ", ") + `])
  run      = ["echo", stage.a[each.key].status, try(stage.a[each.key].result, "none")]
}
`
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	l, diags := plan.Load(plan.LoadOptions{Path: "p.hcl", Root: root})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	c, err := store.Open(filepath.Join(t.TempDir(), "cache"), store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	render := func(guess bool) (string, *plan.Plan) { return planGuessing(t, l.Graph, c, guess) }
	first, p := render(true)
	inTurn, _ := render(false)
	assert.Equal(t, inTurn, first)
	assert.Equal(t, 40, p.MayRun, "every b waits for its a")

	// Half of the a nodes are cached, under another address: their b
	// nodes were guessed with a unknown, and are evaluated again.
	cacheElsewhere(t, c, p, "a", "k20")
	second, p := render(true)
	inTurn, _ = render(false)
	assert.Equal(t, inTurn, second)
	assert.Equal(t, 20, p.Cached)
	assert.Equal(t, 20, p.MayRun)
	assert.Equal(t, 40, p.ToRun, "a's uncached half and the b nodes of the cached half run")
	assert.Contains(t, second, `+ stage.b["k00"]`)
	assert.Contains(t, second, `? stage.b["k39"]`)
}

// In a chain where no node ran before, every node but the first waits
// for its upstream's output: its key is unknown, and the evaluation ahead
// builds no key base for it. When an upstream is cached after all (its key
// recorded under another address), the node's base is built in its turn.
// The plan is the one made node by node, keys included.
func TestPlanWaitingNodesBuildNoBaseAhead(t *testing.T) {
	runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))) // evaluation ahead needs two
	root := t.TempDir()
	const n = 100
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(chainSource(n)), 0o644))
	c, err := store.Open(filepath.Join(t.TempDir(), "cache"), store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	// planOf plans with a fresh graph each time: bases counts its key bases.
	planOf := func(guess bool) (string, *plan.Plan, int64) {
		l, diags := plan.Load(plan.LoadOptions{Path: "p.hcl", Root: root})
		require.False(t, diags.HasErrors(), "%s", diags.Error())
		out, p := planGuessing(t, l.Graph, c, guess)
		return out, p, l.Graph.Bases()
	}
	first, p, bases := planOf(true)
	inTurn, _, allBases := planOf(false)
	assert.Equal(t, inTurn, first)
	assert.Equal(t, 1, p.ToRun)
	assert.Equal(t, n-1, p.MayRun)
	assert.EqualValues(t, 1, bases, "only c0's key is known")
	assert.EqualValues(t, n, allBases, "in turn, a base for every node")

	// c0 and c1 are cached under another address: c2's key is known, its
	// base built in its turn.
	for i := range 2 {
		pn := p.Nodes[i]
		require.NotEmpty(t, pn.Key, pn.Node.Addr)
		_, err := c.Commit(&store.Record{Key: pn.Key, Pipeline: "elsewhere", Address: "stage.elsewhere",
			OutputDigest: strings.Repeat(strconv.Itoa(i), 64)}, nil)
		require.NoError(t, err)
		_, p, _ = planOf(true)
	}
	second, p, bases := planOf(true)
	inTurn, _, _ = planOf(false)
	assert.Equal(t, inTurn, second)
	assert.Equal(t, 2, p.Cached)
	assert.Equal(t, 1, p.ToRun)
	assert.Equal(t, n-3, p.MayRun)
	assert.EqualValues(t, 3, bases)
	assert.Contains(t, second, "+ stage.c2 ")
}

// planGuessing plans g with the evaluation ahead guessing or not, and
// returns the plan rendered and in JSON (keys included).
func planGuessing(t *testing.T, g *plan.Graph, c *store.Cache, guess bool) (string, *plan.Plan) {
	was := plan.SetGuessAhead(guess)
	defer plan.SetGuessAhead(was)
	p, diags := plan.Make(g, c, plan.Options{})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	var b bytes.Buffer
	require.NoError(t, p.Render(&b))
	js, err := json.Marshal(p.JSON())
	require.NoError(t, err)
	return b.String() + string(js), p
}

// Nodes whose path attributes linking evaluated take that evaluation
// when they are evaluated ahead (their upstreams unknown): the plan is
// the one made node by node, before any upstream ran and with half of
// them cached, whether the path attributes read stage objects (c) or not
// (b).
func TestPlanTakingLinkingsEvaluationMatchesInTurn(t *testing.T) {
	runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))) // evaluation ahead needs two
	root := t.TempDir()
	keys := quotedKeys(40)
	src := `pipeline "taking" {}
locals {
  ids = toset([` + strings.Join(keys, ", ") + `])
}
stage "command" "a" {
  for_each = local.ids
  run      = ["sh", "-c", "echo ${each.key} > out/a_${each.key}"]
  outputs  = ["out/a_${each.key}"]
}
stage "command" "b" {
  for_each = local.ids
  run      = ["sh", "-c", "cat out/a_${each.key} > out/b_${each.key}", stage.a[each.key].status]
  inputs   = ["out/a_${each.key}"]
  outputs  = ["out/b_${each.key}"]
}
stage "command" "c" {
  for_each = local.ids
  run      = ["sh", "-c", "cat out/b_${each.key} > out/c_${each.key}"]
  inputs   = ["out/b_${stage.b[each.key].key}"]
  outputs  = ["out/c_${each.key}"]
}
`
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	c, err := store.Open(filepath.Join(t.TempDir(), "cache"), store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	// A fresh graph each time: what linking evaluated is taken once.
	planOf := func(guess bool) (string, *plan.Plan) {
		l, diags := plan.Load(plan.LoadOptions{Path: "p.hcl", Root: root})
		require.False(t, diags.HasErrors(), "%s", diags.Error())
		return planGuessing(t, l.Graph, c, guess)
	}
	first, p := planOf(true)
	inTurn, _ := planOf(false)
	assert.Equal(t, inTurn, first)
	assert.Equal(t, 40, p.ToRun)
	assert.Equal(t, 80, p.MayRun)

	// Half of the a nodes are cached, under another address.
	cacheElsewhere(t, c, p, "a", "k20")
	second, p := planOf(true)
	inTurn, _ = planOf(false)
	assert.Equal(t, inTurn, second)
	assert.Equal(t, 20, p.Cached)
}

// quotedKeys are n instance keys, k00, k01, ..., each quoted as an HCL
// string.
func quotedKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%q", fmt.Sprintf("k%02d", i))
	}
	return keys
}

// cacheElsewhere records the planned nodes of stage whose keys sort
// before below as cached under another pipeline's address.
func cacheElsewhere(t *testing.T, c *store.Cache, p *plan.Plan, stage, below string) {
	t.Helper()
	for _, pn := range p.Nodes {
		if pn.Node.Stage.Name == stage && pn.Node.Inst.Key < below {
			require.NotEmpty(t, pn.Key)
			_, err := c.Commit(&store.Record{Key: pn.Key, Pipeline: "elsewhere", Address: "stage.elsewhere",
				OutputDigest: strings.Repeat("0", 64), Result: []byte(`"done"`)}, nil)
			require.NoError(t, err)
		}
	}
}
