//go:build linux

package main

import (
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal and returns its terminal end (what a
// program's output is when run in a terminal); both ends close when the
// test ends.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { tty.Close() })
	return tty
}

// On a terminal, apply redraws a live block and diagnostics have colours,
// unless the output must be plain: TERM=dumb (Emacs' shell, CI log
// viewers) as NO_COLOR and --no-color.
func TestDumbTerminalIsPlain(t *testing.T) {
	tty := openPTY(t)
	for _, c := range []struct {
		env, val string
		noColor  bool
		plain    bool
	}{
		{"TERM", "xterm-256color", false, false},
		{"TERM", "dumb", false, true},
		{"NO_COLOR", "1", false, true},
		{"TERM", "xterm", true, true},
	} {
		t.Setenv("TERM", "xterm")
		t.Setenv("NO_COLOR", "")
		t.Setenv(c.env, c.val)
		a := &app{stdout: tty, stderr: tty, noColor: c.noColor}
		live, width := liveBlock(tty, a.plainTerminal())
		assert.Equal(t, !c.plain, live, "%s=%s --no-color=%t: live block", c.env, c.val, c.noColor)
		assert.Equal(t, !c.plain, a.color(), "%s=%s --no-color=%t: colours", c.env, c.val, c.noColor)
		if live {
			assert.NotNil(t, width)
		}
	}
}
