package gpu

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
//
// The file that holds the count is found once and read directly by later calls (cairn
// reads it around every node); it is looked for again if it can no longer be read.
func CgroupOOMKills() (uint64, bool) {
	oomFile.Lock()
	defer oomFile.Unlock()
	if oomFile.path != "" {
		if n, ok := readKeyed(oomFile.path, oomFile.key); ok {
			return n, true
		}
	}
	path, key, ok := cgroupOOMFile("/proc/self/cgroup", "/sys/fs/cgroup")
	if !ok {
		oomFile.path = ""
		return 0, false
	}
	oomFile.path, oomFile.key = path, key
	return readKeyed(path, key)
}

// oomFile is the file CgroupOOMKills found last, and its key.
var oomFile struct {
	sync.Mutex
	path, key string
}

// cgroupOOMKills is CgroupOOMKills reading the membership file and the cgroup mount given.
func cgroupOOMKills(procCgroup, root string) (uint64, bool) {
	path, key, ok := cgroupOOMFile(procCgroup, root)
	if !ok {
		return 0, false
	}
	return readKeyed(path, key)
}

// cgroupOOMFile finds the file holding the OOM kill count of the cgroup named by the
// membership file procCgroup under the cgroup mount root, and the key of the count.
func cgroupOOMFile(procCgroup, root string) (path, key string, ok bool) {
	data, err := os.ReadFile(procCgroup)
	if err != nil {
		return "", "", false
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
			p := filepath.Join(dir, "memory.oom_control")
			if _, ok := readKeyed(p, "oom_kill"); ok {
				return p, "oom_kill", true
			}
		}
	}
	if v2set {
		for _, base := range []string{root, filepath.Join(root, "unified")} {
			for _, dir := range candidates(base, v2) {
				p := filepath.Join(dir, "memory.events")
				if _, ok := readKeyed(p, "oom_kill"); ok {
					return p, "oom_kill", true
				}
			}
		}
	}
	return "", "", false
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

// readKeyed reads "key value" lines and returns the value of key. The file (a small
// cgroup file, read around every node) is read with plain system calls: no poller
// registration, no buffering.
func readKeyed(path, key string) (uint64, bool) {
	data, ok := readSmall(path)
	if !ok {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\n"), " ")
		if !ok || k != key {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// readSmall reads a file of at most 64 KiB.
func readSmall(path string) ([]byte, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	var buf [64 << 10]byte
	n := 0
	for n < len(buf) {
		k, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		if k == 0 {
			break
		}
		n += k
	}
	return buf[:n], true
}
