package stats

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// seeds are the protocol's seeds (stages/aggregate.Seeds).
var seeds = []int{0, 1, 2}

// benchStrata are n rows of 3 seeds of items binary-scored items.
func benchStrata(rows, items int) []Strata {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]Strata, rows)
	for i := range out {
		out[i] = Strata{Method: "m", CellID: fmt.Sprintf("d/r/m%d", i), Seeds: seeds}
		for range seeds {
			d := make([]float64, items)
			for k := range d {
				d[k] = float64(rng.IntN(2)) - float64(rng.IntN(2))
			}
			out[i].Diffs = append(out[i].Diffs, d)
		}
	}
	return out
}

// BenchmarkBootstrap is the size: 48 rows × 3 seeds × 500 items
// at 10,000 replicates, on every core.
func BenchmarkBootstrap(b *testing.B) {
	rows := benchStrata(48, 500)
	for b.Loop() {
		if _, err := Bootstrap(context.Background(), rows, DefaultReplicates, 0, ResampleWithinSeed); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSeedMeans is one seed of 500 items at 10,000 replicates, on one
// core.
func BenchmarkSeedMeans(b *testing.B) {
	d := benchStrata(1, 500)[0].Diffs[0]
	out := make([]float64, DefaultReplicates)
	rng := Stream("m", "d/r/m", 0)
	for b.Loop() {
		if err := seedMeans(context.Background(), rng, d, out); err != nil {
			b.Fatal(err)
		}
	}
}
