package stats_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/stages/aggregate/jobtest"
	"github.com/cairn-run/cairn/stats"
)

func TestHolmPublishedExample(t *testing.T) {
	adj, rej := stats.Holm([]float64{0.01, 0.04, 0.03, 0.005}, 0.05)
	want := []float64{0.03, 0.06, 0.06, 0.02}
	for i := range want {
		assert.InDelta(t, want[i], adj[i], 1e-15, "p_adj[%d]", i)
	}
	assert.Equal(t, []bool{true, false, false, true}, rej)
}

func TestHolmTiesShareTheirAdjustedValue(t *testing.T) {
	adj, rej := stats.Holm([]float64{0.02, 0.04, 0.02}, 0.05)
	// Sorted: 0.02 (×3 = 0.06), 0.02 (×2 = 0.04, raised to 0.06), 0.04 (×1, raised to 0.06).
	for i, v := range adj {
		assert.InDelta(t, 0.06, v, 1e-15, "p_adj[%d]", i)
	}
	assert.Equal(t, []bool{false, false, false}, rej)

	adj, rej = stats.Holm([]float64{0.01, 0.01}, 0.05)
	assert.InDeltaSlice(t, []float64{0.02, 0.02}, adj, 1e-15)
	assert.Equal(t, []bool{true, true}, rej)
}

func TestHolmOfOneIsTheRawPValue(t *testing.T) {
	for _, p := range []float64{0.0002, 0.05, 0.0500001, 1} {
		adj, rej := stats.Holm([]float64{p}, 0.05)
		assert.Equal(t, []float64{p}, adj)
		assert.Equal(t, []bool{p <= 0.05}, rej, "p = %v", p)
	}
}

func TestHolmNeverExceedsOne(t *testing.T) {
	adj, rej := stats.Holm([]float64{0.5, 0.6, 0.001}, 0.05)
	assert.Equal(t, []float64{1, 1, 0.003}, adj)
	assert.Equal(t, []bool{false, false, true}, rej)
}

func TestPercentileIsNumpysLinear(t *testing.T) {
	// numpy.percentile(x, q) for these x and q.
	x := []float64{1, 2, 3, 4}
	assert.InDelta(t, 1.075, stats.Percentile(x, 2.5), 1e-12)
	assert.InDelta(t, 3.925, stats.Percentile(x, 97.5), 1e-12)
	assert.Equal(t, 2.5, stats.Percentile(x, 50))
	assert.Equal(t, 1.0, stats.Percentile(x, 0))
	assert.Equal(t, 4.0, stats.Percentile(x, 100))
	ten := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	assert.InDelta(t, 0.225, stats.Percentile(ten, 2.5), 1e-12)
	assert.InDelta(t, 8.775, stats.Percentile(ten, 97.5), 1e-12)
	assert.Equal(t, 7.0, stats.Percentile([]float64{7}, 2.5))
}

func TestStreamIsXoshiro256PlusPlus(t *testing.T) {
	// The first outputs of the reference implementation
	// (prng.di.unimi.it/xoshiro256plusplus.c) from the state {0, 0, 0, 1}.
	want := []uint64{
		0x0000000000800000, 0x0000000000800011, 0x0002200000800011, 0x0002200044000020,
		0x00022000448008A1, 0x01102100802208A0, 0x0114002284200880, 0x0402896644A64095,
		0x8A14A0A244ACC891, 0x8C88BA4680B20495,
	}
	x := stats.NewXoshiro(0, 0, 0, 1)
	for i, w := range want {
		require.Equal(t, w, x.Uint64(), "output %d", i+1)
	}
}

// seeds are the protocol's seeds (stages/aggregate.Seeds).
var seeds = []int{0, 1, 2}

func strata(seeds ...[]float64) []stats.Strata {
	st := stats.Strata{Method: "m", CellID: "d/r/x"}
	for i, d := range seeds {
		st.Seeds = append(st.Seeds, i)
		st.Diffs = append(st.Diffs, d)
	}
	return []stats.Strata{st}
}

func TestAllEqualDataCollapsesTheInterval(t *testing.T) {
	zeros := make([]float64, 50)
	iv, err := stats.Bootstrap(context.Background(), strata(zeros, zeros, zeros), 2000, 0, stats.ResampleWithinSeed)
	require.NoError(t, err)
	assert.Equal(t, stats.Interval{Low: 0, High: 0, P: 1}, iv[0])

	// Every item 0.25 better: every replicate is 25 pp, and no replicate
	// is at or below zero: p = 2/(B+1).
	quarter := make([]float64, 40)
	for i := range quarter {
		quarter[i] = 0.25
	}
	iv, err = stats.Bootstrap(context.Background(), strata(quarter, quarter, quarter), 999, 0, stats.ResampleWithinSeed)
	require.NoError(t, err)
	assert.Equal(t, 25.0, iv[0].Low)
	assert.Equal(t, 25.0, iv[0].High)
	assert.Equal(t, 2.0/1000, iv[0].P)
}

func TestBootstrapIsTheSameOnOneCoreAndOnMany(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var rows []stats.Strata
	for r := range 9 {
		st := stats.Strata{Method: "m", CellID: "d/r/" + string(rune('a'+r)), Seeds: seeds}
		for range seeds {
			b, d := jobtest.Binary(rng, 30+r, 0.5, 0.6)
			diff := make([]float64, len(b))
			for i := range b {
				diff[i] = d[i] - b[i]
			}
			st.Diffs = append(st.Diffs, diff)
		}
		rows = append(rows, st)
	}
	one, err := stats.Bootstrap(context.Background(), rows, 3000, 1, stats.ResampleWithinSeed)
	require.NoError(t, err)
	many, err := stats.Bootstrap(context.Background(), rows, 3000, 8, stats.ResampleWithinSeed)
	require.NoError(t, err)
	assert.Equal(t, one, many)
	// Rows given in another order get the same intervals.
	rev := make([]stats.Strata, len(rows))
	for i := range rows {
		rev[len(rows)-1-i] = rows[i]
	}
	back, err := stats.Bootstrap(context.Background(), rev, 3000, 3, stats.ResampleWithinSeed)
	require.NoError(t, err)
	for i := range rows {
		assert.Equal(t, one[i], back[len(rows)-1-i])
	}
}

func TestBootstrapStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := stats.Bootstrap(ctx, strata(make([]float64, 10)), 5000, 2, stats.ResampleWithinSeed)
	assert.ErrorIs(t, err, context.Canceled)
}

// A replicate whose differences cancel is 0, whatever its float sums left
// (0.4 + 0.2 − 0.6 is 3.7e-17): counted in both tails, as the p-value's
// definition counts it, not in one. With 0/1 scores many replicates are
// exactly 0, and one tail's count made p too small: these rows gave p =
// 0.04995 and 0.04396, both rejected, where exact arithmetic on the same
// draws gives 72/1001 and 54/1001.
func TestReplicatesThatCancelAreZero(t *testing.T) {
	within := stats.Strata{Method: "m", CellID: "ds/r137/mo", Seeds: []int{0, 1, 2}, Diffs: [][]float64{
		{0, 1, 1, 0, 0}, {0, 1, 1, 0, 1}, {1, -1, 0, 1, -1},
	}}
	shared := stats.Strata{Method: "m", CellID: "ds/r285/mo", Seeds: []int{0, 1, 2}, Diffs: [][]float64{
		{1, 1, 1, 0, 0, 0, 1, 1, 0, -1}, {1, 1, 1, 1, -1, 0, -1, 0, 1, 1}, {1, 1, -1, -1, 1, -1, 1, 0, 1, -1},
	}}
	got, err := stats.Bootstrap(context.Background(), []stats.Strata{within}, 1000, 1, stats.ResampleWithinSeed)
	require.NoError(t, err)
	assert.Equal(t, 72.0/1001, got[0].P)
	assert.Equal(t, 0.0, got[0].Low, "the 2.5th percentile is a replicate of exactly 0")
	got, err = stats.Bootstrap(context.Background(), []stats.Strata{shared}, 1000, 1, stats.ResampleSharedItems)
	require.NoError(t, err)
	assert.Equal(t, 54.0/1001, got[0].P)

	// A small difference that is real is not noise: every replicate of a
	// gain of 1e-6 on every item is above 0.
	tiny := stats.Strata{Method: "m", CellID: "d/r/m", Seeds: []int{0, 1, 2}, Diffs: [][]float64{{1e-6, 1e-6}, {1e-6, 2e-6}, {3e-6, 1e-6}}}
	got, err = stats.Bootstrap(context.Background(), []stats.Strata{tiny}, 999, 1, stats.ResampleWithinSeed)
	require.NoError(t, err)
	assert.Equal(t, stats.PFloor(999), got[0].P)
	assert.Greater(t, got[0].Low, 0.0)
	assert.Equal(t, float64(2+3)*0x1p-50*3e-6, stats.ReplicateNoise(tiny))
}
