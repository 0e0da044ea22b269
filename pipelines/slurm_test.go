package pipelines_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine/executor/slurm/slurmtest"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/runreport"
	"github.com/cairn-run/cairn/syncbuf"
)

// The seed-000 batch on the local Slurm cluster (scripts/slurm-up.sh: one
// node, two fake GPUs): every node is a Slurm job, and the batch of four
// runs two variants at a time, each job with its own CUDA_VISIBLE_DEVICES
// from Slurm.

func squeue(t *testing.T, args ...string) string {
	t.Helper()
	return slurmtest.Call(t, "squeue", args...)
}

func TestSlurmDemoBatch(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	out, code := w.apply("--executor", "slurm")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Pareto front on (throughput, mean@16): ")

	// Two waves of two on the partition's two GPUs.
	es := w.lastJournal()
	leases := batchLeases(es)
	require.Len(t, leases, 4)
	waves := map[int][]string{}
	for _, l := range leases {
		waves[l.wave] = append(waves[l.wave], l.name)
	}
	assert.Equal(t, map[int][]string{1: {"v0", "v1"}, 2: {"v2", "v3"}}, waves)

	// Each variant ran once, as a Slurm job (SLURM_JOB_ID set), and the two
	// of a wave had the two GPUs, as Slurm gave them.
	runs := w.simRuns("aime24")
	assert.Equal(t, map[string]int{"v0": 1, "v1": 1, "v2": 1, "v3": 1}, runs)
	devs := map[string]string{}
	for _, r := range w.simLog() {
		if r.Program == "aime24" {
			devs[strings.TrimSuffix(filepath.Base(r.Config), ".json")] = r.CUDAVisibleDevices
		}
	}
	for _, wave := range waves {
		got := map[string]bool{}
		for _, v := range wave {
			got[devs[v]] = true
		}
		assert.Equal(t, map[string]bool{"0": true, "1": true}, got, "the variants of a wave on the two GPUs: %v", devs)
	}
	run := w.runs()[len(w.runs())-1].ID
	jobs := squeue(t, "--noheader", "--states=all", "--name="+run, "--format=%T")
	assert.Equal(t, 12, strings.Count(jobs, "COMPLETED"), "4 preflights, 4 RULER runs and 4 variants, each one job:\n%s", jobs)

	// A second apply takes everything from the cache and submits nothing.
	out, code = w.apply("--executor", "slurm")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "0 ran")
}

// A job cancelled from outside cairn fails its node with class killed,
// and the message says so.
func TestSlurmCancelledFromOutside(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	w.write("main.hcl", slurmPipeline+`stage "command" "sleeper" {
  run = ["sh", "-c", "touch started; sleep 300"]
}
`)
	done := make(chan struct{})
	var out string
	var code int
	go func() {
		defer close(done)
		out, code = w.run("apply", "main.hcl")
	}()
	e2etest.WaitFor(t, "the job to start", 2*time.Minute, func() bool {
		_, err := os.Stat(filepath.Join(w.dir, "started"))
		return err == nil
	})
	// The run's one job, by the run id its job name is.
	run := w.runs()[len(w.runs())-1].ID
	id := strings.TrimSpace(squeue(t, "--noheader", "--name="+run, "--format=%i"))
	require.NotEmpty(t, id, "the job of stage.sleeper in squeue")
	slurmtest.Call(t, "scancel", id)
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("cairn did not end within 3 minutes of the scancel")
	}
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, fmt.Sprintf("stage.sleeper failed (killed): Slurm job %s: the job was cancelled", id))
}

// A job's command killed by a signal that cairn did not send is class
// killed, with the signal named, as on the local executor; through a
// shell (shell = true), whose own status is then 128+N, it is an exit
// status, as it is locally.
func TestSlurmCommandKilledBySignal(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	t.Parallel()
	w.write("main.hcl", slurmPipeline+`stage "command" "direct" {
  run = ["sh", "-c", "kill -KILL $$"]
}
stage "command" "shell" {
  run   = ["sh -c 'kill -KILL $$'"]
  shell = true
}
`)
	out, code := w.run("apply", "main.hcl")
	assert.Equal(t, 1, code, out)
	assert.Regexp(t, `stage\.direct failed \(killed\): Slurm job \d+: killed by signal SIGKILL \(9, killed\) \(the job's script saw exit status 137\); not sent by cairn`, out)
	assert.Regexp(t, `stage\.shell failed \(exit\): Slurm job \d+: exited with status 137`, out)
}

// kill -9 of cairn while its jobs run, then apply again: the second apply
// re-attaches to the jobs the first left (waits for those still running,
// collects those that ended) and submits none of them again, as the nodes'
// own execution log shows; only the downstream node is a new job.
func TestSlurmKillThenReattach(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	// a and b end at once; c and d wait for the file release.
	w.write("main.hcl", workThenSum([]string{"a", "b", "c", "d"}, "${each.key} = c ] || [ ${each.key} = d", "release"))
	execLog := w.execLog
	first := w.command("apply", "main.hcl")
	require.NoError(t, first.Start())
	e2etest.WaitFor(t, "a and b to end and c and d to start", 2*time.Minute, func() bool {
		l := execLog()
		return strings.Contains(l, "end a") && strings.Contains(l, "end b") && strings.Contains(l, "start c") && strings.Contains(l, "start d")
	})
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	run := w.runs()[0].ID

	second := w.command("apply", "main.hcl")
	var out strings.Builder
	second.Stdout, second.Stderr = &out, &out
	require.NoError(t, second.Start())
	// c and d are still running: the second apply follows their jobs
	// (its journal names them) before they are let go.
	e2etest.WaitFor(t, "the second apply to take c and d's jobs", 2*time.Minute, func() bool {
		rs := w.runs()
		if len(rs) < 2 {
			return false
		}
		n := 0
		for _, e := range rs[1].Entries {
			if e.T == "started" && e.Job != nil && (strings.Contains(e.Node, `"c"`) || strings.Contains(e.Node, `"d"`)) {
				n++
			}
		}
		return n == 2
	})
	w.write("release", "")
	done := make(chan error, 1)
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, out.String())
	case <-time.After(3 * time.Minute):
		t.Fatalf("the second apply did not end within 3 minutes:\n%s", out.String())
	}

	l := execLog()
	for _, k := range []string{"a", "b", "c", "d"} {
		assert.Equal(t, 1, strings.Count(l, "start "+k+"\n"), "work[%q] ran once:\n%s", k, l)
		assert.Equal(t, 1, strings.Count(l, "end "+k+"\n"), "work[%q] ended once:\n%s", k, l)
	}
	assert.Equal(t, 1, strings.Count(l, "sum\n"))
	b, err := os.ReadFile(filepath.Join(w.dir, "sum.txt"))
	require.NoError(t, err)
	assert.Equal(t, "a\nb\nc\nd\n", string(b))
	// The re-attached jobs' durations are their commands' own, from
	// their start in the first run (#29).
	checkDurations(t, w, w.runs()[1], out.String(), "c", "d")
	// Their time in Slurm's queue counts from the first run's sbatch.
	for _, k := range []string{"a", "b", "c", "d"} {
		checkReattachedQueue(t, w, w.runs()[1].ID, fmt.Sprintf("stage.work[%q]", k))
	}
	// Five jobs in all (work's four are one array's tasks), every one
	// under the first run's name.
	jobs := squeue(t, "--noheader", "--states=all", "--name="+run, "--format=%k")
	assert.Equal(t, 5, strings.Count(jobs, "cairn "), "one job per node:\n%s", jobs)
	assert.Equal(t, 4, strings.Count(jobs, "cairn array stage.work tasks 4 "), "work's instances, ready together, are one array:\n%s", jobs)
}

// killOnceStarted applies main.hcl in w and kills cairn (kill -9) once the
// job has made the file "started", and returns that run, the workspace's
// first.
func killOnceStarted(t *testing.T, w *workspace) *runlog.RunInfo {
	t.Helper()
	first := w.command("apply", "main.hcl")
	require.NoError(t, first.Start())
	e2etest.WaitFor(t, "the job to start", 2*time.Minute, func() bool {
		_, err := os.Stat(filepath.Join(w.dir, "started"))
		return err == nil
	})
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	return w.runs()[0]
}

// A job cancelled while cairn was down: the next apply re-attaches to it,
// fails its node with class killed and points at the log the job wrote,
// the dead run's, which holds Slurm's cancel line (#29).
func TestSlurmCancelledWhileCairnWasDown(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	t.Parallel()
	// squeue and scancel must reach the controller while cairn is down.
	slurmtest.HoldController(t)
	w.write("main.hcl", slurmPipeline+`stage "command" "sleeper" {
  run = ["sh", "-c", "touch started; exec sleep 300"]
}
`)
	dead := killOnceStarted(t, w)
	var logs []string
	for _, e := range dead.Entries {
		if e.T == "started" {
			logs = e.Logs
		}
	}
	require.Len(t, logs, 2, "the dead run journaled its job's logs")
	id := strings.TrimSpace(squeue(t, "--noheader", "--name="+dead.ID, "--format=%i"))
	require.NotEmpty(t, id, "the job of stage.sleeper in squeue")
	slurmtest.Call(t, "scancel", id)
	e2etest.WaitFor(t, "Slurm's cancel line in the job's log", 2*time.Minute, func() bool {
		b, _ := os.ReadFile(logs[1])
		return strings.Contains(string(b), "CANCELLED")
	})

	out, code := w.run("apply", "main.hcl")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, fmt.Sprintf("stage.sleeper failed (killed): Slurm job %s: the job was cancelled", id))
	assert.Contains(t, out, "  log: "+logs[1]+"\n", "the log the job wrote, in the dead run's folder")
	assert.NotContains(t, out, "log: none")
	assert.Regexp(t, `  \| .*\*\*\* JOB `+id+` .*CANCELLED`, out, "its tail")
}

// A job that ended while cairn was down, whose output was edited before
// the next apply re-attached to it (the same size: 42 made 77): that apply
// marks the output before it looks at the job, and the edit is seen all
// the same. The node fails with class result and nothing is stored; the
// apply after runs it again.
func TestSlurmOutputEditedWhileCairnWasDown(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	t.Parallel()
	// squeue must answer while cairn is down.
	slurmtest.HoldController(t)
	w.write("main.hcl", slurmPipeline+`stage "command" "gen" {
  run     = ["sh", "-c", "touch started; while [ ! -e go ]; do sleep 0.2; done; mkdir -p out && echo 42 > out/v.txt"]
  outputs = ["out/v.txt"]
}
`)
	dead := killOnceStarted(t, w).ID
	w.write("go", "")
	e2etest.WaitFor(t, "the job to end", 2*time.Minute, func() bool {
		return strings.TrimSpace(squeue(t, "--noheader", "--name="+dead)) == ""
	})
	v := filepath.Join(w.dir, "out", "v.txt")
	b, err := os.ReadFile(v)
	require.NoError(t, err)
	require.Equal(t, "42\n", string(b))
	require.NoError(t, os.WriteFile(v, []byte("77\n"), 0o666))

	out, code := w.run("apply", "main.hcl")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "stage.gen failed (result)")
	assert.Contains(t, out, "its output out/v.txt changed after the job ended")

	out, code = w.run("apply", "main.hcl")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "1 ran", "nothing was stored of the edited output")
	b, err = os.ReadFile(v)
	require.NoError(t, err)
	assert.Equal(t, "42\n", string(b))
}

// Ctrl-C cancels every job of the run (one scancel) and journals the
// nodes interrupted; with --leave-jobs the jobs go on.
func TestSlurmInterrupt(t *testing.T) {
	slurmtest.Need(t)
	for _, leave := range []bool{false, true} {
		t.Run(fmt.Sprintf("leave=%v", leave), func(t *testing.T) {
			w := newWorkspace(t, "none")
			w.write("main.hcl", slurmPipeline+`stage "command" "sleeper" {
  for_each = toset(["a", "b", "c"])
  run      = ["sh", "-c", "echo ${each.key} >> started; sleep 300"]
}
`)
			args := []string{"apply", "main.hcl"}
			if leave {
				args = append(args, "--leave-jobs")
			}
			cmd := w.command(args...)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			require.NoError(t, cmd.Start())
			e2etest.WaitFor(t, "the three jobs to start", 2*time.Minute, func() bool {
				b, _ := os.ReadFile(filepath.Join(w.dir, "started"))
				return strings.Count(string(b), "\n") == 3
			})
			require.NoError(t, cmd.Process.Signal(os.Interrupt))
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(3 * time.Minute):
				t.Fatalf("cairn did not end within 3 minutes of the interrupt:\n%s", out.String())
			}
			assert.Equal(t, 130, cmd.ProcessState.ExitCode(), out.String())
			run := w.runs()[0].ID
			states := squeue(t, "--noheader", "--states=all", "--name="+run, "--format=%T")
			if leave {
				assert.Equal(t, 3, strings.Count(states, "RUNNING"), "%s", states)
			} else {
				// A running job's script has cairn's SIGTERM first: it ends
				// the command and exits with its status (FAILED); a job
				// whose script lingers is cancelled after (CANCELLED).
				ended := strings.Count(states, "FAILED") + strings.Count(states, "CANCELLED")
				assert.Equal(t, 3, ended, "%s", states)
			}
			n := 0
			for _, e := range w.runs()[0].Entries {
				if e.T == "failed" && e.Class == "interrupted" {
					n++
				}
			}
			assert.Equal(t, 3, n, "three nodes journaled interrupted")
			if leave {
				slurmtest.Call(t, "scancel", "--name="+run)
				// The cancelled jobs' scripts write their exit files into
				// the workspace as they end: wait for their processes to be
				// gone before the workspace is removed.
				e2etest.WaitFor(t, "the cancelled jobs' processes to end", 2*time.Minute, func() bool {
					return len(processesIn(w.dir)) == 0
				})
			}
		})
	}
}

// An interrupt ends a Slurm node's command before its next step: the
// command's shell must not start `echo K >> after` between Slurm's SIGTERM
// to its sleep and its own (a plain scancel signals each of the job's
// processes in turn). Ten instances on eight CPUs: the pending ones are
// cancelled before they start. Each node is journaled interrupted, and no
// `after` line is ever written.
func TestSlurmInterruptEndsTheCommandBeforeItsNextStep(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	w.write("main.hcl", slurmPipeline+`stage "command" "chain" {
  for_each = [for i in range(10) : tostring(i)]
  run      = ["sh", "-c", "echo ${each.key} >> started; sleep 30; echo ${each.key} >> after"]
}
`)
	out, code := applyAndInterrupt(t, w, "eight commands to start", 3*time.Minute, func(string) bool {
		b, _ := os.ReadFile(filepath.Join(w.dir, "started"))
		return strings.Count(string(b), "\n") >= 8
	})
	assert.Equal(t, 130, code, out)
	run := w.runs()[0].ID
	e2etest.WaitFor(t, "the jobs to leave the queue and their processes to end", 2*time.Minute, func() bool {
		return strings.TrimSpace(squeue(t, "--noheader", "--name="+run)) == "" && len(processesIn(w.dir)) == 0
	})
	assert.NoFileExists(t, filepath.Join(w.dir, "after"), "a command went on after the interrupt")
	n := 0
	for _, e := range w.runs()[0].Entries {
		if e.T == "failed" && e.Class == "interrupted" {
			n++
		}
	}
	assert.Equal(t, 10, n, "ten nodes journaled interrupted:\n%s", out)
}

// applyAndInterrupt starts `cairn apply main.hcl` in w, sends it SIGINT
// once ready holds (given its output so far), and returns its output and
// exit status once it has ended, failing t unless that is within limit.
func applyAndInterrupt(t *testing.T, w *workspace, what string, limit time.Duration, ready func(string) bool) (string, int) {
	t.Helper()
	cmd := w.command("apply", "main.hcl")
	out := &output{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	e2etest.WaitFor(t, what, 2*time.Minute, func() bool { return ready(out.String()) })
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("cairn did not end within %s of the interrupt:\n%s", limit, out.String())
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// processesIn lists the processes whose working folder is dir or below it
// (on this one-node cluster, the jobs' scripts and their commands).
func processesIn(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			out = append(out, e.Name())
		}
	}
	return out
}

// A stage's timeout under Slurm's one minute is enforced inside the job,
// as the local executor enforces it: the batch script ends the command at
// 2 s (an 8 s command would otherwise succeed within its --time=1), the
// node fails with class timeout, nothing is cached, and a local apply runs
// it again and ends it the same way (#29).
func TestSlurmTimeoutUnderAMinute(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	t.Parallel()
	w.write("main.hcl", slurmPipeline+`stage "command" "slow" {
  run       = ["sh", "-c", "touch started; sleep 8; echo done > out.txt"]
  outputs   = ["out.txt"]
  timeout   = "2s"
  kill_grace = "1s"
}
`)
	out, code := w.run("apply", "main.hcl")
	assert.Equal(t, 1, code, out)
	assert.Regexp(t, `stage.slow failed \(timeout\): Slurm job \d+: killed at its timeout of 2s`, out)
	assert.FileExists(t, filepath.Join(w.dir, "started"), "the job ran")
	assert.NoFileExists(t, filepath.Join(w.dir, "out.txt"), "the command was ended before it wrote its output")
	n := 0
	for _, e := range w.lastJournal() {
		if e.T == "failed" && e.Class == "timeout" {
			n++
		}
		assert.NotEqual(t, "finished", e.T, "nothing committed")
	}
	assert.Equal(t, 1, n, "one node journaled failed with class timeout")
	exits, _ := filepath.Glob(filepath.Join(w.dir, ".cairn", "runs", "*", "logs", "*.exit"))
	require.Len(t, exits, 1)
	b, err := os.ReadFile(exits[0])
	require.NoError(t, err)
	assert.Contains(t, string(b), "timed_out=1\n", "the exit file says it was the timeout")

	out, code = w.run("apply", "--executor", "local", "main.hcl")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "stage.slow failed (timeout): killed at its timeout of 2s", "run again, not taken from the cache")
}

// A job Slurm accepts but keeps pending for a reason it never leaves (two
// nodes on the one-node cluster: PartitionConfig, then PartitionNodeLimit) fails its node at once,
// class setup, with Slurm's reason and what to check, and cairn cancels
// it, instead of waiting for it for ever.
func TestSlurmJobThatCanNeverRunFailsSetup(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	t.Parallel()
	pipe := strings.Replace(slurmPipeline, `poll_interval = "200ms"`, `poll_interval = "200ms"
    extra_args    = ["--nodes=2"]`, 1)
	w.write("main.hcl", pipe+`stage "command" "two" {
  run     = ["sh", "-c", "echo ran > out.txt"]
  outputs = ["out.txt"]
}
`)
	out, code := w.run("apply", "main.hcl")
	assert.Equal(t, 1, code, out)
	m := regexp.MustCompile(`stage.two failed \(setup\): Slurm job (\d+): Slurm keeps the job pending for reason Partition(Config|NodeLimit)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	assert.Contains(t, out, "cairn cancelled it; check the stage's cpus, memory, gpus and timeout")
	assert.NoFileExists(t, filepath.Join(w.dir, "out.txt"))
	state := slurmtest.Call(t, "squeue", "--noheader", "--states=all", "--jobs="+m[1], "--format=%T")
	assert.NotContains(t, state, "PENDING", "the job was cancelled")
}

// A node asking for more CPUs or memory than the partition's largest node
// has (8 CPUs, 8000 MiB on the local cluster), which Slurm would accept
// and keep pending for ever, is refused by plan and by apply before
// anything runs, as a node asking for too many GPUs is.
func TestSlurmPlanRefusesMoreCPUsOrMemoryThanANode(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	t.Parallel()
	// Plan asks sinfo once, for at most clusterAskFor: not while
	// another test has the controller stopped.
	slurmtest.HoldController(t)
	for _, c := range []struct{ ask, why string }{
		{"cpus = 16", "asks for 16 CPUs; the partition's largest node has 8 (sinfo)"},
		{`memory = "9000M"`, "asks for 9000 MiB of memory; the partition's largest node has 8000 MiB (sinfo)"},
	} {
		w.write("main.hcl", slurmPipeline+`stage "command" "big" {
  `+c.ask+`
  run = ["sh", "-c", "echo ran > ran.txt"]
}
`)
		out, code := w.run("plan", "main.hcl")
		assert.Equal(t, 0, code, out)
		assert.Contains(t, out, "! stage.big  refused: "+c.why, c.ask)
		assert.Contains(t, out, "Plan: 0 to run, 1 refused, 0 cached.", c.ask)
		out, code = w.run("apply", "main.hcl")
		assert.Equal(t, 1, code, out)
		assert.Contains(t, out, "stage.big "+c.why, c.ask)
		assert.NoFileExists(t, filepath.Join(w.dir, "ran.txt"), c.ask)
	}
}

// A job requeued while it runs (scontrol requeue: a node drained, a
// preemption) is followed under its job id: its second run is the one that
// counts, the node is committed once, from that run, and the next apply
// finds it in the cache.
func TestSlurmRequeue(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	t.Parallel()
	// scontrol requeue must reach the controller while the job runs.
	slurmtest.HoldController(t)
	w.write("main.hcl", slurmPipeline+`stage "command" "work" {
  # The first run waits to be requeued (exec: Slurm's signal reaches the
  # sleep itself); the second writes the output.
  run     = ["sh", "-c", "echo start $${SLURM_RESTART_COUNT:-0} >> exec.log; if [ $${SLURM_RESTART_COUNT:-0} = 0 ]; then exec sleep 300; fi; echo run $${SLURM_RESTART_COUNT} > out.txt"]
  outputs = ["out.txt"]
}
`)
	out, done := w.start("apply", "main.hcl")
	execLog := w.execLog
	e2etest.WaitFor(t, "the job's first run", 2*time.Minute, func() bool { return execLog() == "start 0\n" })
	run := w.runs()[0].ID
	id := strings.TrimSpace(squeue(t, "--noheader", "--name="+run, "--format=%i"))
	require.NotEmpty(t, id, "the job of stage.work in squeue")
	slurmtest.Call(t, "scontrol", "requeue", id)
	// Slurm holds a requeued job back for two minutes: cairn says so at
	// once (#29); then let it start now.
	e2etest.WaitFor(t, "cairn to say the job was requeued", 2*time.Minute, func() bool {
		return strings.Contains(out.String(), "waiting for Slurm to run job "+id+" again since ")
	})
	assert.Regexp(t, `… stage.work  waiting for Slurm to run job `+id+` again since \d\d:\d\d:\d\d: Slurm requeued it; it is PENDING \(BeginTime\)`, out.String())
	slurmtest.Call(t, "scontrol", "update", "JobId="+id, "StartTime=now")
	select {
	case err := <-done:
		require.NoError(t, err, "%s\n%s", out.String(), requeueState(w, id))
	case <-time.After(4 * time.Minute):
		t.Fatalf("cairn did not end within 4 minutes of the requeue:\n%s", out.String())
	}
	assert.Equal(t, "start 0\nstart 1\n", execLog(), "the first run was stopped, the second ran once")
	b, err := os.ReadFile(filepath.Join(w.dir, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "run 1\n", string(b))
	finished := 0
	for _, e := range w.runs()[0].Entries {
		if e.T == "finished" {
			finished++
		}
		assert.NotEqual(t, "failed", e.T, "no node failed: %+v", e)
	}
	assert.Equal(t, 1, finished, "the node committed once")
	assert.Contains(t, out.String(), "… stage.work  done waiting for Slurm to run job "+id+" again after ")
	// Its duration is its last run's, the queue and the requeue apart.
	assert.Regexp(t, `✓ stage.work  ok in \S+ \(queued \S+, requeued 1×\)`, out.String())
	assert.Less(t, okDuration(t, out.String(), "stage.work"), 5*time.Second, "the second run writes a file and ends:\n%s", out.String())
	jobs := squeue(t, "--noheader", "--states=all", "--name="+run, "--format=%i")
	assert.Equal(t, id, strings.TrimSpace(jobs), "one job, followed under its id")

	again, code := w.run("apply", "main.hcl")
	require.Equal(t, 0, code, again)
	assert.Contains(t, again, "0 ran")
	assert.Equal(t, "start 0\nstart 1\n", execLog(), "the second apply ran nothing")
}

// slurmctld stopped for 20 s while the run's jobs end: every query fails
// meanwhile, cairn keeps waiting (it neither ends nor decides a node), and
// once the controller is back it collects both jobs, submits the
// downstream node and finishes with the right result.
func TestSlurmControllerAway(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	t.Parallel()
	w.write("main.hcl", workThenSum([]string{"a", "b"}, "", "go"))
	execLog := w.execLog
	out, done := w.start("apply", "main.hcl")
	e2etest.WaitFor(t, "both jobs to start", 2*time.Minute, func() bool {
		l := execLog()
		return strings.Contains(l, "start a") && strings.Contains(l, "start b")
	})
	startController := slurmtest.StopController(t)
	stopped := time.Now()
	// The jobs end while the controller is away, and their scripts write
	// their exit files.
	w.write("go", "")
	e2etest.WaitFor(t, "both jobs' exit files", 2*time.Minute, func() bool {
		m, _ := filepath.Glob(filepath.Join(w.dir, ".cairn", "runs", "*", "logs", "*.exit"))
		return len(m) == 2
	})
	// cairn says what it waits for, with the client's own error, at once
	// (its first query that fails), on its progress lines and in the
	// journal (#29). Another test may have stopped the controller while
	// this apply started (its scontrol then failed first), and cairn's
	// wait may run on through this stop: the wait under way names
	// whichever client failed first.
	const waiting, doneWaiting = "… waiting for the Slurm controller since ", "… done waiting for the Slurm controller"
	e2etest.WaitFor(t, "cairn to say it waits for the controller", 2*time.Minute, func() bool {
		s := out.String()
		return strings.Count(s, waiting) > strings.Count(s, doneWaiting)
	})
	s := out.String()
	last := s[strings.LastIndex(s, waiting):]
	assert.Regexp(t, `^… waiting for the Slurm controller since \d\d:\d\d:\d\d: (squeue: slurm_load_jobs|scontrol: slurm_load_ctl_conf) error: Unable to contact slurm controller`, last)
	time.Sleep(time.Until(stopped.Add(20 * time.Second)))
	select {
	case err := <-done:
		t.Fatalf("cairn ended while the controller was away (%v):\n%s", err, out.String())
	default:
	}
	for _, e := range w.runs()[0].Entries {
		assert.NotContains(t, []string{"finished", "failed"}, e.T, "nothing decided while the controller was away: %+v", e)
	}
	startController()
	out.succeeds(t, done, "the controller's return")
	assert.Contains(t, out.String(), "… done waiting for the Slurm controller after ")
	// The wait in the journal: it began and ended (and so did any other
	// test's stop of the controller during this apply).
	var waits []string
	for _, e := range w.runs()[0].Entries {
		if e.T == "waiting" {
			waits = append(waits, e.Status)
			assert.Contains(t, e.Message, "the Slurm controller")
		}
	}
	require.NotEmpty(t, waits, "no waiting record in the journal")
	for i, st := range waits {
		assert.Equal(t, []string{"waiting", "over"}[i%2], st, "the waits in the journal: %v", waits)
	}
	assert.Equal(t, "over", waits[len(waits)-1], "the waits in the journal: %v", waits)
	// The jobs' durations are their commands' own, not up to the
	// controller's return (#29).
	checkDurations(t, w, w.runs()[0], out.String(), "a", "b")
	b, err := os.ReadFile(filepath.Join(w.dir, "sum.txt"))
	require.NoError(t, err)
	assert.Equal(t, "a\nb\n", string(b))
	l := execLog()
	for _, s := range []string{"start a\n", "end a\n", "start b\n", "end b\n", "sum\n"} {
		assert.Equal(t, 1, strings.Count(l, s), "%q once in the nodes' log:\n%s", s, l)
	}
}

// With slurmctld down when cairn starts, cairn says at once (its first
// call that fails) what it waits for, since when and the client's own
// error, and goes on once the controller answers (#29).
func TestSlurmControllerDownAtStart(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	t.Parallel()
	w.write("main.hcl", slurmPipeline+`stage "command" "one" {
  run = ["sh", "-c", "echo one > one.txt"]
}
`)
	startController := slurmtest.StopController(t)
	out, done := w.start("apply", "main.hcl")
	e2etest.WaitFor(t, "cairn to say it waits for the controller", 2*time.Minute, func() bool {
		return strings.Contains(out.String(), "waiting for the Slurm controller since")
	})
	assert.Regexp(t, `cairn: slurm executor: waiting for the Slurm controller since \d\d:\d\d:\d\d: scontrol: slurm_load_ctl_conf error: Unable to contact slurm controller`, out.String())
	startController()
	out.succeeds(t, done, "the controller's return")
	assert.Contains(t, out.String(), "cairn: slurm executor: done waiting for the Slurm controller after ")
	assert.FileExists(t, filepath.Join(w.dir, "one.txt"))
}

// A Ctrl-C while cairn waits for a controller that is down at its start
// stops the apply at once (exit 130, nothing submitted), rather than
// after the two minutes the wait may last, as a failure to reach the
// cluster (exit 2).
func TestSlurmInterruptWhileTheControllerIsWaitedFor(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	t.Parallel()
	w.write("main.hcl", slurmPipeline+`stage "command" "one" {
  run = ["sh", "-c", "echo one > one.txt"]
}
`)
	startController := slurmtest.StopController(t)
	defer startController()
	out, code := applyAndInterrupt(t, w, "cairn to say it waits for the controller", time.Minute, func(out string) bool {
		return strings.Contains(out, "waiting for the Slurm controller since")
	})
	assert.Equal(t, 130, code, out)
	assert.Contains(t, out, "interrupted before anything ran")
	assert.NoFileExists(t, filepath.Join(w.dir, "one.txt"))
}

// A SLURM_CONF that names no file is refused at once (exit 2), naming it,
// instead of a silent wait while every Slurm command retries reading it
// (#29).
func TestSlurmMissingConf(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	t.Parallel()
	w.write("main.hcl", slurmPipeline+`stage "command" "one" {
  run = ["true"]
}
`)
	missing := filepath.Join(w.dir, "no", "slurm.conf")
	cmd := w.command("apply", "main.hcl")
	cmd.Env = append(cmd.Env, "SLURM_CONF="+missing)
	b, _ := cmd.CombinedOutput()
	assert.Equal(t, 2, cmd.ProcessState.ExitCode(), string(b))
	assert.Contains(t, string(b), "SLURM_CONF")
	assert.Contains(t, string(b), missing+": no such file or directory")
}

// On Slurm, plan counts the partition's GPUs as apply does: a node asking
// for more is planned as refused, not as "run", and a partition the
// cluster does not have is bad input in both, named where it is set.
func TestSlurmPlanChecksThePartition(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	t.Parallel()
	// Plan asks sinfo once, for at most clusterAskFor: not while
	// another test has the controller stopped.
	slurmtest.HoldController(t)
	body := `stage "command" "big" {
  run  = ["true"]
  gpus = 3
}
`
	w.write("main.hcl", slurmPipeline+body)
	out, code := w.run("plan", "main.hcl")
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `! stage\.big\s+refused: asks for 3 GPU\(s\); the cluster has 2 \(Slurm: 2 GPU\(s\) in the default partition`, out)
	assert.Contains(t, out, "Name a partition with more")
	assert.Contains(t, out, "Plan: 0 to run, 1 refused, 0 cached.")
	out, code = w.run("apply", "main.hcl")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "stage.big asks for 3 GPU(s); the cluster has 2")

	w.write("main.hcl", strings.Replace(slurmPipeline, `poll_interval = "200ms"`, `partition = "nosuch"`, 1)+body)
	for _, cmd := range []string{"plan", "apply"} {
		out, code = w.run(cmd, "main.hcl")
		assert.Equal(t, 2, code, out)
		assert.Regexp(t, `main\.hcl:3:17: executor "slurm": the cluster has no partition nosuch; its partitions: [a-z]`, out, cmd)
	}
}

// Plan asks the cluster about the executor's partition whatever the nodes
// ask for: a pipeline without a GPU node, on a partition the cluster does
// not have, is bad input to plan as it is to apply, and nothing is run.
func TestSlurmPlanChecksThePartitionWithoutGPUs(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	t.Parallel()
	// Plan asks sinfo once, for at most clusterAskFor: not while
	// another test has the controller stopped.
	slurmtest.HoldController(t)
	body := `stage "command" "a" {
  run = ["sh", "-c", "echo ran > ran.txt"]
}
`
	w.write("main.hcl", strings.Replace(slurmPipeline, `poll_interval = "200ms"`, `partition = "nosuch"`, 1)+body)
	for _, cmd := range []string{"plan", "apply"} {
		out, code := w.run(cmd, "main.hcl")
		assert.Equal(t, 2, code, out)
		assert.Regexp(t, `main\.hcl:3:17: executor "slurm": the cluster has no partition nosuch; its partitions: [a-z]`, out, cmd)
		assert.NoFileExists(t, filepath.Join(w.dir, "ran.txt"), cmd)
	}
	w.write("main.hcl", strings.Replace(slurmPipeline, `poll_interval = "200ms"`, `partition = "debug"`, 1)+body)
	out, code := w.run("plan", "main.hcl")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "Plan: 1 to run")
}

// slurmPipeline starts the pipeline files of these tests: the Slurm
// executor, polling often.
const slurmPipeline = `pipeline "p" {
  executor "slurm" {
    poll_interval = "200ms"
  }
}

`

// workThenSum is a pipeline on the Slurm executor: stage work, one node per
// key, each appending "start K" and "end K" to the nodes' own execution
// log (exec.log) around writing out_K.txt (and its own clock's start and
// end to t_K.start and t_K.end), and stage sum after all of
// them, concatenating their outputs into sum.txt. A node for which the
// shell test `[ hold ]` is true (every node when hold is "") waits, after
// its start, until the file release exists.
func workThenSum(keys []string, hold, release string) string {
	cond := "true"
	if hold != "" {
		cond = "[ " + hold + " ]"
	}
	q := make([]string, len(keys))
	outs := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
		outs[i] = "out_" + k + ".txt"
	}
	return fmt.Sprintf(slurmPipeline+`stage "command" "work" {
  for_each = toset([%s])
  run      = ["sh", "-c", "date +%%s%%N > t_${each.key}.start; echo start ${each.key} >> exec.log; if %s; then while [ ! -e %s ]; do sleep 0.1; done; fi; echo ${each.key} > out_${each.key}.txt; echo end ${each.key} >> exec.log; date +%%s%%N > t_${each.key}.end"]
  outputs  = ["out_${each.key}.txt"]
}

stage "command" "sum" {
  after   = [stage.work]
  run     = ["sh", "-c", "echo sum >> exec.log; cat %s > sum.txt"]
  outputs = ["sum.txt"]
}
`, strings.Join(q, ", "), cond, release, strings.Join(outs, " "))
}

// ownDuration is how long work[K]'s command ran by its own clock
// (workThenSum's t_K.start and t_K.end).
func (w *workspace) ownDuration(k string) time.Duration {
	w.t.Helper()
	read := func(name string) int64 {
		b, err := os.ReadFile(filepath.Join(w.dir, name))
		require.NoError(w.t, err)
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		require.NoError(w.t, err)
		return n
	}
	return time.Duration(read("t_"+k+".end") - read("t_"+k+".start"))
}

// okDuration is the duration on node addr's ok line in cairn's output.
func okDuration(t *testing.T, out, addr string) time.Duration {
	t.Helper()
	m := regexp.MustCompile(`✓ ` + regexp.QuoteMeta(addr) + `  ok in (\S+)`).FindStringSubmatch(out)
	require.NotNil(t, m, "no ok line for %s in:\n%s", addr, out)
	d, err := time.ParseDuration(m[1])
	require.NoError(t, err)
	return d
}

// checkDurations checks that the ok lines of work[K] in out show the
// command's own run time: its record's (the journal's finished duration_s)
// and, within a second, what the command measured itself (#29).
func checkDurations(t *testing.T, w *workspace, run *runlog.RunInfo, out string, keys ...string) {
	t.Helper()
	for _, k := range keys {
		addr := fmt.Sprintf("stage.work[%q]", k)
		shown := okDuration(t, out, addr)
		var rec time.Duration
		for _, e := range run.Entries {
			if e.T == "finished" && e.Node == addr {
				rec = time.Duration(e.Duration * float64(time.Second))
			}
		}
		require.NotZero(t, rec, "no finished record of %s", addr)
		assert.InDelta(t, rec.Seconds(), shown.Seconds(), 0.011, "%s: the ok line shows %s, its record %s", addr, shown, rec)
		own := w.ownDuration(k)
		assert.InDelta(t, own.Seconds(), shown.Seconds(), 1, "%s: the ok line shows %s, the command ran %s", addr, shown, own)
	}
}

// checkReattachedQueue checks, in `cairn show RUN --json` (the report and
// trace.tsv read the same), the time in Slurm's queue of addr's job, which
// run re-attached to: submitted before run began, it started its queued_s
// after that and no later than it ended, and the node's queue wait is its
// time in the queue.
func checkReattachedQueue(t *testing.T, w *workspace, run, addr string) {
	t.Helper()
	r := showJSON(t, w, run)
	for _, n := range r.Nodes {
		if n.Addr != addr {
			continue
		}
		require.Len(t, n.Tries, 1, addr)
		a := n.Tries[0]
		require.Positive(t, a.Queued, "%s: a time in the queue", addr)
		assert.True(t, a.Submit.Before(r.Run.Start), "%s: submitted (%s) by the run before %s (%s)", addr, a.Submit, run, r.Run.Start)
		assert.WithinDuration(t, a.Submit.Add(time.Duration(a.Queued*float64(time.Second))), a.Start, time.Millisecond, addr)
		assert.False(t, a.End.Before(a.Start), "%s: started %s, ended %s", addr, a.Start, a.End)
		assert.InDelta(t, a.Queued, n.QueueWait, 0.001, addr)
		return
	}
	t.Fatalf("no node %s in run %s", addr, run)
}

// requeueState is what a failed TestSlurmRequeue leaves to read: the
// job's exit file and the run its script noted beside it, exec.log, and
// Slurm's view of the job.
func requeueState(w *workspace, id string) string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(w.dir, ".cairn", "runs", "*", "logs", "*.exit*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		fmt.Fprintf(&b, "%s (%v):\n%s\n", f, err, data)
	}
	fmt.Fprintf(&b, "exec.log:\n%s\n", w.execLog())
	show, err := exec.Command("scontrol", "show", "job", id).CombinedOutput()
	fmt.Fprintf(&b, "scontrol show job %s (%v):\n%s", id, err, show)
	return b.String()
}

// execLog is the nodes' own execution log, exec.log in the workspace
// ("" before the first line).
func (w *workspace) execLog() string {
	b, _ := os.ReadFile(filepath.Join(w.dir, "exec.log"))
	return string(b)
}

// output is cairn's output so far, read while it runs.
type output struct{ syncbuf.Buffer }

// succeeds waits for cairn, started with start, to end with exit status
// 0, at most 3 minutes after what it names.
func (o *output) succeeds(t *testing.T, done <-chan error, after string) {
	t.Helper()
	select {
	case err := <-done:
		require.NoError(t, err, o.String())
	case <-time.After(3 * time.Minute):
		t.Fatalf("cairn did not end within 3 minutes of %s:\n%s", after, o.String())
	}
}

// start starts cairn in the background: its output so far, and a channel
// that gets its end (nil for exit status 0).
func (w *workspace) start(args ...string) (*output, <-chan error) {
	w.t.Helper()
	cmd := w.command(args...)
	out := &output{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(w.t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return out, done
}

var (
	failpointOnce sync.Once
	failpointBin  string
	failpointErr  error
)

// failpointCairn is cairn built with its crash points
// (-tags cairn_failpoints, see engine/failpoint), on first use; TestMain
// removes it.
func failpointCairn(t *testing.T) string {
	t.Helper()
	failpointOnce.Do(func() {
		var dir string
		dir, failpointErr = e2etest.Binaries{Packages: []string{"cmd/cairn"}, Tags: []string{"cairn_failpoints"}}.Build()
		if failpointErr == nil {
			failpointBin = filepath.Join(dir, "cairn")
		}
	})
	require.NoError(t, failpointErr)
	return failpointBin
}

// A stage's instances ready together are one job array. cairn killed
// (kill -9) after the array's sbatch and before its tasks' job ids were
// journaled: the next apply finds the array by the comment journaled
// before the sbatch and re-attaches each node to its task. No task runs
// twice, none is left in Slurm, and no second array is submitted.
func TestSlurmArrayKilledBeforeItsJournalRecords(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	keys := []string{"a", "b", "c", "d", "e", "f"}
	w.write("main.hcl", slurmPipeline+`stage "command" "work" {
  for_each = toset(["a", "b", "c", "d", "e", "f"])
  run      = ["sh", "-c", "echo start ${each.key} >> exec.log; echo ${each.key} > out_${each.key}.txt"]
  outputs  = ["out_${each.key}.txt"]
}
`)
	run, unnamed := w.killedBeforeJobIDs(t, "CAIRN_TEST_KILL_AFTER_ARRAYS", "array")
	require.Equal(t, len(keys), unnamed, "each task journaled by its array's comment before the sbatch")

	out2, code := w.run("apply", "main.hcl")
	require.Equal(t, 0, code, out2)
	l := w.execLog()
	for _, k := range keys {
		assert.Equal(t, 1, strings.Count(l, "start "+k+"\n"), "work[%q] ran once:\n%s", k, l)
	}
	jobs := squeue(t, "--noheader", "--states=all", "--name="+run, "--format=%i|%T|%k")
	lines := strings.Split(strings.TrimSpace(jobs), "\n")
	assert.Len(t, lines, len(keys), "the one array's tasks and nothing else:\n%s", jobs)
	for _, line := range lines {
		assert.Contains(t, line, "|COMPLETED|cairn array stage.work tasks 6 sub ", "no task left in Slurm:\n%s", jobs)
	}
}

// A node that is no stage's instance is one job. cairn killed (kill -9)
// after its sbatch and before the job's id was journaled: the next apply
// finds the job by the comment journaled before the sbatch and re-attaches
// to it. The node runs once, and the one job is all the run left in Slurm.
func TestSlurmJobKilledBeforeItsJournalRecord(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	w.write("main.hcl", slurmPipeline+`stage "command" "one" {
  run     = ["sh", "-c", "echo start >> exec.log; echo one > out.txt"]
  outputs = ["out.txt"]
}
`)
	run, unnamed := w.killedBeforeJobIDs(t, "CAIRN_TEST_KILL_AFTER_STARTS", "comment")
	require.Equal(t, 1, unnamed, "the job journaled by its comment before the sbatch")

	out2, code := w.run("apply", "main.hcl")
	require.Equal(t, 0, code, out2)
	assert.Equal(t, "start\n", w.execLog(), "the node ran once")
	// Found by its comment, its submission is Slurm's.
	checkReattachedQueue(t, w, w.runs()[1].ID, "stage.one")
	jobs := squeue(t, "--noheader", "--states=all", "--name="+run, "--format=%i|%T|%k")
	lines := strings.Split(strings.TrimSpace(jobs), "\n")
	assert.Len(t, lines, 1, "the one job and nothing else:\n%s", jobs)
	assert.Contains(t, jobs, "|COMPLETED|cairn stage.one attempt 1 sub ", "no job left in Slurm:\n%s", jobs)
}

// killedBeforeJobIDs applies main.hcl with cairn's crash point kill (a
// CAIRN_TEST_KILL_AFTER_* variable) at 1: it returns the killed run's id
// and how many started records it journaled with no job id, naming the
// job by its detail (comment or array).
func (w *workspace) killedBeforeJobIDs(t *testing.T, kill, detail string) (string, int) {
	t.Helper()
	first := w.command("apply", "main.hcl")
	first.Path = failpointCairn(t)
	first.Env = append(first.Env, kill+"=1")
	out, err := first.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, string(out))
	require.Equal(t, -1, ee.ExitCode(), "killed by its crash point:\n%s", out)
	runs := w.runs()
	require.Len(t, runs, 1)
	var unnamed int
	for _, e := range runs[0].Entries {
		if e.T == runlog.Started && e.Job != nil && e.Job.ID == "" && e.Job.Details[detail] != "" {
			unnamed++
		}
	}
	return runs[0].ID, unnamed
}

// The figures of Slurm nodes in `cairn show RUN --json` and trace.tsv are
// apply's: each node's duration and realtime its ok line's (its command's
// own run time, its record's to the millisecond), ending when its command
// ended, not when cairn learnt of it; its attempt's start queued_s after
// its submit, queued_s its ok line's.
func TestSlurmReportFiguresAreApplys(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, "none")
	t.Parallel()
	keys := []string{"a", "b", "c", "d"}
	w.write("go", "")
	w.write("main.hcl", workThenSum(keys, "", "go"))
	out, code := w.run("apply", "main.hcl", "--report")
	require.Equal(t, 0, code, out)
	run := w.runs()[0]
	checkDurations(t, w, run, out, keys...)
	m := regexp.MustCompile(`(?m)^Report: (\S+)$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	trace, err := os.ReadFile(filepath.Join(filepath.Dir(m[1]), runreport.TraceName))
	require.NoError(t, err)
	nodes := map[string]*runreport.Node{}
	for _, n := range showJSON(t, w, run.ID).Nodes {
		nodes[n.Addr] = n
	}
	for _, k := range keys {
		addr := fmt.Sprintf("stage.work[%q]", k)
		var fin runlog.Entry
		for _, e := range run.Entries {
			if e.T == "finished" && e.Node == addr {
				fin = e
			}
		}
		q := regexp.MustCompile(`✓ ` + regexp.QuoteMeta(addr) + `  ok in \S+ \(queued (\S+)\)`).FindStringSubmatch(out)
		require.NotNil(t, q, "no queued time on %s's ok line:\n%s", addr, out)
		queued, err := time.ParseDuration(q[1])
		require.NoError(t, err)
		n := nodes[addr]
		require.NotNil(t, n, "no node %s in cairn show --json", addr)
		require.Len(t, n.Tries, 1, addr)
		try := n.Tries[0]
		assert.InDelta(t, fin.Duration, n.Duration, 0.001, "%s: duration_s is its record's", addr)
		assert.InDelta(t, fin.Queued, try.Queued, 0.001, "%s: queued_s is its record's", addr)
		assert.InDelta(t, queued.Seconds(), try.Queued, 0.011, "%s: queued_s is its ok line's", addr)
		assert.WithinDuration(t, try.Submit.Add(time.Duration(try.Queued*float64(time.Second))), try.Start, time.Millisecond, addr)
		assert.WithinDuration(t, try.Start.Add(time.Duration(fin.Duration*float64(time.Second))), n.End, time.Millisecond, "%s: it ends when its command ended", addr)
		row := regexp.MustCompile(`(?m)^.*\t` + regexp.QuoteMeta(addr) + `\t.*$`).FindString(string(trace))
		require.NotEmpty(t, row, "no row of %s in trace.tsv:\n%s", addr, trace)
		cells := strings.Split(row, "\t")
		realtime, err := strconv.ParseFloat(cells[12], 64)
		require.NoError(t, err, row)
		assert.InDelta(t, fin.Duration, realtime, 0.001, "%s: trace.tsv's realtime is its record's duration: %s", addr, row)
	}
}
