package gpu

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseSimSpec(t *testing.T) {
	tests := []struct {
		in      string
		want    SimSpec
		wantErr string
	}{
		{in: "sim:4", want: SimSpec{Count: 4, MemMiB: DefaultSimMemMiB}},
		{in: "sim:0", want: SimSpec{Count: 0, MemMiB: DefaultSimMemMiB}},
		{in: "sim:4,busy=2,0", want: SimSpec{Count: 4, Busy: []int{0, 2}, MemMiB: DefaultSimMemMiB}},
		{in: " sim:2, mem=80G ", want: SimSpec{Count: 2, MemMiB: 81920}},
		{in: "sim:2,mem=40960", want: SimSpec{Count: 2, MemMiB: 40960}},
		{in: "sim:2,mem=24GiB,busy=1", want: SimSpec{Count: 2, Busy: []int{1}, MemMiB: 24576}},
		{in: "sim:3,busy=1,mem=512m", want: SimSpec{Count: 3, Busy: []int{1}, MemMiB: 512}},
		{in: "sim:1,mem=1T", want: SimSpec{Count: 1, MemMiB: 1 << 20}},
		{in: "4", wantErr: "missing the sim: prefix"},
		{in: "sim:", wantErr: `device count "" is not a whole number`},
		{in: "sim:four", wantErr: `device count "four" is not a whole number`},
		{in: "sim:-1", wantErr: "not a whole number"},
		{in: "sim:5000", wantErr: "more than 1024"},
		{in: "sim:4,busy=4", wantErr: "busy device 4 does not exist (devices are 0..3)"},
		{in: "sim:4,busy=1,1", wantErr: "busy device 1 listed twice"},
		{in: "sim:4,busy=x", wantErr: `busy device "x" is not a device index`},
		{in: "sim:4,2", wantErr: `"2" is not key=value`},
		{in: "sim:4,mem=80G,2", wantErr: `"2" is not key=value`},
		{in: "sim:4,mem=lots", wantErr: `mem: "lots" is not a size`},
		{in: "sim:4,mem=0", wantErr: `is not a size`},
		{in: "sim:4,mem=99999999T", wantErr: "too large"},
		{in: "sim:4,color=red", wantErr: `unknown key "color"`},
		{in: "sim:4,busy=1,busy=2", wantErr: "busy given twice"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSimSpec(tc.in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				assert.ErrorContains(t, err, "want sim:N", "errors show the accepted forms")
				return
			}
			require.NoError(t, err)
			got.spec = ""
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSimSpecString(t *testing.T) {
	s, err := ParseSimSpec("sim:4,busy=0,2")
	require.NoError(t, err)
	assert.Equal(t, "sim:4,busy=0,2", s.String())
	assert.Equal(t, "sim:3,busy=1,mem=512M", SimSpec{Count: 3, Busy: []int{1}, MemMiB: 512}.String())
	round, err := ParseSimSpec(SimSpec{Count: 3, Busy: []int{1}, MemMiB: 512}.String())
	require.NoError(t, err)
	assert.Equal(t, uint64(512), round.MemMiB)
}

func TestSimulatedInventory(t *testing.T) {
	inv, err := Open(envOf(map[string]string{EnvGPUs: "sim:4,busy=0,2,mem=40G"}))
	require.NoError(t, err)
	defer inv.Close()
	assert.Equal(t, SourceSimulated, inv.Source())
	assert.Equal(t, "simulated GPUs, not real devices (CAIRN_GPUS=sim:4,busy=0,2,mem=40G): 4 GPUs, 2 shown busy", inv.Note())

	devs, err := inv.Devices(context.Background())
	require.NoError(t, err)
	require.Len(t, devs, 4)
	for i, d := range devs {
		assert.Equal(t, i, d.Index)
		assert.True(t, d.Simulated)
		assert.Contains(t, d.Name, "simulated")
		assert.Equal(t, uint64(40960), d.MemTotalMiB)
	}
	assert.Equal(t, []int{1, 3}, FreeIndices(Classify(devs, FreePolicy{})))

	used, procs, err := inv.DeviceMemory(context.Background(), 2)
	require.NoError(t, err)
	assert.Equal(t, uint64(20480), used)
	assert.Equal(t, []Process{{PID: 0, UsedMiB: 20480}}, procs)
	_, _, err = inv.DeviceMemory(context.Background(), 4)
	assert.ErrorIs(t, err, ErrNoDevice)

	// Callers may change what they get without changing the inventory.
	devs[0].Processes[0].PID = 99
	again, err := inv.Devices(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 0, again[0].Processes[0].PID)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = inv.Devices(ctx)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestOpenChoosesInventory(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		wantSource string
		wantNote   string
		wantErr    string
	}{
		{"simulated", map[string]string{EnvGPUs: "sim:2"}, SourceSimulated, "simulated GPUs", ""},
		{"disabled", map[string]string{EnvGPUs: "none"}, SourceNone, "CAIRN_GPUS=none", ""},
		{"bad sim spec", map[string]string{EnvGPUs: "sim:x"}, "", "", `CAIRN_GPUS: gpu: simulated GPUs "sim:x"`},
		{"unknown value", map[string]string{EnvGPUs: "cuda"}, "", "", `gpu: CAIRN_GPUS="cuda": want sim:N`},
		{"driver library missing", map[string]string{EnvNVMLLibrary: "/nonexistent/libnvidia-ml.so.1"}, SourceNone,
			"", ""},
		{"nvml requested, library missing", map[string]string{EnvGPUs: "nvml", EnvNVMLLibrary: "/nonexistent/libnvidia-ml.so.1", EnvVisible: "0"},
			SourceNone, "", ""},
		{"CUDA_VISIBLE_DEVICES does not hide simulated GPUs", map[string]string{EnvGPUs: "sim:2", EnvVisible: "-1"}, SourceSimulated, "simulated GPUs", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := Open(envOf(tc.env))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			defer inv.Close()
			assert.Equal(t, tc.wantSource, inv.Source())
			note := tc.wantNote
			if note == "" {
				note = noNVMLNote
			}
			assert.Contains(t, inv.Note(), note)
			assert.NotContains(t, inv.Note(), "only CUDA_VISIBLE_DEVICES", "an empty inventory is not restricted")
			devs, err := inv.Devices(context.Background())
			require.NoError(t, err)
			if inv.Source() == SourceNone {
				assert.Empty(t, devs)
				_, _, err = inv.DeviceMemory(context.Background(), 0)
				assert.ErrorIs(t, err, ErrNoDevice)
			}
		})
	}
}

func TestOpenOnThisMachine(t *testing.T) {
	// Whatever the machine, Open succeeds; without a driver the note says so.
	inv, err := Open(envOf(nil))
	require.NoError(t, err)
	defer inv.Close()
	devs, err := inv.Devices(context.Background())
	require.NoError(t, err)
	switch inv.Source() {
	case SourceNVML:
		assert.Contains(t, inv.Note(), "GPUs")
	case SourceNone:
		assert.Empty(t, devs)
		assert.Contains(t, inv.Note(), "0 GPUs")
	default:
		t.Fatalf("source %q", inv.Source())
	}
}

func TestRestrict(t *testing.T) {
	base := NewSimulated(SimSpec{Count: 4})
	tests := []struct {
		value string
		want  []int
	}{
		{"2", []int{2}},
		{"3,1", []int{1, 3}}, // NVML order, NVML numbering
		{" 0 , 2 ", []int{0, 2}},
		{"1,7,2", []int{1}}, // CUDA stops at the first entry naming no device
		{"-1", nil},
		{"1,1", []int{1}},
		{"MIG-abc,1", nil},
		{"nonsense", nil},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			inv := Restrict(base, tc.value)
			assert.Contains(t, inv.Note(), "only CUDA_VISIBLE_DEVICES="+tc.value+" offered")
			devs, err := inv.Devices(context.Background())
			require.NoError(t, err)
			var got []int
			for _, d := range devs {
				got = append(got, d.Index)
			}
			assert.Equal(t, tc.want, got)
			for i := range 4 {
				_, _, err := inv.DeviceMemory(context.Background(), i)
				if contains(tc.want, i) {
					assert.NoError(t, err)
				} else {
					assert.ErrorIs(t, err, ErrNoDevice)
				}
			}
		})
	}
}

func TestVisibleSetByUUID(t *testing.T) {
	devs := []Device{
		{Index: 0, UUID: "GPU-8a1f0000-aaaa"},
		{Index: 1, UUID: "GPU-8a2b0000-bbbb"},
		{Index: 2, UUID: "GPU-c0de0000-cccc"},
	}
	assert.Equal(t, map[int]bool{2: true, 0: true}, visibleSet(devs, "GPU-c0de,GPU-8a1f0000-aaaa"))
	assert.Equal(t, map[int]bool{}, visibleSet(devs, "GPU-8a"), "an ambiguous prefix names no device")
	assert.Equal(t, map[int]bool{1: true}, visibleSet(devs, "1,GPU-ffff,2"))
}

func TestVisibleDevicesAndChildEnv(t *testing.T) {
	devs := []Device{{Index: 0, UUID: "GPU-a"}, {Index: 1, UUID: "GPU-b"}, {Index: 3, UUID: "GPU-d"}}
	assert.Equal(t, "3,1", VisibleDevices(devs, []int{3, 1}, false))
	assert.Equal(t, "GPU-d,GPU-b", VisibleDevices(devs, []int{3, 1}, true))
	assert.Equal(t, "GPU-a,5", VisibleDevices(devs, []int{0, 5}, true), "unknown devices fall back to the index")
	assert.Equal(t, "", VisibleDevices(devs, nil, false))
	assert.Equal(t, []string{"CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=0,1"}, ChildEnv(devs, []int{0, 1}, false))
}

func TestNoneInventory(t *testing.T) {
	inv := NewNone("no GPUs: testing")
	assert.Equal(t, SourceNone, inv.Source())
	assert.Equal(t, "no GPUs: testing", inv.Note())
	_, _, err := inv.DeviceMemory(context.Background(), 0)
	assert.ErrorIs(t, err, ErrNoDevice)
	assert.ErrorContains(t, err, "no GPUs: testing")
	assert.NoError(t, inv.Close())
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}
