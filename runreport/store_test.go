package runreport_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/cas"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/runreport"
	"github.com/cairn-run/cairn/runreport/browsertest"
)

// A run of the Slurm executor with an evaluation whose record holds its
// scores, and a node taken from the cache: the evaluation's items are in
// its page (drawn when asked for), the cached node says where it came
// from (one the plan said may run too: its plan's reason is not what
// happened), the Slurm jobs have Slurm lanes and their job ids in the
// trace.
func TestReportItemsAndSlurm(t *testing.T) {
	cacheDir := t.TempDir()
	cache, err := store.Open(cacheDir, store.Options{NoSync: true})
	require.NoError(t, err)
	defer cache.Close()
	var scores bytes.Buffer
	const items = 50_000
	for i := range items {
		fmt.Fprintf(&scores, `{"id":"q-%05d","score":%d,"outputs":{"answer":"%d"}}`+"\n", i, i%3/2, i)
	}
	scoresPath := "runs/eval/scores.jsonl"
	commit := func(key, addr, kind, run string, result string, outputs map[string][]byte) {
		r := &store.Record{Format: 1, Key: key, Envelope: []byte(`{"v":"cairn.node.v1","kind":"` + kind + `"}`), Outputs: map[string]string{}, Inline: map[string][]byte{},
			Result: []byte(result), Started: t0, Ended: t0.Add(time.Second), Attempts: 1, Pipeline: "synthetic", Address: addr, RunID: run}
		for p, b := range outputs {
			r.Outputs[p] = string(cas.DigestBytes(b))
			r.Inline[p] = b
		}
		_, err := cache.Commit(r, nil)
		require.NoError(t, err)
	}
	evalKey, cachedKey := strings.Repeat("e", 64), strings.Repeat("c", 64)
	commit(evalKey, "stage.eval", "evaluate", "20260301T120000.000Z-eeeeee", `{"scores_file":"`+scoresPath+`","mean_score":0.33}`, map[string][]byte{scoresPath: scores.Bytes()})
	commit(cachedKey, "stage.prep", "command", "20260228T090000.000Z-000000", `{}`, nil)
	mayKey := strings.Repeat("m", 64)
	commit(mayKey, "stage.use", "command", "20260228T090000.000Z-000000", `{}`, nil)

	slurm := func(id string) *process.JobRef { return &process.JobRef{Executor: "slurm", ID: id} }
	dir := writeJournal(t, cacheDir, "20260301T120000.000Z-eeeeee", []runlog.Entry{
		{T: runlog.Cached, Time: at(1500), Node: "stage.prep", Key: cachedKey},
		{T: runlog.Planned, Time: t0, Node: "stage.use", Reasons: []string{"depends on the output of stage.eval"}},
		{T: runlog.Cached, Time: at(2100), Node: "stage.use", Key: mayKey},
		{T: runlog.Planned, Time: t0, Node: "stage.eval", Key: evalKey},
		{T: runlog.Planned, Time: t0, Node: "stage.train", Key: "tttt"},
		{T: runlog.Started, Time: at(100), Node: "stage.eval", Key: evalKey, Attempt: 1, Job: slurm("4242")},
		{T: runlog.Started, Time: at(150), Node: "stage.train", Key: "tttt", Attempt: 1, Job: slurm("4243"), GPUs: []int{0, 1}},
		{T: runlog.Finished, Time: at(2100), Node: "stage.eval", Key: evalKey, Attempt: 1, Counts: map[string]int{"items": items}, Queued: 0.4},
		{T: runlog.Finished, Time: at(3150), Node: "stage.train", Key: "tttt", Attempt: 1, PeakGPU: 30000},
	}, "ok")
	r, err := runreport.Build(dir, runreport.Options{Cache: cache})
	require.NoError(t, err)
	assert.Equal(t, "slurm", r.Run.Executor)
	assert.Equal(t, "cached: from run 20260228T090000.000Z-000000 at 2026-03-01 12:00:01 UTC", nodeOf(t, r, "stage.prep").Reason)
	assert.Equal(t, "cached: from run 20260228T090000.000Z-000000 at 2026-03-01 12:00:01 UTC", nodeOf(t, r, "stage.use").Reason)
	assert.Equal(t, "evaluate", nodeOf(t, r, "stage.eval").Kind)
	eval := nodeOf(t, r, "stage.eval")
	assert.Equal(t, "slurm 0", eval.Tries[0].Lane)
	assert.InDelta(t, 0.5, eval.QueueWait, 1e-9, "0.1 s before its submission, 0.4 s in Slurm's queue")
	assert.InDelta(t, 1.6, eval.Duration, 1e-9, "from the end of its wait in the queue")
	assert.Equal(t, at(100), eval.Tries[0].Submit)
	assert.InDelta(t, 6.0, nodeOf(t, r, "stage.train").GPUSeconds, 1e-9, "3 s on 2 GPUs")
	var trace bytes.Buffer
	require.NoError(t, r.WriteTrace(&trace))
	// trace.tsv's row is the attempt's: submitted by its sbatch at 0.1 s,
	// 0.4 s in the queue (submit + queue_wait is its start).
	assert.Contains(t, trace.String(), "\t4242\tstage.eval\tstage.eval\tevaluate\t1\tCOMPLETED\t2026-03-01T12:00:00.100Z\t2026-03-01T12:00:00.500Z\t2026-03-01T12:00:02.100Z\t2.000\t1.600\t0.400\t")
	assert.Contains(t, trace.String(), "\t4243\tstage.train\tstage.train\t-\t1\tCOMPLETED\t")
	assert.Regexp(t, `\tstage\.use\t[^\n]*\tCACHED\t[^\n]*\tcached: from run 20260228T090000\.000Z-000000 at 2026-03-01 12:00:01 UTC\n`, trace.String())

	page := filepath.Join(dir, runreport.HTMLName)
	require.NoError(t, r.WriteFiles(page, cache))
	p := browsertest.Open(t, page, 1400, 1000)
	lanes := browsertest.Eval[[]string](t, p, `[...document.querySelectorAll("rect.bar[data-node='stage.train']")].map(b => b.dataset.lane).sort()`)
	assert.Equal(t, []string{"gpu 0", "gpu 1"}, lanes, "a bar on each GPU the node held")
	assert.Equal(t, "slurm 0", browsertest.Eval[string](t, p, `document.querySelector("rect.bar[data-node='stage.eval']").dataset.lane`))
	assert.Equal(t, 0, browsertest.Eval[int](t, p, `document.querySelectorAll("#itemlist table").length`), "items are unpacked when asked for")
	opened := browsertest.Eval[float64](t, p, `performance.now()`)
	shown := browsertest.Eval[float64](t, p, `new Promise(ok => { const t = performance.now(); document.querySelector("#itemlist .card[data-node='stage.eval'] button").click(); const f = () => document.querySelector("#itemlist table") ? ok(performance.now() - t) : setTimeout(f, 5); f() })`)
	t.Logf("a page with %d items of an evaluation: opened and drawn in %.0f ms; the items unpacked and drawn in %.0f ms (headless Chromium)", items, opened, shown)
	assert.Equal(t, 1+500, browsertest.Eval[int](t, p, `document.querySelectorAll("#itemlist table tr").length`), "the first 500 rows")
	assert.Contains(t, browsertest.Eval[string](t, p, `document.querySelector("#itemlist .card").textContent`), "first 500 of 50000 items")
	assert.Contains(t, browsertest.Eval[string](t, p, `document.querySelector("#itemlist svg").textContent`), "mean 0.3333 over 50000")
	assert.Empty(t, p.Errors(), "console errors")
}

// A node after the instances of a for_each stage whose outputs are alike
// (none: one output digest for all) waits from the end of the latest of
// them, not from the run's start: its queue wait is not the stage's time.
func TestQueueWaitAfterInstancesOfOneOutput(t *testing.T) {
	cacheDir := t.TempDir()
	cache, err := store.Open(cacheDir, store.Options{NoSync: true})
	require.NoError(t, err)
	defer cache.Close()
	commit := func(key, addr, env, out string) {
		r := &store.Record{Format: 1, Key: key, Envelope: []byte(env), OutputDigest: out, Result: []byte(`{}`),
			Started: t0, Ended: t0.Add(time.Second), Attempts: 1, Pipeline: "synthetic", Address: addr, RunID: "20260301T120000.000Z-aaaaaa"}
		_, err := cache.Commit(r, nil)
		require.NoError(t, err)
	}
	const none = "sha256:none"
	x, y, all, one := strings.Repeat("1", 64), strings.Repeat("2", 64), strings.Repeat("3", 64), strings.Repeat("4", 64)
	commit(x, `stage.a["x"]`, `{"v":"cairn.node.v1","kind":"command","upstreams":[]}`, none)
	commit(y, `stage.a["y"]`, `{"v":"cairn.node.v1","kind":"command","upstreams":[]}`, none)
	commit(all, "stage.after_all", `{"v":"cairn.node.v1","kind":"command","upstreams":["`+none+`","`+none+`"]}`, "sha256:all")
	commit(one, "stage.after_one", `{"v":"cairn.node.v1","kind":"command","upstreams":["`+none+`"]}`, "sha256:one")
	dir := writeJournal(t, cacheDir, "20260301T120000.000Z-aaaaaa", []runlog.Entry{
		{T: runlog.Started, Time: at(0), Node: `stage.a["x"]`, Key: x, Attempt: 1},
		{T: runlog.Started, Time: at(0), Node: `stage.a["y"]`, Key: y, Attempt: 1},
		{T: runlog.Finished, Time: at(1000), Node: `stage.a["x"]`, Key: x, Attempt: 1},
		{T: runlog.Finished, Time: at(1005), Node: `stage.a["y"]`, Key: y, Attempt: 1},
		{T: runlog.Started, Time: at(1008), Node: "stage.after_one", Key: one, Attempt: 1},
		{T: runlog.Started, Time: at(1010), Node: "stage.after_all", Key: all, Attempt: 1},
		{T: runlog.Finished, Time: at(1020), Node: "stage.after_one", Key: one, Attempt: 1},
		{T: runlog.Finished, Time: at(1020), Node: "stage.after_all", Key: all, Attempt: 1},
	}, "ok")
	r, err := runreport.Build(dir, runreport.Options{Cache: cache})
	require.NoError(t, err)
	assert.InDelta(t, 0.005, nodeOf(t, r, "stage.after_all").QueueWait, 1e-9, "from the end of a[\"y\"], the last")
	assert.InDelta(t, 0.003, nodeOf(t, r, "stage.after_one").QueueWait, 1e-9, "from the latest of its possible upstreams")
}

// A key's record another run made after this one (gc collected this
// run's and a later apply ran the key again, or apply --replace ran it)
// is not this run's: a node that ran here, or took the record before it
// was replaced, is gone, replaced by that run, and none of that run's
// results, tables or plots are shown as this run's. The records this run
// made, and the one it took from an earlier run, are shown.
func TestReportLeavesOutRecordsOtherRunsReplaced(t *testing.T) {
	cacheDir := t.TempDir()
	cache, err := store.Open(cacheDir, store.Options{NoSync: true})
	require.NoError(t, err)
	defer cache.Close()
	const this, earlier, later = "20260301T120000.000Z-aaaaaa", "20260228T090000.000Z-000000", "20260302T080000.000Z-bbbbbb"
	commit := func(key, addr, run string, ended time.Time, value string) {
		table := []byte("| run | value |\n| --- | ---: |\n| this | " + value + " |\n")
		r := &store.Record{Format: 1, Key: key, Envelope: []byte(`{"v":"cairn.node.v1","kind":"command"}`),
			Outputs: map[string]string{"table.md": string(cas.DigestBytes(table))}, Inline: map[string][]byte{"table.md": table},
			Result: []byte(`{"value":` + value + `}`), Started: ended.Add(-time.Second), Ended: ended, Attempts: 1, Pipeline: "synthetic", Address: addr, RunID: run}
		_, err := cache.Commit(r, nil)
		require.NoError(t, err)
	}
	ran, own, took, tookGone := strings.Repeat("1", 64), strings.Repeat("2", 64), strings.Repeat("3", 64), strings.Repeat("4", 64)
	later0 := t0.Add(20 * time.Hour)
	commit(ran, "stage.ran", later, later0, "9376")
	commit(own, "stage.own", this, at(900), "1111")
	commit(took, "stage.took", earlier, t0.Add(-time.Hour), "2222")
	commit(tookGone, "stage.gone", later, later0, "9377")
	dir := writeJournal(t, cacheDir, this, []runlog.Entry{
		{T: runlog.Cached, Time: at(10), Node: "stage.took", Key: took},
		{T: runlog.Cached, Time: at(10), Node: "stage.gone", Key: tookGone},
		{T: runlog.Started, Time: at(20), Node: "stage.ran", Key: ran, Attempt: 1},
		{T: runlog.Started, Time: at(20), Node: "stage.own", Key: own, Attempt: 1},
		{T: runlog.Finished, Time: at(1000), Node: "stage.ran", Key: ran, Attempt: 1},
		{T: runlog.Finished, Time: at(1000), Node: "stage.own", Key: own, Attempt: 1},
	}, "ok")
	r, err := runreport.Build(dir, runreport.Options{Cache: cache})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"stage.ran", "stage.gone"}, r.Run.Gone)
	assert.Equal(t, map[string]string{"stage.ran": later, "stage.gone": later}, r.Run.Replaced)
	require.NotEmpty(t, r.Run.Notes)
	note := r.Run.Notes[len(r.Run.Notes)-1]
	assert.Contains(t, note, "replaced since by records other runs made")
	assert.Contains(t, note, "stage.ran by run "+later)
	assert.NotContains(t, note, "no longer holds", "none was collected")
	assert.Equal(t, "cached: from run "+earlier+" at 2026-03-01 11:00:00 UTC", nodeOf(t, r, "stage.took").Reason)
	assert.Equal(t, "cached", nodeOf(t, r, "stage.gone").Reason, "not from the run that replaced it")
	data, err := json.Marshal(r)
	require.NoError(t, err)
	for _, v := range []string{"9376", "9377"} {
		assert.NotContains(t, string(data), v, "a later run's figure")
	}
	for _, v := range []string{"1111", "2222"} {
		assert.Contains(t, string(data), v, "this run's figure, and the one it took")
	}
}
