package executor

import (
	"bytes"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// procStat reads a process's pgid and start time (clock ticks after boot)
// from /proc/PID/stat. A zombie (dead, waiting for its parent to collect
// it) is not ok: it runs nothing and holds nothing, and where no init
// collects orphans it stays forever.
func procStat(pid int) (pgid int, start uint64, ok bool) {
	// One open, read and close, into a buffer on the stack: this runs for
	// every node a local apply starts (its reference's start time), where
	// os.ReadFile's stat, poller registration and growing buffer cost
	// more than the read. The line is far shorter than the buffer: 52
	// numbers and a command name of at most 16 bytes.
	var buf [2048]byte
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, false
	}
	n, err := syscall.Read(fd, buf[:])
	for err == syscall.EINTR {
		n, err = syscall.Read(fd, buf[:])
	}
	syscall.Close(fd)
	if err != nil || n <= 0 || n == len(buf) {
		return 0, 0, false
	}
	b := buf[:n]
	// The command name is in parentheses and may hold spaces: parse after
	// the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); pgid is field 5, starttime field 22.
	if len(f) < 20 {
		return 0, 0, false
	}
	if st := string(f[0]); st == "Z" || st == "X" {
		return 0, 0, false
	}
	g, err1 := strconv.Atoi(string(f[2]))
	s, err2 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return g, s, true
}

// ProcStartTicks returns a process's start time in clock ticks after boot,
// or 0 when it cannot be read. With the pid it identifies a process across
// pid reuse.
func ProcStartTicks(pid int) uint64 {
	_, s, _ := procStat(pid)
	return s
}

// groupMembers lists live processes of process group pgid that started at
// or after start (a node's leftovers, not an unrelated process that reused
// the number).
func groupMembers(pgid int, start uint64) []int {
	ents, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(filepath.Base(e))
		if err != nil {
			continue
		}
		g, s, ok := procStat(pid)
		if !ok || g != pgid || s < start {
			continue
		}
		if pid == pgid && s != start {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// ReapGroup kills what is left of a node's process group after cairn died
// and waits (up to wait) for it to go. It returns the processes it
// found.
func ReapGroup(pgid int, start uint64, wait time.Duration) []int {
	members := groupMembers(pgid, start)
	if len(members) == 0 {
		return nil
	}
	for _, pid := range members {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if len(groupMembers(pgid, start)) == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return members
}
