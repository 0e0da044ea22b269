package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/ui"
)

const eventsPipeline = `pipeline "ev" {}
stage "command" "a" {
  run     = ["sh", "-c", "sleep 0.2; echo a > a.txt"]
  gpus    = 1
  outputs = ["a.txt"]
}
stage "command" "b" {
  run   = ["sh", "-c", "exit 3"]
  after = [stage.a]
}
stage "command" "c" {
  run   = ["true"]
  after = [stage.b]
}
`

// onlyRunEvents reads the events of the workspace's one run, and the
// path of its log.
func onlyRunEvents(t *testing.T, root string) ([]map[string]json.RawMessage, string) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(root, ".cairn", "runs", "*", ui.EventLogName))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	evs, err := ui.ReadEventLog(logs[0])
	require.NoError(t, err)
	return evs, logs[0]
}

// field decodes one field of an event log object.
func field[T any](t *testing.T, ev map[string]json.RawMessage, name string) T {
	t.Helper()
	var v T
	raw, ok := ev[name]
	require.True(t, ok, "no %q in %v", name, ev)
	require.NoError(t, json.Unmarshal(raw, &v))
	return v
}

// An apply keeps its events in events.jsonl in its run folder, in the
// order they happened: the run's start, the plan, each node's start (its
// process: executor, job, GPUs, attempt) and end (status, class, run
// time, peak memory, GPUs), the run's end; each with the schema version,
// the run and the time.
func TestApplyKeepsItsEventsInTheRunFolder(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"pipeline.hcl": eventsPipeline})
	t.Setenv("CAIRN_GPUS", "sim:1")
	t.Setenv("CAIRN_LEASE_DIR", t.TempDir())
	r := runCLI(t, "--chdir", root, "apply", "pipeline.hcl")
	require.Equal(t, 1, r.code, r.stdout+r.stderr)

	evs, log := onlyRunEvents(t, root)
	run := filepath.Base(filepath.Dir(log))

	var types []string
	at := map[string]int{} // "type node" to its place
	var last time.Time
	for i, ev := range evs {
		assert.Equal(t, events.Version, field[int](t, ev, "v"))
		assert.Equal(t, run, field[string](t, ev, "run"))
		tm := field[time.Time](t, ev, "time")
		assert.False(t, tm.Before(last), "event %d is older than the one before", i)
		last = tm
		ty := field[string](t, ev, "type")
		types = append(types, ty)
		node := ""
		if _, ok := ev["node"]; ok {
			node = field[string](t, ev, "node")
		}
		if _, seen := at[ty+" "+node]; !seen {
			at[ty+" "+node] = i
		}
	}
	require.NotEmpty(t, types)
	assert.Equal(t, "run_started", types[0], "%v", types)
	assert.Equal(t, "plan_decided", types[1], "%v", types)
	assert.Equal(t, "run_ended", types[len(types)-1], "%v", types)
	// Each node's events in order; a downstream may start while its
	// upstream's record is being written, before its upstream's end.
	for _, order := range [][]string{
		{"gpu_leased stage.a", "node_started stage.a", "process_started stage.a", "gpu_released stage.a", "node_ended stage.a"},
		{"node_started stage.a", "node_started stage.b", "process_started stage.b", "node_ended stage.b", "node_ended stage.c"},
	} {
		for i, k := range order {
			require.Contains(t, at, k, "%v", types)
			if i > 0 {
				assert.Less(t, at[order[i-1]], at[k], "%s before %s: %v", order[i-1], k, types)
			}
		}
	}
	assert.NotContains(t, at, "node_started stage.c", "a skipped node does not start")

	plan := evs[1]
	nodes := field[[]events.Planned](t, plan, "nodes")
	require.Len(t, nodes, 3)
	assert.Equal(t, events.Planned{Node: "stage.a", Action: "run", Key: nodes[0].Key, Reasons: nodes[0].Reasons}, nodes[0])
	assert.NotEmpty(t, nodes[0].Reasons)

	var started events.ProcessStarted
	require.NoError(t, json.Unmarshal(mustJSON(t, evs[at["process_started stage.a"]]), &started))
	assert.Equal(t, "local", started.Executor)
	assert.Equal(t, 1, started.Attempt)
	assert.Equal(t, []int{0}, started.GPUs)
	assert.NotEmpty(t, started.JobID)
	assert.Equal(t, "pid "+started.JobID, started.Job)

	var a, b, c events.NodeEnded
	require.NoError(t, json.Unmarshal(mustJSON(t, evs[at["node_ended stage.a"]]), &a))
	require.NoError(t, json.Unmarshal(mustJSON(t, evs[at["node_ended stage.b"]]), &b))
	require.NoError(t, json.Unmarshal(mustJSON(t, evs[at["node_ended stage.c"]]), &c))
	assert.Equal(t, "ok", a.Status)
	assert.Equal(t, 1, a.Attempt)
	assert.Positive(t, a.DurationS)
	assert.Positive(t, a.PeakRSSMiB, "sampled while it sleeps")
	assert.Equal(t, []int{0}, a.GPUs)
	assert.Equal(t, "local", a.Executor)
	assert.Equal(t, started.JobID, a.JobID)
	assert.NotEmpty(t, a.Key)
	assert.Equal(t, "failed", b.Status)
	assert.Equal(t, "exit", b.Class)
	assert.Contains(t, b.Message, "3")
	assert.Equal(t, "skipped", c.Status)

	end := evs[len(evs)-1]
	assert.Equal(t, "failed", field[string](t, end, "status"))
	assert.Equal(t, 1, field[int](t, end, "ran"))
	assert.Equal(t, 1, field[int](t, end, "failed"))
	assert.Equal(t, 1, field[int](t, end, "skipped"))
}

func mustJSON(t *testing.T, ev map[string]json.RawMessage) []byte {
	t.Helper()
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return b
}

// apply --json prints one object a node's end, each with the schema
// version (docs/events.md).
func TestApplyJSONCarriesTheSchemaVersion(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"pipeline.hcl": eventsPipeline})
	t.Setenv("CAIRN_GPUS", "sim:1")
	t.Setenv("CAIRN_LEASE_DIR", t.TempDir())
	r := runCLI(t, "--chdir", root, "apply", "--json", "pipeline.hcl")
	require.Equal(t, 1, r.code, r.stdout+r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 3, r.stdout)
	for _, l := range lines {
		var ev map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(l), &ev), l)
		assert.Equal(t, "1", string(ev["v"]), l)
		assert.Contains(t, ev, "node", l)
		assert.Contains(t, ev, "status", l)
	}
}

// A downstream taken from the cache while the upstream that released it
// still writes its record ends after it in every stream: the upstream's
// node_ended comes first in events.jsonl and in --json, whatever the
// timing (the downstream's key needs the upstream's outputs, so it cannot
// have ended before).
func TestNodeEndedComesAfterTheUpstreams(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `pipeline "order" {}
variable "salt" {
  type    = string
  default = "0"
}
stage "command" "up" {
  run     = ["sh", "-c", "sleep 0.2; echo ${var.salt} >/dev/null; echo s > up.txt"]
  outputs = ["up.txt"]
}
stage "command" "down" {
  after   = [stage.up]
  run     = ["sh", "-c", "cat up.txt > down.txt"]
  outputs = ["down.txt"]
}
stage "command" "last" {
  after   = [stage.down]
  run     = ["sh", "-c", "cat down.txt > last.txt"]
  outputs = ["last.txt"]
}
`})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, 0, r.code, r.stderr)
	for salt := 1; salt <= 4; salt++ {
		r = runCLI(t, "--chdir", root, "apply", "p.hcl", "--json", "--var", "salt="+string(rune('0'+salt)))
		require.Equal(t, 0, r.code, r.stderr)
		var order []string
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var e struct {
				Node, Status string
			}
			if json.Unmarshal([]byte(line), &e) == nil && e.Node != "" {
				order = append(order, e.Node+" "+e.Status)
			}
		}
		assert.Equal(t, []string{"stage.up ok", "stage.down cached", "stage.last cached"}, order, "--json, salt %d", salt)
	}
	logs, err := filepath.Glob(filepath.Join(root, ".cairn", "runs", "*", ui.EventLogName))
	require.NoError(t, err)
	require.Len(t, logs, 5)
	for _, log := range logs {
		evs, err := ui.ReadEventLog(log)
		require.NoError(t, err)
		var ended []string
		for _, ev := range evs {
			if field[string](t, ev, "type") == "node_ended" {
				ended = append(ended, field[string](t, ev, "node"))
			}
		}
		assert.Equal(t, []string{"stage.up", "stage.down", "stage.last"}, ended, log)
	}
}

// Variants of a waves batch that each wait for their own upstream start
// together, in the order given, once every one of them is ready: not one
// by one as each upstream ends (b's upstream is the slow one here).
func TestWavesWithOwnUpstreamsStartInOrder(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `pipeline "stagger" {}
stage "command" "up" {
  for_each = ["a", "b", "c", "d"]
  run      = ["sh", "-c", "sleep ${each.key == "b" ? 1 : 0.1}; mkdir -p up; echo '{\"v\": 1}' > up/${each.key}.json"]
  result   = "up/${each.key}.json"
}
stage "waves" "bench" {
  for_each = ["a", "b", "c", "d"]
  after    = [stage.up[each.key]]
  run      = ["sh", "-c", "sleep 0.3; mkdir -p res; echo '{\"score\": 1}' > res/${each.key}.json"]
  result   = "res/${each.key}.json"
}
`})
	t.Setenv("CAIRN_GPUS", "sim:2")
	t.Setenv("CAIRN_LEASE_DIR", t.TempDir())
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	evs, _ := onlyRunEvents(t, root)
	var waves []string
	for _, ev := range evs {
		if field[string](t, ev, "type") == "wave_started" {
			waves = append(waves, fmt.Sprintf("%s wave %d gpu %d", field[string](t, ev, "node"), field[int](t, ev, "wave"), field[int](t, ev, "gpu")))
		}
	}
	assert.Equal(t, []string{
		`stage.bench["a"] wave 1 gpu 0`, `stage.bench["b"] wave 1 gpu 1`,
		`stage.bench["c"] wave 2 gpu 0`, `stage.bench["d"] wave 2 gpu 1`,
	}, waves)
}

// Two waves stages of one apply run one batch after the other: the
// second is not refused by the apply's own first batch.
func TestTwoBatchesOfOneApplyRunInTurn(t *testing.T) {
	var p strings.Builder
	p.WriteString("pipeline \"two\" {}\n")
	for _, s := range []string{"b1", "b2"} {
		fmt.Fprintf(&p, `stage "waves" %q {
  for_each = ["a", "b", "c", "d"]
  run      = ["sh", "-c", "sleep 0.2; mkdir -p %s; echo '{\"s\": 1}' > %s/${each.key}.json"]
  result   = "%s/${each.key}.json"
}
`, s, s, s, s)
	}
	root := cliWorkspace(t, map[string]string{"p.hcl": p.String()})
	t.Setenv("CAIRN_GPUS", "sim:8")
	t.Setenv("CAIRN_LEASE_DIR", t.TempDir())
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "Apply complete: 8 ran, 0 cached, 0 failed, 0 skipped.")
	assert.NotContains(t, r.stdout+r.stderr, "another batch is running")
}

// A refusal for want of GPUs says how to wait for them, or, when
// --wait-gpus was given, that the wait ran out: not to pass the flag the
// user passed.
func TestNoFreeGPUsSaysTheWaitRanOut(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `pipeline "g" {}
stage "command" "one" {
  gpus = 1
  run  = ["true"]
}
stage "waves" "bench" {
  for_each = ["a", "b", "c", "d"]
  run      = ["sh", "-c", "mkdir -p r; echo '{\"s\": 1}' > r/${each.key}.json"]
  result   = "r/${each.key}.json"
}
`})
	t.Setenv("CAIRN_GPUS", "sim:2,busy=0,1")
	t.Setenv("CAIRN_LEASE_DIR", t.TempDir())
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout+r.stderr, "pass --wait-gpus DURATION to wait for one")
	r = runCLI(t, "--chdir", root, "apply", "p.hcl", "--wait-gpus", "300ms")
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout+r.stderr, "none came in the 300ms --wait-gpus gave; give a longer --wait-gpus")
	assert.NotContains(t, r.stdout+r.stderr, "pass --wait-gpus")
}

// node_ended's duration_s is a node's own run time as cairn show adds it:
// every attempt's, for a node retried (it succeeded or not), and none for
// a node whose program never started. A node skipped before its key was
// known has no key, rather than an empty one.
func TestNodeEndedDurationIsShowsAndKeyIsAbsentWhenUnknown(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `pipeline "rd" {}
stage "command" "retried" {
  run = ["sh", "-c", "sleep 0.3; exit $((CAIRN_ATTEMPT < 2))"]
  retry {
    max = 1
  }
}
stage "command" "fails" {
  run = ["sh", "-c", "sleep 0.2; exit 1"]
  retry {
    max = 1
  }
}
stage "command" "nf" {
  run = ["/no/such/prog"]
}
stage "command" "down" {
  run = ["echo", stage.fails.status]
}
`})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl", "--json")
	require.Equal(t, exitFailed, r.code, r.stderr)
	ended := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &e), l)
		ended[e["node"].(string)] = e
	}
	runs, err := filepath.Glob(filepath.Join(root, ".cairn", "runs", "2*"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	show := runCLI(t, "--chdir", root, "show", filepath.Base(runs[0]), "--json")
	require.Equal(t, exitOK, show.code, show.stderr)
	var rep struct {
		Nodes []struct {
			Addr     string  `json:"address"`
			Duration float64 `json:"duration_s"`
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &rep))
	shown := map[string]float64{}
	for _, n := range rep.Nodes {
		shown[n.Addr] = n.Duration
	}
	for _, addr := range []string{"stage.retried", "stage.fails"} {
		d, ok := ended[addr]["duration_s"].(float64)
		require.True(t, ok, "%s: %v", addr, ended[addr])
		assert.InDelta(t, shown[addr], d, 0.05, "%s: both attempts, as show adds them", addr)
	}
	assert.Greater(t, ended["stage.retried"]["duration_s"].(float64), 0.55, "both attempts of 0.3 s")
	assert.NotContains(t, ended["stage.nf"], "duration_s", "its program never started")
	assert.Equal(t, "skipped", ended["stage.down"]["status"])
	assert.NotContains(t, ended["stage.down"], "key", "never known")
	assert.NotEmpty(t, ended["stage.fails"]["key"])
}

// A node that succeeded on its third attempt is ok in cairn show RUN,
// without the failed attempts' class, and its duration is one figure
// everywhere: apply's duration_s, show's DURATION and the report's
// duration_s (show --json) are its attempts' own run times added, to the
// millisecond.
func TestRetriedNodeHasOneDurationEverywhere(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `pipeline "rd" {}
stage "command" "retried" {
  run = ["sh", "-c", "sleep 0.2; exit $((CAIRN_ATTEMPT < 3))"]
  retry {
    max = 2
  }
}
`})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var ended map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &ended), r.stdout)
	applied := ended["duration_s"].(float64)
	assert.Greater(t, applied, 0.6, "three attempts of 0.2 s")
	runs, err := filepath.Glob(filepath.Join(root, ".cairn", "runs", "2*"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	show := runCLI(t, "--chdir", root, "show", filepath.Base(runs[0]))
	require.Equal(t, exitOK, show.code, show.stderr)
	var row []string
	for _, l := range strings.Split(show.stdout, "\n") {
		if strings.HasPrefix(l, "stage.retried ") {
			row = strings.Fields(l)
		}
	}
	require.NotEmpty(t, row, show.stdout)
	assert.Equal(t, []string{"stage.retried", "ok", "3"}, row[:3], "no failure class on a success: %s", show.stdout)
	want := (time.Duration(applied * float64(time.Second))).Round(time.Millisecond).String()
	assert.Equal(t, want, row[3], "show's DURATION is apply's duration_s")
	js := runCLI(t, "--chdir", root, "show", filepath.Base(runs[0]), "--json")
	require.Equal(t, exitOK, js.code, js.stderr)
	var rep struct {
		Nodes []struct {
			Class    string  `json:"class"`
			Duration float64 `json:"duration_s"`
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &rep))
	require.Len(t, rep.Nodes, 1)
	assert.InDelta(t, applied, rep.Nodes[0].Duration, 0.0015, "the report's duration_s is apply's")
	assert.Empty(t, rep.Nodes[0].Class)
}

// A node that --target leaves out is in plan_decided as outside the
// target, with no action: the plan decided nothing for it, and the apply
// does not take it up.
func TestPlanDecidedOutsideTheTargetHasNoAction(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `pipeline "t" {}
stage "command" "in" {
  run = ["true"]
}
stage "command" "out" {
  run = ["true"]
}
`})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl", "--target", "stage.in")
	require.Equal(t, exitOK, r.code, r.stderr)
	evs, _ := onlyRunEvents(t, root)
	var planned []map[string]any
	for _, ev := range evs {
		if field[string](t, ev, "type") == "plan_decided" {
			require.NoError(t, json.Unmarshal(ev["nodes"], &planned))
		}
	}
	require.Len(t, planned, 2)
	for _, n := range planned {
		switch n["node"] {
		case "stage.in":
			assert.Equal(t, "run", n["action"])
			assert.NotContains(t, n, "outside_target")
		case "stage.out":
			assert.Equal(t, true, n["outside_target"])
			assert.NotContains(t, n, "action", "no action was decided for it")
		}
	}
}

// An apply refused before anything runs (a node asks for more GPUs than
// the machine has) records its plan like every other run: plan_decided in
// its event log, and `cairn show RUN` lists the nodes it planned.
func TestRefusedForGPUsRunRecordsItsPlan(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `pipeline "t" {}
stage "command" "prep" {
  run = ["true"]
}
stage "command" "train" {
  after = [stage.prep]
  gpus  = 2
  run   = ["true"]
}
`})
	t.Setenv("CAIRN_GPUS", "sim:1")
	t.Setenv("CAIRN_LEASE_DIR", t.TempDir())
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "stage.train asks for 2 GPU(s); this machine has 1")
	evs, log := onlyRunEvents(t, root)
	var types []string
	var planned []events.Planned
	for _, ev := range evs {
		types = append(types, field[string](t, ev, "type"))
		if types[len(types)-1] == "plan_decided" {
			planned = field[[]events.Planned](t, ev, "nodes")
		}
	}
	assert.Equal(t, []string{"run_started", "plan_decided", "run_ended"}, types)
	var decided []string
	for _, n := range planned {
		decided = append(decided, n.Node+" "+n.Action)
	}
	assert.Equal(t, []string{"stage.prep run", "stage.train may_run"}, decided)

	run := filepath.Base(filepath.Dir(log))
	s := runCLI(t, "--chdir", root, "show", run)
	require.Equal(t, exitOK, s.code, s.stderr)
	assert.Contains(t, s.stdout, "refused")
	assert.Regexp(t, `(?m)^stage\.prep\s+planned`, s.stdout)
	assert.Regexp(t, `(?m)^stage\.train\s+planned`, s.stdout)
}
