package gpu

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultOOMPatterns are the messages by which CUDA programs and the libraries above them
// report running out of GPU memory. A node whose stderr carries one of them failed for lack
// of memory; a bare SIGKILL is not evidence of that.
var DefaultOOMPatterns = []string{
	"torch.OutOfMemoryError",
	"torch.cuda.OutOfMemoryError",
	"CUDA out of memory",
	"CUDA error: out of memory",
	"CUDA_ERROR_OUT_OF_MEMORY",
	"cudaErrorMemoryAllocation",
	"CUBLAS_STATUS_ALLOC_FAILED",
	"CUDNN_STATUS_ALLOC_FAILED",
	"CUFFT_ALLOC_FAILED",
	"CUSOLVER_STATUS_ALLOC_FAILED",
	"CUSPARSE_STATUS_ALLOC_FAILED",
	"HIP out of memory",
	"RESOURCE_EXHAUSTED: Out of memory",
	"No available memory for the cache blocks",
}

// DiagnoseOOM looks for an out-of-memory message in the tail of a node's stderr: first the
// stage's own patterns (extra), then DefaultOOMPatterns. Patterns are plain substrings,
// matched case-sensitively. It returns the pattern that matched.
func DiagnoseOOM(stderrTail []byte, extra []string) (matched string, ok bool) {
	for _, set := range [][]string{extra, DefaultOOMPatterns} {
		for _, p := range set {
			if p != "" && bytes.Contains(stderrTail, []byte(p)) {
				return p, true
			}
		}
	}
	return "", false
}

// CgroupOOMKills reads how many processes the kernel's OOM killer has killed in cairn's own
// memory cgroup (and below it): oom_kill in memory.events on cgroup v2, in
// memory.oom_control on v1. Compare the count before and after a node: a node killed by
// SIGKILL while the count rose was killed for memory. ok is false where the count is not
// visible (no cgroup filesystem, no memory controller, an old kernel).
func CgroupOOMKills() (uint64, bool) {
	return cgroupOOMKills("/proc/self/cgroup", "/sys/fs/cgroup")
}

// cgroupOOMKills is CgroupOOMKills reading the membership file and the cgroup mount given.
func cgroupOOMKills(procCgroup, root string) (uint64, bool) {
	data, err := os.ReadFile(procCgroup)
	if err != nil {
		return 0, false
	}
	var v2, v1 string
	v2set, v1set := false, false
	for line := range strings.Lines(string(data)) {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(strings.TrimRight(line, "\n"), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2, v2set = parts[2], true
		case hasController(parts[1], "memory"):
			v1, v1set = parts[2], true
		}
	}
	if v1set {
		// A v1 memory controller takes precedence: on hybrid systems the v2 hierarchy has none.
		for _, dir := range candidates(filepath.Join(root, "memory"), v1) {
			if n, ok := readKeyed(filepath.Join(dir, "memory.oom_control"), "oom_kill"); ok {
				return n, true
			}
		}
	}
	if v2set {
		for _, base := range []string{root, filepath.Join(root, "unified")} {
			for _, dir := range candidates(base, v2) {
				if n, ok := readKeyed(filepath.Join(dir, "memory.events"), "oom_kill"); ok {
					return n, true
				}
			}
		}
	}
	return 0, false
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// candidates: the cgroup's directory under the mount, then the mount's root, which is the
// process's own cgroup when it runs in a cgroup namespace (containers).
func candidates(mount, path string) []string {
	own := filepath.Join(mount, filepath.Clean("/"+path))
	if own == mount {
		return []string{mount}
	}
	return []string{own, mount}
}

// readKeyed reads "key value" lines and returns the value of key.
func readKeyed(path, key string) (uint64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || k != key {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		return n, err == nil
	}
	return 0, false
}
