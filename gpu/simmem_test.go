package gpu

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A process on simulated GPUs that reports its memory there is measured by
// the sampler as a real one is through NVML; a report of a process that
// ended is dropped.
func TestSimulatedProcessesReportTheirMemory(t *testing.T) {
	t.Setenv(EnvGPUs, "sim:2")
	t.Setenv(EnvLeaseDir, t.TempDir())
	p, err := NewPool(os.Getenv)
	require.NoError(t, err)
	env := p.ChildEnv([]int{1})
	var dir string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, EnvSimMemory+"="); ok {
			dir = v
		}
	}
	require.NotEmpty(t, dir, "nodes on simulated GPUs are told where to report: %v", env)

	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	f := SimMemoryFile(dir, 1, cmd.Process.Pid)
	require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o777))
	require.NoError(t, os.WriteFile(f, []byte("12345\n"), 0o644))

	used, procs, err := p.Inv.DeviceMemory(context.Background(), 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(12345), used)
	assert.Contains(t, procs, Process{PID: cmd.Process.Pid, UsedMiB: 12345})
	used0, _, _ := p.Inv.DeviceMemory(context.Background(), 0)
	assert.Zero(t, used0, "device 0 has no report")

	s := StartSampler(context.Background(), cmd.Process.Pid, 10*time.Millisecond, p.Inv, []int{1})
	for s.Peaks().GPUMiB == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	assert.Equal(t, 12345.0, s.Stop().GPUMiB)

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	used, _, _ = p.Inv.DeviceMemory(context.Background(), 1)
	assert.Zero(t, used, "the report of an ended process does not count")
	_, err = os.Stat(f)
	assert.True(t, os.IsNotExist(err), fmt.Sprintf("%s is removed", f))
}
