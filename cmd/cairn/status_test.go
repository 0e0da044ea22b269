package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/events"
)

// A run whose journal is cut to a few bytes, or whose first record is
// damaged, is listed by cairn status, its start unknown and its state
// marked, not shown as starting in year 1 nor left out. The records after
// the damage are read: the damaged run's end says it ended ok.
func TestStatusShowsRunsWithDamagedJournals(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "pipeline \"p\" {}\nstage \"command\" \"a\" {\n  run = [\"true\"]\n}\n"})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	for i := 0; i < 2; i++ {
		r = runCLI(t, "--chdir", root, "apply", "--replace", "stage.a", "p.hcl")
		require.Equal(t, exitOK, r.code, r.stderr)
	}
	runs, err := filepath.Glob(filepath.Join(root, ".cairn", "runs", "2*"))
	require.NoError(t, err)
	require.Len(t, runs, 3)
	cut, damaged, whole := runs[0], runs[1], runs[2]
	require.NoError(t, os.Truncate(filepath.Join(cut, "journal"), 5))
	j := filepath.Join(damaged, "journal")
	b, err := os.ReadFile(j)
	require.NoError(t, err)
	b[20] ^= 0x20 // inside the first record, run_start
	require.NoError(t, os.WriteFile(j, b, 0o644))

	r = runCLI(t, "--chdir", root, "status")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "0001-01-01")
	lines := strings.Split(r.stdout, "\n")
	row := func(dir string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, filepath.Base(dir)+" ") {
				return strings.Join(strings.Fields(l), " ")
			}
		}
		t.Fatalf("run %s is not listed:\n%s", filepath.Base(dir), r.stdout)
		return ""
	}
	assert.Contains(t, row(cut), " unknown ? interrupted (journal damaged) ")
	assert.Contains(t, row(damaged), " unknown ? ok (journal damaged) 1 ")
	assert.Contains(t, row(whole), " p ok 1 ")
	assert.Contains(t, r.stdout, "run "+filepath.Base(cut)+": its journal holds no run_start record")
	assert.Contains(t, r.stdout, "run "+filepath.Base(damaged)+": its journal is damaged (wal: corrupt record at byte 8")

	r = runCLI(t, "--chdir", root, "show", filepath.Base(damaged))
	assert.Contains(t, r.stdout, "started unknown  ok (journal damaged)")
	assert.Contains(t, r.stdout, "the records in the damaged stretch are lost")
	assert.Regexp(t, `stage\.a +ok `, r.stdout, "its node's records, after the damage, are read")

	// The report of such a run is written, and the terminal warns too.
	r = runCLI(t, "--chdir", root, "report", filepath.Base(damaged))
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "warning: run "+filepath.Base(damaged)+": its journal is damaged (wal: corrupt record at byte 8")
	r = runCLI(t, "--chdir", root, "report", filepath.Base(whole))
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "warning")
}

// gc with a --cache that names no folder (a typo) says so and creates
// nothing; --max-size takes decimal and binary units and refuses what is
// not a size; show of an empty argument says what to give.
func TestGCAndShowRefuseWhatNamesNothing(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "pipeline \"p\" {}\nstage \"command\" \"a\" {\n  run = [\"true\"]\n}\n"})
	r := runCLI(t, "--chdir", root, "--cache", "typo", "gc")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "No cache at "+filepath.Join(root, "typo")+": nothing to remove.", "--cache is relative to --chdir")
	assert.NoDirExists(t, filepath.Join(root, "typo"))

	r = runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	for _, size := range []string{"10GiB", "1.5G", "500m", "2Ti", "100"} {
		r = runCLI(t, "--chdir", root, "gc", "--dry-run", "--max-size", size)
		assert.Equal(t, exitOK, r.code, size+": "+r.stderr)
	}
	for _, size := range []string{"NaN", "inf", "1e3", "0x10", "10XB", "-1G", "G", "1.2.3M"} {
		r = runCLI(t, "--chdir", root, "gc", "--dry-run", "--max-size", size)
		assert.Equal(t, exitBadInput, r.code, size)
		assert.Contains(t, r.stderr, "--max-size: \""+size+"\" is not a size like 500M", size)
	}

	r = runCLI(t, "--chdir", root, "show", "")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "give what to show: a run id")
}

// A gc flag given as 0 is a limit, not "no limit": --max-size 0 removes
// what --max-size 1 does, --older-than 0s every record and run ended
// before now; a negative age is refused (exit 2).
func TestGCZeroLimits(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "pipeline \"p\" {}\nstage \"command\" \"a\" {\n  run = [\"sh\", \"-c\", \"seq 1000 > a.txt\"]\n  outputs = [\"a.txt\"]\n}\n"})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	for _, c := range []struct{ args, says string }{
		{"--max-size 0", "Would remove 1 record(s)"},
		{"--max-size 1", "Would remove 1 record(s)"},
		{"--older-than 0s", "Would remove 1 record(s)"},
		{"--max-size 1G", "Would remove 0 record(s)"},
		{"--older-than 720h", "Would remove 0 record(s)"},
	} {
		r = runCLI(t, append([]string{"--chdir", root, "gc", "--dry-run"}, strings.Fields(c.args)...)...)
		require.Equal(t, exitOK, r.code, c.args+": "+r.stderr)
		assert.Contains(t, r.stdout, c.says, c.args)
	}
	r = runCLI(t, "--chdir", root, "gc", "--dry-run", "--older-than", "0s")
	assert.Contains(t, r.stdout, "1 run(s)", "the run is older than now")
	r = runCLI(t, "--chdir", root, "gc", "--older-than", "-1h")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "--older-than -1h0m0s: an age cannot be negative")

	r = runCLI(t, "--chdir", root, "gc", "--max-size", "0")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Removed 1 record(s)")
	r = runCLI(t, "--chdir", root, "plan", "p.hcl")
	assert.Contains(t, r.stdout, "1 to run", "the record is gone")
}

// gc's line on the runs it kept for refusals names each interrupted node
// and its run, its pipeline where there are several, and the --replace
// that lifts the refusal; a dry run says it would keep them.
func TestGCKeptRunsLine(t *testing.T) {
	res := &engine.GCResult{KeptRuns: 3, Refused: []engine.RefusedNode{
		{Pipeline: "a", Addr: "stage.x", RunID: "R1"}, {Pipeline: "b", Addr: `stage.y["k"]`, RunID: "R2"},
	}}
	assert.Equal(t, `Would keep 3 run folder(s): apply reads from them that stage.x of pipeline "a" (interrupted in run R1), stage.y["k"] of pipeline "b" (interrupted in run R2) are not restarted silently (their stages declare on_interrupt = "fail"). Once cairn apply --replace 'stage.x' --replace 'stage.y["k"]' ran them again, gc removes them.`,
		keptRunsLine(res, true))
	res = &engine.GCResult{KeptRuns: 1, Refused: []engine.RefusedNode{{Pipeline: "a", Addr: "stage.x", RunID: "R1"}}}
	assert.Equal(t, `Kept 1 run folder(s): apply reads from them that stage.x (interrupted in run R1) is not restarted silently (its stage declares on_interrupt = "fail"). Once cairn apply --replace 'stage.x' ran it again, gc removes them.`,
		keptRunsLine(res, false))
}

// report --out naming a folder, or the trace's own name, is refused
// before anything is written: no trace.tsv is left beside it.
func TestReportOutRefusedWritesNothing(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "pipeline \"p\" {}\nstage \"command\" \"a\" {\n  run = [\"true\"]\n}\n"})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.NoError(t, os.Mkdir(filepath.Join(root, "outdir"), 0o755))
	r = runCLI(t, "--chdir", root, "report", "--out", "outdir")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "--out outdir is not a regular file (a folder): name the page's file, such as outdir/report.html")
	r = runCLI(t, "--chdir", root, "report", "--out", "sub/trace.tsv")
	assert.Equal(t, exitBadInput, r.code)
	assert.NoFileExists(t, filepath.Join(root, "trace.tsv"))
	assert.NoDirExists(t, filepath.Join(root, "sub"))

	// A place under a file cannot take it: the command line's fault.
	require.NoError(t, os.WriteFile(filepath.Join(root, "afile"), nil, 0o644))
	r = runCLI(t, "--chdir", root, "report", "--out", "afile/r.html")
	assert.Equal(t, exitBadInput, r.code)
	assert.Regexp(t, `cannot write the report to --out \S*afile/r\.html \(not a directory\): give an --out you may write`, r.stderr)

	r = runCLI(t, "--chdir", root, "report", "--out", "page.html")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.FileExists(t, filepath.Join(root, "page.html"))
	assert.FileExists(t, filepath.Join(root, "trace.tsv"))
}

// cairn show RUN gives a retried node's duration from its first attempt's
// start to its end, as apply and the report do, and a failed node's peak
// memory, as its event does.
func TestShowRunGivesRetriedDurationAndFailedPeak(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `pipeline "p" {}
stage "command" "flaky" {
  run = ["sh", "-c", "sleep 0.4; exit 1"]
  retry {
    max = 1
    on  = ["exit"]
  }
}
`})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitFailed, r.code, r.stderr)
	runs, err := filepath.Glob(filepath.Join(root, ".cairn", "runs", "2*"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	r = runCLI(t, "--chdir", root, "show", filepath.Base(runs[0]))
	require.Equal(t, exitOK, r.code, r.stderr)
	row := showRow(r.stdout, "stage.flaky")
	require.NotEmpty(t, row, r.stdout)
	// stage.flaky failed (exit) 2 DURATION PEAK-RSS ...
	assert.Equal(t, "2", row[3], r.stdout)
	d, err := time.ParseDuration(row[4])
	require.NoError(t, err, r.stdout)
	assert.GreaterOrEqual(t, d, 800*time.Millisecond, "both attempts: %s", r.stdout)
	assert.NotEqual(t, "-", row[5], "a failed process's peak RSS: %s", r.stdout)
}

// An interrupted node retried before (each attempt killed at its
// timeout, the last stopped by Ctrl-C) has one duration in show RUN's
// table and in --json: its attempts' own run times added, not the time
// from its first start to its end, the gaps between attempts included.
func TestShowRunGivesInterruptedRetriedDuration(t *testing.T) {
	root := cliWorkspace(t, nil)
	t0 := time.Now().UTC().Add(-time.Minute)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	id := journalRun(t, root, "d", t0, []runlog.Entry{
		{T: runlog.Planned, Time: at(0), Node: "stage.r", Key: "k"},
		{T: runlog.Started, Time: at(0.1), Node: "stage.r", Key: "k", Attempt: 1},
		{T: runlog.Failed, Time: at(0.4), Node: "stage.r", Key: "k", Attempt: 1, Class: failclass.Timeout, Duration: 0.3},
		{T: runlog.Started, Time: at(1.4), Node: "stage.r", Key: "k", Attempt: 2},
		{T: runlog.Failed, Time: at(1.6), Node: "stage.r", Key: "k", Attempt: 2, Class: failclass.Interrupted, Duration: 0.2},
		{T: runlog.RunEnd, Time: at(1.7), Status: "interrupted"},
	})

	r := runCLI(t, "--chdir", root, "show", id)
	require.Equal(t, exitOK, r.code, r.stderr)
	row := showRow(r.stdout, "stage.r")
	// stage.r interrupted 2 DURATION ...
	require.Len(t, row, 8, r.stdout)
	assert.Equal(t, []string{"interrupted", "2", "500ms"}, row[1:4], r.stdout)
	r, _ = showOnlyRun(t, root)
	var rep struct {
		Nodes []struct {
			Duration float64 `json:"duration_s"`
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.Len(t, rep.Nodes, 1, r.stdout)
	assert.InDelta(t, 0.5, rep.Nodes[0].Duration, 1e-6, r.stdout)
}

// A node retried on setup failures (its program not found) has no
// started record: each attempt's failure names the .err where cairn said
// why, and show RUN lists them all, in its table and in --json's tries.
func TestShowRunListsEverySetupAttemptsLog(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `pipeline "p" {}
stage "command" "nope" {
  run = ["no-such-program-xyz"]
  retry {
    max = 2
    on  = ["setup"]
  }
}
`})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitFailed, r.code, r.stderr)
	r, dir := showOnlyRun(t, root)
	var rep struct {
		Nodes []struct {
			Tries []struct {
				Logs []string `json:"logs"`
			} `json:"tries"`
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	logs := filepath.Join(dir, "logs")
	want := []string{filepath.Join(logs, "nope.err"), filepath.Join(logs, "nope.attempt2.err"), filepath.Join(logs, "nope.attempt3.err")}
	require.Len(t, rep.Nodes, 1, r.stdout)
	require.Len(t, rep.Nodes[0].Tries, 3, r.stdout)
	for i, tr := range rep.Nodes[0].Tries {
		assert.Equal(t, want[i:i+1], tr.Logs, "attempt %d: %s", i+1, r.stdout)
	}
	assert.Equal(t, want, showRunLogs(t, root, filepath.Base(dir), "stage.nope"))
}

// A node's queue wait counts from its last upstream's end, not from the
// run's start: a node started right after its upstream waited about
// nothing, however long the upstream ran.
func TestQueueWaitCountsFromTheUpstreamsEnd(t *testing.T) {
	// durationAndWait applies the pipeline src, expecting the exit code,
	// and returns each node's duration and queue wait.
	durationAndWait := func(src string, code int) (map[string][2]float64, string) {
		t.Helper()
		root := cliWorkspace(t, map[string]string{"p.hcl": src})
		r := runCLI(t, "--chdir", root, "apply", "p.hcl")
		require.Equal(t, code, r.code, r.stderr)
		r, _ = showOnlyRun(t, root)
		var rep struct {
			Nodes []struct {
				Addr      string  `json:"address"`
				Duration  float64 `json:"duration_s"`
				QueueWait float64 `json:"queue_wait_s"`
			} `json:"nodes"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
		got := map[string][2]float64{}
		for _, n := range rep.Nodes {
			got[n.Addr] = [2]float64{n.Duration, n.QueueWait}
		}
		return got, r.stdout
	}
	got, out := durationAndWait(`pipeline "p" {}
stage "command" "up" {
  run     = ["sh", "-c", "sleep 1; echo s > up.txt"]
  outputs = ["up.txt"]
}
stage "command" "down" {
  after   = [stage.up]
  run     = ["sh", "-c", "cat up.txt > down.txt"]
  outputs = ["down.txt"]
}
`, exitOK)
	require.Contains(t, got, "stage.up", out)
	require.Contains(t, got, "stage.down", out)
	assert.GreaterOrEqual(t, got["stage.up"][0], 1.0)
	assert.Less(t, got["stage.down"][1], got["stage.up"][0], "down waited from up's end, not the run's start: %s", out)

	// An upstream that only orders the node (wait_for) is waited for
	// too: the gate's second is not the queue's.
	got, out = durationAndWait(`pipeline "p" {}
stage "command" "gate" {
  run = ["sleep", "1"]
}
stage "command" "after_gate" {
  wait_for = [stage.gate]
  run      = ["true"]
}
`, exitOK)
	assert.GreaterOrEqual(t, got["stage.gate"][0], 1.0)
	assert.Less(t, got["stage.after_gate"][1], 0.5, "after_gate waited for its gate, not in a queue: %s", out)

	// An upstream that failed ends too, and one skipped for it when it
	// was skipped: a node that runs after it (on_upstream_failure =
	// "run") waited from then, as one after an upstream that succeeded
	// does.
	got, out = durationAndWait(`pipeline "p" {}
stage "command" "up" {
  run = ["sh", "-c", "sleep 1; exit 1"]
}
stage "command" "down" {
  on_upstream_failure = "run"
  run                 = ["sh", "-c", "echo ${stage.up.status}"]
}
stage "command" "mid" {
  run = ["sh", "-c", "echo ${stage.up.status}"]
}
stage "command" "after_mid" {
  on_upstream_failure = "run"
  run                 = ["sh", "-c", "echo ${stage.mid.status}"]
}
`, exitFailed)
	assert.GreaterOrEqual(t, got["stage.up"][0], 1.0)
	assert.Less(t, got["stage.down"][1], 0.5, "down waited from its failed upstream's end, not the run's start: %s", out)
	assert.Less(t, got["stage.after_mid"][1], 0.5, "after_mid waited from its skipped upstream's skip, not the run's start: %s", out)
}

// A damaged index record is warned of when the cache opens, and the
// warning is kept in the run's event log and its report's notes, not on
// the terminal alone; plan says the result may be damaged, not only
// evicted or collected.
func TestDamagedIndexWarningIsInTheRunsRecord(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "pipeline \"p\" {}\nstage \"command\" \"a\" {\n  run     = [\"sh\", \"-c\", \"echo a > a.txt\"]\n  outputs = [\"a.txt\"]\n}\n"})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	damageIndexRecord(t, root)

	r = runCLI(t, "--chdir", root, "plan", "p.hcl")
	assert.Contains(t, r.stdout, "the cached result is gone (evicted, collected or damaged)")
	r = runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "warning: cache: the index record at byte")
	runs, err := filepath.Glob(filepath.Join(root, ".cairn", "runs", "2*"))
	require.NoError(t, err)
	require.Len(t, runs, 2)
	sort.Strings(runs)
	ev, err := os.ReadFile(filepath.Join(runs[1], "events.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(ev), `"type":"warning"`)
	assert.Contains(t, string(ev), "is damaged; it is skipped")
	r = runCLI(t, "--chdir", root, "show", filepath.Base(runs[1]), "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "is damaged; it is skipped")
}

// A node that fails with no attempt run (its cached result fails its
// postcondition) is a failed node with no failed attempt, in status and
// in the report's counts alike.
func TestFailureWithoutAttemptIsNoFailedAttempt(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `pipeline "p" {}
variable "th" {
  type    = number
  default = 0.5
}
stage "command" "acc" {
  run    = ["sh", "-c", "echo '{\"accuracy\": 0.7}' > acc.json"]
  result = "acc.json"
  postcondition {
    condition     = self.result.accuracy >= var.th
    error_message = "too low"
  }
}
`})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runCLI(t, "--chdir", root, "apply", "p.hcl", "--var", "th=0.9")
	require.Equal(t, exitFailed, r.code, r.stderr)
	r = runCLI(t, "--chdir", root, "status")
	require.Equal(t, exitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.GreaterOrEqual(t, len(lines), 3, r.stdout)
	// RUN STARTED PIPELINE STATE OK CACHED FAILED SKIPPED INTERRUPTED
	// FAILED-ATTEMPTS, newest first.
	f := strings.Fields(lines[1])
	assert.Equal(t, []string{"1", "0"}, []string{f[len(f)-4], f[len(f)-1]}, "one failed node, no failed attempt: %s", r.stdout)
	runs, err := filepath.Glob(filepath.Join(root, ".cairn", "runs", "2*"))
	require.NoError(t, err)
	sort.Strings(runs)
	r = runCLI(t, "--chdir", root, "show", filepath.Base(runs[len(runs)-1]), "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"failed_attempts": 0`)
	assert.Contains(t, r.stdout, `"failed": 1`)
}

// A failed node has no record, yet the report and trace.tsv give its kind
// and peak memory, from its journal records.
func TestFailedNodeKeepsItsKindInTheReport(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "pipeline \"p\" {}\nstage \"command\" \"bad\" {\n  run = [\"sh\", \"-c\", \"sleep 0.3; exit 1\"]\n}\n"})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitFailed, r.code, r.stderr)
	r, run := showOnlyRun(t, root)
	var rep struct {
		Nodes []struct {
			Addr    string  `json:"address"`
			Kind    string  `json:"kind"`
			PeakRSS float64 `json:"peak_rss_mib"`
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.Len(t, rep.Nodes, 1)
	assert.Equal(t, "command", rep.Nodes[0].Kind)
	assert.Positive(t, rep.Nodes[0].PeakRSS)
	r = runCLI(t, "--chdir", root, "report")
	require.Equal(t, exitOK, r.code, r.stderr)
	trace, err := os.ReadFile(filepath.Join(run, "trace.tsv"))
	require.NoError(t, err)
	assert.Contains(t, string(trace), "\tstage.bad\tcommand\t1\tFAILED\t")
}

// showOnlyRun is `cairn show RUN --json` of the workspace's one run, and
// the run's folder.
func showOnlyRun(t *testing.T, root string) (cliResult, string) {
	t.Helper()
	runs, err := filepath.Glob(filepath.Join(root, ".cairn", "runs", "2*"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	r := runCLI(t, "--chdir", root, "show", filepath.Base(runs[0]), "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	return r, runs[0]
}

// show RUN gives a node's duration as its "ok in" line and its event's
// duration_s do: the command's own run time, not the time between the
// journal's records, which holds the storing of its outputs (64 MiB
// here) and, for a cluster job, its queue wait.
func TestShowRunDurationIsTheCommandsOwn(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `pipeline "p" {}
stage "command" "s" {
  run     = ["sh", "-c", "head -c 67108864 /dev/zero > big.bin"]
  outputs = ["big.bin"]
}
`})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	evs, _ := onlyRunEvents(t, root)
	var ended events.NodeEnded
	for _, ev := range evs {
		if field[string](t, ev, "type") == "node_ended" {
			require.NoError(t, json.Unmarshal(mustJSON(t, ev), &ended))
		}
	}
	require.Positive(t, ended.DurationS)
	runs, err := filepath.Glob(filepath.Join(root, ".cairn", "runs", "2*"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	r = runCLI(t, "--chdir", root, "show", filepath.Base(runs[0]))
	require.Equal(t, exitOK, r.code, r.stderr)
	want := time.Duration(ended.DurationS * float64(time.Second)).Round(time.Millisecond).String()
	assert.Regexp(t, `stage\.s\s+ok\s+1\s+`+regexp.QuoteMeta(want)+`\s`, r.stdout)
}

// cairn show ADDRESS prints its records alone on standard output, JSON
// that jq reads (with or without --json), and what each is ("# ..."
// lines) on standard error.
func TestShowAddressPrintsOnlyJSON(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "pipeline \"p\" {}\nvariable \"n\" {\n  default = \"1\"\n}\nstage \"command\" \"a\" {\n  run = [\"echo\", \"${var.n}\"]\n}\n"})
	for _, n := range []string{"2", "1"} {
		r := runCLI(t, "--chdir", root, "apply", "p.hcl", "--var", "n="+n)
		require.Equal(t, exitOK, r.code, r.stderr)
	}
	for _, args := range [][]string{{"stage.a"}, {"--json", "stage.a"}} {
		r := runCLI(t, append([]string{"--chdir", root, "show", "--pipeline", "p.hcl"}, args...)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.True(t, json.Valid([]byte(r.stdout)), "%v: standard output is JSON:\n%s", args, r.stdout)
		assert.Contains(t, r.stderr, "# pipeline p, stage.a: the record that matches the current configuration")
		assert.Contains(t, r.stderr, "# 1 other record(s) of stage.a in this cache")
	}
	r := runCLI(t, "--chdir", root, "show", "--all", "stage.a")
	require.Equal(t, exitOK, r.code, r.stderr)
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	n := 0
	for dec.More() {
		var rec map[string]any
		require.NoError(t, dec.Decode(&rec), r.stdout)
		n++
	}
	assert.Equal(t, 2, n, "--all: one JSON record after another")
	assert.Equal(t, 2, strings.Count(r.stderr, "# pipeline p, stage.a"))
}

// A --chdir, --cache or CAIRN_CACHE that names no folder is refused (exit
// 2) naming the flag or variable and what is wrong with it, and a query
// (show) creates nothing in a mistyped place.
func TestChdirAndCacheNamedInErrors(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "stage \"command\" \"a\" {\n  run = [\"true\"]\n}\n", "afile": "x\n"})
	t.Chdir(root)
	missing := filepath.Join(root, "typo-dir")
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--chdir", missing, "plan"}, "--chdir " + missing + ": no such folder"},
		{[]string{"--chdir", missing, "show", "abc"}, "--chdir " + missing + ": no such folder"},
		{[]string{"--chdir", missing, "fmt"}, "--chdir " + missing + ": no such folder"},
		{[]string{"--chdir", "afile", "plan"}, "--chdir afile is a file, not a folder"},
		{[]string{"plan", "--cache", "afile", "p.hcl"}, "--cache afile is a file, not a folder: give a folder (it is created when missing)"},
		{[]string{"status", "--cache", "afile"}, "--cache afile is a file, not a folder"},
		{[]string{"show", "--cache", "afile", "stage.a"}, "--cache afile is a file, not a folder"},
		{[]string{"report", "--cache", "afile"}, "--cache afile is a file, not a folder"},
		{[]string{"plan", "--cache", "afile/sub", "p.hcl"}, "--cache afile/sub is below a file, not a folder"},
	} {
		r := runCLI(t, c.args...)
		assert.Equal(t, exitBadInput, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.says, "%v", c.args)
		assert.NotContains(t, r.stderr, "mkdir", "%v", c.args)
		assert.NotContains(t, r.stderr, "Pass a pipeline file", "%v", c.args)
	}
	assert.NoDirExists(t, missing)

	// A file where the cache keeps a folder is named, not the cache.
	r := runCLI(t, "plan", "--cache", "c", "p.hcl")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, os.RemoveAll(filepath.Join("c", "cas")))
	require.NoError(t, os.WriteFile(filepath.Join("c", "cas"), nil, 0o644))
	r = runCLI(t, "plan", "--cache", "c", "p.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "c/cas, inside --cache c, is a file where cairn keeps a folder: move it aside (cairn makes the folder again)")

	t.Setenv("CAIRN_CACHE", "afile")
	r = runCLI(t, "plan", "p.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "CAIRN_CACHE=afile is a file, not a folder")
	os.Unsetenv("CAIRN_CACHE")

	// show in a workspace with no cache yet says so, and makes none.
	r = runCLI(t, "show", "abcdef12")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "there is no cache at "+filepath.Join(root, ".cairn")+" yet")
	r = runCLI(t, "show", "abc")
	assert.Contains(t, r.stderr, `"abc" is too short to name a key`)
	assert.NoDirExists(t, filepath.Join(root, ".cairn"))
}

// What is in the cache's runs folder but is no run — its own files, the
// folder above — is not shown as a run: show and report refuse it (exit
// 2), where show read "settled" as a damaged run and exited 0.
func TestShowAndReportTakeRunsOnly(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "pipeline \"p\" {}\nstage \"command\" \"a\" {\n  run = [\"true\"]\n}\n"})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.NoError(t, os.WriteFile(filepath.Join(root, ".cairn", "runs", "notes"), []byte("x"), 0o644))
	for _, arg := range []string{"notes", "..", "."} {
		for _, cmd := range []string{"show", "report"} {
			r = runCLI(t, "--chdir", root, cmd, arg)
			assert.Equal(t, exitBadInput, r.code, "%s %s: %s", cmd, arg, r.stdout)
			assert.NotContains(t, r.stdout+r.stderr, "journal damaged", "%s %s", cmd, arg)
		}
	}
	runs, err := filepath.Glob(filepath.Join(root, ".cairn", "runs", "2*"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	r = runCLI(t, "--chdir", root, "show", filepath.Base(runs[0]))
	assert.Equal(t, exitOK, r.code, r.stderr)
}

// A relative --cache or CAIRN_CACHE is relative to --chdir, as every path
// cairn is given: the cache is made in the workspace, not in the folder
// cairn was started in.
func TestRelativeCacheIsInChdir(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "stage \"command\" \"a\" {\n  run = [\"true\"]\n}\n"})
	elsewhere := t.TempDir()
	t.Chdir(elsewhere)
	r := runCLI(t, "--chdir", root, "--cache", "rel-cache", "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.DirExists(t, filepath.Join(root, "rel-cache", "runs"))
	assert.NoDirExists(t, filepath.Join(elsewhere, "rel-cache"))

	t.Setenv("CAIRN_CACHE", "env-cache")
	r = runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.DirExists(t, filepath.Join(root, "env-cache", "runs"))
	assert.NoDirExists(t, filepath.Join(elsewhere, "env-cache"))
}

// A run killed while a node ran its second attempt: show says the node was
// interrupted, not interrupted with the first attempt's failure ("exited
// with status 1" was the node's class and message in --json, and the
// table said "interrupted (exit)"); that attempt keeps its own.
func TestShowKilledRetryIsInterruptedNotItsFirstFailure(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "pipeline \"p\" {}\n"})
	t0 := time.Now().Add(-time.Minute)
	id := journalRun(t, root, "p", t0, []runlog.Entry{ // no run_end: as if killed
		{T: runlog.Planned, Time: t0, Node: "stage.r", Key: "k"},
		{T: runlog.Started, Time: t0.Add(time.Second), Node: "stage.r", Key: "k", Attempt: 1},
		{T: runlog.Failed, Time: t0.Add(2 * time.Second), Node: "stage.r", Key: "k", Attempt: 1, Class: "exit", Message: "exited with status 1"},
		{T: runlog.Started, Time: t0.Add(3 * time.Second), Node: "stage.r", Key: "k", Attempt: 2},
	})

	r := runCLI(t, "--chdir", root, "show", id)
	require.Equal(t, exitOK, r.code, r.stderr)
	row := showRow(r.stdout, "stage.r")
	require.GreaterOrEqual(t, len(row), 3, r.stdout)
	assert.Equal(t, []string{"stage.r", "interrupted", "2"}, row[:3], r.stdout)

	r = runCLI(t, "--chdir", root, "show", id, "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var rep struct {
		Nodes []struct {
			State   string `json:"state"`
			Class   string `json:"class"`
			Message string `json:"message"`
			Tries   []struct {
				State string `json:"state"`
				Class string `json:"class"`
			} `json:"tries"`
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.Len(t, rep.Nodes, 1, r.stdout)
	n := rep.Nodes[0]
	assert.Equal(t, "interrupted", n.State)
	assert.Empty(t, n.Class, r.stdout)
	assert.Empty(t, n.Message, r.stdout)
	require.Len(t, n.Tries, 2, r.stdout)
	assert.Equal(t, "failed", n.Tries[0].State)
	assert.Equal(t, "exit", n.Tries[0].Class, "the first attempt keeps its failure")
}

// A node of a kind that works in cairn's process (a decision replay, an
// aggregate, a job's seal) has no started record: show RUN counts the
// attempt its end names, as --json does (the table said 0).
func TestShowCountsTheAttemptOfAnInProcessNode(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "pipeline \"p\" {}\n"})
	t0 := time.Now().Add(-time.Minute)
	id := journalRun(t, root, "p", t0, []runlog.Entry{
		{T: runlog.Planned, Time: t0, Node: "stage.replay", Key: "k"},
		{T: runlog.Finished, Time: t0.Add(time.Second), Node: "stage.replay", Key: "k", Attempt: 1, Duration: 0.5},
		{T: runlog.RunEnd, Time: t0.Add(2 * time.Second), Status: "ok"},
	})

	r := runCLI(t, "--chdir", root, "show", id)
	require.Equal(t, exitOK, r.code, r.stderr)
	row := showRow(r.stdout, "stage.replay")
	require.GreaterOrEqual(t, len(row), 3, r.stdout)
	assert.Equal(t, []string{"stage.replay", "ok", "1"}, row[:3], r.stdout)
}

// showRow is the fields of the row of addr in show RUN's table (nil when
// it has none).
func showRow(table, addr string) []string {
	var row []string
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, addr+" ") {
			row = strings.Fields(l)
		}
	}
	return row
}

// journalRun writes, in root's cache, the journal of a run of pipeline
// started at t0 (a dead process's: pid 1) with these records after its
// run_start, and returns its id.
func journalRun(t *testing.T, root, pipeline string, t0 time.Time, es []runlog.Entry) string {
	t.Helper()
	id := runlog.NewRunID()
	j, err := runlog.Open(filepath.Join(root, ".cairn"), id, true)
	require.NoError(t, err)
	require.NoError(t, j.Write(runlog.Entry{T: runlog.RunStart, Time: t0, RunID: id, Pipeline: pipeline, PID: 1}))
	for _, e := range es {
		require.NoError(t, j.Write(e))
	}
	require.NoError(t, j.Close())
	return id
}
