package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDiagnoseOOM(t *testing.T) {
	tests := []struct {
		name   string
		stderr string
		extra  []string
		want   string
	}{
		{"torch", `Traceback (most recent call last):
  File "train.py", line 88, in <module>
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB`,
			nil, "torch.OutOfMemoryError"},
		{"older torch", "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB", nil, "CUDA out of memory"},
		{"cuda runtime", "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported", nil, "CUDA error: out of memory"},
		{"cublas", "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", nil, "CUBLAS_STATUS_ALLOC_FAILED"},
		{"cuda api", "cudaMalloc returned cudaErrorMemoryAllocation", nil, "cudaErrorMemoryAllocation"},
		{"jax", "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4294967296 bytes.", nil, "RESOURCE_EXHAUSTED: Out of memory"},
		{"vllm", "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`", nil, "No available memory for the cache blocks"},
		{"stage pattern first", "MyAllocator: arena exhausted (CUDA out of memory)", []string{"arena exhausted"}, "arena exhausted"},
		{"empty stage pattern ignored", "segfault", []string{""}, ""},
		{"plain crash", "Segmentation fault (core dumped)", nil, ""},
		{"host memory is not GPU memory", "MemoryError: Unable to allocate 3.00 GiB", nil, ""},
		{"case matters", "cuda out of memory", nil, ""},
		{"killed", "", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := DiagnoseOOM([]byte(tc.stderr), tc.extra)
			assert.Equal(t, tc.want != "", ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

// cgroupFixture lays out a fake /proc/self/cgroup and cgroup mount.
func cgroupFixture(t *testing.T, self string, files map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	proc := filepath.Join(dir, "cgroup")
	require.NoError(t, os.WriteFile(proc, []byte(self), 0o644))
	root := filepath.Join(dir, "sys")
	for name, content := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return proc, root
}

func TestCgroupOOMKills(t *testing.T) {
	events := "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n"
	oomControl := "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n"
	hybrid := "4:memory:/process_api/abc\n1:cpu:/\n0::/\n"
	tests := []struct {
		name  string
		self  string
		files map[string]string
		want  uint64
		ok    bool
	}{
		{"v2", "0::/user.slice/cairn.scope\n", map[string]string{"user.slice/cairn.scope/memory.events": events}, 2, true},
		{"v2 in a cgroup namespace", "0::/\n", map[string]string{"memory.events": events}, 2, true},
		{"v2 path not mounted here", "0::/elsewhere/x\n", map[string]string{"memory.events": events}, 2, true},
		{"v1 hybrid", hybrid, map[string]string{
			"memory/process_api/abc/memory.oom_control": oomControl,
			"memory/memory.oom_control":                 "oom_kill 99\n",
		}, 5, true},
		{"v1 with joined controllers", "7:cpu,memory:/job\n", map[string]string{"memory/job/memory.oom_control": oomControl}, 5, true},
		{"v2 under unified", "0::/job\n", map[string]string{"unified/job/memory.events": events}, 2, true},
		{"old kernel without oom_kill", "0::/\n", map[string]string{"memory.events": "low 0\noom 1\n"}, 0, false},
		{"no memory controller", "1:cpu:/\n0::/job\n", map[string]string{}, 0, false},
		{"garbage", "not a cgroup line\n", map[string]string{}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			proc, root := cgroupFixture(t, tc.self, tc.files)
			got, ok := cgroupOOMKills(proc, root)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
	_, ok := cgroupOOMKills(filepath.Join(t.TempDir(), "missing"), "/sys/fs/cgroup")
	assert.False(t, ok)
}

func BenchmarkDiagnoseOOM64KiB(b *testing.B) {
	tail := []byte(strings.Repeat("INFO step 1234 loss 0.5321 lr 3e-4 tokens/s 98765\n", 64<<10/50))
	for b.Loop() {
		if _, ok := DiagnoseOOM(tail, []string{"custom pattern"}); ok {
			b.Fatal("false positive")
		}
	}
}
