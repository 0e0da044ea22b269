package aggregate_test

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

	"github.com/cairn-run/cairn/stages/aggregate"
)

// TestBootstrapFollowsTheDocumentedStream recomputes one row's bootstrap
// from docs/aggregate.md alone — the digest, the generator, the words,
// the accumulators, the percentiles and the p-value, written plainly — and
// requires the very same bits from Bootstrap: anyone can reproduce
// cairn's figures from the document.
func TestBootstrapFollowsTheDocumentedStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	row := aggregate.Strata{Method: "gepa", CellID: "hotpotqa/centralized/qwen", Seeds: []int{0, 1, 2}}
	for _, n := range []int{37, 50, 3} {
		d := make([]float64, n)
		for i := range d {
			d[i] = math.Round((rng.Float64()-0.4)*8) / 4
		}
		row.Diffs = append(row.Diffs, d)
	}
	const B = 301

	var seedMeans [][]float64
	for k, d := range row.Diffs {
		// sha256("cairn.aggregate.bootstrap/1" NUL method NUL cell_id NUL seed)
		sum := sha256.Sum256([]byte("cairn.aggregate.bootstrap/1\x00" + row.Method + "\x00" + row.CellID + "\x00" + strconv.Itoa(row.Seeds[k])))
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
		seedMeans = append(seedMeans, means)
	}
	dstar := make([]float64, B)
	pp := make([]float64, B)
	le, ge := 0, 0
	for b := range dstar {
		dstar[b] = (seedMeans[0][b] + seedMeans[1][b] + seedMeans[2][b]) / 3
		pp[b] = 100 * dstar[b]
		if dstar[b] <= 0 {
			le++
		}
		if dstar[b] >= 0 {
			ge++
		}
	}
	slices.Sort(pp)
	want := aggregate.Interval{
		Low:  aggregate.Percentile(pp, 2.5),
		High: aggregate.Percentile(pp, 97.5),
		P:    math.Min(1, 2*math.Min(float64(1+le)/(B+1), float64(1+ge)/(B+1))),
	}
	got, err := aggregate.Bootstrap(context.Background(), []aggregate.Strata{row}, B, 2)
	require.NoError(t, err)
	assert.Equal(t, want, got[0])
	assert.NotEqual(t, got[0].Low, got[0].High, "a row whose interval is not a point")
}
