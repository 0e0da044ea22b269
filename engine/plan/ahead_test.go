package plan

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

// A node evaluated ahead with its upstreams unknown takes what linking
// paths evaluated of it (its path attributes' values, and the context
// where linking made the one the node's evaluation makes): what it gets
// is what a fresh evaluation gets, whether the path attributes read stage
// objects (r), only other attributes do (s: linking's context has none,
// its values are taken), or linking gave the node another upstream (t:
// it takes nothing, its stage objects have one more instance).
func TestEvalAheadTakesWhatLinkingEvaluated(t *testing.T) {
	runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))) // evaluation ahead needs two
	root := t.TempDir()
	src := `locals {
  ids  = toset([for i in range(20) : format("k%02d", i)])
  next = { for i in range(20) : format("k%02d", i) => format("k%02d", (i + 1) % 20) }
}

stage "command" "w" {
  for_each = local.ids
  run      = ["sh", "-c", "echo ${each.key} > out/w_${each.key}"]
  outputs  = ["out/w_${each.key}"]
}

stage "command" "r" {
  for_each = local.ids
  run      = ["cat", "out/w_${each.key}", stage.w[each.key].key]
  inputs   = ["out/w_${stage.w[each.key].key}"]
  outputs  = ["out/r_${each.key}"]
}

stage "command" "s" {
  for_each = local.ids
  run      = ["echo", stage.w[each.key].status, stage.w[each.key].key]
  inputs   = ["out/w_${each.key}"]
}

stage "command" "t" {
  for_each = local.ids
  run      = ["echo", stage.w[each.key].status, stage.w[each.key].key]
  inputs   = ["out/w_${local.next[each.key]}"]
}
`
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	l, diags := Load(LoadOptions{Path: "p.hcl", Root: root})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	g := l.Graph
	kept := map[string]*aheadEval{}
	for _, n := range g.Nodes {
		if n.ahead != nil {
			kept[n.Stage.Name+"["+n.Inst.Key+"]"] = n.ahead
		}
	}
	for _, k := range []string{"k00", "k07", "k19"} {
		if assert.Contains(t, kept, "r["+k+"]") {
			assert.NotNil(t, kept["r["+k+"]"].ctx, "r's context is the node's")
			assert.Equal(t, []string{"outputs", "inputs"}, kept["r["+k+"]"].names)
		}
		if assert.Contains(t, kept, "s["+k+"]") {
			assert.True(t, kept["s["+k+"]"].ctx == nil, "s's context has no stage objects")
			assert.Equal(t, []string{"inputs"}, kept["s["+k+"]"].names)
		}
		assert.NotContains(t, kept, "t["+k+"]", "linking gave t another upstream")
	}

	all := func(*Node) bool { return true }
	ahead := g.evalAhead(all, all, nil, nil)
	for _, n := range g.Nodes {
		assert.Nil(t, n.ahead, "%s: what linking evaluated is let go", n.Addr)
		require.True(t, ahead[n.ID].done, n.Addr)
		got, gotDiags := ahead[n.ID].sn, ahead[n.ID].diags
		want, wantDiags := g.EvalNode(n, UnknownInstance)
		require.Equal(t, wantDiags.Error(), gotDiags.Error(), n.Addr)
		require.Len(t, got.Args, len(want.Args), n.Addr)
		for name, v := range want.Args {
			assert.True(t, v.RawEquals(got.Args[name]), "%s.%s: %#v, want %#v", n.Addr, name, got.Args[name], v)
		}
	}
}

// A node's stage objects with its upstreams unknown are the same whether
// a stage's one instance object is the one made for every reader
// (unknownOne) or made for the node: one instance of a keyed stage, two
// of one, and an unkeyed stage's.
func TestUnknownStageObjectsAsMadeForTheNode(t *testing.T) {
	root := t.TempDir()
	src := `locals {
  ids = toset(["a", "b", "c"])
}

stage "command" "one" {
  run = ["true"]
}

stage "command" "w" {
  for_each = local.ids
  run      = ["true", each.key]
}

stage "command" "r" {
  for_each = local.ids
  run      = ["echo", stage.w[each.key].key, stage.one.key]
}

stage "command" "two" {
  for_each = local.ids
  run      = ["echo", stage.w[each.key].key, stage.w["a"].key]
}
`
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	l, diags := Load(LoadOptions{Path: "p.hcl", Root: root})
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	g := l.Graph
	madeForTheNode := func(u *Node) cty.Value { return UnknownInstance(u) }
	require.False(t, isUnknownInstance(madeForTheNode))
	require.True(t, isUnknownInstance(UnknownInstance))
	for _, n := range g.Nodes {
		if n.Stage.Name != "r" && n.Stage.Name != "two" {
			continue
		}
		shared := g.nodeContext(n, UnknownInstance, true).Variables["stage"]
		own := g.nodeContext(n, madeForTheNode, true).Variables["stage"]
		require.NotEqual(t, cty.NilVal, own, n.Addr)
		assert.True(t, own.RawEquals(shared), "%s: %#v, want %#v", n.Addr, shared, own)
	}
	// Every reader of w["b"] alone shares one object.
	r, two := g.ByAddr[`stage.r["b"]`], g.ByAddr[`stage.two["c"]`]
	wb := g.nodeContext(r, UnknownInstance, true).Variables["stage"].GetAttr("w")
	assert.True(t, wb.RawEquals(unknownOne(g.ByAddr[`stage.w["b"]`])))
	assert.Equal(t, 2, g.nodeContext(two, UnknownInstance, true).Variables["stage"].GetAttr("w").LengthInt(), "two reads w[\"c\"] and w[\"a\"]")
}
