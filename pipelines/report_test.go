package pipelines_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/executor/slurm/slurmtest"
	"github.com/cairn-run/cairn/runreport"
	"github.com/cairn-run/cairn/runreport/browsertest"
)

// reportOf is the run id and page path `cairn report` printed at the end
// of a demo.
func reportOf(t *testing.T, out string) (id, state, path string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^Report of run (\S+) \((\w+)\): (\S+report\.html)$`).FindStringSubmatch(out)
	require.NotNil(t, m, "the demo ends by printing its report's path:\n%s", out)
	return m[1], m[2], m[3]
}

// showJSON is `cairn show RUN --json` in the demo's workspace.
func showJSON(t *testing.T, w *workspace, id string) *runreport.Report {
	t.Helper()
	out, code := w.run("show", id, "--json")
	require.Equal(t, 0, code, out)
	var r runreport.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return &r
}

// The demo's report, opened in headless Chromium: no console error; the
// 4 AIME24 variants each on the lane of the GPU the journal says it held,
// 4 lanes; the Pareto plot drawn; every number of the header and the
// nodes table equal to `cairn show RUN --json`'s. Then one variant runs
// out of GPU memory: the new run's page opens on that node with its log
// tail.
func TestDemoReportInBrowser(t *testing.T) {
	w, demo := demoRepo(t)
	out, code := demo()
	require.Equal(t, 0, code, out)
	id, state, page := reportOf(t, out)
	assert.Equal(t, "ok", state)
	js := showJSON(t, w, id)
	p := browsertest.Open(t, page, 1400, 1000)

	lanes := browsertest.Eval[map[string]string](t, p, `Object.fromEntries([...document.querySelectorAll("rect.bar[data-node^='stage.aime24']")].map(b => [b.dataset.node, b.dataset.lane]))`)
	want := map[string]string{}
	gpus := map[string]bool{}
	for _, n := range js.Nodes {
		if strings.HasPrefix(n.Addr, "stage.aime24[") {
			require.Len(t, n.GPUs, 1, n.Addr)
			want[n.Addr] = fmt.Sprintf("gpu %d", n.GPUs[0])
			gpus[want[n.Addr]] = true
		}
	}
	assert.Len(t, want, 4)
	assert.Len(t, gpus, 4, "the 4 variants ran side by side, one a GPU")
	assert.Equal(t, want, lanes)
	assert.Greater(t, browsertest.Eval[int](t, p, `(document.querySelector("img.artifact-svg[data-path$='pareto.svg']") || {}).naturalWidth || 0`), 100, "the Pareto plot is drawn")
	assert.Contains(t, browsertest.Eval[string](t, p, `document.querySelector("table.artifact-table[data-path$='table.md']").textContent`), "batch_demo_id3")

	// The page's numbers are show --json's.
	c := js.Run.Counts
	for k, v := range map[string]int{"ran": c.Ran, "cached": c.Cached, "failed": c.Failed, "skipped": c.Skipped} {
		assert.Equal(t, fmt.Sprint(v), browsertest.Eval[string](t, p, `document.getElementById("count-`+k+`").textContent`), k)
	}
	assert.Equal(t, fmt.Sprintf("%.3f s", js.Run.Duration), browsertest.Eval[string](t, p, `document.getElementById("run-duration").textContent`))
	assert.Equal(t, fmt.Sprint(js.Run.ExitStatus), browsertest.Eval[string](t, p, `document.getElementById("run-exit").textContent`))
	rows := browsertest.Eval[map[string]map[string]string](t, p, `Object.fromEntries([...document.querySelectorAll("#tbody .row")].map(r => [r.querySelector('[data-col="address"]').textContent, Object.fromEntries([...r.children].map(c => [c.dataset.col, c.textContent]))]))`)
	require.Len(t, rows, len(js.Nodes))
	mib := func(x float64) string {
		if x == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f MiB", x)
	}
	for _, n := range js.Nodes {
		r := rows[n.Addr]
		require.NotNil(t, r, n.Addr)
		assert.Equal(t, fmt.Sprintf("%.3f s", n.Duration), r["duration"], n.Addr)
		assert.Equal(t, mib(n.PeakRSS), r["peak_rss"], n.Addr)
		assert.Equal(t, mib(n.PeakGPU), r["peak_gpu"], n.Addr)
		assert.Equal(t, fmt.Sprint(n.Attempts), r["attempts"], n.Addr)
		assert.Equal(t, n.State, r["state"], n.Addr)
		assert.Equal(t, n.Key[:12], r["key"], n.Addr)
		if n.QueueWait >= 0 {
			assert.Equal(t, fmt.Sprintf("%.3f s", n.QueueWait), r["queue_wait"], n.Addr)
		}
	}
	assert.Contains(t, browsertest.Eval[string](t, p, `document.querySelector("table.artifact-table[data-path^='results of stage.aime24']").textContent`), "mean@16", "the variants' results, a row each")
	browsertest.ShotViewport(t, p, filepath.Join(benchOut(t), "report-demo-top.png"))
	browsertest.Shot(t, p, "#timeline", filepath.Join(benchOut(t), "report-demo-timeline.png"))
	browsertest.Shot(t, p, "#nodes", filepath.Join(benchOut(t), "report-demo-nodes.png"))
	assert.Empty(t, p.Errors(), "console errors")

	// One variant runs out of GPU memory.
	cfg := filepath.Join(w.dir, "submissions", "demo", "batch_demo_id3.json")
	var v map[string]any
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &v))
	v["sim"].(map[string]any)["oom"] = true
	v["sim"].(map[string]any)["stages"] = []string{"aime24"}
	b, _ = json.Marshal(v)
	require.NoError(t, os.WriteFile(cfg, b, 0o644))
	out, code = demo()
	require.Equal(t, 1, code, out)
	_, state, page = reportOf(t, out)
	assert.Equal(t, "failed", state)
	p = browsertest.Open(t, page, 1400, 1000)
	assert.Equal(t, `stage.aime24["batch_demo_id3"]`, browsertest.Eval[string](t, p, `document.getElementById("detail-box").dataset.node`))
	assert.Contains(t, browsertest.Eval[string](t, p, `document.querySelector('#detail-box details[data-stream="stderr"] pre').textContent`), "CUDA out of memory")
	assert.Equal(t, "1", browsertest.Eval[string](t, p, `document.getElementById("count-failed").textContent`))
	assert.Empty(t, p.Errors(), "console errors")
}

// apply --report writes the page while the run goes (a trace row of a
// node still running) and once more at its end, naming it.
func TestApplyReportWhileRunning(t *testing.T) {
	w := newWorkspace(t, "sim:4")
	for i := range names {
		w.setSim(i, map[string]any{"aime24_ms": 7000})
	}
	cmd := w.command(append([]string{"apply"}, pipelineArgs(names, "--report")...)...)
	var outb strings.Builder
	cmd.Stdout, cmd.Stderr = &outb, &outb
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	running := false
	for !running {
		select {
		case err := <-done:
			t.Fatalf("apply ended before its report showed a running node (%v):\n%s", err, outb.String())
		case <-time.After(100 * time.Millisecond):
		}
		traces, _ := filepath.Glob(filepath.Join(w.dir, ".cairn", "runs", "*", runreport.TraceName))
		for _, tr := range traces {
			b, _ := os.ReadFile(tr)
			if strings.Contains(string(b), "\tRUNNING\t") {
				running = true
				_, err := os.Stat(filepath.Join(filepath.Dir(tr), runreport.HTMLName))
				assert.NoError(t, err, "the page beside the trace")
			}
		}
	}
	require.NoError(t, <-done, outb.String())
	m := regexp.MustCompile(`(?m)^Report: (\S+)$`).FindStringSubmatch(outb.String())
	require.NotNil(t, m, outb.String())
	b, err := os.ReadFile(filepath.Join(filepath.Dir(m[1]), runreport.TraceName))
	require.NoError(t, err)
	assert.NotContains(t, string(b), "\tRUNNING\t", "rewritten at the end")
	assert.Equal(t, 4, strings.Count(string(b), "\tstage.aime24\twaves\t1\tCOMPLETED\t"), string(b))
	assert.Contains(t, string(b), "\t0\t1\t", "GPU 0, wave 1")
}

// benchOut is the repository's bench/out folder (git-ignored), where the
// screenshots go.
func benchOut(t *testing.T) string {
	dir, err := filepath.Abs(filepath.Join("..", "bench", "out"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// A run killed with kill -9 is reported as far as its journal goes: the
// run interrupted, the nodes it was running aborted, what ended before
// kept.
func TestReportOfKilledApply(t *testing.T) {
	w := newWorkspace(t, "sim:4")
	for i := range names {
		w.setSim(i, map[string]any{"aime24_ms": 20000})
	}
	cmd := w.command(append([]string{"apply"}, pipelineArgs(names)...)...)
	var outb strings.Builder
	cmd.Stdout, cmd.Stderr = &outb, &outb
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Wait for the batch's variants to start, by the journal.
	for started := 0; started < 4; {
		select {
		case err := <-done:
			t.Fatalf("apply ended before its batch started (%v):\n%s", err, outb.String())
		case <-time.After(100 * time.Millisecond):
		}
		started = 0
		if rs := w.runs(); len(rs) > 0 {
			for _, e := range rs[len(rs)-1].Entries {
				if e.T == "started" && strings.HasPrefix(e.Node, "stage.aime24[") {
					started++
				}
			}
		}
	}
	require.NoError(t, cmd.Process.Kill())
	<-done
	out, code := w.run("report")
	require.Equal(t, 0, code, out)
	_, state, page := reportOf(t, out)
	assert.Equal(t, "interrupted", state)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(page), runreport.TraceName))
	require.NoError(t, err)
	assert.Equal(t, 4, strings.Count(string(b), "\tstage.aime24\twaves\t1\tABORTED\t"), "a node cut off has no record: its kind is its started record's:\n%s", b)
	assert.Equal(t, 4, strings.Count(string(b), "\tstage.ruler\tcommand\t1\tCOMPLETED\t"), string(b))
	p := browsertest.Open(t, page, 1400, 1000)
	assert.Equal(t, "4", browsertest.Eval[string](t, p, `document.getElementById("count-interrupted").textContent`))
	assert.Equal(t, "(none: the run never ended)", browsertest.Eval[string](t, p, `document.getElementById("run-exit").textContent`), "killed: no exit code")
	assert.Empty(t, p.Errors(), "console errors")
}

// A node on a simulated GPU uses 1000, then 3000, then 500 MiB, a second
// each: the report's Resources section draws that curve on the GPU's
// plot, inside the node's bar on the timeline's time axis.
func TestReportGPUMemoryOverTime(t *testing.T) {
	w := newWorkspace(t, "sim:2")
	script := `d="$CAIRN_SIM_GPU_MEMORY/$CUDA_VISIBLE_DEVICES"; mkdir -p "$d"; for v in 1000 3000 500; do echo $v > "$d/tmp.$$"; mv "$d/tmp.$$" "$d/$$"; sleep 1; done; echo ok > done.txt`
	w.write("mem.hcl", fmt.Sprintf(`pipeline "mem" {}

stage "command" "alloc" {
  run     = ["sh", "-c", %q]
  gpus    = 1
  outputs = ["done.txt"]
}
`, script))
	cmd := w.command("apply", "mem.hcl", "--report")
	cmd.Env = append(cmd.Env, "CAIRN_SAMPLE_INTERVAL=50ms")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	m := regexp.MustCompile(`(?m)^Report: (\S+)$`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "%s", out)
	p := browsertest.Open(t, m[1], 1400, 1000)
	assert.Empty(t, p.Errors(), "console errors")

	type drawn struct {
		GPU    string    `json:"gpu"`
		Node   string    `json:"node"`
		Points []float64 `json:"points"`
		PathX0 float64   `json:"pathX0"`
		PathX1 float64   `json:"pathX1"`
		BarX0  float64   `json:"barX0"`
		BarX1  float64   `json:"barX1"`
	}
	got := browsertest.Eval[[]drawn](t, p, `[...document.querySelectorAll("#gpumem svg path.memseries")].map(path => {
		const bar = document.querySelector("rect.bar[data-node='" + path.dataset.node + "']"), pb = path.getBBox();
		return { gpu: path.closest("svg").dataset.gpu, node: path.dataset.node, points: JSON.parse(path.dataset.points),
			pathX0: pb.x, pathX1: pb.x + pb.width, barX0: bar.x.baseVal.value, barX1: bar.x.baseVal.value + bar.width.baseVal.value };
	})`)
	require.Len(t, got, 1, "one series: the node's one attempt on its one GPU")
	g := got[0]
	assert.Equal(t, "stage.alloc", g.Node)
	js := showJSON(t, w, regexp.MustCompile(`runs/([^/]+)/`).FindStringSubmatch(m[1])[1])
	n := js.Nodes[0]
	require.Len(t, n.GPUs, 1)
	assert.Equal(t, fmt.Sprintf("gpu %d", n.GPUs[0]), g.GPU, "drawn on the plot of the GPU the node held")
	// The curve's levels, in order (a sample taken before the first
	// report reads 0).
	var levels []float64
	for i := 1; i < len(g.Points); i += 2 {
		if v := g.Points[i]; v > 0 && (len(levels) == 0 || levels[len(levels)-1] != v) {
			levels = append(levels, v)
		}
	}
	assert.Equal(t, []float64{1000, 3000, 500}, levels, "points %v", g.Points)
	assert.Equal(t, 3000.0, n.PeakGPU, "the curve's top is the node's peak")
	// On the timeline's axis: the curve lies within the node's bar.
	assert.GreaterOrEqual(t, g.PathX0, g.BarX0-1)
	assert.LessOrEqual(t, g.PathX1, g.BarX1+1)
	assert.Greater(t, g.PathX1-g.PathX0, (g.BarX1-g.BarX0)/2, "the curve spans most of the bar")
}

// A run on the local Slurm cluster with --report: every node that ran is
// a Slurm job, and the page's nodes table gives each its job id as Slurm
// lists it under the run's name, and its wait in Slurm's queue (from
// submission to the job's start) as `cairn show --json` has it, within a
// second of what Slurm says of the job; the page opens with no console
// error, its bars in Slurm lanes.
func TestSlurmReportInBrowser(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	w.write("main.hcl", workThenSum([]string{"a", "b", "c"}, "${each.key} = none", "never"))
	out, code := w.run("apply", "main.hcl", "--report")
	require.Equal(t, 0, code, out)
	m := regexp.MustCompile(`(?m)^Report: (\S+)$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	run := w.runs()[len(w.runs())-1].ID
	js := showJSON(t, w, run)
	assert.Equal(t, "slurm", js.Run.Executor)

	// Slurm's own account of the run's jobs (named after the run): id,
	// submit and start times.
	jobs := map[string]float64{} // job id -> Slurm's queue wait, s
	for _, l := range strings.Split(strings.TrimSpace(squeue(t, "--noheader", "--states=all", "--name="+run, "--format=%i %V %S")), "\n") {
		f := strings.Fields(l)
		require.Len(t, f, 3, l)
		sub, err1 := time.ParseInLocation("2006-01-02T15:04:05", f[1], time.Local)
		start, err2 := time.ParseInLocation("2006-01-02T15:04:05", f[2], time.Local)
		require.NoError(t, err1, l)
		require.NoError(t, err2, l)
		jobs[f[0]] = start.Sub(sub).Seconds()
	}
	require.Len(t, jobs, 4, "a job a node: 3 work, 1 sum")

	p := browsertest.Open(t, m[1], 1400, 1000)
	rows := browsertest.Eval[map[string]map[string]string](t, p, `Object.fromEntries([...document.querySelectorAll("#tbody .row")].map(r => [r.querySelector('[data-col="address"]').textContent, Object.fromEntries([...r.children].map(c => [c.dataset.col, c.textContent]))]))`)
	require.Len(t, rows, len(js.Nodes))
	seen := map[string]bool{}
	for _, n := range js.Nodes {
		r := rows[n.Addr]
		require.NotNil(t, r, n.Addr)
		require.Len(t, n.Tries, 1, n.Addr)
		id := n.Tries[0].Job
		assert.Equal(t, "slurm:"+id, r["job"], n.Addr)
		wait, ok := jobs[id]
		require.True(t, ok, "%s: job %s is not one of the run's jobs in Slurm: %v", n.Addr, id, jobs)
		seen[id] = true
		// The page's queue wait is show --json's: from the journal's
		// record of Slurm's queue (submission to the job's start).
		assert.Equal(t, fmt.Sprintf("%.3f s", n.QueueWait), r["queue_wait"], n.Addr)
		assert.Greater(t, n.Tries[0].Queued, 0.0, "%s: a wait in Slurm's queue", n.Addr)
		assert.InDelta(t, wait, n.Tries[0].Queued, 1.5, "%s: Slurm's submit-to-start (whole seconds) against cairn's", n.Addr)
	}
	assert.Len(t, seen, 4)
	lanes := browsertest.Eval[[]string](t, p, `[...new Set([...document.querySelectorAll("rect.bar[data-node]")].map(b => b.dataset.lane))]`)
	for _, l := range lanes {
		assert.True(t, strings.HasPrefix(l, "slurm "), "lane %s", l)
	}
	assert.Equal(t, "slurm", browsertest.Eval[string](t, p, `[...document.querySelectorAll("#header dt")].find(d => d.textContent === "executor").nextSibling.textContent`))
	assert.Empty(t, p.Errors(), "console errors")
}
