package decision

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLedgerReplacementPolicy(t *testing.T) {
	l := &Ledger{Dir: t.TempDir()}
	fail := func(slot string, attempt int) {
		require.NoError(t, l.Start(Event{Slot: slot, Attempt: attempt, RunID: "r1"}))
		require.NoError(t, l.End(Event{Slot: slot, Attempt: attempt, State: Unresolved, Class: "exit", SetupClass: "port_collision"}))
	}
	// Nine slots fail setup at once: eight replacements are granted, each
	// once per slot, the ninth is refused.
	var wg sync.WaitGroup
	granted := make([]bool, 9)
	for i := range granted {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			slot := "s" + string(rune('a'+i))
			fail(slot, 1)
			ok, _, err := l.DecideReplacement(slot, 1, "port_collision", 8)
			assert.NoError(t, err)
			granted[i] = ok
		}(i)
	}
	wg.Wait()
	n := 0
	for _, g := range granted {
		if g {
			n++
		}
	}
	assert.Equal(t, 8, n)
	ok, total, err := l.DecideReplacement("sa", 1, "port_collision", 100)
	require.NoError(t, err)
	if granted[0] {
		assert.False(t, ok, "one replacement per slot")
		assert.Equal(t, 8, total)
	}

	h, err := l.History("sa")
	require.NoError(t, err)
	require.Len(t, h.Attempts, 1)
	assert.Equal(t, Unresolved, h.Last().State)
	if granted[0] {
		assert.Equal(t, 2, h.Replacing, "the replacement is recorded before it starts")
	}

	// The TSV and JSON list every attempt, charged.
	b, err := os.ReadFile(filepath.Join(l.Dir, LedgerJSON))
	require.NoError(t, err)
	var atts []Attempt
	require.NoError(t, json.Unmarshal(b, &atts))
	assert.Len(t, atts, 9)
	for _, a := range atts {
		assert.True(t, a.Charged)
		assert.NotNil(t, a.Ended)
	}
	tsv, err := os.ReadFile(filepath.Join(l.Dir, LedgerTSV))
	require.NoError(t, err)
	assert.Equal(t, 10, strings.Count(string(tsv), "\n"))
	assert.True(t, strings.HasPrefix(string(tsv), "slot\tattempt\tclass\tcharged\tstarted\tended\tpeak_gpu_mib\tstate"))
}

// An attempt whose end no apply saw (cairn killed while it ran) is
// recorded interrupted by the next apply with no end time: the ledger's
// files give it no duration (the time it was recorded is not its end),
// and it is no longer open. So is one of a ledger written before the
// mark, by its message. An attempt interrupted under a live cairn keeps
// its end.
func TestLedgerAttemptEndedUnseenHasNoEndTime(t *testing.T) {
	l := &Ledger{Dir: t.TempDir()}
	for _, slot := range []string{"killed", "old", "stopped"} {
		require.NoError(t, l.Start(Event{Slot: slot, Attempt: 1, RunID: "r1"}))
	}
	h, err := l.History("killed")
	require.NoError(t, err)
	assert.True(t, h.Last().Open(), "started, not ended")
	require.NoError(t, l.End(Event{Slot: "killed", Attempt: 1, State: Unresolved, Class: "interrupted", EndUnseen: true,
		Message: "cairn stopped while attempt 1 ran (run r1): its end was not seen, so it has no end time; a slot is never started again"}))
	require.NoError(t, l.End(Event{Slot: "old", Attempt: 1, State: Unresolved, Class: "interrupted",
		Message: "cairn stopped while attempt 1 ran (run r1); a slot is never started again"}))
	require.NoError(t, l.End(Event{Slot: "stopped", Attempt: 1, State: Unresolved, Class: "interrupted", Message: "interrupted"}))

	hs, err := l.Read()
	require.NoError(t, err)
	for _, slot := range []string{"killed", "old"} {
		a := hs[slot].Last()
		assert.Nil(t, a.Ended, slot)
		assert.True(t, a.EndUnseen, slot)
		assert.False(t, a.Open(), slot)
	}
	assert.NotNil(t, hs["stopped"].Last().Ended)
	assert.False(t, hs["stopped"].Last().EndUnseen)

	b, err := os.ReadFile(filepath.Join(l.Dir, LedgerJSON))
	require.NoError(t, err)
	var atts []map[string]any
	require.NoError(t, json.Unmarshal(b, &atts))
	for _, a := range atts {
		if a["slot"] == "stopped" {
			assert.NotNil(t, a["ended"])
			continue
		}
		assert.Nil(t, a["ended"], a["slot"])
		assert.Equal(t, true, a["end_unseen"], a["slot"])
	}
	tsv, err := os.ReadFile(filepath.Join(l.Dir, LedgerTSV))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(tsv)), "\n")[1:] {
		f := strings.Split(line, "\t")
		if f[0] == "stopped" {
			assert.NotEmpty(t, f[5], line)
			continue
		}
		assert.Equal(t, "interrupted", f[2], line)
		assert.Empty(t, f[5], "no end time: %s", line)
	}
}

func TestLedgerDropsATornLastLine(t *testing.T) {
	l := &Ledger{Dir: t.TempDir()}
	require.NoError(t, l.Start(Event{Slot: "a", Attempt: 1}))
	// cairn killed in the middle of writing the next event.
	f, err := os.OpenFile(filepath.Join(l.Dir, LedgerLog), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"event":"end","slot":"a","attem`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	h, err := l.History("a")
	require.NoError(t, err)
	require.Len(t, h.Attempts, 1)
	assert.Nil(t, h.Last().Ended, "the torn end does not count")
	require.NoError(t, l.End(Event{Slot: "a", Attempt: 1, State: WithinMargin}))
	b, err := os.ReadFile(filepath.Join(l.Dir, LedgerLog))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	require.Len(t, lines, 2, "the torn line is gone, the new event follows the first")
	for _, l := range lines {
		assert.True(t, json.Valid([]byte(l)), l)
	}

	// Damage in the middle is an error, not a guess.
	require.NoError(t, os.WriteFile(filepath.Join(l.Dir, LedgerLog), []byte("{oops\n"+string(b)), 0o644))
	_, err = l.History("a")
	assert.ErrorContains(t, err, "the ledger is damaged")
}
