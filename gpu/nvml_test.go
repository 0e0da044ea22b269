//go:build linux && cgo

package gpu

import (
	"bytes"
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// h100 is NVIDIA's mock DGX H100 (8 GPUs of 80 GiB) with every device idle: a few hundred
// MiB used by the driver, no compute processes.
func h100(t *testing.T) *server.Server {
	t.Helper()
	s := dgxh100.New()
	for i := range s.Devices {
		setProcesses(s, i, nil, nvml.SUCCESS)
		dev(s, i).MemoryInfo.Used = 512 << 20
	}
	return s
}

func dev(s *server.Server, i int) *server.Device { return s.Devices[i].(*server.Device) }

func setProcesses(s *server.Server, i int, ps []nvml.ProcessInfo, ret nvml.Return) {
	dev(s, i).GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return ps, ret }
}

func TestNVMLInventoryFromMock(t *testing.T) {
	s := h100(t)
	// GPU 1 runs someone else's job; GPU 2 holds 18 GiB with no process NVML can name;
	// GPU 3 runs cairn's own node; GPU 4 cannot list processes (counts as none);
	// GPU 5 is lost.
	setProcesses(s, 1, []nvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 30 << 30}, {Pid: 4243, UsedGpuMemory: math.MaxUint64}}, nvml.SUCCESS)
	dev(s, 1).MemoryInfo.Used = 31 << 30
	dev(s, 2).MemoryInfo.Used = 18432 << 20
	setProcesses(s, 3, []nvml.ProcessInfo{{Pid: 777, UsedGpuMemory: 10 << 30}}, nvml.SUCCESS)
	dev(s, 3).MemoryInfo.Used = 10<<30 + 512<<20
	setProcesses(s, 4, nil, nvml.ERROR_NOT_SUPPORTED)
	dev(s, 5).GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST }

	inv, err := NewNVML(s)
	require.NoError(t, err)
	assert.Equal(t, SourceNVML, inv.Source())
	assert.Equal(t, "NVML, driver 550.54.15: 8 GPUs", inv.Note())

	devs, err := inv.Devices(context.Background())
	require.NoError(t, err)
	require.Len(t, devs, 8)
	for i, d := range devs {
		assert.Equal(t, i, d.Index)
		assert.Equal(t, dev(s, i).UUID, d.UUID)
		assert.Equal(t, "NVIDIA H100 80GB HBM3", d.Name)
		assert.False(t, d.Simulated)
		if i != 5 {
			assert.Equal(t, uint64(81920), d.MemTotalMiB)
		}
	}
	assert.Equal(t, []Process{{PID: 4242, UsedMiB: 30 << 10}, {PID: 4243, UsedMiB: 0}}, devs[1].Processes)
	assert.Empty(t, devs[4].Processes)

	st := Classify(devs, FreePolicy{OwnPIDs: map[int]bool{777: true}})
	why := make([]string, len(st))
	for i, s := range st {
		why[i] = s.Why
	}
	assert.Equal(t, []string{
		"free",
		"2 compute processes (pid 4242, 4243)",
		"18432 MiB used > 1024 MiB threshold",
		"free",
		"free",
		"NVML cannot read its memory: ERROR_GPU_IS_LOST",
		"free",
		"free",
	}, why)
	assert.Equal(t, []int{0, 3, 4, 6, 7}, FreeIndices(st))

	used, procs, err := inv.DeviceMemory(context.Background(), 3)
	require.NoError(t, err)
	assert.Equal(t, uint64(10<<10+512), used)
	assert.Equal(t, []Process{{PID: 777, UsedMiB: 10 << 10}}, procs)
	_, _, err = inv.DeviceMemory(context.Background(), 8)
	assert.ErrorIs(t, err, ErrNoDevice)
	_, _, err = inv.DeviceMemory(context.Background(), 5)
	assert.ErrorIs(t, err, ErrNVML)
	assert.ErrorContains(t, err, "device 5: gpu: nvml call failed: DeviceGetMemoryInfo: ERROR_GPU_IS_LOST")

	// A device turning busy between listing and launch is caught by the recheck.
	require.NoError(t, Recheck(context.Background(), inv, []int{0, 6}, FreePolicy{}))
	setProcesses(s, 6, []nvml.ProcessInfo{{Pid: 999, UsedGpuMemory: 1 << 30}}, nvml.SUCCESS)
	err = Recheck(context.Background(), inv, []int{0, 6}, FreePolicy{})
	require.ErrorIs(t, err, ErrNotFree)
	assert.EqualError(t, err, "gpu: device no longer free: GPU 6: 1 compute process (pid 999)")

	require.NoError(t, inv.Close())
	require.NoError(t, inv.Close())
	assert.Len(t, s.ShutdownCalls(), 1, "Close shuts NVML down once")
}

func TestNVMLInitFailures(t *testing.T) {
	tests := []struct {
		ret      nvml.Return
		wantNote string
		wantErr  bool
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, "no NVIDIA driver here (libnvidia-ml.so.1 not found): 0 GPUs", false},
		{nvml.ERROR_DRIVER_NOT_LOADED, "no NVIDIA driver here (NVML loaded, but the kernel driver is not): 0 GPUs", false},
		{nvml.ERROR_NO_PERMISSION, "NVML failed to start (ERROR_NO_PERMISSION): 0 GPUs", true},
		{nvml.ERROR_UNKNOWN, "NVML failed to start (ERROR_UNKNOWN): 0 GPUs", true},
	}
	for _, tc := range tests {
		t.Run(tc.ret.Error(), func(t *testing.T) {
			s := h100(t)
			s.InitFunc = func() nvml.Return { return tc.ret }
			inv, err := NewNVML(s)
			if tc.wantErr {
				require.ErrorIs(t, err, ErrNVML)
				assert.ErrorContains(t, err, "Init: "+tc.ret.Error())
			} else {
				require.NoError(t, err)
			}
			require.NotNil(t, inv, "even a failed start leaves an inventory to carry on with")
			assert.Equal(t, SourceNone, inv.Source())
			assert.Equal(t, tc.wantNote, inv.Note())
			devs, err := inv.Devices(context.Background())
			require.NoError(t, err)
			assert.Empty(t, devs)
			assert.Empty(t, s.DeviceGetCountCalls(), "no device is asked for after a failed start")
		})
	}
}

func TestNVMLCountFailureShutsDown(t *testing.T) {
	s := h100(t)
	s.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	inv, err := NewNVML(s)
	require.ErrorIs(t, err, ErrNVML)
	assert.Equal(t, SourceNone, inv.Source())
	assert.Len(t, s.ShutdownCalls(), 1)
}

func TestRestrictNVMLByIndexAndUUID(t *testing.T) {
	s := h100(t)
	inner, err := NewNVML(s)
	require.NoError(t, err)
	u3 := dev(s, 3).UUID
	inv := Restrict(inner, "6,"+u3[:13]) // a UUID prefix, as CUDA accepts
	devs, err := inv.Devices(context.Background())
	require.NoError(t, err)
	require.Len(t, devs, 2)
	assert.Equal(t, 3, devs[0].Index)
	assert.Equal(t, 6, devs[1].Index)
	assert.Equal(t, dev(s, 6).UUID+","+u3, VisibleDevices(devs, []int{6, 3}, true))
	_, _, err = inv.DeviceMemory(context.Background(), 0)
	assert.ErrorIs(t, err, ErrNoDevice)
	_, _, err = inv.DeviceMemory(context.Background(), 6)
	assert.NoError(t, err)
}

func TestOpenRestrictsNVMLFromEnvironment(t *testing.T) {
	s := h100(t)
	load := func(func(string) string) Inventory {
		inv, err := NewNVML(s)
		require.NoError(t, err)
		return inv
	}
	tests := []struct {
		visible string
		want    []int
		note    string
	}{
		{"", []int{0, 1, 2, 3, 4, 5, 6, 7}, "NVML, driver 550.54.15: 8 GPUs"},
		{"5,2", []int{2, 5}, "NVML, driver 550.54.15: 8 GPUs; only CUDA_VISIBLE_DEVICES=5,2 offered"},
		{"-1", nil, "NVML, driver 550.54.15: 8 GPUs; only CUDA_VISIBLE_DEVICES=-1 offered"},
	}
	for _, tc := range tests {
		t.Run(tc.visible, func(t *testing.T) {
			inv, err := open(envOf(map[string]string{EnvVisible: tc.visible}), load)
			require.NoError(t, err)
			assert.Equal(t, tc.note, inv.Note())
			devs, err := inv.Devices(context.Background())
			require.NoError(t, err)
			var got []int
			for _, d := range devs {
				got = append(got, d.Index)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSamplerReadsNVMLPerProcessMemory(t *testing.T) {
	s := h100(t)
	inv, err := NewNVML(s)
	require.NoError(t, err)
	// This test process is the node: NVML reports it on GPU 2 with 12 GiB, beside a stranger.
	pid := os.Getpid()
	setProcesses(s, 2, []nvml.ProcessInfo{{Pid: uint32(pid), UsedGpuMemory: 12 << 30}, {Pid: 1 << 30, UsedGpuMemory: 40 << 30}}, nvml.SUCCESS)
	dev(s, 2).MemoryInfo.Used = 53 << 30
	// GPU 4: exclusive lease, NVML names no process (another pid namespace): all of it counts.
	dev(s, 4).MemoryInfo.Used = 2 << 30
	sm := StartSampler(context.Background(), pid, time.Millisecond, inv, []int{2, 4})
	for sm.Peaks().Samples < 2 {
		time.Sleep(time.Millisecond)
	}
	p := sm.Stop()
	assert.Equal(t, float64(12<<10+2<<10), p.GPUMiB)
}

func TestProbeWithoutDriver(t *testing.T) {
	t.Setenv(EnvNVMLLibrary, "/nonexistent/libnvidia-ml.so.1")
	var out bytes.Buffer
	err := Probe(context.Background(), &out)
	require.ErrorIs(t, err, ErrNoNVML)
	assert.Equal(t, noNVMLNote+"\n", out.String())
	assert.True(t, strings.HasPrefix(err.Error(), "gpu: NVML not available: no NVIDIA driver here"))
}
