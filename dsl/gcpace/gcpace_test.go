package gcpace

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gcPercent reads the collector's GOGC setting.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// tuneForTest sets Tune's pacing for the test and restores the usual one
// after it.
func tuneForTest(t *testing.T) {
	Tune(false)
	require.Equal(t, -1, gcPercent())
	t.Cleanup(func() {
		tuned.Store(false)
		forced.Store(false)
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		runtime.GC() // the test's sentinel, whatever its finalizer decides
		runtime.GC()
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	})
}

var keep [][]byte

// makeGarbage makes 16 MiB of garbage; it returns the HeapAllocs reading
// before, and the collections run so far.
func makeGarbage() (before uint64, cycles uint32) {
	before = HeapAllocs()
	for range 64 {
		_ = append([]byte(nil), make([]byte, 256<<10)...)
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return before, m.NumGC
}

// Garbage past the threshold is collected at once, and no collection
// runs after it until the heap is large again: the pacing stays.
func TestCollectFreesGarbageAndKeepsThePacing(t *testing.T) {
	tuneForTest(t)
	before, cycles := makeGarbage()
	var m runtime.MemStats
	Collect(before, 8<<20)
	Settle()
	runtime.ReadMemStats(&m)
	assert.Equal(t, cycles+1, m.NumGC, "one collection")
	assert.Less(t, m.HeapAlloc, uint64(8<<20), "the garbage is gone")
	assert.Equal(t, -1, gcPercent(), "no collection until the heap is large, as before")
	assert.True(t, tuned.Load())

	// Below the threshold: nothing.
	before = HeapAllocs()
	Collect(before, 8<<20)
	Settle()
	runtime.ReadMemStats(&m)
	assert.Equal(t, cycles+1, m.NumGC)
}

// A collection that leaves a large heap live ends Tune's pacing: the
// usual one follows, so that no collection runs again and again near
// StartHeap.
func TestCollectLeavingALargeHeapRestoresUsualPacing(t *testing.T) {
	if testing.Short() {
		t.Skip("holds 160 MiB")
	}
	tuneForTest(t)
	before := HeapAllocs()
	for range 160 {
		keep = append(keep, make([]byte, 1<<20))
	}
	defer func() { keep = nil }()
	Collect(before, 8<<20)
	Settle()
	assert.Equal(t, 100, gcPercent())
	assert.False(t, tuned.Load())
	// And Collect does nothing from then on.
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	cycles := m.NumGC
	before = HeapAllocs()
	for range 32 {
		_ = append([]byte(nil), make([]byte, 1<<20)...)
	}
	Collect(before, 8<<20)
	Settle()
	runtime.ReadMemStats(&m)
	assert.LessOrEqual(t, m.NumGC-cycles, uint32(1), "no collection asked for (the usual pacing may run one)")
}

// GOGC in the environment leaves the collector as it set it.
func TestEnvironmentKeepsItsSetting(t *testing.T) {
	old := debug.SetGCPercent(50)
	defer debug.SetGCPercent(old)
	Tune(true)
	assert.Equal(t, 50, gcPercent())
	assert.False(t, tuned.Load())
}

// memoryLimit reads the collector's memory limit.
func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// Expect leaves room for what the caller says it is about to keep: no
// collection runs while it is made, though the heap passes StartHeap.
func TestExpectDefersTheFirstCollection(t *testing.T) {
	if testing.Short() {
		t.Skip("holds 320 MiB")
	}
	tuneForTest(t)
	Expect(384 << 20)
	assert.GreaterOrEqual(t, memoryLimit(), int64(384<<20))
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	cycles := m.NumGC
	for range 320 {
		keep = append(keep, make([]byte, 1<<20))
	}
	defer func() { keep = nil }()
	runtime.ReadMemStats(&m)
	assert.Greater(t, m.HeapAlloc, uint64(StartHeap), "the heap passed StartHeap")
	assert.Equal(t, cycles, m.NumGC, "no collection ran")
	assert.True(t, tuned.Load())
}

// Expect raises the limit up to MaxStartHeap, never lowers it, and
// leaves the usual pacing alone.
func TestExpectIsBounded(t *testing.T) {
	debug.FreeOSMemory() // what earlier tests held
	require.Less(t, inUse(), uint64(64<<20))
	tuneForTest(t)
	Expect(0)
	assert.Equal(t, int64(StartHeap), memoryLimit(), "a small heap and nothing expected: StartHeap stays")
	Expect(64 << 20)
	assert.Equal(t, int64(StartHeap), memoryLimit(), "room for it below StartHeap: no change")
	Expect(512 << 20)
	assert.Greater(t, memoryLimit(), int64(512<<20), "what the process holds, and room for 512 MiB more")
	assert.Less(t, memoryLimit(), int64(MaxStartHeap))
	Expect(1 << 40)
	assert.Equal(t, int64(MaxStartHeap), memoryLimit())
	Expect(300 << 20)
	assert.Equal(t, int64(MaxStartHeap), memoryLimit(), "never lowered")

	tuned.Store(false)
	debug.SetMemoryLimit(math.MaxInt64)
	Expect(300 << 20)
	assert.Equal(t, int64(math.MaxInt64), memoryLimit(), "the usual pacing: no limit set")
}

// Collect returns before its collection runs: the caller's next step goes
// on beside it, and Settle waits for it.
func TestCollectDoesNotWaitForTheCollection(t *testing.T) {
	tuneForTest(t)
	before, cycles := makeGarbage()
	var m runtime.MemStats
	mu.Lock() // no collection of Collect's can run while this is held
	Collect(before, 8<<20)
	runtime.ReadMemStats(&m)
	assert.Equal(t, cycles, m.NumGC, "Collect returned before its collection")
	mu.Unlock()
	Settle()
	runtime.ReadMemStats(&m)
	assert.Equal(t, cycles+1, m.NumGC, "and Settle waited for it")
	assert.Less(t, m.HeapAlloc, uint64(8<<20), "the garbage is gone")
}
