package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/stages/aggregate/jobtest"
)

// aggregateWorkspace holds two roots of optimizer jobs: runs/a (gepa and
// miprov2 on hotpotqa) and runs/b (gepa on math, one seed short).
func aggregateWorkspace(t *testing.T) string {
	t.Helper()
	root := cliWorkspace(t, nil)
	require.NoError(t, jobtest.Grid(filepath.Join(root, "runs", "a"), 1, 80,
		map[string]float64{"gepa": 0.25, "miprov2": 0}, []string{"hotpotqa/centralized/qwen"}))
	require.NoError(t, jobtest.Grid(filepath.Join(root, "runs", "b"), 2, 80,
		map[string]float64{"gepa": 0.2}, []string{"math/centralized/qwen", "hotpotqa/centralized/llama"}))
	require.NoError(t, os.RemoveAll(jobtest.Job{Method: "gepa", Dataset: "math", Seed: 1}.Dir(filepath.Join(root, "runs", "b"))))
	return root
}

func TestAggregateCommand(t *testing.T) {
	root := aggregateWorkspace(t)
	r := runCLI(t, "--chdir", root, "aggregate", "runs/a", "runs/b", "--out", "out/summary.json", "--bootstrap", "2000")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Len(t, lines, 1+4*4, r.stdout)
	assert.Equal(t, "family\tmethod\tcell\tn_seeds\tbaseline_mean\tdeployed_mean\tdelta_pp\tci_low\tci_high\tp\tp_holm\treject\tstatus", lines[0])
	assert.Regexp(t, `^hotpotqa/llama\tgepa\thotpotqa/centralized/llama\t3\t0\.\d{4}\t0\.\d{4}\t\d+\.\d\d\t\d+\.\d\d\t\d+\.\d\d\t[0-9.e-]+\t[0-9.e-]+\tyes\tok$`, lines[1])
	assert.Equal(t, "-\tgepa\tmath/centralized/qwen\t2\t-\t-\t-\t-\t-\t-\t-\t-\tincomplete: seed 1 missing", lines[13])
	assert.Contains(t, r.stderr, "4 row(s): 3 complete, 1 incomplete; 2000 bootstrap replicates, family task. Summary: out/summary.json; plot: out/summary.svg.")

	js, err := os.ReadFile(filepath.Join(root, "out", "summary.json"))
	require.NoError(t, err)
	var sum struct {
		Format string `json:"format"`
		Rows   []struct {
			Method string   `json:"method"`
			Status string   `json:"status"`
			P      *float64 `json:"p"`
		} `json:"rows"`
	}
	require.NoError(t, json.Unmarshal(js, &sum))
	assert.Equal(t, "cairn.aggregate/1", sum.Format)
	require.Len(t, sum.Rows, 4)
	svg, err := os.ReadFile(filepath.Join(root, "out", "summary.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg ")

	// Byte-identical: again, with the roots the other way round, and on one
	// core.
	again := runCLI(t, "--chdir", root, "aggregate", "runs/b", "runs/a", "--out", "out/again.json", "--bootstrap", "2000")
	require.Equal(t, 0, again.code, again.stderr)
	prev := runtime.GOMAXPROCS(1)
	one := runCLI(t, "--chdir", root, "aggregate", "runs/a", "runs/b", "--out", "out/one.json", "--bootstrap", "2000")
	runtime.GOMAXPROCS(prev)
	require.Equal(t, 0, one.code, one.stderr)
	for _, other := range []string{"again", "one"} {
		assert.Equal(t, r.stdout, map[string]string{"again": again.stdout, "one": one.stdout}[other], other)
		for _, ext := range []string{".json", ".svg"} {
			b, err := os.ReadFile(filepath.Join(root, "out", other+ext))
			require.NoError(t, err)
			want := js
			if ext == ".svg" {
				want = svg
			}
			assert.Equal(t, string(want), string(b), other+ext)
		}
	}
}

func TestAggregateFamiliesAndNonconformantJobs(t *testing.T) {
	root := aggregateWorkspace(t)
	smoke := jobtest.Job{Method: "gepa", Dataset: "math", Seed: 1, Nonconformant: []string{"budget 56 is below the protocol's 600 rollouts"},
		Baseline: []float64{0, 1, 0}, Deployed: []float64{1, 1, 1}}
	_, err := jobtest.Write(filepath.Join(root, "runs", "smoke"), smoke)
	require.NoError(t, err)

	r := runCLI(t, "--chdir", root, "aggregate", "runs", "--family", "method", "--bootstrap", "500")
	require.Equal(t, 0, r.code, r.stderr)
	file := filepath.Join("runs", "smoke", "gepa", "math_centralized_qwen", "seed1", "result.json")
	assert.Contains(t, r.stderr, "warning: skipped "+file+": budget 56 is below the protocol's 600 rollouts\n")
	assert.Contains(t, r.stderr, "1 job(s) skipped; --include-nonconformant adds the non-conformant ones.")
	assert.Contains(t, r.stdout, "\ngepa\tgepa\thotpotqa/centralized/llama\t3\t")
	assert.Contains(t, r.stdout, "\nmiprov2\tmiprov2\thotpotqa/centralized/qwen\t3\t")

	// Included, the smoke job is the missing seed 1, but its items are
	// not the other seeds' items: refused.
	inc := runCLI(t, "--chdir", root, "aggregate", "runs", "--include-nonconformant", "--bootstrap", "500")
	assert.Equal(t, 2, inc.code, inc.stderr)
	assert.Contains(t, inc.stderr, "gepa math/centralized/qwen: seeds 0 and 1 were tested on different items")
	assert.NotContains(t, inc.stderr, "warning: skipped")

	none := runCLI(t, "--chdir", root, "aggregate", "runs/a", "--family", "none", "--bootstrap", "500")
	require.Equal(t, 0, none.code, none.stderr)
	for _, line := range strings.Split(strings.TrimSpace(none.stdout), "\n")[1:] {
		assert.True(t, strings.HasPrefix(line, "-\t"), line)
	}
}

func TestAggregateBadInputWritesNothing(t *testing.T) {
	root := aggregateWorkspace(t)
	broken := filepath.Join(root, "runs", "a", "gepa", "hotpotqa_centralized_qwen", "seed2", "result.json")
	require.NoError(t, os.WriteFile(broken, []byte("{\n  \"format\": \"cairn.job-result/1\",\n  \"seed\": 2,,\n}\n"), 0o644))
	r := runCLI(t, "--chdir", root, "aggregate", "runs", "--out", "summary.json")
	assert.Equal(t, 2, r.code)
	assert.Equal(t, "Error: runs/a/gepa/hotpotqa_centralized_qwen/seed2/result.json:3:14: not valid JSON: invalid character ',' looking for beginning of object key string; nothing was written\n", r.stderr)
	assert.Empty(t, r.stdout)
	_, err := os.Stat(filepath.Join(root, "summary.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(filepath.Join(root, "summary.svg"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	for _, args := range [][]string{
		{"aggregate", "runs/a", "--bootstrap", "0"},
		{"aggregate", "runs/a", "--family", "dataset"},
		{"aggregate", "nowhere"},
		{"aggregate"},
	} {
		r := runCLI(t, append([]string{"--chdir", root}, args...)...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
	}
	r = runCLI(t, "--chdir", root, "aggregate", "runs/a", "--family", "dataset")
	assert.Contains(t, r.stderr, `family "dataset" is not one of task, method, none`)
}

func TestAggregateStage(t *testing.T) {
	root := aggregateWorkspace(t)
	pipeline := `pipeline "grid-summary" {}

stage "aggregate" "summary" {
  roots     = ["runs/a", "runs/b"]
  bootstrap = 2000
  cpus      = 2
}
`
	require.NoError(t, os.WriteFile(filepath.Join(root, "pipeline.hcl"), []byte(pipeline), 0o644))
	r := runCLI(t, "--chdir", root, "apply", "pipeline.hcl")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "Apply complete: 1 ran, 0 cached, 0 failed, 0 skipped.")
	assert.Contains(t, r.stderr, "Incomplete: gepa math/centralized/qwen (seed 1 missing)")
	tsv, err := os.ReadFile(filepath.Join(root, "reports", "summary", "aggregate.tsv"))
	require.NoError(t, err)

	// The same table as the command's, and the summary as its result.
	cli := runCLI(t, "--chdir", root, "aggregate", "runs/a", "runs/b", "--bootstrap", "2000")
	require.Equal(t, 0, cli.code, cli.stderr)
	assert.Equal(t, cli.stdout, string(tsv))
	for _, f := range []string{"summary.json", "forest.svg"} {
		_, err := os.Stat(filepath.Join(root, "reports", "summary", f))
		require.NoError(t, err, f)
	}

	again := runCLI(t, "--chdir", root, "apply", "pipeline.hcl")
	require.Equal(t, 0, again.code, again.stderr)
	assert.Contains(t, again.stdout, "Apply complete: 0 ran, 1 cached, 0 failed, 0 skipped.")

	// A job's scores change: the node runs again.
	seed0 := filepath.Join(root, "runs", "a", "gepa", "hotpotqa_centralized_qwen", "seed0", "test.json")
	b, err := os.ReadFile(seed0)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(seed0, []byte(strings.Replace(string(b), `"baseline": 0,`, `"baseline": 0.5,`, 1)), 0o644))
	plan := runCLI(t, "--chdir", root, "plan", "pipeline.hcl")
	require.Equal(t, 0, plan.code, plan.stderr)
	assert.Contains(t, plan.stdout, "~ stage.summary")
	changed := runCLI(t, "--chdir", root, "apply", "pipeline.hcl")
	require.Equal(t, 0, changed.code, changed.stderr)
	assert.Contains(t, changed.stdout, "Apply complete: 1 ran, 0 cached, 0 failed, 0 skipped.")

	// Bad input fails the node, class setup, naming the file.
	require.NoError(t, os.WriteFile(seed0, []byte("{"), 0o644))
	bad := runCLI(t, "--chdir", root, "apply", "pipeline.hcl")
	assert.Equal(t, 1, bad.code)
	assert.Contains(t, bad.stdout+bad.stderr, "runs/a/gepa/hotpotqa_centralized_qwen/seed0/test.json:1:2: not valid JSON: the file ends before the object does")

	// Attributes are checked before anything runs.
	require.NoError(t, os.WriteFile(filepath.Join(root, "pipeline.hcl"), []byte(`stage "aggregate" "summary" {
  roots   = ["runs"]
  family  = "dataset"
  out_dir = "runs/report"
}
`), 0o644))
	v := runCLI(t, "--chdir", root, "validate", "pipeline.hcl")
	assert.Equal(t, 2, v.code)
	assert.Contains(t, v.stderr, "Invalid family")
	assert.Contains(t, v.stderr, "Invalid out_dir")
}
