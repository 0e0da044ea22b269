package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
)

// A kind that looks at the workspace when planning (evaluate: its worker
// files and dataset) is never vouched for by a memo.
func TestMemoRefusesKindsThatReadTheWorkspace(t *testing.T) {
	w := newWorkspace(t, `
pipeline "m" {}
stage "command" "prep" {
  run = ["true"]
}
stage "evaluate" "ev" {
  worker = ["sh", "worker.sh"]
  items  = "items.jsonl"
  model  = "m"
  scores = "scores.jsonl"
}
`)
	w.Write("worker.sh", "exit 0\n")
	w.Write("items.jsonl", `{"id": "a"}`+"\n")
	l := w.Load()
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	p, diags := plan.Make(l.Graph, c, plan.Options{})
	require.False(t, diags.HasErrors(), diags.Error())
	res := &ApplyResult{}
	for _, n := range l.Graph.Nodes {
		res.nodes = append(res.nodes, &nodeState{n: n, status: plan.Cached})
	}
	m, why := BuildMemo(p, res, c, "id")
	assert.Nil(t, m)
	assert.Contains(t, why, "stage ev's kind looks at the workspace")
}
