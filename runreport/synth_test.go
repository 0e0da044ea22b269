package runreport_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/process"
)

// t0 is when the synthetic runs start.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// at is t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// writeJournal writes a run's journal with these records (run_start
// first) into cacheDir/runs/ID and returns the run folder. end closes the
// run with a run_end record of that status ("" leaves the run as a
// killed one leaves it).
func writeJournal(t testing.TB, cacheDir, id string, es []runlog.Entry, end string) string {
	t.Helper()
	j, err := runlog.Open(cacheDir, id, true)
	require.NoError(t, err)
	all := append([]runlog.Entry{{T: runlog.RunStart, Time: t0, RunID: id, Pipeline: "synthetic", PID: 1,
		Args: []string{"apply", "p.hcl", "--var", "tag=x", "--var", "token=(sensitive)"}, Host: "box", Dir: "/work", Version: "v-test",
		Devices: []runlog.Device{{Index: 0, Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559}, {Index: 1, Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559}}}}, es...)
	if end != "" {
		last := t0
		for _, e := range es {
			if e.Time.After(last) {
				last = e.Time
			}
		}
		all = append(all, runlog.Entry{T: runlog.RunEnd, Time: last.Add(time.Millisecond), Status: end})
	}
	for i := 0; i < len(all); i += 4096 {
		require.NoError(t, j.WriteBatch(all[i:min(len(all), i+4096)]))
	}
	require.NoError(t, j.Close())
	return filepath.Join(cacheDir, "runs", id)
}

// smallRun is a run of five nodes: one ran on a CPU slot, one ran on GPU
// 1 after a failed attempt, one failed for good (with a log), one was
// skipped, one cached.
func smallRun(t testing.TB, cacheDir string) string {
	logDir := filepath.Join(cacheDir, "logs")
	require.NoError(t, os.MkdirAll(logDir, 0o755))
	out, errf := filepath.Join(logDir, "c.out"), filepath.Join(logDir, "c.err")
	require.NoError(t, os.WriteFile(out, []byte("loading model\n"), 0o644))
	require.NoError(t, os.WriteFile(errf, []byte("Traceback (most recent call last):\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"), 0o644))
	job := func(id string) *process.JobRef { return &process.JobRef{Executor: "local", ID: id} }
	return writeJournal(t, cacheDir, "20260301T120000.000Z-aaaaaa", []runlog.Entry{
		{T: runlog.Planned, Time: t0, Node: `stage.a`, Key: "aaaa1111", Reasons: []string{"input data/x.jsonl changed"}},
		{T: runlog.Planned, Time: t0, Node: `stage.b["k"]`, Key: "bbbb2222"},
		{T: runlog.Planned, Time: t0, Node: `stage.c`, Key: "cccc3333"},
		{T: runlog.Planned, Time: t0, Node: `stage.d`},
		{T: runlog.Cached, Time: at(1), Node: `stage.e`, Key: "eeee5555"},
		{T: runlog.Started, Time: at(10), Node: `stage.a`, Key: "aaaa1111", Attempt: 1, Job: job("101")},
		{T: runlog.Finished, Time: at(1010), Node: `stage.a`, Key: "aaaa1111", Attempt: 1, PeakRSS: 12.5},
		{T: runlog.Started, Time: at(1020), Node: `stage.b["k"]`, Key: "bbbb2222", Attempt: 1, GPUs: []int{1}, Job: job("102")},
		{T: runlog.Failed, Time: at(2020), Node: `stage.b["k"]`, Key: "bbbb2222", Attempt: 1, Class: "transient", Message: "exit 1"},
		{T: runlog.Started, Time: at(2100), Node: `stage.b["k"]`, Key: "bbbb2222", Attempt: 2, GPUs: []int{1}, Job: job("103")},
		{T: runlog.Finished, Time: at(4100), Node: `stage.b["k"]`, Key: "bbbb2222", Attempt: 2, PeakRSS: 100, PeakGPU: 2048},
		{T: runlog.Started, Time: at(1030), Node: `stage.c`, Key: "cccc3333", Attempt: 1, GPUs: []int{0}, Job: job("104"), Logs: []string{out, errf}},
		{T: runlog.Failed, Time: at(1530), Node: `stage.c`, Key: "cccc3333", Attempt: 1, Class: "oom", Message: "CUDA out of memory", PeakGPU: 40000},
		{T: runlog.Skipped, Time: at(1531), Node: `stage.d`, Message: "upstream stage.c failed"},
	}, "failed")
}

// bigRun is a run of n nodes, every tenth on one of 8 GPUs, one in a
// thousand failed, the others ran on 16 CPU slots.
func bigRun(t testing.TB, cacheDir string, n int) string {
	var es []runlog.Entry
	for i := 0; i < n; i++ {
		addr := fmt.Sprintf(`stage.s%d["item-%06d"]`, i%7, i)
		es = append(es, runlog.Entry{T: runlog.Planned, Time: t0, Node: addr, Key: fmt.Sprintf("%064x", i)})
	}
	for i := 0; i < n; i++ {
		addr := fmt.Sprintf(`stage.s%d["item-%06d"]`, i%7, i)
		start := at(i / 16 * 50)
		st := runlog.Entry{T: runlog.Started, Time: start, Node: addr, Attempt: 1, Job: &process.JobRef{Executor: "local", ID: fmt.Sprint(1000 + i)}}
		if i%10 == 0 {
			st.GPUs = []int{i / 10 % 8}
		}
		es = append(es, st)
		end := runlog.Entry{T: runlog.Finished, Time: start.Add(45 * time.Millisecond), Node: addr, Attempt: 1, PeakRSS: float64(i % 500)}
		if i%1000 == 999 {
			end.T, end.Class, end.Message = runlog.Failed, "nonzero_exit", "exit status 1"
		}
		es = append(es, end)
	}
	return writeJournal(t, cacheDir, "20260301T120000.000Z-bbbbbb", es, "failed")
}
