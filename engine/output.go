package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/stages"
)

// okLine shows a node that ran as ok: its kind's summary, its line, its
// JSON event. A node whose result records a failure its kind absorbs (a
// decision slot that ran out of memory) shows that outcome, not "ok". The
// duration is its record's, the command's own run time; the wait in a
// cluster's queue is said apart.
func (a *applier) okLine(ns *nodeState) {
	a.announce(ns)
	sym, what := "✓", "ok"
	if l, ok := ns.n.Kind.(stages.OutcomeLabeler); ok && ns.record != nil {
		if label := l.OutcomeLabel(ns.record.Result); label != "" {
			sym, what = "!", label
		}
	}
	msg := fmt.Sprintf("%s in %s", what, roundDur(ns.ranFor()))
	if r := ns.res; r != nil && (r.Queued > 0 || r.Requeued > 0) {
		msg += fmt.Sprintf(" (queued %s", roundDur(r.Queued))
		if r.Requeued > 0 {
			msg += fmt.Sprintf(", requeued %d×", r.Requeued)
		}
		msg += ")"
	}
	a.line(ns, sym, msg)
	a.emitJSON(ns, "ok")
}

// summaryLine is the summary line a node's kind makes of its result
// (stages.Announcer), read from the node's record, or "".
func (a *applier) summaryLine(ns *nodeState) string {
	an, ok := ns.n.Kind.(stages.Announcer)
	if !ok || ns.record == nil || len(ns.record.Result) == 0 {
		return ""
	}
	return an.Announce(ns.spec, ns.record.Result)
}

// announce prints the summary line of a node whose kind makes one: after
// it ran and when it is taken from the cache alike. It goes to Summaries,
// else where the node's progress lines go.
func (a *applier) announce(ns *nodeState) {
	line := a.summaryLine(ns)
	switch {
	case line == "":
	case a.opts.Summaries != nil:
		_, _ = a.writeOut(a.opts.Summaries, []byte(line+"\n"))
	default:
		_, _ = (&lockedWriter{a: a}).Write([]byte(line + "\n"))
	}
}

// notice says at once what the executor waits for, or that the wait is
// over: a progress line, the node's live progress (ns nil: the
// executor's, not one node's) and a journal note.
func (a *applier) notice(ns *nodeState, n executor.Notice) {
	status := "over"
	if n.Waiting {
		status = "waiting"
	}
	e := runlog.Entry{T: runlog.Waiting, Status: status, Message: n.String()}
	if ns == nil {
		a.printf("  … %s\n", n)
	} else {
		e.Node = ns.n.Addr
		a.line(ns, "…", n.String())
		a.mu.Lock()
		if n.Waiting {
			ns.progress = n.String()
		} else {
			ns.progress = ""
		}
		a.mu.Unlock()
	}
	_ = a.j.Note(e)
}

func (a *applier) printf(format string, args ...any) {
	if a.opts.JSON {
		return
	}
	_, _ = a.writeOut(a.out, fmt.Appendf(nil, format, args...))
}

// writeOut writes p to w under the output lock, clearing the live display
// first.
func (a *applier) writeOut(w io.Writer, p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.live != nil {
		a.live.clear()
	}
	return w.Write(p)
}

func (a *applier) line(ns *nodeState, sym, what string) {
	a.printf("  %s %s  %s\n", sym, ns.n.Addr, what)
}

func (a *applier) emitJSON(ns *nodeState, status string) {
	if !a.opts.JSON {
		return
	}
	ev := map[string]any{"node": ns.n.Addr, "status": status, "key": ns.key}
	if ns.class != "" {
		ev["class"], ev["message"] = ns.class, ns.message
	}
	if !ns.started.IsZero() && !ns.ended.IsZero() {
		ev["duration_s"] = ns.ranFor().Seconds()
		if ns.res != nil && ns.res.Queued > 0 {
			ev["queued_s"] = ns.res.Queued.Seconds()
		}
	}
	if line := a.summaryLine(ns); line != "" {
		ev["summary"] = json.RawMessage(line)
	}
	b, _ := json.Marshal(ev)
	a.mu.Lock()
	defer a.mu.Unlock()
	fmt.Fprintln(a.out, string(b))
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d > time.Minute:
		return d.Round(time.Second)
	case d > time.Second:
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

func tailLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

type lockedWriter struct{ a *applier }

func (w *lockedWriter) Write(p []byte) (int, error) {
	a := w.a
	if a.opts.Stderr == nil {
		a.printf("%s", p)
		return len(p), nil
	}
	return a.writeOut(a.opts.Stderr, p)
}

func intsString(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
