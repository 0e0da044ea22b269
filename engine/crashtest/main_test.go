package crashtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/syncbuf"
)

// cairnBin is the cairn binary built for this test run.
var cairnBin string

func TestMain(m *testing.M) {
	// The crash points (engine/failpoint) are in a build with this tag
	// only: a release build has none.
	b := e2etest.Binaries{Packages: []string{"cmd/cairn"}, Tags: []string{"cairn_failpoints"}}
	os.Exit(b.Main(m, os.Stderr, func(dir string) { cairnBin = filepath.Join(dir, "cairn") }))
}

// ws is a workspace with a pipeline file and its own cache folder.
type ws struct {
	t     *testing.T
	root  string
	cache string
	// env is added to every cairn started in this workspace.
	env []string
}

func newWS(t *testing.T, pipeline string) *ws {
	t.Helper()
	root := t.TempDir()
	// Resolve symlinks so that /proc cwd links compare equal.
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	w := &ws{t: t, root: root, cache: filepath.Join(root, ".cairn")}
	w.write("pipeline.hcl", pipeline)
	t.Cleanup(func() { killWorkspaceProcs(root) })
	return w
}

func (w *ws) path(rel string) string { return filepath.Join(w.root, rel) }

func (w *ws) write(rel, content string) {
	w.t.Helper()
	e2etest.WriteFile(w.t, w.root, rel, content)
}

func (w *ws) read(rel string) string {
	w.t.Helper()
	b, err := os.ReadFile(w.path(rel))
	require.NoError(w.t, err)
	return string(b)
}

// exists reports whether a workspace file exists.
func (w *ws) exists(rel string) bool {
	_, err := os.Stat(w.path(rel))
	return err == nil
}

// countLines is the number of lines of a workspace file (0 if missing):
// the workloads append one line per completed execution.
func (w *ws) countLines(rel string) int {
	b, err := os.ReadFile(w.path(rel))
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// baseEnv is the environment of every cairn the tests start: no GPUs, a
// private lease folder, no colours.
func (w *ws) baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CAIRN_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "CAIRN_GPUS=none", "CAIRN_LEASE_DIR="+filepath.Join(w.root, ".leases"), "NO_COLOR=1")
}

// command builds a cairn invocation in this workspace (--chdir root, the
// workspace's cache unless args name another), with extra environment.
func (w *ws) command(extraEnv []string, args ...string) *exec.Cmd {
	full := append([]string{"--chdir", w.root}, args...)
	cmd := exec.Command(cairnBin, full...)
	cmd.Dir = w.root
	cmd.Env = append(append(w.baseEnv(), w.env...), extraEnv...)
	return cmd
}

type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// run runs cairn to its end (at most two minutes).
func (w *ws) run(extraEnv []string, args ...string) result {
	w.t.Helper()
	cmd := w.command(extraEnv, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(w.t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		w.t.Fatalf("cairn %s did not end within two minutes\n%s\n%s", strings.Join(args, " "), out.String(), errb.String())
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

// apply runs `cairn apply` and returns its result.
func (w *ws) apply(args ...string) result {
	w.t.Helper()
	return w.run(nil, append([]string{"apply"}, args...)...)
}

// started is a cairn running in the background.
type started struct {
	cmd      *exec.Cmd
	out, err *syncbuf.Buffer
	done     chan struct{}
	res      result
}

func (w *ws) start(extraEnv []string, args ...string) *started {
	w.t.Helper()
	return w.startWith("", extraEnv, args...)
}

// startWith is start, with cairn run by the program wrapper (nohup, say:
// wrapper CAIRN ARGS...); "" runs it alone.
func (w *ws) startWith(wrapper string, extraEnv []string, args ...string) *started {
	w.t.Helper()
	cmd := w.command(extraEnv, args...)
	if wrapper != "" {
		cmd.Args = append([]string{wrapper, cmd.Path}, cmd.Args[1:]...)
		cmd.Path = wrapper
	}
	s := &started{cmd: cmd, out: &syncbuf.Buffer{}, err: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.out, s.err
	require.NoError(w.t, cmd.Start())
	go func() {
		_ = cmd.Wait()
		s.res = result{code: cmd.ProcessState.ExitCode(), stdout: s.out.String(), stderr: s.err.String()}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			s.res.code = -int(ws.Signal())
		}
		close(s.done)
	}()
	w.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.done
	})
	return s
}

// wait waits for a started cairn (at most two minutes).
func (s *started) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.done
		t.Fatalf("cairn did not end within two minutes\n%s", s.res)
	}
	return s.res
}

// runs returns the cache's runs, oldest first.
func (w *ws) runs() []*runlog.RunInfo {
	w.t.Helper()
	runs, err := runlog.List(w.cache)
	require.NoError(w.t, err)
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID < runs[j].ID })
	return runs
}

// lastRun returns the newest run.
func (w *ws) lastRun() *runlog.RunInfo {
	w.t.Helper()
	runs := w.runs()
	require.NotEmpty(w.t, runs)
	return runs[len(runs)-1]
}

// entries returns a run's journal records of type typ for node addr ("" for
// every node).
func entries(ri *runlog.RunInfo, typ, addr string) []runlog.Entry {
	var out []runlog.Entry
	for _, e := range ri.Entries {
		if e.T == typ && (addr == "" || e.Node == addr) {
			out = append(out, e)
		}
	}
	return out
}

// openCache opens the cache to look at it (no fsync; nothing is written
// unless a record is unreadable).
func (w *ws) openCache(dir string) *store.Cache {
	w.t.Helper()
	c, err := store.Open(dir, store.Options{NoSync: true})
	require.NoError(w.t, err)
	return c
}

// proc is a live process seen in /proc.
type proc struct {
	pid   int
	start uint64
	cmd   string
}

// workspaceProcs lists live (not zombie) processes whose working directory
// is root or below it, or whose command line names root, other than this
// test process.
func workspaceProcs(root string) []proc {
	ents, _ := filepath.Glob("/proc/[0-9]*")
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(filepath.Base(e))
		if err != nil || pid == os.Getpid() {
			continue
		}
		stat, err := os.ReadFile(e + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 20 || string(f[0]) == "Z" || string(f[0]) == "X" {
			continue
		}
		start, _ := strconv.ParseUint(string(f[19]), 10, 64)
		cmdline, _ := os.ReadFile(e + "/cmdline")
		cwd, _ := os.Readlink(e + "/cwd")
		in := cwd == root || strings.HasPrefix(cwd, root+"/") || bytes.Contains(cmdline, []byte(root))
		if !in {
			continue
		}
		out = append(out, proc{pid: pid, start: start, cmd: strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")})
	}
	return out
}

// killWorkspaceProcs kills whatever a failed test left running.
func killWorkspaceProcs(root string) {
	for _, p := range workspaceProcs(root) {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// waitProc waits until a workspace process's command line starts with
// prefix.
func (w *ws) waitProc(prefix string) {
	w.t.Helper()
	e2etest.WaitFor(w.t, "a process "+prefix, 30*time.Second, func() bool {
		for _, p := range workspaceProcs(w.root) {
			if strings.HasPrefix(p.cmd, prefix) {
				return true
			}
		}
		return false
	})
}
