package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-run/cairn/events"
)

// The live display shows each running node with its elapsed time and the
// progress line its kind reports (e.g. an evaluation's item counts).
func TestLiveDisplayShowsProgress(t *testing.T) {
	var sb strings.Builder
	tty := NewTerminal(Options{Progress: &sb, Live: true})
	defer tty.Close()
	tty.Emit(&events.PlanDecided{Nodes: []events.Planned{{Node: "stage.slow", Action: "run"}}})
	tty.Emit(&events.NodeStarted{Head: events.Head{Time: time.Now().Add(-3 * time.Second)}, Node: "stage.slow"})
	tty.Emit(&events.Progress{Node: "stage.slow", Text: "items 20/100: evaluated 20, from-cache 0, charged 20, infra-failures 0"})
	tty.mu.Lock()
	tty.live.update()
	tty.live.draw()
	tty.mu.Unlock()
	tty.Close()
	out := sb.String()
	assert.Contains(t, out, "[0/1] ran 0, cached 0, failed 0, skipped 0, running 1")
	assert.Contains(t, out, "stage.slow  3s  items 20/100: evaluated 20")
}
