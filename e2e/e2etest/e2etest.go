// Package e2etest is what the tests that drive cairn's binaries share: the
// binaries built once for a test package (Binaries), the wait for a
// condition (WaitFor), a workspace file written (WriteFile), the
// environment cairn runs in (Env) and a run's exit status and output (Run),
// whether a process has ended (ProcGone) and free loopback ports
// (FreePort, FreePorts). It imports the standard library and testify only.
package e2etest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// module is the import path the packages of Binaries are relative to.
const module = "github.com/cairn-run/cairn"

// Binaries are main packages a test package builds once, in its TestMain.
type Binaries struct {
	// Packages are module-relative main packages or patterns:
	// "cmd/cairn", "sim/work/...".
	Packages []string
	// Race builds them under the race detector (go build -race).
	Race bool
	// Tags are build tags (go build -tags).
	Tags []string
}

// GoTool is the go command that builds the binaries: the one on PATH
// (go test puts its own toolchain's first).
func GoTool() (string, error) {
	p, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("no go command on PATH to build the binaries under test")
	}
	return p, nil
}

// Build builds the binaries into a new temporary folder, each named as
// go build names it (after its package's folder: cmd/cairn is "cairn"),
// and returns the folder, which the caller removes. The error holds the
// go command and its output.
func (b Binaries) Build() (string, error) {
	dir, err := os.MkdirTemp("", "cairn-test-bin-")
	if err != nil {
		return "", err
	}
	if err := b.into(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// BuildFor builds the binaries into a temporary folder of the test,
// removed when it ends, and returns the folder; a failed build fails the
// test.
func (b Binaries) BuildFor(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, b.into(dir))
	return dir
}

// into builds the binaries into dir.
func (b Binaries) into(dir string) error {
	goTool, err := GoTool()
	if err != nil {
		return err
	}
	args := []string{"build"}
	if b.Race {
		args = append(args, "-race")
	}
	if len(b.Tags) > 0 {
		args = append(args, "-tags", strings.Join(b.Tags, ","))
	}
	args = append(args, "-o", dir+string(os.PathSeparator))
	for _, p := range b.Packages {
		args = append(args, module+"/"+p)
	}
	if out, err := exec.Command(goTool, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: go %s: %w\n%s", strings.Join(b.Packages, ", "), strings.Join(args, " "), err, out)
	}
	return nil
}

// Main is a TestMain's work for a package whose tests run the binaries:
// it builds them (Build), hands their folder to use, runs the tests and
// removes the folder. It returns the code for os.Exit: the tests', or 1
// when the build failed, having written why to report.
func (b Binaries) Main(m *testing.M, report io.Writer, use func(dir string)) int {
	dir, err := b.Build()
	if err != nil {
		fmt.Fprintln(report, err)
		return 1
	}
	defer os.RemoveAll(dir)
	use(dir)
	return m.Run()
}

// WriteFile writes content to the file rel below dir, making its folders.
func WriteFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

// Env is this process's environment without what would steer the cairn
// under test from outside (CAIRN_* settings, TASK_ENDPOINTS,
// VLLM_BASE_URL), with extra added: the environment a test runs cairn in.
func Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TASK_ENDPOINTS=") && !strings.HasPrefix(kv, "VLLM_BASE_URL=") && !strings.HasPrefix(kv, "CAIRN_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// Run runs cmd to its end and returns its exit status and its output
// (standard output and error together); a command that cannot start
// fails the test.
func Run(t testing.TB, cmd *exec.Cmd) (int, string) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err, "%s", out)
	return 0, string(out)
}

// WaitFor polls cond every 10 ms until it holds, and fails the test,
// naming what it waited for and how long, when limit passes first.
func WaitFor(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ProcGone reports whether process pid has ended (a zombie, ended but not
// yet reaped, counts as ended). It reads /proc: Linux only.
func ProcGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The command name is in parentheses and may hold any byte: the
	// state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// FreePort is a loopback port no one listens on now (the kernel's pick).
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreePorts is the first of n consecutive loopback ports no one listens
// on now, from a base that differs between test processes.
func FreePorts(t testing.TB, n int) int {
	t.Helper()
	for base := 20000 + os.Getpid()%20000; base < 60000; base += n + 7 {
		ok := true
		for p := base; p < base+n && ok; p++ {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				continue
			}
			ln.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free ports")
	return 0
}
