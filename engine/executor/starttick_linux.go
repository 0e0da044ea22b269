package executor

import (
	"sync"

	"golang.org/x/sys/unix"
)

// A process's start time in /proc/PID/stat is the boot clock (CLOCK_BOOTTIME)
// read when it was forked, in clock ticks (nanoseconds / (1e9 / AT_CLKTCK),
// rounded down). Reading the boot clock just before and just after the fork
// brackets that moment: when both reads fall in the same tick, that tick is
// the process's start time, and /proc need not be read (an open, a read
// the kernel formats 52 fields for, and a close: about 40 µs of a node's
// start on a small virtual machine).

// atClkTck is the auxiliary vector's entry for the clock tick rate
// (linux/auxvec.h).
const atClkTck = 17

// clockTick is the length of a clock tick in nanoseconds, 0 when the
// auxiliary vector does not give AT_CLKTCK.
var clockTick = sync.OnceValue(func() int64 {
	av, err := unix.Auxv()
	if err != nil {
		return 0
	}
	for _, kv := range av {
		if kv[0] == atClkTck && kv[1] > 0 && 1_000_000_000%kv[1] == 0 {
			return int64(1_000_000_000 / kv[1])
		}
	}
	return 0
})

// bootClock reads the boot clock in nanoseconds; 0 when it cannot be read.
func bootClock() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// forkTicks returns the start time of a process forked between two reads
// of bootClock, when both fall in the same tick.
func forkTicks(before, after int64) (uint64, bool) {
	tick := clockTick()
	if tick == 0 || before <= 0 || after < before || before/tick != after/tick {
		return 0, false
	}
	return uint64(before / tick), true
}
