package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/events"
)

// A node's started record, a process's or an in-process kind's
// (NodeStarted, an evaluation's), is in the journal's file at once (what
// a kill -9 leaves), and synced on its own only for a stage with
// on_interrupt = "fail", which must show as interrupted after a power loss
// too, and is marked so (what gc reads).
func TestStartedRecordSyncedOnlyForOnInterruptFail(t *testing.T) {
	for _, onInterrupt := range []string{"rerun", "fail"} {
		t.Run(onInterrupt, func(t *testing.T) {
			j, err := runlog.Open(t.TempDir(), runlog.NewRunID(), false)
			require.NoError(t, err)
			defer j.Close()
			require.NoError(t, j.Write(runlog.Entry{T: runlog.RunStart, Pipeline: "p"}))
			require.NoError(t, j.Write(runlog.Entry{T: runlog.Planned, Node: "stage.e"}))
			a := &applier{j: j, ev: &events.Serial{}}
			ns := &nodeState{n: &plan.Node{Addr: "stage.e", Stage: &dsl.Stage{OnInterrupt: onInterrupt}}, attempts: 1}
			before := j.Syncs()
			require.NoError(t, (&nodeRuntime{a: a, ns: ns}).NodeStarted("workers.log"))
			es, err := runlog.Read(j.Dir)
			require.NoError(t, err)
			require.NotEmpty(t, es)
			last := es[len(es)-1]
			assert.Equal(t, runlog.Started, last.T, "the started record is in the file")
			assert.Equal(t, "stage.e", last.Node)
			want, mark := int64(0), ""
			if onInterrupt == "fail" {
				want, mark = 1, "fail"
			}
			assert.Equal(t, want, j.Syncs()-before, "fsyncs of the started record")
			assert.Equal(t, mark, last.OnInterrupt, "gc reads the mark to keep the run while it refuses a restart")
		})
	}
}
