package runreport_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/runreport"
	"github.com/cairn-run/cairn/runreport/browsertest"
)

// benchOut is the repository's bench/out folder (git-ignored), where the
// screenshots and figures go.
func benchOut(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "bench", "out")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// writePage builds the report of the run in dir and writes its page.
func writePage(t testing.TB, dir string) (*runreport.Report, string) {
	t.Helper()
	r, err := runreport.Build(dir, runreport.Options{})
	require.NoError(t, err)
	page := filepath.Join(dir, runreport.HTMLName)
	require.NoError(t, r.WriteFiles(page, nil))
	return r, page
}

// The page of a small run opens without a console error, its header
// counts are the report's, the failed node is opened with its log tail,
// its bars are in their GPU and CPU lanes, and the filter and the sort of
// the nodes table work.
func TestPageInBrowser(t *testing.T) {
	r, page := writePage(t, smallRun(t, t.TempDir()))
	p := browsertest.Open(t, page, 1400, 1000)
	assert.Empty(t, p.Errors(), "console errors")
	for k, want := range map[string]int{"ran": r.Run.Counts.Ran, "cached": r.Run.Counts.Cached, "failed": r.Run.Counts.Failed, "skipped": r.Run.Counts.Skipped, "failed_attempts": r.Run.Counts.FailedAttempts} {
		assert.Equal(t, fmt.Sprint(want), browsertest.Eval[string](t, p, `document.getElementById("count-`+k+`").textContent`), k)
	}
	assert.Equal(t, "stage.c", browsertest.Eval[string](t, p, `document.getElementById("detail-box").dataset.node`))
	// Memory and durations are written as cairn's command line writes
	// them (Go's %.1f, %.3f): an exact tie to the even digit, where
	// toFixed takes the larger.
	for _, x := range []float64{19.25, 20.25, 19.35, 0.05, 1.0005, 2.0625, 7.1875, 1536.75, 0} {
		for _, d := range []int{1, 3} {
			assert.Equal(t, fmt.Sprintf("%.*f", d, x), browsertest.Eval[string](t, p, fmt.Sprintf("fixed(%v, %d)", x, d)), "%v with %d decimals", x, d)
		}
	}
	assert.Contains(t, browsertest.Eval[string](t, p, `document.querySelector('#detail-box details[data-stream="stderr"] pre').textContent`), "CUDA out of memory")
	lanes := browsertest.Eval[map[string]string](t, p, `Object.fromEntries([...document.querySelectorAll("rect.bar[data-node]")].map(b => [b.dataset.node + "#" + b.dataset.state, b.dataset.lane]))`)
	assert.Equal(t, map[string]string{"stage.a#ok": "cpu 0", `stage.b["k"]#failed`: "gpu 1", `stage.b["k"]#ok`: "gpu 1", "stage.c#failed": "gpu 0"}, lanes)
	assert.Contains(t, browsertest.Eval[string](t, p, `document.getElementById("vars").textContent`), "(sensitive)")
	assert.Contains(t, browsertest.Eval[string](t, p, `document.getElementById("command-sensitive").textContent`), "set CAIRN_VAR_TOKEN to the value of token", "the page says the value must be given again")
	assert.Equal(t, "gpu 1 · 80G"+"gpu 1: NVIDIA H100 80GB HBM3, 81559 MiB", browsertest.Eval[string](t, p, `document.querySelector("text.lane[data-lane='gpu 1']").textContent`), "a GPU lane names its device")

	// Hover: the node, its outcome and class, its times and lane.
	tip := browsertest.Eval[string](t, p, `(() => { const r = document.querySelector("rect.bar[data-node='stage.c']"), b = r.getBoundingClientRect();
		r.dispatchEvent(new MouseEvent("mousemove", { bubbles: true, clientX: b.x + 1, clientY: b.y + 1 })); return document.getElementById("tip").textContent })()`)
	assert.Contains(t, tip, "stage.c\nfailed (oom), attempt 1\n2026-03-01 12:00:01.030 UTC → 2026-03-01 12:00:01.530 UTC  (0.500 s)\nlane gpu 0")
	// Zoom at the pointer: a wheel turn up widens the bars.
	width := `document.querySelector("rect.bar[data-node='stage.a']").getBBox().width`
	before := browsertest.Eval[float64](t, p, width)
	browsertest.Eval[bool](t, p, `(() => { const tl = document.getElementById("tl"), b = tl.getBoundingClientRect();
		tl.dispatchEvent(new WheelEvent("wheel", { bubbles: true, cancelable: true, deltaY: -100, clientX: b.x + 200, clientY: b.y + 40 })); return true })()`)
	assert.Greater(t, browsertest.Eval[float64](t, p, width), before*1.1, "zoomed in (by a quarter, less what the lane's left edge cuts)")
	browsertest.Eval[bool](t, p, `document.getElementById("tl").dispatchEvent(new MouseEvent("dblclick", { bubbles: true })), true`)
	assert.InDelta(t, before, browsertest.Eval[float64](t, p, width), before*0.01, "double-click resets")

	rows := func() []string {
		return browsertest.Eval[[]string](t, p, `[...document.querySelectorAll("#tbody .row")].sort((a, b) => a.offsetTop - b.offsetTop).map(r => r.querySelector('[data-col="address"]').textContent)`)
	}
	assert.Len(t, rows(), 5)
	browsertest.Eval[bool](t, p, `window.cairnReport.table.filter("", "failed"), true`)
	assert.Equal(t, []string{"stage.c"}, rows())
	browsertest.Eval[bool](t, p, `window.cairnReport.table.filter("data/x.jsonl", ""), true`)
	assert.Equal(t, []string{"stage.a"}, rows(), "the plan reason is searched")
	browsertest.Eval[bool](t, p, `window.cairnReport.table.filter("", ""), document.querySelector('#thead [data-col="duration"]').click(), true`)
	assert.Equal(t, `stage.b["k"]`, rows()[0], "longest first")
	assert.Empty(t, p.Errors(), "console errors")
}

// A page of 100,000 nodes opens, and filters, fast: the figures are
// logged and written to bench/out/report-100k.txt (not asserted: a loaded
// machine must not fail the test), with screenshots of the timeline and
// the nodes table.
func TestBigPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and opens a 100,000-node report")
	}
	n := 100_000
	dir := bigRun(t, t.TempDir(), n)
	built := time.Now()
	r, page := writePage(t, dir)
	buildDur := time.Since(built)
	require.Len(t, r.Nodes, n)
	fi, err := os.Stat(page)
	require.NoError(t, err)

	p := browsertest.Open(t, page, 1400, 1000)
	assert.Empty(t, p.Errors(), "console errors")
	// The page's own clock: from the start of navigation to drawn.
	opened := browsertest.Eval[float64](t, p, `performance.now()`)
	phases := browsertest.Eval[map[string]float64](t, p, `window.cairnReport.timings`)
	shown := browsertest.Eval[string](t, p, `document.getElementById("shown").textContent`)
	assert.Equal(t, fmt.Sprintf("%d of %d nodes", n, n), shown)
	filterMs := browsertest.Eval[float64](t, p, `(() => { const t = performance.now(); window.cairnReport.table.filter("item-000999", ""); return performance.now() - t; })()`)
	assert.Equal(t, "1 of 100000 nodes", browsertest.Eval[string](t, p, `document.getElementById("shown").textContent`))
	stateMs := browsertest.Eval[float64](t, p, `(() => { const t = performance.now(); window.cairnReport.table.filter("", "failed"); return performance.now() - t; })()`)
	assert.Equal(t, "100 of 100000 nodes", browsertest.Eval[string](t, p, `document.getElementById("shown").textContent`))
	browsertest.Eval[bool](t, p, `window.cairnReport.table.filter("", ""), true`)
	rendered := browsertest.Eval[int](t, p, `document.querySelectorAll("#tbody .row").length`)
	assert.Less(t, rendered, 200, "rows are virtualised")
	out := benchOut(t)
	browsertest.Shot(t, p, "#timeline", filepath.Join(out, "report-100k-timeline.png"))
	browsertest.Shot(t, p, "#nodes", filepath.Join(out, "report-100k-nodes.png"))
	figures := fmt.Sprintf("report of %d nodes: page %.1f MiB, built in %s; opened and drawn in %.0f ms (since navigation: script started %.0f, base64 decoded %.0f, inflated %.0f (%.1f MiB of JSON), parsed %.0f, columns unpacked %.0f, timeline %.0f, nodes table %.0f, all %.0f); filter by text %.0f ms, by state %.0f ms (headless Chromium)\n",
		n, float64(fi.Size())/(1<<20), buildDur.Round(time.Millisecond), opened, phases["start"], phases["decoded"], phases["inflated"], phases["json_mib"], phases["unpacked"], phases["columns"], phases["timeline"], phases["nodes"], phases["items"], filterMs, stateMs)
	t.Log(figures)
	require.NoError(t, os.WriteFile(filepath.Join(out, "report-100k.txt"), []byte(figures), 0o644))
	b, _ := json.Marshal(map[string]float64{"open_ms": opened, "filter_ms": filterMs})
	t.Logf("figures: %s", b)
	assert.Less(t, opened+filterMs, 60_000.0, "a generous bound: the page is meant to open and filter in under 3 s")
}

// A run whose every node was taken from the cache has no lane and no bar:
// its page opens all the same, without a console error.
func TestPageOfCachedRunInBrowser(t *testing.T) {
	dir := writeJournal(t, t.TempDir(), "20260301T120000.000Z-dddddd", []runlog.Entry{
		{T: runlog.Cached, Time: at(1), Node: "stage.a", Key: "aaaa"},
		{T: runlog.Cached, Time: at(2), Node: "stage.b", Key: "bbbb"},
	}, "ok")
	_, page := writePage(t, dir)
	p := browsertest.Open(t, page, 1200, 800)
	assert.Empty(t, p.Errors(), "console errors")
	assert.Equal(t, "2", browsertest.Eval[string](t, p, `document.getElementById("count-cached").textContent`))
	assert.Equal(t, "2 of 2 nodes", browsertest.Eval[string](t, p, `document.getElementById("shown").textContent`))
}

// A killed run's page ends its timeline at the journal's last record:
// the bar of the node it was running ends there, as the header's duration
// and the node's row do, however long after the kill the page is written.
func TestPageOfKilledRunEndsAtItsLastRecord(t *testing.T) {
	dir := writeJournal(t, t.TempDir(), "20260301T120000.000Z-cccccc", []runlog.Entry{
		{T: runlog.Planned, Time: t0, Node: "stage.a", Key: "aaaa"},
		{T: runlog.Planned, Time: t0, Node: "stage.b", Key: "bbbb"},
		{T: runlog.Started, Time: at(5), Node: "stage.a", Attempt: 1},
		{T: runlog.Started, Time: at(910), Node: "stage.b", Attempt: 1},
		{T: runlog.Finished, Time: at(1400), Node: "stage.a", Attempt: 1},
	}, "")
	_, page := writePage(t, dir)
	p := browsertest.Open(t, page, 1400, 1000)
	assert.Empty(t, p.Errors(), "console errors")
	assert.Equal(t, "1.400 s", browsertest.Eval[string](t, p, `document.getElementById("run-duration").textContent`))
	assert.Equal(t, 1400.0, browsertest.Eval[float64](t, p, `window.cairnReport.data.now`), "the timeline ends at the last record")
	bar := browsertest.Eval[[]float64](t, p, `bar(+document.querySelector("rect.bar[data-node='stage.b']").dataset.bar)`)
	assert.Equal(t, []float64{910, 1400}, bar[2:4], "stage.b's bar: from its start to the last record")
	assert.Equal(t, "0.490 s", browsertest.Eval[string](t, p, `window.cairnReport.table.filter("stage.b", ""), document.querySelector('#tbody .row [data-col="duration"]').textContent`))
}

// A retried node's bars are each its attempt's: hovering the first says
// how the first failed (timed out), the second how the second did.
func TestPageHoverGivesEachAttemptsClass(t *testing.T) {
	dir := writeJournal(t, t.TempDir(), "20260301T120000.000Z-666666", []runlog.Entry{
		{T: runlog.Planned, Time: t0, Node: "stage.n", Key: "nnnn"},
		{T: runlog.Started, Time: at(10), Node: "stage.n", Key: "nnnn", Attempt: 1},
		{T: runlog.Failed, Time: at(1010), Node: "stage.n", Key: "nnnn", Attempt: 1, Class: "timeout", Message: "timed out after 1s"},
		{T: runlog.Started, Time: at(1100), Node: "stage.n", Key: "nnnn", Attempt: 2},
		{T: runlog.Failed, Time: at(1200), Node: "stage.n", Key: "nnnn", Attempt: 2, Class: "memory_failure", Message: "CUDA out of memory"},
	}, "failed")
	_, page := writePage(t, dir)
	p := browsertest.Open(t, page, 1400, 1000)
	tips := browsertest.Eval[[]string](t, p, `[...document.querySelectorAll("rect.bar[data-node='stage.n']")].map(r => { const b = r.getBoundingClientRect();
		r.dispatchEvent(new MouseEvent("mousemove", { bubbles: true, clientX: b.x + 1, clientY: b.y + 1 })); return document.getElementById("tip").textContent.split("\n")[1] }).sort()`)
	assert.Equal(t, []string{"failed (memory_failure), attempt 2", "failed (timeout), attempt 1"}, tips)
	assert.Empty(t, p.Errors(), "console errors")
}

// A run stopped by Ctrl-C wrote its end record: its page says it was
// interrupted and ended, not that it has no end record, as a killed
// run's does.
func TestPageSaysHowAnInterruptedRunEnded(t *testing.T) {
	es := []runlog.Entry{
		{T: runlog.Planned, Time: t0, Node: "stage.long", Key: "llll"},
		{T: runlog.Started, Time: at(10), Node: "stage.long", Key: "llll", Attempt: 1},
		{T: runlog.Failed, Time: at(2000), Node: "stage.long", Key: "llll", Attempt: 1, Class: "interrupted", Message: "interrupted"},
	}
	for _, c := range []struct{ end, says, exit string }{
		{"interrupted", "was interrupted (Ctrl-C or SIGTERM) and ended", "130"},
		{"", "ended without its end record", "(none: the run never ended)"},
	} {
		_, page := writePage(t, writeJournal(t, t.TempDir(), "20260301T120000.000Z-999990", es, c.end))
		p := browsertest.Open(t, page, 1200, 800)
		warns := browsertest.Eval[string](t, p, `[...document.querySelectorAll("#header .warn")].map(d => d.textContent).join("\n")`)
		assert.Contains(t, warns, c.says, "end record %q", c.end)
		if c.end != "" {
			assert.NotContains(t, warns, "without its end record")
		}
		assert.Equal(t, c.exit, browsertest.Eval[string](t, p, `document.getElementById("run-exit").textContent`))
		assert.Empty(t, p.Errors(), "console errors")
	}
}

// A node that did not start is "not started" all over the page, as in
// the header's counts: the state filter, the legend, its row.
func TestPageCallsPlannedNodesNotStarted(t *testing.T) {
	dir := writeJournal(t, t.TempDir(), "20260301T120000.000Z-777777", []runlog.Entry{
		{T: runlog.Planned, Time: t0, Node: "stage.a", Key: "aaaa"},
		{T: runlog.Planned, Time: t0, Node: "stage.b", Key: "bbbb"},
		{T: runlog.Started, Time: at(10), Node: "stage.a", Key: "aaaa", Attempt: 1},
	}, "")
	_, page := writePage(t, dir)
	p := browsertest.Open(t, page, 1400, 1000)
	assert.Contains(t, browsertest.Eval[string](t, p, `document.getElementById("counts").textContent`), "1 not started")
	assert.Equal(t, "not started", browsertest.Eval[string](t, p, `document.querySelector("#statefilter option[value='planned']").textContent`))
	assert.Contains(t, browsertest.Eval[string](t, p, `document.getElementById("legend").textContent`), "not started")
	assert.NotContains(t, browsertest.Eval[string](t, p, `document.getElementById("legend").textContent`), "planned")
	assert.Equal(t, "not started", browsertest.Eval[string](t, p, `window.cairnReport.table.filter("", "planned"), document.querySelector('#tbody .row [data-col="state"]').textContent`))
	assert.Empty(t, p.Errors(), "console errors")
}

// A run of no nodes (an empty for_each) ended ok: its page draws all the
// same, with no bar and an empty nodes table, without a console error.
func TestPageOfRunWithoutNodesInBrowser(t *testing.T) {
	_, page := writePage(t, writeJournal(t, t.TempDir(), "20260301T120000.000Z-000000", nil, "ok"))
	p := browsertest.Open(t, page, 1200, 800)
	assert.Empty(t, p.Errors(), "console errors")
	assert.Empty(t, browsertest.Eval[string](t, p, `[...document.querySelectorAll(".fatal, #fatal")].map(d => d.textContent).join("")`), "no banner")
	assert.Equal(t, "0 of 0 nodes", browsertest.Eval[string](t, p, `document.getElementById("shown").textContent`))
	assert.Equal(t, "0", browsertest.Eval[string](t, p, `document.getElementById("count-ran").textContent`))
}

// The timeline's axis labels each tick differently: a run of a few
// milliseconds in ms, a longer one in seconds with the decimals its ticks
// need (here zoomed to 50 ms ticks past the first minute).
func TestPageAxisLabelsAreDistinct(t *testing.T) {
	for _, c := range []struct {
		ms   int
		want []string
	}{
		{6, []string{"0 ms", "1 ms", "2 ms", "3 ms", "4 ms", "5 ms", "6 ms", "7 ms"}},
		{28, []string{"0 ms", "5 ms", "10 ms", "15 ms", "20 ms", "25 ms"}},
	} {
		dir := writeJournal(t, t.TempDir(), fmt.Sprintf("20260301T120000.000Z-%06d", c.ms), []runlog.Entry{
			{T: runlog.Planned, Time: t0, Node: "stage.a", Key: "aaaa"},
			{T: runlog.Started, Time: t0, Node: "stage.a", Key: "aaaa", Attempt: 1},
			{T: runlog.Finished, Time: at(c.ms), Node: "stage.a", Key: "aaaa", Attempt: 1},
		}, "ok")
		_, page := writePage(t, dir)
		p := browsertest.Open(t, page, 1400, 800)
		assert.Empty(t, p.Errors(), "console errors")
		assert.Equal(t, c.want, browsertest.Eval[[]string](t, p, `[...document.querySelectorAll("#tlsvg text.tick")].map(x => x.textContent)`), "a %d ms run", c.ms)
		assert.Equal(t, []string{"1m05.00s", "1m05.05s", "1m05.10s", "1h00m00.05s", "0.5s", "1.0s", "2m00s"},
			browsertest.Eval[[]string](t, p, `[[65000, 50], [65050, 50], [65100, 50], [3600050, 50], [500, 500], [1000, 500], [120000, 60000]].map(([t, s]) => tickLabel(t, s, 4000000))`))
	}
}
