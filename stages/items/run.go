package items

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/dsl/jsonwrite"
	"github.com/cairn-run/cairn/process"
)

// Defaults of Config and RetryPolicy fields left at zero.
const (
	DefaultItemTimeout   = 30 * time.Minute
	DefaultShutdownGrace = 5 * time.Second
	DefaultInfraRetries  = 3
	DefaultCrashRetries  = 3
	DefaultTimeoutRetry  = 2
	DefaultBackoff       = 250 * time.Millisecond
	DefaultMaxBackoff    = 30 * time.Second
	progressEvery        = 10
	maxQuietStarts       = 5 // workers in a row that die without answering
)

// ErrIncomplete is returned by Evaluate, with a full Summary, when some items
// ended as failed: their retries were spent on infrastructure failures,
// crashes or timeouts. Nothing is stored for them, so the next evaluation
// sends them again.
var ErrIncomplete = errors.New("evaluation incomplete")

// ErrWorker reports a worker that cannot run: it does not start, or it dies
// again and again without answering any item.
var ErrWorker = errors.New("the worker failed")

// Item is one element of the dataset being evaluated.
type Item struct {
	// ID names the item in requests, responses and reports; IDs are unique
	// within one evaluation.
	ID string
	// Data is the item's content (one JSON value). It enters the item key.
	Data json.RawMessage
	// Canonical is set when Data is in canonical form already (the text
	// Canonical or CanonicalMember returns): it is not rewritten.
	Canonical bool
}

// RetryPolicy bounds how often one item is sent again. Each count is the
// number of retries (sends after the first) allowed for that kind of failure;
// an item that needs one more ends as failed and is not stored. Zero fields
// take the defaults; a negative count means no retry.
type RetryPolicy struct {
	// InfraFailures: responses with infra_failure set (endpoint down, HTTP
	// 5xx). Retries wait Backoff, doubled each time, up to MaxBackoff.
	InfraFailures int
	// Crashes: the worker died, or stopped reading or writing, while the
	// item was in flight.
	Crashes int
	// Timeouts: no response within ItemTimeout of sending the item.
	Timeouts int
	// Backoff is the wait before the first infrastructure-failure retry.
	Backoff time.Duration
	// MaxBackoff caps the doubling of Backoff.
	MaxBackoff time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	def := func(v, d int) int {
		switch {
		case v == 0:
			return d
		case v < 0:
			return 0
		}
		return v
	}
	p.InfraFailures = def(p.InfraFailures, DefaultInfraRetries)
	p.Crashes = def(p.Crashes, DefaultCrashRetries)
	p.Timeouts = def(p.Timeouts, DefaultTimeoutRetry)
	if p.Backoff <= 0 {
		p.Backoff = DefaultBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = DefaultMaxBackoff
	}
	return p
}

// Config describes one evaluation.
type Config struct {
	// Worker is the worker's argv; Dir its working directory; Env its
	// environment (nil: cairn's own). Evaluate adds MODEL_ID (ModelID) and
	// CAIRN_MAX_IN_FLIGHT (MaxInFlight) to it.
	Worker []string
	Env    []string
	Dir    string
	// Launcher starts the workers: the engine's executor; nil for
	// process.LocalLauncher.
	Launcher process.Launcher

	// Items is the dataset.
	Items []Item

	// The item key's other inputs (see ItemKey): the digest of the bundle
	// being evaluated, the task model, the runtime settings (topology,
	// framework, communication format, team size, decoding parameters,
	// evaluation seed...) and the digest of the worker's code.
	BundleDigest string
	ModelID      string
	// ModelKey, when set, is the item key's model field in place of
	// ModelID: the model id and the identity of the weights a serve
	// stage serves it with (docs/serve.md), so that new weights under the
	// same id give new keys. Requests and the preflight use ModelID.
	ModelKey     string
	Runtime      map[string]any
	WorkerDigest string
	// Bundle, when set, is sent in every request as "bundle": the folder
	// of the bundle being evaluated, for a worker that reads the bundle of
	// each request rather than one named in its arguments (a Session's
	// worker serving many bundles). It does not enter the item key
	// (BundleDigest does).
	Bundle string

	// Replicas is the number of worker processes (default 1); MaxInFlight
	// the requests outstanding per worker (default 1).
	Replicas    int
	MaxInFlight int
	// ItemTimeout counts from the moment an item is sent (default
	// DefaultItemTimeout). An item past it kills its worker.
	ItemTimeout time.Duration
	Retry       RetryPolicy

	// Endpoints are the task model's base URLs, handed to requests round
	// robin with at most EndpointConcurrency outstanding each (0: no
	// limit). When set, Preflight checks them before the first item is
	// sent, unless SkipPreflight.
	Endpoints           []string
	EndpointConcurrency int
	SkipPreflight       bool

	// Store holds the results; required. An item is claimed in it (see
	// Claims) only when a worker is free to send it.
	Store *Store

	// Progress gets a line (Counts.String) every 10 charged rollouts (every
	// 10 items done while nothing is charged), one for the items found in
	// the store when the evaluation starts, and one when the last item is
	// done.
	Progress io.Writer
	// OnReport, when set, is called with the counts whenever Progress
	// would get a line.
	OnReport func(Counts)
	// OnProgress, when set, is called with the counts after every change
	// (once for all the items found in the store when the evaluation
	// starts); it must return quickly.
	OnProgress func(Counts)
	// OnResult is the per-item journal hook, called once per item ID as
	// its new result is stored (durably), from one goroutine. Items of the
	// same content share one result: the first ID's call gets its Charged,
	// the others' 0, so that the calls charge what the counts do.
	OnResult func(itemID, key string, r Result)
	// OnCommit, when set, is called after each group of results is
	// stored and OnResult called for each, from the same goroutine, and
	// before any of the group's items counts as done (OnProgress, the
	// summary): a journal writes the group's records together then, so
	// that none is lost by a kill once its item is reported.
	OnCommit func()
	// OnResolved, when set, is called by Evaluate once every item is
	// resolved (stored, found in the store, or failed), with the summary:
	// its Counts and Items are final. It runs while the workers exit, so
	// that what needs the results alone (the per-item results file) does
	// not wait for the processes to end; Evaluate returns once both are
	// done. It is not called when the evaluation stops before (an error,
	// ctx), nor by a Session.
	OnResolved func(Summary)
	// Log gets cairn's diagnostics about workers (garbage lines, crashes,
	// timeouts, retries); WorkerStderr gets the workers' stderr, each line
	// prefixed with the worker's name. Both default to Log, then discard.
	Log          io.Writer
	WorkerStderr io.Writer
	// ShutdownGrace is how long a worker may take to exit after its stdin
	// is closed at the end (default 5s) before its group is killed.
	ShutdownGrace time.Duration
	// StopGrace is how long a worker may take to exit after SIGTERM when
	// the evaluation stops before its end (interrupted, or past the
	// node's timeout) before its group is killed (the stage's
	// kill_grace); 0 kills it right after. Hard, when closed, kills at
	// once, without SIGTERM (a second Ctrl-C).
	StopGrace time.Duration
	Hard      <-chan struct{}
}

// modelKey is the item key's model field.
func (c *Config) modelKey() string {
	if c.ModelKey != "" {
		return c.ModelKey
	}
	return c.ModelID
}

// Counts are the running totals of an evaluation, in items (item IDs).
type Counts struct {
	// Total is the number of items; Done those evaluated, found in the
	// store or failed.
	Total int
	Done  int
	// Evaluated items got their result from a worker in this evaluation;
	// FromCache items found theirs in the store. Items of the same
	// content share one request and its result, and each counts.
	Evaluated int
	FromCache int
	// Failed items spent their retries; nothing was stored for them.
	Failed int
	// Charged sums the charged rollouts of the results stored by this
	// evaluation (what the journal records; items from the store are not
	// charged again, infrastructure failures are not charged); Attempted
	// counts the requests sent to workers; InfraFailures the responses
	// that reported an infrastructure failure; Retried the sends after an
	// item's first.
	Charged       int
	Attempted     int
	InfraFailures int
	Retried       int
}

// String is the progress line: "charged K, attempted A, infra-failures F;
// items D/N: E evaluated, S from the store, X failed".
func (c Counts) String() string {
	return fmt.Sprintf("charged %d, attempted %d, infra-failures %d; items %d/%d: %d evaluated, %d from the store, %d failed",
		c.Charged, c.Attempted, c.InfraFailures, c.Done, c.Total, c.Evaluated, c.FromCache, c.Failed)
}

// ItemOutcome is what became of one item.
type ItemOutcome struct {
	ID  string
	Key string
	// Score is the result's score; nil when it has none or the item failed.
	Score *float64
	// Cached is set when the result was in the store already.
	Cached bool
	// Failed is set when the item's retries were spent; Reason says why.
	Failed bool
	Reason string
	// Result is the full result when a worker gave it in this evaluation
	// (nil for items from the store, and for failed or unfinished ones).
	Result *Result
	// Done is set once the item has a result or has failed.
	Done bool
}

// Summary is the outcome of an evaluation.
type Summary struct {
	Counts
	// Scored is the number of items whose result has a score, and
	// MeanScore their mean (0 when none).
	Scored    int
	MeanScore float64
	// WorkerStarts counts worker processes started.
	WorkerStarts int
	// Items holds one outcome per item, in the order of Config.Items.
	Items []ItemOutcome
}

// task is one distinct item key to resolve; several item IDs may share it.
type task struct {
	kb   [32]byte
	key  string
	idxs []int  // indexes into Config.Items
	id   string // request id: the first item's ID
	idq  []byte // id as a JSON string
	data []byte // canonical item JSON
	// bundle is the request's "bundle" member, with its leading comma;
	// nil when the evaluation has no Config.Bundle.
	bundle []byte

	infra, crashes, timeouts int
	sends                    int
	failedOn                 string // endpoint of the last infrastructure failure
	result                   Result
}

type failureClass int

const (
	classInfra failureClass = iota
	classCrash
	classTimeout
	classDisplaced // in flight on a worker killed for another item's timeout
)

// Evaluate runs the items of cfg through the worker protocol: items whose
// key has a result in cfg.Store are taken from it, the others are claimed,
// sent to the workers, and their results stored as they arrive. It returns
// when every item has a result or has failed. The Summary is complete even
// with an error: ctx's error, a store or worker error, or ErrIncomplete when
// items failed.
func Evaluate(ctx context.Context, cfg Config) (Summary, error) {
	r, err := newRun(cfg)
	if err != nil {
		return Summary{}, err
	}
	if err := r.reset(cfg.Items, cfg.BundleDigest, cfg.Bundle, ctx); err != nil {
		r.unlaunch()
		return Summary{}, err
	}
	return r.evaluate(ctx)
}

type run struct {
	cfg    Config
	policy RetryPolicy
	ctx    context.Context
	cancel context.CancelCauseFunc
	store  *Store
	tasks  []*task // distinct keys
	picker *Picker

	claimMu sync.Mutex
	claims  *Claims

	mu        sync.Mutex
	counts    Counts
	outcomes  []ItemOutcome
	remaining int  // tasks unresolved
	scanning  bool // resolving the items already stored
	// batchDone closes when the items being evaluated are all resolved;
	// done when the workers are no longer needed. They are one channel
	// for Evaluate; a Session's done closes at Close.
	batchDone chan struct{}
	done      chan struct{}
	fatal     error
	started   bool // the workers, feeder and committer run
	// launched: the workers and the endpoints' check are started
	// (launch); checked gives the check's result, once, and stopCheck
	// ends it.
	launched  bool
	checked   chan error
	opened    chan error // the claims' opening's result, once
	stopCheck context.CancelFunc
	// ready closes once the endpoints passed preflight and the claims
	// are open: the workers, started before, send nothing until then.
	ready chan struct{}
	wg    sync.WaitGroup
	rt    []byte // the runtime settings in canonical JSON

	queue *readyQueue
	// contended are tasks another evaluator held when a worker here was
	// free to send them; contendedSig wakes the feeder. Both under claimMu.
	contended    []*task
	contendedSig chan struct{}
	commitCh     chan *task
	starts       int
	quiet        int    // workers in a row that died without answering
	printed      Counts // the counts of the last progress line
	anyLine      bool
}

func newRun(cfg Config) (*run, error) {
	if cfg.Store == nil {
		return nil, errors.New("items: Config.Store is required")
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 1
	}
	if cfg.ItemTimeout <= 0 {
		cfg.ItemTimeout = DefaultItemTimeout
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.WorkerStderr == nil {
		cfg.WorkerStderr = cfg.Log
	}
	rt, err := CanonicalRuntime(cfg.Runtime)
	if err != nil {
		return nil, err
	}
	r := &run{
		cfg:          cfg,
		policy:       cfg.Retry.withDefaults(),
		store:        cfg.Store,
		queue:        newReadyQueue(),
		contendedSig: make(chan struct{}, 1),
		commitCh:     make(chan *task, 4096),
		rt:           rt,
	}
	return r, nil
}

// reset makes items the items being evaluated, with the bundle of the
// given digest (and folder, for the requests, when not ""). No task of
// the items evaluated before may be unresolved. With a launch context,
// the first item found missing from the store while the keys are made
// launches the workers and the endpoints' check under it: a worker's
// start (an exec, an interpreter's imports) and the check's round trip
// then overlap the keying and the scan instead of following them.
func (r *run) reset(list []Item, bundleDigest, bundle string, launch context.Context) error {
	var bundleField []byte
	if bundle != "" {
		bundleField = jsonwrite.String([]byte(`,"bundle":`), bundle)
	}
	// The keys, on every core: each is a canonical form (when the item
	// is not in it already) and a sha256.
	datas := make([][]byte, len(list))
	kbs := make([][32]byte, len(list))
	errs := make([]error, len(list))
	k := newKeyer(bundleDigest, r.cfg.modelKey(), r.rt, r.cfg.WorkerDigest)
	batchDone := make(chan struct{})
	var early sync.Once
	var missing atomic.Bool
	watch := launch != nil && len(r.cfg.Worker) > 0 && !r.launched
	if launch != nil {
		// One batch (Evaluate): the workers, launched while the keys
		// are made, end with it.
		r.done = batchDone
	}
	parallelChunks(len(list), func(lo, hi int) {
		var buf []byte
		for i := lo; i < hi; i++ {
			data := []byte(list[i].Data)
			if !list[i].Canonical {
				if data, errs[i] = Canonical(list[i].Data); errs[i] != nil {
					continue
				}
			}
			datas[i] = data
			kbs[i] = k.sum(&buf, data)
			// One item in launchStride is looked up: a store that
			// holds most items costs the keying little.
			if watch && (i-lo)%launchStride == 0 && !missing.Load() && !r.store.has(kbs[i]) {
				missing.Store(true)
				early.Do(func() { r.launch(launch) })
			}
		}
	})
	outcomes := make([]ItemOutcome, len(list))
	var tasks []*task
	byKey := make(map[[32]byte]*task, len(list))
	seen := make(map[string]bool, len(list))
	for i, it := range list {
		if it.ID == "" {
			return fmt.Errorf("items: item %d has no ID", i)
		}
		if seen[it.ID] {
			return fmt.Errorf("items: item ID %q appears twice", it.ID)
		}
		seen[it.ID] = true
		if errs[i] != nil {
			return fmt.Errorf("items: item %q: %w", it.ID, errs[i])
		}
		data, kb := datas[i], kbs[i]
		key := hex.EncodeToString(kb[:])
		outcomes[i] = ItemOutcome{ID: it.ID, Key: key}
		if t, ok := byKey[kb]; ok {
			t.idxs = append(t.idxs, i)
			continue
		}
		idq := jsonwrite.String(nil, it.ID)
		t := &task{kb: kb, key: key, idxs: []int{i}, id: it.ID, idq: idq, data: data, bundle: bundleField}
		byKey[kb] = t
		tasks = append(tasks, t)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes, r.tasks = outcomes, tasks
	r.counts = Counts{Total: len(list)}
	r.remaining = len(tasks)
	r.printed, r.anyLine = Counts{}, false
	r.batchDone = batchDone
	return nil
}

// launchStride is how far apart the items are that reset looks up in the
// store to launch the workers early.
const launchStride = 16

// parallelChunks calls fn on n items cut into one chunk per core, at
// once, and returns when every call has.
func parallelChunks(n int, fn func(lo, hi int)) {
	chunks := min(runtime.GOMAXPROCS(0), max(n/1024, 1))
	var wg sync.WaitGroup
	for c := range chunks {
		wg.Go(func() { fn(n*c/chunks, n*(c+1)/chunks) })
	}
	wg.Wait()
}

func (r *run) evaluate(parent context.Context) (Summary, error) {
	fresh, err := r.scan()
	if err != nil || len(fresh) == 0 {
		// Workers launched for an item that another evaluator stored
		// before the scan are not needed.
		r.unlaunch()
		sum := r.summary()
		if err == nil && r.cfg.OnResolved != nil {
			r.cfg.OnResolved(sum)
		}
		return sum, err
	}
	if err := r.start(parent, fresh); err != nil {
		return r.summary(), err
	}
	r.push(fresh)
	select {
	case <-r.done:
	case <-r.ctx.Done():
	}
	if r.cfg.OnResolved == nil || !r.resolved() {
		r.stop()
		return r.result(parent)
	}
	// The workers, their stdin closed, exit (a Python worker of 1,024
	// threads takes 200 ms and more) while OnResolved runs.
	var stopping sync.WaitGroup
	stopping.Go(r.stop)
	r.cfg.OnResolved(r.summary())
	stopping.Wait()
	return r.result(parent)
}

// resolved reports whether every item being evaluated is resolved.
func (r *run) resolved() bool {
	select {
	case <-r.batchDone:
		return true
	default:
		return false
	}
}

// scan resolves the items whose result is stored and returns the others.
func (r *run) scan() ([]*task, error) {
	if err := r.store.Refresh(); err != nil {
		return nil, err
	}
	// The items found in the store now make one progress line, not one
	// per ten.
	var fresh []*task
	r.mu.Lock()
	r.scanning = true
	tasks := r.tasks
	r.mu.Unlock()
	for _, t := range tasks {
		if r.store.has(t.kb) {
			r.resolveCached(t, false)
		} else {
			fresh = append(fresh, t)
		}
	}
	r.mu.Lock()
	r.scanning = false
	r.report(true)
	r.mu.Unlock()
	return fresh, nil
}

// start checks that the fresh tasks can be sent and starts the workers,
// the feeder and the committer, once.
func (r *run) start(parent context.Context, fresh []*task) error {
	if r.started {
		return nil
	}
	if len(r.cfg.Worker) == 0 {
		return fmt.Errorf("%w: %d items need evaluating and no worker command is set", ErrWorker, len(fresh))
	}
	r.launch(parent)
	err := <-r.checked
	if cerr := <-r.opened; err == nil {
		err = cerr
	}
	if err != nil {
		r.stopLaunch(err)
		return err
	}
	r.started = true
	r.wg.Go(r.feed)
	r.wg.Go(r.commit)
	close(r.ready)
	return nil
}

// launch starts the workers, the endpoints' check and the opening of the
// claims, once. The workers start while the endpoints are checked and the
// claims opened (a process start and a round trip, one after the other,
// were most of the wait for the first request); they get their first
// request once both are done (ready), and are stopped when either fails:
// no item is sent then.
func (r *run) launch(parent context.Context) {
	if r.launched {
		return
	}
	r.launched = true
	r.picker = NewPicker(r.cfg.Endpoints, r.cfg.EndpointConcurrency)
	r.ctx, r.cancel = context.WithCancelCause(parent)
	r.ready = make(chan struct{})
	for n := range r.cfg.Replicas {
		r.wg.Go(func() { r.replica(n) })
	}
	// The claims files are opened (made, on a new cache: 64 files,
	// 3-50 ms on a busy disk, more than the check takes) while the
	// endpoints are checked, not at the first claims.
	r.opened = make(chan error, 1)
	go func() { r.opened <- r.openClaims() }()
	r.checked = make(chan error, 1)
	var check context.Context
	check, r.stopCheck = context.WithCancel(parent)
	if len(r.cfg.Endpoints) == 0 || r.cfg.SkipPreflight {
		r.checked <- nil
		return
	}
	go func() { r.checked <- Preflight(check, r.cfg.Endpoints, r.cfg.ModelID) }()
}

// unlaunch undoes launch for items that need no worker after all: the
// workers are killed before their first request, the check is stopped
// and the claims are closed.
func (r *run) unlaunch() {
	if !r.launched || r.started {
		return
	}
	r.stopCheck()
	<-r.checked
	<-r.opened
	r.stopLaunch(nil)
}

// stopLaunch ends, with cause, what launch started once its check and
// the opening of the claims are done: the workers, before any request,
// and the claims.
func (r *run) stopLaunch(cause error) {
	r.cancel(cause)
	r.wg.Wait()
	r.stopCheck()
	if r.claims != nil {
		r.claims.Close()
		r.claims = nil
	}
	r.launched = false
}

// openClaims opens the store's claims and every claims file: a batch
// of more than a few hundred items needs them all.
func (r *run) openClaims() error {
	c, err := OpenClaims(r.store.Dir())
	if err != nil {
		return err
	}
	for i := range claimShards {
		if _, err := c.shard([32]byte{byte(i)}); err != nil {
			c.Close()
			return err
		}
	}
	r.claims = c
	return nil
}

// push queues fresh tasks for the workers.
func (r *run) push(fresh []*task) {
	for _, t := range fresh {
		r.queue.push(t, false)
	}
}

// stop waits for the workers (which end once done is closed or the
// evaluation stops) and the other goroutines, and releases the claims.
func (r *run) stop() {
	if !r.started {
		return
	}
	r.wg.Wait()
	r.cancel(nil)
	r.stopCheck()
	r.claims.Close()
	r.started, r.launched = false, false
}

// result is the summary of the items being evaluated, with the error
// that ended their evaluation.
func (r *run) result(parent context.Context) (Summary, error) {
	sum := r.summary()
	r.mu.Lock()
	fatal := r.fatal
	r.mu.Unlock()
	switch {
	case fatal != nil:
		return sum, fatal
	case parent.Err() != nil:
		return sum, parent.Err()
	case sum.Failed > 0:
		return sum, fmt.Errorf("%w: %d of %d items failed after their retries", ErrIncomplete, sum.Failed, sum.Total)
	}
	return sum, nil
}

// setFatal stops the evaluation with err (the first one wins).
func (r *run) setFatal(err error) {
	r.mu.Lock()
	if r.fatal == nil {
		r.fatal = err
	}
	r.mu.Unlock()
	r.cancel(err)
}

func (r *run) finished() bool {
	select {
	case <-r.done:
		return true
	default:
		return r.ctx.Err() != nil
	}
}

// resolveCached records t's result from the store; release gives its claim
// back.
func (r *run) resolveCached(t *task, release bool) {
	if release {
		r.release(t)
	}
	score, hasScore, _, _ := r.store.score(t.kb)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, i := range t.idxs {
		o := &r.outcomes[i]
		o.Cached, o.Done = true, true
		if hasScore {
			sc := score
			o.Score = &sc
		}
	}
	r.counts.FromCache += len(t.idxs)
	r.resolvedLocked(t)
}

// resolvedLocked counts t as done; r.mu is held.
func (r *run) resolvedLocked(t *task) {
	r.counts.Done += len(t.idxs)
	r.remaining--
	r.report(false)
	if r.remaining == 0 {
		close(r.batchDone)
	}
}

// report writes the progress line when Charged reaches a multiple of ten
// it had not reached at the last line (Done, while nothing is charged),
// when the last item is done (or always, with force, when some item is
// done) and calls OnProgress. r.mu is held.
func (r *run) report(force bool) {
	c := r.counts
	if r.cfg.OnProgress != nil && (!r.scanning || force) {
		// The items found in the store at the start: one call.
		r.cfg.OnProgress(c)
	}
	if r.cfg.Progress == nil && r.cfg.OnReport == nil || r.scanning || (r.anyLine && c == r.printed) {
		return
	}
	due := c.Charged/progressEvery > r.printed.Charged/progressEvery ||
		c.Done == c.Total || (force && c.Done > 0) ||
		// A worker that reports no charges: every 10 items done.
		(c.Charged == 0 && c.Done/progressEvery > r.printed.Done/progressEvery)
	if !due {
		return
	}
	r.printed, r.anyLine = c, true
	if r.cfg.Progress != nil {
		fmt.Fprintln(r.cfg.Progress, c.String())
	}
	if r.cfg.OnReport != nil {
		r.cfg.OnReport(c)
	}
}

func (r *run) release(t *task) {
	r.claimMu.Lock()
	err := r.claims.release(t.kb)
	r.claimMu.Unlock()
	if err != nil {
		r.setFatal(err)
	}
}

// fail ends t without a result.
func (r *run) fail(t *task, reason string) {
	r.release(t)
	fmt.Fprintf(r.cfg.Log, "items: item %s failed: %s\n", t.id, reason)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, i := range t.idxs {
		r.outcomes[i].Failed, r.outcomes[i].Done = true, true
		r.outcomes[i].Reason = reason
	}
	r.counts.Failed += len(t.idxs)
	r.resolvedLocked(t)
}

// retry sends t again after a failed attempt of the given class, or fails it
// when that class's retries are spent.
func (r *run) retry(t *task, class failureClass, why string) {
	r.mu.Lock()
	var spent bool
	var delay time.Duration
	switch class {
	case classInfra:
		t.infra++
		spent = t.infra > r.policy.InfraFailures
		delay = r.policy.Backoff << min(t.infra-1, 20)
		delay = min(delay, r.policy.MaxBackoff)
	case classCrash:
		t.crashes++
		spent = t.crashes > r.policy.Crashes
	case classTimeout:
		t.timeouts++
		spent = t.timeouts > r.policy.Timeouts
	}
	if !spent {
		r.counts.Retried += len(t.idxs)
		r.report(false)
	}
	r.mu.Unlock()
	if spent {
		r.fail(t, why)
		return
	}
	// A run that succeeds still shows in the worker log what it retried.
	after := ""
	if delay > 0 {
		after = " after " + delay.String()
	}
	fmt.Fprintf(r.cfg.Log, "items: item %s: %s; sending it again%s (%s)\n", t.id, why, after, r.retryCount(t, class))
	if delay > 0 {
		time.AfterFunc(delay, func() { r.queue.push(t, true) })
		return
	}
	r.queue.push(t, true)
}

// retryCount says which retry of its class t is now, out of how many.
func (r *run) retryCount(t *task, class failureClass) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch class {
	case classInfra:
		return fmt.Sprintf("infrastructure-failure retry %d of %d", t.infra, r.policy.InfraFailures)
	case classCrash:
		return fmt.Sprintf("crash retry %d of %d", t.crashes, r.policy.Crashes)
	case classTimeout:
		return fmt.Sprintf("timeout retry %d of %d", t.timeouts, r.policy.Timeouts)
	}
	return "not counted as a retry: its worker was stopped for another item"
}

// feed queues the fresh tasks, then puts the ones another evaluator held
// back in the queue, after a wait, until they are stored or sent here. A
// task is claimed only when a worker is free to send it (acquire), so an
// evaluator never holds items it is not evaluating: two evaluations of the
// same items share them to the last, and neither waits while the other
// has work claimed but idle.
func (r *run) feed() {
	wait := 5 * time.Millisecond
	for {
		select {
		case <-r.contendedSig:
		case <-r.done:
			return
		case <-r.ctx.Done():
			return
		}
		for {
			select {
			case <-time.After(wait):
			case <-r.done:
				return
			case <-r.ctx.Done():
				return
			}
			if err := r.store.Refresh(); err != nil {
				r.setFatal(err)
				return
			}
			r.claimMu.Lock()
			batch := r.contended
			r.contended = nil
			r.claimMu.Unlock()
			progress := false
			for _, t := range batch {
				if r.store.has(t.kb) {
					r.resolveCached(t, false)
					progress = true
				} else {
					r.queue.push(t, false)
				}
			}
			if progress {
				wait = 5 * time.Millisecond // look again soon
			} else {
				wait = min(wait*2, 250*time.Millisecond)
			}
			r.claimMu.Lock()
			more := len(r.contended) > 0
			r.claimMu.Unlock()
			if !more {
				break
			}
		}
	}
}

// acquire claims ts for sending them now and returns those to send. The
// others need no send: their result is stored (they are resolved), another
// evaluator holds them (they wait in the contended list), or the
// evaluation failed.
func (r *run) acquire(ts []*task) []*task {
	var stored, claimed []*task
	r.claimMu.Lock()
	for _, t := range ts {
		if r.store.has(t.kb) {
			stored = append(stored, t)
			continue
		}
		ok, err := r.claims.tryClaim(t.kb)
		if err != nil {
			r.claimMu.Unlock()
			r.setFatal(err)
			return nil
		}
		if ok {
			claimed = append(claimed, t)
			continue
		}
		r.contended = append(r.contended, t)
		select {
		case r.contendedSig <- struct{}{}:
		default:
		}
	}
	r.claimMu.Unlock()
	for _, t := range stored {
		r.resolveCached(t, false)
	}
	if len(claimed) == 0 {
		return nil
	}
	// Another evaluator may have stored a result between our last read
	// and the claim: read the tail again now that we hold them.
	if err := r.store.Refresh(); err != nil {
		r.setFatal(err)
		return nil
	}
	send := claimed[:0]
	for _, t := range claimed {
		if r.store.has(t.kb) {
			r.resolveCached(t, true)
		} else {
			send = append(send, t)
		}
	}
	return send
}

// commit stores results in group commits and completes their items.
func (r *run) commit() {
	batch := make([]*task, 0, 1024)
	recs := make([]Record, 0, 1024)
	window := time.NewTimer(time.Hour)
	window.Stop()
	for {
		batch = batch[:0]
		select {
		case t := <-r.commitCh:
			batch = append(batch, t)
		case <-r.done:
			return
		case <-r.ctx.Done():
			return
		}
		batch = r.gather(batch, window)
		recs = recs[:0]
		for _, t := range batch {
			recs = append(recs, Record{Key: t.key, Result: t.result})
		}
		if err := r.store.PutBatch(recs); err != nil {
			r.setFatal(err)
			return
		}
		// The journal gets the commit's records before any of its items
		// counts as done: a kill -9 once one is reported cannot lose them.
		for _, t := range batch {
			r.journal(t)
		}
		if r.cfg.OnCommit != nil {
			r.cfg.OnCommit()
		}
		for _, t := range batch {
			r.complete(t)
		}
	}
}

// commitWindow is how long a group commit waits for more results while
// items are still out. Results come in bursts (the requests sent together
// come back together): a commit per few results put a sync and a journal
// write on the cores the worker and the model server answer the burst
// with. A kill -9 loses at most this much of the answers; the last
// results of a batch are committed at once.
var commitWindow = 2 * time.Millisecond

// gather adds to batch, which holds the first result of a commit, the
// results that come in within commitWindow of it, up to its capacity; it
// returns as soon as the batch holds every task unresolved, or the
// evaluation stops.
func (r *run) gather(batch []*task, window *time.Timer) []*task {
	waiting := false
	defer func() {
		if waiting {
			window.Stop()
		}
	}()
	for len(batch) < cap(batch) {
		select {
		case t := <-r.commitCh:
			batch = append(batch, t)
			continue
		default:
		}
		r.mu.Lock()
		allIn := len(batch) >= r.remaining
		r.mu.Unlock()
		if allIn {
			return batch
		}
		if !waiting {
			waiting = true
			window.Reset(commitWindow)
		}
		select {
		case t := <-r.commitCh:
			batch = append(batch, t)
		case <-window.C:
			waiting = false
			return batch
		case <-r.ctx.Done():
			return batch
		}
	}
	return batch
}

// journal hands t's stored result to OnResult, once per item ID. Items of
// the same content share one request and one result: its rollouts are
// charged once, by the first of them, and the others' calls charge
// nothing, as in the counts.
func (r *run) journal(t *task) {
	if r.cfg.OnResult == nil {
		return
	}
	r.mu.Lock()
	ids := make([]string, len(t.idxs))
	for k, i := range t.idxs {
		ids[k] = r.outcomes[i].ID
	}
	r.mu.Unlock()
	res := t.result
	for _, id := range ids {
		r.cfg.OnResult(id, t.key, res)
		res.Charged = 0
	}
}

// complete records t's stored result, journaled already.
func (r *run) complete(t *task) {
	r.release(t)
	r.mu.Lock()
	defer r.mu.Unlock()
	res := t.result
	for _, i := range t.idxs {
		if t.result.Score != nil {
			sc := *t.result.Score
			r.outcomes[i].Score = &sc
		}
		r.outcomes[i].Result, r.outcomes[i].Done = &res, true
	}
	r.counts.Charged += t.result.Charged
	r.counts.Evaluated += len(t.idxs)
	r.resolvedLocked(t)
}

func (r *run) summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Summary{Counts: r.counts, WorkerStarts: r.starts, Items: append([]ItemOutcome(nil), r.outcomes...)}
	// The scores are added exactly: the mean does not depend on the
	// items' order, two evaluations whose scores have the same mean
	// compare equal (a selection's "strictly greater": 0.3 against 0.1 +
	// 0.2, where a float sum gives 0.30000000000000004), and finite scores
	// whose float sum would overflow (1.5e308 twice) have their finite
	// mean. The float sum is that exact sum while every addition is exact
	// (0/1 scores, and most others: TwoSum's error is 0); exactMean adds
	// them in big floats otherwise (2.5 ms for 50,000 items, at the end
	// of the evaluation).
	var sum float64
	exact := true
	for _, o := range s.Items {
		if o.Score != nil && !o.Failed {
			x := *o.Score
			t := sum + x
			if exact {
				bb := t - sum
				exact = !math.IsInf(t, 0) && (sum-(t-bb))+(x-bb) == 0
			}
			sum = t
			s.Scored++
		}
	}
	if s.Scored > 0 {
		s.MeanScore = sum / float64(s.Scored)
		if !exact {
			s.MeanScore = exactMean(s.Items, s.Scored)
		}
	}
	return s
}

// exactMean is the mean of the scored items' scores, added exactly (2,200
// bits hold any sum of float64s), then divided and rounded to a float64.
func exactMean(items []ItemOutcome, scored int) float64 {
	sum := new(big.Float).SetPrec(2200)
	for _, o := range items {
		if o.Score != nil && !o.Failed {
			sum.Add(sum, new(big.Float).SetFloat64(*o.Score))
		}
	}
	mean, _ := sum.Quo(sum, new(big.Float).SetInt64(int64(scored))).Float64()
	return mean
}

// WriteScores writes the per-item results file: one JSON object per line,
// in the order of Config.Items:
//
//	{"id":...,"key":...,"score":...,"error":...,"outputs":...}
//
// with a null score when the result has none; "error" and "outputs" are
// the worker's, present when it gave them (taken from st for items found in
// the store; left out for every item when st is nil). An item whose retries were spent has
// "failed" with the reason instead, and one not done when the evaluation
// stopped has "pending": true; neither has a stored result. Whether a
// result came from the store is left out, so that the same results always
// make the same file (and the same digest).
func (s Summary) WriteScores(w io.Writer, st *Store) error {
	// The results found in the store are read in one pass over its log.
	var stored []Result
	if st != nil {
		var keys []string
		for _, o := range s.Items {
			if o.Done && !o.Failed && o.Result == nil {
				keys = append(keys, o.Key)
			}
		}
		var err error
		if stored, _, err = st.GetAll(keys); err != nil {
			return fmt.Errorf("items: write scores: %w", err)
		}
	}
	bw := bufio.NewWriter(w)
	next := 0 // into stored
	var b []byte
	for _, o := range s.Items {
		line := scoresLine{ID: o.ID, Key: o.Key, Score: o.Score}
		switch {
		case o.Failed:
			line.Score, line.Failed = nil, o.Reason
		case !o.Done:
			line.Pending = true
		case st == nil:
		case o.Result != nil:
			line.Error, line.Outputs = o.Result.Error, o.Result.Outputs
		default:
			line.Error, line.Outputs = stored[next].Error, stored[next].Outputs
			next++
		}
		var err error
		if b, err = line.appendTo(b[:0]); err != nil {
			return fmt.Errorf("items: write scores: %w", err)
		}
		b = append(b, '\n')
		bw.Write(b)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("items: write scores: %w", err)
	}
	return nil
}

// readyQueue holds the claimed tasks waiting for a worker. Retries go to
// the front.
type readyQueue struct {
	mu     sync.Mutex
	front  []*task // stack of retries
	back   []*task
	head   int
	signal chan struct{}
}

func newReadyQueue() *readyQueue {
	return &readyQueue{signal: make(chan struct{}, 1)}
}

func (q *readyQueue) push(t *task, front bool) {
	q.mu.Lock()
	if front {
		q.front = append(q.front, t)
	} else {
		q.back = append(q.back, t)
	}
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *readyQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.front) + len(q.back) - q.head
}

func (q *readyQueue) tryPop() (*task, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if n := len(q.front); n > 0 {
		t := q.front[n-1]
		q.front = q.front[:n-1]
		q.wakeOthers()
		return t, true
	}
	if q.head < len(q.back) {
		t := q.back[q.head]
		q.back[q.head] = nil
		q.head++
		if q.head == len(q.back) {
			q.back, q.head = q.back[:0], 0
		}
		q.wakeOthers()
		return t, true
	}
	return nil, false
}

// wakeOthers passes the signal on while tasks remain; q.mu is held.
func (q *readyQueue) wakeOthers() {
	if len(q.front)+len(q.back)-q.head > 0 {
		select {
		case q.signal <- struct{}{}:
		default:
		}
	}
}

// pop waits for a task until stop is closed.
func (q *readyQueue) pop(stop ...<-chan struct{}) (*task, bool) {
	for {
		if t, ok := q.tryPop(); ok {
			return t, true
		}
		var s0, s1, s2 <-chan struct{}
		if len(stop) > 0 {
			s0 = stop[0]
		}
		if len(stop) > 1 {
			s1 = stop[1]
		}
		if len(stop) > 2 {
			s2 = stop[2]
		}
		select {
		case <-q.signal:
		case <-s0:
			return nil, false
		case <-s1:
			return nil, false
		case <-s2:
			return nil, false
		}
	}
}

// workerEnv is the worker's environment.
func (r *run) workerEnv() []string {
	return process.Env{Inherit: r.cfg.Env, Set: map[string]string{
		"MODEL_ID": r.cfg.ModelID, "CAIRN_MAX_IN_FLIGHT": strconv.Itoa(r.cfg.MaxInFlight),
	}}.List()
}
