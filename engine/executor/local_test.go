package executor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl"
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
	var started JobRef
	spec.Started = func(ref JobRef) { started = ref }
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
	assert.Equal(t, dsl.ClassInterrupted, res.Class)
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
	assert.Equal(t, dsl.ClassInterrupted, res.Class)
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
	assert.Equal(t, dsl.ClassSetup, res.Class)
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

	killed := Local{}.Recover(context.Background(), []JobRef{ref, {Executor: "slurm", ID: "1"}})
	assert.Equal(t, []string{ref.ID}, killed)
	res, err := att.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, dsl.ClassInterrupted, res.Class)
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
