// Package events is what an apply tells the world as it goes: typed
// events (the plan decided, a node started and ended, item progress,
// rollout counts, batches and their waves, GPU leases, notices and
// warnings, the run's start and end) sent to one Sink. The engine, the
// stage kinds and the executors emit them and print nothing; the
// terminal display, `--json` and the run's event log (events.jsonl in
// the run folder) are sinks at the edge (package ui). docs/events.md is
// the schema of their JSON form.
//
// The package is a leaf: it imports nothing of cairn's.
package events

import (
	"encoding/json"
	"sync"
	"time"
)

// Version is the version of the events' JSON form (docs/events.md): each
// object's "v". A field added keeps it; a field removed or changed in
// meaning raises it.
const Version = 1

// Head is what every event carries: the schema version, its type, when
// it happened and the run it belongs to ("" before the run is named).
type Head struct {
	V    int       `json:"v"`
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	Run  string    `json:"run,omitempty"`
}

func (h *Head) head() *Head { return h }

// Event is one of this package's event types.
type Event interface {
	head() *Head
	// Kind is the event's type, its JSON "type".
	Kind() string
}

// Stamp fills an event's head: the version, its type, the run, and the
// time when it has none.
func Stamp(e Event, run string) {
	h := e.head()
	h.V, h.Type = Version, e.Kind()
	if h.Run == "" {
		h.Run = run
	}
	if h.Time.IsZero() {
		h.Time = time.Now()
	}
}

// HeadOf is the event's head.
func HeadOf(e Event) Head { return *e.head() }

// Marshal is the event as one JSON object (its head stamped).
func Marshal(e Event) ([]byte, error) {
	Stamp(e, "")
	return json.Marshal(e)
}

// A Sink receives events. The engine sends them one at a time, in the
// order they happened; a sink that others share guards itself.
type Sink interface {
	Emit(Event)
}

// Func is a Sink made of a function.
type Func func(Event)

// Emit implements Sink.
func (f Func) Emit(e Event) { f(e) }

// Discard drops every event.
var Discard Sink = Func(func(Event) {})

// Fanout sends each event to every sink in turn; nil ones are left out.
type Fanout []Sink

// Emit implements Sink.
func (f Fanout) Emit(e Event) {
	for _, s := range f {
		if s != nil {
			s.Emit(e)
		}
	}
}

// Serial is a Sink that passes events to Sink one at a time: for emitters
// on many goroutines (an apply's workers).
type Serial struct {
	mu   sync.Mutex
	Sink Sink
	Run  string // stamped on events that name no run
}

// SetRun names the run stamped from now on.
func (s *Serial) SetRun(run string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Run = run
}

// Emit implements Sink: the event is stamped, then passed on.
func (s *Serial) Emit(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	Stamp(e, s.Run)
	if s.Sink != nil {
		s.Sink.Emit(e)
	}
}
