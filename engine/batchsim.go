package engine

import (
	"container/heap"
	"sort"
)

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
