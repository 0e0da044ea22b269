package ui

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cairn-run/cairn/events"
)

// EventLogName is the run's event log in its run folder.
const EventLogName = "events.jsonl"

// EventLog is the Sink that keeps a run's events in events.jsonl in its
// run folder, one JSON object a line (docs/events.md), appended as they
// happen (within FlushAfter). Events before the run is named (what recovery did) are kept
// until RunStarted names its folder. Progress events, a live display's
// alone, are left out.
type EventLog struct {
	mu      sync.Mutex
	f       *os.File
	pending [][]byte
	err     error
	// buf holds what is not written yet: it is written FlushAfter after
	// its first event (one write for the events of a busy moment, not one
	// each), at once for a run's end and a failure, and at Close.
	buf   []byte
	timer *time.Timer
}

// FlushAfter is how long an event may wait in the log's buffer.
const FlushAfter = 100 * time.Millisecond

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
	switch e := e.(type) {
	case *events.RunEnded:
		l.flush()
	case *events.NodeEnded:
		if e.Status == "failed" {
			l.flush()
		}
	}
}

func (l *EventLog) write(b []byte) {
	if len(b) == 0 || l.err != nil {
		return
	}
	l.buf = append(l.buf, b...)
	if l.timer == nil {
		l.timer = time.AfterFunc(FlushAfter, func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.flush()
		})
	}
}

// flush writes the buffer; l.mu is held.
func (l *EventLog) flush() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if len(l.buf) == 0 || l.f == nil || l.err != nil {
		l.buf = l.buf[:0]
		return
	}
	if _, err := l.f.Write(l.buf); err != nil {
		l.fail(err)
	}
	l.buf = l.buf[:0]
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
	l.flush()
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
