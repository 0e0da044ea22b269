package gcpace

import (
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HugePageHeap is how much of the heap HugePages backs by huge pages:
// what a plan of 10,000 nodes allocates, and more.
const HugePageHeap = 128 << 20

// HugePageStart is the heap allocated at which HugePages goes to work: a
// pipeline of a few stages never allocates it, and pays nothing.
const HugePageStart = 8 << 20

// hugePageSize is the size of a transparent huge page (x86-64, arm64
// with 4 KiB pages).
const hugePageSize = 2 << 20

// hugeWatch is how often HugePages looks at the heap.
const hugeWatch = time.Millisecond

// HugePages asks for the next n bytes of heap the run grows into to be
// backed by transparent huge pages, where the system gives them only to
// the programs that ask (THP "madvise", the default of many
// distributions), once the run has allocated HugePageStart bytes. A run
// that makes a large graph allocates about 8 KiB per node of memory it
// had never touched, a page fault every 4 KiB: a plan of 10,000 nodes
// took 22,700 faults, a third of its CPU time. In 2 MiB pages that is a
// few dozen.
//
// Go maps its heap as it grows, and a mapping made later does not keep
// advice given earlier, so the heap grows by n at once (one allocation
// of n bytes, which touches none of it), that memory is advised, and a
// collection frees the allocation for the run's own objects, which take
// the lowest free addresses first. The collection keeps the pacing Tune
// set. A run that allocates less than HugePageStart is spared the
// allocation and the collection (1.3 ms of an 8 ms plan).
//
// now starts the work at once, for a run the caller knows will be large
// (a pipeline of many stages): done on a heap still small, the
// collection costs least, where waiting for the heap to grow puts it in
// the middle of the parse (a plan of 10,000 stage blocks: 0.12 s at once,
// 0.15 s waiting). Otherwise a goroutine watches the heap until it is
// that large or stop is called. The work is done once in a process.
// HugePages does nothing
// where the system gives huge pages to every program or to none, or off
// Linux; a caller told GODEBUG=disablethp=1 does not call it (THPDisabled).
func HugePages(n int, now bool) (stop func()) {
	if hugeDone.Load() || !hugePagesAsked() {
		return func() {}
	}
	if now {
		go adviseHeap(n)
		return func() {}
	}
	stopped := make(chan struct{})
	go watchHeap(HugePageStart, n, stopped)
	var once sync.Once
	return func() { once.Do(func() { close(stopped) }) }
}

var (
	hugeMu   sync.Mutex
	hugeDone atomic.Bool // the heap was advised
)

// watchHeap advises n bytes of heap once start bytes were allocated,
// unless stopped first.
func watchHeap(start uint64, n int, stopped <-chan struct{}) {
	t := time.NewTicker(hugeWatch)
	defer t.Stop()
	for HeapAllocs() < start {
		select {
		case <-stopped:
			return
		case <-t.C:
		}
	}
	adviseHeap(n)
}

// adviseHeap has the heap grow by n bytes advised to be huge pages, once
// in a process, and frees them for the run's objects.
func adviseHeap(n int) {
	hugeMu.Lock()
	defer hugeMu.Unlock()
	if hugeDone.Load() {
		return
	}
	b := make([]byte, n)
	adviseHuge(b)
	b = nil
	hugeDone.Store(true)
	if tuned.Load() {
		collect()
	} else {
		runtime.GC()
	}
}

// THPDisabled reports whether godebug, the value of GODEBUG, asks Go to
// keep away from transparent huge pages (disablethp=1): the caller then
// does not call HugePages.
func THPDisabled(godebug string) bool {
	disabled := false
	for _, kv := range strings.Split(godebug, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == "disablethp" {
			disabled = v == "1" // the last setting counts, as for Go
		}
	}
	return disabled
}

// hugePagesAsked reports whether the system gives transparent huge pages
// to the memory a program asks them for, and only to that.
func hugePagesAsked() bool {
	if !hugePagesSupported {
		return false
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && strings.Contains(string(mode), "[madvise]")
}
