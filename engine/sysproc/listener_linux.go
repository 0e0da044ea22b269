package sysproc

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ForeignListener names the process listening on TCP port when it is none
// of process group pgid's (a server's replica, the leader of its group)
// nor a descendant of pgid: "pid 4242 (cairn-sim-model --port 19000)". It
// is "" when the group's own process listens, when nothing does, and when
// /proc cannot tell (no listening socket in this network namespace's
// tables, or its holder is a process this user may not look into).
//
// A server answering on the port proves nothing by itself: another
// program may hold the port (bound between the port's check and the
// server's start, or after the server died), and its answers would be
// taken for the replica's.
func ForeignListener(port, pgid int) string {
	inodes := listenInodes(port)
	if len(inodes) == 0 {
		return ""
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return ""
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !holdsSocket(e.Name(), inodes) || inTree(pid, pgid) {
			continue
		}
		return fmt.Sprintf("pid %d (%s)", pid, commandLine(e.Name()))
	}
	return ""
}

// listenInodes are the inodes of the sockets listening on port, from
// /proc/net/tcp and tcp6 (state 0A).
func listenInodes(port int) map[string]bool {
	want := fmt.Sprintf(":%04X", port)
	out := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) > 9 && fs[3] == "0A" && strings.HasSuffix(fs[1], want) && fs[9] != "0" {
				out[fs[9]] = true
			}
		}
		f.Close()
	}
	return out
}

// holdsSocket reports whether process pid has a descriptor open on one of
// the sockets inodes names; false where its descriptors cannot be read.
func holdsSocket(pid string, inodes map[string]bool) bool {
	dir := "/proc/" + pid + "/fd/"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		l, err := os.Readlink(dir + fd.Name())
		if err != nil {
			continue
		}
		if in, ok := strings.CutPrefix(l, "socket:["); ok && inodes[strings.TrimSuffix(in, "]")] {
			return true
		}
	}
	return false
}

// inTree reports whether pid is in process group pgid, or descends from
// its leader (a child that left the group, setsid).
func inTree(pid, pgid int) bool {
	for range 64 {
		if pid == pgid {
			return true
		}
		f, ok := statFields(strconv.Itoa(pid))
		if !ok {
			return false
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			return true
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil || ppid <= 1 {
			return false
		}
		pid = ppid
	}
	return false
}

// commandLine is process pid's command line, shortened for a message.
func commandLine(pid string) string {
	b, _ := os.ReadFile("/proc/" + pid + "/cmdline")
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if s == "" {
		return "command unknown"
	}
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}
