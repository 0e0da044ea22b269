package main

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
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

// --out and --plot never write over a job's own files (the inputs), a
// folder, a device or a link, or each other: refused (exit 2) before
// anything is written, the inputs untouched.
func TestAggregateOutputsNeverReplaceWhatTheyShouldNot(t *testing.T) {
	root := aggregateWorkspace(t)
	job := filepath.Join("runs", "a", "gepa", "hotpotqa_centralized_qwen", "seed2")
	before := map[string][]byte{}
	for _, f := range []string{"result.json", "test.json"} {
		b, err := os.ReadFile(filepath.Join(root, job, f))
		require.NoError(t, err)
		before[f] = b
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "outdir"), 0o755))
	require.NoError(t, os.Symlink("elsewhere.json", filepath.Join(root, "link.json")))
	// A named pipe stands for /dev/stdout and devices, which a test that
	// regressed would replace on the machine running it.
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644))
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--out", filepath.Join(job, "result.json")}, "is a job's own file"},
		{[]string{"--out", "x.json", "--plot", filepath.Join(job, "test.json")}, "is a job's own file"},
		{[]string{"--out", "outdir"}, "is not a regular file (a folder)"},
		{[]string{"--out", "pipe"}, "is not a regular file (a named pipe)"},
		{[]string{"--out", "link.json"}, "is not a regular file (a symbolic link)"},
		{[]string{"--out", "s.json", "--plot", "./s.json"}, "--out and --plot both name s.json"},
	} {
		r := runCLI(t, append([]string{"--chdir", root, "aggregate", "runs", "--bootstrap", "50"}, c.args...)...)
		assert.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.msg, c.args)
		assert.Empty(t, r.stdout, c.args)
	}
	for f, b := range before {
		got, err := os.ReadFile(filepath.Join(root, job, f))
		require.NoError(t, err)
		assert.Equal(t, string(b), string(got), f)
	}
	for _, f := range []string{"x.json", "x.svg", "s.json", "s.svg", "outdir.svg", "link.svg", "pipe.svg", filepath.Join(job, "result.svg")} {
		assert.NoFileExists(t, filepath.Join(root, f))
	}
	_, err := os.Lstat(filepath.Join(root, "elsewhere.json"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the link's target is not written")
}

// A job whose result.json is a link reads the file it leads to: --out
// naming that file is refused too, and the file is kept.
func TestAggregateOutNeverReplacesALinkedJobFile(t *testing.T) {
	root := aggregateWorkspace(t)
	res := filepath.Join(root, "runs", "a", "gepa", "hotpotqa_centralized_qwen", "seed2", "result.json")
	kept := filepath.Join(root, "kept", "result.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(kept), 0o755))
	require.NoError(t, os.Rename(res, kept))
	require.NoError(t, os.Symlink(kept, res))
	before, err := os.ReadFile(kept)
	require.NoError(t, err)
	r := runCLI(t, "--chdir", root, "aggregate", "runs", "--bootstrap", "50", "--out", filepath.Join("kept", "result.json"), "--plot", "p.svg")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "is a job's own file")
	after, err := os.ReadFile(kept)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
	assert.NoFileExists(t, filepath.Join(root, "p.svg"))
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
	assert.Contains(t, r.stderr, "1 job(s) skipped as non-conformant; --include-nonconformant adds them.")
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
	assert.Contains(t, r.stderr, `--family "dataset": give task, method, none`)
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
	var doc struct {
		Items []struct{ Baseline, Deployed float64 }
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	var bs, ds []float64
	for _, it := range doc.Items {
		bs, ds = append(bs, it.Baseline), append(ds, it.Deployed)
	}
	bs[slices.Index(bs, 0)] = 0.5 // the job written again, as a rerun would
	_, err = jobtest.Write(filepath.Join(root, "runs", "a"), jobtest.Job{Method: "gepa", Seed: 0, Baseline: bs, Deployed: ds})
	require.NoError(t, err)
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
  roots    = ["runs"]
  family   = "dataset"
  resample = "items"
  out_dir  = "runs/report"
}
`), 0o644))
	v := runCLI(t, "--chdir", root, "validate", "pipeline.hcl")
	assert.Equal(t, 2, v.code)
	assert.Contains(t, v.stderr, "Invalid family")
	assert.Contains(t, v.stderr, "Invalid out_dir")
	assert.Contains(t, v.stderr, "Invalid resample")
}

// The stage's resample attribute is the command's --resample: the same
// table.
func TestAggregateStageResamplesSharedItems(t *testing.T) {
	root := aggregateWorkspace(t)
	require.NoError(t, os.WriteFile(filepath.Join(root, "pipeline.hcl"), []byte(`stage "aggregate" "summary" {
  roots     = ["runs/a"]
  bootstrap = 1000
  resample  = "shared-items"
}
`), 0o644))
	r := runCLI(t, "--chdir", root, "apply", "pipeline.hcl")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "1000 replicates resampling shared-items, family task")
	tsv, err := os.ReadFile(filepath.Join(root, "reports", "summary", "aggregate.tsv"))
	require.NoError(t, err)
	cli := runCLI(t, "--chdir", root, "aggregate", "runs/a", "--bootstrap", "1000", "--resample", "shared-items")
	require.Equal(t, 0, cli.code, cli.stderr)
	assert.Equal(t, cli.stdout, string(tsv))
	js, err := os.ReadFile(filepath.Join(root, "reports", "summary", "summary.json"))
	require.NoError(t, err)
	assert.Contains(t, string(js), `"resample": "shared-items"`)
}

// A seed left out as non-conformant is reported as skipped; included, its
// row is marked non-conformant in the table, the summary and the plot.
func TestAggregateMarksNonconformantRows(t *testing.T) {
	root := aggregateWorkspace(t)
	b, d := jobtest.Binary(rand.New(rand.NewPCG(8, 8)), 80, 0.5, 0.9)
	smoke := jobtest.Job{Method: "gepa", Dataset: "math", Seed: 1, Nonconformant: []string{"budget 56 is below the protocol's 600 rollouts"},
		Baseline: b, Deployed: d}
	_, err := jobtest.Write(filepath.Join(root, "runs", "smoke"), smoke)
	require.NoError(t, err)
	file := filepath.Join("runs", "smoke", "gepa", "math_centralized_qwen", "seed1", "result.json")

	r := runCLI(t, "--chdir", root, "aggregate", "runs", "--bootstrap", "500")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "\tgepa\tmath/centralized/qwen\t2\t-\t-\t-\t-\t-\t-\t-\t-\tincomplete: seed 1 skipped as non-conformant (budget 56 is below the protocol's 600 rollouts)\n")
	assert.Contains(t, r.stdout, "\tgepa\tmath/centralized/qwen\tseed 1\t-\t-\t-\t-\t-\t-\t-\t-\tskipped as non-conformant: budget 56 is below the protocol's 600 rollouts, "+file+"\n")
	assert.NotContains(t, r.stdout, "missing")

	inc := runCLI(t, "--chdir", root, "aggregate", "runs", "--include-nonconformant", "--bootstrap", "500", "--out", "out/summary.json")
	require.Equal(t, 0, inc.code, inc.stderr)
	assert.Regexp(t, `\tgepa\tmath/centralized/qwen\t3\t.*\t(yes|no)\tok; non-conformant: seed 1: budget 56 is below the protocol's 600 rollouts\n`, inc.stdout)
	assert.Contains(t, inc.stdout, "\tseed 1\t")
	assert.Contains(t, inc.stdout, "ok: 80 test items, "+file+"; non-conformant: budget 56 is below the protocol's 600 rollouts\n")
	assert.Contains(t, inc.stderr, "4 row(s): 4 complete, 0 incomplete, 1 with non-conformant jobs (marked); 500 bootstrap replicates, family task.")
	js, err := os.ReadFile(filepath.Join(root, "out", "summary.json"))
	require.NoError(t, err)
	assert.Contains(t, string(js), `"nonconformant": [
        "seed 1: budget 56 is below the protocol's 600 rollouts"
      ]`)
	svg, err := os.ReadFile(filepath.Join(root, "out", "summary.svg"))
	require.NoError(t, err)
	assert.Regexp(t, `>gepa  math/centralized/qwen( \*)? \(non-conformant\)<`, string(svg))
}

// Scores whose sums cannot be computed are refused with exit 2, naming the
// file and the item, and nothing is written: not the plot, not the
// summary.
func TestAggregateRefusesScoresItCannotSum(t *testing.T) {
	root := aggregateWorkspace(t)
	test := filepath.Join(root, "runs", "a", "gepa", "hotpotqa_centralized_qwen", "seed0", "test.json")
	b, err := os.ReadFile(test)
	require.NoError(t, err)
	s := strings.ReplaceAll(string(b), `"baseline": 0,`, `"baseline": 1.7e308,`)
	s = strings.ReplaceAll(s, `"baseline": 1,`, `"baseline": 1.7e308,`)
	s = strings.ReplaceAll(s, `"deployed": 0,`, `"deployed": 1.7e308,`)
	s = strings.ReplaceAll(s, `"deployed": 1,`, `"deployed": 1.7e308,`)
	require.NoError(t, os.WriteFile(test, []byte(s), 0o644))
	require.NoError(t, jobtest.Reseal(filepath.Dir(test)))

	r := runCLI(t, "--chdir", root, "aggregate", "runs", "--out", "out/summary.json", "--bootstrap", "200")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Regexp(t, `^Error: runs/a/gepa/hotpotqa_centralized_qwen/seed0/test.json: items\[0\] \(id "q0000"\): the baseline score 1\.7e\+308 is beyond ±[0-9.e+]+, .*; nothing was written\n$`, r.stderr)
	assert.Empty(t, r.stdout)
	for _, f := range []string{"summary.json", "summary.svg"} {
		_, err := os.Stat(filepath.Join(root, "out", f))
		assert.ErrorIs(t, err, os.ErrNotExist, f)
	}
}

// --resample shared-items draws one set of items for every seed; the
// summary and the message say so, and another value is refused.
func TestAggregateResampleSharedItems(t *testing.T) {
	root := aggregateWorkspace(t)
	def := runCLI(t, "--chdir", root, "aggregate", "runs/a", "--bootstrap", "2000", "--out", "def.json")
	require.Equal(t, 0, def.code, def.stderr)
	sh := runCLI(t, "--chdir", root, "aggregate", "runs/a", "--bootstrap", "2000", "--resample", "shared-items", "--out", "shared.json")
	require.Equal(t, 0, sh.code, sh.stderr)
	assert.Contains(t, sh.stderr, "; 2000 bootstrap replicates resampling shared-items, family task.")
	read := func(name string) (resample string, ci []float64) {
		data, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		var s struct {
			Resample string `json:"resample"`
			Rows     []struct {
				CILow float64 `json:"ci_low"`
			} `json:"rows"`
		}
		require.NoError(t, json.Unmarshal(data, &s))
		for _, r := range s.Rows {
			ci = append(ci, r.CILow)
		}
		return s.Resample, ci
	}
	dr, dci := read("def.json")
	sr, sci := read("shared.json")
	assert.Equal(t, "within-seed", dr)
	assert.Equal(t, "shared-items", sr)
	assert.NotEqual(t, dci, sci, "another draw of the items")
	svg, err := os.ReadFile(filepath.Join(root, "shared.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "2000 replicates, the same items for every seed")

	bad := runCLI(t, "--chdir", root, "aggregate", "runs/a", "--resample", "items")
	assert.Equal(t, 2, bad.code)
	assert.Contains(t, bad.stderr, `--resample "items": give within-seed or shared-items`)
	help := runCLI(t, "aggregate", "--help")
	assert.Contains(t, help.stdout, "--resample string")
	assert.Contains(t, help.stdout, "shared-items")
}

// Too few bootstrap replicates to make any row of a family significant:
// the rows are marked in the table and the summary and a warning names
// the family, the p-value floor and the replicates needed; enough of them
// and nothing is marked.
func TestAggregateMarksFamiliesTooFewReplicatesCanDecide(t *testing.T) {
	root := aggregateWorkspace(t)
	r := runCLI(t, "--chdir", root, "aggregate", "runs/a", "--bootstrap", "1", "--out", "out/one.json")
	require.Equal(t, 0, r.code, r.stderr)
	// One family of two rows: the floor 2/(1+1) = 1 is above 0.05/2.
	assert.Contains(t, r.stderr, "warning: family hotpotqa/qwen: no row can be significant: 1 bootstrap replicates give no p-value below 1, and Holm's first step in a family of 2 rows needs p <= 0.025 (at least 79 replicates)\n")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	marked := 0
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "hotpotqa/qwen\t") && !strings.Contains(l, "\tseed ") {
			assert.Regexp(t, `\tno\tok; cannot be significant: 1 bootstrap replicates give no p-value below 1, `, l)
			marked++
		}
	}
	assert.Equal(t, 2, marked, r.stdout)
	var sum struct {
		PFloor   float64 `json:"p_floor"`
		Families []struct {
			Name         string `json:"name"`
			CannotReject bool   `json:"cannot_reject"`
		} `json:"families"`
		Rows []struct {
			CannotReject bool `json:"cannot_reject"`
		} `json:"rows"`
	}
	js, err := os.ReadFile(filepath.Join(root, "out", "one.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &sum))
	assert.Equal(t, 1.0, sum.PFloor)
	require.Len(t, sum.Families, 1)
	assert.True(t, sum.Families[0].CannotReject)
	for _, row := range sum.Rows {
		assert.True(t, row.CannotReject)
	}

	// 78 replicates: the floor 2/79 is still above 0.025; 79 reach it.
	r78 := runCLI(t, "--chdir", root, "aggregate", "runs/a", "--bootstrap", "78")
	require.Equal(t, 0, r78.code, r78.stderr)
	assert.Contains(t, r78.stderr, "no row can be significant")
	r79 := runCLI(t, "--chdir", root, "aggregate", "runs/a", "--bootstrap", "79")
	require.Equal(t, 0, r79.code, r79.stderr)
	assert.NotContains(t, r79.stderr, "significant")
	assert.NotContains(t, r79.stdout, "cannot be significant")

	// With no correction each row stands alone: 39 replicates cannot give
	// p <= 0.05, 40 can.
	// An --out that cannot take a file is bad input.
	require.NoError(t, os.WriteFile(filepath.Join(root, "afile"), nil, 0o644))
	bad := runCLI(t, "--chdir", root, "aggregate", "runs/a", "--bootstrap", "79", "--out", "afile/s.json")
	assert.Equal(t, exitBadInput, bad.code)
	assert.Contains(t, bad.stderr, "cannot write the outputs")

	none := runCLI(t, "--chdir", root, "aggregate", "runs/a", "--family", "none", "--bootstrap", "38")
	require.Equal(t, 0, none.code, none.stderr)
	assert.Contains(t, none.stderr, "warning: no row can be significant: 38 bootstrap replicates give no p-value below 0.05128, and a row with no correction needs p <= 0.05 (at least 39 replicates)\n")
	ok := runCLI(t, "--chdir", root, "aggregate", "runs/a", "--family", "none", "--bootstrap", "39")
	require.Equal(t, 0, ok.code, ok.stderr)
	assert.NotContains(t, ok.stderr, "significant")
}

// An empty --family is refused as an empty --resample is (the library's
// "" default is not the command line's), and jobs skipped for their seed
// are not said to be what --include-nonconformant adds.
func TestAggregateFlagsAndSkipsSayWhatTheyAre(t *testing.T) {
	root := aggregateWorkspace(t)
	r := runCLI(t, "--chdir", root, "aggregate", "runs", "--family", "")
	assert.Equal(t, exitBadInput, r.code, r.stderr)
	assert.Contains(t, r.stderr, `--family "": give task, method, none`)

	_, err := jobtest.Write(filepath.Join(root, "runs", "extra"), jobtest.Job{Method: "gepa", Seed: 7, Baseline: []float64{0, 1}, Deployed: []float64{1, 1}})
	require.NoError(t, err)
	r = runCLI(t, "--chdir", root, "aggregate", "runs", "--bootstrap", "200")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "seed 7 is not one of the protocol's seeds 0, 1, 2")
	assert.NotContains(t, r.stderr, "--include-nonconformant")
}

// A job folder linked into a root is read through the link, and keys the
// node by its files as read: a linked job whose scores change reruns the
// node, and the table is the command's on the same folder. A link leading
// out of the workspace is refused before anything runs (exit 2, naming
// the stage and the link), and so is one made after the plan.
func TestAggregateStageKeysJobsLinkedIntoItsRoot(t *testing.T) {
	root := cliWorkspace(t, nil)
	exp := filepath.Join(root, "exp") // the jobs in exp/gepa/CELL/seedN
	require.NoError(t, jobtest.Grid(exp, 1, 40, map[string]float64{"gepa": 0.25}, []string{"hotpotqa/centralized/qwen"}))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "runs"), 0o755))
	require.NoError(t, os.Symlink("../exp/gepa", filepath.Join(root, "runs", "gepa")))
	pipeline := `pipeline "linked" {}

stage "aggregate" "summary" {
  roots     = ["runs"]
  bootstrap = 500
}
`
	require.NoError(t, os.WriteFile(filepath.Join(root, "pipeline.hcl"), []byte(pipeline), 0o644))
	table := func() string {
		t.Helper()
		tsv, err := os.ReadFile(filepath.Join(root, "reports", "summary", "aggregate.tsv"))
		require.NoError(t, err)
		cli := runCLI(t, "--chdir", root, "aggregate", "runs", "--bootstrap", "500")
		require.Equal(t, 0, cli.code, cli.stderr)
		assert.Equal(t, cli.stdout, string(tsv), "the stage's table is not the command's on the same folder")
		return string(tsv)
	}
	r := runCLI(t, "--chdir", root, "apply", "pipeline.hcl")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "Apply complete: 1 ran, 0 cached, 0 failed, 0 skipped.")
	before := table()

	// Seed 0's deployed bundle now scores 0 on every item, written through
	// the job's own folder, not the link.
	deployed := make([]float64, 40)
	baseline := make([]float64, 40)
	for i := range baseline {
		baseline[i] = float64(i % 2)
	}
	_, err := jobtest.Write(exp, jobtest.Job{Method: "gepa", Seed: 0, Baseline: baseline, Deployed: deployed})
	require.NoError(t, err)
	plan := runCLI(t, "--chdir", root, "plan", "pipeline.hcl")
	require.Equal(t, 0, plan.code, plan.stderr)
	assert.Contains(t, plan.stdout, "~ stage.summary  run: input runs/gepa changed")
	changed := runCLI(t, "--chdir", root, "apply", "pipeline.hcl")
	require.Equal(t, 0, changed.code, changed.stdout+changed.stderr)
	assert.Contains(t, changed.stdout, "Apply complete: 1 ran, 0 cached, 0 failed, 0 skipped.")
	assert.NotEqual(t, before, table(), "the linked job's new scores are not in the table")

	// A link out of the workspace: refused, nothing read.
	outside, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, jobtest.Grid(outside, 2, 40, map[string]float64{"miprov2": 0}, []string{"hotpotqa/centralized/qwen"}))
	require.NoError(t, os.Symlink(filepath.Join(outside, "miprov2"), filepath.Join(root, "runs", "miprov2")))
	out := runCLI(t, "--chdir", root, "apply", "pipeline.hcl")
	assert.Equal(t, 2, out.code, out.stdout+out.stderr)
	msg := strings.Join(strings.Fields(out.stderr), " ") // unwrapped
	assert.Contains(t, msg, "stage.summary: the link runs/miprov2 below its roots leads to "+filepath.Join(outside, "miprov2")+", outside the workspace")
	require.NoError(t, os.Remove(filepath.Join(root, "runs", "miprov2")))
	again := runCLI(t, "--chdir", root, "apply", "pipeline.hcl")
	require.Equal(t, 0, again.code, again.stdout+again.stderr)
	assert.Contains(t, again.stdout, "Apply complete: 0 ran, 1 cached, 0 failed, 0 skipped.")
}

// A method's folder that is a link to a folder moved away is refused
// (exit 2), naming the link and where it points: printed without it, the
// table would lack the method's rows, and the other rows' Holm correction
// would change with them.
func TestAggregateRefusesADanglingMethodLink(t *testing.T) {
	root := aggregateWorkspace(t)
	require.NoError(t, os.RemoveAll(filepath.Join(root, "runs", "a", "miprov2")))
	require.NoError(t, os.Symlink("../moved", filepath.Join(root, "runs", "a", "miprov2")))
	r := runCLI(t, "--chdir", root, "aggregate", "runs/a", "--bootstrap", "50", "--out", "summary.json")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Equal(t, "Error: runs/a/miprov2: is a link to ../moved, which leads to nothing readable (no such file or directory): what it led to would be left out of the table without a word (a seed shown missing, or a whole method's rows gone, which changes the other rows' Holm correction); restore its target, or remove the link; nothing was written\n", r.stderr)
	assert.Empty(t, r.stdout)
	assert.NoFileExists(t, filepath.Join(root, "summary.json"))
}

// --out and --plot never write into a job's folder (the folder of a
// result.json aggregate reads): not over its job.json, selection.json or
// optimization.json, not beside them, not below, not through a link to
// the folder, and not over a hard link to one of its files. Refused
// (exit 2) before anything is written, the job's files untouched.
func TestAggregateOutputsNeverGoIntoAJobFolder(t *testing.T) {
	root := aggregateWorkspace(t)
	job := filepath.Join("runs", "a", "gepa", "hotpotqa_centralized_qwen", "seed2")
	before := map[string]string{}
	for _, f := range []string{"job.json", "selection.json", "optimization.json"} {
		before[f] = `{"format": "kept: ` + f + `"}`
		require.NoError(t, os.WriteFile(filepath.Join(root, job, f), []byte(before[f]), 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, job, "optimization"), 0o755))
	require.NoError(t, os.Symlink(job, filepath.Join(root, "joblink")))
	require.NoError(t, os.Link(filepath.Join(root, job, "job.json"), filepath.Join(root, "hard.json")))
	const never = ": aggregate never writes over what it reads, nor into a job's folder; name a file outside the job folders\n"
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--out", filepath.Join(job, "job.json")}, "--out " + job + "/job.json is a job's own file (" + job + "/job.json, in the folder of a job aggregate reads)"},
		{[]string{"--out", "x.json", "--plot", filepath.Join(job, "selection.json")}, "--plot " + job + "/selection.json is a job's own file (" + job + "/selection.json, in the folder of a job aggregate reads)"},
		{[]string{"--out", filepath.Join(job, "optimization.json"), "--plot", "p.svg"}, "--out " + job + "/optimization.json is a job's own file (" + job + "/optimization.json, in the folder of a job aggregate reads)"},
		{[]string{"--out", filepath.Join(job, "summary.json")}, "--out " + job + "/summary.json is in a job's folder (" + job + ", the folder of a job aggregate reads)"},
		{[]string{"--out", filepath.Join(job, "optimization", "new", "s.json")}, "--out " + job + "/optimization/new/s.json is in a job's folder (" + job + ", the folder of a job aggregate reads)"},
		{[]string{"--out", filepath.Join("joblink", "job.json")}, "--out joblink/job.json is a job's own file (" + job + "/job.json, in the folder of a job aggregate reads)"},
		{[]string{"--out", "hard.json"}, "--out hard.json is a job's own file (" + job + "/job.json, in the folder of a job aggregate reads)"},
	} {
		r := runCLI(t, append([]string{"--chdir", root, "aggregate", "runs", "--bootstrap", "50"}, c.args...)...)
		assert.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		assert.Equal(t, "Error: "+c.msg+never, r.stderr, c.args)
		assert.Empty(t, r.stdout, c.args)
	}
	for f, b := range before {
		got, err := os.ReadFile(filepath.Join(root, job, f))
		require.NoError(t, err)
		assert.Equal(t, b, string(got), f)
	}
	for _, f := range []string{"x.json", "x.svg", "p.svg", filepath.Join(job, "summary.json"), filepath.Join(job, "summary.svg"), filepath.Join(job, "job.svg"), filepath.Join(job, "optimization", "new")} {
		assert.NoFileExists(t, filepath.Join(root, f))
	}
}

// Roots and outputs given relative to the working directory, without
// --chdir, are checked as with it: a method's own file in a job's folder
// (optimization/optimizer_result.json) and a new file there are refused,
// and the method's record is kept.
func TestAggregateOutputsNeverGoIntoAJobFolderFromTheWorkingDirectory(t *testing.T) {
	root := aggregateWorkspace(t)
	t.Chdir(root)
	job := filepath.Join("runs", "a", "gepa", "hotpotqa_centralized_qwen", "seed2")
	record := filepath.Join(job, "optimization", "optimizer_result.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(record), 0o755))
	require.NoError(t, os.WriteFile(record, []byte(`{"method": "record"}`), 0o644))
	const never = ": aggregate never writes over what it reads, nor into a job's folder; name a file outside the job folders\n"
	for _, c := range []struct {
		out, msg string
	}{
		{record, "--out " + record + " is a job's own file (" + record + ", in the folder of a job aggregate reads)"},
		{filepath.Join(job, "summary.json"), "--out " + job + "/summary.json is in a job's folder (" + job + ", the folder of a job aggregate reads)"},
	} {
		r := runCLI(t, "aggregate", "runs", "--bootstrap", "50", "--out", c.out)
		assert.Equal(t, 2, r.code, "%s: %s", c.out, r.stderr)
		assert.Equal(t, "Error: "+c.msg+never, r.stderr, c.out)
	}
	got, err := os.ReadFile(record)
	require.NoError(t, err)
	assert.Equal(t, `{"method": "record"}`, string(got))
	for _, f := range []string{filepath.Join(job, "optimization", "optimizer_result.svg"), filepath.Join(job, "summary.json"), filepath.Join(job, "summary.svg")} {
		assert.NoFileExists(t, f)
	}
}

// --bootstrap is a count in decimal digits: a leading zero is decimal
// (0100 is 100 replicates, not 64), and Go's other literals (0x10, 0b101,
// 1_000, +5) are refused with exit 2, nothing written.
func TestAggregateBootstrapIsDecimal(t *testing.T) {
	root := aggregateWorkspace(t)
	r := runCLI(t, "--chdir", root, "aggregate", "runs/a", "--bootstrap", "0100", "--out", "s.json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "; 100 bootstrap replicates,")
	var sum struct {
		Replicates int `json:"bootstrap"`
	}
	js, err := os.ReadFile(filepath.Join(root, "s.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &sum))
	assert.Equal(t, 100, sum.Replicates)
	for _, b := range []string{"0x10", "0b101", "1_000", "+5", "-3", "1e4", ""} {
		r := runCLI(t, "--chdir", root, "aggregate", "runs/a", "--bootstrap", b, "--out", "bad.json")
		assert.Equal(t, 2, r.code, "%q: %s", b, r.stderr)
		assert.Contains(t, r.stderr, `Error: --bootstrap "`+b+`" is not a whole number in decimal digits (0 to 9 only: no sign, 0x, 0b or _): write it like 4`, b)
		assert.Empty(t, r.stdout, b)
		assert.NoFileExists(t, filepath.Join(root, "bad.json"), b)
	}
}
