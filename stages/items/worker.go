package items

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/cairn-run/cairn/dsl/jsonwrite"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/stages/jsonpos"
)

// maxLine bounds one response line; a longer line is garbage. (A variable
// so that tests can lower it.)
var maxLine = 64 << 20

// maxGarbageLogged is how many garbage lines of one worker are logged in
// full; the rest are counted.
const maxGarbageLogged = 10

// response is one line a worker writes.
type response struct {
	ID           *string         `json:"id"`
	Score        *float64        `json:"score"`
	Outputs      json.RawMessage `json:"outputs"`
	Charged      int             `json:"charged"`
	InfraFailure bool            `json:"infra_failure"`
	Error        string          `json:"error"`
}

// MaxCharged bounds one answer's charged count: far above any item's
// rollouts, and low enough that no run's sum of them overflows.
const MaxCharged int64 = 1 << 40

// check finds what json.Unmarshal lets pass in a response line: a
// charged count below 0 or beyond MaxCharged, outputs that are not UTF-8
// (stored as they are, they would make the scores file unreadable), and
// a key given twice, or twice in two spellings json.Unmarshal takes for
// one ("Score", "\u0073core"): which of the two a reader keeps is not
// for a stored result to depend on.
func (r *response) check(line []byte) error {
	if r.Charged < 0 || int64(r.Charged) > MaxCharged {
		return fmt.Errorf("charged is %d, want a whole number from 0 to %d", r.Charged, MaxCharged)
	}
	if !utf8.Valid(r.Outputs) {
		return fmt.Errorf("outputs hold bytes that are not UTF-8: JSON text is UTF-8")
	}
	if !utf8.Valid(line) {
		// In error, say: a JSON reader reads the bytes as U+FFFD.
		return fmt.Errorf("the reply holds bytes that are not UTF-8 (a JSON reader reads them as U+FFFD): JSON text is UTF-8")
	}
	// Most lines give each key once, spelt as it is: the walks run only
	// where a key might repeat.
	if jsonpos.MayRepeat(line, responseKeys) {
		if path, _, dup := jsonpos.FirstDuplicate(line); dup {
			return fmt.Errorf("%s is given twice", path)
		}
		if key, dup := jsonpos.TopFoldDuplicate(line); dup {
			return fmt.Errorf("%s is given twice, in two spellings JSON readers disagree on", key)
		}
	}
	return nil
}

// replyWants says what each response field holds, for a line that gives
// one as something else.
var replyWants = map[string]string{"id": "a string", "score": "a number or null", "charged": "a whole number",
	"infra_failure": "true or false", "error": "a string"}

// replyProblem says what is wrong with a line json.Unmarshal could not
// read into a response, in the protocol's words rather than Go's types
// ("charged is the number 1.5, where a response gives a whole number").
func replyProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if want, ok := replyWants[te.Field]; ok {
			got := map[string]string{"bool": "true or false", "string": "a string", "number": "a number", "object": "an object", "array": "an array"}[te.Value]
			if n, ok := strings.CutPrefix(te.Value, "number "); ok {
				got = "the number " + n
				if te.Type.Kind() == reflect.Float64 {
					return fmt.Sprintf("%s is the number %s, beyond what a float64 holds (about ±1.8e308)", te.Field, n)
				}
			}
			if got == "" {
				got = te.Value
			}
			return fmt.Sprintf("%s is %s, where a response gives %s", te.Field, got, want)
		}
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

var responseKeys = [][]byte{[]byte(`id`), []byte(`score`), []byte(`outputs`), []byte(`charged`), []byte(`infra_failure`), []byte(`error`)}

// replyID is the string id of a line that is not a valid response, when
// its object gives one before what is wrong with it (a NaN score, say).
func replyID(line []byte) *string {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		if k == "id" {
			if v, err := dec.Token(); err == nil {
				if s, ok := v.(string); ok {
					return &s
				}
			}
			return nil
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return nil
		}
	}
	return nil
}

// flight is an item sent to a worker and not answered yet.
type flight struct {
	t        *task
	endpoint string
	release  func() // gives the endpoint's slot back
	deadline time.Time
}

// proc is one worker process.
type proc struct {
	r    *run
	name string
	w    process.Worker
	// stderr is the worker's stderr, each line prefixed with its name.
	stderr *prefixWriter
	in     *os.File // our end of the worker's stdin
	out    *os.File // our end of the worker's stdout
	bw     *bufio.Writer

	slots    chan struct{}   // one per request in flight
	ctx      context.Context // ends when the worker dies or the evaluation stops
	cancel   context.CancelFunc
	answered atomic.Int64
	// timedOut: cairn stopped the worker because items it held went past
	// their timeout; it did not die on its own.
	timedOut atomic.Bool

	mu       sync.Mutex
	inflight map[string]*flight
	dead     bool
	closing  bool // stdin closed at the end on purpose
	deadCh   chan struct{}
	exited   chan struct{}
	garbage  int
	canon    canonicalizer // decodeReply's scratch space, for read's lines
}

// replica keeps one worker running until the evaluation ends, starting a
// fresh one whenever the last one dies.
func (r *run) replica(n int) {
	for k := 0; !r.finished(); k++ {
		p, err := r.startProc(n, k)
		if err != nil {
			r.setFatal(err)
			return
		}
		select {
		case <-r.ready:
		case <-r.ctx.Done(): // serve stops it: the evaluation did not start
		}
		p.serve()
		if r.finished() {
			return
		}
		r.mu.Lock()
		switch {
		case p.answered.Load() > 0:
			r.quiet = 0
		case p.timedOut.Load():
			// Stopped for items past their timeout: the items' timeout
			// retries decide (a model too slow, a worker that hangs),
			// not the count of workers that die on their own.
		default:
			r.quiet++
		}
		quiet := r.quiet
		r.mu.Unlock()
		if quiet >= maxQuietStarts*r.cfg.Replicas {
			last := p.lastStderr()
			if last == "" {
				last = "; it wrote nothing on stderr"
			}
			r.setFatal(fmt.Errorf("%w: %d workers in a row died without answering any item (last: %s, %s%s)", ErrWorker, quiet, p.name, p.w.State(), last))
			return
		}
		if quiet > 0 {
			// A worker that dies at once should not spin.
			select {
			case <-time.After(min(r.policy.Backoff<<min(quiet-1, 10), 5*time.Second)):
			case <-r.ctx.Done():
				return
			}
		}
	}
}

func (r *run) startProc(n, k int) (*proc, error) {
	name := fmt.Sprintf("worker %d.%d", n, k)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrWorker, name, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrWorker, name, err)
	}
	// The worker's stderr lines wait for its pid to be known, so that
	// every line names the process that wrote it.
	stderr := &prefixWriter{w: r.cfg.WorkerStderr}
	launcher := r.cfg.Launcher
	if launcher == nil {
		launcher = process.LocalLauncher
	}
	w, err := launcher.StartWorker(r.ctx, process.WorkerSpec{Argv: r.cfg.Worker, Dir: r.cfg.Dir, Env: r.workerEnv(), Stdin: inR, Stdout: outW, Stderr: stderr})
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("%w: start %q: %w", ErrWorker, r.cfg.Worker[0], err)
	}
	stderr.setPrefix(fmt.Sprintf("%s (%s): ", name, w.Name()))
	r.mu.Lock()
	r.starts++
	r.mu.Unlock()
	ctx, cancel := context.WithCancel(r.ctx)
	return &proc{
		ctx:      ctx,
		cancel:   cancel,
		r:        r,
		name:     fmt.Sprintf("%s (%s)", name, w.Name()),
		w:        w,
		stderr:   stderr,
		in:       inW,
		out:      outR,
		bw:       bufio.NewWriterSize(inW, 64<<10),
		slots:    make(chan struct{}, r.cfg.MaxInFlight),
		inflight: make(map[string]*flight, r.cfg.MaxInFlight),
		deadCh:   make(chan struct{}),
		exited:   make(chan struct{}),
	}, nil
}

// serve runs the worker until it dies or the evaluation ends, and returns
// once the process has exited and its output is drained.
func (p *proc) serve() {
	var wg sync.WaitGroup
	readDone := make(chan struct{})
	wg.Go(func() {
		defer close(readDone)
		p.read()
	})
	wg.Go(p.wait)
	wg.Go(p.watch)
	wg.Go(func() { p.stopReading(readDone) })
	p.send()
	wg.Wait()
	p.cancel()
	p.out.Close()
	p.stderr.flush()
}

// send writes requests while the worker has room, until it dies or the
// evaluation ends; at the end it closes the worker's stdin and gives it
// ShutdownGrace to exit.
func (p *proc) send() {
	r := p.r
	for {
		// A slot first, flushing what is buffered before waiting for one.
		select {
		case p.slots <- struct{}{}:
		default:
			if !p.flush() {
				return
			}
			select {
			case p.slots <- struct{}{}:
			case <-p.deadCh:
				return
			case <-r.done:
				p.shutdown()
				return
			case <-r.ctx.Done():
				p.stop()
				return
			}
		}
		t, ok := r.queue.tryPop()
		if !ok {
			if !p.flush() {
				<-p.slots
				return
			}
			t, ok = r.queue.pop(p.deadCh, r.done, r.ctx.Done())
		}
		if !ok {
			<-p.slots
			switch {
			case r.ctx.Err() != nil:
				p.stop()
			case p.isDead():
			default:
				p.shutdown()
			}
			return
		}
		// Every task that has a free slot now is claimed with t, so that
		// one read of the store's tail covers them all.
		batch := []*task{t}
	more:
		for len(batch) < cap(p.slots) {
			select {
			case p.slots <- struct{}{}:
			default:
				break more
			}
			u, ok := r.queue.tryPop()
			if !ok {
				<-p.slots
				break
			}
			batch = append(batch, u)
		}
		send := r.acquire(batch)
		for range len(batch) - len(send) {
			<-p.slots // resolved, or held by another evaluator
		}
		for i, u := range send {
			if !p.sendOne(u) {
				for _, v := range send[i+1:] {
					r.queue.push(v, true) // claimed still: sent by the next worker
				}
				return
			}
		}
	}
}

// sendOne assigns t an endpoint and writes its request; it reports false
// when the worker is gone (t is then queued again).
func (p *proc) sendOne(t *task) bool {
	r := p.r
	// The requests written before this one are sent before waiting for
	// an endpoint's slot: theirs are freed only by their replies.
	ep, release, err := r.picker.AcquireAvoiding(p.ctx, t.failedOn, func() { p.flush() })
	if err != nil {
		r.queue.push(t, true)
		<-p.slots
		if r.ctx.Err() != nil {
			p.stop()
		}
		return false
	}
	p.mu.Lock()
	if p.dead {
		p.mu.Unlock()
		release()
		r.queue.push(t, true)
		return false
	}
	p.inflight[t.id] = &flight{t: t, endpoint: ep, release: release, deadline: time.Now().Add(r.cfg.ItemTimeout)}
	t.sends++
	attempt := t.sends
	p.mu.Unlock()
	r.mu.Lock()
	r.counts.Attempted++
	r.report(false)
	r.mu.Unlock()

	line := make([]byte, 0, 128+len(t.data))
	line = append(line, `{"id":`...)
	line = append(line, t.idq...)
	line = append(line, `,"key":"`...)
	line = append(line, t.key...)
	line = append(line, `","attempt":`...)
	line = strconv.AppendInt(line, int64(attempt), 10)
	if ep != "" {
		line = append(line, `,"endpoint":`...)
		line = jsonwrite.String(line, ep)
	}
	line = append(line, t.bundle...)
	line = append(line, `,"model":`...)
	line = jsonwrite.String(line, r.cfg.ModelID)
	// The settings in the item key, for the worker to use: a result
	// stored under temperature 0.7 must be one made at 0.7.
	line = append(line, `,"runtime":`...)
	line = append(line, r.rt...)
	line = append(line, `,"item":`...)
	line = append(line, t.data...)
	line = append(line, "}\n"...)
	if _, err := p.bw.Write(line); err != nil {
		p.die(classCrash, fmt.Sprintf("writing its stdin failed: %v", err), nil)
		return false
	}
	return true
}

func (p *proc) flush() bool {
	if p.bw.Buffered() == 0 {
		return true
	}
	if err := p.bw.Flush(); err != nil {
		p.die(classCrash, fmt.Sprintf("writing its stdin failed: %v", err), nil)
		return false
	}
	return true
}

func (p *proc) isDead() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead
}

// shutdown ends a worker with nothing left to do: close its stdin, give it
// ShutdownGrace to exit, then kill its process group.
func (p *proc) shutdown() {
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	p.flush()
	p.in.Close()
	select {
	case <-p.exited:
	case <-time.After(p.r.cfg.ShutdownGrace):
		fmt.Fprintf(p.r.cfg.Log, "items: %s did not exit within %s of the end of its input; killing it\n", p.name, p.r.cfg.ShutdownGrace)
		p.kill()
	}
}

func (p *proc) kill() {
	p.w.Kill()
}

// stop ends the worker when the evaluation stops before its end
// (interrupted, or past the node's timeout): SIGTERM to its process
// group, then SIGKILL after StopGrace, or at once when Hard is closed.
// Its items in flight stay unstored.
func (p *proc) stop() {
	p.end(classDisplaced, "evaluation stopped", nil, p.terminate)
}

// terminate sends the worker's group SIGTERM and kills it StopGrace later
// (at once for none, as kill_grace = 0 does), unless its process exited
// first (wait then kills what is left of the group) or Hard closes.
func (p *proc) terminate() {
	cfg := &p.r.cfg
	if isClosed(cfg.Hard) {
		p.kill()
		return
	}
	p.w.Terminate()
	if cfg.StopGrace <= 0 {
		p.kill()
		return
	}
	go func() {
		t := time.NewTimer(cfg.StopGrace)
		defer t.Stop()
		select {
		case <-p.exited:
		case <-t.C:
			p.kill()
		case <-cfg.Hard:
			p.kill()
		}
	}()
}

// isClosed reports whether c is closed (false for nil).
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// die marks the worker dead, kills its process group and sends its items in
// flight again: those in timedOut as timeouts, the others as class.
func (p *proc) die(class failureClass, why string, timedOut map[string]bool) {
	p.end(class, why, timedOut, p.kill)
}

// end is die and stop: it marks the worker dead, ends its process with
// kill and sends its items in flight again.
func (p *proc) end(class failureClass, why string, timedOut map[string]bool, kill func()) {
	p.mu.Lock()
	if p.dead {
		p.mu.Unlock()
		return
	}
	p.dead = true
	flights := p.inflight
	p.inflight = nil
	closing := p.closing
	close(p.deadCh)
	p.mu.Unlock()

	p.cancel()
	kill()
	p.in.Close()
	r := p.r
	if len(flights) > 0 || !closing {
		if r.ctx.Err() == nil && !r.finished() {
			// Each item in flight then says where it goes: sent again
			// (a retry), or nowhere (its last attempt: failed).
			// "exited (exit status 1) with 2 items in flight; its last
			// line on stderr: ...": the count beside how it ended.
			how, more, _ := strings.Cut(why, "; ")
			if more != "" {
				more = "; " + more
			}
			fmt.Fprintf(r.cfg.Log, "items: %s %s with %d items in flight%s\n", p.name, how, len(flights), more)
		}
	}
	for id, f := range flights {
		f.release()
		if r.ctx.Err() != nil {
			continue // the evaluation is over; the items stay unstored
		}
		c := class
		if timedOut[id] {
			c = classTimeout
		}
		r.retry(f.t, c, fmt.Sprintf("%s %s", p.name, why))
	}
}

// wait reaps the worker and kills what is left of its group.
func (p *proc) wait() {
	err := p.w.Wait()
	p.kill()
	p.mu.Lock()
	expected := p.closing || p.dead
	p.mu.Unlock()
	if !expected {
		// The copy of its stderr is complete once Wait returns.
		p.die(classCrash, fmt.Sprintf("exited (%v)%s", exitText(err), p.lastStderr()), nil)
	}
	close(p.exited)
}

// lastStderr quotes the worker's last line on stderr ("" when it wrote
// none), for the messages that say why it died.
func (p *proc) lastStderr() string {
	p.stderr.flush()
	if l := p.stderr.lastLine(); l != "" {
		return fmt.Sprintf("; its last line on stderr: %q", l)
	}
	return ""
}

func exitText(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

// watch kills the worker when an item passes its timeout, or when the
// evaluation stops.
func (p *proc) watch() {
	tick := min(max(p.r.cfg.ItemTimeout/10, 5*time.Millisecond), time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-p.deadCh:
			return
		case <-p.exited:
			return
		case <-p.r.ctx.Done():
			p.stop()
			return
		case now := <-t.C:
			var late map[string]bool
			p.mu.Lock()
			for id, f := range p.inflight {
				if now.After(f.deadline) {
					if late == nil {
						late = make(map[string]bool)
					}
					late[id] = true
				}
			}
			p.mu.Unlock()
			if late != nil {
				p.timedOut.Store(true)
				what := fmt.Sprintf("%d items", len(late))
				if len(late) == 1 {
					what = "1 item"
				}
				p.die(classDisplaced, fmt.Sprintf("did not answer %s within %s", what, p.r.cfg.ItemTimeout), late)
				return
			}
		}
	}
}

// stdoutDelay is how long the worker's stdout is still read once its
// process has exited (as exec.Cmd's WaitDelay does for its stderr copy).
var stdoutDelay = time.Second

// stopReading ends read stdoutDelay after the worker's process exited
// when its stdout is still open: held by a process the worker started in
// a session of its own (a helper, a daemon, which the kill of its process
// group spares), it would keep the evaluation waiting for that process,
// past the stage's timeout and an interrupt.
func (p *proc) stopReading(readDone <-chan struct{}) {
	select {
	case <-p.exited:
	case <-readDone:
		return
	}
	t := time.NewTimer(stdoutDelay)
	defer t.Stop()
	select {
	case <-readDone:
	case <-t.C:
		fmt.Fprintf(p.r.cfg.Log, "items: %s exited, but a process it started holds its stdout open; no longer reading it\n", p.name)
		p.out.SetReadDeadline(time.Now())
	}
}

// read handles the worker's response lines until its stdout closes.
func (p *proc) read() {
	br := bufio.NewReaderSize(p.out, 64<<10)
	var long []byte
	skipping := false // inside a line over the limit
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if !skipping {
				if len(long)+len(line) > maxLine {
					p.overLong(append(long, line...))
					long, skipping = nil, true
				} else {
					long = append(long, line...)
				}
			}
			continue
		}
		if skipping {
			skipping = false // this chunk ends the long line
		} else {
			if long != nil {
				line, long = append(long, line...), nil
			}
			if len(bytes.TrimSpace(line)) > 0 {
				p.handle(line)
			}
		}
		if err != nil {
			why := "closed its stdout"
			if !errors.Is(err, io.EOF) {
				why = fmt.Sprintf("stdout failed: %v", err)
			}
			// Let the exit status explain a crash when there is one.
			select {
			case <-p.exited:
			case <-time.After(500 * time.Millisecond):
			}
			p.die(classCrash, why, nil)
			return
		}
	}
}

func (p *proc) handle(line []byte) {
	var resp response
	var err error
	if !decodeReply(line, &resp, &p.canon) {
		resp = response{}
		if err = json.Unmarshal(line, &resp); err == nil {
			err = tinyScore(line, resp.Score)
		}
	}
	id := resp.ID
	if err != nil {
		// Not what encoding/json left in resp.ID: it points to "" when
		// the id is a number.
		id = replyID(line)
	} else if err = resp.check(line); err != nil && id == nil {
		id = replyID(line)
	}
	if id == nil {
		switch {
		case bytes.HasPrefix(line, jsonpos.BOM):
			// Go's reader says "invalid character 'ï'" of it.
			p.garbageLine(line, "not a response: the line "+jsonpos.BOMMessage)
		case err != nil:
			p.garbageLine(line, "not a response: "+replyProblem(err))
		default:
			p.garbageLine(line, "no id")
		}
		return
	}
	f, ok := p.land(*id, line)
	if !ok {
		return
	}
	r := p.r
	t := f.t
	if err != nil {
		// A reply to an item in flight that cairn cannot read fails that
		// attempt at once, saying why, rather than leaving the item to
		// time out: a worker that always answers so fails in seconds.
		r.retry(t, classCrash, fmt.Sprintf("%s answered it with a reply cairn cannot read (%s): %s", p.name, replyProblem(err), snippet(line)))
		return
	}
	if resp.InfraFailure {
		r.mu.Lock()
		r.counts.InfraFailures++
		r.report(false)
		r.mu.Unlock()
		t.failedOn = f.endpoint
		why := "infrastructure failure"
		if resp.Error != "" {
			why += ": " + resp.Error
		}
		r.retry(t, classInfra, why)
		return
	}
	EndpointAnswered(f.endpoint)
	out := resp.Outputs
	if bytes.Equal(bytes.TrimSpace(out), []byte("null")) {
		out = nil
	}
	t.result = Result{Score: resp.Score, Outputs: out, Charged: resp.Charged, Error: resp.Error}
	select {
	case r.commitCh <- t:
	case <-r.ctx.Done():
	}
}

// land takes the item id off the worker's flights, as its reply (line)
// came in, and gives its slots back. It reports false, and the line is
// ignored, when the worker is dead (its items were sent again already) or
// no item id is in flight on it.
func (p *proc) land(id string, line []byte) (*flight, bool) {
	p.mu.Lock()
	if p.dead {
		p.mu.Unlock()
		return nil, false
	}
	f, ok := p.inflight[id]
	if ok {
		delete(p.inflight, id)
	}
	p.mu.Unlock()
	if !ok {
		p.garbageLine(line, fmt.Sprintf("no item %q is in flight on this worker", id))
		return nil, false
	}
	f.release()
	<-p.slots
	p.answered.Add(1)
	return f, true
}

// overLong handles a line longer than maxLine, of which start is the
// beginning: a reply whose id can be read there (the id comes before the
// outputs that made it long) fails that attempt at once, saying so, as
// any reply cairn cannot read does, rather than leaving the item to time
// out; another line is ignored.
func (p *proc) overLong(start []byte) {
	why := fmt.Sprintf("longer than the limit of %d bytes", maxLine)
	head := start[:min(len(start), 256)]
	id := replyID(start)
	if id == nil {
		p.garbageLine(head, why)
		return
	}
	f, ok := p.land(*id, head)
	if !ok {
		return
	}
	p.r.retry(f.t, classCrash, fmt.Sprintf("%s answered it with a reply cairn cannot read (%s): %s", p.name, why, snippet(head)))
}

func (p *proc) garbageLine(line []byte, why string) {
	p.mu.Lock()
	p.garbage++
	n := p.garbage
	p.mu.Unlock()
	if n <= maxGarbageLogged {
		fmt.Fprintf(p.r.cfg.Log, "items: %s: ignoring a line (%s): %s\n", p.name, why, snippet(line))
	} else if n == maxGarbageLogged+1 {
		fmt.Fprintf(p.r.cfg.Log, "items: %s: ignoring further malformed lines without logging them\n", p.name)
	}
}

// prefixWriter writes each line with a prefix; it is safe for concurrent
// use. Lines wait until the prefix is set (or flush), and the last one is
// kept for error messages.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	ready  bool
	buf    []byte
	last   string
}

// setPrefix sets the prefix and writes the lines that waited for it.
func (w *prefixWriter) setPrefix(prefix string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.prefix, w.ready = prefix, true
	w.emit()
}

// lastLine is the last complete or flushed line, without its prefix.
func (w *prefixWriter) lastLine() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

func (w *prefixWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	if w.ready {
		w.emit()
	}
	return len(b), nil
}

// emit writes the complete lines buffered; w.mu is held.
func (w *prefixWriter) emit() {
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.line(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 {
		w.line(w.buf)
		w.buf = w.buf[:0]
	}
}

// line writes one line (a lost log line must not stop the worker); w.mu
// is held.
func (w *prefixWriter) line(b []byte) {
	if t := strings.TrimSpace(string(b)); t != "" {
		w.last = t
	}
	_, _ = fmt.Fprintf(w.w, "%s%s\n", w.prefix, b)
}

// flush writes what waits, and a last line that has no newline.
func (w *prefixWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.emit()
	if len(w.buf) > 0 {
		w.line(w.buf)
		w.buf = w.buf[:0]
	}
}
