package ui

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"

	"github.com/cairn-run/cairn/events"
)

// EventLogName is the run's event log in its run folder.
const EventLogName = "events.jsonl"

// EventLog is the Sink that keeps a run's events in events.jsonl in its
// run folder, one JSON object a line (docs/events.md), each appended as
// it happens. Events before the run is named (what recovery did) are kept
// until RunStarted names its folder. Progress events, a live display's
// alone, are left out.
type EventLog struct {
	mu      sync.Mutex
	f       *os.File
	pending [][]byte
	err     error
}

// Emit implements events.Sink.
func (l *EventLog) Emit(e events.Event) {
	if _, ok := e.(*events.Progress); ok {
		return
	}
	b, err := events.Marshal(e)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.fail(err)
		return
	}
	b = append(b, '\n')
	if rs, ok := e.(*events.RunStarted); ok && l.f == nil && l.err == nil {
		f, err := os.OpenFile(filepath.Join(rs.Dir, EventLogName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
		if err != nil {
			l.fail(err)
			return
		}
		l.f = f
		l.write(bytes.Join(l.pending, nil))
		l.pending = nil
	}
	if l.f == nil {
		if l.err == nil {
			l.pending = append(l.pending, b)
		}
		return
	}
	l.write(b)
}

func (l *EventLog) write(b []byte) {
	if len(b) == 0 || l.err != nil {
		return
	}
	if _, err := l.f.Write(b); err != nil {
		l.fail(err)
	}
}

func (l *EventLog) fail(err error) {
	if l.err == nil {
		l.err = err
	}
	l.pending = nil
}

// Close closes the log; it returns the first error that kept an event
// out of it.
func (l *EventLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		if err := l.f.Close(); err != nil && l.err == nil {
			l.err = err
		}
		l.f = nil
	}
	return l.err
}

// ReadEventLog reads a run's events.jsonl: each line as its JSON object,
// keyed by field (for tests and tools that read the log).
func ReadEventLog(path string) ([]map[string]json.RawMessage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []map[string]json.RawMessage
	for line := range bytes.SplitSeq(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
