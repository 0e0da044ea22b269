// Package gcpace sets the garbage collector's pacing for a command-line
// run of cairn: no collection until the heap is large (most of what a
// plan allocates stays live to its end, so collecting a small heap is
// wasted work; larger still where the caller says how much it is about
// to keep), and a collection started at once, beside the next step, after
// a step that left much garbage, that keeps that pacing.
package gcpace

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// StartHeap is the heap size at which the first collection not asked for
// runs, unless Expect raised it.
const StartHeap = 256 << 20

// MaxStartHeap is as far as Expect raises that size.
const MaxStartHeap = 1 << 30

var (
	tuned   atomic.Bool // Tune's pacing holds
	forced  atomic.Bool // the next sentinel found dead was Collect's
	rearmed = make(chan struct{}, 1)
	mu      sync.Mutex     // one Collect at a time
	running sync.WaitGroup // the collections Collect started
	// limitMu orders the changes to the memory limit: Expect's, and the
	// sentinel's when it restores the usual pacing.
	limitMu sync.Mutex
)

// Tune sets the collector for a command-line run: no collection runs
// until the heap reaches StartHeap, or the size Expect raised it to (or
// Collect asks for one); from the first other one on, the collector
// paces itself as usual (GOGC=100).
// set says GOGC or GOMEMLIMIT is set in the environment: the collector
// stays as they set it.
func Tune(set bool) {
	if set {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(StartHeap)
	tuned.Store(true)
	arm()
}

// arm sets a sentinel that the next collection finds unreachable. Its
// finalizer restores the usual pacing, unless Collect ran that collection
// and the heap left is small: then it sets another sentinel, for the next
// collection. A large heap left is paced as usual either way: no
// collection may run again and again at StartHeap.
func arm() {
	sentinel := new([64]byte)
	runtime.SetFinalizer(sentinel, func(*[64]byte) {
		if forced.Swap(false) && liveHeap() < StartHeap/2 {
			arm()
		} else {
			limitMu.Lock()
			tuned.Store(false)
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			limitMu.Unlock()
		}
		select {
		case rearmed <- struct{}{}:
		default:
		}
	})
}

// Collect starts a collection, where Tune set the pacing and more than
// garbage bytes were allocated since since (a HeapAllocs reading): a step
// that made that much garbage gives its memory back for what comes next,
// instead of the heap growing while no collection runs. The pacing Tune
// set stays.
//
// The collection runs on its own goroutine, beside the caller's next
// step: what it frees is what was unreachable when it started, and the
// next step's allocations do not wait for it (seed 002's plan: 0.142 ->
// 0.136 s, the same peak RSS). Settle waits for it to end.
func Collect(since, garbage uint64) {
	if !tuned.Load() || HeapAllocs()-since <= garbage {
		return
	}
	running.Add(1)
	go func() {
		defer running.Done()
		collect()
	}()
}

// Settle waits for the collections Collect started to end.
func Settle() { running.Wait() }

// collect runs a collection now and keeps the pacing Tune set, if it
// holds (Collect).
func collect() {
	mu.Lock()
	defer mu.Unlock()
	select {
	case <-rearmed: // a signal no Collect waited for
	default:
	}
	forced.Store(true)
	runtime.GC()
	// The sentinel's finalizer runs on its own goroutine, after the
	// collection: wait for it, so that what it decides holds from here.
	select {
	case <-rearmed:
	case <-time.After(time.Second):
	}
}

// Expect says that the caller is about to allocate about n bytes that stay
// live to the end of the run (a plan's evaluated nodes). Where Tune's
// pacing holds, the first collection not asked for then waits until the
// heap has room for them too, up to MaxStartHeap: a collection run while
// they are made would find them live, work wasted. A plan of 100,000
// nodes made 250 MB of them, and its one collection at StartHeap found
// 197 of 248 MB live.
func Expect(n uint64) {
	limitMu.Lock()
	defer limitMu.Unlock()
	if !tuned.Load() {
		return
	}
	want := min(inUse()+n, MaxStartHeap)
	if int64(want) > debug.SetMemoryLimit(-1) {
		debug.SetMemoryLimit(int64(want))
	}
}

// inUse is the memory the runtime holds, as the memory limit counts it.
func inUse() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// HeapAllocs is the bytes allocated on the heap so far.
func HeapAllocs() uint64 {
	return read("/gc/heap/allocs:bytes")
}

// liveHeap is the heap the last collection found live.
func liveHeap() uint64 {
	return read("/gc/heap/live:bytes")
}

func read(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
