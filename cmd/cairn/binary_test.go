package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
)

// These tests run the cairn binary, built for the test: what a process
// sees that an in-process run cannot (a pipe closed under it, another
// user's permissions).

// nobody is the user the permission tests run cairn as.
const nobody = 65534

// cairnBinary builds cairn into a folder every user may read, and returns
// its path; -short skips the test.
func cairnBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the cairn binary")
	}
	dir := e2etest.Binaries{Packages: []string{"cmd/cairn"}}.BuildFor(t)
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o755))
	}
	return filepath.Join(dir, "cairn")
}

// sharedFolder is a new folder every user may write in, removed when the
// test ends.
func sharedFolder(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cairn-shared-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o777))
	return dir
}

// asNobody runs bin with args as the user nobody, in dir, and returns its
// exit status and output; it skips the test unless it runs as root.
func asNobody(t *testing.T, dir, bin string, args ...string) (int, string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("runs cairn as another user: needs root")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = e2etest.Env("HOME=" + dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	return e2etest.Run(t, cmd)
}

// As another user: a file that user may not write is refused even where
// its folder lets them rename over it, and a file in a folder they may
// not write is refused naming that folder, not a temporary file.
func TestFmtAsAnotherUser(t *testing.T) {
	bin := cairnBinary(t)
	ugly := "stage \"command\" \"x\" {\nrun=[\"echo\",\"hi\"]\n}\n"
	shared := sharedFolder(t)
	require.NoError(t, os.WriteFile(filepath.Join(shared, "root.hcl"), []byte(ugly), 0o644))
	code, out := asNobody(t, shared, bin, "fmt", "root.hcl")
	assert.Equal(t, exitFailed, code, out)
	assert.Contains(t, out, "cannot rewrite root.hcl: it is read-only (mode 0644, owner root)")
	fi, err := os.Stat(filepath.Join(shared, "root.hcl"))
	require.NoError(t, err)
	assert.Equal(t, uint32(0), fi.Sys().(*syscall.Stat_t).Uid, "still root's file")
	b, _ := os.ReadFile(filepath.Join(shared, "root.hcl"))
	assert.Equal(t, ugly, string(b))

	ro := filepath.Join(shared, "ro")
	require.NoError(t, os.Mkdir(ro, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ro, "mine.hcl"), []byte(ugly), 0o644))
	require.NoError(t, os.Chown(filepath.Join(ro, "mine.hcl"), nobody, nobody))
	code, out = asNobody(t, shared, bin, "fmt", "ro/mine.hcl")
	assert.Equal(t, exitFailed, code, out)
	assert.Contains(t, out, "cannot rewrite ro/mine.hcl: its folder ro is not writable")
	assert.NotContains(t, out, ".tmp")
}

// firstLineThenClose starts cmd, reads the first line of its standard
// output and closes the pipe, as head -1 does; the caller waits for cmd.
func firstLineThenClose(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.NoError(t, out.Close())
	return line
}

// cairn apply | head: the reader of standard output goes away after the
// first line, and the run goes on to its end, its nodes unharmed, with
// its own exit code (it died of SIGPIPE, exit 141, killing the slow node).
func TestApplyOutlivesAClosedPipe(t *testing.T) {
	bin := cairnBinary(t)
	root := cliWorkspace(t, map[string]string{"p.hcl": `stage "command" "fast" {
  run     = ["sh", "-c", "echo fast > fast.txt"]
  outputs = ["fast.txt"]
}
stage "command" "slow" {
  run     = ["sh", "-c", "sleep 1; echo slow > slow.txt"]
  outputs = ["slow.txt"]
}
`})
	cmd := exec.Command(bin, "apply", "p.hcl")
	cmd.Dir = root
	cmd.Env = e2etest.Env("CAIRN_NO_FSYNC=1")
	assert.Contains(t, firstLineThenClose(t, cmd), "cairn apply:")
	assert.NoError(t, cmd.Wait(), "the apply ends with its own exit code, 0")
	assert.FileExists(t, filepath.Join(root, "slow.txt"), "the slow node ran to its end")
	r := runCLI(t, "--chdir", root, "status")
	assert.Regexp(t, `\sok\s+2\s`, r.stdout, "the run is recorded ok, both nodes done")
}

// cairn plan | head -1: the reader has the line it wanted and goes away;
// plan ends quietly, exit 0, as the other tools of such a pipeline do (it
// said "Error: write /dev/stdout: broken pipe" and exited 1).
func TestPlanIntoAClosedPipeIsQuiet(t *testing.T) {
	bin := cairnBinary(t)
	var stages strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&stages, "stage \"command\" \"s%d\" {\n  run = [\"true\", \"%d\"]\n}\n", i, i)
	}
	root := cliWorkspace(t, map[string]string{"p.hcl": stages.String()})
	cmd := exec.Command(bin, "plan", "p.hcl")
	cmd.Dir = root
	cmd.Env = e2etest.Env()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	assert.Contains(t, firstLineThenClose(t, cmd), "cairn plan:")
	assert.NoError(t, cmd.Wait(), stderr.String())
	assert.Empty(t, stderr.String())
}

// A cache another user may not write: apply, gc and report say that the
// cache is not writable by them, name the flag and point at its owner and
// group, never at the disk's room, a package's name or a temporary file.
func TestReadOnlyCacheSaysWhy(t *testing.T) {
	bin := cairnBinary(t)
	ws := sharedFolder(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "p.hcl"), []byte("stage \"command\" \"a\" {\n  run = [\"echo\", \"hi\"]\n}\n"), 0o644))
	cache := filepath.Join(filepath.Dir(ws), filepath.Base(ws)+"-cache")
	t.Cleanup(func() { _ = os.RemoveAll(cache) })
	r := runCLI(t, "--chdir", ws, "--cache", cache, "apply", "p.hcl") // root's cache
	require.Equal(t, exitOK, r.code, r.stderr)
	require.NoError(t, os.Chmod(cache, 0o755))

	code, out := asNobody(t, ws, bin, "--cache", cache, "apply", "p.hcl")
	assert.Equal(t, exitFailed, code, out)
	assert.Contains(t, out, "you may not write in the cache folder "+cache)
	assert.Contains(t, out, "Sharing a cache")
	assert.NotContains(t, out, "make room")

	code, out = asNobody(t, ws, bin, "--cache", cache, "gc")
	assert.Equal(t, exitFailed, code, out)
	assert.Contains(t, out, "you may not write in --cache "+cache)
	assert.NotContains(t, out, "wal:")

	code, out = asNobody(t, ws, bin, "--cache", cache, "report")
	assert.Equal(t, exitFailed, code, out)
	assert.Contains(t, out, "give --out FILE to write it elsewhere")
	assert.NotContains(t, out, ".tmp")
}
