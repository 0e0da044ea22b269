package gpu

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Defaults for FreePolicy's zero fields.
const (
	// DefaultMaxUsedMiB: a device with more memory in use than this is busy. An idle GPU
	// shows a few hundred MiB used by the driver itself; a loaded model shows many GiB.
	DefaultMaxUsedMiB = 1024
	// DefaultGrace: how long a device cairn released may keep memory in use without being
	// counted busy, while the memory of the process that just exited drains.
	DefaultGrace = 15 * time.Second
)

// FreePolicy decides when a device is free now. Zero fields take the defaults above.
type FreePolicy struct {
	// MaxUsedMiB: above this much used memory a device is busy (DefaultMaxUsedMiB when 0).
	MaxUsedMiB uint64
	// OwnPIDs are processes that are cairn's own leased children: their presence on a device
	// is not a reason for busy, and their memory does not count against MaxUsedMiB.
	OwnPIDs map[int]bool
	// Released holds devices cairn released recently, with when; within Grace their used
	// memory is not a reason for busy (foreign processes still are).
	Released map[int]time.Time
	// Grace is the draining period for Released devices (DefaultGrace when 0).
	Grace time.Duration
	// Leased are devices some cairn holds a lease on (LeaseDir.Holders); they are busy.
	Leased map[int]Holder
	// Now is the time the policy is applied at (time.Now when zero).
	Now time.Time
}

// Status is a device with the verdict on it: Free, and Why in words ("free",
// "2 compute processes (pid 12, 40)", "18432 MiB used > 1024 MiB threshold",
// "leased by cairn run R, node N (pid P)").
type Status struct {
	Device Device
	Free   bool
	Why    string
}

// Classify decides for each device whether it is free now under pol. A device is busy when
// it could not be queried, when a cairn holds a lease on it, when it runs compute processes
// that are not cairn's own, or when more memory is in use (beyond cairn's own processes)
// than the threshold, unless cairn released it within the grace period.
func Classify(devs []Device, pol FreePolicy) []Status {
	maxUsed := pol.MaxUsedMiB
	if maxUsed == 0 {
		maxUsed = DefaultMaxUsedMiB
	}
	grace := pol.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	now := pol.Now
	if now.IsZero() {
		now = time.Now()
	}
	out := make([]Status, len(devs))
	for i, d := range devs {
		out[i] = Status{Device: d}
		st := &out[i]
		if d.Problem != "" {
			st.Why = d.Problem
			continue
		}
		if h, ok := pol.Leased[d.Index]; ok {
			st.Why = "leased by " + h.String()
			continue
		}
		var foreign []Process
		var own uint64
		for _, p := range d.Processes {
			if pol.OwnPIDs[p.PID] {
				own += p.UsedMiB
			} else {
				foreign = append(foreign, p)
			}
		}
		if len(foreign) > 0 {
			st.Why = describeProcesses(foreign)
			continue
		}
		used := d.MemUsedMiB - min(own, d.MemUsedMiB)
		if used > maxUsed {
			if at, ok := pol.Released[d.Index]; ok && now.Sub(at) < grace {
				st.Free = true
				st.Why = fmt.Sprintf("free (released %s ago, %d MiB still draining)", now.Sub(at).Round(time.Second), used)
				continue
			}
			st.Why = fmt.Sprintf("%d MiB used > %d MiB threshold", used, maxUsed)
			continue
		}
		st.Free = true
		st.Why = "free"
	}
	return out
}

// describeProcesses says which foreign processes hold a device; PID 0 is a simulated one.
func describeProcesses(ps []Process) string {
	noun := "compute process"
	if len(ps) > 1 {
		noun = "compute processes"
	}
	pids := make([]string, 0, len(ps))
	sim := false
	for _, p := range ps {
		if p.PID == 0 {
			sim = true
			continue
		}
		pids = append(pids, strconv.Itoa(p.PID))
	}
	switch {
	case len(pids) == 0 && sim:
		return fmt.Sprintf("%d %s (simulated)", len(ps), noun)
	case len(pids) > 8:
		return fmt.Sprintf("%d %s (pid %s, ...)", len(ps), noun, strings.Join(pids[:8], ", "))
	default:
		return fmt.Sprintf("%d %s (pid %s)", len(ps), noun, strings.Join(pids, ", "))
	}
}

// FreeIndices lists the indices of the free devices, in order.
func FreeIndices(st []Status) []int {
	var out []int
	for _, s := range st {
		if s.Free {
			out = append(out, s.Device.Index)
		}
	}
	return out
}

// ErrNotFree: a device chosen for a node turned busy before the node started.
var ErrNotFree = errors.New("gpu: device no longer free")

// Recheck reads the given devices again, right before a node starts on them, and fails with
// ErrNotFree naming the first one that is no longer free under pol. It is meant to run once
// the node's lease is taken, so it ignores pol.Leased.
func Recheck(ctx context.Context, inv Inventory, indices []int, pol FreePolicy) error {
	pol.Leased = nil
	devs, err := inv.Devices(ctx)
	if err != nil {
		return fmt.Errorf("gpu: recheck: %w", err)
	}
	byIndex := make(map[int]Device, len(devs))
	for _, d := range devs {
		byIndex[d.Index] = d
	}
	for _, i := range indices {
		d, ok := byIndex[i]
		if !ok {
			return fmt.Errorf("gpu: recheck: device %d: %w", i, ErrNoDevice)
		}
		if st := Classify([]Device{d}, pol)[0]; !st.Free {
			return fmt.Errorf("%w: GPU %d: %s", ErrNotFree, i, st.Why)
		}
	}
	return nil
}
