package plan_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/plan/plantest"
)

// expandGrid is a grid of 1,500 runs over four stages: instances linked by
// the same key, by a key computed from each.value, by wait_for, and (with
// BAD) to instances some keys do not have.
const expandGrid = `
locals {
  n    = [for p in setproduct(range(30), range(50)) : p[0] * 50 + p[1]]
  ids  = toset([for i in local.n : tostring(i)])
  runs = { for i in local.n : "r${i}" => { id = tostring(i), half = tostring(floor(i / 2)) } }
}

stage "command" "a" {
  for_each = local.ids
  run      = ["sh", "-c", "echo ${each.key} > out/a_${each.key}"]
  outputs  = ["out/a_${each.key}"]
}

stage "command" "b" {
  for_each = local.ids
  run      = ["echo", each.value]
  after    = [stage.a[each.key]]
}

stage "command" "c" {
  for_each = local.runs
  run      = ["echo", each.value.id]
  after    = [stage.a[each.value.half]]
  wait_for = [stage.b[each.value.id]]
}

stage "command" "d" {
  for_each = local.runs
  run      = ["echo", each.key]
  after    = [stage.c[each.key], stage.a[BAD]]
}
`

// A stage of many instances makes its nodes on every core, and a root's key
// is made ahead of its turn: the graph, its plan and every diagnostic, in
// order, are those of the instances made and keyed one at a time.
func TestExpandOnEveryCoreIsOneAtATime(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	type result struct {
		graph, plan, diags string
	}
	build := func(src string, parallelFrom int) result {
		plan.SetParallelInstances(t, parallelFrom)
		w := plantest.New(t, src)
		l, diags := plan.Load(plan.LoadOptions{Path: filepath.Join(w.Root, "pipeline.hcl"), Root: w.Root})
		var r result
		var out []string
		for _, d := range diags {
			out = append(out, strings.ReplaceAll(fmt.Sprintf("%s: %s: %s", d.Subject, d.Summary, d.Detail), w.Root, "ROOT"))
		}
		r.diags = strings.Join(out, "\n")
		if l.Graph == nil {
			return r
		}
		var g strings.Builder
		for i, n := range l.Graph.Nodes {
			require.Equal(t, i, n.ID)
			require.Same(t, n, l.Graph.ByAddr[n.Addr])
			fmt.Fprintf(&g, "%d %s deps=%v order=%v\n", n.ID, n.Addr, n.Deps, n.OrderOnly)
		}
		for _, s := range l.Graph.StageOrder {
			fmt.Fprintf(&g, "%s: %d\n", s.Name, len(l.Graph.StageNodes[s.Name]))
		}
		r.graph = g.String()
		p := w.Plan(plan.Options{})
		b, err := json.Marshal(p.JSON())
		require.NoError(t, err)
		r.plan = string(b)
		return r
	}
	for _, bad := range []string{`"0"`, `each.value.half`} {
		src := strings.Replace(expandGrid, "BAD", bad, 1)
		one := build(src, 1<<30)
		many := build(src, 2)
		assert.Equal(t, one, many, "stage.a[%s]", bad)
		// On one core nothing is evaluated or keyed ahead of its turn.
		was := runtime.GOMAXPROCS(1)
		alone := build(src, 1<<30)
		runtime.GOMAXPROCS(was)
		assert.Equal(t, one, alone, "stage.a[%s]", bad)
		assert.Contains(t, one.plan, `"key"`)
		if bad == `"0"` {
			assert.Empty(t, one.diags)
			// a's keys in order: "999" last, "499" at 944.
			assert.True(t, strings.Contains(one.graph, "\n4499 stage.c[\"r999\"] deps=[944 2999] order=[2999]\n"))
			assert.True(t, strings.Contains(one.graph, "\n5999 stage.d[\"r999\"] deps=[0 4499] order=[]\n"))
		}
	}
	// Keys no instance of a has: one error for each of d's instances, in
	// their order.
	src := strings.Replace(expandGrid, "BAD", `"x${each.value.id}"`, 1)
	one := build(src, 1<<30)
	many := build(src, 2)
	assert.Equal(t, one, many)
	assert.Equal(t, 1500, strings.Count(one.diags, "has no instance"), "%.300s", one.diags)
	assert.Less(t, strings.Index(one.diags, `"x10"`), strings.Index(one.diags, `"x11"`))
}
