// Package par runs the iterations of a loop on every core.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// busy is set while a Chunks call runs on every core: more goroutines
// for a nested loop would only take turns on the same cores.
var busy atomic.Bool

// Chunks calls fn(i) for every i in [0, n), on every core, taking the
// indexes chunk at a time in increasing order: the calls for one chunk run
// one after the other on one goroutine. It returns when every call has
// returned. Where there is one core, or fewer than min iterations, or
// while another Chunks call has the cores (a loop nested in one that
// already runs on every core), it calls fn in order on the calling
// goroutine.
func Chunks(n, chunk, min int, fn func(i int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 || n < min || n <= chunk || !busy.CompareAndSwap(false, true) {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	defer busy.Store(false)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				start := int(next.Add(int64(chunk))) - chunk
				if start >= n {
					return
				}
				for i := start; i < start+chunk && i < n; i++ {
					fn(i)
				}
			}
		}()
	}
	wg.Wait()
}
