package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/stats"
)

// lmEvalSamples writes an lm-eval samples file (--log_samples) in the
// format of the real one in stages/modelcache/testdata: one line per doc,
// its "acc" the score given (nil: null).
func lmEvalSamples(t *testing.T, acc []*float64) string {
	t.Helper()
	var b strings.Builder
	for i, a := range acc {
		line := map[string]any{
			"doc_id": i, "doc": map[string]any{"id": fmt.Sprintf("arith-%02d", i), "question": fmt.Sprintf("What is %d + 12?", i)},
			"target": "1", "arguments": map[string]any{"gen_args_0": map[string]any{"arg_0": "Q", "arg_1": " 50"}},
			"resps": [][][]string{{{"-0.5", "True"}}}, "filtered_resps": [][]string{{"-0.5", "True"}},
			"filter": "none", "metrics": []string{"acc"}, "doc_hash": "d7", "prompt_hash": "cb", "target_hash": "6b", "acc": a,
		}
		j, err := json.Marshal(line)
		require.NoError(t, err)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func coin(r *rand.Rand, p float64) *float64 {
	v := 0.0
	if r.Float64() < p {
		v = 1
	}
	return &v
}

// Imported lm-eval results feed seed 002's statistics: a baseline file and,
// for two methods, a file per optimizer seed become jobs (`cairn import
// lm-eval --job`); the aggregate stage's paired bootstrap and Holm table
// over them is exactly what package stats computes from the same numbers,
// and the run report shows the table.
func TestImportedLMEvalResultsAggregate(t *testing.T) {
	const n = 40
	r := rand.New(rand.NewPCG(33, 2))
	files := map[string]string{}
	base := make([]*float64, n)
	for i := range base {
		base[i] = coin(r, 0.5)
	}
	files["lm_eval/base/samples_arith_2026-12-05T06-00-00.jsonl"] = lmEvalSamples(t, base)
	scores := map[string][][]*float64{} // method -> seed -> item
	for _, m := range []struct {
		name string
		p    float64
	}{{"gepa", 0.8}, {"simba", 0.55}} {
		for seed := range 3 {
			acc := make([]*float64, n)
			for i := range acc {
				acc[i] = coin(r, m.p)
			}
			scores[m.name] = append(scores[m.name], acc)
			files[fmt.Sprintf("lm_eval/%s/%d/samples_arith_2026-12-05T07-00-00.jsonl", m.name, seed)] = lmEvalSamples(t, acc)
		}
	}
	files["pipeline.hcl"] = `stage "aggregate" "imported" {
  roots     = ["runs"]
  bootstrap = 2000
}
`
	root := cliWorkspace(t, files)
	for _, m := range []string{"gepa", "simba"} {
		for seed := range 3 {
			res := runCLI(t, "--chdir", root, "import", "lm-eval", fmt.Sprintf("lm_eval/%s/%d/samples_arith_2026-12-05T07-00-00.jsonl", m, seed),
				"--baseline", "lm_eval/base/samples_arith_2026-12-05T06-00-00.jsonl",
				"--job", fmt.Sprintf("runs/%s/%d", m, seed), "--method", m, "--cell", "arith/single/sim", "--seed", fmt.Sprint(seed))
			require.Equal(t, 0, res.code, res.stderr)
			assert.Contains(t, res.stderr, fmt.Sprintf("imported %d items: %s arith/single/sim seed %d", n, m, seed))
		}
	}

	// Provenance: the files and their digests.
	var job struct {
		Format string `json:"format"`
		Source struct {
			Format             string
			Metric, Filter     string
			Baseline, Deployed struct{ File, SHA256 string }
		} `json:"source"`
		ValidForAggregation bool `json:"valid_for_aggregation"`
	}
	b, err := os.ReadFile(filepath.Join(root, "runs/gepa/1/result.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &job))
	assert.Equal(t, "cairn.job-result/1", job.Format)
	assert.Equal(t, "lm-eval", job.Source.Format)
	assert.Equal(t, "acc", job.Source.Metric)
	assert.Equal(t, "none", job.Source.Filter)
	assert.Equal(t, "lm_eval/gepa/1/samples_arith_2026-12-05T07-00-00.jsonl", job.Source.Deployed.File)
	assert.Equal(t, "lm_eval/base/samples_arith_2026-12-05T06-00-00.jsonl", job.Source.Baseline.File)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, job.Source.Deployed.SHA256)
	assert.True(t, job.ValidForAggregation)

	res := runCLI(t, "--chdir", root, "apply", "pipeline.hcl")
	require.Equal(t, 0, res.code, res.stdout+res.stderr)
	var sum struct {
		Rows []struct {
			Method  string
			Status  string
			DeltaPP float64 `json:"delta_pp"`
			CILow   float64 `json:"ci_low"`
			CIHigh  float64 `json:"ci_high"`
			P       float64 `json:"p"`
			PHolm   float64 `json:"p_holm"`
			Reject  bool    `json:"reject"`
		} `json:"rows"`
	}
	b, err = os.ReadFile(filepath.Join(root, "reports/imported/summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &sum))
	require.Len(t, sum.Rows, 2)

	// The same numbers, straight into package stats: per seed, each item's
	// difference in the order of its id, as test.json sorts them.
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprint(i)
	}
	order := slices.Clone(ids)
	slices.Sort(order)
	var strata []stats.Strata
	var deltas []float64
	for _, m := range []string{"gepa", "simba"} {
		st := stats.Strata{Method: m, CellID: "arith/single/sim", Seeds: []int{0, 1, 2}}
		var delta float64
		for seed := range 3 {
			var d []float64
			var sd float64
			for _, id := range order {
				i := slices.Index(ids, id)
				x := *scores[m][seed][i] - *base[i]
				d = append(d, x)
				sd += x
			}
			st.Diffs = append(st.Diffs, d)
			delta += 100 * sd / n
		}
		strata = append(strata, st)
		deltas = append(deltas, delta/3)
	}
	ivs, err := stats.Bootstrap(context.Background(), strata, 2000, 1, stats.ResampleWithinSeed)
	require.NoError(t, err)
	adj, reject := stats.Holm([]float64{ivs[0].P, ivs[1].P}, stats.Alpha)
	for i, row := range sum.Rows {
		require.Equal(t, strata[i].Method, row.Method)
		assert.Equal(t, "ok", row.Status)
		assert.InDelta(t, deltas[i], row.DeltaPP, 1e-9)
		assert.Equal(t, ivs[i].Low, row.CILow, row.Method)
		assert.Equal(t, ivs[i].High, row.CIHigh, row.Method)
		assert.Equal(t, ivs[i].P, row.P, row.Method)
		assert.Equal(t, adj[i], row.PHolm, row.Method)
		assert.Equal(t, reject[i], row.Reject, row.Method)
	}
	t.Logf("gepa: delta %.2f pp [%.2f, %.2f], p %.4g, Holm %.4g; simba: delta %.2f pp [%.2f, %.2f], p %.4g, Holm %.4g",
		sum.Rows[0].DeltaPP, sum.Rows[0].CILow, sum.Rows[0].CIHigh, sum.Rows[0].P, sum.Rows[0].PHolm,
		sum.Rows[1].DeltaPP, sum.Rows[1].CILow, sum.Rows[1].CIHigh, sum.Rows[1].P, sum.Rows[1].PHolm)

	// The report shows the table and the forest plot: the page's data
	// (`cairn show RUN --json` is what the page is drawn from).
	tsv, err := os.ReadFile(filepath.Join(root, "reports/imported/aggregate.tsv"))
	require.NoError(t, err)
	rep := runCLI(t, "--chdir", root, "report", "--out", "report.html")
	require.Equal(t, 0, rep.code, rep.stderr)
	run := regexp.MustCompile(`Report of run (\S+) \(ok\)`).FindStringSubmatch(rep.stdout)
	require.NotNil(t, run, rep.stdout)
	show := runCLI(t, "--chdir", root, "show", run[1], "--json")
	require.Equal(t, 0, show.code, show.stderr)
	var page struct {
		Artifacts []struct {
			Node, Path, Type, SVG string
			Rows                  [][]string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &page))
	var table [][]string
	var plot string
	for _, a := range page.Artifacts {
		switch a.Path {
		case "reports/imported/aggregate.tsv":
			table = a.Rows
		case "reports/imported/forest.svg":
			plot = a.SVG
		}
	}
	var want [][]string
	for _, line := range strings.Split(strings.TrimSuffix(string(tsv), "\n"), "\n") {
		want = append(want, strings.Split(line, "\t"))
	}
	assert.Equal(t, want, table, "the report's table is the aggregate's")
	assert.Contains(t, plot, "gepa")
	assert.Contains(t, plot, "simba")
}

// An imported job is made only of scores that can give its figures: a
// missing score, a non-numeric one, one whose mean would overflow, a
// repeated id, or items only one file has are refused (exit 2), naming the file and the item; nothing is
// written.
func TestImportJobRefusesWhatCannotGiveAFigure(t *testing.T) {
	one, zero := 1.0, 0.0
	good := lmEvalSamples(t, []*float64{&one, &zero, &one})
	missing := lmEvalSamples(t, []*float64{&one, nil, &one})
	nonNumeric := strings.Replace(good, `"acc":0`, `"acc":"n/a"`, 1)
	nan := strings.Replace(good, `"acc":0`, `"acc":"NaN"`, 1)
	dup := good + strings.SplitAfter(good, "\n")[0]
	short := lmEvalSamples(t, []*float64{&one, &zero})
	huge := strings.Replace(good, `"acc":0`, `"acc":1e308`, 1)
	files := map[string]string{"base.jsonl": good, "missing.jsonl": missing, "text.jsonl": nonNumeric,
		"nan.jsonl": nan, "dup.jsonl": dup, "short.jsonl": short, "huge.jsonl": huge}
	// A number in a string is a JSON number and nothing else: Go's
	// syntax read "1_0" as 10 (a gain of 250 pp on a 0/1 metric) and
	// "0x1p-1" as 0.5.
	goSyntax := map[string]string{"underscore.jsonl": "1_0", "hex.jsonl": "0x1p-1", "plus.jsonl": "+1", "dot.jsonl": ".5"}
	for f, v := range goSyntax {
		files[f] = strings.Replace(good, `"acc":0`, `"acc":"`+v+`"`, 1)
	}
	root := cliWorkspace(t, files)
	for _, c := range []struct{ file, want string }{
		{"missing.jsonl", `missing.jsonl: line 2 (doc_id 1): metric "acc" has no score (null)`},
		{"text.jsonl", `text.jsonl: line 2 (doc_id 1): metric "acc": value "n/a" is not a score`},
		{"nan.jsonl", `nan.jsonl: line 2 (doc_id 1): metric "acc": value "NaN" is not a score`},
		{"dup.jsonl", `dup.jsonl: line 4: doc_id 0 twice`},
		{"short.jsonl", `short.jsonl and base.jsonl do not score the same items (only base.jsonl has 2; only short.jsonl has none)`},
		// A mean that would overflow: no result.json without its means.
		{"huge.jsonl", `huge.jsonl and base.jsonl: item "1": the deployed score 1e+308 is beyond ±`},
		{"underscore.jsonl", `underscore.jsonl: line 2 (doc_id 1): metric "acc": value "1_0" is not a score (a finite number, true/false, or C/I/P/N; in a string, a JSON number and nothing else: "0.5", not ".5", "+1", "1_0" or "0x1p-1")`},
		{"hex.jsonl", `hex.jsonl: line 2 (doc_id 1): metric "acc": value "0x1p-1" is not a score`},
		{"plus.jsonl", `plus.jsonl: line 2 (doc_id 1): metric "acc": value "+1" is not a score`},
		{"dot.jsonl", `dot.jsonl: line 2 (doc_id 1): metric "acc": value ".5" is not a score`},
	} {
		r := runCLI(t, "--chdir", root, "import", "lm-eval", c.file, "--baseline", "base.jsonl", "--job", "runs/x",
			"--method", "m", "--cell", "d/r/m", "--seed", "0")
		assert.Equal(t, 2, r.code, c.file)
		assert.Contains(t, r.stderr, c.want, c.file)
		assert.NoDirExists(t, filepath.Join(root, "runs/x"), c.file)
	}
	// A job cairn ran is not overwritten; an imported one is replaced.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "runs/ran"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "runs/ran/result.json"), []byte(`{"format": "cairn.job-result/1", "status": "ok"}`), 0o644))
	r := runCLI(t, "--chdir", root, "import", "lm-eval", "base.jsonl", "--baseline", "base.jsonl", "--job", "runs/ran", "--method", "m", "--cell", "d/r/m", "--seed", "0")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "runs/ran already holds a job's result.json that cairn ran")
	for range 2 {
		r = runCLI(t, "--chdir", root, "import", "lm-eval", "base.jsonl", "--baseline", "base.jsonl", "--job", "runs/imp", "--method", "m", "--cell", "d/r/m", "--seed", "0")
		assert.Equal(t, 0, r.code, r.stderr)
	}
	// An Inspect log makes a job the same way; the scorer is recorded.
	ev, err := os.ReadFile("../../stages/modelcache/testdata/arith.eval")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "arith.eval"), ev, 0o644))
	r = runCLI(t, "--chdir", root, "import", "inspect", "arith.eval", "--baseline", "arith.eval", "--job", "runs/inspect", "--method", "m", "--cell", "d/r/m", "--seed", "2")
	require.Equal(t, 0, r.code, r.stderr)
	var insp struct {
		TestItems int `json:"test_items"`
		Source    struct{ Format, Scorer string }
	}
	b, err := os.ReadFile(filepath.Join(root, "runs/inspect/result.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &insp))
	assert.Equal(t, 12, insp.TestItems)
	assert.Equal(t, "inspect", insp.Source.Format)
	assert.NotEmpty(t, insp.Source.Scorer)
	// The baseline is checked as well.
	r = runCLI(t, "--chdir", root, "import", "lm-eval", "base.jsonl", "--baseline", "missing.jsonl", "--job", "runs/x",
		"--method", "m", "--cell", "d/r/m", "--seed", "0")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, `missing.jsonl: line 2 (doc_id 1): metric "acc" has no score (null)`)
	r = runCLI(t, "--chdir", root, "import", "lm-eval", "base.jsonl", "--baseline", "base.jsonl", "--job", "runs/x", "--cell", "d/r", "--method", "m", "--seed", "0")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, `--cell "d/r" is not DATASET/RUNTIME/MODEL`)
}

// Importing again into a job folder imported before replaces its two files
// so that a kill between them never leaves the new test.json beside the
// old result.json, which names the old one (aggregate would refuse it as
// edited): the old result.json is gone first, and importing again
// completes the job.
func TestImportJobKilledBetweenItsFilesLeavesNoMismatch(t *testing.T) {
	one, zero := 1.0, 0.0
	a := lmEvalSamples(t, []*float64{&one, &zero, &one})
	b := lmEvalSamples(t, []*float64{&one, &one, &one})
	root := cliWorkspace(t, map[string]string{"a.jsonl": a, "b.jsonl": b})
	imp := func(file, seed string) cliResult {
		return runCLI(t, "--chdir", root, "import", "lm-eval", file, "--baseline", "a.jsonl", "--job", "runs/m/"+seed,
			"--method", "m", "--cell", "d/r/q", "--seed", seed)
	}
	for _, seed := range []string{"0", "1"} {
		r := imp("a.jsonl", seed)
		require.Equal(t, 0, r.code, r.stderr)
	}
	dir := filepath.Join(root, "runs/m/0")
	newTest := []byte(`{"format": "cairn.job-test/1", "items": []}` + "\n")
	killed := fmt.Errorf("killed")
	err := writeJobFiles(dir, newTest, nil, func(path string, b []byte, sync bool) error {
		if filepath.Base(path) != "test.json" {
			return killed // the process dies before the second file
		}
		return os.WriteFile(path, b, 0o644)
	})
	require.ErrorIs(t, err, killed)
	assert.NoFileExists(t, filepath.Join(dir, "result.json"), "the old result.json beside the new test.json")
	r := runCLI(t, "--chdir", root, "aggregate", "runs", "--out", "sum.json")
	assert.NotContains(t, r.stderr, "is not the file", r.stderr)

	r = imp("b.jsonl", "0")
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "--chdir", root, "aggregate", "runs", "--out", "sum.json")
	assert.Equal(t, 0, r.code, r.stderr)

	// A mismatched pair of an imported job (an edit, or an import that an
	// earlier cairn left half done) names the import as a possible cause.
	tb, err := os.ReadFile(filepath.Join(dir, "test.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "runs/m/1/test.json"), tb, 0o644))
	r = runCLI(t, "--chdir", root, "aggregate", "runs", "--out", "sum.json")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "runs/m/1/test.json: is not the file the import wrote")
	assert.Contains(t, r.stderr, "(was it edited after the import, or an import into this folder interrupted? cairn import --job writes both files again)")
}
