package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/process"
)

// fake is a folder the stand-ins in testdata/fakebin read and write.
type fake struct {
	t   *testing.T
	dir string
}

const noAccounting = "AccountingStorageType   = accounting_storage/none\nMinJobAge               = 300 sec\n"

func newFake(t *testing.T, config string) (*fake, *Client) {
	t.Helper()
	f := &fake{t: t, dir: t.TempDir()}
	t.Setenv("FAKE_SLURM", f.dir)
	f.write("config", config)
	bin, err := filepath.Abs("testdata/fakebin")
	require.NoError(t, err)
	c, err := New(context.Background(), "run-1", Options{
		Bin: bin, PollInterval: 5 * time.Millisecond, MaxPollInterval: 20 * time.Millisecond,
		RetryBackoff: time.Millisecond, ExitFileWait: 50 * time.Millisecond, LostAfter: 100 * time.Millisecond,
		CallTimeout: 10 * time.Second,
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return f, c
}

// write replaces a file of the fake cluster whole: the fake commands read
// them while the tests write, and a file written in place can be read
// half written, or empty (all jobs gone) on a loaded machine.
func (f *fake) write(name, text string) {
	tmp, err := os.CreateTemp(f.dir, "."+name+".tmp-*")
	require.NoError(f.t, err)
	_, err = tmp.WriteString(text)
	require.NoError(f.t, errors.Join(err, tmp.Chmod(0o666), tmp.Close()))
	require.NoError(f.t, os.Rename(tmp.Name(), filepath.Join(f.dir, name)))
}

func (f *fake) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(f.dir, name))
	return string(b)
}

func (f *fake) calls(name string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(f.read(name + ".calls")))
	return n
}

func (f *fake) job(name string) *Job {
	return &Job{
		Node: "stage.x[\"" + name + "\"]", Attempt: 1, Argv: []string{"true"}, Env: os.Environ(), Dir: f.dir,
		Stdout: filepath.Join(f.dir, name+".out"), Stderr: filepath.Join(f.dir, name+".err"),
		Script: filepath.Join(f.dir, name+".sbatch"), ExitFile: filepath.Join(f.dir, name+".exit"),
	}
}

func waitFake(t *testing.T, c *Client, ref Ref) *Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := c.Wait(ctx, ref)
	require.NoError(t, err)
	return out
}

func TestSbatchArguments(t *testing.T) {
	f, c := newFake(t, noAccounting)
	c.opts.Partition, c.opts.Account, c.opts.QOS, c.opts.ExtraArgs = "gpu", "lab", "normal", []string{"--constraint=a100"}
	j := f.job("a")
	j.GPUs, j.CPUs, j.MemMiB, j.Timeout, j.Attempt = 2, 4, 8000, 61*time.Minute+time.Second, 3
	ref, err := c.Submit(context.Background(), j)
	require.NoError(t, err)
	assert.Equal(t, Ref{JobID: "1001", Run: "run-1", ExitFile: j.ExitFile}, ref)
	args := strings.TrimSpace(f.read("sbatch.log"))
	for _, want := range []string{
		"--parsable", "--job-name=run-1", `--comment=cairn stage.x["a"] attempt 3 sub `,
		"--output=" + j.Stdout, "--error=" + j.Stderr, "--signal=B:USR2@60", "--requeue",
		"--gres=gpu:2", "--cpus-per-task=4", "--mem=8000M", "--time=62",
		"--partition=gpu", "--account=lab", "--qos=normal", "--constraint=a100",
	} {
		assert.Contains(t, args, want)
	}
	assert.True(t, strings.HasSuffix(args, " "+j.Script))
	assert.NotContains(t, args, "--ntasks", "no task geometry")
	f.write("squeue.out", "1001|COMPLETED|None\n")
	f.write("a.exit", "status=0\n")
	assert.Equal(t, "", waitFake(t, c, ref).Class)
}

func TestTransientSbatchErrorsAreRetried(t *testing.T) {
	f, c := newFake(t, noAccounting)
	f.write("sbatch.fail.1", "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n")
	f.write("sbatch.fail.2", "sbatch: error: QOSMaxSubmitJobPerUserLimit\n")
	ref, err := c.Submit(context.Background(), f.job("a"))
	require.NoError(t, err)
	assert.Equal(t, "1003", ref.JobID)
	assert.Equal(t, 3, f.calls("sbatch"))
	assert.GreaterOrEqual(t, f.calls("squeue"), 1, "after a timeout, the job was looked for before a second sbatch")
}

func TestLostAnswerIsNotSubmittedTwice(t *testing.T) {
	f, c := newFake(t, noAccounting)
	f.write("sbatch.fail.1", "accept:sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n")
	ref, err := c.Submit(context.Background(), f.job("a"))
	require.NoError(t, err)
	assert.Equal(t, "1001", ref.JobID, "the job the lost answer submitted, found by its comment")
	assert.Equal(t, 1, f.calls("sbatch"))
}

// An sbatch stopped by Ctrl-C (its context's end) after the controller
// took the job, before it answered: the job is looked up by its comment
// and cancelled, not left running for the next apply to submit again.
func TestSubmissionCutByAnInterruptIsCancelled(t *testing.T) {
	f, c := newFake(t, noAccounting)
	f.write("sbatch.answer_delay", "30\n")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Submit(ctx, f.job("a"))
		done <- err
	}()
	e2etest.WaitFor(t, "the controller to take the job", 10*time.Second, func() bool {
		return strings.Contains(f.read("comments"), "1001|")
	})
	cancel()
	err := <-done
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "1001\n", f.read("scancel.log"), "the job the cut sbatch submitted, found by its comment")
	assert.Equal(t, 1, f.calls("sbatch"))
}

func TestPermanentSbatchErrorFails(t *testing.T) {
	f, c := newFake(t, noAccounting)
	f.write("sbatch.fail.1", "sbatch: error: Batch job submission failed: Invalid partition name specified\n")
	_, err := c.Submit(context.Background(), f.job("a"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Invalid partition name specified")
	assert.ErrorIs(t, err, ErrRefused)
	assert.NotContains(t, err.Error(), "sbatch: sbatch:", "sbatch's own name is said once")
	assert.Equal(t, 1, f.calls("sbatch"))
	assert.True(t, c.CanSubmit(), "the failed submission's slot is free again")
}

// A job sbatch refuses for what it asks (a partition the cluster does not
// have) fails its node as setup, with what to check: a retry on
// infrastructure would submit the same job again, to the same refusal.
func TestRefusedJobIsSetup(t *testing.T) {
	f, e := newFakeExecutor(t)
	f.write("sbatch.fail.1", "sbatch: error: Batch job submission failed: Invalid partition name specified\n")
	j, err := e.Submit(context.Background(), &executor.Spec{
		Node: "stage.a", RunID: "run-1", Key: "k1", Attempt: 1,
		Argv: []string{"true"}, Env: os.Environ(), Dir: f.dir, Stdout: filepath.Join(f.dir, "k1.out"), Stderr: filepath.Join(f.dir, "k1.err"),
	})
	require.NoError(t, err)
	res := waitExec(t, j)
	assert.Equal(t, failclass.Setup, res.Class, res.Message)
	assert.Contains(t, res.Message, "Invalid partition name specified")
	assert.Contains(t, res.Message, "partition, account")
	assert.NotContains(t, res.Message, "sbatch: sbatch:")
	assert.Equal(t, 1, f.calls("sbatch"))
}

func TestFailedQueriesKeepWaiting(t *testing.T) {
	f, c := newFake(t, noAccounting)
	ref, err := c.Submit(context.Background(), f.job("a"))
	require.NoError(t, err)
	f.write("squeue.fail", "")
	for f.calls("squeue") < 10 {
		time.Sleep(5 * time.Millisecond)
	}
	assert.Equal(t, "", c.State(ref.JobID), "nothing decided while every query fails, also past LostAfter")
	require.NoError(t, os.Remove(filepath.Join(f.dir, "squeue.fail")))
	f.write("a.exit", "status=0\n")
	f.write("squeue.out", "1001|COMPLETED|None\n")
	out := waitFake(t, c, ref)
	assert.Equal(t, "", out.Class, out.Message)
}

func TestMissingJobIsLost(t *testing.T) {
	f, c := newFake(t, noAccounting)
	ref, err := c.Submit(context.Background(), f.job("a"))
	require.NoError(t, err)
	out := waitFake(t, c, ref)
	assert.Equal(t, "LOST", out.State)
	assert.Equal(t, failclass.Infra, out.Class)
	// Not called cancelled without evidence, but the user learns that a
	// pending job cancelled by hand looks so.
	assert.Contains(t, out.Message, "a job cancelled while pending leaves no trace on a cluster without accounting")
}

// A job Slurm has forgotten (older than MinJobAge) whose script wrote its
// exit file is collected from that file.
func TestForgottenJobIsCollectedFromItsExitFile(t *testing.T) {
	f, c := newFake(t, noAccounting)
	f.write("a.exit", "status=0\n")
	c.Attach(Ref{JobID: "77", Run: "run-1", ExitFile: filepath.Join(f.dir, "a.exit")})
	out := waitFake(t, c, Ref{JobID: "77"})
	assert.Equal(t, "LOST", out.State)
	assert.Equal(t, "", out.Class, out.Message)
}

func TestStates(t *testing.T) {
	for _, tc := range []struct {
		state, exit, class string
	}{
		{"COMPLETED", "status=0\n", ""},
		{"COMPLETED", "", failclass.Infra}, // no exit file: never a success
		{"FAILED", "status=3\n", failclass.Exit},
		{"TIMEOUT", "status=143\nterm=1\n", failclass.Timeout},
		{"OUT_OF_MEMORY", "status=0\n", failclass.MemoryFailure},
		{"NODE_FAIL", "", failclass.Infra},
		{"BOOT_FAIL", "", failclass.Infra},
		{"PREEMPTED", "", failclass.Infra},
		{"CANCELLED by 1000", "status=143\nterm=1\n", failclass.Killed},
	} {
		t.Run(strings.Fields(tc.state)[0]+"-"+strconv.Itoa(len(tc.exit)), func(t *testing.T) {
			f, c := newFake(t, noAccounting)
			ref, err := c.Submit(context.Background(), f.job("a"))
			require.NoError(t, err)
			if tc.exit != "" {
				f.write("a.exit", tc.exit)
			}
			f.write("squeue.out", "1001|"+tc.state+"|None\n")
			out := waitFake(t, c, ref)
			assert.Equal(t, tc.class, out.Class, out.Message)
			assert.Equal(t, strings.Fields(tc.state)[0], out.State)
		})
	}
}

func TestUnknownStateIsNotFinal(t *testing.T) {
	f, c := newFake(t, noAccounting)
	ref, err := c.Submit(context.Background(), f.job("a"))
	require.NoError(t, err)
	f.write("a.exit", "status=0\n")
	f.write("squeue.out", "1001|UNKNOWN|None\n")
	for c.State(ref.JobID) != "UNKNOWN" {
		time.Sleep(5 * time.Millisecond)
	}
	n := f.calls("squeue")
	for f.calls("squeue") < n+5 {
		time.Sleep(5 * time.Millisecond)
	}
	f.write("squeue.out", "1001|FAILED|None\n")
	f.write("a.exit", "status=2\n")
	out := waitFake(t, c, ref)
	assert.Equal(t, failclass.Exit, out.Class)
}

func TestAccountingUsesSacct(t *testing.T) {
	f, c := newFake(t, "AccountingStorageType   = accounting_storage/slurmdbd\nMinJobAge = 2 sec\n")
	assert.True(t, c.Accounting())
	ref, err := c.Submit(context.Background(), f.job("a"))
	require.NoError(t, err)
	f.write("sacct.out", "1001|CANCELLED by 0|None\n")
	out := waitFake(t, c, ref)
	assert.Equal(t, failclass.Killed, out.Class)
	log := f.read("sacct.log")
	assert.Contains(t, log, "-X --parsable2 --noheader --name=run-1 --starttime=")
	assert.Equal(t, 0, f.calls("squeue"))
}

func TestMinJobAgeBoundsThePollInterval(t *testing.T) {
	f := &fake{t: t, dir: t.TempDir()}
	t.Setenv("FAKE_SLURM", f.dir)
	f.write("config", "AccountingStorageType = accounting_storage/none\nMinJobAge = 10 sec\n")
	bin, _ := filepath.Abs("testdata/fakebin")
	c, err := New(context.Background(), "r", Options{Bin: bin, MaxPollInterval: time.Minute})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	assert.Equal(t, 5*time.Second, c.opts.MaxPollInterval)
}

func TestMaxSubmitted(t *testing.T) {
	f, c := newFake(t, noAccounting)
	c.opts.MaxSubmitted = 2
	a, err := c.Submit(context.Background(), f.job("a"))
	require.NoError(t, err)
	_, err = c.Submit(context.Background(), f.job("b"))
	require.NoError(t, err)
	assert.False(t, c.CanSubmit())
	done := make(chan Ref)
	go func() {
		ref, err := c.Submit(context.Background(), f.job("c"))
		assert.NoError(t, err)
		done <- ref
	}()
	f.write("squeue.out", "1001|RUNNING|None\n1002|RUNNING|None\n")
	for c.State(a.JobID) != "RUNNING" {
		time.Sleep(5 * time.Millisecond)
	}
	assert.Equal(t, 2, f.calls("sbatch"), "the third waits for a slot")
	f.write("a.exit", "status=0\n")
	f.write("squeue.out", "1001|COMPLETED|None\n1002|RUNNING|None\n")
	assert.Equal(t, "1003", (<-done).JobID)
}

// Close kills the poller's query in flight with its whole process group
// and returns once it has ended: nothing the Client started writes into
// the test's folder after Close (the folder's removal runs after it).
func TestCloseEndsTheCallsInFlight(t *testing.T) {
	f, c := newFake(t, noAccounting)
	_, err := c.Submit(context.Background(), f.job("a"))
	require.NoError(t, err)
	f.write("squeue.hang", "")
	var pid int
	for pid == 0 {
		pid, _ = strconv.Atoi(strings.TrimSpace(f.read("squeue.child")))
		time.Sleep(5 * time.Millisecond)
	}
	c.Close()
	for i := 0; !e2etest.ProcGone(pid); i++ {
		require.Less(t, i, 2000, "the hanging call's child %d still runs 10 s after Close", pid)
		time.Sleep(5 * time.Millisecond)
	}
}

// ClusterGPUs calls sinfo through a Client it makes itself, not New's.
func TestClusterGPUsCallsThroughABareClient(t *testing.T) {
	f := &fake{t: t, dir: t.TempDir()}
	t.Setenv("FAKE_SLURM", f.dir)
	bin, err := filepath.Abs("testdata/fakebin")
	require.NoError(t, err)
	f.write("sinfo.out", "n1|gpu:a100:2(S:0-1)\nn1|gpu:a100:2(S:0-1)\nn2|gpu:2,gpu:v100:1\n")
	inv, err := ClusterGPUs(context.Background(), Options{Bin: bin})
	require.NoError(t, err)
	assert.Equal(t, 5, inv.n)
}

// A partition the cluster does not have is an error naming those it has,
// not a partition of no GPU: sinfo answers both with nothing.
func TestClusterGPUsOfAPartitionTheClusterLacks(t *testing.T) {
	f := &fake{t: t, dir: t.TempDir()}
	t.Setenv("FAKE_SLURM", f.dir)
	bin, err := filepath.Abs("testdata/fakebin")
	require.NoError(t, err)
	f.write("sinfo.out", "n1|gpu:2\n")
	f.write("sinfo.partitions", "debug\ngpu\ngpu\n")
	inv, err := ClusterGPUs(context.Background(), Options{Bin: bin, Partition: "gpu"})
	require.NoError(t, err)
	assert.Equal(t, 2, inv.n)
	_, err = ClusterGPUs(context.Background(), Options{Bin: bin, Partition: "gpus"})
	require.ErrorIs(t, err, ErrPartition)
	assert.EqualError(t, err, "slurm: no such partition: the cluster has no partition gpus; its partitions: debug, gpu")
	f.write("sinfo.out", "")
	_, err = ClusterGPUs(context.Background(), Options{Bin: bin, Partition: "gpu"})
	assert.EqualError(t, err, "slurm: no such partition: partition gpu has no node")
	inv, err = ClusterGPUs(context.Background(), Options{Bin: bin})
	require.NoError(t, err, "the default partition, without nodes, has no GPU")
	assert.Equal(t, 0, inv.n)
}

func TestCancelIsChunked(t *testing.T) {
	f, c := newFake(t, noAccounting)
	var refs []Ref
	for i := range 1200 {
		refs = append(refs, Ref{JobID: strconv.Itoa(i + 1)})
	}
	require.NoError(t, c.Cancel(context.Background(), refs))
	lines := strings.Split(strings.TrimSpace(f.read("scancel.log")), "\n")
	require.Len(t, lines, 3)
	assert.Len(t, strings.Fields(lines[0]), 500)
	assert.Len(t, strings.Fields(lines[2]), 200)
}

// A cancel sends a plain scancel to the jobs not running first (a pending
// one must not start on what the running ones free), then SIGTERM to the
// running ones' batch scripts alone, whose traps end the commands' process
// groups; a job whose script ended is not cancelled after it.
func TestCancelSignalsRunningScriptsFirst(t *testing.T) {
	f, c := newFake(t, noAccounting)
	c.killWait = time.Minute
	exit := filepath.Join(f.dir, "a.exit")
	f.write("squeue.out", "7_1|RUNNING|None\n8|PENDING|Resources\n")
	done := make(chan error, 1)
	go func() { done <- c.Cancel(context.Background(), []Ref{{JobID: "7_1", ExitFile: exit}, {JobID: "8"}}) }()
	for !strings.Contains(f.read("scancel.log"), "--batch") {
		time.Sleep(5 * time.Millisecond)
	}
	f.write("a.exit", "status=143\nterm=1\n")
	require.NoError(t, <-done)
	assert.Equal(t, "8\n--batch --signal=TERM 7_1\n", f.read("scancel.log"))
}

// A running job whose batch script has not ended within the cluster's
// KillWait of its SIGTERM is cancelled after it, with a plain scancel.
func TestCancelAfterKillWaitWhenTheScriptLingers(t *testing.T) {
	f, c := newFake(t, noAccounting)
	c.killWait = 50 * time.Millisecond
	f.write("squeue.out", "7|RUNNING|None\n")
	require.NoError(t, c.Cancel(context.Background(), []Ref{{JobID: "7", ExitFile: filepath.Join(f.dir, "a.exit")}}))
	assert.Equal(t, "--batch --signal=TERM 7\n7\n", f.read("scancel.log"))
}

// The wrapper, run by bash without Slurm: the argv is passed as words,
// never through a shell, and the exit file is written whole.
func TestWrapper(t *testing.T) {
	dir := t.TempDir()
	j := &Job{Node: "n", Attempt: 1, Dir: dir, Script: filepath.Join(dir, "w.sbatch"), ExitFile: filepath.Join(dir, "w.exit"),
		Argv: []string{"sh", "-c", `printf '%s|' "$@" > args; exit 3`, "sh", "it's", "$HOME", "a b", "*"}}
	require.NoError(t, writeScript(j))
	err := exec.Command("bash", j.Script).Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, ee.ExitCode())
	b, _ := os.ReadFile(filepath.Join(dir, "args"))
	assert.Equal(t, "it's|$HOME|a b|*|", string(b))
	st, ok, err := readExit(j.ExitFile)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 3, st.Status)
	assert.False(t, st.Term)
}

// A run of a job that Slurm requeued, still ending when the next run has
// started (its exit file written late), writes no exit file over the
// next run's: the job is decided by its last run.
func TestWrapperOfAnEarlierRunLeavesTheLaterRunsExitFile(t *testing.T) {
	dir := t.TempDir()
	j := &Job{Node: "n", Attempt: 1, Dir: dir, Script: filepath.Join(dir, "w.sbatch"), ExitFile: filepath.Join(dir, "w.exit"),
		Argv: []string{"sh", "-c", ": > started; until [ -e go ]; do sleep 0.01; done; exit 143"}}
	require.NoError(t, writeScript(j))
	// Whatever happens, the first run's command (in its own session) ends.
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(dir, "go"), nil, 0o644) })
	first := exec.Command("bash", j.Script)
	first.Env = append(os.Environ(), "SLURM_RESTART_COUNT=0")
	require.NoError(t, first.Start())
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(dir, "started")); return err == nil }, 10*time.Second, 5*time.Millisecond)
	// The requeued run starts, ends well, and writes its exit file.
	j.Argv = []string{"true"}
	require.NoError(t, writeScript(j))
	second := exec.Command("bash", j.Script)
	second.Env = append(os.Environ(), "SLURM_RESTART_COUNT=1")
	require.NoError(t, second.Run())
	// Then the first run ends.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o644))
	_ = first.Wait()
	st, ok, err := readExit(j.ExitFile)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 0, st.Status, "the later run's exit file")
	assert.Equal(t, 1, st.Restarts)
	tmps, _ := filepath.Glob(j.ExitFile + ".tmp.*")
	assert.Empty(t, tmps, "the earlier run's temp file is removed")
}

func TestWrapperForwardsSIGTERM(t *testing.T) {
	dir := t.TempDir()
	j := &Job{Node: "n", Attempt: 1, Dir: dir, Script: filepath.Join(dir, "w.sbatch"), ExitFile: filepath.Join(dir, "w.exit"),
		Argv: []string{"sh", "-c", "echo $$ > pid; exec sleep 300"}}
	require.NoError(t, writeScript(j))
	cmd := exec.Command("bash", j.Script)
	require.NoError(t, cmd.Start())
	var pid int
	for pid == 0 {
		b, _ := os.ReadFile(filepath.Join(dir, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGUSR2), "noted, not fatal")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	_ = cmd.Wait()
	st, ok, err := readExit(j.ExitFile)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 128+int(syscall.SIGTERM), st.Status)
	assert.True(t, st.Term)
	assert.Error(t, syscall.Kill(pid, 0), "the command got the SIGTERM")
}

// The start the wrapper records is on the clock that stamps files: a
// command that writes its output at once leaves a modification time no
// earlier than the recorded start, so that an apply that re-attaches to
// the job counts the output as written by it. (File times come from the
// kernel's coarse clock, or a file server's, which can lag `date` by some
// milliseconds: a start taken with `date` was later than such a file 1
// time in 6.)
func TestWrapperStartIsNoLaterThanTheCommandsFiles(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 40; i++ {
		out := filepath.Join(dir, fmt.Sprintf("out%d", i))
		j := &Job{Node: "n", Attempt: 1, Dir: dir, Script: filepath.Join(dir, "w.sbatch"), ExitFile: filepath.Join(dir, "w.exit"),
			Argv: []string{"touch", out}}
		require.NoError(t, writeScript(j))
		require.NoError(t, exec.Command("bash", j.Script).Run())
		st, ok, err := readExit(j.ExitFile)
		require.NoError(t, err)
		require.True(t, ok)
		fi, err := os.Stat(out)
		require.NoError(t, err)
		require.False(t, fi.ModTime().Before(st.Started), "run %d: the output's mtime %s is before the recorded start %s",
			i, fi.ModTime().Format(time.RFC3339Nano), st.Started.Format(time.RFC3339Nano))
	}
}

// A node's job asks for what its stage says: gpus, cpus, memory and
// timeout become the job's --gres, --cpus-per-task, --mem and --time
// (TestSbatchArguments checks the flags).
func TestJobForCarriesTheStagesResources(t *testing.T) {
	spec := &executor.Spec{
		Node: `stage.train["a"]`, Argv: []string{"true"}, Attempt: 2,
		Stdout: "/logs/x.out", GPUs: []int{0, 1}, CPUs: 4, MemMiB: 16 << 10, Timeout: time.Hour,
	}
	j := jobFor(spec)
	assert.Equal(t, 2, j.GPUs)
	assert.Equal(t, 4, j.CPUs)
	assert.Equal(t, 16<<10, j.MemMiB)
	assert.Equal(t, time.Hour, j.Timeout)
	assert.Equal(t, 2, j.Attempt)
	assert.Equal(t, "/logs/x.exit", j.ExitFile)
}

// The wrapper ends the command at the stage's own timeout, as the local
// executor does, whatever Slurm's --time (whole minutes): SIGTERM to its
// process group, SIGKILL after the kill grace to a command that ignores
// it, and the exit file says it was the timeout. A timed-out job is class
// timeout whatever its state says (#29).
func TestWrapperEnforcesTheTimeout(t *testing.T) {
	for _, tc := range []struct {
		name, cmd string
		status    int
	}{
		{"term", "exec sleep 60", 128 + int(syscall.SIGTERM)},
		{"ignores-term", "trap '' TERM; sleep 60", 128 + int(syscall.SIGKILL)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			j := &Job{Node: "n", Attempt: 1, Dir: dir, Script: filepath.Join(dir, "w.sbatch"), ExitFile: filepath.Join(dir, "w.exit"),
				Argv: []string{"sh", "-c", tc.cmd}, Timeout: 300 * time.Millisecond, KillGrace: 200 * time.Millisecond}
			require.NoError(t, writeScript(j))
			_ = exec.Command("bash", j.Script).Run()
			st, ok, err := readExit(j.ExitFile)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, tc.status, st.Status)
			assert.True(t, st.TimedOut, "the exit file says the timeout ended it")
			assert.Equal(t, 300*time.Millisecond, st.Timeout)
			assert.False(t, st.Ended.Before(st.Started), "the command's end is recorded")
			for _, state := range []string{"FAILED", "COMPLETED", "TIMEOUT"} {
				class, msg := classify(state, &st, time.Second, j.ExitFile)
				assert.Equal(t, failclass.Timeout, class, state)
				assert.Equal(t, "killed at its timeout of 300ms", msg, state)
			}
		})
	}
	// A command that ends in time is not touched, and leaves no watchdog.
	dir := t.TempDir()
	j := &Job{Node: "n", Attempt: 1, Dir: dir, Script: filepath.Join(dir, "w.sbatch"), ExitFile: filepath.Join(dir, "w.exit"),
		Argv: []string{"true"}, Timeout: time.Hour, KillGrace: time.Second}
	require.NoError(t, writeScript(j))
	script := exec.Command("bash", j.Script)
	require.NoError(t, script.Run())
	st, ok, err := readExit(j.ExitFile)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 0, st.Status)
	assert.False(t, st.TimedOut)
	// This script's watchdog, by the script's pid among its arguments:
	// another test's (or another apply's) may be running.
	out, _ := exec.Command("pgrep", "-f", fmt.Sprintf("watchdog 3600.000 %d ", script.Process.Pid)).Output()
	assert.Empty(t, strings.TrimSpace(string(out)), "the watchdog ended with the script")
}

// --time is Slurm's outer bound: the stage's timeout and its kill grace,
// rounded up to whole minutes, so that the script's own kill comes first.
func TestSbatchTimeIsTheOuterBound(t *testing.T) {
	_, c := newFake(t, noAccounting)
	for _, tc := range []struct {
		timeout, grace, limit time.Duration
		want                  string
	}{
		{20 * time.Second, 10 * time.Second, 0, "--time=1"},
		{time.Minute, 10 * time.Second, 0, "--time=2"},
		{40 * time.Minute, 0, 0, "--time=40"},
		{0, 0, time.Second, "--time=1"},
	} {
		j := &Job{Node: "n", Script: "s", Timeout: tc.timeout, KillGrace: tc.grace, TimeLimit: tc.limit}
		assert.Contains(t, c.sbatchArgs(j, "t"), tc.want, "timeout %s, grace %s", tc.timeout, tc.grace)
	}
	assert.NotContains(t, strings.Join(c.sbatchArgs(&Job{Node: "n", Script: "s"}, "t"), " "), "--time", "no timeout, no limit")
}

// A job that appends to its logs (a serve replica's restart) asks Slurm
// to open them for appending; others have them truncated, as by default.
func TestSbatchAppendsLogsWhenAsked(t *testing.T) {
	_, c := newFake(t, noAccounting)
	assert.Contains(t, c.sbatchArgs(&Job{Node: "n", Script: "s", AppendLogs: true}, "t"), "--open-mode=append")
	assert.NotContains(t, c.sbatchArgs(&Job{Node: "n", Script: "s"}, "t"), "--open-mode=append")
}

// notices collects a client's notices.
type notices struct {
	mu  sync.Mutex
	got []executor.Notice
}

func (n *notices) add(x executor.Notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, x)
}

// wait waits for n notices and returns them.
func (n *notices) wait(t *testing.T, count int) []executor.Notice {
	t.Helper()
	for i := 0; ; i++ {
		n.mu.Lock()
		got := append([]executor.Notice(nil), n.got...)
		n.mu.Unlock()
		if len(got) >= count {
			return got
		}
		require.Less(t, i, 6000, "%d notices after 30 s, want %d: %v", len(got), count, got)
		time.Sleep(5 * time.Millisecond)
	}
}

// Status queries that fail as a controller away fails are said at once,
// once, with the command's own error, and so is the first answer after
// them (#29).
func TestControllerAwayIsSaidAtOnce(t *testing.T) {
	f, c := newFake(t, noAccounting)
	var ns notices
	c.opts.Notify = ns.add
	f.write("squeue.fail", "")
	ref, err := c.Submit(context.Background(), f.job("a"))
	require.NoError(t, err)
	got := ns.wait(t, 1)
	assert.True(t, got[0].Waiting)
	assert.Equal(t, "the Slurm controller", got[0].What)
	assert.Contains(t, got[0].Detail, "squeue: slurm_load_jobs error: Unable to contact slurm controller (connect failure)")
	assert.False(t, got[0].Since.IsZero())
	assert.Regexp(t, `^waiting for the Slurm controller since \d\d:\d\d:\d\d: squeue: slurm_load_jobs error`, got[0].String())
	for f.calls("squeue") < 5 {
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, os.Remove(filepath.Join(f.dir, "squeue.fail")))
	got = ns.wait(t, 2)
	assert.False(t, got[1].Waiting)
	assert.Equal(t, got[0].Since, got[1].Since)
	assert.Regexp(t, `^done waiting for the Slurm controller after `, got[1].String())
	f.write("a.exit", "status=0\n")
	f.write("squeue.out", "1001|COMPLETED|None\n")
	waitFake(t, c, ref)
	assert.Len(t, ns.wait(t, 2), 2, "one notice for the spell of failures, one for its end")
}

// A job Slurm requeues (it ran, and waits again) is said at once, with
// its state and Slurm's reason, and so is its run again (#29).
func TestRequeueIsSaidAtOnce(t *testing.T) {
	f, c := newFake(t, noAccounting)
	ref, err := c.Submit(context.Background(), f.job("a"))
	require.NoError(t, err)
	var ns notices
	c.Watch(ref.JobID, ns.add)
	f.write("squeue.out", "1001|PENDING|Priority\n")
	for n := f.calls("squeue"); f.calls("squeue") < n+2; {
		time.Sleep(5 * time.Millisecond)
	}
	f.write("squeue.out", "1001|RUNNING|None\n")
	for n := f.calls("squeue"); f.calls("squeue") < n+2; {
		time.Sleep(5 * time.Millisecond)
	}
	f.write("squeue.out", "1001|PENDING|BeginTime\n")
	got := ns.wait(t, 1)
	assert.Equal(t, "waiting for Slurm to run job 1001 again since "+got[0].Since.Format("15:04:05")+
		": Slurm requeued it; it is PENDING (BeginTime): Slurm holds a requeued job back for a while", got[0].String())
	f.write("squeue.out", "1001|RUNNING|None\n")
	got = ns.wait(t, 2)
	assert.False(t, got[1].Waiting)
	f.write("a.exit", "status=0\n")
	f.write("squeue.out", "1001|COMPLETED|None\n")
	waitFake(t, c, ref)
	assert.Len(t, ns.wait(t, 2), 2, "a first wait in the queue is no requeue")

	// requeued submits job name, which squeue then shows as line: a
	// requeued job's first notice is that it waits.
	requeued := func(name, id, squeue string) (Ref, *notices) {
		t.Helper()
		ref, err := c.Submit(context.Background(), f.job(name))
		require.NoError(t, err)
		require.Equal(t, id, ref.JobID)
		n := &notices{}
		c.Watch(ref.JobID, n.add)
		f.write("squeue.out", squeue)
		got := n.wait(t, 1)
		assert.True(t, got[0].Waiting)
		assert.Equal(t, "Slurm to run job "+id+" again", got[0].What)
		return ref, n
	}

	// A job requeued between two queries, never seen running: Slurm's
	// hold of a requeued job tells it.
	ref, nb := requeued("b", "1002", "1001|COMPLETED|None\n1002|PENDING|BeginTime\n")
	f.write("b.exit", "status=0\n")
	f.write("squeue.out", "1001|COMPLETED|None\n1002|COMPLETED|None\n")
	waitFake(t, c, ref)
	got = nb.wait(t, 2)
	assert.False(t, got[1].Waiting, "the wait is over once it ended, though no query saw it run")

	// A requeued job that ran again and ended, which Slurm forgot before
	// a query saw it (older than MinJobAge): its exit file ends the wait.
	ref, nc := requeued("c", "1003", "1003|PENDING|BeginTime\n")
	f.write("c.exit", "status=0\n")
	f.write("squeue.out", "")
	out := waitFake(t, c, ref)
	assert.Equal(t, "", out.Class, out.Message)
	got = nc.wait(t, 2)
	assert.False(t, got[1].Waiting, "the wait is over once its exit file is written, though Slurm forgot the job")
	assert.Equal(t, "Slurm to run job 1003 again", got[1].What)
}

// A Slurm command that does not answer within the call timeout is shown
// with what it said before it was stopped: scontrol retrying a missing
// configuration file for a minute says so on its stderr (#29).
func TestCallTimeoutShowsWhatTheCommandSaid(t *testing.T) {
	f := &fake{t: t, dir: t.TempDir()}
	t.Setenv("FAKE_SLURM", f.dir)
	f.write("scontrol.hang", "scontrol: error: s_p_parse_file: cannot stat file /x/slurm.conf: No such file or directory, retrying in 1sec up to 60sec\n")
	bin, err := filepath.Abs("testdata/fakebin")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var ns notices
	_, err = New(ctx, "run-1", Options{Bin: bin, CallTimeout: 300 * time.Millisecond, RetryBackoff: time.Millisecond, Notify: ns.add})
	require.Error(t, err)
	assert.Regexp(t, `scontrol: no answer within \d+ms; it said: scontrol: error: s_p_parse_file: cannot stat file /x/slurm.conf`, err.Error())
	got := ns.wait(t, 1)
	assert.Equal(t, "scontrol: no answer within 300ms; it said: scontrol: error: s_p_parse_file: cannot stat file /x/slurm.conf: No such file or directory, retrying in 1sec up to 60sec",
		got[0].Detail, "said at the first call that timed out")
}

// A call that said why it hangs, retried until the caller gives up: the
// error says why, also where the last retry, cut short, said nothing (the
// message depended on how far the last call got before the end).
func TestCallRetryKeepsWhatAnEarlierCallSaid(t *testing.T) {
	f := &fake{t: t, dir: t.TempDir()}
	t.Setenv("FAKE_SLURM", f.dir)
	f.write("scontrol.hang", "scontrol: error: s_p_parse_file: cannot stat file /x/slurm.conf\n")
	f.write("scontrol.quiet", "")
	bin, err := filepath.Abs("testdata/fakebin")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = New(ctx, "run-1", Options{Bin: bin, CallTimeout: 200 * time.Millisecond, RetryBackoff: time.Millisecond})
	require.Error(t, err)
	assert.Equal(t, "slurm: reading the cluster's configuration: scontrol: no answer within 200ms; it said: scontrol: error: s_p_parse_file: cannot stat file /x/slurm.conf", err.Error())
	b, err := os.ReadFile(filepath.Join(f.dir, "scontrol.calls"))
	require.NoError(t, err)
	assert.NotEqual(t, "1", strings.TrimSpace(string(b)), "it was called again, saying nothing")
}

// A SLURM_CONF that names no file is refused at once, naming it, instead
// of a silent wait while every Slurm command retries reading it (#29).
func TestMissingSlurmConfIsRefusedAtOnce(t *testing.T) {
	f := &fake{t: t, dir: t.TempDir()}
	t.Setenv("FAKE_SLURM", f.dir)
	f.write("config", noAccounting)
	missing := filepath.Join(f.dir, "no", "slurm.conf")
	t.Setenv("SLURM_CONF", missing)
	bin, err := filepath.Abs("testdata/fakebin")
	require.NoError(t, err)
	_, err = NewExecutor(context.Background(), Options{Bin: bin})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "SLURM_CONF")
	assert.Contains(t, err.Error(), missing+": no such file or directory")
}

// The executor names a node's job by the spec's typed run id, key and
// attempt, which the engine sets, not by what the process's environment
// holds: the job is the run's (--job-name), its comment names the
// attempt, and its reference's spec digest tells two keys apart.
// newFakeExecutor is an Executor on the fake Slurm commands.
func newFakeExecutor(t *testing.T) (*fake, *Executor) {
	f := &fake{t: t, dir: t.TempDir()}
	t.Setenv("FAKE_SLURM", f.dir)
	f.write("config", noAccounting)
	bin, err := filepath.Abs("testdata/fakebin")
	require.NoError(t, err)
	e, err := NewExecutor(context.Background(), Options{Bin: bin, PollInterval: 5 * time.Millisecond, MaxPollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	// The poller's stand-in squeue writes in f.dir: it ends before the
	// folder is removed.
	t.Cleanup(e.Close)
	return f, e
}

func TestSubmitNamesTheJobByTheSpecsRunKeyAndAttempt(t *testing.T) {
	f, e := newFakeExecutor(t)
	spec := func(key string) *executor.Spec {
		return &executor.Spec{
			Node: `stage.train["a"]`, RunID: "20260101T000000-abcd", Key: key, Attempt: 3,
			Argv: []string{"true"}, Env: append(os.Environ(), "CAIRN_RUN_ID=other", "CAIRN_ATTEMPT=9"),
			Dir: f.dir, Stdout: filepath.Join(f.dir, key+".out"), Stderr: filepath.Join(f.dir, key+".err"),
		}
	}
	// The jobs are never cancelled: a scancel must not write in f.dir
	// after the test.
	ctx := context.Background()
	a, err := e.Submit(ctx, spec("k1"))
	require.NoError(t, err)
	require.NotEmpty(t, a.Ref().ID, "submitted")
	args := f.read("sbatch.log")
	assert.Contains(t, args, "--job-name=20260101T000000-abcd")
	assert.Contains(t, args, `--comment=cairn stage.train["a"] attempt 3 sub `)
	assert.NotContains(t, args, "other")
	assert.Equal(t, "20260101T000000-abcd", a.Ref().Details["run"])
	b, err := e.Submit(ctx, spec("k2"))
	require.NoError(t, err)
	assert.NotEqual(t, a.Ref().Details["spec"], b.Ref().Details["spec"], "the same command under another key is other work")
}

// statusQueries are the times of the fake squeue's status queries (not its
// lookups by comment), from its log.
func (f *fake) statusQueries() []time.Time {
	var out []time.Time
	for _, line := range strings.Split(strings.TrimSpace(f.read("squeue.log")), "\n") {
		ns, args, ok := strings.Cut(line, " ")
		if !ok || !strings.Contains(args, "%T") {
			continue
		}
		n, err := strconv.ParseInt(ns, 10, 64)
		require.NoError(f.t, err, "squeue.log line %q", line)
		out = append(out, time.Unix(0, n))
	}
	return out
}

// Submissions and jobs ending wake the poller, and still no two status
// queries are closer than poll_interval (the previous one's end to the
// next one's start): one query per cycle for the whole run.
func TestStatusQueriesKeepThePollInterval(t *testing.T) {
	f, c := newFake(t, noAccounting)
	const interval = 200 * time.Millisecond
	c.opts.PollInterval, c.opts.MaxPollInterval, c.opts.MaxSubmitted = interval, time.Second, 3
	begin := time.Now()
	var wg sync.WaitGroup
	outs := make(chan *Outcome, 8)
	for i := range 8 {
		// A burst of submissions; with three in Slurm at once, each job
		// that ends lets the next one in, as the engine's apply loop does.
		ref, err := c.Submit(context.Background(), f.job(fmt.Sprint(i)))
		require.NoError(t, err)
		f.write(fmt.Sprint(i)+".exit", "status=0\n")
		var done strings.Builder
		for j := 0; j <= i; j++ {
			fmt.Fprintf(&done, "%d|COMPLETED|None\n", 1001+j)
		}
		f.write("squeue.out", done.String())
		wg.Add(1)
		go func() { defer wg.Done(); outs <- waitFake(t, c, ref) }()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	close(outs)
	for out := range outs {
		assert.Equal(t, "", out.Class, out.Message)
	}
	q := f.statusQueries()
	require.NotEmpty(t, q)
	for i := 1; i < len(q); i++ {
		assert.GreaterOrEqual(t, q[i].Sub(q[i-1]), interval, "status queries %d and %d", i, i+1)
	}
	assert.LessOrEqual(t, len(q), int(elapsed/interval)+1, "status queries in %s at one per %s", elapsed, interval)
	assert.Equal(t, len(q), c.Queries())
}

// A submitted job says whether it waits in Slurm's queue, with its state
// and Slurm's reason as the last status query showed them (#31).
func TestJobSaysItIsQueued(t *testing.T) {
	f, e := newFakeExecutor(t)
	j, err := e.Submit(context.Background(), &executor.Spec{
		Node: "stage.serve", RunID: "20260101T000000-abcd", Key: "k1", Attempt: 1,
		Argv: []string{"true"}, Env: os.Environ(), Dir: f.dir, Stdout: filepath.Join(f.dir, "k1.out"), Stderr: filepath.Join(f.dir, "k1.err"),
	})
	require.NoError(t, err)
	qj, ok := j.(executor.QueuedJob)
	require.True(t, ok, "a Slurm job says whether it is queued")
	id := j.Ref().ID
	until := func(want string) (string, bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, q := qj.Queue()
			if st == want || time.Now().After(deadline) {
				return st, q
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	f.write("squeue.out", id+"|PENDING|Resources\n")
	st, queued := until("PENDING (Resources)")
	assert.Equal(t, "PENDING (Resources)", st)
	assert.True(t, queued)
	f.write("squeue.out", id+"|RUNNING|None\n")
	st, queued = until("RUNNING")
	assert.Equal(t, "RUNNING", st)
	assert.False(t, queued, "a running job is not queued")
	f.write("k1.exit", "status=0\n")
	f.write("squeue.out", id+"|COMPLETED|None\n")
	res, err := j.Wait(context.Background())
	require.NoError(t, err)
	assert.Empty(t, res.Class, res.Message)
}

// A job without GPUs sees CUDA_VISIBLE_DEVICES empty (unset, CUDA would
// show it every GPU of its machine), whatever its environment held; one
// with GPUs keeps what Slurm gives it. The watchdog of a stage's timeout
// ends without a "Killed" line in the job's stderr, where classify reads.
func TestWrapperEnvironmentAndQuietWatchdog(t *testing.T) {
	for _, gpus := range []int{0, 1} {
		dir := t.TempDir()
		j := &Job{Node: "n", Attempt: 1, Dir: dir, Script: filepath.Join(dir, "w.sbatch"), ExitFile: filepath.Join(dir, "w.exit"),
			Argv: []string{"sh", "-c", `printf '%s' "${CUDA_VISIBLE_DEVICES-unset}" > cvd; exit 1`}, GPUs: gpus, Timeout: time.Hour, KillGrace: time.Second}
		require.NoError(t, writeScript(j))
		cmd := exec.Command("bash", j.Script)
		cmd.Env = append(os.Environ(), "CUDA_VISIBLE_DEVICES=3")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		_ = cmd.Run()
		b, err := os.ReadFile(filepath.Join(dir, "cvd"))
		require.NoError(t, err)
		if gpus == 0 {
			assert.Equal(t, "", string(b), "a job without GPUs")
		} else {
			assert.Equal(t, "3", string(b), "Slurm's value stands")
		}
		assert.NotContains(t, stderr.String(), "Killed")
		assert.Empty(t, stderr.String())
	}
}

// Two dead runs, each with its own job name, left a job each: the next
// apply re-attaches to both, and its status queries ask for both names
// (squeue --name takes a list), so neither job is taken for lost.
func TestReattachedJobsOfTwoDeadRunsAreBothFollowed(t *testing.T) {
	f, e := newFakeExecutor(t)
	spec := func(key string) *executor.Spec {
		return &executor.Spec{
			Node: "stage." + key, RunID: "run-new", Key: key, Attempt: 1,
			Argv: []string{"true"}, Env: os.Environ(), Dir: f.dir,
			Stdout: filepath.Join(f.dir, key+".out"), Stderr: filepath.Join(f.dir, key+".err"),
		}
	}
	ref := func(id, run, key string) process.JobRef {
		return process.JobRef{Executor: "slurm", ID: id, Details: map[string]string{
			"run": run, "exit_file": filepath.Join(f.dir, key+".exit"), "spec": specDigest(spec(key)),
		}}
	}
	f.write("squeue.named", "run-a|71|RUNNING|None\nrun-b|72|RUNNING|None\n")
	e.Recover(context.Background(), []process.JobRef{ref("71", "run-a", "a"), ref("72", "run-b", "b")})
	var jobs []executor.Job
	for _, key := range []string{"a", "b"} {
		j, err := e.Submit(context.Background(), spec(key))
		require.NoError(t, err)
		jobs = append(jobs, j)
	}
	assert.Equal(t, []string{"71", "72"}, []string{jobs[0].Ref().ID, jobs[1].Ref().ID}, "re-attached")
	assert.Equal(t, 0, f.calls("sbatch"))
	deadline := time.Now().Add(30 * time.Second)
	for e.client.State("72") != "RUNNING" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	assert.Equal(t, "RUNNING", e.client.State("71"))
	assert.Equal(t, "RUNNING", e.client.State("72"), "the second dead run's job is seen by its own name")
	f.write("a.exit", "status=0\n")
	f.write("b.exit", "status=0\n")
	f.write("squeue.named", "run-a|71|COMPLETED|None\nrun-b|72|COMPLETED|None\n")
	for _, j := range jobs {
		res := waitExec(t, j)
		assert.Equal(t, "", res.Class, res.Message)
	}
}

// A job no status query shows whose exit file is there ended and was
// forgotten by Slurm (older than MinJobAge): it is collected at once, not
// after LostAfter.
func TestForgottenJobWithItsExitFileIsCollectedAtOnce(t *testing.T) {
	f, c := newFake(t, noAccounting)
	c.opts.LostAfter = time.Hour
	f.write("a.exit", "status=0\n")
	c.Attach(Ref{JobID: "77", Run: "run-1", ExitFile: filepath.Join(f.dir, "a.exit")})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := c.Wait(ctx, Ref{JobID: "77"})
	require.NoError(t, err, "collected without waiting LostAfter")
	assert.Equal(t, "", out.Class, out.Message)
}

// A machine with no Slurm configuration at all (no SLURM_CONF, no
// slurm.conf, no configless DNS record) is refused at once, saying what
// to do, not after minutes of retries: no retry makes a configuration
// appear.
func TestNoSlurmConfigurationIsRefusedAtOnce(t *testing.T) {
	f := &fake{t: t, dir: t.TempDir()}
	t.Setenv("FAKE_SLURM", f.dir)
	t.Setenv("SLURM_CONF", "")
	f.write("scontrol.fail", "scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n"+
		"scontrol: error: fetch_config: DNS SRV lookup failed\n"+
		"scontrol: error: _establish_config_source: failed to fetch config\n"+
		"scontrol: fatal: Could not establish a configuration source\n")
	bin, err := filepath.Abs("testdata/fakebin")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = NewExecutor(ctx, Options{Bin: bin, RetryBackoff: 10 * time.Millisecond})
	require.Error(t, err)
	assert.NoError(t, ctx.Err(), "refused before the wait's end")
	assert.Equal(t, 1, f.calls("scontrol"), "not retried")
	assert.Contains(t, err.Error(), "Could not establish a configuration source")
	assert.Contains(t, err.Error(), "set SLURM_CONF")
}

// With Leave (--leave-jobs), an interrupt leaves the job running and its
// result says so, for the journal: the next apply re-attaches to it. A
// job cancelled at an interrupt is not left.
func TestLeftJobSaysItWasLeft(t *testing.T) {
	f, e := newFakeExecutor(t)
	e.Leave = true
	ctx, cancel := context.WithCancel(context.Background())
	j, err := e.Submit(ctx, &executor.Spec{
		Node: "stage.a", RunID: "run-1", Key: "k1", Attempt: 1,
		Argv: []string{"true"}, Env: os.Environ(), Dir: f.dir, Stdout: filepath.Join(f.dir, "k1.out"), Stderr: filepath.Join(f.dir, "k1.err"),
	})
	require.NoError(t, err)
	f.write("squeue.out", j.Ref().ID+"|RUNNING|None\n")
	cancel()
	res := waitExec(t, j)
	assert.Equal(t, failclass.Interrupted, res.Class)
	assert.True(t, res.Left, res.Message)
	assert.Empty(t, f.read("scancel.log"), "nothing cancelled")
}

// A pending task cairn cancels at an interrupt leaves squeue with no
// CANCELLED line (Slurm 22.05): gone without an exit file after cairn's
// own scancel, it was cancelled before it ran, and is taken so at once.
func TestCancelledPendingJobThatVanishesIsInterruptedAtOnce(t *testing.T) {
	f, e := newFakeExecutor(t)
	ctx, cancel := context.WithCancel(context.Background())
	j, err := e.Submit(ctx, &executor.Spec{
		Node: "stage.a", RunID: "run-1", Key: "k1", Attempt: 1,
		Argv: []string{"true"}, Env: os.Environ(), Dir: f.dir, Stdout: filepath.Join(f.dir, "k1.out"), Stderr: filepath.Join(f.dir, "k1.err"),
	})
	require.NoError(t, err)
	id := j.Ref().ID
	f.write("squeue.out", id+"|PENDING|Resources\n")
	for e.client.State(id) != "PENDING" {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	for !strings.Contains(f.read("scancel.log"), id) {
		time.Sleep(5 * time.Millisecond)
	}
	f.write("squeue.out", "")
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	res, err := j.Wait(wctx)
	require.NoError(t, err, "decided at once, not after LostAfter")
	assert.Equal(t, failclass.Interrupted, res.Class, res.Message)
}

// A cairn killed while its sbatch waits for a slow controller takes the
// sbatch with it: the submission never happens behind the next apply's
// back (that apply found no job by its comment, and submits its own).
func TestSbatchDiesWithCairn(t *testing.T) {
	if os.Getenv("CAIRN_SLURM_SBATCH_HELPER") != "" {
		// The cairn to kill: it submits, and is killed during the sbatch.
		bin, _ := filepath.Abs("testdata/fakebin")
		c, err := New(context.Background(), "run-1", Options{Bin: bin})
		if err != nil {
			os.Exit(3)
		}
		f := &fake{t: t, dir: os.Getenv("FAKE_SLURM")}
		_, _ = c.Submit(context.Background(), f.job("a"))
		os.Exit(0)
	}
	f := &fake{t: t, dir: t.TempDir()}
	f.write("config", noAccounting)
	f.write("sbatch.delay", "2")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSbatchDiesWithCairn$")
	cmd.Env = append(os.Environ(), "CAIRN_SLURM_SBATCH_HELPER=1", "FAKE_SLURM="+f.dir)
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(30 * time.Second)
	for f.calls("sbatch") == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, 1, f.calls("sbatch"), "the sbatch started")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	time.Sleep(3 * time.Second) // past the slow controller's delay
	assert.Empty(t, f.read("comments"), "nothing submitted after cairn died")
}

// The next apply looks up a dead run's job journaled before its sbatch
// answered: where Slurm does not show it yet, the sbatch may still be on
// its way (a slow controller), and it looks again until no sbatch of the
// dead run can be left, instead of submitting the node a second time.
func TestSubmissionInFlightIsWaitedFor(t *testing.T) {
	f, e := newFakeExecutor(t)
	e.opts.CallTimeout = time.Second
	spec := f.instance(0, 0)
	digest := specDigest(spec)
	pending := process.JobRef{Executor: "slurm", Details: map[string]string{
		"run": "run-dead", "exit_file": strings.TrimSuffix(spec.Stdout, ".out") + ".exit", "spec": digest,
		"comment": "cairn stage.x[\"0\"] attempt 1 sub beef", "submitting_ns": strconv.FormatInt(time.Now().UnixNano(), 10),
	}}
	e.Recover(context.Background(), []process.JobRef{pending})
	go func() {
		// The dead run's sbatch lands a moment later.
		time.Sleep(300 * time.Millisecond)
		f.write("comments", "777|cairn stage.x[\"0\"] attempt 1 sub beef\n")
	}()
	j, err := e.Submit(context.Background(), spec)
	require.NoError(t, err)
	assert.Equal(t, "777", j.Ref().ID, "re-attached to the job that landed")
	assert.Equal(t, 0, f.calls("sbatch"), "not submitted twice")
}

// Ctrl-C while a dead run's submission is looked for (the next apply's
// wait for an sbatch that may still land) ends the node as interrupted,
// submitting nothing: not as an infrastructure failure, which a retry
// block would retry, with a bare "context canceled".
func TestInterruptWhileADeadRunsSubmissionIsLookedFor(t *testing.T) {
	f, e := newFakeExecutor(t)
	e.opts.CallTimeout = time.Second
	spec := f.instance(0, 0)
	pending := process.JobRef{Executor: "slurm", Details: map[string]string{
		"run": "run-dead", "exit_file": strings.TrimSuffix(spec.Stdout, ".out") + ".exit", "spec": specDigest(spec),
		"comment": "cairn stage.x[\"0\"] attempt 1 sub beef", "submitting_ns": strconv.FormatInt(time.Now().UnixNano(), 10),
	}}
	e.Recover(context.Background(), []process.JobRef{pending})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		e2etest.WaitFor(t, "the lookup to begin", 10*time.Second, func() bool { return f.calls("squeue") > 0 })
		cancel()
	}()
	j, err := e.Submit(ctx, spec)
	require.NoError(t, err)
	res, err := j.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, failclass.Interrupted, res.Class, res.Message)
	assert.NotContains(t, res.Message, "context canceled")
	assert.Equal(t, 0, f.calls("sbatch"), "nothing submitted")
}
