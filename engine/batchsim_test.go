package engine

import (
	"container/heap"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSlotPolicyWavesPinsAndWaits(t *testing.T) {
	p := newSlotPolicy("waves", []int{1, 3})
	d, w, ok := p.next()
	require.True(t, ok)
	assert.Equal(t, []int{1, 1}, []int{d, w})
	p.take(d, w, 10)
	d, w, ok = p.next()
	require.True(t, ok)
	assert.Equal(t, []int{3, 1}, []int{d, w})
	p.take(d, w, 11)
	_, _, ok = p.next()
	assert.False(t, ok, "a third variant waits for the whole first wave")
	p.free(10, 1)
	_, _, ok = p.next()
	assert.False(t, ok, "one device free is not enough: waves wait for the whole wave")
	p.free(11, 1)
	d, w, ok = p.next()
	require.True(t, ok)
	assert.Equal(t, []int{1, 2}, []int{d, w}, "wave 2 starts on the first pinned device")
}

func TestSlotPolicyBackfill(t *testing.T) {
	p := newSlotPolicy("backfill", []int{0, 2})
	d, _, _ := p.next()
	p.take(d, 0, 1)
	d2, _, _ := p.next()
	p.take(d2, 0, 2)
	assert.Equal(t, []int{0, 2}, []int{d, d2})
	_, _, ok := p.next()
	assert.False(t, ok)
	p.free(2, 0)
	d, _, ok = p.next()
	require.True(t, ok)
	assert.Equal(t, 2, d, "the freed device is reused at once")
}

func TestBatchMakespanKnownCases(t *testing.T) {
	d := []float64{10, 1, 1, 1}
	// Given order (no sorting): waves of 2 = max(10,1) + max(1,1) = 11;
	// backfill: 10 on dev0, 1,1,1 on dev1 back to back = 10.
	assert.Equal(t, 11.0, BatchMakespan(d, 2, "waves", false))
	assert.Equal(t, 10.0, BatchMakespan(d, 2, "backfill", false))
	assert.Equal(t, 13.0, BatchMakespan(d, 1, "waves", false))
	assert.Equal(t, 10.0, BatchMakespan(d, 4, "waves", false))
	assert.Equal(t, 10.0, BatchMakespan(d, 8, "waves", false), "more devices than variants")
	assert.Equal(t, 10.0, MakespanLowerBound(d, 2))
}

// Over 1,000 seeded random duration sets and 1..4 free devices, backfill's
// makespan is never worse than waves' with the same order.
func TestBackfillNeverWorseThanWaves(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 7))
	for i := 0; i < 1000; i++ {
		d := make([]float64, 4)
		for j := range d {
			d[j] = 1 + r.Float64()*59
		}
		for n := 1; n <= 4; n++ {
			for _, lf := range []bool{false, true} {
				w := BatchMakespan(d, n, "waves", lf)
				b := BatchMakespan(d, n, "backfill", lf)
				lb := MakespanLowerBound(d, n)
				require.LessOrEqual(t, b, w+1e-9, "set %d n=%d durations %v", i, n, d)
				require.GreaterOrEqual(t, b, lb-1e-9)
				require.GreaterOrEqual(t, w, lb-1e-9)
			}
		}
	}
}

// BenchmarkBatchSchedule reports, over 1,000 seeded duration sets per
// device count, backfill's mean makespan relative to waves' and both
// modes' mean distance above the lower bound max(longest, total/N).
func BenchmarkBatchSchedule(b *testing.B) {
	for n := 1; n <= 4; n++ {
		b.Run("gpus="+string(rune('0'+n)), func(b *testing.B) {
			var ratio, overW, overB float64
			const sets = 1000
			for it := 0; it < b.N; it++ {
				r := rand.New(rand.NewPCG(42, uint64(n)))
				ratio, overW, overB = 0, 0, 0
				for i := 0; i < sets; i++ {
					d := make([]float64, 4)
					for j := range d {
						d[j] = 1 + r.Float64()*59
					}
					w := BatchMakespan(d, n, "waves", true)
					bf := BatchMakespan(d, n, "backfill", true)
					lb := MakespanLowerBound(d, n)
					ratio += bf / w
					overW += w/lb - 1
					overB += bf/lb - 1
				}
			}
			b.ReportMetric(ratio/sets, "backfill/waves")
			b.ReportMetric(100*overW/sets, "waves_%over_LB")
			b.ReportMetric(100*overB/sets, "backfill_%over_LB")
		})
	}
}

// BatchMakespan simulates a batch on a virtual clock (no sleeping): the
// variants' durations, n free devices, the scheduler's own slot policy and
// its order (longest known duration first when longestFirst). It returns
// when the last variant ends.
func BatchMakespan(durations []float64, n int, mode string, longestFirst bool) float64 {
	if n <= 0 || len(durations) == 0 {
		return 0
	}
	order := make([]int, len(durations))
	for i := range order {
		order[i] = i
	}
	if longestFirst {
		sort.SliceStable(order, func(i, j int) bool { return durations[order[i]] > durations[order[j]] })
	}
	par := min(n, len(durations))
	devs := make([]int, par)
	for i := range devs {
		devs[i] = i
	}
	pol := newSlotPolicy(mode, devs)
	var running endHeap
	now, next := 0.0, 0
	for next < len(order) || running.Len() > 0 {
		// Start everything the policy admits now, in order.
		for next < len(order) {
			dev, wave, ok := pol.next()
			if !ok {
				break
			}
			id := order[next]
			pol.take(dev, wave, id)
			heap.Push(&running, simEnd{at: now + durations[id], id: id, wave: wave})
			next++
		}
		e := heap.Pop(&running).(simEnd)
		now = e.at
		pol.free(e.id, e.wave)
	}
	return now
}

// MakespanLowerBound is max(longest, total/n): no schedule on n devices
// ends sooner.
func MakespanLowerBound(durations []float64, n int) float64 {
	var total, longest float64
	for _, d := range durations {
		total += d
		longest = max(longest, d)
	}
	return max(longest, total/float64(min(n, len(durations))))
}

type simEnd struct {
	at   float64
	id   int
	wave int
}

type endHeap []simEnd

func (h endHeap) Len() int { return len(h) }
func (h endHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].id < h[j].id
}
func (h endHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)   { *h = append(*h, x.(simEnd)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
