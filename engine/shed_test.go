package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/plan/plantest"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/process"
)

// A node that ended well holds, to the apply's end, only what later nodes
// and the memo read of it: not its process's result (the stderr tail), job
// reference, logs' names, spec, key envelope and its JSON, nor its
// record's envelope and inline outputs, whether it ran or was taken from
// the cache. A downstream still reads its result, and the memo its inputs
// and outputs (#34).
func TestEndedNodesHoldOnlyWhatLaterNodesRead(t *testing.T) {
	w := newWorkspace(t, `
pipeline "shed" {}
stage "command" "a" {
  inputs  = ["data.txt"]
  run     = ["sh", "-c", "mkdir -p out && echo noise >&2 && cp data.txt out/a && echo '{\"v\": 7}' > out/a.json"]
  outputs = ["out/a"]
  result  = "out/a.json"
}
stage "command" "b" {
  run     = ["sh", "-c", "echo ${stage.a.result.v} > out/b"]
  outputs = ["out/b"]
}
`)
	w.Write("data.txt", "d\n")
	// The memo lists files whose times can vouch for them.
	plantest.WaitSettled(t, filepath.Join(w.Root, "pipeline.hcl"), filepath.Join(w.Root, "data.txt"))
	for _, want := range []plan.Status{plan.OK, plan.Cached} {
		run := w.apply(ApplyOptions{})
		assert.Equal(t, "7\n", w.Read("out/b"))
		for _, ns := range run.res.nodes {
			assert.Equal(t, want, ns.status, ns.n.Addr)
			require.NotNil(t, ns.record, ns.n.Addr)
			assert.Nil(t, ns.res, "%s: process result", ns.n.Addr)
			assert.Equal(t, process.JobRef{}, ns.job, "%s: job reference", ns.n.Addr)
			assert.Equal(t, [2]string{}, ns.logs, "%s: logs", ns.n.Addr)
			assert.Nil(t, ns.spec, "%s: spec", ns.n.Addr)
			assert.Nil(t, ns.pn.Spec, "%s: the plan's spec", ns.n.Addr)
			assert.Nil(t, ns.pn.Envelope, "%s: the plan's envelope", ns.n.Addr)
			assert.Nil(t, ns.env, "%s: envelope", ns.n.Addr)
			assert.Nil(t, ns.envJSON, "%s: envelope JSON", ns.n.Addr)
			assert.Nil(t, ns.record.Envelope, "%s: the record's envelope", ns.n.Addr)
			assert.Nil(t, ns.record.Inline, "%s: the record's inline outputs", ns.n.Addr)
			assert.NotEmpty(t, ns.record.Outputs, "%s: the record's output digests stay", ns.n.Addr)
			assert.NotEmpty(t, ns.record.OutputDigest, ns.n.Addr)
		}
		c, err := store.Open(w.Cache, store.Options{NoSync: true})
		require.NoError(t, err)
		m, why := BuildMemo(&plan.Plan{Graph: w.Load().Graph}, run.res, c, "id")
		require.NoError(t, c.Close())
		require.NotNil(t, m, why)
		require.Len(t, m.Nodes, 2)
		assert.Equal(t, "stage.a", m.Nodes[0].Addr)
		require.Len(t, m.Nodes[0].Inputs, 1, "the memo lists a's input")
		assert.Equal(t, "data.txt", m.Nodes[0].Inputs[0].Path)
		rec, ok := func() (*store.Record, bool) {
			c, err := store.Open(w.Cache, store.Options{NoSync: true})
			require.NoError(t, err)
			defer c.Close()
			return c.Lookup(m.Nodes[0].Key)
		}()
		require.True(t, ok)
		assert.NotEmpty(t, rec.Envelope, "the index keeps the record whole")
		_ = os.Remove(filepath.Join(w.Root, "out", "b")) // restored from the cache next time
	}
}
