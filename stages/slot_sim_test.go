package stages_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/stages"
	"github.com/cairn-run/cairn/stages/decision"
)

// slotRuntime runs a slot's process as given: res, on simulated GPUs or
// not.
type slotRuntime struct {
	*execRuntime
	res       process.Result
	simulated bool
}

func (r *slotRuntime) Exec(_ context.Context, p stages.Proc) (*process.Result, error) {
	r.got = append(r.got, p)
	if p.Started != nil {
		p.Started(process.JobRef{})
	}
	res := r.res
	res.Started, res.Ended = time.Now(), time.Now()
	return &res, nil
}

func (r *slotRuntime) SimulatedGPUs() bool { return r.simulated }

// slotNode is a slot node of the small protocol's slot id, its ledger in
// "ledger", a limit of 38912 MiB per GPU.
func slotNode(slot string) *stages.Node {
	return &stages.Node{
		Address: `stage.collect["` + slot + `"]`, Stage: "collect", EachKey: slot, Key: "k-" + slot,
		Args: map[string]cty.Value{
			"run": strList("train"), "slot": cty.StringVal(slot),
			"memory_limit_mib": cty.NumberIntVal(38912), "ledger": cty.StringVal("ledger"),
		},
		Ranges: map[string]hcl.Range{},
	}
}

// runSlot runs slot node n on rt and returns its result.
func runSlot(t *testing.T, rt stages.Runtime, n *stages.Node) (json.RawMessage, map[string]any) {
	t.Helper()
	require.False(t, stages.Slot{}.Check(n).HasErrors())
	out, err := stages.Slot{}.Run(context.Background(), n, rt)
	require.NoError(t, err)
	require.Empty(t, out.Class, out.Message)
	var res map[string]any
	require.NoError(t, json.Unmarshal(out.Result, &res))
	return out.Result, res
}

// TestSlotOnSimulatedGPUsIsMarked: an outcome judged on simulated GPUs
// is marked SIMULATED wherever seed 003's figures are shown, as seed
// 000's results are: the slot's result, the attempt ledger (attempts.tsv
// and attempts.json), the decision stage's outcomes.json, replay.json,
// replay.tsv, and the replay's heading and table on the terminal. On real
// GPUs nothing is marked.
func TestSlotOnSimulatedGPUsIsMarked(t *testing.T) {
	for _, simulated := range []bool{true, false} {
		root := t.TempDir()
		rt := &slotRuntime{execRuntime: &execRuntime{root: root}, simulated: simulated,
			res: process.Result{PeakGPUMiB: 2 * 20000, GPUs: []int{0, 1}}}
		raw, res := runSlot(t, rt, slotNode("alpha-c1-s141"))
		assert.Equal(t, "within_margin", res["state"], "20000 MiB per GPU, limit 38912")
		assert.Equal(t, simulated, res["simulated"] == true, "the slot's result")

		tsv, err := os.ReadFile(filepath.Join(root, "ledger", decision.LedgerTSV))
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(tsv)), "\n")
		require.Len(t, lines, 2)
		js, err := os.ReadFile(filepath.Join(root, "ledger", decision.LedgerJSON))
		require.NoError(t, err)
		var atts []map[string]any
		require.NoError(t, json.Unmarshal(js, &atts))
		require.Len(t, atts, 1)
		if simulated {
			assert.True(t, strings.HasSuffix(lines[0], "\texit_code\tsimulated"), lines[0])
			assert.True(t, strings.HasSuffix(lines[1], "\ttrue"), lines[1])
			assert.Equal(t, true, atts[0]["simulated"])
		} else {
			assert.NotContains(t, string(tsv), "simulated")
			assert.NotContains(t, atts[0], "simulated")
		}

		// The replay of that outcome (the small protocol; the other slots
		// never started).
		pb, err := os.ReadFile("decision/testdata/small_protocol.json")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(root, "p.json"), pb, 0o644))
		ty, err := ctyjson.ImpliedType(raw)
		require.NoError(t, err)
		rv, err := ctyjson.Unmarshal(raw, ty)
		require.NoError(t, err)
		n := &stages.Node{Address: "stage.replay", Stage: "replay", Ranges: map[string]hcl.Range{}, Args: map[string]cty.Value{
			"protocol": cty.StringVal("p.json"),
			"slots": cty.ObjectVal(map[string]cty.Value{"alpha-c1-s141": cty.ObjectVal(map[string]cty.Value{
				"result": rv, "status": cty.StringVal("ok")})}),
		}}
		require.False(t, stages.Decision{}.Check(n).HasErrors())
		out, err := stages.Decision{}.Run(context.Background(), n, rt)
		require.NoError(t, err)
		require.Empty(t, out.Class, out.Message)
		shown := rt.err.String()
		outcomes, err := os.ReadFile(filepath.Join(root, "reports/replay", stages.DecisionOutcomes))
		require.NoError(t, err)
		replayJSON, err := os.ReadFile(filepath.Join(root, "reports/replay/replay.json"))
		require.NoError(t, err)
		replayTSV, err := os.ReadFile(filepath.Join(root, "reports/replay/replay.tsv"))
		require.NoError(t, err)
		var o decision.Outcomes
		require.NoError(t, json.Unmarshal(outcomes, &o))
		assert.Equal(t, decision.Outcome{State: decision.WithinMargin, Attempts: 1, Simulated: simulated}, o["alpha-c1-s141"])
		if simulated {
			assert.Contains(t, shown, "stage.replay: replay of p.json over 24 slot outcomes (SIMULATED: 1 judged on simulated GPUs)")
			assert.Contains(t, shown, "SIMULATED: the outcomes of 1 of the 24 planned slots were judged on simulated GPUs")
			assert.Contains(t, string(replayJSON), `"not_measured":{"planned":24,"simulated":1,"absent":[]}`)
			assert.True(t, strings.HasSuffix(strings.SplitN(string(replayTSV), "\n", 2)[0], "\tsimulated"))
		} else {
			for what, text := range map[string]string{"terminal": shown, "outcomes.json": string(outcomes), "replay.json": string(replayJSON), "replay.tsv": string(replayTSV)} {
				assert.NotContains(t, strings.ToLower(text), "simulated", what)
			}
		}
	}
}

// TestSlotWithoutGPUMemoryIsUnresolved: a process that completes with no
// GPU memory seen at all (peak 0 MiB: it never used its GPUs, or its
// executor does not sample) has no measurement to judge against the
// margin: unresolved, saying why, not within_margin.
func TestSlotWithoutGPUMemoryIsUnresolved(t *testing.T) {
	for _, tc := range []struct {
		gpus []int
		on   string
	}{{[]int{0, 1}, "on GPUs [0 1]"}, {nil, "it leased no GPU"}} {
		rt := &slotRuntime{execRuntime: &execRuntime{root: t.TempDir()}, res: process.Result{GPUs: tc.gpus}}
		raw, res := runSlot(t, rt, slotNode("alpha-c1-s141"))
		assert.Equal(t, "unresolved", res["state"])
		assert.Equal(t, "completed, but no GPU memory was measured (peak 0 MiB; "+tc.on+"): no measurement to judge against the 38912 MiB limit", res["message"])
		assert.Equal(t, "unresolved: no GPU memory measured", stages.Slot{}.OutcomeLabel(raw), "the progress line")
		h, err := (&decision.Ledger{Dir: filepath.Join(rt.root, "ledger")}).History("alpha-c1-s141")
		require.NoError(t, err)
		require.Len(t, h.Attempts, 1, "not replaced: it is no setup failure")
		assert.Equal(t, decision.Unresolved, h.Attempts[0].State)
	}

	// Some memory seen: judged.
	rt := &slotRuntime{execRuntime: &execRuntime{root: t.TempDir()}, res: process.Result{PeakGPUMiB: 1, GPUs: []int{0}}}
	_, res := runSlot(t, rt, slotNode("alpha-c1-s141"))
	assert.Equal(t, "within_margin", res["state"])
}

// unstartedRuntime is an executor that cannot start the process (its
// program not found): it never says the process started.
type unstartedRuntime struct{ *execRuntime }

func (r *unstartedRuntime) Exec(_ context.Context, p stages.Proc) (*process.Result, error) {
	r.got = append(r.got, p)
	return &process.Result{ExitCode: -1, Class: "setup", Started: time.Now(), Ended: time.Now(),
		Message: "cannot start ./bin/trian: fork/exec /ws/bin/trian: no such file or directory"}, nil
}

// TestSlotWhoseProgramCannotStartIsNotCharged: a train_command whose
// program cannot be started (a typo) runs nothing: the slot's node fails
// with class setup naming the command and why, no attempt is charged
// (attempts.tsv and attempts.json list none), and the corrected command
// then collects the slot rather than being refused for another key. A
// replacement that cannot start stays decided, for the next apply.
func TestSlotWhoseProgramCannotStartIsNotCharged(t *testing.T) {
	root := t.TempDir()
	bad := &unstartedRuntime{&execRuntime{root: root}}
	n := slotNode("alpha-c1-s141")
	n.Args["run"], n.Key = strList("./bin/trian"), "k-typo"
	out, err := stages.Slot{}.Run(context.Background(), n, bad)
	require.NoError(t, err)
	assert.Equal(t, "setup", out.Class)
	assert.Contains(t, out.Message, "slot alpha-c1-s141: attempt 1 did not start (cannot start ./bin/trian: fork/exec /ws/bin/trian: no such file or directory): nothing ran, so nothing was charged")
	assert.Nil(t, out.Result)
	led := &decision.Ledger{Dir: filepath.Join(root, "ledger")}
	h, err := led.History("alpha-c1-s141")
	require.NoError(t, err)
	assert.Empty(t, h.Attempts, "no attempt")
	tsv, err := os.ReadFile(filepath.Join(root, "ledger", decision.LedgerTSV))
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(tsv), "\n"), "attempts.tsv: the header only")
	js, err := os.ReadFile(filepath.Join(root, "ledger", decision.LedgerJSON))
	require.NoError(t, err)
	assert.JSONEq(t, "[]", string(js))

	// The corrected command (another node key) collects the slot.
	good := &slotRuntime{execRuntime: &execRuntime{root: root}, res: process.Result{PeakGPUMiB: 1000, GPUs: []int{0}}}
	_, res := runSlot(t, good, slotNode("alpha-c1-s141"))
	assert.Equal(t, "within_margin", res["state"])
	assert.Equal(t, 1.0, res["attempts"])
	h, err = led.History("alpha-c1-s141")
	require.NoError(t, err)
	require.Len(t, h.Attempts, 1)
	assert.True(t, h.Attempts[0].Charged)
	assert.Equal(t, "k-alpha-c1-s141", h.Attempts[0].Key)

	// A slot that started and failed setup is replaced; the replacement
	// cannot start: it is not charged, and stays decided.
	require.NoError(t, led.Start(decision.Event{Slot: "alpha-c2-s141", Attempt: 1, Key: "k-alpha-c2-s141"}))
	require.NoError(t, led.End(decision.Event{Slot: "alpha-c2-s141", Attempt: 1, State: decision.Unresolved, Class: "exit", SetupClass: "port_collision"}))
	granted, _, err := led.DecideReplacement("alpha-c2-s141", 1, "port_collision", 8)
	require.NoError(t, err)
	require.True(t, granted)
	out, err = stages.Slot{}.Run(context.Background(), slotNode("alpha-c2-s141"), bad)
	require.NoError(t, err)
	assert.Equal(t, "setup", out.Class)
	assert.Contains(t, out.Message, "attempt 2 did not start")
	h, err = led.History("alpha-c2-s141")
	require.NoError(t, err)
	require.Len(t, h.Attempts, 1, "the first attempt only")
	assert.Equal(t, 2, h.Replacing, "the replacement stays decided")
}

// TestSlotPlanRefusalIsRunsRefusal: a slot the ledger holds as a node with
// another key collected it is refused by plan with the reason Run fails it
// with (class setup, nothing started); the slot's own key, or a key known
// only after apply, is not refused. Plan only reads the ledger: a torn
// last line is left for apply to drop.
func TestSlotPlanRefusalIsRunsRefusal(t *testing.T) {
	root := t.TempDir()
	led := &decision.Ledger{Dir: filepath.Join(root, "ledger")}
	require.NoError(t, led.Start(decision.Event{Slot: "alpha-c1-s141", Attempt: 1, RunID: "r1", Key: "k-before"}))
	require.NoError(t, led.End(decision.Event{Slot: "alpha-c1-s141", Attempt: 1, State: decision.WithinMargin, PeakGPUMiB: 1}))
	log := filepath.Join(root, "ledger", decision.LedgerLog)
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"event":"sta`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	before, err := os.ReadFile(log)
	require.NoError(t, err)

	n := slotNode("alpha-c1-s141")
	why := stages.Slot{}.PlanRefusal(n, root, n.Key, false)
	assert.Contains(t, why, "slot alpha-c1-s141 was collected in ledger ledger by a node with another key (k-before, run r1)")
	assert.Equal(t, why, stages.Slot{}.PlanRefusal(n, root, n.Key, true), "replaced or not")
	assert.Empty(t, stages.Slot{}.PlanRefusal(n, root, "k-before", false), "its own key")
	assert.Empty(t, stages.Slot{}.PlanRefusal(n, root, "", false), "a key known after apply")
	assert.Empty(t, stages.Slot{}.PlanRefusal(slotNode("alpha-c2-s141"), root, n.Key, false), "a slot not collected")
	after, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "plan writes nothing")

	rt := &slotRuntime{execRuntime: &execRuntime{root: root}, res: process.Result{PeakGPUMiB: 1, GPUs: []int{0}}}
	out, err := stages.Slot{}.Run(context.Background(), n, rt)
	require.NoError(t, err)
	assert.Equal(t, "setup", out.Class)
	assert.Equal(t, why, out.Message, "plan's reason is Run's")
	assert.Empty(t, rt.got, "nothing started")
}
