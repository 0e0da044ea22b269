package engine

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/runlog"
)

// journalRun writes run id of pipeline into the cache folder dir, started
// an hour ago: its records es, then a run_end of status end, or none
// ("": the run died).
func journalRun(t *testing.T, dir, id, pipeline, end string, es ...runlog.Entry) {
	t.Helper()
	j, err := runlog.Open(dir, id, true)
	require.NoError(t, err)
	start := time.Now().Add(-time.Hour)
	require.NoError(t, j.Write(runlog.Entry{T: runlog.RunStart, Time: start, RunID: id, Pipeline: pipeline}))
	for _, e := range es {
		e.Time = start
		require.NoError(t, j.Write(e))
	}
	if end != "" {
		require.NoError(t, j.Write(runlog.Entry{T: runlog.RunEnd, Time: start, Status: end}))
	}
	require.NoError(t, j.Close())
}

func started(node string, marked bool) runlog.Entry {
	e := runlog.Entry{T: runlog.Started, Node: node, Attempt: 1}
	if marked {
		e.OnInterrupt = "fail"
	}
	return e
}

func finished(node string) runlog.Entry { return runlog.Entry{T: runlog.Finished, Node: node} }

func stopped(node string, marked bool) runlog.Entry {
	e := runlog.Entry{T: runlog.Failed, Node: node, Class: failclass.Interrupted}
	if marked {
		e.OnInterrupt = "fail"
	}
	return e
}

// runIDs are the run folders left in the cache folder dir, oldest first.
func runIDs(t *testing.T, dir string) []string {
	t.Helper()
	runs, err := runlog.List(dir)
	require.NoError(t, err)
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	sort.Strings(ids)
	return ids
}

// refusalsOf is what apply reads of the interruptions of pipeline in the
// cache folder dir: the interrupted nodes, by address, with their run.
func refusalsOf(t *testing.T, dir, pipeline string) map[string]string {
	t.Helper()
	runs, err := runlog.Unfinished(dir)
	require.NoError(t, err)
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID < runs[j].ID })
	out := map[string]string{}
	for addr, in := range interruptedIn(runs, pipeline) {
		out[addr] = in.RunID
	}
	return out
}

// gc keeps the run folders that apply reads the refusal to restart an
// interrupted on_interrupt = "fail" node from, killed (started, never
// ended) or stopped (failed, class interrupted), and the runs that say a
// node interrupted with it ran since (else gc would revive its
// interruption): apply reads the same interruptions before and after. The
// other runs go, and so does a kept run once its node ran again.
func TestGCKeepsTheRunsRefusalsAreReadFrom(t *testing.T) {
	dir := t.TempDir()
	const (
		r1 = "20260101T000001.000Z-000001"
		r2 = "20260101T000002.000Z-000002"
		r3 = "20260101T000003.000Z-000003"
		r4 = "20260101T000004.000Z-000004"
		r5 = "20260101T000005.000Z-000005"
		r6 = "20260101T000006.000Z-000006"
	)
	// r1 died with x and y (on_interrupt = "fail") and z (rerun) running.
	journalRun(t, dir, r1, "p", "", started("stage.x", true), started("stage.y", true), started("stage.z", false))
	// --replace ran y again; z ran again.
	journalRun(t, dir, r2, "p", "ok", started("stage.y", true), finished("stage.y"))
	journalRun(t, dir, r3, "p", "ok", finished("stage.w"))
	journalRun(t, dir, r4, "q", "interrupted", started("stage.x", true), stopped("stage.x", true))
	journalRun(t, dir, r5, "p", "ok", started("stage.z", false), finished("stage.z"))
	// A node of a stage without on_interrupt = "fail" killed: it reruns.
	journalRun(t, dir, r6, "p", "", started("stage.v", false))

	assert.Equal(t, map[string]string{"stage.x": r1, "stage.v": r6}, refusalsOf(t, dir, "p"))
	assert.Equal(t, map[string]string{"stage.x": r4}, refusalsOf(t, dir, "q"))
	for _, dry := range []bool{true, false} {
		removed, kept, refused, _, err := trimRuns(dir, 0, dry)
		require.NoError(t, err)
		assert.Equal(t, 2, removed, "dry run %v", dry)
		assert.Equal(t, 4, kept, "dry run %v", dry)
		assert.Equal(t, []RefusedNode{{"p", "stage.x", r1}, {"q", "stage.x", r4}}, refused)
	}
	assert.Equal(t, []string{r1, r2, r4, r5}, runIDs(t, dir))
	// x is still refused, in both pipelines; y and z, run again, are not.
	// (v's stage declared no on_interrupt = "fail": its run went, and with
	// it the note that it was interrupted; it runs again either way.)
	assert.Equal(t, map[string]string{"stage.x": r1}, refusalsOf(t, dir, "p"))
	assert.Equal(t, map[string]string{"stage.x": r4}, refusalsOf(t, dir, "q"))

	// A run too new to go is not counted as kept.
	removed, kept, _, _, err := trimRuns(dir, 2*time.Hour, true)
	require.NoError(t, err)
	assert.Equal(t, 0, removed)
	assert.Equal(t, 0, kept)

	// --replace ran x again in p; q took it from the cache.
	journalRun(t, dir, "20260101T000007.000Z-000007", "p", "ok", started("stage.x", true), finished("stage.x"))
	journalRun(t, dir, "20260101T000008.000Z-000008", "q", "ok", runlog.Entry{T: runlog.Cached, Node: "stage.x"})
	removed, kept, refused, _, err := trimRuns(dir, 0, false)
	require.NoError(t, err)
	assert.Equal(t, 6, removed)
	assert.Equal(t, 0, kept)
	assert.Empty(t, refused)
	assert.Empty(t, runIDs(t, dir))
}

// A run that recorded an interruption apply refuses to restart and yet
// ended with its run_end record (failed: a node stopped in a run that was
// not interrupted) is read by apply only after a run that did not end so:
// gc keeps the first such run too. A job left running (--leave-jobs) is
// no interruption: its run goes.
func TestGCKeepsTheFirstRunApplyReads(t *testing.T) {
	dir := t.TempDir()
	const (
		a1 = "20260101T000001.000Z-00000a"
		a2 = "20260101T000002.000Z-00000b"
		a3 = "20260101T000003.000Z-00000c"
	)
	journalRun(t, dir, a1, "p", "", started("stage.a", false))
	journalRun(t, dir, a2, "p", "failed", started("stage.b", true), stopped("stage.b", true))
	left := stopped("stage.d", true)
	left.Left = true
	journalRun(t, dir, a3, "p", "interrupted", started("stage.d", true), left)
	want := map[string]string{"stage.a": a1, "stage.b": a2}
	require.Equal(t, want, refusalsOf(t, dir, "p"))
	removed, kept, refused, _, err := trimRuns(dir, 0, false)
	require.NoError(t, err)
	assert.Equal(t, 1, removed)
	assert.Equal(t, 2, kept)
	assert.Equal(t, []RefusedNode{{"p", "stage.b", a2}}, refused)
	assert.Equal(t, []string{a1, a2}, runIDs(t, dir))
	assert.Equal(t, want, refusalsOf(t, dir, "p"))
}

// gc --older-than ages a run by when it ended (its run_end record, or its
// last record for a run killed without one), as it ages records by when
// their node ended: a run that started long ago and ended a moment ago
// keeps its journal and logs. So do the runs of the up-to-date log.
func TestGCAgesRunsByTheirEnd(t *testing.T) {
	dir := t.TempDir()
	const (
		old    = "20260101T000001.000Z-000001"
		ended  = "20260101T000002.000Z-000002"
		killed = "20260101T000003.000Z-000003"
	)
	now := time.Now()
	run := func(id string, es ...runlog.Entry) {
		j, err := runlog.Open(dir, id, true)
		require.NoError(t, err)
		require.NoError(t, j.Write(runlog.Entry{T: runlog.RunStart, Time: now.Add(-3 * time.Hour), RunID: id, Pipeline: "p"}))
		for _, e := range es {
			require.NoError(t, j.Write(e))
		}
		require.NoError(t, j.Close())
	}
	run(old, runlog.Entry{T: runlog.RunEnd, Time: now.Add(-2 * time.Hour), Status: "ok"})
	run(ended, runlog.Entry{T: runlog.Finished, Node: "stage.train", Time: now.Add(-time.Minute)},
		runlog.Entry{T: runlog.RunEnd, Time: now.Add(-time.Minute), Status: "ok"})
	run(killed, runlog.Entry{T: runlog.Started, Node: "stage.train", Attempt: 1, Time: now.Add(-3 * time.Hour)},
		runlog.Entry{T: runlog.Waiting, Node: "stage.train", Time: now.Add(-10 * time.Minute)})
	require.NoError(t, runlog.AppendUpToDate(dir, runlog.UpToDateRun{RunID: "20260101T000004.000Z-000004",
		Time: now.Add(-3 * time.Hour), Pipeline: "p", Duration: (150 * time.Minute).Seconds()}))
	require.NoError(t, runlog.AppendUpToDate(dir, runlog.UpToDateRun{RunID: "20260101T000005.000Z-000005",
		Time: now.Add(-3 * time.Hour), Pipeline: "p", Duration: 1}))

	removed, _, _, _, err := trimRuns(dir, time.Hour, false)
	require.NoError(t, err)
	assert.Equal(t, 2, removed, "the run that ended two hours ago, and the up-to-date line that ended as long ago")
	assert.Equal(t, []string{ended, killed, "20260101T000004.000Z-000004"}, runIDs(t, dir))
}
