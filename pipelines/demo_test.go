package pipelines_test

import (
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
