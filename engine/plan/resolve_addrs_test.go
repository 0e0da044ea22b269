package plan_test

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan/plantest"
)

const targetsPipeline = `
stage "command" "prep" {
  run = ["true"]
}
stage "command" "train" {
  for_each = toset(["a", "a.b"])
  run      = ["echo", each.key]
}
`

// TestResolveAddrs: --target and --replace take an address with or
// without "stage.", spaces around it, and a stage's address for all of its
// instances; what names no node gets one error, naming it with "stage.".
func TestResolveAddrs(t *testing.T) {
	g := plantest.New(t, targetsPipeline).Load().Graph
	addrsOf := func(ids map[int]bool) []string {
		var out []string
		for id := range ids {
			out = append(out, g.Nodes[id].Addr)
		}
		sort.Strings(out)
		return out
	}
	for in, want := range map[string][]string{
		"prep":               {"stage.prep"},
		"stage.prep":         {"stage.prep"},
		"  stage.prep\t":     {"stage.prep"},
		"train":              {`stage.train["a"]`, `stage.train["a.b"]`},
		"stage.train":        {`stage.train["a"]`, `stage.train["a.b"]`},
		`train["a.b"]`:       {`stage.train["a.b"]`},
		` stage.train["a"] `: {`stage.train["a"]`},
	} {
		ids, diags := g.ResolveAddrs([]string{in}, "--target")
		require.False(t, diags.HasErrors(), "%q: %s", in, diags.Error())
		assert.Equal(t, want, addrsOf(ids), "%q", in)
	}
	for in, named := range map[string]string{
		`train["\x61"]`:       `stage.train["\x61"]`,
		"train[a]":            "stage.train[a]",
		"train[*]":            "stage.train[*]",
		"var.x":               "stage.var.x",
		" stage.prep.result ": "stage.prep.result",
		`stage.prep["a"]`:     `stage.prep["a"]`,
	} {
		ids, diags := g.ResolveAddrs([]string{in}, "--replace")
		assert.Empty(t, ids, "%q", in)
		require.Len(t, diags, 1, "%q", in)
		assert.Equal(t, "Unknown address", diags[0].Summary)
		assert.Contains(t, diags[0].Detail, "--replace "+named+" names no node of this pipeline.", "%q", in)
	}
}
