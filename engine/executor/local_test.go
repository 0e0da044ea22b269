package executor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/process"
)

func sleepSpec(t *testing.T) *Spec {
	dir := t.TempDir()
	return &Spec{Node: "stage.s", Argv: []string{"sleep", "60"}, Env: os.Environ(), Dir: dir,
		Stdout: filepath.Join(dir, "out"), Stderr: filepath.Join(dir, "err")}
}

// Submit returns at once with the job's reference, given to Started too;
// Cancel ends it, and Wait reports it interrupted.
func TestLocalSubmitCancel(t *testing.T) {
	spec := sleepSpec(t)
	var started process.JobRef
	spec.Started = func(ref process.JobRef) { started = ref }
	job, err := Local{}.Submit(context.Background(), spec)
	require.NoError(t, err)
	assert.Equal(t, started, job.Ref())
	pid, pgid, _, ok := LocalProcess(job.Ref())
	require.True(t, ok)
	assert.Equal(t, pid, pgid)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = job.Wait(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "the job runs on after a wait gives up")

	require.NoError(t, job.Cancel(false))
	res, err := job.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, failclass.Interrupted, res.Class)
	assert.Equal(t, pid, res.PID)
}

// A job ended by Submit's context is interrupted as a cancelled one is.
func TestLocalSubmitContextEnds(t *testing.T) {
	spec := sleepSpec(t)
	spec.KillGrace = 0
	ctx, cancel := context.WithCancel(context.Background())
	job, err := Local{}.Submit(ctx, spec)
	require.NoError(t, err)
	cancel()
	res, err := job.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, failclass.Interrupted, res.Class)
}

// A process that cannot start is a job that has ended, with the setup
// class.
func TestLocalSubmitNotFound(t *testing.T) {
	spec := sleepSpec(t)
	spec.Argv = []string{"no-such-program-cairn"}
	job, err := Local{}.Submit(context.Background(), spec)
	require.NoError(t, err)
	res, err := job.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, failclass.Setup, res.Class)
	assert.Contains(t, res.Message, "not found on PATH")
}

// Attach finds a recorded process group while it lives, and ErrGone once
// it is gone; Recover kills it.
func TestLocalAttachRecover(t *testing.T) {
	job, err := Local{}.Submit(context.Background(), sleepSpec(t))
	require.NoError(t, err)
	ref := job.Ref()
	att, err := Local{}.Attach(context.Background(), ref)
	require.NoError(t, err)
	assert.Equal(t, ref, att.Ref())

	killed := Local{}.Recover(context.Background(), []process.JobRef{ref, {Executor: "slurm", ID: "1"}})
	assert.Equal(t, []string{ref.ID}, killed)
	res, err := att.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, failclass.Interrupted, res.Class)
	_, err = job.Wait(context.Background())
	require.NoError(t, err)
	_, err = Local{}.Attach(context.Background(), ref)
	assert.ErrorIs(t, err, ErrGone)
}

// procStat reads this process's own group and start time, and a program
// is found on the PATH a node's env gives it, not cairn's.
func TestProcStatAndLookPath(t *testing.T) {
	pgid, start, ok := procStat(os.Getpid())
	require.True(t, ok)
	assert.Equal(t, syscall.Getpgrp(), pgid)
	assert.NotZero(t, start)
	_, _, ok = procStat(1 << 30) // no such process
	assert.False(t, ok)

	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data"), nil, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "folder"), 0o755))
	env := []string{"PATH=/nonexistent:" + dir}
	p, err := lookPath("prog", env)
	require.NoError(t, err)
	assert.Equal(t, prog, p)
	for _, name := range []string{"data", "folder", "missing"} {
		_, err := lookPath(name, env)
		assert.ErrorIs(t, err, exec.ErrNotFound, "%s is no program", name)
	}
}

// A process given no stdin reads /dev/null, one after another: the one
// file cairn opens for them all stays open.
func TestLocalStdinDevNull(t *testing.T) {
	for i := 0; i < 2; i++ {
		spec := sleepSpec(t)
		spec.Argv = []string{"sh", "-c", `test "$(readlink /proc/self/fd/0)" = /dev/null && test -z "$(cat)"`}
		job, err := Local{}.Submit(context.Background(), spec)
		require.NoError(t, err)
		res, err := job.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 0, res.ExitCode, "run %d", i)
		assert.Empty(t, res.Class, "run %d: %s", i, res.Message)
	}
}

// bothWays runs a test twice: with the poll loop supervising the job (on
// Linux), and with goroutines doing it, as on a system without pidfds.
func bothWays(t *testing.T, test func(t *testing.T)) {
	for _, off := range []bool{false, true} {
		name := "poll"
		if off {
			name = "goroutines"
		}
		t.Run(name, func(t *testing.T) {
			old := pollOff
			pollOff = off
			defer func() { pollOff = old }()
			test(t)
		})
	}
}

// shSpec is a spec running script with sh, in its own folder.
func shSpec(t *testing.T, script string) *Spec {
	spec := sleepSpec(t)
	spec.Argv = []string{"sh", "-c", script}
	return spec
}

// logHas reports whether the log at path holds s.
func logHas(path, s string) bool {
	b, _ := os.ReadFile(path)
	return strings.Contains(string(b), s)
}

// run submits spec and waits for it, for up to a minute.
func run(t *testing.T, spec *Spec) *process.Result {
	t.Helper()
	job, err := Local{}.Submit(context.Background(), spec)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := job.Wait(ctx)
	if err != nil {
		_ = job.Cancel(true)
		t.Fatalf("the job has not ended: %v", err)
	}
	return res
}

// A node that writes far more than a pipe holds to both streams, in turns,
// finds all of it in its two logs, in order.
func TestLocalLogsLargeInterleaved(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		const lines = 3000 // about 300 KiB a stream
		pad := strings.Repeat("x", 90)
		spec := shSpec(t, `i=0; while [ $i -lt `+strconv.Itoa(lines)+` ]; do echo "out $i `+pad+`"; echo "err $i `+pad+`" >&2; i=$((i+1)); done; head -c 200000 /dev/zero | tr '\0' o; head -c 200000 /dev/zero | tr '\0' e >&2`)
		res := run(t, spec)
		require.Empty(t, res.Class, res.Message)
		var wantOut, wantErr strings.Builder
		for i := 0; i < lines; i++ {
			fmt.Fprintf(&wantOut, "out %d %s\n", i, pad)
			fmt.Fprintf(&wantErr, "err %d %s\n", i, pad)
		}
		wantOut.WriteString(strings.Repeat("o", 200000))
		wantErr.WriteString(strings.Repeat("e", 200000))
		out, err := os.ReadFile(spec.Stdout)
		require.NoError(t, err)
		assert.True(t, string(out) == wantOut.String(), "stdout: %d bytes, want %d", len(out), wantOut.Len())
		errb, err := os.ReadFile(spec.Stderr)
		require.NoError(t, err)
		assert.True(t, string(errb) == wantErr.String(), "stderr: %d bytes, want %d", len(errb), wantErr.Len())
		assert.Equal(t, []byte(strings.Repeat("e", 16<<10)), res.StderrTail)
	})
}

// A log is written as the bytes arrive: it can be followed while the node
// runs.
func TestLocalLogsWrittenWhileRunning(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		spec := shSpec(t, `echo first; echo first-err >&2; while [ ! -e go-on ]; do sleep 0.01; done; echo second`)
		job, err := Local{}.Submit(context.Background(), spec)
		require.NoError(t, err)
		e2etest.WaitFor(t, "the first line in the logs", 10*time.Second, func() bool {
			return logHas(spec.Stdout, "first\n") && logHas(spec.Stderr, "first-err\n")
		})
		require.NoError(t, os.WriteFile(filepath.Join(spec.Dir, "go-on"), nil, 0o644))
		res, err := job.Wait(context.Background())
		require.NoError(t, err)
		assert.Empty(t, res.Class, res.Message)
		out, _ := os.ReadFile(spec.Stdout)
		assert.Equal(t, "first\nsecond\n", string(out))
	})
}

// A node that writes nothing leaves no log files, unless its stage named
// them.
func TestLocalQuietNodeNoLogs(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		spec := shSpec(t, "true")
		res := run(t, spec)
		assert.Empty(t, res.Class, res.Message)
		assert.False(t, LogWritten(spec.Stdout))
		assert.False(t, LogWritten(spec.Stderr))
		assert.Empty(t, res.StderrTail)

		spec = shSpec(t, "echo only-err >&2")
		run(t, spec)
		assert.False(t, LogWritten(spec.Stdout))
		assert.True(t, logHas(spec.Stderr, "only-err\n"))

		spec = shSpec(t, "true")
		spec.NamedLogs = true
		run(t, spec)
		for _, p := range []string{spec.Stdout, spec.Stderr} {
			st, err := os.Stat(p)
			require.NoError(t, err)
			assert.Zero(t, st.Size())
		}
	})
}

// A process that left the node's group and holds its pipes open is cut
// off about a second after the node's own process has ended: the job
// ends, and what it wrote before is in the log.
func TestLocalEscapedChildCutOff(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		spec := shSpec(t, `setsid sh -c 'echo $$ > child.pid; echo child; echo child-err >&2; touch ready; exec sleep 60' & while [ ! -e ready ]; do sleep 0.01; done; echo main`)
		t.Cleanup(func() {
			if b, err := os.ReadFile(filepath.Join(spec.Dir, "child.pid")); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
		res := run(t, spec)
		waited := time.Since(res.Ended)
		assert.Empty(t, res.Class, res.Message)
		assert.GreaterOrEqual(t, waited, 900*time.Millisecond, "the pipes are drained for a second")
		assert.Less(t, waited, 5*time.Second)
		out, _ := os.ReadFile(spec.Stdout)
		assert.ElementsMatch(t, []string{"child", "main"}, strings.Fields(string(out)))
		assert.Equal(t, []byte("child-err\n"), res.StderrTail)
	})
}

// trapScript says "ready" once it has set a trap for SIGTERM, which writes
// "term" to stderr and then runs then, and waits for ever.
func trapScript(then string) string {
	return `trap 'echo term >&2; ` + then + `' TERM; echo ready; while :; do sleep 0.02; done`
}

// At its timeout a process is sent SIGTERM, and SIGKILL after the kill
// grace; with a grace of 0, SIGKILL comes right after SIGTERM.
func TestLocalTimeout(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		spec := shSpec(t, trapScript(":"))
		spec.Timeout = time.Second
		spec.KillGrace = 300 * time.Millisecond
		res := run(t, spec)
		assert.True(t, res.TimedOut)
		assert.Equal(t, failclass.Timeout, res.Class, res.Message)
		assert.Equal(t, "killed", res.Signal)
		assert.GreaterOrEqual(t, res.Ended.Sub(res.Started), 1300*time.Millisecond)
		assert.True(t, logHas(spec.Stdout, "ready"))
		assert.True(t, logHas(spec.Stderr, "term"), "SIGTERM came first")

		spec = shSpec(t, trapScript(":"))
		spec.Timeout = 500 * time.Millisecond
		spec.KillGrace = 0
		res = run(t, spec)
		assert.True(t, res.TimedOut)
		assert.Equal(t, "killed", res.Signal)
		assert.Less(t, res.Ended.Sub(res.Started), 5*time.Second, "no grace")

		// A process that ends at SIGTERM is not killed.
		spec = shSpec(t, trapScript("exit 3"))
		spec.Timeout = 500 * time.Millisecond
		spec.KillGrace = -1 // 10 s
		res = run(t, spec)
		assert.True(t, res.TimedOut)
		assert.Equal(t, failclass.Timeout, res.Class)
		assert.Equal(t, 3, res.ExitCode)
		assert.Less(t, res.Ended.Sub(res.Started), 5*time.Second)
	})
}

// startReady submits spec and waits until its process says "ready".
func startReady(t *testing.T, ctx context.Context, spec *Spec) Job {
	t.Helper()
	job, err := Local{}.Submit(ctx, spec)
	require.NoError(t, err)
	e2etest.WaitFor(t, "the process to be ready", 10*time.Second, func() bool { return logHas(spec.Stdout, "ready") })
	return job
}

// killedAfterGrace waits for a job asked to stop softly at stopped: it
// was interrupted, got SIGTERM (its trap logs "term" and goes on), and was
// killed once spec's kill grace had passed.
func killedAfterGrace(t *testing.T, job Job, spec *Spec, stopped time.Time) {
	t.Helper()
	res, err := job.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, failclass.Interrupted, res.Class)
	assert.Equal(t, "killed", res.Signal)
	assert.GreaterOrEqual(t, res.Ended.Sub(stopped), spec.KillGrace, "killed after the grace")
	assert.True(t, logHas(spec.Stderr, "term"))
}

// Cancel(false) sends SIGTERM, then SIGKILL after the grace; Cancel(true)
// kills at once; either way the job is interrupted. Cancel returns at once
// once the job has ended.
func TestLocalCancelRunning(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		spec := shSpec(t, trapScript("exit 3"))
		spec.KillGrace = -1
		job := startReady(t, context.Background(), spec)
		require.NoError(t, job.Cancel(false))
		res, err := job.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, failclass.Interrupted, res.Class)
		assert.Equal(t, 3, res.ExitCode)
		assert.True(t, logHas(spec.Stderr, "term"))

		spec = shSpec(t, trapScript(":"))
		spec.KillGrace = 300 * time.Millisecond
		job = startReady(t, context.Background(), spec)
		cancelled := time.Now()
		require.NoError(t, job.Cancel(false))
		killedAfterGrace(t, job, spec, cancelled)

		spec = shSpec(t, trapScript(":"))
		spec.KillGrace = -1
		job = startReady(t, context.Background(), spec)
		require.NoError(t, job.Cancel(true))
		res, err = job.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, failclass.Interrupted, res.Class)
		assert.Equal(t, "killed", res.Signal)
		assert.Less(t, res.Ended.Sub(res.Started), 5*time.Second, "no grace")
		assert.False(t, logHas(spec.Stderr, "term"), "no SIGTERM")

		done := make(chan struct{})
		go func() {
			_ = job.Cancel(false)
			_ = job.Cancel(true)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Cancel blocks once the job has ended")
		}
	})
}

// The end of Submit's context is Cancel(false); the close of the hard
// channel is Cancel(true).
func TestLocalContextAndHard(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		spec := shSpec(t, trapScript(":"))
		spec.KillGrace = 300 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		job := startReady(t, ctx, spec)
		cancelled := time.Now()
		cancel()
		killedAfterGrace(t, job, spec, cancelled)

		// The hard channel closed while a soft stop waits for its grace.
		spec = shSpec(t, trapScript(":"))
		spec.KillGrace = -1
		hard := make(chan struct{})
		spec.Hard = hard
		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		job = startReady(t, ctx, spec)
		cancel()
		e2etest.WaitFor(t, "SIGTERM", 10*time.Second, func() bool { return logHas(spec.Stderr, "term") })
		close(hard)
		res, err := job.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, failclass.Interrupted, res.Class)
		assert.Equal(t, "killed", res.Signal)
		assert.Less(t, res.Ended.Sub(res.Started), 5*time.Second, "not the 10 s grace")
	})
}

// A stdin that is not a file is copied to the process.
func TestLocalStdinReader(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		spec := shSpec(t, "cat")
		spec.Stdin = strings.NewReader("hello\n")
		res := run(t, spec)
		assert.Empty(t, res.Class, res.Message)
		assert.True(t, logHas(spec.Stdout, "hello\n"))
	})
}

// A program the kernel refuses to start leaves cairn's word on it in the
// stderr log, and the node fails with the setup class.
func TestLocalCannotStart(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		spec := sleepSpec(t)
		require.NoError(t, os.WriteFile(filepath.Join(spec.Dir, "prog"), []byte("#!/bin/sh\n"), 0o644))
		spec.Argv = []string{"./prog"}
		res := run(t, spec)
		assert.Equal(t, failclass.Setup, res.Class)
		assert.True(t, logHas(spec.Stderr, "cairn: cannot start ./prog"), "stderr log: %q", FileTail(spec.Stderr, 1000))
		assert.False(t, LogWritten(spec.Stdout))
	})
}

// A process's peak memory is read from its rusage once it is reaped,
// where it is the process's own: a small process is never given cairn's
// memory (which a vfork child's rusage counts), one larger than cairn
// gets its own peak.
func TestLocalPeakRSS(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		res := run(t, shSpec(t, `true`))
		assert.Empty(t, res.Class, res.Message)
		assert.Less(t, res.PeakRSSMiB, float64(gpu.SelfMaxRSSKiB())/1024, "true's peak is not cairn's")

		own := float64(gpu.SelfMaxRSSKiB())/1024 + 64
		res = run(t, shSpec(t, fmt.Sprintf(`x=$(head -c %d /dev/zero | tr '\0' a); echo ${#x}`, int(own)<<20)))
		assert.Empty(t, res.Class, res.Message)
		assert.GreaterOrEqual(t, res.PeakRSSMiB, own, "a shell holding %.0f MiB", own)
	})
}

// The start time a job's reference gives is the one the process table
// gives, whether it was bracketed by the boot clock around the fork or read
// from /proc: Recover and Attach tell a node's group from a later process
// by it.
func TestJobRefStartTimeIsTheProcessTables(t *testing.T) {
	for i := 0; i < 40; i++ {
		j, err := Local{}.Submit(context.Background(), sleepSpec(t))
		require.NoError(t, err)
		pid, _, start, ok := LocalProcess(j.Ref())
		require.True(t, ok)
		_, want, ok := procStat(pid)
		require.True(t, ok)
		assert.Equal(t, want, start, "start of %d", pid)
		require.NoError(t, j.Cancel(true))
		_, _ = j.Wait(context.Background())
	}
	// And the bracket itself: a fork between two reads in one tick
	// started in that tick.
	if clockTick() == 0 {
		t.Skip("no AT_CLKTCK in the auxiliary vector")
	}
	bracketed := 0
	for i := 0; i < 40; i++ {
		before := bootClock()
		cmd := exec.Command("sleep", "30")
		require.NoError(t, cmd.Start())
		after := bootClock()
		if ticks, ok := forkTicks(before, after); ok {
			bracketed++
			_, want, ok := procStat(cmd.Process.Pid)
			require.True(t, ok)
			assert.Equal(t, want, ticks)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	assert.NotZero(t, bracketed, "no fork fell within one tick")
	_, ok := forkTicks(10*clockTick()-1, 10*clockTick())
	assert.False(t, ok, "reads in two ticks do not tell which")
}

// A node log cairn cannot write (/dev/full: a full disk) fails the job
// with class infrastructure, naming the error: the process is not at
// fault, nor did it fail to start.
func TestLocalLogWriteFailureIsInfrastructure(t *testing.T) {
	spec := sleepSpec(t)
	spec.Argv = []string{"sh", "-c", "echo hello"}
	spec.Stdout = "/dev/full"
	job, err := Local{}.Submit(context.Background(), spec)
	require.NoError(t, err)
	res, err := job.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, failclass.Infra, res.Class)
	assert.Contains(t, res.Message, "cannot write its log")
	assert.Contains(t, res.Message, "no space left on device")
}

// A job with AppendLogs adds its output to the end of the log files; one
// without writes over them.
func TestLocalAppendLogs(t *testing.T) {
	spec := sleepSpec(t)
	run := func(word string, appends bool) {
		s := *spec
		s.Argv = []string{"sh", "-c", "echo " + word + "; echo " + word + "-err >&2"}
		s.AppendLogs = appends
		job, err := Local{}.Submit(context.Background(), &s)
		require.NoError(t, err)
		res, err := job.Wait(context.Background())
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode)
	}
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	run("first", false)
	run("second", true)
	assert.Equal(t, "first\nsecond\n", read(spec.Stdout))
	assert.Equal(t, "first-err\nsecond-err\n", read(spec.Stderr))
	run("third", false)
	assert.Equal(t, "third\n", read(spec.Stdout))
}

// A signal is named as people look it up, its number and Go's word for it
// beside: "killed by signal killed" said nothing.
func TestSignalText(t *testing.T) {
	assert.Equal(t, "SIGKILL (9, killed)", signalText(syscall.SIGKILL.String()))
	assert.Equal(t, "SIGSEGV (11, segmentation fault)", signalText(syscall.SIGSEGV.String()))
	assert.Equal(t, "something else", signalText("something else"))
}
