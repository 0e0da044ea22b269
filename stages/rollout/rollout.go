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

	"github.com/cairn-run/cairn/stages/jsonpos"
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
// ledger before the method sees its result. Requests are evaluated and
// charged one at a time, in the order they take the evaluation lock; the
// ledger's fsync is shared by the requests that wait for it together (a
// group commit), and runs while the next request is evaluated. Each reply,
// and the counts any reply shows, wait until the charges they count are on
// disk.
type Meter struct {
	// evalMu is held while a request is checked, evaluated and written to
	// the ledger: requests are charged in order and cannot overspend.
	evalMu sync.Mutex
	// pending are the counts as charged by the requests written to the
	// ledger, durable or not (evalMu held): the budget is checked on them.
	pending Counts
	seq     int // requests that changed pending (evalMu held)

	mu sync.Mutex
	// counts are the counts of the requests whose charges are durable and
	// published, in order: status replies show them.
	counts    Counts
	published int // the last request whose counts are published
	cond      *sync.Cond
	ledger    *os.File
	written   int64 // bytes written to the ledger

	// syncMu is held by the one fsync in progress; synced (syncMu held)
	// is how much of the ledger it and those before it made durable, and
	// syncErr the first fsync failure (the ledger is not trusted after).
	syncMu  sync.Mutex
	synced  int64
	syncErr error
	sync    bool
	// syncLedger syncs the ledger (tests count and hold its calls).
	syncLedger func(*os.File) error

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
	m := &Meter{ledger: f, sync: !o.NoSync, syncLedger: (*os.File).Sync, progress: o.Progress, onProgress: o.OnProgress, onCharge: o.OnCharge}
	m.cond = sync.NewCond(&m.mu)
	m.counts.Budget = o.Budget
	m.counts.Remaining = o.Budget
	m.pending = m.counts
	return m, nil
}

// Close closes the ledger.
func (m *Meter) Close() error { return m.ledger.Close() }

// Counts returns the totals whose charges are durable.
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

// charge is what one request changed: its counts, its charged outcomes,
// the counts at each 10th charged rollout, and where its ledger lines end.
type charge struct {
	seq      int
	counts   Counts
	charged  []Outcome
	progress []Counts
	end      int64
}

// Serve runs one request: it refuses it whole when it asks for more than
// the budget has left, else runs it and charges every item that got a
// result. The reply is written once the charges it counts are on disk.
func (m *Meter) Serve(ctx context.Context, ev Evaluator, req Request) Reply {
	if req.Op == "status" {
		return Reply{Counts: m.Counts()}
	}
	m.evalMu.Lock()
	c, rep := m.run(ctx, ev, req)
	m.evalMu.Unlock()
	if c == nil {
		return rep
	}
	err := m.durable(c.end)
	m.publish(c, err == nil)
	if err != nil {
		return Reply{Counts: m.Counts(), Error: &ReplyError{Type: ErrInternal, Message: fmt.Sprintf("cannot sync the ledger: %s", err)}}
	}
	rep.Counts = c.counts
	return rep
}

// run checks, evaluates and writes one request to the ledger; evalMu is
// held. A nil charge: the request changed nothing, and rep is its reply.
func (m *Meter) run(ctx context.Context, ev Evaluator, req Request) (*charge, Reply) {
	fail := func(typ, format string, args ...any) (*charge, Reply) {
		return nil, Reply{Counts: m.Counts(), Error: &ReplyError{Type: typ, Message: fmt.Sprintf(format, args...)}}
	}
	if req.Op != "rollout" {
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
	if len(req.Items) > m.pending.Remaining {
		m.pending.Refused += len(req.Items)
		m.seq++
		c := &charge{seq: m.seq, counts: m.pending, end: m.writtenNow()}
		return c, Reply{Error: &ReplyError{Type: ErrBudgetExhausted, Message: fmt.Sprintf(
			"%d rollout(s) asked for, %d of the budget of %d left; nothing was run or charged",
			len(req.Items), m.pending.Remaining, m.pending.Budget)}}
	}
	out, err := ev.Rollouts(ctx, req.Bundle, req.Items)
	if ctx.Err() != nil {
		// The service stopped (the method ended) while the request ran:
		// its reply has nobody to read it, and nothing is charged. What
		// its rollouts stored stays in the item store.
		return fail(ErrInternal, "the rollout service stopped before the request was answered; nothing was charged")
	}
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
	c := &charge{counts: m.pending}
	for i := range out {
		c.counts.Attempted++
		if out[i].InfraFailure {
			c.counts.InfraFailures++
			continue
		}
		c.counts.Charged++
		c.counts.Remaining--
		if out[i].Cached {
			c.counts.FromStore++
		}
		if c.counts.Charged%ProgressEvery == 0 {
			c.progress = append(c.progress, c.counts)
		}
		out[i].Charged = true
		c.charged = append(c.charged, out[i])
		b, _ := json.Marshal(LedgerLine{N: c.counts.Charged, Bundle: req.Bundle, Item: out[i].Item, Key: out[i].Key, Score: out[i].Score, Cached: out[i].Cached})
		buf.Write(b)
		buf.WriteByte('\n')
	}
	m.mu.Lock()
	if buf.Len() > 0 {
		if _, err := m.ledger.Write(buf.Bytes()); err != nil {
			m.mu.Unlock()
			return fail(ErrInternal, "cannot write the ledger: %s; nothing was charged", err)
		}
		m.written += int64(buf.Len())
	}
	c.end = m.written
	m.mu.Unlock()
	m.pending = c.counts
	m.seq++
	c.seq = m.seq
	return c, Reply{Results: out}
}

// writtenNow is how much of the ledger is written.
func (m *Meter) writtenNow() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.written
}

// durable returns once the ledger's first end bytes are on disk: one
// fsync covers every request written before it started, so requests that
// wait together share it.
func (m *Meter) durable(end int64) error {
	if !m.sync {
		return nil
	}
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	if m.syncErr != nil {
		return m.syncErr
	}
	if m.synced >= end {
		return nil
	}
	upTo := m.writtenNow()
	if err := m.syncLedger(m.ledger); err != nil {
		m.syncErr = err
		return err
	}
	m.synced = upTo
	return nil
}

// publish makes c's counts the meter's, in the order the requests were
// charged, and reports its charges (ok: they are durable).
func (m *Meter) publish(c *charge, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.published != c.seq-1 {
		m.cond.Wait()
	}
	m.published = c.seq
	m.cond.Broadcast()
	if !ok {
		return
	}
	m.counts = c.counts
	if m.onCharge != nil && len(c.charged) > 0 {
		m.onCharge(c.charged)
	}
	for _, p := range c.progress {
		if m.progress != nil {
			fmt.Fprintln(m.progress, p.String())
		}
		if m.onProgress != nil {
			m.onProgress(p)
		}
	}
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

// serve answers one connection: a reply line for each request line, in
// order.
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
		rep := s.answer(bytes.TrimSpace(sc.Bytes()))
		if err := s.reply(w, rep); err != nil {
			fmt.Fprintf(s.log, "cairn: rollout connection closed before its reply was written (%s): %d result(s) charged to it stay charged, and a request sent again takes them from the store\n", err, len(rep.Results))
			return
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		msg := fmt.Sprintf("the request is longer than %d MiB: send fewer items in one request", maxRequest>>20)
		fmt.Fprintf(s.log, "cairn: rollout connection closed: %s\n", msg)
		_ = s.reply(w, s.badRequest(msg))
	} else if err != nil {
		fmt.Fprintf(s.log, "cairn: rollout connection closed: %s\n", err)
	}
}

// answer serves one request line. Every line gets its reply, a blank
// one too: a method that sent it waits for one, and skipping it would
// leave the method waiting forever.
func (s *Server) answer(line []byte) Reply {
	if len(line) == 0 {
		return s.badRequest("the request line is blank: write one JSON object of op, bundle and items per line")
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		return s.badRequest("the request is not a JSON object of op, bundle and items: " + err.Error())
	}
	if key, dup := requestDuplicate(line); dup {
		// Which of the two a reader takes is not for a charge to
		// depend on.
		return s.badRequest(key + " is given twice: give each of op, bundle and items once")
	}
	return s.meter.Serve(s.ctx, s.ev, req)
}

// badRequest is the reply refusing a malformed request, with the counts
// as they are: nothing is charged for it.
func (s *Server) badRequest(msg string) Reply {
	return Reply{Counts: s.meter.Counts(), Error: &ReplyError{Type: ErrBadRequest, Message: msg}}
}

// reply writes one reply line and flushes it.
func (s *Server) reply(w *bufio.Writer, rep Reply) error {
	b, _ := json.Marshal(rep)
	w.Write(b)
	w.WriteByte('\n')
	return w.Flush()
}

// requestKeys are the fields of a Request.
var requestKeys = [][]byte{[]byte("op"), []byte("bundle"), []byte("items")}

// requestDuplicate reports a key given twice in a request line, as
// written or in two spellings encoding/json takes for one field.
func requestDuplicate(line []byte) (string, bool) {
	if !jsonpos.MayRepeat(line, requestKeys) {
		return "", false
	}
	if path, _, dup := jsonpos.FirstDuplicate(line); dup {
		return path, true
	}
	return jsonpos.TopFoldDuplicate(line)
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
