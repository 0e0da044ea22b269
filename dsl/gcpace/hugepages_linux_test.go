package gcpace

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// advisedHuge reports, for each address, whether the mapping that holds
// it is advised to be huge pages (VmFlags "hg" in /proc/self/smaps).
func advisedHuge(t *testing.T, addrs []uintptr) []bool {
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	type vma struct {
		lo, hi uintptr
		hg     bool
	}
	var vmas []vma
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(line)[0], "-"); ok && !strings.HasSuffix(line, ":") && !strings.Contains(lo, ":") {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				vmas = append(vmas, vma{lo: uintptr(l), hi: uintptr(h)})
				continue
			}
		}
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok && len(vmas) > 0 {
			vmas[len(vmas)-1].hg = strings.Contains(" "+flags+" ", " hg ")
		}
	}
	require.NoError(t, sc.Err())
	out := make([]bool, len(addrs))
	for i, a := range addrs {
		for _, v := range vmas {
			if v.lo <= a && a < v.hi {
				out[i] = v.hg
			}
		}
	}
	return out
}

var kept [][]byte

// Where the system gives huge pages to the programs that ask, once the
// heap passed the start the memory allocated next is advised to be huge
// pages, and Tune's pacing holds through the collection HugePages runs.
//
// It runs in a process of its own, as at cairn's start: a heap that
// earlier tests grew and left free below the advised memory is used first.
func TestHugePagesBackTheHeapThatFollows(t *testing.T) {
	if !hugePagesAsked() {
		t.Skip("this system gives transparent huge pages to every program or to none (/sys/kernel/mm/transparent_hugepage/enabled)")
	}
	if os.Getenv("GCPACE_TEST_FRESH_HEAP") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHugePagesBackTheHeapThatFollows$", "-test.v")
		cmd.Env = append(os.Environ(), "GCPACE_TEST_FRESH_HEAP=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "--- PASS: TestHugePagesBackTheHeapThatFollows")
		return
	}
	tuneForTest(t)
	watched := make(chan struct{})
	start := HeapAllocs() + 4<<20
	go func() {
		defer close(watched)
		watchHeap(start, 64<<20, nil)
	}()
	// 32 MiB of the run's own objects, kept live: the first 8 MiB start
	// the advice, the next 24 MiB come after it. The first of those fill
	// what the heap had left free below the advised memory.
	var addrs []uintptr
	for i := range 4096 {
		if i == 1024 {
			<-watched
			require.True(t, hugeDone.Load())
		}
		b := make([]byte, 8<<10)
		kept = append(kept, b)
		if i >= 1024 {
			addrs = append(addrs, uintptr(unsafe.Pointer(&b[0])))
		}
	}
	defer func() { kept = nil }()
	assert.Equal(t, -1, gcPercent(), "no collection until the heap is large, as before")
	assert.True(t, tuned.Load())
	huge := 0
	for _, hg := range advisedHuge(t, addrs) {
		if hg {
			huge++
		}
	}
	assert.Greater(t, huge, len(addrs)*3/4, "%d of %d objects in memory advised to be huge pages", huge, len(addrs))
}

// A run stopped before its heap reached the start advises nothing.
func TestHugePagesWaitForTheHeapToGrow(t *testing.T) {
	stopped := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watchHeap(HeapAllocs()+1<<40, 64<<20, stopped)
	}()
	close(stopped)
	<-watched
	assert.False(t, hugeDone.Load())
}

// GODEBUG=disablethp=1 asks Go to keep away from huge pages; its last
// setting counts.
func TestTHPDisabledReadsGODEBUG(t *testing.T) {
	assert.False(t, THPDisabled(""))
	assert.False(t, THPDisabled("madvdontneed=1"))
	assert.True(t, THPDisabled("madvdontneed=1, disablethp=1"))
	assert.False(t, THPDisabled("disablethp=0"))
	assert.False(t, THPDisabled("disablethp=1,disablethp=0"))
	assert.True(t, THPDisabled("disablethp=0,disablethp=1"))
}
