package gpu

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenderSimulated(t *testing.T) {
	inv, err := Open(envOf(map[string]string{EnvGPUs: "sim:3,busy=1,mem=24G"}))
	require.NoError(t, err)
	devs, err := inv.Devices(context.Background())
	require.NoError(t, err)
	holders := map[int]Holder{2: {RunID: "20250301-1200", Node: "stage.eval[\"a\"]", PID: 1}}
	var out bytes.Buffer
	Render(&out, inv, Classify(devs, FreePolicy{Leased: holders}), holders)
	want := `SIMULATED GPUs: these are not real devices.
simulated GPUs, not real devices (CAIRN_GPUS=sim:3,busy=1,mem=24G): 3 GPUs, 1 shown busy
GPU  UUID       NAME                    MEMORY USED/TOTAL  PROCESSES   STATE   WHY
0    SIM-GPU-0  simulated GPU (24 GiB)  0 / 24576 MiB      -           free
1    SIM-GPU-1  simulated GPU (24 GiB)  12288 / 24576 MiB  sim:12288M  busy    1 compute process (simulated)
2    SIM-GPU-2  simulated GPU (24 GiB)  0 / 24576 MiB      -           leased  by cairn run 20250301-1200, node stage.eval["a"] (pid 1)
`
	assert.Equal(t, want, out.String())
}

func TestRenderNVMLRows(t *testing.T) {
	inv := NewNone("NVML, driver 550.54.15: 2 GPUs") // only the note matters to Render
	devs := []Device{
		{Index: 0, UUID: "GPU-aaaa", Name: "NVIDIA H100 80GB HBM3", MemTotalMiB: 81920, MemUsedMiB: 18432,
			Processes: []Process{{PID: 12, UsedMiB: 18000}, {PID: 40}}},
		{Index: 1, Problem: "NVML cannot open it: ERROR_GPU_IS_LOST"},
	}
	var out bytes.Buffer
	Render(&out, inv, Classify(devs, FreePolicy{}), nil)
	want := `NVML, driver 550.54.15: 2 GPUs
GPU  UUID      NAME                   MEMORY USED/TOTAL  PROCESSES     STATE  WHY
0    GPU-aaaa  NVIDIA H100 80GB HBM3  18432 / 81920 MiB  12:18000M 40  busy   2 compute processes (pid 12, 40)
1    -         -                      -                  -             busy   NVML cannot open it: ERROR_GPU_IS_LOST
`
	assert.Equal(t, want, out.String())
	assert.NotContains(t, out.String(), "SIMULATED")
}

func TestRenderNoDevices(t *testing.T) {
	var out bytes.Buffer
	Render(&out, NewNone("no NVIDIA driver here (libnvidia-ml.so.1 not found): 0 GPUs"), nil, nil)
	assert.Equal(t, "no NVIDIA driver here (libnvidia-ml.so.1 not found): 0 GPUs\nno GPUs to offer\n", out.String())
}

func TestProcessList(t *testing.T) {
	assert.Equal(t, "-", processList(nil))
	var many []Process
	for i := range 9 {
		many = append(many, Process{PID: 100 + i, UsedMiB: 1})
	}
	assert.Equal(t, "100:1M 101:1M 102:1M 103:1M 104:1M 105:1M +3 more", processList(many))
}
