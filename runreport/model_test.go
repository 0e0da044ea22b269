package runreport_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/runreport"
)

func nodeOf(t *testing.T, r *runreport.Report, addr string) *runreport.Node {
	t.Helper()
	for _, n := range r.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	t.Fatalf("no node %s in the report", addr)
	return nil
}

// The report's header, counts and nodes are what the journal says: a
// retried node is one ran node with two attempts, its GPU-seconds those of
// both; the failed node keeps its class; lanes are per GPU and CPU slot.
func TestReportFromJournal(t *testing.T) {
	r, err := runreport.Build(smallRun(t, t.TempDir()), runreport.Options{})
	require.NoError(t, err)
	assert.Equal(t, "failed", r.Run.State)
	assert.Equal(t, 1, r.Run.ExitStatus)
	assert.Equal(t, "box", r.Run.Host)
	assert.Equal(t, "v-test", r.Run.Version)
	assert.Equal(t, `cd /work && cairn apply p.hcl --var tag=x --var "token=${CAIRN_VAR_TOKEN:?set CAIRN_VAR_TOKEN to the value of the sensitive variable token: the journal of the run does not keep it}"`, r.Run.Command)
	assert.Equal(t, []runreport.Var{{Name: "tag", Value: "x"}, {Name: "token", Value: "(sensitive)", Env: "CAIRN_VAR_TOKEN"}}, r.Run.Vars)
	assert.Equal(t, runreport.Counts{Ran: 2, Cached: 1, Failed: 1, Skipped: 1, FailedAttempts: 2}, r.Run.Counts)

	a := nodeOf(t, r, "stage.a")
	assert.Equal(t, "run: input data/x.jsonl changed", a.Reason)
	assert.InDelta(t, 1.0, a.Duration, 1e-9)
	assert.InDelta(t, 0.010, a.QueueWait, 1e-9)
	assert.Equal(t, "cpu 0", a.Tries[0].Lane)

	b := nodeOf(t, r, `stage.b["k"]`)
	assert.Equal(t, "ok", b.State)
	assert.Equal(t, 2, b.Attempts)
	assert.Equal(t, 1, b.Retries)
	assert.InDelta(t, 3.0, b.GPUSeconds, 1e-9)
	assert.Equal(t, 2048.0, b.PeakGPU)
	assert.Equal(t, "gpu 1", b.Tries[1].Lane)

	c := nodeOf(t, r, "stage.c")
	assert.Equal(t, "failed", c.State)
	assert.Equal(t, "oom", c.Class)
	assert.Equal(t, "gpu 0", c.Tries[0].Lane)

	var trace bytes.Buffer
	require.NoError(t, r.WriteTrace(&trace))
	lines := strings.Split(strings.TrimSpace(trace.String()), "\n")
	require.Len(t, lines, 1+6, "a row per attempt: a, b twice, c, and one for the skipped and the cached node")
	assert.True(t, strings.HasPrefix(lines[0], "task_id\thash\tnative_id\tname\tprocess\t"), lines[0])
	assert.Contains(t, trace.String(), "\tstage.b[\"k\"]\tstage.b\t-\t1\tFAILED\t")
	assert.Contains(t, trace.String(), "\tstage.b[\"k\"]\tstage.b\t-\t2\tCOMPLETED\t2026-03-01T12:00:02.020Z\t2026-03-01T12:00:02.100Z\t2026-03-01T12:00:04.100Z\t2.080\t2.000\t0.080\t",
		"a retry has its own submit (when the attempt before it failed), duration and wait")
	assert.Contains(t, trace.String(), "\tstage.e\tstage.e\t-\t-\tCACHED\t")
}

// A run killed with kill -9 has no end record: its running node is
// interrupted, the run too, and what it did before is all there.
func TestReportOfKilledRun(t *testing.T) {
	dir := writeJournal(t, t.TempDir(), "20260301T120000.000Z-cccccc", []runlog.Entry{
		{T: runlog.Planned, Time: t0, Node: "stage.a", Key: "aaaa"},
		{T: runlog.Planned, Time: t0, Node: "stage.b", Key: "bbbb"},
		{T: runlog.Started, Time: at(5), Node: "stage.a", Attempt: 1},
		{T: runlog.Finished, Time: at(900), Node: "stage.a", Attempt: 1},
		{T: runlog.Started, Time: at(910), Node: "stage.b", Attempt: 1, GPUs: []int{2}},
	}, "")
	r, err := runreport.Build(dir, runreport.Options{})
	require.NoError(t, err)
	assert.Equal(t, "interrupted", r.Run.State)
	assert.Equal(t, -2, r.Run.ExitStatus, "killed: it gave no exit code")
	assert.Equal(t, runreport.Counts{Ran: 1, Interrupted: 1}, r.Run.Counts)
	assert.Equal(t, "interrupted", nodeOf(t, r, "stage.b").State)
	assert.InDelta(t, 0.910, r.Run.Duration, 1e-9, "the last record's time")
}

// A killed run is shown up to its journal's last record, alike in the
// header, the nodes and the timeline: the node it was running ran from
// its start to that record, however long after the kill the report is
// written.
func TestKilledRunIsShownToItsLastRecord(t *testing.T) {
	dir := writeJournal(t, t.TempDir(), "20260301T120000.000Z-cccccc", []runlog.Entry{
		{T: runlog.Planned, Time: t0, Node: "stage.a", Key: "aaaa"},
		{T: runlog.Planned, Time: t0, Node: "stage.b", Key: "bbbb"},
		{T: runlog.Started, Time: at(5), Node: "stage.a", Attempt: 1},
		{T: runlog.Started, Time: at(910), Node: "stage.b", Attempt: 1, GPUs: []int{2}},
		{T: runlog.Finished, Time: at(1400), Node: "stage.a", Attempt: 1},
	}, "")
	r, err := runreport.Build(dir, runreport.Options{Now: t0.Add(time.Hour)})
	require.NoError(t, err)
	assert.InDelta(t, 1.4, r.Run.Duration, 1e-9, "to the last record")
	b := nodeOf(t, r, "stage.b")
	assert.Equal(t, "interrupted", b.State)
	assert.InDelta(t, 0.49, b.Duration, 1e-9, "from its start to the last record, not to now")
	assert.InDelta(t, 0.49, b.GPUSeconds, 1e-9)
	assert.True(t, b.Tries[0].End.IsZero(), "it never ended")
}

// The command that runs a run again never applies a sensitive variable
// with the value "(sensitive)", as the journal keeps it: the shell
// refuses to run it until the value is given again (in the environment
// variable the page names), and then passes that value. It is one command
// for sh (dash), bash and zsh alike.
func TestCommandAsksForSensitiveValuesAgain(t *testing.T) {
	r, err := runreport.Build(smallRun(t, t.TempDir()), runreport.Options{})
	require.NoError(t, err)
	cmd := strings.TrimPrefix(r.Run.Command, "cd /work && ")
	for _, shell := range []string{"sh", "bash", "zsh"} {
		if _, err := exec.LookPath(shell); err != nil {
			t.Logf("no %s here: not tried", shell)
			continue
		}
		out, err := exec.Command(shell, "-n", "-c", r.Run.Command).CombinedOutput()
		require.NoError(t, err, "%s -n: %s", shell, out)
		run := func(env ...string) (string, error) {
			c := exec.Command(shell, "-c", `cairn() { printf '%s\n' "$@"; }; `+cmd)
			c.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
			out, err := c.CombinedOutput()
			return string(out), err
		}
		out2, err := run()
		assert.Error(t, err, "%s: refused while the value is not given: %s", shell, out2)
		assert.Contains(t, out2, "CAIRN_VAR_TOKEN", shell)
		assert.NotContains(t, out2, "apply", "%s: cairn did not run", shell)
		out2, err = run("CAIRN_VAR_TOKEN=s3 cr3t")
		require.NoError(t, err, "%s: %s", shell, out2)
		assert.Equal(t, "apply\np.hcl\n--var\ntag=x\n--var\ntoken=s3 cr3t\n", out2, shell)
	}
}
