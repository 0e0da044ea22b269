package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/stages"
)

// The apply prints nothing: it tells what happens as typed events
// (package events) to the sink in its options, and the terminal display,
// --json and the run's event log (package ui) show them.

// emit sends an event to the apply's sink, stamped with the run.
func (a *applier) emit(e events.Event) { a.ev.Emit(e) }

// info says something cairn did that people should know.
func (a *applier) info(format string, args ...any) {
	a.emit(&events.Info{Text: fmt.Sprintf(format, args...)})
}

// warn says what went wrong without failing the run.
func (a *applier) warn(format string, args ...any) {
	a.emit(&events.Warning{Text: fmt.Sprintf(format, args...)})
}

// nodeEnded tells a node's final state: ok (a node that ran), cached,
// failed or skipped. The duration is its record's, the command's own run
// time; the wait in a cluster's queue is told apart.
func (a *applier) nodeEnded(ns *nodeState, status string) {
	e := &events.NodeEnded{Node: ns.n.Addr, Key: ns.key, Status: status, Class: ns.class, Message: ns.message,
		Attempt: ns.attempts, Refused: ns.refused, NoResume: ns.noResume}
	if ns.class == "" && status != "not_started" {
		e.Message = ""
	}
	if l, ok := ns.n.Kind.(stages.OutcomeLabeler); ok && ns.record != nil && status == "ok" {
		e.Label = l.OutcomeLabel(ns.record.Result)
		u, ok := l.(stages.OutcomeUntimer)
		e.Untimed = ok && e.Label != "" && u.OutcomeUntimed(ns.record.Result)
	}
	ranHere := !ns.started.IsZero() && !ns.ended.IsZero()
	switch {
	case e.Untimed:
	case ranHere && ns.svc == nil:
		// Its attempts' own run times, each from its process's start
		// to its end, as cairn show and the report add them; none for
		// attempts whose process never started.
		e.Duration = ns.ranBefore + ns.lastRan
		e.DurationS = e.Duration.Seconds()
	case status == "ok" || ranHere:
		e.Duration = ns.ranFor()
		if ranHere {
			e.DurationS = e.Duration.Seconds()
		}
	}
	if r := ns.res; r != nil {
		e.Queued, e.QueuedS, e.Requeued = r.Queued, r.Queued.Seconds(), r.Requeued
		e.GPUs, e.PeakRSSMiB, e.PeakGPUMiB = r.GPUs, r.PeakRSSMiB, r.PeakGPUMiB
	}
	if rec := ns.record; rec != nil && status != "cached" {
		e.PeakRSSMiB, e.PeakGPUMiB = rec.PeakRSSMiB, rec.PeakGPUMiB
	}
	if ns.lease != nil && len(e.GPUs) == 0 {
		e.GPUs = ns.lease.Devices
	}
	if ns.job.ID != "" {
		e.Executor, e.JobID = ns.job.Executor, ns.job.ID
	}
	if status == "failed" {
		e.Logs = executor.ExistingLogs(ns.logPaths())
	}
	if line := a.summaryLine(ns); line != "" {
		e.Summary = json.RawMessage(line)
	}
	a.emitEnded(ns, e)
}

// heldEnd is a node_ended event that waits for an upstream's.
type heldEnd struct {
	ns *nodeState
	e  *events.NodeEnded
}

// emitEnded emits a node's node_ended event after its upstreams' own: a
// downstream may end (taken from the cache, say) while an upstream it
// was released by still writes its record, and every reader of the
// events (the terminal, --json, events.jsonl, the report) sees an
// upstream end before what it fed. The event waits with that upstream
// and goes out, stamped then, right after the upstream's.
func (a *applier) emitEnded(ns *nodeState, e *events.NodeEnded) {
	for _, d := range ns.n.Deps {
		if u := a.nodes[d]; !u.endedOut && (u.released || u.endedHeld) {
			ns.endedHeld = true
			u.heldEnds = append(u.heldEnds, heldEnd{ns, e})
			return
		}
	}
	ns.endedHeld = false
	a.emit(e)
	ns.endedOut = true
	held := ns.heldEnds
	ns.heldEnds = nil
	for _, h := range held {
		a.emitEnded(h.ns, h.e)
	}
}

// flushHeldEnds emits the node_ended events still waiting for an
// upstream's that will not come (the run stopped first), in node order.
func (a *applier) flushHeldEnds() {
	for _, ns := range a.nodes {
		held := ns.heldEnds
		ns.heldEnds = nil
		for _, h := range held {
			h.ns.endedHeld = false
			a.emit(h.e)
			h.ns.endedOut = true
		}
	}
}

// okLine tells that a node that ran is ok.
func (a *applier) okLine(ns *nodeState) {
	a.nodeEnded(ns, "ok")
	ns.shedRun()
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

// notice tells at once what the executor waits for, or that the wait is
// over (ns nil: the executor's, not one node's), and notes it in the
// journal.
func (a *applier) notice(ns *nodeState, n executor.Notice) {
	if n.Error != "" {
		a.emit(&events.ExecutorError{Text: n.Error})
		return
	}
	status := "over"
	if n.Waiting {
		status = "waiting"
	}
	e := runlog.Entry{T: runlog.Waiting, Status: status, Message: n.String()}
	ev := &events.Notice{Text: n.String(), Waiting: n.Waiting}
	if ns != nil {
		e.Node, ev.Node = ns.n.Addr, ns.n.Addr
	}
	a.emit(ev)
	_ = a.j.Note(e)
}

// planDecided tells what the apply means to do with each node.
func (a *applier) planDecided() {
	e := &events.PlanDecided{Nodes: make([]events.Planned, len(a.nodes))}
	for i, ns := range a.nodes {
		pn := ns.pn
		if pn.Skipped {
			// Outside --target: the plan decided nothing for it.
			e.Nodes[i] = events.Planned{Node: ns.n.Addr, OutsideTarget: true}
			continue
		}
		e.Nodes[i] = events.Planned{Node: ns.n.Addr, Action: pn.Action, Key: pn.Key, Reasons: pn.Reasons}
	}
	a.emit(e)
}

// runEnded tells the run's end.
func (a *applier) runEnded(status, msg string) {
	a.flushHeldEnds()
	r := a.res
	a.emit(&events.RunEnded{Status: status, Message: msg, Ran: r.Ran, Cached: r.Cached, Failed: r.Failed, Skipped: r.Skipped, Interrupted: r.Stopped, DurationS: r.Dur.Seconds()})
}

func tailLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func intsString(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
