package crashtest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine/runlog"
)

// gated is a stage body that waits for the file "go", then writes
// out_<key>.txt and counts its completion.
const gatedPipeline = `
pipeline "gated" {}
stage "command" "fast" {
  run     = ["sh", "-c", "echo fast > fast.txt; echo x >> counts/fast"]
  outputs = ["fast.txt"]
}
stage "command" "slow" {
  for_each   = toset(["a", "b", "c"])
  kill_grace = "30s"
  run        = ["sh", "-c", "while [ ! -f go ]; do sleep 0.02; done; echo ${each.key} > slow_${each.key}.txt; echo x >> counts/slow_${each.key}"]
  outputs    = ["slow_${each.key}.txt"]
}
`

// waitStarted waits until the newest run's journal has started records for
// every address in addrs and finished records for every address in done.
func (w *ws) waitJournal(started, finished []string) {
	w.t.Helper()
	e2etest.WaitFor(w.t, "the journal to show the nodes running", 30*time.Second, func() bool {
		runs, _ := runlog.List(w.cache)
		if len(runs) == 0 {
			return false
		}
		have := map[string]bool{}
		for _, e := range runs[0].Entries {
			have[e.T+" "+e.Node] = true
		}
		for _, a := range started {
			if !have[runlog.Started+" "+a] {
				return false
			}
		}
		for _, a := range finished {
			if !have[runlog.Finished+" "+a] {
				return false
			}
		}
		return true
	})
}

var slowAddrs = []string{`stage.slow["a"]`, `stage.slow["b"]`, `stage.slow["c"]`}

// TestSIGINT interrupts an apply with SIGINT while three nodes run: cairn
// terminates them, journals them with class "interrupted" and exits 130;
// the next apply keeps the finished node and runs the three again.
func TestSIGINT(t *testing.T) {
	w := newWS(t, gatedPipeline)
	w.write("counts/.keep", "")
	p := w.start([]string{"CAIRN_NO_FSYNC=1"}, "apply", "--parallelism", "4")
	w.waitJournal(slowAddrs, []string{"stage.fast"})
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	res := p.wait(t)
	require.Equal(t, 130, res.code, res.String())
	assert.Contains(t, res.stderr, "interrupted")
	assert.Empty(t, workspaceProcs(w.root), "nodes left running after the interrupt")

	ri := w.lastRun()
	assert.Equal(t, "interrupted", ri.State)
	for _, a := range slowAddrs {
		f := entries(ri, runlog.Failed, a)
		require.Len(t, f, 1, a)
		assert.Equal(t, "interrupted", f[0].Class, a)
	}
	ends := entries(ri, runlog.RunEnd, "")
	require.Len(t, ends, 1)
	assert.Equal(t, "interrupted", ends[0].Status)

	w.write("go", "")
	res = w.run(nil, "apply")
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "3 ran, 1 cached")
	assert.Equal(t, 1, w.countLines("counts/fast"))
	for _, k := range []string{"a", "b", "c"} {
		assert.Equal(t, 1, w.countLines("counts/slow_"+k))
	}
}

// TestSIGHUP: a hang-up (the terminal closed, an ssh connection dropped)
// stops an apply as Ctrl-C does: the nodes terminated and journaled as
// interrupted, exit 130, none left running. Started with SIGHUP ignored
// (nohup), the apply goes on.
func TestSIGHUP(t *testing.T) {
	w := newWS(t, gatedPipeline)
	w.write("counts/.keep", "")
	p := w.start([]string{"CAIRN_NO_FSYNC=1"}, "apply", "--parallelism", "4")
	w.waitJournal(slowAddrs, []string{"stage.fast"})
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	res := p.wait(t)
	require.Equal(t, 130, res.code, res.String())
	assert.Contains(t, res.stderr, "the terminal hung up (SIGHUP)")
	assert.Empty(t, workspaceProcs(w.root), "nodes left running after the hang-up")
	ri := w.lastRun()
	assert.Equal(t, "interrupted", ri.State)
	for _, a := range slowAddrs {
		f := entries(ri, runlog.Failed, a)
		require.Len(t, f, 1, a)
		assert.Equal(t, "interrupted", f[0].Class, a)
	}

	// nohup: the signal stays ignored, and the apply finishes.
	bin, err := exec.LookPath("nohup")
	if err != nil {
		t.Skip("no nohup here: the rest needs it")
	}
	p = w.startWith(bin, []string{"CAIRN_NO_FSYNC=1"}, "apply", "--parallelism", "4")
	e2etest.WaitFor(t, "the second apply to run the slow nodes", 30*time.Second, func() bool {
		runs, _ := runlog.List(w.cache)
		for _, r := range runs {
			if r.ID != ri.ID && len(entries(r, runlog.Started, slowAddrs[0])) > 0 {
				return true
			}
		}
		return false
	})
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	w.write("go", "")
	res = p.wait(t)
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "3 ran, 1 cached")
}

// TestSecondSIGINTKillsAtOnce: nodes that ignore SIGTERM are given their
// kill_grace after the first SIGINT; a second SIGINT kills them at once.
func TestSecondSIGINTKillsAtOnce(t *testing.T) {
	w := newWS(t, `
pipeline "stubborn" {}
stage "command" "stubborn" {
  kill_grace = "10m"
  run        = ["sh", "-c", "trap 'echo term >> term.log' TERM; : > trapped; while true; do sleep 0.02; done"]
}
`)
	p := w.start([]string{"CAIRN_NO_FSYNC=1"}, "apply")
	w.waitJournal([]string{"stage.stubborn"}, nil)
	// The started record comes before the shell has run its first line: a
	// SIGTERM then would end it before its trap is in place.
	e2etest.WaitFor(t, "the node's trap to be in place", 30*time.Second, func() bool { return w.exists("trapped") })
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	e2etest.WaitFor(t, "the node to get SIGTERM", 30*time.Second, func() bool { return w.exists("term.log") })
	select {
	case <-p.done:
		t.Fatalf("cairn ended before its node's kill_grace: %s", p.res)
	default:
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	res := p.wait(t)
	require.Equal(t, 130, res.code, res.String())
	assert.Empty(t, workspaceProcs(w.root))
	f := entries(w.lastRun(), runlog.Failed, "stage.stubborn")
	require.Len(t, f, 1)
	assert.Equal(t, "interrupted", f[0].Class)
}

// TestTimeout: a node past its timeout gets SIGTERM, then SIGKILL after its
// kill_grace, and fails with class "timeout"; its siblings finish.
func TestTimeout(t *testing.T) {
	w := newWS(t, `
pipeline "timeout" {}
stage "command" "hang" {
  timeout    = "1s"
  kill_grace = "1s"
  run        = ["sh", "-c", "trap 'echo term >> term.log' TERM; while true; do sleep 0.02; done"]
}
stage "command" "sibling" {
  for_each = toset(["a", "b"])
  run      = ["sh", "-c", "sleep 0.5; echo ${each.key} > sib_${each.key}.txt"]
  outputs  = ["sib_${each.key}.txt"]
}
`)
	res := w.run([]string{"CAIRN_NO_FSYNC=1"}, "apply", "--parallelism", "4")
	require.Equal(t, 1, res.code, res.String())
	assert.Contains(t, res.stdout, "stage.hang failed (timeout)")
	assert.Equal(t, "term\n", w.read("term.log"), "SIGTERM first")
	ri := w.lastRun()
	f := entries(ri, runlog.Failed, "stage.hang")
	require.Len(t, f, 1)
	assert.Equal(t, "timeout", f[0].Class)
	for _, k := range []string{"a", "b"} {
		assert.Len(t, entries(ri, runlog.Finished, `stage.sibling["`+k+`"]`), 1)
	}
	assert.Empty(t, workspaceProcs(w.root))
}

// TestRetryByClass: a node retried on "exit" runs until it succeeds, every
// attempt journaled; a failure of a class not listed is not retried; a
// node that keeps failing stops after max retries.
func TestRetryByClass(t *testing.T) {
	w := newWS(t, `
pipeline "retry" {}
stage "command" "flaky" {
  run     = ["sh", "-c", "n=$(cat flaky.n 2>/dev/null || echo 0); n=$((n+1)); echo $n > flaky.n; [ $n -ge 3 ] && echo ok > flaky.txt"]
  outputs = ["flaky.txt"]
  retry {
    max = 3
    on  = ["exit"]
  }
}
stage "command" "other_class" {
  run = ["sh", "-c", "echo x >> other.n; exit 3"]
  retry {
    max = 3
    on  = ["timeout"]
  }
}
stage "command" "hopeless" {
  run = ["sh", "-c", "echo x >> hopeless.n; exit 1"]
  retry {
    max = 1
    on  = ["exit"]
  }
}
`)
	res := w.run([]string{"CAIRN_NO_FSYNC=1"}, "apply")
	require.Equal(t, 1, res.code, res.String())
	ri := w.lastRun()
	attempts := func(typ, addr string) []int {
		var out []int
		for _, e := range entries(ri, typ, addr) {
			out = append(out, e.Attempt)
		}
		return out
	}
	assert.Equal(t, []int{1, 2, 3}, attempts(runlog.Started, "stage.flaky"))
	assert.Equal(t, []int{1, 2}, attempts(runlog.Failed, "stage.flaky"))
	assert.Equal(t, []int{3}, attempts(runlog.Finished, "stage.flaky"))
	for _, e := range entries(ri, runlog.Failed, "stage.flaky") {
		assert.Equal(t, "exit", e.Class)
	}
	assert.Equal(t, []int{1}, attempts(runlog.Started, "stage.other_class"))
	assert.Equal(t, 1, w.countLines("other.n"))
	assert.Equal(t, []int{1, 2}, attempts(runlog.Started, "stage.hopeless"))
	assert.Equal(t, 2, w.countLines("hopeless.n"))
	assert.Contains(t, res.stdout, "stage.hopeless failed (exit)")
	assert.Equal(t, "ok\n", w.read("flaky.txt"))
	// The record says how many attempts it took.
	assert.Equal(t, 3, w.record("retry", "stage.flaky").Attempts)
}

// TestPostconditionFailure: a result that fails its postcondition fails the
// node (exit 1) with the error_message; its downstream is skipped and
// journaled so, while a downstream with on_upstream_failure = "run" runs
// and sees the failed status.
func TestPostconditionFailure(t *testing.T) {
	w := newWS(t, `
pipeline "gate" {}
stage "command" "gate" {
  run    = ["sh", "-c", "echo '{\"accuracy\": 0.5}' > gate.json"]
  result = "gate.json"
  postcondition {
    condition     = self.result.accuracy >= 0.85
    error_message = "accuracy ${self.result.accuracy} is below 0.85"
  }
}
stage "command" "after_gate" {
  after   = [stage.gate]
  run     = ["sh", "-c", "echo ran > after_gate.txt"]
  outputs = ["after_gate.txt"]
}
stage "command" "report" {
  on_upstream_failure = "run"
  run     = ["sh", "-c", "echo ${stage.gate.status} ${stage.gate.class} > report.txt"]
  outputs = ["report.txt"]
}
`)
	res := w.run([]string{"CAIRN_NO_FSYNC=1"}, "apply")
	require.Equal(t, 1, res.code, res.String())
	assert.Contains(t, res.stdout, "accuracy 0.5 is below 0.85")
	ri := w.lastRun()
	f := entries(ri, runlog.Failed, "stage.gate")
	require.Len(t, f, 1)
	assert.Equal(t, "postcondition", f[0].Class)
	require.Len(t, entries(ri, runlog.Skipped, "stage.after_gate"), 1)
	assert.False(t, w.exists("after_gate.txt"))
	assert.Equal(t, "failed postcondition\n", w.read("report.txt"))
	// Applying again refuses the same result again: the gate is not
	// silently passed by the cache.
	res = w.run([]string{"CAIRN_NO_FSYNC=1"}, "apply")
	require.Equal(t, 1, res.code, res.String())
	assert.Contains(t, res.stdout, "accuracy 0.5 is below 0.85")
	assert.False(t, w.exists("after_gate.txt"))
}

// TestOnInterruptFail: a node of a stage with on_interrupt = "fail" that
// was running when its apply was killed (SIGKILL) or interrupted (SIGINT)
// is not rerun silently: apply refuses (exit 1) and names --replace, which
// then runs it.
func TestOnInterruptFail(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			w := newWS(t, `
pipeline "optimizer" {}
stage "command" "optimize" {
  on_interrupt = "fail"
  run          = ["sh", "-c", "while [ ! -f go ]; do sleep 0.02; done; echo done > optimize.txt; echo x >> counts/optimize"]
  outputs      = ["optimize.txt"]
}
stage "command" "other" {
  run     = ["sh", "-c", "echo other > other.txt; echo x >> counts/other"]
  outputs = ["other.txt"]
}
`)
			w.write("counts/.keep", "")
			p := w.start(nil, "apply")
			w.waitJournal([]string{"stage.optimize"}, []string{"stage.other"})
			require.NoError(t, p.cmd.Process.Signal(sig))
			stopped := p.wait(t)
			if sig == syscall.SIGINT {
				// Its last line does not promise to resume it.
				assert.Contains(t, stopped.stderr, `it refuses to restart stage.optimize, whose stage declares on_interrupt = "fail" (--replace 'stage.optimize' runs it again from the start)`)
			}
			w.write("go", "")

			res := w.apply()
			require.Equal(t, 1, res.code, res.String())
			assert.Contains(t, res.stdout, "0 to run, 1 refused, 1 cached", "apply's header counts it as plan does")
			assert.Contains(t, res.stderr, `on_interrupt = "fail"`)
			assert.Contains(t, res.stderr, "--replace 'stage.optimize'")
			assert.Equal(t, 0, w.countLines("counts/optimize"), "refused, yet it ran")
			// plan says so too, not "run: new".
			res = w.run(nil, "plan")
			require.Equal(t, 0, res.code, res.String())
			assert.Regexp(t, `! stage\.optimize\s+refused: interrupted in run \S+, and its stage declares on_interrupt = "fail": apply refuses to restart it silently \(--replace 'stage\.optimize' runs it again from the start\)`, res.stdout)
			assert.NotContains(t, res.stdout, "new")
			assert.Contains(t, res.stdout, "Plan: 0 to run, 1 refused, 1 cached.", "a refused node is not counted to run")
			res = w.run(nil, "plan", "--json")
			require.Equal(t, 0, res.code, res.String())
			assert.Contains(t, res.stdout, `"to_run": 0,`)
			assert.Contains(t, res.stdout, `"refused": 1,`)
			res = w.run(nil, "plan", "--replace", "stage.optimize")
			require.Equal(t, 0, res.code, res.String())
			assert.NotContains(t, res.stdout, "refused")
			// Refused again: a refusal does not clear the interruption.
			res = w.apply()
			require.Equal(t, 1, res.code, res.String())

			res = w.apply("--replace", "stage.optimize")
			require.Equal(t, 0, res.code, res.String())
			assert.Contains(t, res.stdout, "1 ran, 1 cached")
			assert.Equal(t, 1, w.countLines("counts/optimize"))
			assert.Equal(t, 1, w.countLines("counts/other"))
			res = w.apply()
			require.Equal(t, 0, res.code, res.String())
			assert.Contains(t, res.stdout, "0 ran, 2 cached")
		})
	}
}

// TestOnInterruptFailLiftedByCacheHit: the refusal of an interrupted
// on_interrupt = "fail" node is a run of its own (status refused), and it
// is lifted without --replace when another pipeline on the same cache
// finished the same work meanwhile: the node is then taken from the cache.
func TestOnInterruptFailLiftedByCacheHit(t *testing.T) {
	const stage = `
stage "command" "optimize" {
  on_interrupt = "fail"
  run          = ["sh", "-c", "while [ ! -f go ]; do sleep 0.02; done; echo done > optimize.txt; echo x >> counts/optimize"]
  outputs      = ["optimize.txt"]
}
`
	w := newWS(t, `pipeline "optimizer" {}`+stage)
	w.write("counts/.keep", "")
	p := w.start(nil, "apply", "pipeline.hcl")
	w.waitJournal([]string{"stage.optimize"}, nil)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t)
	w.write("go", "")

	res := w.apply("pipeline.hcl")
	require.Equal(t, 1, res.code, res.String())
	assert.Contains(t, res.stderr, `on_interrupt = "fail"`)
	st := w.run(nil, "status")
	require.Equal(t, 0, st.code, st.String())
	assert.Regexp(t, `optimizer\s+refused\s`, st.stdout, "the refused apply is a run")

	w.write("helper.hcl", `pipeline "helper" {}`+stage)
	res = w.apply("helper.hcl")
	require.Equal(t, 0, res.code, res.String())
	assert.Equal(t, 1, w.countLines("counts/optimize"))

	res = w.apply("pipeline.hcl")
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "0 ran, 1 cached")
	assert.Equal(t, 1, w.countLines("counts/optimize"), "the work ran once")
}

// onInterruptPipeline has two stages declaring on_interrupt = "fail",
// each waiting for the file "go", and one that ends at once.
const onInterruptPipeline = `
pipeline "optimizer" {}
stage "command" "optimize" {
  on_interrupt = "fail"
  run          = ["sh", "-c", "while [ ! -f go ]; do sleep 0.02; done; echo done > optimize.txt; echo x >> counts/optimize"]
  outputs      = ["optimize.txt"]
}
stage "command" "tune" {
  on_interrupt = "fail"
  run          = ["sh", "-c", "while [ ! -f go ]; do sleep 0.02; done; echo done > tune.txt; echo x >> counts/tune"]
  outputs      = ["tune.txt"]
}
stage "command" "other" {
  run     = ["sh", "-c", "echo other > other.txt; echo x >> counts/other"]
  outputs = ["other.txt"]
}
`

// TestOnInterruptFailSurvivesGC: gc, whatever its limits, keeps the run
// folder whose journal records an interrupted (killed or stopped) node of
// a stage with on_interrupt = "fail", and says so: the next apply still
// refuses that node. A node of it that --replace ran again since is not
// refused after gc either (gc keeps the run that says it ran), and once
// every such node ran again, gc removes those runs like any other.
func TestOnInterruptFailSurvivesGC(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			w := newWS(t, onInterruptPipeline)
			w.write("counts/.keep", "")
			p := w.start(nil, "apply", "--parallelism", "3")
			w.waitJournal([]string{"stage.optimize", "stage.tune"}, []string{"stage.other"})
			interrupted := w.lastRun().ID
			require.NoError(t, p.cmd.Process.Signal(sig))
			p.wait(t)
			w.write("go", "")
			res := w.apply()
			require.Equal(t, 1, res.code, res.String())
			// stage.tune runs again; stage.optimize stays interrupted.
			res = w.apply("--target", "stage.tune", "--replace", "stage.tune")
			require.Equal(t, 0, res.code, res.String())
			assert.Equal(t, 1, w.countLines("counts/tune"))

			for _, args := range [][]string{
				{"gc", "--older-than", "0s", "--dry-run"},
				{"gc", "--older-than", "0s"},
				{"gc", "--max-size", "0"},
				{"gc", "--older-than", "0s", "--max-size", "0"},
			} {
				res = w.run(nil, args...)
				require.Equal(t, 0, res.code, "%v: %s", args, res)
				out := res.stdout
				res = w.apply()
				require.Equal(t, 1, res.code, "%v lost the refusal: %s", args, res)
				assert.Contains(t, res.stderr, "stage.optimize (interrupted in run "+interrupted+")")
				assert.NotContains(t, res.stderr, "stage.tune", "%v", args)
				assert.Equal(t, 0, w.countLines("counts/optimize"), "refused, yet it ran")
				// stage.tune, which ran again since, is not refused.
				res = w.apply("--target", "stage.tune")
				require.Equal(t, 0, res.code, "%v: %s", args, res)
				_, err := os.Stat(w.path(".cairn/runs/" + interrupted))
				require.NoError(t, err, "%v removed the run that holds the interruption", args)
				if args[1] == "--older-than" {
					assert.Contains(t, out, " 2 run folder(s): apply reads from them that stage.optimize (interrupted in run "+interrupted+") is not restarted silently (its stage declares on_interrupt = \"fail\"). Once cairn apply --replace 'stage.optimize' ran it again, gc removes them.", "%v", args)
				}
			}

			res = w.apply("--replace", "stage.optimize")
			require.Equal(t, 0, res.code, res.String())
			assert.Equal(t, 1, w.countLines("counts/optimize"))
			res = w.run(nil, "gc", "--older-than", "0s")
			require.Equal(t, 0, res.code, res.String())
			assert.NotContains(t, res.stdout, "refuse")
			assert.Empty(t, w.runs(), "gc kept runs no refusal needs")
			res = w.apply()
			require.Equal(t, 0, res.code, res.String())
		})
	}
}

// TestStalePlanFile: `apply PLANFILE` runs a saved plan while nothing it
// planned has changed, and refuses (exit 1, nothing run) once an input did.
func TestStalePlanFile(t *testing.T) {
	w := newWS(t, `
pipeline "planned" {}
stage "command" "read" {
  inputs  = ["data.txt"]
  run     = ["sh", "-c", "cp data.txt copy.txt; echo x >> read.n"]
  outputs = ["copy.txt"]
}
`)
	w.write("data.txt", "one\n")
	res := w.run(nil, "plan", "--out", "saved.plan")
	require.Equal(t, 0, res.code, res.String())
	w.write("data.txt", "two\n")
	res = w.run(nil, "apply", "saved.plan")
	require.Equal(t, 2, res.code, "a stale plan is refused as bad input: "+res.String())
	assert.Contains(t, res.stderr, "stale")
	assert.Contains(t, res.stderr, "stage.read")
	assert.False(t, w.exists("read.n"), "a stale plan ran")

	res = w.run(nil, "plan", "--out", "saved.plan")
	require.Equal(t, 0, res.code, res.String())
	res = w.run(nil, "apply", "saved.plan")
	require.Equal(t, 0, res.code, res.String())
	assert.Equal(t, "two\n", w.read("copy.txt"))
}

// TestTarget: --target runs the target and what it needs, nothing else.
func TestTarget(t *testing.T) {
	w := newWS(t, `
pipeline "target" {}
stage "command" "base" {
  run     = ["sh", "-c", "echo base > base.txt; echo x >> base.n"]
  outputs = ["base.txt"]
}
stage "command" "top" {
  after   = [stage.base]
  run     = ["sh", "-c", "cat base.txt > top.txt; echo x >> top.n"]
  outputs = ["top.txt"]
}
stage "command" "aside" {
  run     = ["sh", "-c", "echo x >> aside.n"]
}
`)
	res := w.apply("--target", "stage.top")
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "2 ran, 0 cached")
	assert.Equal(t, 1, w.countLines("base.n"))
	assert.Equal(t, 1, w.countLines("top.n"))
	assert.False(t, w.exists("aside.n"))
	res = w.apply()
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "1 ran, 2 cached")
	assert.Equal(t, 1, w.countLines("aside.n"))
}

// TestStatusAndShowOfKilledRun: `cairn status` shows a running apply as
// running and, once it was killed (SIGKILL), as interrupted; `cairn show
// RUN` lists its nodes: finished, interrupted, with attempts and logs.
func TestStatusAndShowOfKilledRun(t *testing.T) {
	w := newWS(t, gatedPipeline)
	w.write("counts/.keep", "")
	p := w.start(nil, "apply", "--parallelism", "4")
	w.waitJournal(slowAddrs, []string{"stage.fast"})
	id := w.lastRun().ID
	res := w.run(nil, "status")
	require.Equal(t, 0, res.code, res.String())
	assert.Regexp(t, id+`\s.*gated\s+running`, res.stdout)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t)
	res = w.run(nil, "status")
	require.Equal(t, 0, res.code, res.String())
	assert.Regexp(t, id+`\s.*gated\s+interrupted`, res.stdout)

	res = w.run(nil, "show", id)
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "interrupted")
	assert.Regexp(t, `stage\.fast\s+ok\s+1\s`, res.stdout)
	for _, a := range slowAddrs {
		assert.Regexp(t, strings.ReplaceAll(strings.ReplaceAll(a, "[", `\[`), "]", `\]`)+`\s+interrupted\s+1\s.*\.err`, res.stdout)
	}
}

// TestInterruptedNodesCountAlikeAfterCtrlCAndKill: the nodes an apply
// was running when it was interrupted (SIGINT: cairn stops them) or
// killed (SIGKILL: nothing stops them) are interrupted nodes, not failed
// ones, with no failed attempt, in apply's summary, `cairn status`,
// `cairn show RUN` and the report's counts alike.
func TestInterruptedNodesCountAlikeAfterCtrlCAndKill(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			w := newWS(t, gatedPipeline)
			w.write("counts/.keep", "")
			p := w.start([]string{"CAIRN_NO_FSYNC=1"}, "apply", "--parallelism", "4")
			w.waitJournal(slowAddrs, []string{"stage.fast"})
			id := w.lastRun().ID
			require.NoError(t, p.cmd.Process.Signal(sig))
			res := p.wait(t)
			if sig == syscall.SIGINT {
				require.Equal(t, 130, res.code, res.String())
				assert.Contains(t, res.stdout, "0 failed, 0 skipped, 3 interrupted.", res.String())
				assert.Contains(t, res.stdout, `stage.slow["a"] interrupted: stopped because cairn was interrupted`)
			}
			killWorkspaceProcs(w.root)

			res = w.run(nil, "status")
			require.Equal(t, 0, res.code, res.String())
			// RUN STARTED(2) PIPELINE STATE OK CACHED FAILED SKIPPED
			// INTERRUPTED FAILED-ATTEMPTS
			var row []string
			for _, l := range strings.Split(res.stdout, "\n") {
				if strings.HasPrefix(l, id+" ") {
					row = strings.Fields(l)
				}
			}
			require.Len(t, row, 11, res.stdout)
			assert.Equal(t, []string{"interrupted", "1", "0", "0", "0", "3", "0"}, row[4:], res.stdout)

			res = w.run(nil, "show", id)
			require.Equal(t, 0, res.code, res.String())
			for _, a := range slowAddrs {
				assert.Regexp(t, strings.ReplaceAll(strings.ReplaceAll(a, "[", `\[`), "]", `\]`)+`\s+interrupted\s+1\s`, res.stdout)
			}
			res = w.run(nil, "show", id, "--json")
			require.Equal(t, 0, res.code, res.String())
			var rep struct {
				Run struct {
					Counts struct {
						Failed, Interrupted int
						FailedAttempts      int `json:"failed_attempts"`
					} `json:"counts"`
				} `json:"run"`
			}
			require.NoError(t, json.Unmarshal([]byte(res.stdout), &rep), res.stdout)
			c := rep.Run.Counts
			assert.Equal(t, [3]int{0, 3, 0}, [3]int{c.Failed, c.Interrupted, c.FailedAttempts}, res.stdout)
		})
	}
}

// TestGCWhileApplying: gc waits for running applies (it never removes what
// one uses: blobs stored but not yet committed, records in use), and
// removes blobs no record references.
func TestGCWhileApplying(t *testing.T) {
	w := newWS(t, gatedPipeline)
	w.write("counts/.keep", "")
	// A stray blob nothing references.
	c := w.openCache(w.cache)
	stray, err := c.Blobs.PutBytes([]byte("nobody refers to this\n"))
	require.NoError(t, err)

	p := w.start(nil, "apply", "--parallelism", "4")
	w.waitJournal(slowAddrs, []string{"stage.fast"})
	gc := w.start(nil, "gc")
	e2etest.WaitFor(t, "gc to wait for the apply", 30*time.Second, func() bool {
		return strings.Contains(gc.err.String(), "waiting for running applies")
	})
	select {
	case <-gc.done:
		t.Fatalf("gc ended while an apply ran: %s", gc.res)
	default:
	}
	w.write("go", "")
	res := p.wait(t)
	require.Equal(t, 0, res.code, res.String())
	gres := gc.wait(t)
	require.Equal(t, 0, gres.code, gres.String())
	assert.Contains(t, gres.stdout, "Removed 0 record(s), 1 blob(s)")
	_, err = os.Stat(w.blobPath(string(stray)))
	assert.True(t, os.IsNotExist(err), "the stray blob is gone")

	c = w.openCache(w.cache)
	recs := c.Records()
	require.Len(t, recs, 4)
	for _, r := range recs {
		for path := range r.Outputs {
			_, err := c.OutputBytes(r, path)
			assert.NoError(t, err, "%s of %s", path, r.Address)
		}
	}
	// Everything is still cached, restored from the cache.
	for _, k := range []string{"a", "b", "c"} {
		require.NoError(t, os.Remove(w.path("slow_"+k+".txt")))
	}
	res = w.apply()
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "0 ran, 4 cached")
	assert.Equal(t, "a\n", w.read("slow_a.txt"))
}

// TestOnInterruptFailThroughADamagedJournal: when the journal of the
// killed run is damaged where the on_interrupt = "fail" node's started
// record was, the node is not rerun as if it had never started: apply
// refuses it, saying that whether it was running cannot be told. The
// records after the damage are read: the node that finished is cached,
// and not named as running.
func TestOnInterruptFailThroughADamagedJournal(t *testing.T) {
	w := newWS(t, `
pipeline "optimizer" {}
stage "command" "optimize" {
  on_interrupt = "fail"
  run          = ["sh", "-c", "while [ ! -f go ]; do sleep 0.02; done; echo done > optimize.txt; echo x >> counts/optimize"]
  outputs      = ["optimize.txt"]
}
stage "command" "other" {
  after   = [stage.optimize]
  run     = ["sh", "-c", "echo other > other.txt; echo x >> counts/other"]
  outputs = ["other.txt"]
}
stage "command" "first" {
  run     = ["sh", "-c", "echo first > first.txt; echo x >> counts/first"]
  outputs = ["first.txt"]
}
`)
	w.write("counts/.keep", "")
	p := w.start(nil, "apply")
	w.waitJournal([]string{"stage.optimize"}, []string{"stage.first"})
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t)

	journal := filepath.Join(w.lastRun().Dir, "journal")
	b, err := os.ReadFile(journal)
	require.NoError(t, err)
	// Its started records (one as it starts, one with its process), each
	// damaged by a flipped bit.
	damaged := 0
	for i := 0; ; i++ {
		j := bytes.Index(b[i:], []byte(`"t":"started"`))
		if j < 0 {
			break
		}
		i += j
		if end := bytes.IndexByte(b[i:], '}'); end > 0 && bytes.Contains(b[i:i+end], []byte(`stage.optimize`)) {
			b[i+5] ^= 1
			damaged++
		}
	}
	require.Positive(t, damaged, "no started record of stage.optimize")
	require.NoError(t, os.WriteFile(journal, b, 0o644))
	w.write("go", "")

	res := w.apply()
	require.Equal(t, 1, res.code, res.String())
	assert.Contains(t, res.stderr, "stage.optimize (run ")
	assert.Contains(t, res.stderr, "whether it was running cannot be told")
	assert.Contains(t, res.stderr, "--replace 'stage.optimize'")
	assert.Equal(t, 0, w.countLines("counts/optimize"), "refused, yet it ran")
	assert.NotContains(t, res.stdout, "were running when an earlier apply stopped: stage.first")
	assert.Equal(t, 1, w.countLines("counts/first"), "finished before the kill, after the damage in the journal: not run again")
	res = w.run(nil, "plan")
	assert.Regexp(t, `! stage\.optimize\s+refused: run \S+ planned it and was interrupted, and its journal is damaged`, res.stdout)

	res = w.apply("--replace", "stage.optimize")
	require.Equal(t, 0, res.code, res.String())
	assert.Equal(t, 1, w.countLines("counts/optimize"))
}
