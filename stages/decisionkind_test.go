package stages

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/stages/decision"
)

// A replay never counts a slot not_started while its ledger holds an
// attempt of it (another apply collected it, or is collecting it), nor
// while another apply has an attempt of the collection running; a slot
// the ledger has never seen is not_started as before, and a ledger folder
// that does not exist is not created.
func TestDecisionRefusesSlotsCollectedElsewhere(t *testing.T) {
	rt := &fakeRuntime{root: t.TempDir()}
	led := &decision.Ledger{Dir: filepath.Join(rt.root, "led")}
	n := &Node{Address: "stage.replay", Upstreams: []Upstream{
		{Address: `stage.collect["a"]`, Status: "failed", Class: "setup", Args: map[string]cty.Value{"ledger": cty.StringVal("led")}},
		{Address: `stage.collect["b"]`, Status: "ok"},
	}}

	// Nothing in the ledger yet: the missing slot is not_started.
	msg, err := collectedElsewhere(n, rt, decision.Outcomes{"a": {State: decision.NotStarted}, "b": {State: decision.WithinMargin}})
	require.NoError(t, err)
	assert.Empty(t, msg)
	assert.NoDirExists(t, led.Dir)

	require.NoError(t, led.Start(decision.Event{Slot: "a", Attempt: 1, RunID: "run-1"}))
	require.NoError(t, led.End(decision.Event{Slot: "a", Attempt: 1, State: decision.WithinMargin}))
	require.NoError(t, led.Start(decision.Event{Slot: "b", Attempt: 1, RunID: "run-1"}))

	msg, err = collectedElsewhere(n, rt, decision.Outcomes{"a": {State: decision.NotStarted}, "b": {State: decision.WithinMargin}, "c": {State: decision.NotStarted}})
	require.NoError(t, err)
	assert.Contains(t, msg, "1 slot(s) have no outcome in this apply but attempts in ledger led: a (attempt 1, started by run run-1, ended within_margin).")
	assert.Contains(t, msg, "nothing was written")

	// Only c is missing, which the ledger has not seen, but run-1 is
	// running b now.
	msg, err = collectedElsewhere(n, rt, decision.Outcomes{"a": {State: decision.WithinMargin}, "b": {State: decision.WithinMargin}, "c": {State: decision.NotStarted}})
	require.NoError(t, err)
	assert.Contains(t, msg, "1 planned slot(s) have no outcome in this apply (c first), and another apply is collecting ledger led now: b (run run-1) running.")

	// b's attempt ended: c is not_started, and the replay goes on.
	require.NoError(t, led.End(decision.Event{Slot: "b", Attempt: 1, State: decision.AboveMargin}))
	msg, err = collectedElsewhere(n, rt, decision.Outcomes{"a": {State: decision.WithinMargin}, "b": {State: decision.AboveMargin}, "c": {State: decision.NotStarted}})
	require.NoError(t, err)
	assert.Empty(t, msg)

	// Every slot has its outcome: the ledger is not read.
	msg, err = collectedElsewhere(&Node{}, rt, decision.Outcomes{"a": {State: decision.WithinMargin}})
	require.NoError(t, err)
	assert.Empty(t, msg)
}
