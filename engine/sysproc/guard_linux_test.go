package sysproc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
)

// guardedSh is sh -c script started guarded by this test process, as the
// local executor starts a replica, with files from descriptor 3 on.
func guardedSh(t *testing.T, script string, files ...*os.File) *exec.Cmd {
	t.Helper()
	path, args, attr, ok := Guarded("/bin/sh", []string{"sh", "-c", script}, len(files), time.Second)
	require.True(t, ok)
	return &exec.Cmd{Path: path, Args: args, SysProcAttr: attr, ExtraFiles: files}
}

func readInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// The guarded command runs in the process started: its pid, its exit
// status (or the signal that ended it), the descriptors it was given.
func TestGuardedCommandKeepsItsProcess(t *testing.T) {
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "fd3"))
	require.NoError(t, err)
	defer out.Close()
	cmd := guardedSh(t, "echo $$ > "+dir+"/pid; echo kept >&3; exit 3", out)
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, ee.ExitCode())
	assert.Equal(t, cmd.Process.Pid, readInt(t, filepath.Join(dir, "pid")))
	b, _ := os.ReadFile(out.Name())
	assert.Equal(t, "kept\n", string(b))

	err = guardedSh(t, "kill -TERM $$").Run()
	require.ErrorAs(t, err, &ee)
	ws := ee.Sys().(syscall.WaitStatus)
	assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGTERM, "ended %v, want by SIGTERM", ws)
}

// A stop sent to the group is the command's to handle; the guard ends
// once the command has.
func TestGuardLeavesAStopToTheCommand(t *testing.T) {
	dir := t.TempDir()
	cmd := guardedSh(t, `trap 'echo stopped > `+dir+`/stopped; exit 7' TERM; touch `+dir+`/up; while :; do sleep 0.05; done`)
	require.NoError(t, cmd.Start())
	e2etest.WaitFor(t, "the command to run", 30*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "up")); return err == nil })
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM))
	var ee *exec.ExitError
	require.ErrorAs(t, cmd.Wait(), &ee)
	assert.Equal(t, 7, ee.ExitCode())
	b, _ := os.ReadFile(filepath.Join(dir, "stopped"))
	assert.Equal(t, "stopped\n", string(b))
	e2etest.WaitFor(t, "the guard to end with the command", 30*time.Second, func() bool { return !othersInGroup(cmd.Process.Pid) })
}

// When the process that started the guarded command (cairn's place) is
// killed with SIGKILL, the guard ends the command's whole group, a child
// of the command included, and itself.
func TestGuardEndsTheGroupWhenCairnEnds(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	inner := `echo $$ > ` + dir + `/command; sleep 300 & echo $! > ` + dir + `/child; wait`
	outer := `"$1" ` + GuardedArg + ` $$ 5s 0 -- /bin/sh sh -c "$2" & wait`
	parent := exec.Command("/bin/sh", "-c", outer, "sh", exe, inner)
	require.NoError(t, parent.Start())
	e2etest.WaitFor(t, "the command's child to start", 30*time.Second, func() bool {
		return readInt(t, filepath.Join(dir, "child")) > 0 && readInt(t, filepath.Join(dir, "command")) > 0
	})
	command, child := readInt(t, filepath.Join(dir, "command")), readInt(t, filepath.Join(dir, "child"))
	t.Cleanup(func() { _ = syscall.Kill(-command, syscall.SIGKILL) })
	pg, err := syscall.Getpgid(child)
	require.NoError(t, err)
	require.Equal(t, command, pg, "the command's child is not in the command's group")
	require.NoError(t, parent.Process.Kill())
	_ = parent.Wait()
	e2etest.WaitFor(t, "every process of the command's group to end", 30*time.Second, func() bool { return !othersInGroup(pg) })
	assert.True(t, e2etest.ProcGone(command) && e2etest.ProcGone(child))
}

// probe answers its answers in turn, then the last one again.
func probe(answers ...bool) func() bool {
	return func() bool {
		a := answers[0]
		if len(answers) > 1 {
			answers = answers[1:]
		}
		return a
	}
}

// A turn of the guard's watch: cairn ended, the group ends; cairn and the
// command live, the guard watches on; the command ended while cairn
// lives, the guard leaves once the group holds nothing else. And cairn
// killed between the guard's look at it and its look at the command,
// which the command's parent-death signal ended with it: the group ends
// (a guard that left there left the command's children running after
// kill -9 of cairn).
func TestGuardTurn(t *testing.T) {
	for _, c := range []struct {
		name                   string
		cairn, command, others func() bool
		want                   guardAction
	}{
		{"cairn ended", probe(false), probe(true), probe(true), endTheGroup},
		{"both live", probe(true), probe(true), probe(true), keepWatching},
		{"cairn ended with the command, after it was seen alive", probe(true, false), probe(false), probe(true), endTheGroup},
		{"cairn ended with the command, nothing else left", probe(true, false), probe(false), probe(false), endTheGroup},
		{"the command ended, cairn lives, children left", probe(true, true), probe(false), probe(true), keepWatching},
		{"the command ended, cairn lives, nothing left", probe(true, true), probe(false), probe(false), leave},
	} {
		assert.Equal(t, c.want, watchTurn(c.cairn, c.command, c.others), c.name)
	}
}
