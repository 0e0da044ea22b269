package ui

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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

// Each line of the live block is cut to the terminal's width (one column
// short of it), so none wraps and each redraw moves up over all it drew:
// a node line wider than the terminal left a stale counts line behind at
// every redraw. The cut counts runes, a wide one as two columns, and
// keeps the text valid UTF-8.
func TestLiveDisplayFitsTheWidth(t *testing.T) {
	var sb strings.Builder
	cols := 40
	tty := NewTerminal(Options{Progress: &sb, Live: true, Width: func() int { return cols }})
	defer tty.Close()
	long := `stage.a_rather_long_stage_name_for_testing["an-extremely-long-instance-key-that-goes-on-and-on"]`
	wide := `stage.w["日本語のとても長いインスタンスキー"]`
	tty.Emit(&events.PlanDecided{Nodes: []events.Planned{{Node: long, Action: "run"}, {Node: wide, Action: "run"}}})
	tty.Emit(&events.NodeStarted{Head: events.Head{Time: time.Now()}, Node: long})
	tty.Emit(&events.NodeStarted{Head: events.Head{Time: time.Now()}, Node: wide})
	for _, w := range []int{40, 20} {
		cols = w
		sb.Reset()
		tty.mu.Lock()
		tty.live.update()
		tty.live.draw()
		drawn := tty.live.drawn
		tty.live.clear()
		tty.mu.Unlock()
		out := strings.TrimSuffix(sb.String()[:strings.Index(sb.String(), "\x1b[")], "\n")
		lines := strings.Split(out, "\n")
		assert.Len(t, lines, 3, "the counts line and two nodes")
		assert.Equal(t, len(lines), drawn, "clear moves up over every row drawn")
		for _, l := range lines {
			assert.True(t, utf8.ValidString(l), "%q", l)
			assert.LessOrEqual(t, columns(l), w-1, "width %d: %q", w, l)
		}
		assert.True(t, strings.HasSuffix(lines[1], "…"), "a cut line ends with …: %q", lines[1])
	}
	assert.Equal(t, "abc", cutToWidth("abc", 3))
	assert.Equal(t, "ab…", cutToWidth("abcd", 3))
	assert.Equal(t, "日…", cutToWidth("日本語", 4), "a wide rune is two columns")
}

// columns is how many columns s takes, as cutToWidth counts them.
func columns(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// A Slurm job is said to be submitted when cairn hands it to Slurm, not
// started: Slurm may keep it pending for long. A local process started.
func TestSlurmJobIsSaidSubmitted(t *testing.T) {
	var sb strings.Builder
	tty := NewTerminal(Options{Progress: &sb})
	tty.Emit(&events.ProcessStarted{Node: "stage.cpu16", Executor: "slurm", Job: "slurm job 342", JobID: "342"})
	tty.Emit(&events.ProcessStarted{Node: "stage.here", Executor: "local", Job: "pid 42", JobID: "42"})
	tty.Close()
	out := sb.String()
	assert.Contains(t, out, "> stage.cpu16  submitted (slurm job 342)")
	assert.NotContains(t, out, "started (slurm job")
	assert.Contains(t, out, "> stage.here  started (pid 42)")
}
