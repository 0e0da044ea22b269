package e2etest_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
)

// fatal records a test's failure and stops the function that failed it.
type fatal struct {
	testing.TB
	msg string
}

type stopped struct{}

func (f *fatal) Helper() {}

func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(stopped{})
}

func (f *fatal) run(fn func()) {
	defer func() {
		if r := recover(); r != nil && r != (stopped{}) {
			panic(r)
		}
	}()
	fn()
}

// WaitFor returns once the condition holds, and otherwise fails the test
// naming what it waited for and how long.
func TestWaitFor(t *testing.T) {
	n := 0
	e2etest.WaitFor(t, "the third poll", time.Minute, func() bool { n++; return n == 3 })
	assert.Equal(t, 3, n)

	f := &fatal{TB: t}
	f.run(func() { e2etest.WaitFor(f, "the file ready", 30*time.Millisecond, func() bool { return false }) })
	assert.Equal(t, "gave up after 30ms waiting for the file ready", f.msg)
}

// A running process is not gone; ended (a zombie before its parent reaps
// it, and after) it is.
func TestProcGone(t *testing.T) {
	assert.False(t, e2etest.ProcGone(os.Getpid()))
	cmd := exec.Command("sh", "-c", "exit 0")
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	e2etest.WaitFor(t, "the child to end", time.Minute, func() bool { return e2etest.ProcGone(pid) })
	require.NoError(t, cmd.Wait())
	assert.True(t, e2etest.ProcGone(pid))
}

// A process whose command name holds ") R" is read by its state, after
// the last ')'.
func TestProcGoneOddName(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "a) R (b")
	require.NoError(t, os.Symlink("/bin/sleep", exe))
	cmd := exec.Command(exe, "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	assert.False(t, e2etest.ProcGone(cmd.Process.Pid))
	require.NoError(t, cmd.Process.Kill())
	e2etest.WaitFor(t, "the killed child to end", time.Minute, func() bool { return e2etest.ProcGone(cmd.Process.Pid) })
}

// The ports are free: a listener can take each of them.
func TestFreePorts(t *testing.T) {
	p := e2etest.FreePort(t)
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	require.NoError(t, err)
	require.NoError(t, ln.Close())

	base := e2etest.FreePorts(t, 4)
	for q := base; q < base+4; q++ {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q))
		require.NoError(t, err, "port %d", q)
		require.NoError(t, ln.Close())
	}
}

// A build that fails says which packages and why.
func TestBuildFailureSaysWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	_, err := e2etest.Binaries{Packages: []string{"no/such/package"}}.Build()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "building no/such/package: go build -o ")
	assert.Contains(t, err.Error(), "github.com/cairn-run/cairn/no/such/package")
}

// WriteFile makes the folders the file is in.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	e2etest.WriteFile(t, dir, "a/b/c.txt", "x\n")
	b, err := os.ReadFile(filepath.Join(dir, "a", "b", "c.txt"))
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(b))
}

func TestEnvLeavesOutWhatSteersCairn(t *testing.T) {
	t.Setenv("CAIRN_GPUS", "sim:8")
	t.Setenv("TASK_ENDPOINTS", "http://x/v1")
	t.Setenv("VLLM_BASE_URL", "http://y/v1")
	t.Setenv("E2ETEST_KEPT", "1")
	env := e2etest.Env("CAIRN_NO_FSYNC=1")
	assert.Contains(t, env, "E2ETEST_KEPT=1")
	assert.Equal(t, "CAIRN_NO_FSYNC=1", env[len(env)-1])
	for _, kv := range env[:len(env)-1] {
		assert.False(t, strings.HasPrefix(kv, "CAIRN_") || strings.HasPrefix(kv, "TASK_ENDPOINTS=") || strings.HasPrefix(kv, "VLLM_BASE_URL="), kv)
	}
}

func TestRunGivesExitStatusAndOutput(t *testing.T) {
	code, out := e2etest.Run(t, exec.Command("sh", "-c", "echo out; echo err >&2; exit 3"))
	assert.Equal(t, 3, code)
	assert.Equal(t, "out\nerr\n", out)
	code, out = e2etest.Run(t, exec.Command("true"))
	assert.Equal(t, 0, code)
	assert.Empty(t, out)
}
