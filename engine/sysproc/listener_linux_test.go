package sysproc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The listener on a port is the group's when a process of the group
// holds its socket, and another program's otherwise, named by its pid
// and command line; a port nothing listens on names no one.
func TestForeignListenerTellsWhoseSocketListens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	f, err := ln.(*net.TCPListener).File()
	require.NoError(t, err)

	// A child in a group of its own, holding the socket.
	child := exec.Command("sleep", "60")
	child.ExtraFiles = []*os.File{f}
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })

	// This process holds it too: another program, for the child's group.
	other := ForeignListener(port, child.Process.Pid)
	assert.Contains(t, other, fmt.Sprintf("pid %d (", os.Getpid()))

	// Only the child holds it now: the group's own.
	require.NoError(t, f.Close())
	require.NoError(t, ln.Close())
	assert.Empty(t, ForeignListener(port, child.Process.Pid))
	// So it is for this process's group: the child descends from it.
	assert.Empty(t, ForeignListener(port, os.Getpid()))
	// For a group it is not of, the child is the other program.
	assert.Equal(t, fmt.Sprintf("pid %d (sleep 60)", child.Process.Pid), ForeignListener(port, 1<<30))

	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	assert.Empty(t, ForeignListener(port, os.Getpid()), "nothing listens")
}
