// Package ui shows an apply's events (package events) to people and
// programs: the progress lines and the live status block on a terminal,
// `--json` (one object a line, docs/events.md), and the run's event log
// (events.jsonl in the run folder). The engine and the stage kinds emit
// events and never import this package; the CLI wires it up.
package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cairn-run/cairn/events"
)

// JSONVersion is the version of `--json`'s objects (their "v"): the
// events' schema version (docs/events.md).
const JSONVersion = events.Version

// Options configure a Terminal.
type Options struct {
	// Progress receives the progress lines (or, with JSON, one JSON
	// object a node event).
	Progress io.Writer
	// Stderr receives the kinds' own lines (an evaluation's item counts,
	// a comparison table); nil sends them to Progress.
	Stderr io.Writer
	// Summaries receives the summary lines of the nodes whose kind makes
	// one, one a line; nil sends them to Stderr.
	Summaries io.Writer
	JSON      bool
	Verbose   bool // also list cached nodes
	Live      bool // redraw a live status block (a TTY)
	// Width is the terminal's width in columns, asked at each redraw (it
	// may be resized); the live block's lines are cut to fit it, so that
	// none wraps and the redraw erases what it drew. nil or 0: unknown,
	// lines are not cut.
	Width func() int
	// Expect is how long an earlier run of the node took (0: unknown),
	// for the live block's ETA.
	Expect func(node string) time.Duration
}

// Terminal is the Sink that prints an apply for people: a line as each
// node starts and ends, notices and warnings, and on a TTY a live block of
// what runs. With JSON it prints one object a node event instead.
type Terminal struct {
	o    Options
	mu   sync.Mutex // guards the writers and the live block
	live *liveDisplay
}

// NewTerminal makes a Terminal; Close stops its live block.
func NewTerminal(o Options) *Terminal {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return &Terminal{o: o}
}

// Close stops the live block, erasing it.
func (t *Terminal) Close() {
	if t.live != nil {
		t.live.stop()
		t.live = nil
	}
}

// Emit implements events.Sink.
func (t *Terminal) Emit(e events.Event) {
	switch e := e.(type) {
	case *events.PlanDecided:
		if t.o.Live && t.live == nil {
			t.live = newLiveDisplay(t, e)
		}
	case *events.RunEnded:
		t.Close()
	case *events.Info:
		t.printf("cairn: %s\n", e.Text)
	case *events.Warning:
		t.printf("warning: %s\n", e.Text)
	case *events.ExecutorError:
		t.printf("cairn: %s\n", e.Text)
	case *events.Notice:
		if e.Node == "" {
			t.printf("  … %s\n", e.Text)
			return
		}
		t.line(e.Node, "…", e.Text)
		if t.live != nil {
			text := ""
			if e.Waiting {
				text = e.Text
			}
			t.live.progress(e.Node, text)
		}
	case *events.NodeWaiting:
		if t.live != nil {
			if e.Over {
				t.live.ended(e.Node, "")
			} else {
				t.live.started(e.Node, e.Time)
			}
		}
		if e.Over {
			return
		}
		why := "the same work is running in " + e.Holder
		if e.Writes != "" {
			why = e.Holder + " is running a node that writes " + e.Writes + " too"
		}
		t.printf("  … %s waits: %s\n", e.Node, why)
		if t.live != nil {
			t.live.progress(e.Node, "waiting: "+why)
		}
	case *events.NodeStarted:
		if t.live != nil {
			t.live.started(e.Node, e.Time)
		}
	case *events.Progress:
		if t.live != nil {
			t.live.progress(e.Node, e.Text)
		}
	case *events.ProcessStarted:
		if e.InProcess {
			t.line(e.Node, ">", "started")
			return
		}
		detail := startedWord(e) + " (" + e.Job
		if len(e.GPUs) > 0 {
			detail += fmt.Sprintf(", GPU %s", Ints(e.GPUs))
		}
		t.line(e.Node, ">", detail+")")
	case *events.ServeEvent:
		t.line(e.Node, "·", e.Message)
	case *events.NodeRetry:
		t.line(e.Node, "↻", fmt.Sprintf("attempt %d failed (%s): %s; retrying", e.Attempt, e.Class, e.Message))
	case *events.NodeEnded:
		t.nodeEnded(e)
	case *events.ItemProgress:
		t.note(e.Node, e.Text)
	case *events.RolloutCounts:
		t.note(e.Node, e.Text)
	case *events.NodeNote:
		t.note(e.Node, e.Text)
	case *events.NodeOutput:
		t.stderr(e.Text)
	case *events.BatchRerun:
		if e.Mixed {
			t.printf("  batch stage.%s: strict_batch: the %d cached variant(s) were measured in different launches, so they run again together\n", e.Stage, e.Again)
			break
		}
		t.printf("  batch stage.%s: strict_batch: %s must run, so the %d cached variant(s) run again with it\n", e.Stage, e.Node, e.Again)
	case *events.BatchStarted:
		sim := ""
		if e.Simulated {
			sim = " (simulated)"
		}
		mode := "backfill"
		if e.Mode != "backfill" {
			mode = fmt.Sprintf("%d wave(s)", e.Waves)
		}
		plural := "s"
		if len(e.GPUs) == 1 {
			plural = ""
		}
		t.printf("  batch stage.%s: %d variant(s) on free GPU%s %s%s: parallel=%d, %s, logs in %s\n",
			e.Stage, e.Variants, plural, Ints(e.GPUs), sim, e.Parallel, mode, e.LogDir)
	case *events.LedgerUpdated:
		if e.Created {
			t.printf("  ledger: created %s with the sections %s\n", e.Path, strings.Join(quoteAll(e.Sections), " and "))
			return
		}
		t.printf("  ledger: added %s to %s\n", strings.Join(quoteAll(e.Added), " and "), e.Path)
	}
}

// nodeEnded shows a node's end: its kind's summary line (ok or cached),
// its line, its JSON object. A node whose result records a failure its
// kind absorbs shows that outcome, not "ok". The wait in a cluster's
// queue is said apart from the run time.
func (t *Terminal) nodeEnded(e *events.NodeEnded) {
	if t.live != nil {
		t.live.ended(e.Node, e.Status)
	}
	switch e.Status {
	case "ok":
		t.announce(e)
		sym, what := "✓", "ok"
		if e.Label != "" {
			sym, what = "!", e.Label
		}
		msg := what
		if !e.Untimed {
			msg = fmt.Sprintf("%s in %s", what, RoundDur(e.Duration))
		}
		if e.Queued > 0 || e.Requeued > 0 {
			msg += fmt.Sprintf(" (queued %s", RoundDur(e.Queued))
			if e.Requeued > 0 {
				msg += fmt.Sprintf(", requeued %d×", e.Requeued)
			}
			msg += ")"
		}
		t.line(e.Node, sym, msg)
	case "cached":
		t.announce(e)
		if t.o.Verbose {
			t.line(e.Node, "=", "cached")
		}
	case "failed":
		t.line(e.Node, "✗", fmt.Sprintf("failed (%s): %s", e.Class, e.Message))
	case "skipped":
		t.line(e.Node, "-", "skipped: "+e.Message)
	case "not_started":
		t.line(e.Node, "=", "not started: "+e.Message)
	}
	t.json(e)
}

// announce prints the summary line of a node whose kind makes one: after
// it ran and when it is taken from the cache alike. It goes to Summaries,
// else where the kinds' lines go.
func (t *Terminal) announce(e *events.NodeEnded) {
	switch {
	case len(e.Summary) == 0:
	case t.o.Summaries != nil:
		t.write(t.o.Summaries, append([]byte(e.Summary), '\n'))
	default:
		t.stderr(string(e.Summary) + "\n")
	}
}

// JSONObject is a node's end as `--json` prints it (docs/events.md): the
// node, its status and key, its failure's class and message, its run
// time and queue wait where it ran, its kind's summary, and "v".
func JSONObject(e *events.NodeEnded) map[string]any {
	ev := map[string]any{"v": JSONVersion, "node": e.Node, "status": e.Status}
	if e.Key != "" {
		// Absent for a node whose key was never known (skipped while
		// its upstreams' results were unknown).
		ev["key"] = e.Key
	}
	if e.Class != "" {
		ev["class"] = e.Class
	}
	if e.Message != "" {
		// A failed or skipped node's, and why a serve node did not start.
		ev["message"] = e.Message
	}
	if e.DurationS != 0 {
		ev["duration_s"] = e.DurationS
		if e.QueuedS > 0 {
			ev["queued_s"] = e.QueuedS
		}
	}
	if len(e.Summary) > 0 {
		ev["summary"] = e.Summary
	}
	return ev
}

func (t *Terminal) json(e *events.NodeEnded) {
	if !t.o.JSON {
		return
	}
	b, _ := json.Marshal(JSONObject(e))
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintln(t.o.Progress, string(b))
}

// note is a line a kind says about its node.
func (t *Terminal) note(node, text string) {
	t.stderr("  · " + node + "  " + text + "\n")
}

// stderr writes the kinds' own text: to Stderr, else as a progress line.
func (t *Terminal) stderr(s string) {
	if t.o.Stderr == nil {
		t.printf("%s", s)
		return
	}
	t.write(t.o.Stderr, []byte(s))
}

func (t *Terminal) printf(format string, args ...any) {
	if t.o.JSON {
		return
	}
	t.write(t.o.Progress, fmt.Appendf(nil, format, args...))
}

// write writes p to w under the output lock, clearing the live block
// first.
func (t *Terminal) write(w io.Writer, p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.live != nil {
		t.live.clear()
	}
	_, _ = w.Write(p)
}

func (t *Terminal) line(node, sym, what string) {
	t.printf("  %s %s  %s\n", sym, node, what)
}

// RoundDur rounds a duration for people: to the second above a minute,
// to 10ms above a second, else to the millisecond.
func RoundDur(d time.Duration) time.Duration {
	switch {
	case d > time.Minute:
		return d.Round(time.Second)
	case d > time.Second:
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// Ints is xs joined by commas: "0,1".
func Ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}

// startedWord is what a node's job start is called: a Slurm job is only
// submitted then (Slurm queues it, and may keep it pending), a local
// process started.
func startedWord(e *events.ProcessStarted) string {
	if e.Executor == "slurm" {
		return "submitted"
	}
	return "started"
}
