package plan

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

// An attribute of a for_each stage that refers to variables, locals and
// path only, and reads no file, has one value in every instance: it is
// evaluated once and every instance takes that value (env). One that
// refers to each, or calls a file function (an upstream node may write
// what it reads), is each instance's own; so is one whose evaluation has
// something to say, so that each instance reports it as before
// (bad's timeout).
func TestAttributesAlikeInEveryInstanceEvaluatedOnce(t *testing.T) {
	root := t.TempDir()
	src := `locals {
  ids   = toset(["a", "b", "c"])
  words = ["x", "y"]
}

stage "command" "w" {
  for_each = local.ids
  run      = concat(["echo"], [for w in local.words : upper(w)], [each.key])
  env      = { WORDS = join(",", [for w in local.words : upper(w)]) }
  inputs   = [for f in ["in.txt"] : f if fileexists(f)]
}

stage "command" "bad" {
  for_each = local.ids
  run      = ["echo", each.key]
  timeout  = local.words[5]
}

stage "command" "one" {
  run = ["echo", join(",", local.words)]
}
`
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	l, diags := Load(LoadOptions{Path: "p.hcl", Root: root})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	g := l.Graph
	same := func(stage string) []string {
		var names []string
		for name := range g.refs[stage].same {
			names = append(names, name)
		}
		slices.Sort(names)
		return names
	}
	assert.Equal(t, []string{"env"}, same("w"))
	assert.Equal(t, []string{"timeout"}, same("bad"))
	assert.Empty(t, same("one"), "one instance: nothing to share")

	want := cty.ObjectVal(map[string]cty.Value{"WORDS": cty.StringVal("X,Y")})
	for _, n := range g.StageNodes["w"] {
		sn, d := g.EvalNode(n, UnknownInstance)
		require.False(t, d.HasErrors(), "%s", d.Error())
		assert.True(t, want.RawEquals(sn.Args["env"]), "%s: %#v", n.Addr, sn.Args["env"])
		assert.Equal(t, cty.StringVal(n.Inst.Key), sn.Args["run"].Index(cty.NumberIntVal(3)))
	}
	env := g.refs["w"].same["env"]
	assert.True(t, env.ok, "evaluated once, with nothing to say")
	assert.True(t, want.RawEquals(env.v))

	for _, n := range g.StageNodes["bad"] {
		_, d := g.EvalNode(n, UnknownInstance)
		require.Len(t, d, 1, "%s: the timeout's error", n.Addr)
		_, own := n.Stage.Attrs["timeout"].Expr.Value(g.nodeContext(n, UnknownInstance, false))
		assert.Equal(t, own.Error(), d.Error(), "%s: what its own evaluation says", n.Addr)
	}
	assert.False(t, g.refs["bad"].same["timeout"].ok, "its error is each instance's")
}
