package pipelines_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Three seeds of a job, as pipelines/optimizer_grid.hcl writes them, make
// one row of `cairn aggregate`: the job artifacts' contract
// (docs/job-artifacts.md) read back by the aggregation. A smoke budget
// keeps the jobs short, so they are non-conformant: skipped with a warning
// by default, aggregated with --include-nonconformant.
func TestAggregateOptimizerJobs(t *testing.T) {
	w := newOptWorkspace(t)
	for _, seed := range []string{"0", "1", "2"} {
		out, code := w.job("budget=40", "seed="+seed)
		require.Equal(t, 0, code, out)
	}
	aggregate := func(args ...string) (string, string, int) {
		cmd := exec.Command(filepath.Join(bins, "cairn"), append([]string{"aggregate", "runs", "--bootstrap", "1000"}, args...)...)
		cmd.Dir = w.dir
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return stdout.String(), stderr.String(), code
	}

	stdout, stderr, code := aggregate()
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 1, strings.Count(stdout, "\n"), "every job skipped: the header alone\n%s", stdout)
	assert.Contains(t, stderr, "0 row(s): 0 complete, 0 incomplete")
	assert.Contains(t, stderr, "warning: skipped runs/simgepa/sums/single/sim/0/result.json: budget 40 is below the protocol's 600 rollouts")

	stdout, stderr, code = aggregate("--include-nonconformant", "--out", "runs/summary.json")
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 1+1+3, stdout)
	cols := strings.Split(lines[1], "\t")
	assert.Equal(t, []string{"sums/sim", "simgepa", "sums/single/sim", "3"}, cols[:4])
	// Computed, and marked: the smoke budget is no result of the experiment.
	assert.Equal(t, "ok; non-conformant: seed 0: budget 40 is below the protocol's 600 rollouts; seed 1: budget 40 is below the protocol's 600 rollouts; seed 2: budget 40 is below the protocol's 600 rollouts", cols[12])

	// The row's delta is the mean of the jobs' own delta_pp.
	var sum float64
	for _, seed := range []string{"0", "1", "2"} {
		var res struct {
			DeltaPP float64 `json:"delta_pp"`
		}
		w.readJSON("runs/simgepa/sums/single/sim/"+seed+"/result.json", &res)
		sum += res.DeltaPP
	}
	var summary struct {
		Rows []struct {
			DeltaPP float64 `json:"delta_pp"`
		} `json:"rows"`
	}
	w.readJSON("runs/summary.json", &summary)
	require.Len(t, summary.Rows, 1)
	assert.InDelta(t, sum/3, summary.Rows[0].DeltaPP, 1e-9)
}
