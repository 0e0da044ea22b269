package ui

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-run/cairn/events"
)

// apply --json's object of a node's end says why a node failed, was
// skipped or was not started (a serve node none of whose consumers needed
// it), and nothing of the kind for a node that ran.
func TestJSONObjectSaysWhyANodeDidNotRun(t *testing.T) {
	for _, c := range []struct {
		e          events.NodeEnded
		class, msg any
	}{
		{events.NodeEnded{Node: "stage.tm", Status: "not_started", Message: "nothing to evaluate"}, nil, "nothing to evaluate"},
		{events.NodeEnded{Node: "stage.a", Status: "failed", Class: "exit", Message: "exit status 1"}, "exit", "exit status 1"},
		{events.NodeEnded{Node: "stage.a", Status: "ok", DurationS: 1.5}, nil, nil},
	} {
		got := JSONObject(&c.e)
		assert.Equal(t, c.class, got["class"], c.e.Status)
		assert.Equal(t, c.msg, got["message"], c.e.Status)
		assert.Equal(t, c.e.Status, got["status"])
	}
}
