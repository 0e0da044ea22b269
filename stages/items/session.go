package items

import (
	"context"
	"errors"
	"sync"
)

// ErrSessionClosed is returned by Session.Evaluate once the session is
// closed.
var ErrSessionClosed = errors.New("items: session closed")

// Session evaluates batch after batch of items with the same workers: its
// worker processes start with the first batch that has an item to send and
// keep running, idle between batches, until Close, so that a batch does not
// wait for a worker to start (a Python worker takes most of a second). It
// speaks the worker protocol as Evaluate does, with the same retries: a
// worker that dies is replaced, and the items it had in flight count a
// crash retry and are sent again to the fresh one. Batches are evaluated one
// at a time.
//
// The workers' argument list is fixed for the session, so a session serves
// many bundles only through a worker that reads each request's "bundle"
// (Batch.Bundle); each batch's BundleDigest keys its items.
type Session struct {
	mu     sync.Mutex
	r      *run
	ctx    context.Context
	closed bool
	err    error // what stopped the session for good
}

// Batch is one evaluation of a Session.
type Batch struct {
	Items        []Item
	BundleDigest string
	// Bundle, when set, is the bundle's folder, sent in each request as
	// "bundle" (Config.Bundle).
	Bundle string
}

// OpenSession prepares a session with cfg (Items, BundleDigest and Bundle
// are each batch's); its workers run under ctx. Progress and OnProgress
// get each batch's counts, OnResult each batch's stored items.
func OpenSession(ctx context.Context, cfg Config) (*Session, error) {
	cfg.Items, cfg.BundleDigest, cfg.Bundle = nil, "", ""
	r, err := newRun(cfg)
	if err != nil {
		return nil, err
	}
	if err := r.reset(nil, "", "", nil); err != nil {
		return nil, err
	}
	r.done = make(chan struct{})
	return &Session{r: r, ctx: ctx}, nil
}

// Evaluate evaluates one batch as Evaluate evaluates Config.Items, and
// returns the same Summary (its WorkerStarts counts the workers the session
// started so far). After an error other than ErrIncomplete (a worker that
// cannot run, the store, ctx ended) the session is stopped, and every later
// batch gets that error: open a new one.
func (s *Session) Evaluate(ctx context.Context, b Batch) (Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Summary{}, ErrSessionClosed
	}
	if s.err != nil {
		return Summary{}, s.err
	}
	r := s.r
	if err := r.reset(b.Items, b.BundleDigest, b.Bundle, nil); err != nil {
		return Summary{}, err
	}
	fresh, err := r.scan()
	if err != nil {
		s.stopLocked(err)
		return r.summary(), err
	}
	if len(fresh) == 0 {
		return r.summary(), nil
	}
	if err := r.start(s.ctx, fresh); err != nil {
		s.stopLocked(err)
		return r.summary(), err
	}
	r.mu.Lock()
	batchDone := r.batchDone
	r.mu.Unlock()
	r.push(fresh)
	select {
	case <-batchDone:
	case <-r.ctx.Done():
	case <-ctx.Done():
		r.setFatal(ctx.Err())
	}
	sum, err := r.result(s.ctx)
	if err != nil && !errors.Is(err, ErrIncomplete) {
		s.stopLocked(err)
	}
	return sum, err
}

// Start starts the session's workers now, before its first batch, so that
// the first batch does not wait for them either. Its error (no worker
// command, the claims cannot be opened) is also the first batch's.
func (s *Session) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrSessionClosed
	}
	if s.err != nil {
		return s.err
	}
	return s.r.start(s.ctx, nil)
}

// WorkerStarts counts the worker processes the session started.
func (s *Session) WorkerStarts() int {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	return s.r.starts
}

// Dead reports whether the session stopped for good (Evaluate returns its
// error).
func (s *Session) Dead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err != nil || s.closed
}

// stopLocked ends the workers after err; s.mu is held.
func (s *Session) stopLocked(err error) {
	s.err = err
	r := s.r
	if r.started {
		r.cancel(err)
		r.stop()
	}
}

// Close ends the workers: their stdin is closed and each gets
// ShutdownGrace to exit before its process group is killed.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.r.done)
	s.r.stop()
	return nil
}
