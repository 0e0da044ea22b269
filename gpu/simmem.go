package gpu

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// EnvSimMemory names the folder in which a process on simulated GPUs
// reports the device memory it uses (see SimMemoryFile); cairn sets it for
// every node leased simulated GPUs.
const EnvSimMemory = "CAIRN_SIM_GPU_MEMORY"

// SimMemoryFile is where a process with pid reports its use of simulated
// device index: a file holding a number of MiB, rewritten as the use
// changes. The simulated inventory counts it as that process's memory on
// the device, so that the sampler measures a simulated job's peak as it
// measures a real one's through NVML.
func SimMemoryFile(dir string, index, pid int) string {
	return filepath.Join(dir, strconv.Itoa(index), strconv.Itoa(pid))
}

// reported reads the processes that report memory on simulated device
// index. A file of a process that no longer runs is removed.
func (s *simInventory) reported(index int) []Process {
	if s.memDir == "" {
		return nil
	}
	dir := filepath.Join(s.memDir, strconv.Itoa(index))
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []Process
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		mib, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		if err != nil || mib < 0 {
			continue
		}
		if _, err := os.Stat(filepath.Join("/proc", e.Name())); os.IsNotExist(err) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
			continue
		}
		out = append(out, Process{PID: pid, UsedMiB: uint64(mib)})
	}
	return out
}
