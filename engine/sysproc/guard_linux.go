package sysproc

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A parent-death signal reaches only the process cairn started: a child
// that process started (vLLM's engine core, a launcher's server) outlives a
// cairn killed with SIGKILL, still in the process group, still holding its
// port and GPU memory. A guarded process is started as cairn itself, run
// again in a hidden mode (GuardedArg): in the process cairn started (the
// leader of its own group, with cairn's parent-death signal), it starts a
// guard in the same group, then executes the command, which keeps that
// pid, its exit status and the descriptors cairn gave it. The guard (cairn
// in another hidden mode, GuardArg) watches cairn and the command: once
// cairn's process has ended (a kill -9 included; the command may have
// ended with it, by its parent-death signal), it sends the group SIGTERM,
// then SIGKILL once the grace has passed or sooner when nothing of the
// group is left but itself, and ends with it; when the command ends while
// cairn lives, it ends once nothing of the group is left but itself
// (cairn ends the group, as for any node). Signals sent to the group (a
// stop) are the command's: the guard ignores them.

// GuardedArg and GuardArg are the hidden first arguments that make a
// binary linking this package a guarded command's start or its guard:
//
//	GuardedArg CAIRN-PID GRACE FILES -- PATH ARGV0 ARGS...
//	GuardArg CAIRN-PID COMMAND-PID GRACE
const (
	GuardedArg = "__cairn_guarded"
	GuardArg   = "__cairn_guard"
)

func init() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case GuardedArg:
		os.Exit(guarded(os.Args[2:]))
	case GuardArg:
		os.Exit(guard(os.Args[2:]))
	}
}

// Guarded returns how to start the command path (with argv, keeping files
// extra descriptors from 3 on) guarded, so that its whole process group
// ends, with grace between SIGTERM and SIGKILL, when cairn's process ends:
// this binary's path, its arguments, and the process attributes.
func Guarded(path string, argv []string, files int, grace time.Duration) (string, []string, *syscall.SysProcAttr, bool) {
	args := append([]string{"cairn", GuardedArg, strconv.Itoa(os.Getpid()), grace.String(), strconv.Itoa(files), "--", path}, argv...)
	return "/proc/self/exe", args, Group(), true
}

// guarded starts the guard and executes the command in its place; it
// returns only when it cannot.
func guarded(args []string) int {
	if len(args) < 6 || args[3] != "--" {
		fmt.Fprintf(os.Stderr, "cairn: usage: %s CAIRN-PID GRACE FILES -- PATH ARGV0 [ARGS...]\n", GuardedArg)
		return 2
	}
	parent, err1 := strconv.Atoi(args[0])
	files, err2 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil || os.Getppid() != parent {
		return 1 // cairn ended before the command started
	}
	path, argv := args[4], args[5:]
	// The group the guard ends is the command's own (cairn starts it as
	// its leader already).
	_ = syscall.Setpgid(0, 0)
	// The guard keeps none of the command's descriptors (the lease's, the
	// key lock's): they are closed in it, kept in the command.
	for fd := 3; fd < 3+files; fd++ {
		syscall.CloseOnExec(fd)
	}
	// The guard writes nothing: once cairn has ended, the command's
	// standard streams are pipes no one reads.
	g := &exec.Cmd{Path: "/proc/self/exe", Args: []string{"cairn", GuardArg, args[0], strconv.Itoa(os.Getpid()), args[1]}}
	if err := g.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "cairn: cannot start the guard of %s: %s\n", path, err)
		return 127
	}
	for fd := 3; fd < 3+files; fd++ {
		if _, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETFD, 0); e != 0 {
			fmt.Fprintf(os.Stderr, "cairn: cannot keep descriptor %d for %s: %s\n", fd, path, e)
			return 127
		}
	}
	err := syscall.Exec(path, argv, syscall.Environ())
	fmt.Fprintf(os.Stderr, "cairn: cannot start %s: %s\n", path, err)
	return 127
}

// guard watches cairn and the command: it ends the command's group when
// cairn's process has ended, and ends itself when the command has ended
// while cairn lives (cairn then ends the group).
func guard(args []string) int {
	if len(args) != 3 {
		fmt.Fprintf(os.Stderr, "cairn: usage: %s CAIRN-PID COMMAND-PID GRACE\n", GuardArg)
		return 2
	}
	parent, err1 := strconv.Atoi(args[0])
	cmd, err2 := strconv.Atoi(args[1])
	grace, err3 := time.ParseDuration(args[2])
	if err1 != nil || err2 != nil || err3 != nil {
		fmt.Fprintf(os.Stderr, "cairn: guard: bad arguments %q\n", args)
		return 2
	}
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
	// cairn is known by its start time too: its pid may be another
	// process's once it has ended.
	born := startTime(strconv.Itoa(parent))
	cairnLives := func() bool { return born != "" && startTime(strconv.Itoa(parent)) == born }
	commandLives := func() bool { return startTime(strconv.Itoa(cmd)) != "" }
	pg := syscall.Getpgrp()
	othersLeft := func() bool { return othersInGroup(pg) }
	for {
		switch watchTurn(cairnLives, commandLives, othersLeft) {
		case endTheGroup:
			endGroup(grace)
		case leave:
			return 0
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// guardAction is what the guard does after a turn of its watch.
type guardAction int

const (
	keepWatching guardAction = iota
	endTheGroup
	leave
)

// watchTurn is one turn of the guard's watch, from whether cairn and the
// command live and whether anything of the group is left but the guard.
func watchTurn(cairnLives, commandLives, othersLeft func() bool) guardAction {
	if !cairnLives() {
		return endTheGroup
	}
	if commandLives() {
		return keepWatching
	}
	// The command has ended. cairn's end ends it too (by its parent-death
	// signal), possibly just after cairn was seen alive above: the guard
	// that left then left the command's children running. cairn is looked
	// at again, after the command.
	if !cairnLives() {
		return endTheGroup
	}
	// The command ended while cairn lives: cairn ends the group, as it
	// does for any node. Until nothing of the group is left but the guard,
	// it still watches cairn, whose end it would then follow.
	if othersLeft() {
		return keepWatching
	}
	return leave
}

// startTime is live process pid's start time (from /proc, in clock ticks
// since boot); "" once it has ended (a zombie has).
func startTime(pid string) string {
	f, ok := statFields(pid)
	if !ok || f[0] == "Z" || len(f) < 20 {
		return ""
	}
	return f[19]
}

// statFields are the fields of /proc/PID/stat after the command name
// (STATE PPID PGRP ...), which is in parentheses and may hold any byte.
func statFields(pid string) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	f := strings.Fields(s[i+1:])
	return f, len(f) >= 3
}

// endGroup ends this process's group, itself last: SIGTERM, then SIGKILL
// once grace has passed or nothing but this process is left.
func endGroup(grace time.Duration) {
	pg := syscall.Getpgrp()
	_ = syscall.Kill(-pg, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && othersInGroup(pg) {
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-pg, syscall.SIGKILL)
	os.Exit(1) // not reached: SIGKILL reaches this process too
}

// othersInGroup reports whether a live process other than this one is in
// process group pg.
func othersInGroup(pg int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		f, ok := statFields(e.Name())
		if !ok || f[0] == "Z" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pg {
			return true
		}
	}
	return false
}
