package runreport_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/runreport"
)

// slotRun is two nodes run one after the other in one CPU slot, as
// apply journals them: each finished record is written after the node's
// record was committed, 200 ms after its process ended, when the next
// node had started already; each says the node's own run time (100 ms).
func slotRun(t *testing.T, cacheDir string) string {
	ka, kb := strings.Repeat("a", 64), strings.Repeat("b", 64)
	return writeJournal(t, cacheDir, "20260301T120000.000Z-ffffff", []runlog.Entry{
		{T: runlog.Planned, Time: t0, Node: "stage.a", Key: ka},
		{T: runlog.Planned, Time: t0, Node: "stage.b", Key: kb},
		{T: runlog.Started, Time: at(10), Node: "stage.a", Key: ka, Attempt: 1},
		{T: runlog.Started, Time: at(150), Node: "stage.b", Key: kb, Attempt: 1},
		{T: runlog.Finished, Time: at(310), Node: "stage.a", Key: ka, Attempt: 1, Duration: 0.1},
		{T: runlog.Finished, Time: at(450), Node: "stage.b", Key: kb, Attempt: 1, Duration: 0.1},
	}, "ok")
}

// A node's duration is its own run time (the finished record's
// duration_s, as events.jsonl gives it), not the time to its finished
// record; nodes that ran one after the other share a CPU lane.
func TestAttemptsTakeTheirOwnRunTime(t *testing.T) {
	r, err := runreport.Build(slotRun(t, t.TempDir()), runreport.Options{})
	require.NoError(t, err)
	a, b := nodeOf(t, r, "stage.a"), nodeOf(t, r, "stage.b")
	assert.InDelta(t, 0.1, a.Duration, 1e-9)
	assert.InDelta(t, 0.1, b.Duration, 1e-9)
	assert.Equal(t, at(110), a.End, "its duration after its started record")
	assert.Equal(t, "cpu 0", a.Tries[0].Lane)
	assert.Equal(t, "cpu 0", b.Tries[0].Lane, "a ran before b started: one slot")
	for _, s := range r.Stages {
		assert.InDelta(t, 0.1, s.Seconds, 1e-9, "node-seconds of %s: its node's own", s.Stage)
	}
}

// Where the cache holds the record a node made in this run, its attempt
// is drawn from its process's own start to its end.
func TestAttemptsTakeTheirRecordsTimes(t *testing.T) {
	cacheDir := t.TempDir()
	cache, err := store.Open(cacheDir, store.Options{NoSync: true})
	require.NoError(t, err)
	defer cache.Close()
	dir := slotRun(t, cacheDir)
	for _, c := range []struct {
		key, addr  string
		start, end time.Time
	}{{strings.Repeat("a", 64), "stage.a", at(4), at(104)}, {strings.Repeat("b", 64), "stage.b", at(140), at(240)}} {
		_, err := cache.Commit(&store.Record{Format: 1, Key: c.key, Envelope: []byte(`{"v":"cairn.node.v1","kind":"command"}`), Result: []byte(`{}`),
			Started: c.start, Ended: c.end, Attempts: 1, Pipeline: "synthetic", Address: c.addr, RunID: "20260301T120000.000Z-ffffff"}, nil)
		require.NoError(t, err)
	}
	r, err := runreport.Build(dir, runreport.Options{Cache: cache})
	require.NoError(t, err)
	a, b := nodeOf(t, r, "stage.a"), nodeOf(t, r, "stage.b")
	assert.Equal(t, [2]time.Time{at(4), at(104)}, [2]time.Time{a.Start, a.End})
	assert.Equal(t, [2]time.Time{at(140), at(240)}, [2]time.Time{b.Start, b.End})
	assert.InDelta(t, 0.1, b.Duration, 1e-9)
	assert.Equal(t, "cpu 0", b.Tries[0].Lane)
}

// A Slurm job's attempt runs from the end of its wait in the queue for
// its command's own run time, as apply's line gives it (`ok in 1.2s
// (queued 400ms)`): not to its finished record, written when cairn learnt
// of its end a poll later. The JSON's duration and end and trace.tsv's
// realtime and complete say the same.
func TestSlurmAttemptEndsWithItsCommand(t *testing.T) {
	key := strings.Repeat("e", 64)
	job := &process.JobRef{Executor: "slurm", ID: "4242", Details: map[string]string{process.SubmittedDetail: strconv.FormatInt(at(100).UnixNano(), 10)}}
	dir := writeJournal(t, t.TempDir(), "20260301T120000.000Z-eeeeee", []runlog.Entry{
		{T: runlog.Planned, Time: t0, Node: "stage.work", Key: key},
		{T: runlog.Started, Time: at(120), Node: "stage.work", Key: key, Attempt: 1, Job: job},
		{T: runlog.Finished, Time: at(2600), Node: "stage.work", Key: key, Attempt: 1, Duration: 1.2, Queued: 0.4},
	}, "ok")
	r, err := runreport.Build(dir, runreport.Options{})
	require.NoError(t, err)
	n := nodeOf(t, r, "stage.work")
	assert.InDelta(t, 1.2, n.Duration, 1e-9, "the command's own run time")
	assert.InDelta(t, 0.4, n.Tries[0].Queued, 1e-9)
	assert.WithinDuration(t, at(500), n.Start, 0, "queued_s after its submission")
	assert.WithinDuration(t, at(1700), n.End, 0, "when its command ended")
	var trace bytes.Buffer
	require.NoError(t, r.WriteTrace(&trace))
	assert.Contains(t, trace.String(), "\t4242\tstage.work\tstage.work\t-\t1\tCOMPLETED\t2026-03-01T12:00:00.100Z\t2026-03-01T12:00:00.500Z\t2026-03-01T12:00:01.700Z\t1.600\t1.200\t")
}
