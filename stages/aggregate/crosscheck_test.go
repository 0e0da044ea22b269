package aggregate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/stages/aggregate"
	"github.com/cairn-run/cairn/stages/aggregate/jobtest"
	"github.com/cairn-run/cairn/stats"
)

// python is the interpreter of Debian's python3-numpy, python3-scipy and
// python3-statsmodels, called by path so that a virtual environment on
// PATH does not stand in for them.
const python = "/usr/bin/python3"

type ccStratum struct {
	Baseline []float64 `json:"baseline"`
	Deployed []float64 `json:"deployed"`
}

type ccRow struct {
	Strata     []ccStratum `json:"strata"`
	Replicates int         `json:"replicates"`
	Seed       int         `json:"seed"`
	Resample   string      `json:"resample"`
}

// ccExact is a row whose bootstrap the reference script computes from the
// documented stream, to be matched to the bit.
type ccExact struct {
	Method     string      `json:"method"`
	CellID     string      `json:"cell_id"`
	Seeds      []int       `json:"seeds"`
	Strata     []ccStratum `json:"strata"`
	Replicates int         `json:"replicates"`
	Resample   string      `json:"resample"`
}

type ccRef struct {
	Holm []struct {
		PAdj   []float64 `json:"p_adj"`
		Reject []bool    `json:"reject"`
	} `json:"holm"`
	Rows []struct {
		CILow       float64  `json:"ci_low"`
		CIHigh      float64  `json:"ci_high"`
		P           float64  `json:"p"`
		SD          float64  `json:"sd"`
		ScipyCILow  *float64 `json:"scipy_ci_low"`
		ScipyCIHigh *float64 `json:"scipy_ci_high"`
		ScipySD     *float64 `json:"scipy_sd"`
	} `json:"rows"`
	Exact []struct {
		CILow  float64 `json:"ci_low"`
		CIHigh float64 `json:"ci_high"`
		P      float64 `json:"p"`
	} `json:"exact"`
}

// The cross-check's sizes: cairn's replicates per row, the reference's.
const (
	ccReplicates    = 10000
	ccRefReplicates = 20000
)

// TestCrossCheck compares the aggregation with the libraries researchers
// use, on randomly generated inputs (a fixed generator seed, so a failure
// reproduces): Holm exactly against statsmodels' multipletests; the
// interval of one-seed rows against scipy.stats.bootstrap (paired,
// percentile), of three-seed rows against a numpy implementation of
// docs/aggregate.md, and of three-seed rows resampling shared items against
// both (scipy's paired bootstrap over the seeds' differences draws the same
// items for every seed), within Monte-Carlo error; the p-values against
// numpy likewise. Both resampling schemes are also recomputed by the script
// from the documented stream and must agree to the bit. `make crosscheck`
// installs what it needs and runs it.
func TestCrossCheck(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		t.Skipf("cross-check skipped: %s is missing (apt-get install python3-scipy python3-statsmodels, or make crosscheck)", python)
	}
	if out, err := exec.Command(python, "-c", "import numpy, scipy, statsmodels").CombinedOutput(); err != nil {
		t.Skipf("cross-check skipped: %s cannot import numpy, scipy and statsmodels (apt-get install python3-scipy python3-statsmodels, or make crosscheck): %s", python, lastLine(out))
	}
	rng := rand.New(rand.NewPCG(2026, 14))

	// Holm: families of 1 to 12 p-values, some tied, some near α.
	var holm [][]float64
	for f := range 40 {
		m := 1 + rng.IntN(12)
		p := make([]float64, m)
		for i := range p {
			switch rng.IntN(4) {
			case 0:
				p[i] = math.Round(rng.Float64()*100) / 1000 // ties on a grid
			case 1:
				p[i] = rng.Float64() * 0.02
			default:
				p[i] = rng.Float64()
			}
		}
		if f%5 == 0 && m > 1 {
			p[1] = p[0]
		}
		holm = append(holm, p)
	}

	// Rows: one seed (against scipy) or three (against numpy), binary or
	// continuous scores, gains from none to large.
	var rows []ccRow
	root := t.TempDir()
	type threeSeed struct {
		row    int
		method string
		cell   string
	}
	var three []threeSeed
	for r := range 24 {
		seeds := 1
		if r%2 == 1 {
			seeds = 3
		}
		n := 20 + rng.IntN(180)
		gain := []float64{0, 0.02, 0.08, 0.2}[rng.IntN(4)]
		binary := rng.IntN(2) == 0
		row := ccRow{Replicates: ccRefReplicates, Seed: r, Resample: stats.ResampleWithinSeed}
		for range seeds {
			var b, d []float64
			if binary {
				b, d = jobtest.Binary(rng, n, 0.5, 0.5+gain)
			} else {
				b, d = make([]float64, n), make([]float64, n)
				for i := range b {
					b[i] = rng.Float64()
					d[i] = math.Min(1, math.Max(0, b[i]+gain+0.3*(rng.Float64()-0.5)))
				}
			}
			row.Strata = append(row.Strata, ccStratum{Baseline: b, Deployed: d})
		}
		if seeds == 3 {
			cell := fmt.Sprintf("ds%d/centralized/qwen", r)
			for s, st := range row.Strata {
				_, err := jobtest.Write(root, jobtest.Job{Method: "gepa", Dataset: fmt.Sprintf("ds%d", r), Seed: s, Baseline: st.Baseline, Deployed: st.Deployed})
				require.NoError(t, err)
			}
			three = append(three, threeSeed{row: r, method: "gepa", cell: cell})
		}
		rows = append(rows, row)
	}

	// Rows of three seeds resampling shared items, the item effects alike
	// across seeds (a shared part and a seed's own), through the whole
	// aggregation of their job files under another root.
	shared := t.TempDir()
	var sharedRows []threeSeed
	first := len(rows)
	for r := first; r < first+8; r++ {
		n := 20 + rng.IntN(120)
		gain := []float64{0, 0.03, 0.1}[rng.IntN(3)]
		effect := make([]float64, n)
		for i := range effect {
			effect[i] = 0.4 * (rng.Float64() - 0.5)
		}
		row := ccRow{Replicates: ccRefReplicates, Seed: r, Resample: stats.ResampleSharedItems}
		for s := range 3 {
			b, d := make([]float64, n), make([]float64, n)
			for i := range b {
				b[i] = rng.Float64()
				d[i] = math.Min(1, math.Max(0, b[i]+gain+effect[i]+0.2*(rng.Float64()-0.5)))
			}
			row.Strata = append(row.Strata, ccStratum{Baseline: b, Deployed: d})
			_, err := jobtest.Write(shared, jobtest.Job{Method: "gepa", Dataset: fmt.Sprintf("ds%d", r), Seed: s, Baseline: b, Deployed: d})
			require.NoError(t, err)
		}
		sharedRows = append(sharedRows, threeSeed{row: r, method: "gepa", cell: fmt.Sprintf("ds%d/centralized/qwen", r)})
		rows = append(rows, row)
	}

	// Rows for the bit-for-bit comparison with the documented stream: both
	// schemes, one and three seeds, items from 1 to 40, scores on a grid and
	// continuous.
	var exact []ccExact
	for e := range 8 {
		c := ccExact{Method: "gepa", CellID: fmt.Sprintf("d%d/r/m", e), Replicates: 257 + e,
			Resample: stats.ResampleNames[e%2]}
		n := []int{1, 7, 40, 23}[e/2]
		for s := range []int{1, 3, 3, 3}[e/2] {
			c.Seeds = append(c.Seeds, s)
			b, d := make([]float64, n), make([]float64, n)
			for i := range b {
				b[i] = rng.Float64()
				d[i] = rng.Float64()
				if e%4 < 2 {
					b[i], d[i] = math.Round(4*b[i])/4, math.Round(4*d[i])/4
				}
			}
			c.Strata = append(c.Strata, ccStratum{Baseline: b, Deployed: d})
		}
		exact = append(exact, c)
	}

	cases, err := json.Marshal(map[string]any{"holm": holm, "rows": rows, "exact": exact})
	require.NoError(t, err)
	casesFile := filepath.Join(t.TempDir(), "cases.json")
	require.NoError(t, os.WriteFile(casesFile, cases, 0o644))
	cmd := exec.Command(python, filepath.Join("..", "..", "scripts", "aggregate-crosscheck.py"), casesFile)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err, "the reference script failed")
	var ref ccRef
	require.NoError(t, json.Unmarshal(out, &ref))
	require.Len(t, ref.Holm, len(holm))
	require.Len(t, ref.Rows, len(rows))
	require.Len(t, ref.Exact, len(exact))

	for i, p := range holm {
		adj, rej := stats.Holm(p, stats.Alpha)
		assert.Equal(t, ref.Holm[i].PAdj, adj, "Holm of %v: p_adj against statsmodels", p)
		assert.Equal(t, ref.Holm[i].Reject, rej, "Holm of %v: rejections against statsmodels", p)
	}

	// cairn's figures per row: one-seed rows through Bootstrap, three-seed
	// rows through the whole aggregation of their job files.
	got := make([]stats.Interval, len(rows))
	for r, row := range rows {
		if len(row.Strata) != 1 {
			continue
		}
		st := stats.Strata{Method: "one-seed", CellID: fmt.Sprintf("d/r/m%d", r), Seeds: []int{0}}
		d := make([]float64, len(row.Strata[0].Baseline))
		for i := range d {
			d[i] = row.Strata[0].Deployed[i] - row.Strata[0].Baseline[i]
		}
		st.Diffs = [][]float64{d}
		iv, err := stats.Bootstrap(context.Background(), []stats.Strata{st}, ccReplicates, 0, row.Resample)
		require.NoError(t, err)
		got[r] = iv[0]
	}
	sum, err := aggregate.Run(context.Background(), aggregate.Options{Roots: []string{root}, Replicates: ccReplicates})
	require.NoError(t, err)
	byName := rowsByName(sum)
	for _, ts := range three {
		row, ok := byName[ts.method+" "+ts.cell]
		require.True(t, ok, ts.cell)
		require.Equal(t, aggregate.StatusOK, row.Status)
		got[ts.row] = stats.Interval{Low: *row.CILow, High: *row.CIHigh, P: *row.P}
	}
	sum, err = aggregate.Run(context.Background(), aggregate.Options{Roots: []string{shared}, Replicates: ccReplicates, Resample: stats.ResampleSharedItems})
	require.NoError(t, err)
	require.Equal(t, stats.ResampleSharedItems, sum.Resample)
	byName = rowsByName(sum)
	for _, ts := range sharedRows {
		row, ok := byName[ts.method+" "+ts.cell]
		require.True(t, ok, ts.cell)
		require.Equal(t, aggregate.StatusOK, row.Status)
		got[ts.row] = stats.Interval{Low: *row.CILow, High: *row.CIHigh, P: *row.P}
	}

	// The documented stream, to the bit.
	for e, c := range exact {
		st := stats.Strata{Method: c.Method, CellID: c.CellID, Seeds: c.Seeds}
		for _, s := range c.Strata {
			d := make([]float64, len(s.Baseline))
			for i := range d {
				d[i] = s.Deployed[i] - s.Baseline[i]
			}
			st.Diffs = append(st.Diffs, d)
		}
		iv, err := stats.Bootstrap(context.Background(), []stats.Strata{st}, c.Replicates, 2, c.Resample)
		require.NoError(t, err)
		want := stats.Interval{Low: ref.Exact[e].CILow, High: ref.Exact[e].CIHigh, P: ref.Exact[e].P}
		assert.Equal(t, want, iv[0], "exact case %d (%s, %d seed(s) of %d items): the documented stream", e, c.Resample, len(c.Seeds), len(c.Strata[0].Baseline))
	}

	// Within Monte-Carlo error: a percentile of B replicates of a
	// near-normal statistic has a standard error of about
	// sqrt(q(1−q)/B)/φ(z_q)·sd = 2.67·sd/sqrt(B) at q = 2.5%; two
	// independent estimates differ by sqrt(1/B + 1/B_ref) times that. Scores
	// on a lattice (0/1) move the percentiles in steps of 100/(items) pp.
	seQ := func(sd float64) float64 {
		return 2.67 * sd * math.Sqrt(1.0/ccReplicates+1.0/ccRefReplicates)
	}
	var zLow, zHigh []float64
	for r, row := range rows {
		rr := ref.Rows[r]
		items := 0
		for _, s := range row.Strata {
			items += len(s.Baseline)
		}
		step := 100.0 / float64(items)
		tol := 4*seQ(rr.SD) + step
		name := fmt.Sprintf("row %d (%d seed(s), %d items, %s)", r, len(row.Strata), items, row.Resample)
		low, high := rr.CILow, rr.CIHigh
		if row.Resample == stats.ResampleSharedItems {
			// The seeds' items are drawn together: the interval's lattice is
			// that of one seed's items.
			step = 100.0 / float64(len(row.Strata[0].Baseline))
			tol = 4*seQ(rr.SD) + step
			require.NotNil(t, rr.ScipyCILow, "%s: scipy's paired bootstrap", name)
			// numpy's and scipy's draws agree with each other as with cairn.
			assert.InDelta(t, rr.CILow, *rr.ScipyCILow, tol, "%s: numpy's and scipy's ci_low", name)
			assert.InDelta(t, rr.CIHigh, *rr.ScipyCIHigh, tol, "%s: numpy's and scipy's ci_high", name)
		}
		if rr.ScipyCILow != nil {
			low, high = *rr.ScipyCILow, *rr.ScipyCIHigh
			assert.InDelta(t, rr.SD, *rr.ScipySD, 0.05*rr.SD+1e-9, "%s: scipy's and numpy's bootstrap sd", name)
		}
		assert.InDelta(t, low, got[r].Low, tol, "%s: ci_low", name)
		assert.InDelta(t, high, got[r].High, tol, "%s: ci_high", name)
		if rr.SD > 0 {
			zLow = append(zLow, (got[r].Low-low)/seQ(rr.SD))
			zHigh = append(zHigh, (got[r].High-high)/seQ(rr.SD))
		}
		// p: the estimated tail F has a binomial error sqrt(F(1−F)/B).
		f := math.Min(0.5, rr.P/2)
		seP := 2 * math.Sqrt(f*(1-f)*(1.0/ccReplicates+1.0/ccRefReplicates))
		assert.InDelta(t, rr.P, got[r].P, 4*seP+4.0/ccReplicates, "%s: p", name)
	}
	// No systematic shift: the mean standardized difference of each bound
	// over all rows is near zero (each is about N(0, 1)).
	for name, z := range map[string][]float64{"ci_low": zLow, "ci_high": zHigh} {
		require.NotEmpty(t, z)
		mean := 0.0
		for _, v := range z {
			mean += v
		}
		mean /= float64(len(z))
		assert.Less(t, math.Abs(mean), 5/math.Sqrt(float64(len(z)))+0.5, "%s: mean standardized difference %v over %d rows", name, mean, len(z))
	}
}

func lastLine(b []byte) string {
	s := string(b)
	for len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}
