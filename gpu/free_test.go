package gpu

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	idle := Device{Index: 0, MemTotalMiB: 81920, MemUsedMiB: 300}
	loaded := Device{Index: 0, MemTotalMiB: 81920, MemUsedMiB: 18432}
	withProcs := func(d Device, ps ...Process) Device { d.Processes = ps; return d }
	tests := []struct {
		name string
		dev  Device
		pol  FreePolicy
		free bool
		why  string
	}{
		{"idle", idle, FreePolicy{}, true, "free"},
		{"at the threshold", Device{MemUsedMiB: 1024}, FreePolicy{}, true, "free"},
		{"over the default threshold", loaded, FreePolicy{}, false, "18432 MiB used > 1024 MiB threshold"},
		{"under a configured threshold", loaded, FreePolicy{MaxUsedMiB: 20000}, true, "free"},
		{"foreign processes", withProcs(idle, Process{PID: 12, UsedMiB: 100}, Process{PID: 40}), FreePolicy{}, false,
			"2 compute processes (pid 12, 40)"},
		{"one foreign process among ours", withProcs(idle, Process{PID: 12}, Process{PID: 40}),
			FreePolicy{OwnPIDs: map[int]bool{12: true}}, false, "1 compute process (pid 40)"},
		{"only our processes, their memory does not count", withProcs(loaded, Process{PID: 12, UsedMiB: 18000}),
			FreePolicy{OwnPIDs: map[int]bool{12: true}}, true, "free"},
		{"our processes, but more memory than theirs", withProcs(loaded, Process{PID: 12, UsedMiB: 8000}),
			FreePolicy{OwnPIDs: map[int]bool{12: true}}, false, "10432 MiB used > 1024 MiB threshold"},
		{"released within the grace", loaded, FreePolicy{Released: map[int]time.Time{0: now.Add(-5 * time.Second)}, Now: now},
			true, "free (released 5s ago, 18432 MiB still draining)"},
		{"released before the grace", loaded, FreePolicy{Released: map[int]time.Time{0: now.Add(-20 * time.Second)}, Now: now},
			false, "18432 MiB used > 1024 MiB threshold"},
		{"released within a configured grace", loaded,
			FreePolicy{Released: map[int]time.Time{0: now.Add(-20 * time.Second)}, Grace: time.Minute, Now: now},
			true, "free (released 20s ago, 18432 MiB still draining)"},
		{"another device was released", loaded, FreePolicy{Released: map[int]time.Time{1: now}, Now: now},
			false, "18432 MiB used > 1024 MiB threshold"},
		{"released, but a stranger moved in", withProcs(loaded, Process{PID: 9}),
			FreePolicy{Released: map[int]time.Time{0: now}, Now: now}, false, "1 compute process (pid 9)"},
		{"leased", idle, FreePolicy{Leased: map[int]Holder{0: {RunID: "R", Node: "eval", PID: 1}}}, false,
			"leased by cairn run R, node eval (pid 1)"},
		{"leased elsewhere only", idle, FreePolicy{Leased: map[int]Holder{3: {RunID: "R"}}}, true, "free"},
		{"unreadable", Device{Problem: "NVML cannot read its memory: ERROR_GPU_IS_LOST"}, FreePolicy{}, false,
			"NVML cannot read its memory: ERROR_GPU_IS_LOST"},
		{"simulated busy", withProcs(idle, Process{PID: 0, UsedMiB: 40960}), FreePolicy{}, false, "1 compute process (simulated)"},
		{"many processes", withProcs(idle, Process{PID: 1}, Process{PID: 2}, Process{PID: 3}, Process{PID: 4}, Process{PID: 5},
			Process{PID: 6}, Process{PID: 7}, Process{PID: 8}, Process{PID: 9}), FreePolicy{}, false,
			"9 compute processes (pid 1, 2, 3, 4, 5, 6, 7, 8, ...)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := Classify([]Device{tc.dev}, tc.pol)
			require.Len(t, st, 1)
			assert.Equal(t, tc.free, st[0].Free)
			assert.Equal(t, tc.why, st[0].Why)
			assert.Equal(t, tc.dev, st[0].Device)
		})
	}
}

func TestClassifyKeepsOrderAndFreeIndices(t *testing.T) {
	devs := []Device{{Index: 0}, {Index: 1, MemUsedMiB: 5000}, {Index: 2}, {Index: 3, Processes: []Process{{PID: 1}}}}
	st := Classify(devs, FreePolicy{})
	require.Len(t, st, 4)
	for i, s := range st {
		assert.Equal(t, i, s.Device.Index)
	}
	assert.Equal(t, []int{0, 2}, FreeIndices(st))
	assert.Empty(t, FreeIndices(nil))
}

func TestRecheck(t *testing.T) {
	inv := NewSimulated(SimSpec{Count: 3, Busy: []int{1}})
	ctx := context.Background()
	require.NoError(t, Recheck(ctx, inv, []int{0, 2}, FreePolicy{}))
	// The node's own lease does not make its devices busy.
	require.NoError(t, Recheck(ctx, inv, []int{0}, FreePolicy{Leased: map[int]Holder{0: {RunID: "me"}}}))
	err := Recheck(ctx, inv, []int{0, 1}, FreePolicy{})
	require.ErrorIs(t, err, ErrNotFree)
	assert.EqualError(t, err, "gpu: device no longer free: GPU 1: 1 compute process (simulated)")
	assert.ErrorIs(t, Recheck(ctx, inv, []int{5}, FreePolicy{}), ErrNoDevice)
}

func BenchmarkClassify8(b *testing.B) {
	devs := make([]Device, 8)
	for i := range devs {
		devs[i] = Device{Index: i, MemTotalMiB: 81920, MemUsedMiB: uint64(i) * 1000, Processes: []Process{{PID: 100 + i, UsedMiB: 500}}}
	}
	pol := FreePolicy{OwnPIDs: map[int]bool{100: true, 102: true}, Now: time.Now()}
	for b.Loop() {
		_ = Classify(devs, pol)
	}
}
