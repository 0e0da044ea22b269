package pipelines_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/runlog"
)

// demoRepo lays out what `make demo` needs — pipelines/demo.sh with the
// pipeline and its variable file, bin/cairn and bin/sim/ — in a scratch
// folder, and returns a workspace for the demo's folder in it.
func demoRepo(t *testing.T) (*workspace, func() (string, int)) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: builds cairn and runs it")
	}
	repo := t.TempDir()
	for _, f := range []string{"demo.sh", "aime24_batch.hcl", "sim.tfvars"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(repo, "pipelines"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(repo, "pipelines", f), b, 0o755))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "bin", "sim"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(bins, "cairn"), filepath.Join(repo, "bin", "cairn")))
	for _, p := range []string{"preflight", "ruler", "aime24"} {
		require.NoError(t, os.Symlink(filepath.Join(bins, p), filepath.Join(repo, "bin", "sim", p)))
	}
	w := &workspace{t: t, dir: filepath.Join(repo, "demo"), leases: t.TempDir(), gpus: "sim:4"}
	demo := func() (string, int) {
		t.Helper()
		cmd := exec.Command("bash", filepath.Join(repo, "pipelines", "demo.sh"))
		cmd.Env = append(os.Environ(),
			"DEMO_DIR="+w.dir,
			"CAIRN_GPUS="+w.gpus,
			"CAIRN_LEASE_DIR="+w.leases,
			"CAIRN_NO_FSYNC=1",
			"CAIRN_CACHE=",
			"NO_COLOR=1",
		)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err, "%s", out)
		}
		return string(out), code
	}
	return w, demo
}

// planLines are the plan's node lines (+, ~, ? or =) in the demo's
// output, by address.
func planLines(out string) map[string]string {
	lines := map[string]string{}
	re := regexp.MustCompile(`^\s*([+~?=]) (stage\.\S+)\s+(.*)$`)
	for _, l := range strings.Split(out, "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			lines[m[2]] = m[1] + " " + m[3]
		}
	}
	return lines
}

// The README's promise: after `make demo`, editing one config in
// demo/submissions/demo/ reruns exactly that variant's preflight, RULER and
// AIME24, plus the comparison table, and plan says why, naming it.
func TestDemoEditOneConfigRerunsThatVariant(t *testing.T) {
	w, demo := demoRepo(t)
	out, code := demo()
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Apply complete: 13 ran, 0 cached, 0 failed", out)

	cfg := filepath.Join(w.dir, "submissions", "demo", "batch_demo_id2.json")
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	edited := strings.Replace(string(b), `"vortex_topk_ratio": 0.3`, `"vortex_topk_ratio": 0.35`, 1)
	require.NotEqual(t, string(b), edited)
	require.NoError(t, os.WriteFile(cfg, []byte(edited), 0o644))

	out, code = demo()
	require.Equal(t, 0, code, out)
	want := []string{
		`stage.aime24["batch_demo_id2"]`, "stage.batch",
		`stage.preflight["batch_demo_id2"]`, `stage.ruler["batch_demo_id2"]`,
	}
	es := w.lastJournal()
	assert.Equal(t, want, nodesWith(es, runlog.Finished), "exactly the edited variant's stages and the table ran")
	assert.Contains(t, out, "Apply complete: 4 ran, 9 cached, 0 failed", out)

	// The plan the demo printed first says the same, and why: the edited
	// variant's preflight and RULER run, its AIME24 and the table may run
	// (that depends on RULER's new result), everything else is cached.
	plan := planLines(out)
	var torun []string
	for addr, l := range plan {
		if !strings.HasPrefix(l, "=") {
			torun = append(torun, addr)
		}
	}
	sort.Strings(torun)
	assert.Equal(t, want, torun, "%s", out)
	assert.Contains(t, out, "Plan: 2 to run, 2 may run, 9 cached.")
	assert.Contains(t, plan[`stage.preflight["batch_demo_id2"]`], "input submissions/demo/batch_demo_id2.json changed")
	assert.Contains(t, plan[`stage.ruler["batch_demo_id2"]`], "input submissions/demo/batch_demo_id2.json changed")
	assert.Contains(t, plan[`stage.aime24["batch_demo_id2"]`], "batch_demo_id2")
	assert.Contains(t, plan["stage.batch"], "batch_demo_id2")
	// A cached variant still waits for the gate that reruns, and says so.
	assert.Equal(t, `= cached: waits for stage.ruler["batch_demo_id2"], which will run`, plan[`stage.aime24["batch_demo_id0"]`])
	for _, v := range []string{"batch_demo_id0", "batch_demo_id1", "batch_demo_id3"} {
		for _, s := range []string{"preflight", "ruler", "aime24"} {
			assert.True(t, strings.HasPrefix(plan[`stage.`+s+`["`+v+`"]`], "="), "stage.%s[%q] is cached: %q", s, v, plan[`stage.`+s+`["`+v+`"]`])
		}
	}
}

// make demo-optimizer works in DEMO_DIR (its jobs, table and cache are
// there) and prints each job's summary line on standard output. When a
// node fails it exits with apply's status, shows each failure whole (the
// method's last lines and its log) and prints no table: the one on disk is
// an earlier run's.
func TestDemoOptimizerFailsLoudlyInDemoDir(t *testing.T) {
	if testing.Short() || bins == "" {
		t.Skip("end-to-end: builds cairn and runs it")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	dir := t.TempDir()
	demo := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		// One method on one dataset: 3 jobs, a quick grid.
		all := append([]string{"demo-optimizer.sh", "--var", `methods=["simgepa"]`, "--var", `datasets=["sums"]`}, args...)
		cmd := exec.Command("bash", all...)
		cmd.Env = append(os.Environ(), "DEMO_DIR="+dir, "DEMO_BIN="+bins, "CAIRN_NO_FSYNC=1", "NO_COLOR=1")
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return o.String(), e.String(), code
	}

	stdout, stderr, code := demo()
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	assert.Contains(t, stderr, "Apply complete: 25 ran, 0 cached, 0 failed")
	tsv, err := os.ReadFile(filepath.Join(dir, "reports", "aggregate.tsv"))
	require.NoError(t, err, "the table is in DEMO_DIR")
	summaries, table, ok := strings.Cut(stdout, "\n\n")
	require.True(t, ok, stdout)
	lines := strings.Split(summaries, "\n")
	require.Len(t, lines, 3, stdout)
	for i, l := range lines {
		var sum struct {
			Status, Method, CellID, Out string
			Seed                        int
		}
		require.NoError(t, json.Unmarshal([]byte(l), &sum), l)
		assert.Equal(t, "ok", sum.Status)
		assert.Equal(t, fmt.Sprintf("runs/simgepa/sums/single/sim/%d", sum.Seed), sum.Out, l)
		_, err := os.Stat(filepath.Join(dir, sum.Out, "result.json"))
		assert.NoError(t, err, "job %d's out folder is in DEMO_DIR", i)
	}
	assert.True(t, strings.HasSuffix(table, string(tsv)), "the table printed is the one written:\n%s", table)
	assert.Contains(t, string(tsv), "runs/simgepa/sums/single/sim/0/result.json")
	assert.Regexp(t, `(?m)^Report of run \S+ \(ok\): \S+/cache/runs/\S+/report\.html\n.*trace\.tsv\n$`, stderr, "the demo ends by printing its report's path")

	// The same grid with a method that crashes (exit 3) into other out
	// folders: every job fails.
	stdout, stderr, code = demo("--var", "runs=runs-crash", "--var", `method_args=["--mode","crash"]`)
	assert.Equal(t, 1, code, "a failed node fails the demo:\n%s\n%s", stdout, stderr)
	assert.Regexp(t, `Apply complete: \d+ ran, \d+ cached, [1-9]\d* failed`, stderr)
	assert.Regexp(t, `(?m)^stage\.optimize\["simgepa/sums/single/sim/0"\] failed \(exit\): the method failed: exited with status 3`, stderr)
	assert.Contains(t, stderr, "  | sim-method: crashing on purpose (--mode crash)", "the method's last lines are shown")
	assert.Regexp(t, `(?m)^  log: cache/runs/\S+/logs/optimize_\S+\.err$`, stderr)
	assert.Contains(t, stderr, `stage.summary["grid"] failed (setup): no result.json under runs-crash`)
	assert.Contains(t, stderr, "no aggregate table is printed")
	for _, s := range []string{stdout, stderr} {
		assert.NotContains(t, s, "family\tmethod\tcell", "no table is printed after a failure")
		assert.NotContains(t, s, "runs/simgepa/sums/single/sim/0/result.json", "nothing cites the earlier run's files")
	}
}
