package gpu

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The test binary doubles as the child processes the tests need: with CAIRN_GPU_TEST_HELPER
// set it runs one helper mode instead of the tests.
const helperEnv = "CAIRN_GPU_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(m.Run())
}

func runHelper(mode string) int {
	switch mode {
	case "alloc":
		// Touch CAIRN_GPU_TEST_MIB MiB outside the Go heap (so the race detector's shadow
		// memory does not inflate it), report the resident baseline before, then hold.
		mib, _ := strconv.Atoi(os.Getenv("CAIRN_GPU_TEST_MIB"))
		fmt.Printf("baseline %d\n", selfRSS())
		mem, err := syscall.Mmap(-1, 0, mib<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			fmt.Println("mmap:", err)
			return 1
		}
		for i := 0; i < len(mem); i += os.Getpagesize() {
			mem[i] = 1
		}
		fmt.Println("ready")
		hold()
		_ = mem[0]
	case "hold":
		// Keep the inherited lease descriptors until killed.
		fmt.Println("ready")
		time.Sleep(time.Hour)
	case "race":
		d, err := OpenLeaseDir(os.Getenv("CAIRN_GPU_TEST_DIR"))
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		l, err := d.TryAcquire([]int{0, 1, 2}, Holder{RunID: "race", PID: os.Getpid()})
		switch {
		case err == nil:
			fmt.Println("got")
		case strings.Contains(err.Error(), "leased by"):
			fmt.Println("busy")
		default:
			fmt.Println("error", err)
			return 1
		}
		_, _ = io.Copy(io.Discard, os.Stdin)
		if l != nil {
			_ = l.Release()
		}
	case "tree":
		// Two children, each touching CAIRN_GPU_TEST_MIB; ready once both are.
		var kids []*exec.Cmd
		for range 2 {
			c := exec.Command(os.Args[0])
			c.Env = append(os.Environ(), helperEnv+"=alloc")
			c.Stdin = os.Stdin
			out, _ := c.StdoutPipe()
			if err := c.Start(); err != nil {
				fmt.Println("start:", err)
				return 1
			}
			sc := bufio.NewScanner(out)
			for sc.Scan() && sc.Text() != "ready" {
			}
			kids = append(kids, c)
		}
		fmt.Println("ready")
		for _, c := range kids {
			_ = c.Wait()
		}
	case "orphan":
		// Start a child in our process group, then exit: the child is re-parented but
		// stays in the group.
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), helperEnv+"=alloc", "CAIRN_GPU_TEST_HOLD=sleep")
		out, _ := c.StdoutPipe()
		if err := c.Start(); err != nil {
			fmt.Println("start:", err)
			return 1
		}
		sc := bufio.NewScanner(out)
		for sc.Scan() && sc.Text() != "ready" {
		}
		fmt.Printf("ready %d\n", c.Process.Pid)
	default:
		fmt.Println("unknown helper mode", mode)
		return 2
	}
	return 0
}

// hold blocks until stdin closes, or for an hour when told to sleep.
func hold() {
	if os.Getenv("CAIRN_GPU_TEST_HOLD") == "sleep" {
		time.Sleep(time.Hour)
		return
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// selfRSS is this process's resident memory in bytes.
func selfRSS() uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// helper is a started helper process with its stdin and stdout.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// startHelper starts the test binary in a helper mode, in its own process group; it is
// killed at the end of the test if still running.
func startHelper(t *testing.T, mode string, extra []*os.File, env ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), helperEnv+"="+mode), env...)
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	})
	return &helper{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
}

// line reads the helper's next output line.
func (h *helper) line(t *testing.T) string {
	t.Helper()
	require.True(t, h.out.Scan(), "helper ended early: %v", h.out.Err())
	return h.out.Text()
}
