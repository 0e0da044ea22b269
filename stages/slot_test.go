package stages

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A slot node succeeds whatever its process did; apply shows its outcome
// in place of "ok" unless it completed at its first attempt (#28).
func TestSlotOutcomeLabel(t *testing.T) {
	var _ OutcomeLabeler = Slot{}
	for _, tc := range []struct{ result, want string }{
		{`{"slot": "s", "state": "within_margin", "attempts": 1}`, ""},
		{`{"slot": "s", "state": "above_margin", "attempts": 1}`, ""},
		{`{"slot": "s", "state": "memory_failure", "attempts": 1, "class": "memory_failure"}`, "memory_failure"},
		{`{"slot": "s", "state": "unresolved", "attempts": 1, "class": "timeout", "message": "killed at its timeout of 8s"}`, "unresolved: timeout"},
		{`{"slot": "s", "state": "unresolved", "attempts": 1, "class": "exit", "message": "exited with status 3"}`, "unresolved: crashed (exited with status 3)"},
		{`{"slot": "s", "state": "unresolved", "attempts": 1, "class": "signal"}`, "unresolved: crashed (signal)"},
		{`{"slot": "s", "state": "within_margin", "attempts": 2}`, "within_margin after a replacement (2 attempts charged)"},
		{`{"slot": "s", "state": "unresolved", "attempts": 2, "class": "exit", "setup_class": "gpu_visibility"}`, "unresolved: setup failure (gpu_visibility) after a replacement (2 attempts charged)"},
		{`not json`, ""},
	} {
		assert.Equal(t, tc.want, Slot{}.OutcomeLabel([]byte(tc.result)), tc.result)
	}
}

// A slot whose attempt ended unseen (cairn killed while it ran, recorded
// by the next apply) says so, and has no run time to show: the moment the
// next apply took to record it is none. One interrupted by Ctrl-C, whose
// end was seen, keeps its duration.
func TestSlotInterruptedUnseenHasNoDuration(t *testing.T) {
	var _ OutcomeUntimer = Slot{}
	unseen := `{"slot": "s", "state": "unresolved", "attempts": 1, "class": "interrupted", "ledger": [{"attempt": 1, "class": "interrupted", "ended": null, "end_unseen": true}]}`
	assert.Equal(t, "unresolved: interrupted (cairn stopped while it ran: its end was not seen, so it has no duration)", Slot{}.OutcomeLabel([]byte(unseen)))
	assert.True(t, Slot{}.OutcomeUntimed([]byte(unseen)))
	seen := `{"slot": "s", "state": "unresolved", "attempts": 1, "class": "interrupted", "ledger": [{"attempt": 1, "class": "interrupted", "ended": "2026-01-02T03:04:05Z"}]}`
	assert.Equal(t, "unresolved: interrupted", Slot{}.OutcomeLabel([]byte(seen)))
	assert.False(t, Slot{}.OutcomeUntimed([]byte(seen)))
	assert.False(t, Slot{}.OutcomeUntimed([]byte(`not json`)))
}
