package aggregate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/stages/aggregate"
	"github.com/cairn-run/cairn/stages/aggregate/jobtest"
	"github.com/cairn-run/cairn/stats"
)

// grid writes three methods × two cells (two datasets, one model) and one
// method on another model, all complete, under a new folder.
func grid(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, jobtest.Grid(root, 1, 60, map[string]float64{"gepa": 0.3, "miprov2": 0.05, "textgrad": 0},
		[]string{"hotpotqa/centralized/qwen", "math/centralized/qwen"}))
	require.NoError(t, jobtest.Grid(root, 2, 60, map[string]float64{"gepa": 0.2}, []string{"hotpotqa/centralized/llama"}))
	return root
}

func run(t *testing.T, o aggregate.Options) *aggregate.Summary {
	t.Helper()
	if o.Replicates == 0 {
		o.Replicates = 2000
	}
	s, err := aggregate.Run(context.Background(), o)
	require.NoError(t, err)
	return s
}

func outputs(t *testing.T, s *aggregate.Summary) (tsv, js, svg string) {
	t.Helper()
	var a, b, c bytes.Buffer
	require.NoError(t, s.TSV(&a))
	require.NoError(t, s.JSON(&b))
	require.NoError(t, s.SVG(&c))
	return a.String(), b.String(), c.String()
}

// A row's figures are the mean over seeds rounded once: three seeds of
// one value give that value, as each seed shows it. (A float sum of three
// 0.00625 divided by 3 is 0.006250000000000001: the row printed 0.63
// while each seed printed 0.62.)
func TestSeedsOfOneValueGiveThatValue(t *testing.T) {
	root := t.TempDir()
	b, d := make([]float64, 160), make([]float64, 160)
	d[0] = 1
	for i := range b {
		b[i] = 0.1
		d[i] += 0.1
	}
	for seed := range 3 {
		_, err := jobtest.Write(root, jobtest.Job{Method: "gepa", Seed: seed, Baseline: b, Deployed: d})
		require.NoError(t, err)
	}
	s := run(t, aggregate.Options{Roots: []string{root}, Replicates: 200})
	r := s.Rows[0]
	for _, sd := range r.Seeds {
		assert.Equal(t, *sd.DeltaPP, *r.DeltaPP, "delta_pp")
		assert.Equal(t, *sd.BaselineMean, *r.BaselineMean, "baseline_mean")
		assert.Equal(t, *sd.DeployedMean, *r.DeployedMean, "deployed_mean")
	}
	tsv, _, _ := outputs(t, s)
	lines := strings.Split(tsv, "\n")
	assert.Equal(t, "0.62", strings.Split(lines[1], "\t")[6])
	assert.Equal(t, "0.62", strings.Split(lines[2], "\t")[6])
}

func TestRowsMeansAndDelta(t *testing.T) {
	root := t.TempDir()
	// Three seeds of four items; seed means of the differences 0.25, 0.5, 0.
	seeds := []struct{ b, d []float64 }{
		{[]float64{0, 1, 0, 1}, []float64{1, 1, 0, 1}},
		{[]float64{0, 0, 1, 1}, []float64{1, 1, 1, 1}},
		{[]float64{1, 0, 1, 0}, []float64{1, 0, 1, 0}},
	}
	for s, sd := range seeds {
		_, err := jobtest.Write(root, jobtest.Job{Method: "gepa", Seed: s, Baseline: sd.b, Deployed: sd.d})
		require.NoError(t, err)
	}
	sum := run(t, aggregate.Options{Roots: []string{root}})
	require.Len(t, sum.Rows, 1)
	r := sum.Rows[0]
	assert.Equal(t, aggregate.StatusOK, r.Status)
	assert.Equal(t, 3, r.NSeeds)
	assert.Equal(t, "hotpotqa/qwen", r.Family)
	assert.InDelta(t, 0.5, *r.BaselineMean, 1e-12)
	assert.InDelta(t, 0.5+0.25, *r.DeployedMean, 1e-12)
	assert.InDelta(t, 25.0, *r.DeltaPP, 1e-12)
	assert.LessOrEqual(t, *r.CILow, *r.DeltaPP)
	assert.GreaterOrEqual(t, *r.CIHigh, *r.DeltaPP)
	require.Len(t, r.Seeds, 3)
	assert.InDelta(t, 50.0, *r.Seeds[1].DeltaPP, 1e-12)
	assert.Equal(t, 1.0, *r.PHolm, "2 items that differ are too few to decide")

	tsv, _, _ := outputs(t, sum)
	lines := strings.Split(strings.TrimSuffix(tsv, "\n"), "\n")
	require.Len(t, lines, 1+1+3)
	assert.Equal(t, strings.Join(aggregate.TableHeader, "\t"), lines[0])
	cols := strings.Split(lines[1], "\t")
	require.Len(t, cols, len(aggregate.TableHeader))
	assert.Equal(t, []string{"hotpotqa/qwen", "gepa", "hotpotqa/centralized/qwen", "3", "0.5000", "0.7500", "25.00"}, cols[:7])
	assert.True(t, strings.HasPrefix(cols[12], "ok; cannot be significant: too few items: 2 of 4 test item(s) differ"), cols[12])
	seed1 := strings.Split(lines[3], "\t")
	require.Len(t, seed1, len(aggregate.TableHeader))
	assert.Equal(t, []string{"seed 1", "0.5000", "1.0000", "50.00", "-"}, seed1[3:8])
	assert.Contains(t, seed1[12], "ok: 4 test items, "+filepath.Join(root, "gepa", "hotpotqa_centralized_qwen", "seed1", "result.json"))
}

func TestIncompleteRows(t *testing.T) {
	root := grid(t)
	// textgrad on math loses seed 2; miprov2 on math has an invalid item.
	require.NoError(t, os.RemoveAll(jobtest.Job{Method: "textgrad", Dataset: "math", Seed: 2}.Dir(root)))
	b, d := jobtest.Binary(rand.New(rand.NewPCG(3, 3)), 60, 0.5, 0.5)
	inv := make([]bool, 60)
	inv[17] = true
	_, err := jobtest.Write(root, jobtest.Job{Method: "miprov2", Dataset: "math", Seed: 1, Baseline: b, Deployed: d, Invalid: inv})
	require.NoError(t, err)

	sum := run(t, aggregate.Options{Roots: []string{root}})
	byName := rowsByName(sum)
	tg := byName["textgrad math/centralized/qwen"]
	assert.Equal(t, aggregate.StatusIncomplete, tg.Status)
	assert.Equal(t, "seed 2 missing", tg.Reason)
	assert.Equal(t, 2, tg.NSeeds)
	assert.Nil(t, tg.P)
	assert.Empty(t, tg.Family, "an incomplete row is in no family")
	mp := byName["miprov2 math/centralized/qwen"]
	assert.Equal(t, aggregate.StatusIncomplete, mp.Status)
	assert.Equal(t, "seed 1: 1 of 60 test items invalid (no score from a bundle)", mp.Reason)

	// The task family math/qwen now holds gepa alone: its p is its p_holm.
	gepa := byName["gepa math/centralized/qwen"]
	assert.Equal(t, *gepa.P, *gepa.PHolm)
	for _, f := range sum.Families {
		if f.Name == "math/qwen" {
			assert.Equal(t, 1, f.Rows)
		}
	}

	tsv, _, svg := outputs(t, sum)
	assert.Contains(t, tsv, "-\ttextgrad\tmath/centralized/qwen\t2\t-\t-\t-\t-\t-\t-\t-\t-\tincomplete: seed 2 missing\n")
	assert.Contains(t, tsv, "-\ttextgrad\tmath/centralized/qwen\tseed 2\t-\t-\t-\t-\t-\t-\t-\t-\tmissing\n")
	assert.Contains(t, tsv, "\tmiprov2\tmath/centralized/qwen\tseed 1\t")
	assert.Contains(t, tsv, "invalid: 1 of 60 test items invalid")
	// Incomplete rows come last.
	last := tsv[strings.LastIndex(tsv, "\tok\n"):]
	assert.NotContains(t, last[4:], "\tok\n")
	assert.Contains(t, svg, "textgrad  math/centralized/qwen: seed 2 missing")
}

func rowsByName(s *aggregate.Summary) map[string]aggregate.Row {
	out := map[string]aggregate.Row{}
	for _, r := range s.Rows {
		out[r.Method+" "+r.CellID] = r
	}
	return out
}

func TestNonconformantJobsAreSkippedWithAWarning(t *testing.T) {
	root := grid(t)
	b, d := jobtest.Binary(rand.New(rand.NewPCG(4, 4)), 60, 0.5, 0.9)
	smoke := jobtest.Job{Method: "gepa", Dataset: "math", Seed: 0, Baseline: b, Deployed: d,
		Nonconformant: []string{"budget 56 is below the protocol's 600 rollouts"}}
	_, err := jobtest.Write(root, smoke)
	require.NoError(t, err)

	sum := run(t, aggregate.Options{Roots: []string{root}})
	require.Len(t, sum.Skipped, 1)
	file := filepath.Join(smoke.Dir(root), "result.json")
	assert.Equal(t, "warning: skipped "+file+": budget 56 is below the protocol's 600 rollouts", sum.Skipped[0].Warning())
	row := rowsByName(sum)["gepa math/centralized/qwen"]
	assert.Equal(t, aggregate.StatusIncomplete, row.Status, "the smoke job was that row's seed 0")
	// Skipped, not missing: the seed is there, and left out on purpose.
	assert.Equal(t, "seed 0 skipped as non-conformant (budget 56 is below the protocol's 600 rollouts)", row.Reason)
	assert.Equal(t, aggregate.Seed{Seed: 0, Status: "skipped", File: file, Nonconformant: smoke.Nonconformant}, row.Seeds[0])
	tsv, js, svg := outputs(t, sum)
	assert.Contains(t, tsv, "\tgepa\tmath/centralized/qwen\tseed 0\t-\t-\t-\t-\t-\t-\t-\t-\tskipped as non-conformant: budget 56 is below the protocol's 600 rollouts, "+file+"\n")
	assert.NotContains(t, tsv, "missing")
	assert.Contains(t, js, `"status": "skipped"`)
	assert.Contains(t, svg, "gepa  math/centralized/qwen: seed 0 skipped as non-conformant (budget 56 is below the protocol&#39;s 600 rollouts)")

	incl := run(t, aggregate.Options{Roots: []string{root}, IncludeNonconformant: true})
	assert.Empty(t, incl.Skipped)
	row = rowsByName(incl)["gepa math/centralized/qwen"]
	assert.Equal(t, aggregate.StatusOK, row.Status)
	assert.Equal(t, file, row.Seeds[0].File)
	// Included, the row is computed and marked in all three outputs.
	assert.Equal(t, []string{"seed 0: budget 56 is below the protocol's 600 rollouts"}, row.Nonconformant)
	assert.Equal(t, smoke.Nonconformant, row.Seeds[0].Nonconformant)
	assert.Empty(t, rowsByName(incl)["gepa hotpotqa/centralized/qwen"].Nonconformant)
	require.NotNil(t, row.Reject)
	tsv, js, svg = outputs(t, incl)
	var line string
	for _, l := range strings.Split(tsv, "\n") {
		if strings.HasPrefix(l, "math/qwen\tgepa\tmath/centralized/qwen\t3\t") {
			line = l
		}
	}
	assert.True(t, strings.HasSuffix(line, "\tok; non-conformant: seed 0: budget 56 is below the protocol's 600 rollouts"), line)
	assert.Contains(t, tsv, "\tgepa\tmath/centralized/qwen\tseed 0\t")
	assert.Contains(t, tsv, "ok: 60 test items, "+file+"; non-conformant: budget 56 is below the protocol's 600 rollouts\n")
	var parsed struct {
		Rows []struct {
			Method, CellID string
			Nonconformant  []string `json:"nonconformant"`
		} `json:"rows"`
		Families []aggregate.Family `json:"families"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &parsed))
	marked := 0
	for _, r := range parsed.Rows {
		require.NotNil(t, r.Nonconformant, "every row says whether it is non-conformant")
		marked += len(r.Nonconformant)
	}
	assert.Equal(t, 1, marked)
	for _, f := range parsed.Families {
		assert.Equal(t, map[bool]int{true: 1, false: 0}[f.Name == "math/qwen"], f.Nonconformant, f.Name)
	}
	assert.Contains(t, svg, ">gepa  math/centralized/qwen"+map[bool]string{true: " *", false: ""}[*row.Reject]+" (non-conformant)<")
	assert.Contains(t, svg, "1 row(s) with a job outside the protocol")
	assert.Equal(t, 1, strings.Count(svg, `stroke="#c05600" stroke-width="2" stroke-dasharray="5 3"`), "one dashed orange bar")
	assert.Contains(t, svg, "non-conformant: seed 0: budget 56 is below the protocol&#39;s 600 rollouts</title>")
}

func TestFamilies(t *testing.T) {
	root := grid(t)
	task := run(t, aggregate.Options{Roots: []string{root}})
	assert.Equal(t, []aggregate.Family{
		{Name: "hotpotqa/llama", Rows: 1, Rejected: countRejected(task, "hotpotqa/llama")},
		{Name: "hotpotqa/qwen", Rows: 3, Rejected: countRejected(task, "hotpotqa/qwen")},
		{Name: "math/qwen", Rows: 3, Rejected: countRejected(task, "math/qwen")},
	}, task.Families)
	checkHolm(t, task)
	method := run(t, aggregate.Options{Roots: []string{root}, Family: aggregate.FamilyMethod})
	assert.Equal(t, []string{"gepa", "miprov2", "textgrad"}, familyNames(method))
	assert.Equal(t, 3, method.Families[0].Rows, "gepa: hotpotqa and math on qwen, hotpotqa on llama")
	checkHolm(t, method)
	none := run(t, aggregate.Options{Roots: []string{root}, Family: aggregate.FamilyNone})
	assert.Empty(t, none.Families)
	for _, r := range none.Rows {
		assert.Equal(t, *r.P, *r.PHolm)
		assert.Equal(t, *r.P <= 0.05, *r.Reject)
		assert.Empty(t, r.Family)
	}
	// The family changes the correction, never a row's interval or p.
	for k, r := range rowsByName(task) {
		m := rowsByName(method)[k]
		assert.Equal(t, *r.P, *m.P, k)
		assert.Equal(t, *r.CILow, *m.CILow, k)
	}
	// A large gain is found: gepa's 30 pp on 180 items.
	assert.True(t, *rowsByName(task)["gepa hotpotqa/centralized/qwen"].Reject)
	assert.False(t, *rowsByName(task)["textgrad hotpotqa/centralized/qwen"].Reject && *rowsByName(task)["textgrad math/centralized/qwen"].Reject)

	_, err := aggregate.Run(context.Background(), aggregate.Options{Roots: []string{root}, Family: "dataset"})
	require.ErrorIs(t, err, aggregate.ErrBadInput)
	assert.EqualError(t, err, `family "dataset" is not one of task, method, none`)
}

// checkHolm recomputes each family's correction from the rows' p-values.
func checkHolm(t *testing.T, s *aggregate.Summary) {
	t.Helper()
	byFam := map[string][]aggregate.Row{}
	for _, r := range s.Rows {
		if r.Status == aggregate.StatusOK {
			byFam[r.Family] = append(byFam[r.Family], r)
		}
	}
	for name, rows := range byFam {
		var p []float64
		for _, r := range rows {
			p = append(p, *r.P)
		}
		adj, rej := stats.Holm(p, 0.05)
		for i, r := range rows {
			assert.Equal(t, adj[i], *r.PHolm, "%s: %s %s", name, r.Method, r.CellID)
			assert.Equal(t, rej[i], *r.Reject)
		}
	}
}

func countRejected(s *aggregate.Summary, fam string) int {
	n := 0
	for _, r := range s.Rows {
		if r.Family == fam && r.Reject != nil && *r.Reject {
			n++
		}
	}
	return n
}

func familyNames(s *aggregate.Summary) []string {
	var out []string
	for _, f := range s.Families {
		out = append(out, f.Name)
	}
	return out
}

func TestOutputIsByteIdenticalAcrossRunsRootOrdersAndCores(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	require.NoError(t, jobtest.Grid(a, 5, 40, map[string]float64{"gepa": 0.1, "miprov2": 0}, []string{"hotpotqa/centralized/qwen"}))
	require.NoError(t, jobtest.Grid(b, 6, 40, map[string]float64{"textgrad": 0.2}, []string{"math/centralized/qwen", "hotpotqa/centralized/qwen"}))
	first := run(t, aggregate.Options{Dir: base, Roots: []string{"a", "b"}, Workers: 1})
	t1, j1, s1 := outputs(t, first)
	for _, o := range []aggregate.Options{
		{Dir: base, Roots: []string{"a", "b"}, Workers: 1},
		{Dir: base, Roots: []string{"b", "a"}, Workers: 8},
		{Dir: base, Roots: []string{"b", "a", "a"}, Workers: 3},
	} {
		t2, j2, s2 := outputs(t, run(t, o))
		assert.Equal(t, t1, t2, "table with %v", o)
		assert.Equal(t, j1, j2, "summary with %v", o)
		assert.Equal(t, s1, s2, "plot with %v", o)
	}
}

func TestForestPlot(t *testing.T) {
	root := grid(t)
	sum := run(t, aggregate.Options{Roots: []string{root}})
	_, _, svg := outputs(t, sum)
	assert.True(t, strings.HasPrefix(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""))
	assert.True(t, strings.HasSuffix(svg, "</svg>\n"))
	for _, f := range []string{"task family: hotpotqa/llama", "task family: hotpotqa/qwen", "task family: math/qwen"} {
		assert.Contains(t, svg, ">"+f+"<")
	}
	assert.Contains(t, svg, "delta (percentage points)")
	assert.Contains(t, svg, `stroke-dasharray="4 3"`, "the zero line")
	// One interval per complete row, the rejected ones filled and starred.
	assert.Equal(t, 7, strings.Count(svg, "<circle "))
	rejected := 0
	for _, r := range sum.Rows {
		if *r.Reject {
			rejected++
			assert.Contains(t, svg, ">"+r.Method+"  "+r.CellID+" *<")
		} else {
			assert.Contains(t, svg, ">"+r.Method+"  "+r.CellID+"<")
		}
	}
	require.Positive(t, rejected)
	assert.Equal(t, rejected, strings.Count(svg, `fill="#1f4e9c" stroke`))
}

func TestDocsDescribeTheTableAndTheStream(t *testing.T) {
	doc, err := os.ReadFile("../../docs/aggregate.md")
	require.NoError(t, err)
	for _, col := range aggregate.TableHeader {
		assert.Contains(t, string(doc), "`"+col+"`", "column %s", col)
	}
	assert.Contains(t, string(doc), "sha256(`"+stats.StreamConstant+"` NUL method NUL cell_id NUL seed)")
	assert.Contains(t, string(doc), "xoshiro256++")
	assert.Contains(t, string(doc), "`"+aggregate.SummaryFormat+"`")
	// Both resampling schemes, the shared stream's name, and the bound on
	// scores as ScoreLimit computes it.
	for _, r := range stats.ResampleNames {
		assert.Contains(t, string(doc), "`"+r+"`", "resampling %s", r)
	}
	assert.Contains(t, string(doc), "sha256(`"+stats.StreamConstant+"` NUL method NUL\n  cell_id NUL `"+stats.ResampleSharedItems+"`)")
	assert.Contains(t, string(doc), "MaxFloat64 / (16 · max(n, 100))")
	assert.Equal(t, math.MaxFloat64/1600, aggregate.ScoreLimit(3))
	assert.Equal(t, math.MaxFloat64/(16*250), aggregate.ScoreLimit(250))
	assert.Contains(t, string(doc), "(about 1.1e305 up to 100 items)")
	assert.Equal(t, "1.1e+305", fmt.Sprintf("%.2g", aggregate.ScoreLimit(100)))
}

// writeRow writes the three seeds of one row, each with the same scores.
func writeRow(t *testing.T, root, method string, b, d []float64) {
	t.Helper()
	for seed := range 3 {
		_, err := jobtest.Write(root, jobtest.Job{Method: method, Seed: seed, Baseline: b, Deployed: d})
		require.NoError(t, err)
	}
}

// A difference within rounding noise (0.1 + 0.2 against 0.3, 1e-320
// against 0) is a tie: no gain, and not a significant one, where a
// bootstrap of the raw differences, all positive, gave its smallest
// p-value. A row of one real gain among noise is judged on that gain
// alone. Every such row says so in its status and the summary.
func TestRoundingNoiseIsATie(t *testing.T) {
	root := t.TempDir()
	fill := func(n int, v float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	tenth := 0.1 // a variable: Go adds constants exactly
	noisy := tenth + 0.2
	require.Equal(t, 0.30000000000000004, noisy)
	writeRow(t, root, "float", fill(50, 0.3), fill(50, noisy))
	writeRow(t, root, "subnormal", fill(50, 0), fill(50, 1e-320))
	mixed := fill(160, noisy)
	mixed[0] = 1.3
	writeRow(t, root, "mixed", fill(160, 0.3), mixed)
	s := run(t, aggregate.Options{Roots: []string{root}, Replicates: 2000, Family: aggregate.FamilyNone})
	rows := map[string]aggregate.Row{}
	for _, r := range s.Rows {
		rows[r.Method] = r
	}
	for _, m := range []string{"float", "subnormal"} {
		r := rows[m]
		assert.Equal(t, 0.0, *r.DeltaPP, m)
		assert.Equal(t, []float64{0, 0, 1}, []float64{*r.CILow, *r.CIHigh, *r.P}, m)
		assert.False(t, *r.Reject, m)
		assert.Equal(t, 150, r.NoiseTies, m)
		assert.Equal(t, 0.0, *r.Seeds[1].DeltaPP, m)
	}
	mx := rows["mixed"]
	assert.Equal(t, 477, mx.NoiseTies)
	assert.InDelta(t, 100.0/160, *mx.DeltaPP, 1e-12)
	assert.Greater(t, *mx.P, 0.05, "one gain of 160 items in each seed, missed by about 5% of replicates")
	assert.False(t, *mx.Reject)

	tsv, js, _ := outputs(t, s)
	assert.Contains(t, tsv, "\tno\tok; rounding noise: 150 item difference(s) within 1e-09 of the score scale counted as ties (deployed − baseline at most 1e-09 × max(1, |baseline|, |deployed|))\n")
	// Ties carry no sign: one item differs (TestTiesAreNotItemsThatDecide).
	assert.Equal(t, []string{aggregate.WhyItems}, mx.CannotRejectWhy)
	assert.Contains(t, js, `"noise_ties": 150,`)
	assert.Contains(t, strings.Join(s.CannotRejectWarnings(), "\n"), "warning: float hotpotqa/centralized/qwen: rounding noise: 150 item difference(s)")
}

// Too few items for any test of their signs to reach alpha (fewer than 6
// items that differ, within seed as with shared items: the seeds share
// their items) cannot be significant, however small the bootstrap's
// p-value: one item per seed gave the interval [100, 100] and reject yes.
// Such a row is marked, enters Holm with p = 1, and is not rejected; 2
// items per seed are 2 signs, not 6 draws.
func TestTooFewItemsCannotBeSignificant(t *testing.T) {
	root := t.TempDir()
	writeRow(t, root, "one", []float64{0}, []float64{1})
	writeRow(t, root, "two", []float64{0, 0}, []float64{1, 1})
	b, d := jobtest.Binary(rand.New(rand.NewPCG(5, 5)), 60, 0.2, 0.9)
	writeRow(t, root, "many", b, d)
	s := run(t, aggregate.Options{Roots: []string{root}, Replicates: 2000})
	rows := rowsByName(s)
	one, two, many := rows["one hotpotqa/centralized/qwen"], rows["two hotpotqa/centralized/qwen"], rows["many hotpotqa/centralized/qwen"]
	assert.True(t, one.CannotReject)
	assert.Equal(t, []string{aggregate.WhyItems}, one.CannotRejectWhy)
	assert.Equal(t, 1.0, *one.PHolm)
	assert.False(t, *one.Reject)
	assert.Less(t, *one.P, 0.05, "the bootstrap's own p-value is kept")
	assert.Equal(t, []string{aggregate.WhyItems}, two.CannotRejectWhy)
	assert.False(t, *two.Reject)
	assert.False(t, many.CannotReject)
	assert.Empty(t, many.CannotRejectWhy)
	assert.True(t, *many.Reject)
	assert.Equal(t, 3*(*many.P), *many.PHolm, "a family of three")

	tsv, js, svg := outputs(t, s)
	assert.Contains(t, tsv, "\t1\tno\tok; cannot be significant: too few items: 1 of 1 test item(s) differ between the bundles in some seed (the others are ties, 0, in every seed, which carry no sign; an item's differences in the 3 seeds, which share their items, are not independent signs), and no test of fewer than 6 paired signs reaches p <= 0.05 (at least 6 items that differ)\n")
	assert.Contains(t, js, `"cannot_reject_why": [
        "too few items"
      ],`)
	assert.Contains(t, svg, ">one  hotpotqa/centralized/qwen (too few items)<")
	assert.Contains(t, strings.Join(s.CannotRejectWarnings(), "\n"), "warning: one hotpotqa/centralized/qwen: cannot be significant: too few items")

	// Items shared by every seed are the draws: 2 items are 2.
	s = run(t, aggregate.Options{Roots: []string{root}, Replicates: 2000, Resample: stats.ResampleSharedItems})
	rows = rowsByName(s)
	assert.Equal(t, []string{aggregate.WhyItems}, rows["two hotpotqa/centralized/qwen"].CannotRejectWhy)
	assert.False(t, *rows["two hotpotqa/centralized/qwen"].Reject)
	assert.Empty(t, rows["many hotpotqa/centralized/qwen"].CannotRejectWhy)
}

// Ties (a difference of 0) carry no sign, so padding a row with them does
// not make it decidable: 4 items that differ among 100, in every seed, or
// 2, 2 and 1 of them in seeds 0, 1 and 2, cannot be significant (the
// exact sign test of 4 is p = 0.125, of 5 p = 0.0625), where the bootstrap
// gave p = 0.036 and 0.014 and reject yes. 6 items that differ among 100
// are decided, and rejected; a row in which none differs has p = 1 and
// is not marked.
func TestTiesAreNotItemsThatDecide(t *testing.T) {
	root := t.TempDir()
	row := func(method string, differ [3]int) {
		for seed := range 3 {
			b, d := make([]float64, 100), make([]float64, 100)
			for i := range differ[seed] {
				d[i] = 1
			}
			_, err := jobtest.Write(root, jobtest.Job{Method: method, Seed: seed, Baseline: b, Deployed: d})
			require.NoError(t, err)
		}
	}
	row("four", [3]int{4, 4, 4})
	row("uneven", [3]int{2, 2, 1})
	row("six", [3]int{6, 6, 6})
	row("none", [3]int{0, 0, 0})
	for _, resample := range stats.ResampleNames {
		s := run(t, aggregate.Options{Roots: []string{root}, Replicates: 2000, Family: aggregate.FamilyNone, Resample: resample})
		rows := rowsByName(s)
		for _, name := range []string{"four", "uneven"} {
			r := rows[name+" hotpotqa/centralized/qwen"]
			assert.Equal(t, []string{aggregate.WhyItems}, r.CannotRejectWhy, "%s %s", name, resample)
			assert.Equal(t, 1.0, *r.PHolm, "%s %s", name, resample)
			assert.False(t, *r.Reject, "%s %s", name, resample)
		}
		six := rows["six hotpotqa/centralized/qwen"]
		assert.Empty(t, six.CannotRejectWhy, resample)
		assert.True(t, *six.Reject, resample)
		// No item differs: p = 1 says so, unmarked.
		none := rows["none hotpotqa/centralized/qwen"]
		assert.Empty(t, none.CannotRejectWhy, resample)
		assert.Equal(t, 1.0, *none.P, resample)
		tsv, _, _ := outputs(t, s)
		if resample == stats.ResampleSharedItems {
			assert.Contains(t, tsv, "\tfour\thotpotqa/centralized/qwen\t3\t0.0000\t0.0400\t4.00\t")
			assert.Contains(t, tsv, "\tno\tok; cannot be significant: too few items: 4 of 100 test item(s) differ between the bundles averaged over the seeds (the others are ties, 0, which carry no sign), and no test of fewer than 6 paired signs reaches p <= 0.05 (at least 6 items that differ)\n")
		} else {
			assert.Contains(t, tsv, "\tno\tok; cannot be significant: too few items: 2 of 100 test item(s) differ between the bundles in some seed (the others are ties, 0, in every seed, which carry no sign; an item's differences in the 3 seeds, which share their items, are not independent signs), and no test of fewer than 6 paired signs reaches p <= 0.05 (at least 6 items that differ)\n")
		}
	}
}

// With fewer than 41 replicates the 2.5th and 97.5th percentiles fall
// between the two most extreme replicates: the interval is about their
// range, and is marked wherever it is shown rather than printed as a 95%
// interval. 41 are enough.
func TestAnIntervalOfTooFewReplicatesIsMarked(t *testing.T) {
	root := t.TempDir()
	b, d := jobtest.Binary(rand.New(rand.NewPCG(6, 6)), 40, 0.3, 0.6)
	writeRow(t, root, "gepa", b, d)
	for _, B := range []int{1, 40} {
		s := run(t, aggregate.Options{Roots: []string{root}, Replicates: B})
		r := s.Rows[0]
		assert.True(t, r.CINot95, B)
		tsv, js, svg := outputs(t, s)
		assert.Contains(t, tsv, fmt.Sprintf("; interval not 95%%: %d bootstrap replicate(s) are too few: the interval's ends, their 2.5th and 97.5th percentiles, fall between the two most extreme replicates on each side ((B − 1) · 0.025 < 1), so it is about their range, not their middle 95%% (at least 41 replicates)\n", B))
		assert.Contains(t, js, `"ci_not_95": true,`)
		assert.Contains(t, svg, fmt.Sprintf("with bootstrap intervals that are not 95%% intervals (%d replicates; at least 41 needed)", B))
		assert.Contains(t, s.CannotRejectWarnings(), "warning: no interval is a 95% interval: "+s.IntervalNote())
	}
	s := run(t, aggregate.Options{Roots: []string{root}, Replicates: 41})
	assert.False(t, s.Rows[0].CINot95)
	tsv, js, svg := outputs(t, s)
	assert.NotContains(t, tsv, "interval not 95%")
	assert.Contains(t, js, `"ci_not_95": false,`)
	assert.Contains(t, svg, "with 95% bootstrap intervals")
	assert.Empty(t, s.CannotRejectWarnings())
}

// Methods of one cell tested on different items (a test split made again
// between their runs) are aggregated, each row on its own items, with a
// warning naming the cell and the methods, in the summary and on the
// terminal: rows side by side are not on one test set.
func TestMethodsOfACellOnDifferentItemsAreWarned(t *testing.T) {
	root := t.TempDir()
	for s := range 3 {
		for method, n := range map[string]int{"gepa": 4, "miprov2": 4, "textgrad": 5} {
			b := []float64{0, 1, 0, 1, 1}[:n]
			d := []float64{1, 1, 0, 1, 0}[:n]
			_, err := jobtest.Write(root, jobtest.Job{Method: method, Seed: s, Baseline: b, Deployed: d})
			require.NoError(t, err)
		}
	}
	sum := run(t, aggregate.Options{Roots: []string{root}})
	require.Len(t, sum.Rows, 3)
	want := "cell hotpotqa/centralized/qwen: gepa and textgrad were tested on different items (4 and 5 items, 1 of them in one only): each row pairs its own items, but the two rows are not on one test set"
	assert.Equal(t, []string{want}, sum.DifferentItems, "miprov2 was tested on gepa's items")
	assert.Contains(t, sum.CannotRejectWarnings(), "warning: "+want)
	_, js, _ := outputs(t, sum)
	assert.Contains(t, js, `"different_items": [`)

	_, js, _ = outputs(t, run(t, aggregate.Options{Roots: []string{grid(t)}}))
	assert.NotContains(t, js, "different_items", "a grid on one test set says nothing")
}

// Seeds whose mean differences cancel (-4/5, 1/5 and 3/5: baseline and
// deployed means both 0.6) give a row delta_pp of exactly 0, in the
// summary and the table: the float means -0.8, 0.2 and 0.6 added gave
// -1.850371707708594e-15.
func TestDeltaOfEqualMeansIsZero(t *testing.T) {
	root := t.TempDir()
	seeds := []struct{ b, d []float64 }{
		{[]float64{1, 1, 1, 1, 1}, []float64{1, 0, 0, 0, 0}},
		{[]float64{1, 1, 0, 0, 0}, []float64{1, 1, 1, 0, 0}},
		{[]float64{1, 1, 0, 0, 0}, []float64{1, 1, 1, 1, 1}},
	}
	for s, sd := range seeds {
		_, err := jobtest.Write(root, jobtest.Job{Method: "gepa", Seed: s, Baseline: sd.b, Deployed: sd.d})
		require.NoError(t, err)
	}
	s := run(t, aggregate.Options{Roots: []string{root}, Replicates: 200})
	r := s.Rows[0]
	assert.Equal(t, *r.BaselineMean, *r.DeployedMean)
	assert.Equal(t, 0.0, *r.DeltaPP)
	assert.False(t, math.Signbit(*r.DeltaPP), "not -0")
	assert.Equal(t, []float64{-80, 20, 60}, []float64{*r.Seeds[0].DeltaPP, *r.Seeds[1].DeltaPP, *r.Seeds[2].DeltaPP})
	tsv, js, _ := outputs(t, s)
	assert.Contains(t, js, `"delta_pp": 0,`)
	assert.Contains(t, tsv, "\tgepa\thotpotqa/centralized/qwen\t3\t0.6000\t0.6000\t0.00\t")
}
