package plan_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
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
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprintf("%q", fmt.Sprintf("k%02d", i))
	}
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
	render := func(guess bool) (string, *plan.Plan) {
		was := plan.SetGuessAhead(guess)
		defer plan.SetGuessAhead(was)
		p, diags := plan.Make(l.Graph, c, plan.Options{})
		require.False(t, diags.HasErrors(), "%s", diags.Error())
		var b bytes.Buffer
		require.NoError(t, p.Render(&b))
		return b.String(), p
	}
	first, p := render(true)
	inTurn, _ := render(false)
	assert.Equal(t, inTurn, first)
	assert.Equal(t, 40, p.MayRun, "every b waits for its a")

	// Half of the a nodes are cached, under another address: their b
	// nodes were guessed with a unknown, and are evaluated again.
	for _, pn := range p.Nodes {
		if pn.Node.Stage.Name == "a" && pn.Node.Inst.Key < "k20" {
			require.NotEmpty(t, pn.Key)
			_, err := c.Commit(&store.Record{Key: pn.Key, Pipeline: "elsewhere", Address: "stage.elsewhere",
				OutputDigest: strings.Repeat("0", 64), Result: []byte(`"done"`)}, nil)
			require.NoError(t, err)
		}
	}
	second, p := render(true)
	inTurn, _ = render(false)
	assert.Equal(t, inTurn, second)
	assert.Equal(t, 20, p.Cached)
	assert.Equal(t, 20, p.MayRun)
	assert.Equal(t, 40, p.ToRun, "a's uncached half and the b nodes of the cached half run")
	assert.Contains(t, second, `+ stage.b["k00"]`)
	assert.Contains(t, second, `? stage.b["k39"]`)
}
