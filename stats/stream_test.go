package stats_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/stats"
)

// TestBootstrapFollowsTheDocumentedStream recomputes a row's bootstrap
// from docs/aggregate.md alone — the digest, the generator, the words,
// the accumulators, the percentiles and the p-value, written plainly — and
// requires the very same bits from Bootstrap, under both resampling
// schemes: anyone can reproduce cairn's figures from the document.
func TestBootstrapFollowsTheDocumentedStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	row := func(sizes ...int) stats.Strata {
		r := stats.Strata{Method: "gepa", CellID: "hotpotqa/centralized/qwen", Seeds: []int{0, 1, 2}}
		for _, n := range sizes {
			d := make([]float64, n)
			for i := range d {
				d[i] = math.Round((rng.Float64()-0.4)*8) / 4
			}
			r.Diffs = append(r.Diffs, d)
		}
		return r
	}
	const B = 301
	for _, c := range []struct {
		resample string
		row      stats.Strata
	}{
		{stats.ResampleWithinSeed, row(37, 50, 3)},
		{stats.ResampleSharedItems, row(37, 37, 37)},
	} {
		want := documentedBootstrap(c.row, B, c.resample)
		got, err := stats.Bootstrap(context.Background(), []stats.Strata{c.row}, B, 2, c.resample)
		require.NoError(t, err)
		assert.Equal(t, want, got[0], c.resample)
		assert.NotEqual(t, got[0].Low, got[0].High, "%s: a row whose interval is not a point", c.resample)
	}
}

// documentedBootstrap is docs/aggregate.md's bootstrap, written plainly.
func documentedBootstrap(row stats.Strata, B int, resample string) stats.Interval {
	// draw is one stream's B replicate means of d; the stream is named by
	// the last part of its digest's message.
	draw := func(name string, d []float64) []float64 {
		// sha256("cairn.aggregate.bootstrap/1" NUL method NUL cell_id NUL name)
		sum := sha256.Sum256([]byte("cairn.aggregate.bootstrap/1\x00" + row.Method + "\x00" + row.CellID + "\x00" + name))
		var s [4]uint64
		for i := range s {
			s[i] = binary.BigEndian.Uint64(sum[8*i:])
		}
		next := func() uint64 { // xoshiro256++
			out := bits.RotateLeft64(s[0]+s[3], 23) + s[0]
			t := s[1] << 17
			s[2] ^= s[0]
			s[3] ^= s[1]
			s[1] ^= s[2]
			s[0] ^= s[3]
			s[2] ^= t
			s[3] = bits.RotateLeft64(s[3], 45)
			return out
		}
		n := uint64(len(d))
		skip := (uint64(1) << 32) % n
		means := make([]float64, B)
		for b := range means {
			var acc [4]float64
			drawn := uint64(0)
			for output := 0; drawn < n; output++ {
				x := next()
				for half, w := range []uint64{x >> 32, x & 0xffffffff} {
					if drawn == n {
						break
					}
					m := w * n
					if m&0xffffffff < skip {
						continue
					}
					acc[2*(output%2)+half] += d[m>>32]
					drawn++
				}
			}
			means[b] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) / float64(n)
		}
		return means
	}
	var units [][]float64
	if resample == stats.ResampleSharedItems {
		// Each item's differences summed in seed order and divided by the
		// number of seeds, drawn on the stream named "shared-items".
		item := make([]float64, len(row.Diffs[0]))
		for i := range item {
			var s float64
			for _, d := range row.Diffs {
				s += d[i]
			}
			item[i] = s / float64(len(row.Diffs))
		}
		units = append(units, draw("shared-items", item))
	} else {
		for k, d := range row.Diffs {
			units = append(units, draw(strconv.Itoa(row.Seeds[k]), d))
		}
	}
	dstar := make([]float64, B)
	pp := make([]float64, B)
	le, ge := 0, 0
	for b := range dstar {
		var s float64
		for _, u := range units {
			s += u[b]
		}
		dstar[b] = s / float64(len(units))
		pp[b] = 100 * dstar[b]
		if dstar[b] <= 0 {
			le++
		}
		if dstar[b] >= 0 {
			ge++
		}
	}
	slices.Sort(pp)
	return stats.Interval{
		Low:  stats.Percentile(pp, 2.5),
		High: stats.Percentile(pp, 97.5),
		P:    math.Min(1, 2*math.Min(float64(1+le)/float64(B+1), float64(1+ge)/float64(B+1))),
	}
}

// TestSharedItemsCoverWhenItemEffectsAreAlikeAcrossSeeds simulates rows
// whose three seeds score the same items, an item's effect shared across
// seeds with correlation rho, and counts how often each scheme's 95%
// interval holds the true gain. Within seed, the seeds' items count as
// independent draws and the interval is too short once rho is large;
// shared items keep the coverage near 95%. Independent effects (rho = 0)
// give both the same coverage.
func TestSharedItemsCoverWhenItemEffectsAreAlikeAcrossSeeds(t *testing.T) {
	const (
		rowsPerCase = 300
		items       = 40
		B           = 400
		gain        = 0.1 // the true mean difference
	)
	coverage := func(rho float64) map[string]float64 {
		rng := rand.New(rand.NewPCG(28, uint64(100*rho)))
		var rows []stats.Strata
		for r := range rowsPerCase {
			st := stats.Strata{Method: "m", CellID: "d/r/" + strconv.Itoa(r), Seeds: seeds}
			effect := make([]float64, items)
			for i := range effect {
				effect[i] = math.Sqrt(rho) * rng.NormFloat64()
			}
			for range seeds {
				d := make([]float64, items)
				for i := range d {
					d[i] = gain + effect[i] + math.Sqrt(1-rho)*rng.NormFloat64()
				}
				st.Diffs = append(st.Diffs, d)
			}
			rows = append(rows, st)
		}
		out := map[string]float64{}
		for _, scheme := range stats.ResampleNames {
			ivs, err := stats.Bootstrap(context.Background(), rows, B, 0, scheme)
			require.NoError(t, err)
			held := 0
			for _, iv := range ivs {
				if iv.Low <= 100*gain && 100*gain <= iv.High {
					held++
				}
			}
			out[scheme] = float64(held) / rowsPerCase
		}
		return out
	}
	independent := coverage(0)
	t.Logf("rho 0: %v", independent)
	assert.InDelta(t, independent[stats.ResampleWithinSeed], independent[stats.ResampleSharedItems], 0.04)
	assert.Greater(t, independent[stats.ResampleWithinSeed], 0.88)
	alike := coverage(0.8)
	t.Logf("rho 0.8: %v", alike)
	assert.Less(t, alike[stats.ResampleWithinSeed], 0.85, "within seed undercovers")
	assert.Greater(t, alike[stats.ResampleSharedItems], 0.9, "shared items cover")
}
