package crashtest

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine/runlog"
)

const victimPipeline = `
pipeline "victim" {}
stage "command" "victim" {
  # The shell waits on a child that holds the log pipes: killing the shell
  # must still end the node at once.
  run     = ["sh", "-c", "sleep 1000; echo done > victim.txt"]
  outputs = ["victim.txt"]
}
stage "command" "after_victim" {
  after   = [stage.victim]
  run     = ["sh", "-c", "echo ran > after_victim.txt"]
  outputs = ["after_victim.txt"]
}
stage "command" "sibling" {
  for_each = toset(["a", "b", "c"])
  run      = ["sh", "-c", "sleep 0.3; echo ${each.key} > sibling_${each.key}.txt"]
  outputs  = ["sibling_${each.key}.txt"]
}
`

// startedPID waits for the journal of the newest run to record addr's
// process and returns its pid.
func (w *ws) startedPID(addr string) int {
	w.t.Helper()
	pid := 0
	e2etest.WaitFor(w.t, addr+" to start", 30*time.Second, func() bool {
		runs, _ := runlog.List(w.cache)
		if len(runs) == 0 {
			return false
		}
		for _, e := range runs[0].Entries {
			if e.T == runlog.Started && e.Node == addr {
				pid = e.PID
				return true
			}
		}
		return false
	})
	return pid
}

// TestKillChild kills one node's process with SIGKILL while the apply runs:
// that node fails with class "killed" (a signal cairn did not send), its
// downstream is skipped, and the rest of the run proceeds and succeeds.
func TestKillChild(t *testing.T) {
	w := newWS(t, victimPipeline)
	p := w.start([]string{"CAIRN_NO_FSYNC=1"}, "apply", "--parallelism", "4")
	pid := w.startedPID(`stage.victim`)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	res := p.wait(t)
	require.Equal(t, 1, res.code, res.String())
	assert.Contains(t, res.stdout, "stage.victim failed (killed)")

	ri := w.lastRun()
	failed := entries(ri, runlog.Failed, "stage.victim")
	require.Len(t, failed, 1, res.String())
	assert.Equal(t, "killed", failed[0].Class)
	assert.Contains(t, failed[0].Message, "killed by signal")
	require.Len(t, entries(ri, runlog.Skipped, "stage.after_victim"), 1)
	for _, k := range []string{"a", "b", "c"} {
		assert.Len(t, entries(ri, runlog.Finished, `stage.sibling["`+k+`"]`), 1, k)
		assert.Equal(t, k+"\n", w.read("sibling_"+k+".txt"))
	}
	assert.False(t, w.exists("after_victim.txt"))
	assert.Empty(t, workspaceProcs(w.root), "the victim's child outlived its node")
}

// TestReapOtherPipelinesLeftovers kills (SIGKILL) an apply whose node left
// a grandchild running, then applies another pipeline on the same cache:
// that apply reaps the dead run's leftovers before it starts.
func TestReapOtherPipelinesLeftovers(t *testing.T) {
	w, env := leftRunning(t)
	res := w.run(env, "apply", "other.hcl")
	require.Equal(t, 0, res.code, res.String())
	assert.Regexp(t, `killed \d process\(es\) left running by interrupted run`, res.stdout)
	assert.Empty(t, workspaceProcs(w.root))
}

// TestGCKeepsTheFolderOfARunLeftRunning: gc keeps the folder of a killed
// run whose node left a process running, and says so: the next apply of
// the cache, of any pipeline, reads there what to stop, and stops it
// (before, gc removed the folder, and the process held its node's locks
// and GPUs until it ended, an apply writing its output waiting behind
// it). Once it is stopped, the next gc removes the folder.
func TestGCKeepsTheFolderOfARunLeftRunning(t *testing.T) {
	w, env := leftRunning(t)
	run := w.lastRun()

	res := w.run(env, "gc", "--older-than", "0s")
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "Kept 1 run folder(s) of interrupted runs whose processes still run ("+run.ID+")")
	assert.DirExists(t, run.Dir)

	res = w.run(env, "apply", "other.hcl")
	require.Equal(t, 0, res.code, res.String())
	assert.Regexp(t, `killed \d process\(es\) left running by interrupted run `+run.ID, res.stdout)
	assert.Empty(t, workspaceProcs(w.root))

	res = w.run(env, "gc", "--older-than", "0s")
	require.Equal(t, 0, res.code, res.String())
	assert.NotContains(t, res.stdout, "whose processes still run")
	assert.NoDirExists(t, run.Dir)
}

// leftRunning kills (SIGKILL) an apply of left.hcl whose node left a
// grandchild running, in a workspace where other.hcl, another pipeline,
// writes one.txt; it returns the workspace and the environment to run
// cairn with.
func leftRunning(t *testing.T) (*ws, []string) {
	t.Helper()
	w := newWS(t, "")
	w.write("counts/.keep", "")
	w.write("left.hcl", holderPipeline("left", true))
	w.write("other.hcl", `
pipeline "other" {}
stage "command" "one" {
  run     = ["sh", "-c", "echo one > one.txt"]
  outputs = ["one.txt"]
}
`)
	env := []string{"CAIRN_NO_FSYNC=1"}
	p := w.start(env, "apply", "left.hcl")
	w.startedPID("stage.held")
	w.waitProc("sleep 1000")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t)
	require.NotEmpty(t, w.leftovers(), "the killed apply left nothing running: nothing to reap")
	return w, env
}

// TestWaiterForAPathFreesItFromALeftover: a process a killed run left
// holding the lock of held.txt, its run folder gone (so no recovery names
// it), is killed by an apply whose node, other work, writes held.txt too:
// it does not wait for it to end.
func TestWaiterForAPathFreesItFromALeftover(t *testing.T) {
	w, env := leftRunning(t)
	run := w.lastRun()
	require.NoError(t, os.RemoveAll(run.Dir))
	w.write("next.hcl", `
pipeline "next" {}
stage "command" "held" {
  run     = ["sh", "-c", "echo next > held.txt"]
  outputs = ["held.txt"]
}
`)
	res := w.run(env, "apply", "next.hcl", "--lock-timeout", "60s")
	require.Equal(t, 0, res.code, res.String())
	assert.Regexp(t, `killed \d process\(es\) left holding stage.held by run `+run.ID+`, which is gone`, res.stdout)
	assert.Equal(t, "next\n", w.read("held.txt"))
	assert.Empty(t, workspaceProcs(w.root))
}

// TestReapCountsEachProcessOnce kills (SIGKILL) an apply whose node left
// 16 processes running, each holding the node's lock and in its process
// group: the next apply kills them and says 16, not once per way it found
// one. A process killed as a lock holder may still be there when the
// group is looked at; CAIRN_TEST_LATE_LOCK_KILLS makes that so every time,
// so that each of the 16 is found both ways.
func TestReapCountsEachProcessOnce(t *testing.T) {
	w := newWS(t, "")
	w.write("two.hcl", `
pipeline "two" {}
stage "command" "held" {
  run = ["sh", "-c", "for i in $(seq 16); do sleep 1000 & done; wait"]
}
`)
	w.write("other.hcl", `
pipeline "other" {}
stage "command" "one" {
  run = ["true"]
}
`)
	env := []string{"CAIRN_NO_FSYNC=1"}
	p := w.start(env, "apply", "two.hcl")
	w.startedPID("stage.held")
	e2etest.WaitFor(t, "the node's 16 sleeps", 30*time.Second, func() bool {
		n := 0
		for _, pr := range workspaceProcs(w.root) {
			if strings.HasPrefix(pr.cmd, "sleep 1000") {
				n++
			}
		}
		return n == 16
	})
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t)
	left := w.leftovers()
	require.Len(t, left, 16, "%v", left)
	res := w.run(append(env, "CAIRN_TEST_LATE_LOCK_KILLS=1"), "apply", "other.hcl")
	require.Equal(t, 0, res.code, res.String())
	assert.Regexp(t, `cairn: killed 16 process\(es\) left running by interrupted run`, res.stdout)
	assert.Empty(t, workspaceProcs(w.root))
}

// TestKillBeforeStartJournaled kills (SIGKILL) an apply after its node's
// process started, and started another, but before the journal names it:
// nothing tells the next apply to reap it, and it holds the node's lock.
// The next apply finds the node's lock held for a dead run, kills the
// leftover before it starts anything, and runs the node.
func TestKillBeforeStartJournaled(t *testing.T) {
	w := newWS(t, holderPipeline("unjournaled", true))
	w.write("counts/.keep", "")
	res := w.run([]string{"CAIRN_TEST_KILL_AFTER_STARTS=1", "CAIRN_TEST_KILL_WHEN=forked"}, "apply")
	require.Equal(t, -1, res.code, res.String()) // killed by a signal
	require.Empty(t, entries(w.lastRun(), runlog.Started, "stage.held"), "the start was journaled")
	left := w.leftovers()
	require.NotEmpty(t, left, "nothing was left running")
	w.write("go", "")
	res = w.apply()
	require.Equal(t, 0, res.code, res.String())
	assert.Regexp(t, `killed \d process\(es\) left running by interrupted run`, res.stdout)
	assert.Equal(t, 1, w.countLines("counts/held"))
	assert.Empty(t, workspaceProcs(w.root))
}

// leftovers waits for a killed apply's node shell to die with it and
// returns the workspace's processes left running.
func (w *ws) leftovers() []proc {
	w.t.Helper()
	var left []proc
	e2etest.WaitFor(w.t, "the node's shell to die with cairn", 10*time.Second, func() bool {
		left = workspaceProcs(w.root)
		for _, pr := range left {
			// A process with no command line is exiting (its memory
			// gone, not yet a zombie): the shell on its way out.
			if strings.HasPrefix(pr.cmd, "sh ") || pr.cmd == "" {
				return false
			}
		}
		return true
	})
	return left
}
