package serve_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine/runlog"
)

// groupMembers are the live processes of process group pg (from /proc;
// zombies have ended).
func groupMembers(pg int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) >= 3 && f[0] != "Z" && f[2] == strconv.Itoa(pg) {
			out = append(out, pid)
		}
	}
	return out
}

// kill -9 of cairn while it serves, with a server whose work runs in a
// child of the replica's process (as vLLM's engine core, or a launcher's
// server, does): no process of the replica's group survives, the child
// included, without waiting for another apply.
func TestServeKill9LeavesNoServerChild(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc (Linux)")
	}
	w := newWorkspace(t, 40)
	port := e2etest.FreePorts(t, 4)
	script := fmt.Sprintf(`%s --port $CAIRN_SERVE_PORT --model %s --request-log requests.jsonl --latency 300ms & echo $! > child.pid; wait`, simBin, model)
	srv := fmt.Sprintf(`
stage "serve" "tm" {
  run        = ["sh", "-c", %q]
  model      = %q
  replicas   = 1
  port       = %d
  kill_grace = "5s"
}
`, script, model, port)
	f := w.pipeline(srv, evalStageWith("a", "tm", 1, 0))
	cmd, output := w.startLogged("apply", f)
	stopAtEnd(t, cmd)
	pg := 0
	e2etest.WaitFor(t, "the server to serve", 2*time.Minute, func() bool {
		ents, _ := os.ReadDir(filepath.Join(w.cache, "runs"))
		for _, d := range ents {
			es, _ := runlog.Read(filepath.Join(w.cache, "runs", d.Name()))
			served := false
			for _, e := range es {
				if e.T == runlog.Started && e.Node == "stage.tm" && e.PGID > 0 {
					pg = e.PGID
				}
				served = served || e.T == runlog.Serve && e.Status == "serving"
			}
			if served && pg > 0 {
				return true
			}
		}
		return false
	})
	t.Cleanup(func() { _ = syscall.Kill(-pg, syscall.SIGKILL) }) // whatever is left
	b, err := os.ReadFile(filepath.Join(w.dir, "child.pid"))
	require.NoError(t, err, output())
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.Contains(t, groupMembers(pg), child, "the server is not in the replica's group")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	e2etest.WaitFor(t, fmt.Sprintf("every process of the replica's group %d to end after kill -9 of cairn", pg), 30*time.Second, func() bool {
		return len(groupMembers(pg)) == 0
	})
	require.True(t, e2etest.ProcGone(child))
}
