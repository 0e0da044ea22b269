// Package stats holds the statistics of cairn's aggregation (docs/aggregate.md):
// the stratified paired bootstrap over a row's seeds on documented
// xoshiro256++ streams (its interval and p-value, the same on any number of
// cores), numpy's linear percentile and the Holm–Bonferroni correction. It
// knows nothing of files or jobs: stages/aggregate reads the optimizer jobs
// and hands their per-item differences here.
package stats

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// StreamConstant opens the message whose sha256 seeds a bootstrap stream:
// sha256(StreamConstant NUL method NUL cell_id NUL seed) is the state of a
// xoshiro256++ generator, its four big-endian 64-bit words s[0..3]. A row's
// seeds each have their own stream, so (row, seed) pairs can be resampled
// on any core in any order and give the same replicates.
const StreamConstant = "cairn.aggregate.bootstrap/1"

// Alpha is the level of the Holm–Bonferroni procedure and of the 95%
// confidence interval.
const Alpha = 0.05

// DefaultReplicates is the number of bootstrap replicates when none is
// given.
const DefaultReplicates = 10000

// MaxReplicates bounds the replicates a run may ask for (memory: 8 bytes
// per replicate for each seed being drawn or waiting for its row's other
// seeds).
const MaxReplicates = 1_000_000

// How a replicate resamples a row's items (docs/aggregate.md).
const (
	// ResampleWithinSeed draws each seed's items on the seed's own stream,
	// independently of the other seeds: the protocol's default.
	ResampleWithinSeed = "within-seed"
	// ResampleSharedItems draws one set of items per replicate, on the
	// row's own stream, and uses it for every seed: the seeds share their
	// test items, and an item's effects may be alike across seeds.
	ResampleSharedItems = "shared-items"
)

// ResampleNames lists the resampling schemes, the default first.
var ResampleNames = []string{ResampleWithinSeed, ResampleSharedItems}

// Stream returns the random stream of one seed of one row
// (ResampleWithinSeed).
func Stream(method, cellID string, seed int) *Xoshiro {
	return streamOf(method, cellID, strconv.Itoa(seed))
}

// SharedStream returns the random stream of a row under
// ResampleSharedItems: the stream of a seed named "shared-items".
func SharedStream(method, cellID string) *Xoshiro {
	return streamOf(method, cellID, ResampleSharedItems)
}

// streamOf is the generator whose state is sha256(StreamConstant NUL
// method NUL cellID NUL last).
func streamOf(method, cellID, last string) *Xoshiro {
	h := sha256.New()
	h.Write([]byte(StreamConstant))
	h.Write([]byte{0})
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(cellID))
	h.Write([]byte{0})
	h.Write([]byte(last))
	sum := h.Sum(nil)
	return NewXoshiro(binary.BigEndian.Uint64(sum[0:8]), binary.BigEndian.Uint64(sum[8:16]),
		binary.BigEndian.Uint64(sum[16:24]), binary.BigEndian.Uint64(sum[24:32]))
}

// Xoshiro is xoshiro256++ 1.0 (Blackman and Vigna, "Scrambled linear
// pseudorandom number generators", 2021; the default generator of Julia
// and of Rust's rand SmallRng on 64-bit machines): 256 bits of state,
// period 2^256 − 1, passes BigCrush, and needs no multiplication, which
// made the 128-bit multiply of a PCG most of a draw's cost. Integer
// operations only, so every platform gives the same stream.
type Xoshiro struct{ s0, s1, s2, s3 uint64 }

// NewXoshiro starts a stream at the state (s0, s1, s2, s3); the all-zero
// state, which never leaves zero, becomes (0, 0, 0, 1).
func NewXoshiro(s0, s1, s2, s3 uint64) *Xoshiro {
	if s0|s1|s2|s3 == 0 {
		s3 = 1
	}
	return &Xoshiro{s0, s1, s2, s3}
}

// xoshiroStep returns the output of the state and the next state.
func xoshiroStep(s0, s1, s2, s3 uint64) (out, n0, n1, n2, n3 uint64) {
	out = bits.RotateLeft64(s0+s3, 23) + s0
	t := s1 << 17
	s2 ^= s0
	s3 ^= s1
	s1 ^= s2
	s0 ^= s3
	s2 ^= t
	s3 = bits.RotateLeft64(s3, 45)
	return out, s0, s1, s2, s3
}

// Uint64 is the stream's next output.
func (x *Xoshiro) Uint64() uint64 {
	var out uint64
	out, x.s0, x.s1, x.s2, x.s3 = xoshiroStep(x.s0, x.s1, x.s2, x.s3)
	return out
}

// Strata are a row's paired per-item differences (deployed − baseline),
// one slice per seed, each in item-id order.
type Strata struct {
	Method, CellID string
	Seeds          []int
	Diffs          [][]float64
}

// Interval is what the stratified paired bootstrap says about a row's
// mean difference, in percentage points.
type Interval struct {
	Low, High float64 // the 2.5th and 97.5th percentiles of 100·D*
	P         float64 // two-sided bootstrap p-value
}

// seedMeans draws B replicates of one seed: each resamples the seed's n
// differences with replacement and keeps their mean. A replicate starts on
// a fresh 64-bit output of the seed's stream; each output gives two 32-bit
// words, the high one first, and each word w an index by Lemire's
// multiply-shift, the high half of w·n, unless the low half is below
// 2^32 mod n, when the word is skipped (so every index is exactly
// uniform). The differences drawn are summed in four accumulators, the
// high and low words of even outputs into the first and second, of odd
// outputs into the third and fourth; the mean is ((a1 + a2) + (a3 + a4))
// over n, and words left over at the end of a replicate are dropped.
func seedMeans(ctx context.Context, rng *Xoshiro, d []float64, out []float64) error {
	n := uint64(len(d))
	if n == 0 || n > math.MaxUint32 {
		return fmt.Errorf("aggregate: cannot resample %d items", n)
	}
	const low = 0xffffffff
	thresh := uint64(uint32(-uint32(n)) % uint32(n))
	fn := float64(len(d))
	// The state stays in local variables (registers) while drawing, and is
	// stored back once; a deferred closure would keep it in memory.
	s0, s1, s2, s3 := rng.s0, rng.s1, rng.s2, rng.s3
	for b := range out {
		if b&1023 == 0 && ctx.Err() != nil {
			rng.s0, rng.s1, rng.s2, rng.s3 = s0, s1, s2, s3
			return ctx.Err()
		}
		var a1, a2, a3, a4 float64
		left := n
		for {
			var x uint64
			x, s0, s1, s2, s3 = xoshiroStep(s0, s1, s2, s3)
			if m := (x >> 32) * n; m&low >= thresh {
				a1 += d[m>>32]
				if left--; left == 0 {
					break
				}
			}
			if m := (x & low) * n; m&low >= thresh {
				a2 += d[m>>32]
				if left--; left == 0 {
					break
				}
			}
			x, s0, s1, s2, s3 = xoshiroStep(s0, s1, s2, s3)
			if m := (x >> 32) * n; m&low >= thresh {
				a3 += d[m>>32]
				if left--; left == 0 {
					break
				}
			}
			if m := (x & low) * n; m&low >= thresh {
				a4 += d[m>>32]
				if left--; left == 0 {
					break
				}
			}
		}
		out[b] = ((a1 + a2) + (a3 + a4)) / fn
	}
	rng.s0, rng.s1, rng.s2, rng.s3 = s0, s1, s2, s3
	return nil
}

// Bootstrap runs the paired bootstrap of every row with B replicates on
// up to workers goroutines (0: GOMAXPROCS), resampling as resample says
// ("" is ResampleWithinSeed). Within seed, a replicate of a row resamples
// each seed's items with replacement on the seed's stream, takes each
// seed's mean difference and averages them over the seeds, in seed order:
// D*. Shared items, a replicate draws one set of item indices on the row's
// stream and uses it for every seed: D* is the mean of the drawn items'
// differences averaged over the seeds (each item's differences summed in
// seed order and divided by the number of seeds), which is the mean over
// seeds of each seed's mean of the same items. The result does not depend
// on workers or on the order of rows.
func Bootstrap(ctx context.Context, rows []Strata, B, workers int, resample string) ([]Interval, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// A unit is one stream's draws: a seed of a row (slot k of the row),
	// or the whole row when its items are shared (slot 0).
	type unit struct {
		row, slot int
		stream    *Xoshiro
		diffs     []float64
	}
	var units []unit
	means := make([][][]float64, len(rows))
	left := make([]atomic.Int32, len(rows)) // units of the row still to draw
	for i, r := range rows {
		first := len(units)
		if len(r.Diffs) == 0 || len(r.Seeds) != len(r.Diffs) {
			return nil, fmt.Errorf("aggregate: %s %s: %d seeds with %d sets of differences", r.Method, r.CellID, len(r.Seeds), len(r.Diffs))
		}
		switch resample {
		case "", ResampleWithinSeed:
			for k, d := range r.Diffs {
				units = append(units, unit{i, k, Stream(r.Method, r.CellID, r.Seeds[k]), d})
			}
		case ResampleSharedItems:
			d, err := itemMeans(r)
			if err != nil {
				return nil, err
			}
			units = append(units, unit{i, 0, SharedStream(r.Method, r.CellID), d})
		default:
			return nil, fmt.Errorf("aggregate: resampling %q is not one of %s", resample, strings.Join(ResampleNames, ", "))
		}
		n := len(units) - first
		means[i] = make([][]float64, n)
		left[i].Store(int32(n))
	}
	// The largest rows first, so that the last to finish are small, and a
	// row's units together, so that few rows' replicates are in memory at
	// once: a row is summarized, and its replicates dropped, as soon as
	// its last unit is drawn.
	size := func(r Strata) (n int) {
		for _, d := range r.Diffs {
			n += len(d)
		}
		return n
	}
	slices.SortStableFunc(units, func(a, b unit) int {
		if c := size(rows[b.row]) - size(rows[a.row]); c != 0 {
			return c
		}
		return a.row - b.row
	})
	out := make([]Interval, len(rows))
	noise := make([]float64, len(rows))
	for i, r := range rows {
		noise[i] = ReplicateNoise(r)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan unit)
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	for range min(workers, max(len(units), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range next {
				m := make([]float64, B)
				if err := seedMeans(ctx, u.stream, u.diffs, m); err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
					cancel()
					continue
				}
				means[u.row][u.slot] = m
				if left[u.row].Add(-1) == 0 {
					out[u.row] = summarize(means[u.row], B, noise[u.row])
					means[u.row] = nil
				}
			}
		}()
	}
feed:
	for _, u := range units {
		select {
		case next <- u:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// itemMeans is, per item, the row's differences averaged over its seeds:
// summed in seed order from 0, divided by the number of seeds.
func itemMeans(r Strata) ([]float64, error) {
	n := len(r.Diffs[0])
	for k, d := range r.Diffs {
		if len(d) != n {
			return nil, fmt.Errorf("aggregate: %s %s: seed %d has %d items and seed %d has %d: items shared across seeds need the same items", r.Method, r.CellID, r.Seeds[0], n, r.Seeds[k], len(d))
		}
	}
	out := make([]float64, n)
	k := float64(len(r.Diffs))
	for i := range out {
		var s float64
		for _, d := range r.Diffs {
			s += d[i]
		}
		out[i] = s / k
	}
	return out, nil
}

// ReplicateNoise bounds the rounding error of a row's replicates: D* is
// sums of at most n differences (n the most items a seed has), divided,
// then averaged over the S seeds, so it is within (n + S + 2)·2⁻⁵³·m of
// its exact value, m the largest |difference|; the bound is 8 times that,
// (n + S)·2⁻⁵⁰·m, rounded up. A replicate within it of 0 is 0: with 0/1
// scores, draws whose differences cancel (0.4 + 0.2 − 0.6) give 3.7e-17 in
// floats, which counted in one tail only made the p-value too small.
func ReplicateNoise(r Strata) float64 {
	n, m := 0, 0.0
	for _, d := range r.Diffs {
		n = max(n, len(d))
		for _, x := range d {
			m = max(m, math.Abs(x))
		}
	}
	return float64(n+len(r.Diffs)) * 0x1p-50 * m
}

// summarize turns a row's replicate means, one slice per unit (seed, or
// the row's shared items), into D* — their mean, added in order, and 0
// when within noise of 0 (ReplicateNoise) — and its interval and p-value.
func summarize(means [][]float64, B int, noise float64) Interval {
	dstar := make([]float64, B)
	for b := range dstar {
		var s float64
		for _, m := range means {
			s += m[b]
		}
		if d := s / float64(len(means)); math.Abs(d) > noise {
			dstar[b] = d
		}
	}
	return intervalOf(dstar)
}

// intervalOf is the percentile interval of 100·D* and the two-sided
// p-value min(1, 2·min((1+#{D* ≤ 0})/(B+1), (1+#{D* ≥ 0})/(B+1))).
func intervalOf(dstar []float64) Interval {
	B := len(dstar)
	var le, ge int
	pp := make([]float64, B)
	for i, d := range dstar {
		if d <= 0 {
			le++
		}
		if d >= 0 {
			ge++
		}
		pp[i] = float64(100 * d)
	}
	slices.Sort(pp)
	lower := float64(1+le) / float64(B+1)
	upper := float64(1+ge) / float64(B+1)
	return Interval{
		Low:  Percentile(pp, 2.5),
		High: Percentile(pp, 97.5),
		P:    math.Min(1, 2*math.Min(lower, upper)),
	}
}

// MinIntervalReplicates is the fewest replicates whose 95% percentile
// interval is one: with B of them the 2.5th percentile is at virtual index
// (B−1)·0.025, below 1 — between the smallest replicate and the next —
// for B < 41, so that the interval is about the replicates' range, not
// their middle 95%.
const MinIntervalReplicates = 41

// PFloor is the smallest p-value B replicates can give: intervalOf's
// p-value is at least min(1, 2/(B+1)), whatever the data.
func PFloor(B int) float64 {
	return math.Min(1, 2/float64(B+1))
}

// Percentile is numpy's default percentile (method "linear") of sorted
// values: the value at virtual index (n−1)·q/100, interpolated linearly
// between the order statistics around it exactly as numpy does (from the
// upper one when the fraction is at least one half).
func Percentile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := float64(float64(n-1) * (q / 100))
	lo := math.Floor(h)
	i := int(lo)
	if i >= n-1 {
		return sorted[n-1]
	}
	t := h - lo
	a, b := sorted[i], sorted[i+1]
	diff := b - a
	if t >= 0.5 {
		return b - float64(diff*(1-t))
	}
	return a + float64(diff*t)
}

// Holm is the Holm–Bonferroni step-down adjustment of one family's
// p-values at level alpha: with p sorted ascending (ties in the order
// given), p_adj(i) = max over j ≤ i of min(1, (m − j + 1)·p(j)), and a
// hypothesis is rejected when its p_adj ≤ alpha. The results are in the
// order of p.
func Holm(p []float64, alpha float64) (adj []float64, reject []bool) {
	m := len(p)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case p[a] < p[b]:
			return -1
		case p[a] > p[b]:
			return 1
		}
		return 0
	})
	adj = make([]float64, m)
	reject = make([]bool, m)
	running := 0.0
	for j, i := range order {
		v := math.Min(1, float64(m-j)*p[i])
		running = math.Max(running, v)
		adj[i] = running
		reject[i] = running <= alpha
	}
	return adj, reject
}
