package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/syncbuf"
	"github.com/cairn-run/cairn/ui"
)

// Runs that ended are looked at once: the next apply starts after them.
func TestSettledRunsAreNotReadAgain(t *testing.T) {
	w := newWorkspace(t, twoStage)
	first := w.apply(ApplyOptions{}).res.RunID
	second := w.apply(ApplyOptions{}).res.RunID
	b, err := os.ReadFile(filepath.Join(w.Cache, "runs", "settled"))
	require.NoError(t, err)
	assert.Equal(t, first+"\n", string(b), "the second apply found the first one ended")

	// A run folder that looks killed mid-node: read, it is reported.
	fake := func(id string) {
		j, err := runlog.Open(w.Cache, id, true)
		require.NoError(t, err)
		require.NoError(t, j.Write(runlog.Entry{T: runlog.RunStart, RunID: id, Pipeline: "t", PID: 1}))
		require.NoError(t, j.Write(runlog.Entry{T: runlog.Started, Node: `stage.make["a"]`, Key: "k"}))
		require.NoError(t, j.Close()) // no run_end: as if killed
	}
	// Older than the settled mark: not looked at.
	fake(first[:len(first)-6] + "000000")
	r := w.apply(ApplyOptions{})
	assert.NotContains(t, r.out, "were running when an earlier apply stopped", r.out)
	b, err = os.ReadFile(filepath.Join(w.Cache, "runs", "settled"))
	require.NoError(t, err)
	assert.Greater(t, r.res.RunID, second)
	assert.Equal(t, second+"\n", string(b))

	// Newer than it, and than the last apply (a run id made now may share
	// that apply's millisecond and sort before it): looked at, and
	// reported.
	fake(r.res.RunID[:len(r.res.RunID)-6] + "zzzzzz")
	r = w.apply(ApplyOptions{})
	assert.Contains(t, r.out, `were running when an earlier apply stopped: stage.make["a"]`, r.out)
}

// A dead run's nodes in flight are ended through the executor their
// started record names: a record with a job reference, and one written
// before job references (pid, pgid and proc_start alone), which names a
// local process group.
func TestRecoverEndsJobsOfOldAndNewRecords(t *testing.T) {
	w := newWorkspace(t, twoStage)
	last := w.apply(ApplyOptions{}).res.RunID
	group := func() *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	old, now := group(), group()
	oldPID, nowPID := old.Process.Pid, now.Process.Pid
	newRef := executor.LocalRef(nowPID, executor.ProcStartTicks(nowPID))
	id := last[:len(last)-6] + "zzzzzz"
	j, err := runlog.Open(w.Cache, id, true)
	require.NoError(t, err)
	require.NoError(t, j.Write(runlog.Entry{T: runlog.RunStart, RunID: id, Pipeline: "t", PID: 1}))
	require.NoError(t, j.Write(runlog.Entry{T: runlog.Started, Node: `stage.make["a"]`, Key: "k", PID: oldPID, PGID: oldPID, ProcTick: executor.ProcStartTicks(oldPID)}))
	require.NoError(t, j.Write(runlog.Entry{T: runlog.Started, Node: `stage.make["b"]`, Key: "k2", Job: &newRef}))
	require.NoError(t, j.Close()) // no run_end: as if killed

	r := w.apply(ApplyOptions{})
	assert.Contains(t, r.out, "cairn: killed 2 process(es) left running by interrupted run "+id, r.out)
	for _, cmd := range []*exec.Cmd{old, now} {
		_ = cmd.Wait()
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		assert.Equal(t, syscall.SIGKILL, ws.Signal())
	}
}

func TestLocalRefRoundTrip(t *testing.T) {
	pid, pgid, tick, ok := executor.LocalProcess(executor.LocalRef(123, 456))
	require.True(t, ok)
	assert.Equal(t, []any{123, 123, uint64(456)}, []any{pid, pgid, tick})
	_, _, _, ok = executor.LocalProcess(process.JobRef{Executor: "slurm", ID: "42"})
	assert.False(t, ok)
	assert.Equal(t, "pid 123", executor.Describe(executor.LocalRef(123, 456)))
	assert.Equal(t, "slurm job 42", executor.Describe(process.JobRef{Executor: "slurm", ID: "42"}))
}

// clusterExecutor records the jobs recovery hands it; it runs nodes as
// the local executor does.
type clusterExecutor struct {
	executor.Local
	recovered *[]process.JobRef
}

func (clusterExecutor) Name() string { return "cluster" }

func (x clusterExecutor) Recover(_ context.Context, refs []process.JobRef) []string {
	*x.recovered = append(*x.recovered, refs...)
	var ids []string
	for _, r := range refs {
		ids = append(ids, r.ID)
	}
	return ids
}

// Recovery hands each job to the executor its reference names; a job of
// an executor this apply does not have is named in a warning.
func TestRecoverDispatchesByExecutor(t *testing.T) {
	w := newWorkspace(t, twoStage)
	last := w.apply(ApplyOptions{}).res.RunID
	id := last[:len(last)-6] + "zzzzzz"
	j, err := runlog.Open(w.Cache, id, true)
	require.NoError(t, err)
	job := process.JobRef{Executor: "cluster", ID: "42", Details: map[string]string{"exit_file": "x"}}
	other := process.JobRef{Executor: "elsewhere", ID: "7"}
	require.NoError(t, j.Write(runlog.Entry{T: runlog.RunStart, RunID: id, Pipeline: "t", PID: 1}))
	require.NoError(t, j.Write(runlog.Entry{T: runlog.Started, Node: `stage.make["a"]`, Key: "k", Job: &job}))
	require.NoError(t, j.Write(runlog.Entry{T: runlog.Started, Node: `stage.make["b"]`, Key: "k2", Job: &other}))
	require.NoError(t, j.Close())

	var got []process.JobRef
	r := w.apply(ApplyOptions{Executor: clusterExecutor{recovered: &got}})
	assert.Equal(t, []process.JobRef{job}, got)
	assert.Contains(t, r.out, "cairn: killed 1 process(es) left running by interrupted run "+id, r.out)
	assert.Contains(t, r.out, `warning: cannot end the jobs of executor "elsewhere" left by interrupted run `+id+` (stage.make["b"]): this apply does not use it; their nodes are not run here, and an apply with that executor re-attaches to them`, r.out)
}

// A node whose job a dead run left with an executor this apply does not
// use (a Slurm job, on an apply --executor local) may still run there: the
// apply refuses it rather than run it twice, naming the job and what to
// do, and leaves the run for an apply with that executor, which takes the
// job over. --replace runs the node here.
func TestJobsLeftUnderAnotherExecutorAreNotRunTwice(t *testing.T) {
	for _, replace := range []bool{false, true} {
		t.Run(fmt.Sprintf("replace=%v", replace), func(t *testing.T) {
			w := newWorkspace(t, twoStage)
			const id = "20260101T000000.000Z-zzzzzz"
			j, err := runlog.Open(w.Cache, id, true)
			require.NoError(t, err)
			job := process.JobRef{Executor: "cluster", ID: "42", Details: map[string]string{"exit_file": "x"}}
			require.NoError(t, j.Write(runlog.Entry{T: runlog.RunStart, RunID: id, Pipeline: "t", PID: 1}))
			require.NoError(t, j.Write(runlog.Entry{T: runlog.Started, Node: `stage.make["a"]`, Key: "k", Job: &job}))
			require.NoError(t, j.Close())

			l := w.Load()
			c, err := store.Open(w.Cache, store.Options{NoSync: true})
			require.NoError(t, err)
			p, diags := plan.Make(l.Graph, c, plan.Options{})
			require.False(t, diags.HasErrors(), "%s", diags.Error())
			res, err := Apply(context.Background(), ApplyOptions{Plan: p, Cache: c, NoSync: true, Parallelism: 2})
			require.NoError(t, c.Close())
			require.ErrorIs(t, err, ErrRefused)
			assert.Contains(t, res.Refused, `stage.make["a"] (its job 42 of executor "cluster", left by interrupted run `+id+`, may still be running)`)
			assert.Contains(t, res.Refused, "Apply with the executor that started them (it re-attaches to them)")
			assert.NoFileExists(t, filepath.Join(w.Root, "runs.log"), "nothing ran")

			var r applyRun

			if replace {
				r = w.apply(ApplyOptions{Replace: map[string]bool{`stage.make["a"]`: true}})
				assert.Empty(t, r.res.Refused)
				assert.Equal(t, 0, r.res.Failed, r.out)
				assert.FileExists(t, filepath.Join(w.Root, "out", "a.txt"))
				return
			}
			var got []process.JobRef
			r = w.apply(ApplyOptions{Executor: clusterExecutor{recovered: &got}})
			assert.Equal(t, []process.JobRef{job}, got, "the run was left for the executor's apply to reap")
			assert.Empty(t, r.res.Refused, r.out)
		})
	}
}

// A node waiting for its key's lock while another apply runs it takes
// the lock when that apply dies: the dead run's job for the node (which
// a cluster keeps running) goes to the executor before the node starts,
// so that it re-attaches to that job instead of submitting another.
func TestLockFreedByADeadRunHandsItsJobsOver(t *testing.T) {
	w := newWorkspace(t, twoStage)
	l := w.Load()
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	p, _ := plan.Make(l.Graph, c, plan.Options{})
	var key string
	for _, pn := range p.Nodes {
		if pn.Node.Addr == `stage.make["a"]` {
			key = pn.Key
		}
	}
	require.NotEmpty(t, key)

	// Another apply, alive: it runs stage.make["a"] as a cluster job.
	id := runlog.NewRunID()
	j, err := runlog.Open(w.Cache, id, true)
	require.NoError(t, err)
	job := process.JobRef{Executor: "cluster", ID: "42", Details: map[string]string{"run": id}}
	require.NoError(t, j.Write(runlog.Entry{T: runlog.RunStart, RunID: id, Pipeline: "t", PID: 1}))
	require.NoError(t, j.Write(runlog.Entry{T: runlog.Started, Node: `stage.make["a"]`, Key: key, Job: &job}))
	lk, err := store.TryKeyLock(w.Cache, key)
	require.NoError(t, err)
	require.NotNil(t, lk)

	var got []process.JobRef
	out := &syncbuf.Buffer{}
	done := make(chan *ApplyResult)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		res, err := Apply(ctx, ApplyOptions{Plan: p, Cache: c, Events: ui.NewTerminal(ui.Options{Progress: out}), NoSync: true,
			Parallelism: 2, Executor: clusterExecutor{recovered: &got}})
		assert.NoError(t, err)
		done <- res
	}()
	for !strings.Contains(out.String(), " waits: the same work is running") {
		select {
		case res := <-done:
			t.Fatalf("apply ended before stage.make[\"a\"] waited: %+v\n%s", res, out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	// It dies: its run's lock and the node's lock free at once.
	require.NoError(t, j.Close())
	lk.Release()
	res := <-done
	assert.Equal(t, []process.JobRef{job}, got, out.String())
	assert.Equal(t, 4, res.Ran)
}

// A run interrupted with --leave-jobs ended with its run_end record, its
// nodes failed as interrupted, and their jobs still running: the next
// apply hands those jobs to the executor (which re-attaches to them), and
// not the jobs an interrupt cancelled.
func TestJobsLeftRunningAreRecovered(t *testing.T) {
	w := newWorkspace(t, twoStage)
	last := w.apply(ApplyOptions{}).res.RunID
	id := last[:len(last)-6] + "zzzzzz"
	j, err := runlog.Open(w.Cache, id, true)
	require.NoError(t, err)
	left := process.JobRef{Executor: "cluster", ID: "42", Details: map[string]string{"exit_file": "x"}}
	cancelled := process.JobRef{Executor: "cluster", ID: "43", Details: map[string]string{"exit_file": "y"}}
	require.NoError(t, j.Write(runlog.Entry{T: runlog.RunStart, RunID: id, Pipeline: "t", PID: 1}))
	require.NoError(t, j.Write(runlog.Entry{T: runlog.Started, Node: `stage.make["a"]`, Key: "k", Job: &left}))
	require.NoError(t, j.Write(runlog.Entry{T: runlog.Started, Node: `stage.make["b"]`, Key: "k2", Job: &cancelled}))
	require.NoError(t, j.Write(runlog.Entry{T: runlog.Failed, Node: `stage.make["a"]`, Key: "k", Class: failclass.Interrupted, Left: true}))
	require.NoError(t, j.Write(runlog.Entry{T: runlog.Failed, Node: `stage.make["b"]`, Key: "k2", Class: failclass.Interrupted}))
	require.NoError(t, j.Write(runlog.Entry{T: runlog.RunEnd, Status: "interrupted"}))
	require.NoError(t, j.Close())

	var got []process.JobRef
	w.apply(ApplyOptions{Executor: clusterExecutor{recovered: &got}})
	assert.Equal(t, []process.JobRef{left}, got)
}
