// Package rollout is the rollout service cairn serves an optimizer method
// while its optimize node runs: a Unix socket speaking newline-delimited
// JSON (docs/rollout-protocol.md), a budget meter that cannot overspend, and
// a ledger of the charged rollouts that survives a kill -9.
//
// A rollout is one run of a candidate bundle on one training item. The
// service asks an Evaluator (the evaluate machinery, in package stages) for
// the results, charges one rollout per item that got a result — also when
// the result came from the item store, so that what a job is charged does
// not depend on what other jobs ran before — and counts, without charging,
// the items that ended as infrastructure failures.
package rollout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
)

// Error types a reply may carry (Reply.Error.Type).
const (
	// ErrBudgetExhausted: the request asked for more rollouts than the
	// budget has left; nothing was run or charged.
	ErrBudgetExhausted = "budget_exhausted"
	// ErrBadRequest: the request cannot be read (not JSON, an unknown op,
	// an unknown item, a bundle that cannot be read); nothing was charged.
	ErrBadRequest = "bad_request"
	// ErrInternal: cairn could not run or record the rollouts (the ledger
	// cannot be written); nothing was charged.
	ErrInternal = "internal"
)

// Outcome is what the Evaluator reports for one item.
type Outcome struct {
	Item string `json:"item"`
	// Key is the item key its result is stored under.
	Key     string          `json:"key,omitempty"`
	Score   *float64        `json:"score"`
	Outputs json.RawMessage `json:"outputs,omitempty"`
	// Error is the worker's message for an item that failed as a task.
	Error string `json:"error,omitempty"`
	// InfraFailure is set when the item spent its retries on
	// infrastructure failures: it has no result and is not charged.
	InfraFailure bool `json:"infra_failure,omitempty"`
	// Cached is set when the result came from the item store.
	Cached bool `json:"cached,omitempty"`
	// Charged is set by the service on the items it charged.
	Charged bool `json:"charged"`
}

// Evaluator runs a bundle on training items. It returns one Outcome per
// id, in order, or an error when nothing could be run; an error wrapping
// ErrBadBundle or ErrUnknownItem is the request's fault.
type Evaluator interface {
	Rollouts(ctx context.Context, bundle string, ids []string) ([]Outcome, error)
}

// RequestChecker is implemented by Evaluators that can tell, without
// running anything, that a request is malformed (a bundle it cannot read,
// an item not in the training split): the meter asks it before it looks at
// the budget, so that a malformed request is answered bad_request whatever
// is left of the budget.
type RequestChecker interface {
	CheckRequest(bundle string, ids []string) error
}

// ErrBadBundle and ErrUnknownItem are the Evaluator's errors for a request
// that names a bundle it cannot read or an item not in the training split.
var (
	ErrBadBundle   = errors.New("rollout: bad bundle")
	ErrUnknownItem = errors.New("rollout: unknown item")
)

// Counts are the meter's totals.
type Counts struct {
	Budget int `json:"budget"`
	// Charged rollouts got a result (from a worker or the item store).
	Charged int `json:"charged"`
	// Attempted rollouts were run: charged ones and infrastructure
	// failures.
	Attempted     int `json:"attempted"`
	InfraFailures int `json:"infra_failures"`
	// FromStore counts the charged rollouts answered from the item store.
	FromStore int `json:"from_store"`
	// Refused counts the rollouts asked for past the budget.
	Refused   int `json:"refused"`
	Remaining int `json:"remaining"`
}

// String is the progress line.
func (c Counts) String() string {
	return fmt.Sprintf("rollouts: charged %d/%d, attempted %d, infra-failures %d (%d from the store)",
		c.Charged, c.Budget, c.Attempted, c.InfraFailures, c.FromStore)
}

// Request is one line a method sends.
type Request struct {
	Op     string   `json:"op"` // "rollout" or "status"
	Bundle string   `json:"bundle,omitempty"`
	Items  []string `json:"items,omitempty"`
}

// Reply is the line the service answers.
type Reply struct {
	Results []Outcome   `json:"results,omitempty"`
	Counts  Counts      `json:"counts"`
	Error   *ReplyError `json:"error,omitempty"`
}

// ReplyError is a typed error.
type ReplyError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Meter charges rollouts against a budget and writes each charge to the
// ledger before the method sees its result. All charging happens under one
// lock: requests of a job are served one at a time.
type Meter struct {
	mu     sync.Mutex
	counts Counts
	ledger *os.File
	sync   bool
	// progress gets a line, and onProgress the counts, every
	// ProgressEvery charged rollouts.
	progress   io.Writer
	onProgress func(Counts)
	// onCharge is called with the charged outcomes of a request once they
	// are in the ledger (the run journal's hook).
	onCharge func([]Outcome)
}

// MeterOptions configure a Meter.
type MeterOptions struct {
	Budget int
	// Ledger is the file the charged rollouts are appended to, one JSON
	// line each; it is created empty (an optimization starts from
	// nothing).
	Ledger string
	// NoSync skips the fsync after each request's charges (tests).
	NoSync bool
	// Progress gets Counts.String, and OnProgress the counts, every
	// ProgressEvery charged rollouts.
	Progress   io.Writer
	OnProgress func(Counts)
	OnCharge   func([]Outcome)
}

// ProgressEvery is how many charged rollouts pass between progress lines.
const ProgressEvery = 10

// NewMeter opens a meter with an empty ledger.
func NewMeter(o MeterOptions) (*Meter, error) {
	if o.Budget < 0 {
		return nil, fmt.Errorf("rollout: budget %d is negative", o.Budget)
	}
	f, err := os.OpenFile(o.Ledger, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("rollout: open the ledger: %w", err)
	}
	m := &Meter{ledger: f, sync: !o.NoSync, progress: o.Progress, onProgress: o.OnProgress, onCharge: o.OnCharge}
	m.counts.Budget = o.Budget
	m.counts.Remaining = o.Budget
	return m, nil
}

// Close closes the ledger.
func (m *Meter) Close() error { return m.ledger.Close() }

// Counts returns the totals.
func (m *Meter) Counts() Counts {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts
}

// LedgerLine is one charged rollout in the ledger.
type LedgerLine struct {
	N      int      `json:"n"`
	Bundle string   `json:"bundle"`
	Item   string   `json:"item"`
	Key    string   `json:"key"`
	Score  *float64 `json:"score"`
	Cached bool     `json:"cached,omitempty"`
}

// Serve runs one request: it refuses it whole when it asks for more than
// the budget has left, else runs it and charges every item that got a
// result.
func (m *Meter) Serve(ctx context.Context, ev Evaluator, req Request) Reply {
	m.mu.Lock()
	defer m.mu.Unlock()
	fail := func(typ, format string, args ...any) Reply {
		return Reply{Counts: m.counts, Error: &ReplyError{Type: typ, Message: fmt.Sprintf(format, args...)}}
	}
	switch req.Op {
	case "status":
		return Reply{Counts: m.counts}
	case "rollout":
	default:
		return fail(ErrBadRequest, "unknown op %q: the ops are \"rollout\" and \"status\"", req.Op)
	}
	if req.Bundle == "" || len(req.Items) == 0 {
		return fail(ErrBadRequest, "a rollout request names a bundle and at least one item")
	}
	// A malformed request is the method's mistake whatever the budget
	// holds: it is answered bad_request, also once the budget is spent.
	seen := make(map[string]bool, len(req.Items))
	for _, id := range req.Items {
		if seen[id] {
			return fail(ErrBadRequest, "%q is asked for twice in one request; nothing was charged", id)
		}
		seen[id] = true
	}
	if rc, ok := ev.(RequestChecker); ok {
		if err := rc.CheckRequest(req.Bundle, req.Items); err != nil {
			return fail(ErrBadRequest, "%s; nothing was charged", err)
		}
	}
	if len(req.Items) > m.counts.Remaining {
		m.counts.Refused += len(req.Items)
		return fail(ErrBudgetExhausted, "%d rollout(s) asked for, %d of the budget of %d left; nothing was run or charged",
			len(req.Items), m.counts.Remaining, m.counts.Budget)
	}
	out, err := ev.Rollouts(ctx, req.Bundle, req.Items)
	if err != nil {
		typ := ErrInternal
		if errors.Is(err, ErrBadBundle) || errors.Is(err, ErrUnknownItem) {
			typ = ErrBadRequest
		}
		return fail(typ, "%s; nothing was charged", err)
	}
	if len(out) != len(req.Items) {
		return fail(ErrInternal, "the evaluation gave %d results for %d items; nothing was charged", len(out), len(req.Items))
	}
	var buf bytes.Buffer
	var charged []Outcome
	var progress []Counts // the counts as each 10th rollout was charged
	next := m.counts
	for i := range out {
		next.Attempted++
		if out[i].InfraFailure {
			next.InfraFailures++
			continue
		}
		next.Charged++
		next.Remaining--
		if out[i].Cached {
			next.FromStore++
		}
		if next.Charged%ProgressEvery == 0 {
			progress = append(progress, next)
		}
		out[i].Charged = true
		charged = append(charged, out[i])
		b, _ := json.Marshal(LedgerLine{N: next.Charged, Bundle: req.Bundle, Item: out[i].Item, Key: out[i].Key, Score: out[i].Score, Cached: out[i].Cached})
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if buf.Len() > 0 {
		if _, err := m.ledger.Write(buf.Bytes()); err != nil {
			return fail(ErrInternal, "cannot write the ledger: %s; nothing was charged", err)
		}
		if m.sync {
			if err := m.ledger.Sync(); err != nil {
				return fail(ErrInternal, "cannot sync the ledger: %s", err)
			}
		}
	}
	m.counts = next
	if m.onCharge != nil && len(charged) > 0 {
		m.onCharge(charged)
	}
	for _, c := range progress {
		if m.progress != nil {
			fmt.Fprintln(m.progress, c.String())
		}
		if m.onProgress != nil {
			m.onProgress(c)
		}
	}
	return Reply{Results: out, Counts: next}
}

// Server serves a Meter on a Unix socket.
type Server struct {
	meter *Meter
	ev    Evaluator
	ln    net.Listener
	ctx   context.Context
	wg    sync.WaitGroup
	log   io.Writer

	mu    sync.Mutex
	conns map[net.Conn]bool
}

// Listen starts serving on a Unix socket at path. log gets a line per
// connection that misbehaves.
func Listen(ctx context.Context, path string, m *Meter, ev Evaluator, log io.Writer) (*Server, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("rollout: listen on %s: %w", path, err)
	}
	if log == nil {
		log = io.Discard
	}
	s := &Server{meter: m, ev: ev, ln: ln, ctx: ctx, log: log, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

// maxRequest bounds one request line.
const maxRequest = 16 << 20

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), maxRequest)
	w := bufio.NewWriter(c)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var req Request
		var rep Reply
		if err := json.Unmarshal(line, &req); err != nil {
			rep = Reply{Counts: s.meter.Counts(), Error: &ReplyError{Type: ErrBadRequest, Message: "the request is not a JSON object of op, bundle and items: " + err.Error()}}
		} else {
			rep = s.meter.Serve(s.ctx, s.ev, req)
		}
		b, _ := json.Marshal(rep)
		w.Write(b)
		w.WriteByte('\n')
		if err := w.Flush(); err != nil {
			return
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(s.log, "cairn: rollout connection closed: %s\n", err)
	}
}

// Close stops accepting, closes every connection and waits for the
// requests being served.
func (s *Server) Close() error {
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}
