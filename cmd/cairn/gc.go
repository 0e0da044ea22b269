package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
)

// gcStartHeap is the heap size at which cairn's first garbage collection
// runs.
const gcStartHeap = 256 << 20

// tuneGC sets the collector for a command-line run: most of what cairn
// allocates (the parsed pipeline, the node graph, the plan) stays live to
// the end, so collecting while the heap is small is wasted work. No
// collection runs until the heap reaches gcStartHeap; from the first one
// on, the collector paces itself as usual (GOGC=100). GOGC or GOMEMLIMIT in
// the environment leave the collector as they set it.
func tuneGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(gcStartHeap)
	// The first collection finds the sentinel unreachable and runs its
	// finalizer, which restores the usual pacing.
	sentinel := new([64]byte)
	runtime.SetFinalizer(sentinel, func(*[64]byte) {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	})
}
