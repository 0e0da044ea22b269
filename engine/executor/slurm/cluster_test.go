package slurm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/executor/slurm/slurmtest"
)

// slurmCmd runs a Slurm client command for a test, under a timeout.
func slurmCmd(t *testing.T, name string, args ...string) string {
	t.Helper()
	return slurmtest.Call(t, name, args...)
}

// clusterJob is a job whose files live in a test folder.
func clusterJob(t *testing.T, dir, name string, argv ...string) *Job {
	return &Job{
		Node: fmt.Sprintf("stage.t[%q]", name), Attempt: 1, Argv: argv,
		Env: os.Environ(), Dir: dir,
		Stdout: filepath.Join(dir, name+".out"), Stderr: filepath.Join(dir, name+".err"),
		Script: filepath.Join(dir, name+".sbatch"), ExitFile: filepath.Join(dir, name+".exit"),
	}
}

func newClusterClient(t *testing.T) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := New(ctx, "cairn-test-"+strings.ReplaceAll(t.Name(), "/", "-")+"-"+fmt.Sprint(time.Now().UnixNano()), Options{PollInterval: 200 * time.Millisecond, MaxPollInterval: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func waitJob(t *testing.T, c *Client, ref Ref, limit time.Duration) *Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out, err := c.Wait(ctx, ref)
	require.NoError(t, err, "job %s did not end within %s (last state %q)", ref.JobID, limit, c.State(ref.JobID))
	return out
}

func TestClusterGPUJobs(t *testing.T) {
	slurmtest.Need(t)
	t.Parallel()
	c := newClusterClient(t)
	dir := t.TempDir()
	require.False(t, c.Accounting())
	// Two one-GPU jobs run at once on the two fake GPUs, each with its own
	// CUDA_VISIBLE_DEVICES: each waits until the other has started.
	var refs []Ref
	for _, v := range []string{"a", "b"} {
		other := map[string]string{"a": "b", "b": "a"}[v]
		j := clusterJob(t, dir, v, "sh", "-c", fmt.Sprintf(
			`echo "$CUDA_VISIBLE_DEVICES" > %[1]s/%[2]s.gpu; i=0; while [ ! -e %[1]s/%[3]s.gpu ]; do i=$((i+1)); [ $i -gt 600 ] && exit 9; sleep 0.1; done`, dir, v, other))
		j.GPUs = 1
		j.Env = append(j.Env, "CUDA_VISIBLE_DEVICES=7")
		ref, err := c.Submit(context.Background(), j)
		require.NoError(t, err)
		refs = append(refs, ref)
	}
	gpus := map[string]bool{}
	for i, ref := range refs {
		out := waitJob(t, c, ref, 2*time.Minute)
		assert.Equal(t, "COMPLETED", out.State)
		assert.Equal(t, "", out.Class, out.Message)
		b, err := os.ReadFile(filepath.Join(dir, []string{"a", "b"}[i]+".gpu"))
		require.NoError(t, err)
		gpus[strings.TrimSpace(string(b))] = true
	}
	assert.Equal(t, map[string]bool{"0": true, "1": true}, gpus, "each job its own GPU, none pinned by cairn")
}

func TestClusterExitStatus(t *testing.T) {
	slurmtest.Need(t)
	t.Parallel()
	c := newClusterClient(t)
	dir := t.TempDir()
	ref, err := c.Submit(context.Background(), clusterJob(t, dir, "x", "sh", "-c", "echo 'it''s' >&2; exit 3"))
	require.NoError(t, err)
	out := waitJob(t, c, ref, 2*time.Minute)
	assert.Equal(t, "FAILED", out.State)
	assert.Equal(t, failclass.Exit, out.Class)
	require.NotNil(t, out.Exit)
	assert.Equal(t, 3, out.Exit.Status)
	b, _ := os.ReadFile(filepath.Join(dir, "x.err"))
	assert.Contains(t, string(b), "its")
}

func TestClusterCancelledFromOutside(t *testing.T) {
	slurmtest.Need(t)
	t.Parallel()
	c := newClusterClient(t)
	dir := t.TempDir()
	ref, err := c.Submit(context.Background(), clusterJob(t, dir, "x", "sh", "-c", "touch started; sleep 300"))
	require.NoError(t, err)
	waitFile(t, filepath.Join(dir, "started"))
	slurmCmd(t, "scancel", ref.JobID)
	out := waitJob(t, c, ref, 2*time.Minute)
	assert.Equal(t, "CANCELLED", out.State)
	assert.Equal(t, failclass.Killed, out.Class)
}

func TestClusterTimeLimit(t *testing.T) {
	slurmtest.Need(t)
	if testing.Short() {
		t.Skip("a time limit takes at least a minute (Slurm's limits are whole minutes)")
	}
	t.Parallel()
	c := newClusterClient(t)
	dir := t.TempDir()
	j := clusterJob(t, dir, "x", "sleep", "600")
	// Slurm's own limit, with no stage timeout for the script to enforce
	// first: rounded up to Slurm's one minute.
	j.TimeLimit = time.Second
	ref, err := c.Submit(context.Background(), j)
	require.NoError(t, err)
	out := waitJob(t, c, ref, 4*time.Minute)
	assert.Equal(t, "TIMEOUT", out.State)
	assert.Equal(t, failclass.Timeout, out.Class)
	b, _ := os.ReadFile(filepath.Join(dir, "x.err"))
	assert.Contains(t, string(b), "SIGUSR2 from Slurm", "--signal=B:USR2@60 reached the wrapper")
}

func TestClusterRequeue(t *testing.T) {
	slurmtest.Need(t)
	t.Parallel()
	slurmtest.HoldController(t)
	c := newClusterClient(t)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs.log")
	// Each start appends to the node's own execution log; the first run
	// becomes the sleep that waits to be requeued (Slurm signals the job's
	// processes one by one: a shell left to wait for the sleep could see it
	// die first and write "done" before its own signal came), the second
	// ends at once.
	ref, err := c.Submit(context.Background(), clusterJob(t, dir, "x", "sh", "-c",
		fmt.Sprintf(`echo "start ${SLURM_RESTART_COUNT:-0}" >> %[1]s; if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then exec sleep 300; fi; echo done >> %[1]s`, runs)))
	require.NoError(t, err)
	waitFile(t, runs)
	slurmCmd(t, "scontrol", "requeue", ref.JobID)
	// Slurm holds a requeued job back for two minutes: let it start now.
	for i := 0; !strings.Contains(slurmCmd(t, "squeue", "-h", "-t", "all", "-j", ref.JobID, "-o", "%T"), "PENDING"); i++ {
		require.Less(t, i, 600, "the requeued job is not pending within a minute")
		time.Sleep(100 * time.Millisecond)
	}
	slurmCmd(t, "scontrol", "update", "JobId="+ref.JobID, "StartTime=now")
	out := waitJob(t, c, ref, 4*time.Minute)
	assert.Equal(t, "COMPLETED", out.State)
	assert.Equal(t, "", out.Class, out.Message)
	require.NotNil(t, out.Exit)
	assert.Equal(t, 1, out.Exit.Restarts)
	b, _ := os.ReadFile(runs)
	assert.Equal(t, "start 0\nstart 1\ndone\n", string(b), "the first run was stopped, the second ran once")
}

// TestClusterControllerAway stops slurmctld for 20 s while a job runs:
// the queries fail, the client waits, and decides the job rightly once the
// controller is back.
func TestClusterControllerAway(t *testing.T) {
	slurmtest.Need(t)
	if testing.Short() {
		t.Skip("stops the controller for 20 s")
	}
	c := newClusterClient(t)
	wd := t.TempDir()
	// The job ends once the controller is away (the file go), not after a
	// time: a job that ended while the controller still answered would be
	// decided before the test looked.
	ref, err := c.Submit(context.Background(), clusterJob(t, wd, "x", "sh", "-c", "touch started; while [ ! -e go ]; do sleep 0.1; done; exit 4"))
	require.NoError(t, err)
	waitFile(t, filepath.Join(wd, "started"))
	startController := slurmtest.StopController(t)
	before := c.Queries()
	require.NoError(t, os.WriteFile(filepath.Join(wd, "go"), nil, 0o666))
	// Wait for the job's own end, then for the client to have failed at
	// least twice, then bring the controller back after 20 s in all.
	stopped := time.Now()
	waitFile(t, filepath.Join(wd, "x.exit"))
	for c.Queries() < before+2 {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Until(stopped.Add(20 * time.Second)))
	assert.NotEqual(t, "FAILED", c.State(ref.JobID), "nothing decided while the controller was away")
	startController()
	out := waitJob(t, c, ref, 3*time.Minute)
	assert.Equal(t, "FAILED", out.State)
	assert.Equal(t, failclass.Exit, out.Class)
	require.NotNil(t, out.Exit)
	assert.Equal(t, 4, out.Exit.Status)
}

// waitFile waits for a file to exist (at most two minutes).
func waitFile(t *testing.T, path string) {
	t.Helper()
	for i := 0; ; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		require.Less(t, i, 1200, "%s did not appear within 2 minutes", path)
		time.Sleep(100 * time.Millisecond)
	}
}

// A job array on the cluster: each task runs its own node's command in
// its node's environment and writes its node's logs, and each is followed
// on its own: one fails, one is requeued (scontrol requeue A_i) and runs
// again, one is cancelled (scancel A_i).
func TestClusterArrayTasks(t *testing.T) {
	slurmtest.Need(t)
	t.Parallel()
	c := newClusterClient(t)
	dir := t.TempDir()
	mk := func(name, script string) *Job {
		j := clusterJob(t, dir, name, "sh", "-c", script)
		j.Env = append(j.Env, "WHO="+name)
		return j
	}
	jobs := []*Job{
		mk("ok", `echo "$WHO"`),
		mk("fail", `echo "$WHO" >&2; exit 3`),
		mk("requeue", `echo run >> requeue.runs; [ -e requeued ] || { touch requeue.waiting; sleep 300; }`),
		mk("cancel", `touch cancel.started; sleep 300`),
	}
	a, ok, err := NewArray("stage.t", jobs)
	require.NoError(t, err)
	require.True(t, ok)
	ctx := context.Background()
	for range jobs {
		require.NoError(t, c.takeSlot(ctx))
	}
	refs, err := c.SubmitArray(ctx, a)
	require.NoError(t, err)
	waitFile(t, filepath.Join(dir, "cancel.started"))
	slurmCmd(t, "scancel", refs[3].JobID)
	waitFile(t, filepath.Join(dir, "requeue.waiting"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "requeued"), nil, 0o666))
	slurmCmd(t, "scontrol", "requeue", refs[2].JobID)

	out := waitJob(t, c, refs[0], 5*time.Minute)
	assert.Equal(t, "", out.Class, out.Message)
	b, _ := os.ReadFile(jobs[0].Stdout)
	assert.Equal(t, "ok\n", string(b), "task 0 ran ok's command in ok's environment, its output in ok's log")
	out = waitJob(t, c, refs[1], 5*time.Minute)
	assert.Equal(t, failclass.Exit, out.Class, out.Message)
	b, _ = os.ReadFile(jobs[1].Stderr)
	assert.Equal(t, "fail\n", string(b))
	out = waitJob(t, c, refs[3], 5*time.Minute)
	assert.Equal(t, "CANCELLED", out.State)
	assert.Equal(t, failclass.Killed, out.Class)
	out = waitJob(t, c, refs[2], 5*time.Minute)
	assert.Equal(t, "COMPLETED", out.State, out.Message)
	assert.Equal(t, "", out.Class, out.Message)
	require.NotNil(t, out.Exit)
	assert.Equal(t, 1, out.Exit.Restarts)
	b, _ = os.ReadFile(filepath.Join(dir, "requeue.runs"))
	assert.Equal(t, "run\nrun\n", string(b), "the requeued task ran again, the others once")
}

// An output edited after its job ended, before cairn collected the job,
// fails the node with class result, naming the file: the job's exit file
// lists its outputs as the command left them. An output left as the job
// made it passes. Wait is called once the edit is made, so the poll's
// timing does not matter.
func TestClusterOutputChangedAfterTheJobEnded(t *testing.T) {
	slurmtest.Need(t)
	t.Parallel()
	e, err := NewExecutor(context.Background(), Options{PollInterval: 200 * time.Millisecond, MaxPollInterval: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(e.Close)
	dir := t.TempDir()
	spec := func(name, script string, outputs ...string) *executor.Spec {
		s := &executor.Spec{
			Node: fmt.Sprintf("stage.gen[%q]", name), RunID: "cairn-test-" + fmt.Sprint(time.Now().UnixNano()), Key: name, Attempt: 1,
			Argv: []string{"sh", "-c", script}, Env: os.Environ(), Dir: dir,
			Stdout: filepath.Join(dir, "logs", name+".out"), Stderr: filepath.Join(dir, "logs", name+".err"),
		}
		for _, o := range outputs {
			s.Outputs = append(s.Outputs, filepath.Join(dir, o))
		}
		return s
	}
	ctx := context.Background()
	edited, err := e.Submit(ctx, spec("a", "mkdir -p out/a && echo 42 > out/a/v.txt", "out/a"))
	require.NoError(t, err)
	kept, err := e.Submit(ctx, spec("b", "echo 1 > b.txt", "b.txt"))
	require.NoError(t, err)
	waitFile(t, filepath.Join(dir, "logs", "a.exit"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "out", "a", "v.txt"), []byte("77\n"), 0o666))

	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := edited.Wait(wctx)
	require.NoError(t, err)
	assert.Equal(t, failclass.Result, res.Class, res.Message)
	assert.Contains(t, res.Message, "its output out/a/v.txt changed after the job ended")
	res, err = kept.Wait(wctx)
	require.NoError(t, err)
	assert.Equal(t, "", res.Class, res.Message)
}
