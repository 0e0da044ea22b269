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
