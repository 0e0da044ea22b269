package rollout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/syncbuf"
)

// fakeEval answers every item with score 1; items named in infra end as
// infrastructure failures, items in stored come from the store.
type fakeEval struct {
	mu     sync.Mutex
	infra  map[string]bool
	stored map[string]bool
	calls  int
}

func (f *fakeEval) Rollouts(_ context.Context, bundle string, ids []string) ([]Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if bundle == "missing" {
		return nil, fmt.Errorf("%w: no such folder", ErrBadBundle)
	}
	out := make([]Outcome, len(ids))
	for i, id := range ids {
		one := 1.0
		out[i] = Outcome{Item: id, Key: "k-" + id, Score: &one, Cached: f.stored[id]}
		if f.infra[id] {
			out[i] = Outcome{Item: id, InfraFailure: true, Error: "HTTP 503"}
		}
	}
	return out, nil
}

// CheckRequest implements RequestChecker: the bundle "missing" is not a
// folder, and items starting with "x" are not in the training split.
func (f *fakeEval) CheckRequest(bundle string, ids []string) error {
	if bundle == "missing" {
		return fmt.Errorf("%w: no such folder", ErrBadBundle)
	}
	for _, id := range ids {
		if strings.HasPrefix(id, "x") {
			return fmt.Errorf("%w: %q is not a training item", ErrUnknownItem, id)
		}
	}
	return nil
}

func newMeter(t *testing.T, budget int, progress io.Writer) (*Meter, string) {
	t.Helper()
	ledger := filepath.Join(t.TempDir(), "rollouts.jsonl")
	m, err := NewMeter(MeterOptions{Budget: budget, Ledger: ledger, NoSync: true, Progress: progress})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m, ledger
}

// ledgerLines reads the ledger, one charged rollout a line.
func ledgerLines(t *testing.T, path string) []LedgerLine {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []LedgerLine
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var ll LedgerLine
		require.NoError(t, json.Unmarshal([]byte(l), &ll))
		out = append(out, ll)
	}
	return out
}

func batch(from, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("t%03d", from+i)
	}
	return ids
}

// A method that asks for 700 rollouts, 10 at a time, gets exactly 600
// charged and then the typed error; each charge is in the ledger, and a
// progress line comes every 10 charged rollouts.
func TestMeterNeverOverspends(t *testing.T) {
	var progress bytes.Buffer
	m, ledger := newMeter(t, 600, &progress)
	ev := &fakeEval{}
	var exhausted int
	for i := 0; i < 70; i++ {
		rep := m.Serve(context.Background(), ev, Request{Op: "rollout", Bundle: "b", Items: batch(i*10, 10)})
		if rep.Error != nil {
			require.Equal(t, ErrBudgetExhausted, rep.Error.Type, rep.Error.Message)
			exhausted++
			continue
		}
		require.Len(t, rep.Results, 10)
	}
	c := m.Counts()
	assert.Equal(t, 600, c.Charged)
	assert.Equal(t, 0, c.Remaining)
	assert.Equal(t, 10, exhausted)
	assert.Equal(t, 100, c.Refused)
	assert.Equal(t, 60, ev.calls, "a refused request runs nothing")
	lines := ledgerLines(t, ledger)
	require.Len(t, lines, 600)
	assert.Equal(t, 600, lines[599].N)
	progressLines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	require.Len(t, progressLines, 60)
	assert.Equal(t, "rollouts: charged 10/600, attempted 10, infra-failures 0 (0 from the store)", progressLines[0])
	assert.Equal(t, "rollouts: charged 600/600, attempted 600, infra-failures 0 (0 from the store)", progressLines[59])
}

// A batch larger than what is left is refused whole; a smaller one still
// runs.
func TestMeterRefusesPastTheBudget(t *testing.T) {
	m, _ := newMeter(t, 15, nil)
	ev := &fakeEval{}
	rep := m.Serve(context.Background(), ev, Request{Op: "rollout", Bundle: "b", Items: batch(0, 10)})
	require.Nil(t, rep.Error)
	rep = m.Serve(context.Background(), ev, Request{Op: "rollout", Bundle: "b", Items: batch(10, 10)})
	require.NotNil(t, rep.Error)
	assert.Equal(t, ErrBudgetExhausted, rep.Error.Type)
	assert.Contains(t, rep.Error.Message, "10 rollout(s) asked for, 5 of the budget of 15 left")
	rep = m.Serve(context.Background(), ev, Request{Op: "rollout", Bundle: "b", Items: batch(10, 5)})
	require.Nil(t, rep.Error)
	assert.Equal(t, 15, rep.Counts.Charged)
	rep = m.Serve(context.Background(), ev, Request{Op: "rollout", Bundle: "b", Items: batch(20, 1)})
	require.NotNil(t, rep.Error)
	assert.Equal(t, ErrBudgetExhausted, rep.Error.Type)
}

// Results from the item store are charged; infrastructure failures are
// counted and not charged.
func TestMeterChargesStoreHitsNotInfraFailures(t *testing.T) {
	var progress bytes.Buffer
	m, ledger := newMeter(t, 600, &progress)
	ev := &fakeEval{infra: map[string]bool{"t001": true, "t003": true}, stored: map[string]bool{"t004": true, "t005": true}}
	rep := m.Serve(context.Background(), ev, Request{Op: "rollout", Bundle: "b", Items: batch(0, 12)})
	require.Nil(t, rep.Error)
	c := rep.Counts
	assert.Equal(t, 10, c.Charged)
	assert.Equal(t, 12, c.Attempted)
	assert.Equal(t, 2, c.InfraFailures)
	assert.Equal(t, 2, c.FromStore)
	assert.Equal(t, 590, c.Remaining)
	assert.False(t, rep.Results[1].Charged)
	assert.True(t, rep.Results[4].Charged)
	assert.Len(t, ledgerLines(t, ledger), 10)
	assert.Equal(t, "rollouts: charged 10/600, attempted 12, infra-failures 2 (2 from the store)\n", progress.String())
	// A batch that passes two multiples of 10 reports both, each with the
	// counts at that rollout.
	rep = m.Serve(context.Background(), &fakeEval{infra: map[string]bool{"t105": true}}, Request{Op: "rollout", Bundle: "b", Items: batch(100, 21)})
	require.Nil(t, rep.Error)
	assert.Equal(t, "rollouts: charged 10/600, attempted 12, infra-failures 2 (2 from the store)\n"+
		"rollouts: charged 20/600, attempted 23, infra-failures 3 (2 from the store)\n"+
		"rollouts: charged 30/600, attempted 33, infra-failures 3 (2 from the store)\n", progress.String())
}

func TestMeterBadRequests(t *testing.T) {
	m, _ := newMeter(t, 10, nil)
	ev := &fakeEval{}
	for _, req := range []Request{{Op: "train"}, {Op: "rollout", Items: []string{"a"}}, {Op: "rollout", Bundle: "b"}, {Op: "rollout", Bundle: "missing", Items: []string{"a"}}} {
		rep := m.Serve(context.Background(), ev, req)
		require.NotNil(t, rep.Error, "%+v", req)
		assert.Equal(t, ErrBadRequest, rep.Error.Type, "%+v: %s", req, rep.Error.Message)
	}
	assert.Equal(t, 0, m.Counts().Charged)
}

// A malformed request is the method's mistake, not a question of budget:
// once the budget is spent it is still answered bad_request (a method
// that retries on budget_exhausted would otherwise never learn of it),
// and it is not counted as refused.
func TestMeterBadRequestAfterTheBudgetIsSpent(t *testing.T) {
	m, _ := newMeter(t, 10, nil)
	ev := &fakeEval{}
	rep := m.Serve(context.Background(), ev, Request{Op: "rollout", Bundle: "b", Items: batch(0, 10)})
	require.Nil(t, rep.Error)
	require.Equal(t, 0, rep.Counts.Remaining)
	for _, req := range []Request{
		{Op: "rollout", Bundle: "missing", Items: []string{"t001"}},
		{Op: "rollout", Bundle: "b", Items: []string{"t001", "x-unknown"}},
		{Op: "rollout", Bundle: "b", Items: []string{"t001", "t001"}},
		{Op: "rollout", Bundle: "b", Items: []string{"t001", "t002", "t001"}},
	} {
		rep := m.Serve(context.Background(), ev, req)
		require.NotNil(t, rep.Error, "%+v", req)
		assert.Equal(t, ErrBadRequest, rep.Error.Type, "%+v: %s", req, rep.Error.Message)
		assert.Contains(t, rep.Error.Message, "nothing was charged")
	}
	// Before the budget is spent, a repeated item is refused the same way.
	m2, _ := newMeter(t, 10, nil)
	rep = m2.Serve(context.Background(), ev, Request{Op: "rollout", Bundle: "b", Items: []string{"t001", "t001"}})
	require.NotNil(t, rep.Error)
	assert.Equal(t, ErrBadRequest, rep.Error.Type)
	assert.Contains(t, rep.Error.Message, `"t001" is asked for twice`)
	c := m.Counts()
	assert.Equal(t, 10, c.Charged)
	assert.Equal(t, 0, c.Refused, "a malformed request is not a refusal for budget")
	rep = m.Serve(context.Background(), ev, Request{Op: "rollout", Bundle: "b", Items: []string{"t011"}})
	require.NotNil(t, rep.Error)
	assert.Equal(t, ErrBudgetExhausted, rep.Error.Type, "a well-formed request past the budget is still budget_exhausted")
}

// Two connections asking at once are served one request at a time, and
// together never pass the budget.
func TestServerSocket(t *testing.T) {
	m, _ := newMeter(t, 25, nil)
	sock := filepath.Join(t.TempDir(), "r.sock")
	srv, err := Listen(context.Background(), sock, m, &fakeEval{}, nil)
	require.NoError(t, err)
	defer srv.Close()
	var wg sync.WaitGroup
	refused := make([]int, 2)
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			conn, err := net.Dial("unix", sock)
			if !assert.NoError(t, err) {
				return
			}
			defer conn.Close()
			r := bufio.NewReader(conn)
			for i := 0; i < 3; i++ {
				b, _ := json.Marshal(Request{Op: "rollout", Bundle: "b", Items: batch(100*c+10*i, 5)})
				conn.Write(append(b, '\n'))
				line, err := r.ReadBytes('\n')
				if !assert.NoError(t, err) {
					return
				}
				var rep Reply
				require.NoError(t, json.Unmarshal(line, &rep))
				if rep.Error != nil {
					assert.Equal(t, ErrBudgetExhausted, rep.Error.Type)
					refused[c]++
				}
			}
			conn.Write([]byte("not json\n"))
			line, _ := r.ReadBytes('\n')
			assert.Contains(t, string(line), `"type":"bad_request"`)
		}(c)
	}
	wg.Wait()
	assert.Equal(t, 25, m.Counts().Charged)
	assert.Equal(t, 1, refused[0]+refused[1])
}

// Requests that come together share the ledger's fsync (#34): while one
// request's charges are being synced, the next ones are run and written,
// and one fsync makes them all durable. No reply comes before the ledger
// lines it counts are synced, and the counts stay in order.
func TestMeterGroupCommitsTheLedger(t *testing.T) {
	const n = 8
	ledger := filepath.Join(t.TempDir(), "rollouts.jsonl")
	m, err := NewMeter(MeterOptions{Budget: 1000, Ledger: ledger})
	require.NoError(t, err)
	defer m.Close()
	var mu sync.Mutex
	var syncs int
	var synced int64 // the ledger's size at the end of the last fsync
	written := func() int64 {
		st, err := os.Stat(ledger)
		require.NoError(t, err)
		return st.Size()
	}
	allWritten := make(chan struct{})
	m.syncLedger = func(f *os.File) error {
		mu.Lock()
		syncs++
		first := syncs == 1
		mu.Unlock()
		if first {
			// Hold the first fsync until every request is written: with
			// one lock held over the fsync they cannot be, and after a
			// while each runs with an fsync of its own.
			select {
			case <-allWritten:
			case <-time.After(5 * time.Second):
			}
		}
		size := written()
		if err := f.Sync(); err != nil {
			return err
		}
		mu.Lock()
		synced = max(synced, size)
		mu.Unlock()
		return nil
	}
	go func() {
		for {
			b, err := os.ReadFile(ledger)
			if err != nil || bytes.Count(b, []byte("\n")) == n*10 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		close(allWritten)
	}()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep := m.Serve(context.Background(), &fakeEval{}, Request{Op: "rollout", Bundle: "b", Items: batch(10*i, 10)})
			if !assert.Nil(t, rep.Error) {
				return
			}
			mu.Lock()
			durable := synced
			mu.Unlock()
			assert.GreaterOrEqual(t, durable, lineEnd(t, ledger, rep.Results[9].Item), "the reply came after its charges were synced")
			assert.Zero(t, rep.Counts.Charged%10)
		}()
	}
	wg.Wait()
	assert.Less(t, syncs, n, "requests that came together shared an fsync")
	assert.Equal(t, n*10, m.Counts().Charged)
	lines := ledgerLines(t, ledger)
	require.Len(t, lines, n*10)
	for i, l := range lines {
		assert.Equal(t, i+1, l.N, "charged in order")
	}
}

// lineEnd is the offset in the ledger where the line of item id ends.
func lineEnd(t *testing.T, ledger, id string) int64 {
	b, err := os.ReadFile(ledger)
	require.NoError(t, err)
	i := bytes.Index(b, []byte(`"item":"`+id+`"`))
	require.GreaterOrEqual(t, i, 0, id)
	return int64(i + bytes.IndexByte(b[i:], '\n') + 1)
}

// blockingEval holds each request until release is closed (or a while has
// passed), and says when one has started.
type blockingEval struct {
	fakeEval
	started chan struct{}
	release chan struct{}
	done    atomic.Bool
}

func (b *blockingEval) Rollouts(ctx context.Context, bundle string, ids []string) ([]Outcome, error) {
	close(b.started)
	select {
	case <-b.release:
	case <-time.After(5 * time.Second):
	}
	defer b.done.Store(true)
	return b.fakeEval.Rollouts(ctx, bundle, ids)
}

// A status is answered while a request's rollouts run, with the counts
// charged before it.
func TestMeterStatusWhileARequestRuns(t *testing.T) {
	m, _ := newMeter(t, 100, nil)
	rep := m.Serve(context.Background(), &fakeEval{}, Request{Op: "rollout", Bundle: "b", Items: batch(0, 10)})
	require.Nil(t, rep.Error)
	ev := &blockingEval{started: make(chan struct{}), release: make(chan struct{})}
	ran := make(chan Reply)
	go func() {
		ran <- m.Serve(context.Background(), ev, Request{Op: "rollout", Bundle: "b", Items: batch(10, 10)})
	}()
	<-ev.started
	st := m.Serve(context.Background(), ev, Request{Op: "status"})
	assert.False(t, ev.done.Load(), "the status was answered while the rollouts ran")
	assert.Equal(t, 10, st.Counts.Charged)
	close(ev.release)
	assert.Equal(t, 20, (<-ran).Counts.Charged)
}

// A request that gives a key twice (as written, in another letter case,
// or with escapes) is a bad request, charged nothing; one too long gets a
// bad_request reply before its connection closes; a reply nobody reads
// is said in the log.
func TestServerRefusesAmbiguousAndOverlongRequests(t *testing.T) {
	m, _ := newMeter(t, 25, nil)
	sock := filepath.Join(t.TempDir(), "r.sock")
	var log syncbuf.Buffer
	srv, err := Listen(context.Background(), sock, m, &fakeEval{}, &log)
	require.NoError(t, err)
	defer srv.Close()
	ask := func(conn net.Conn, r *bufio.Reader, line string) Reply {
		t.Helper()
		_, err := conn.Write([]byte(line + "\n"))
		require.NoError(t, err)
		b, err := r.ReadBytes('\n')
		require.NoError(t, err, "a reply for %.60s", line)
		var rep Reply
		require.NoError(t, json.Unmarshal(b, &rep))
		return rep
	}
	conn, err := net.Dial("unix", sock)
	require.NoError(t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	for _, line := range []string{
		`{"op":"rollout","bundle":"b","items":["i1"],"items":["i2","i3"]}`,
		`{"op":"rollout","bundle":"b","items":["i1"],"Items":["i2","i3"]}`,
		`{"op":"rollout","bundle":"b","items":["i1"],"\u0069tems":["i2","i3"]}`,
	} {
		rep := ask(conn, r, line)
		require.NotNil(t, rep.Error, line)
		assert.Equal(t, ErrBadRequest, rep.Error.Type, line)
		assert.Contains(t, rep.Error.Message, "is given twice", line)
	}
	assert.Zero(t, m.Counts().Charged)

	long := `{"op":"rollout","bundle":"b","items":["` + strings.Repeat("x", maxRequest) + `"]}`
	rep := ask(conn, r, long)
	require.NotNil(t, rep.Error)
	assert.Equal(t, ErrBadRequest, rep.Error.Type)
	assert.Contains(t, rep.Error.Message, "longer than 16 MiB")
	assert.Eventually(t, func() bool { return strings.Contains(log.String(), "longer than 16 MiB") }, 5*time.Second, 10*time.Millisecond)
}

// A blank or whitespace-only line is a request too: it is answered
// bad_request, charged nothing, and the connection goes on serving. A
// method that sent one waits for its reply; none would hang it forever.
func TestServerAnswersABlankLine(t *testing.T) {
	m, _ := newMeter(t, 25, nil)
	sock := filepath.Join(t.TempDir(), "r.sock")
	srv, err := Listen(context.Background(), sock, m, &fakeEval{}, nil)
	require.NoError(t, err)
	defer srv.Close()
	conn, err := net.Dial("unix", sock)
	require.NoError(t, err)
	defer conn.Close()
	// Not a wait for anything: it turns the hang this test is about into
	// a failure.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
	r := bufio.NewReader(conn)
	for _, line := range []string{"\n", "   \t \n", "\r\n"} {
		_, err := conn.Write([]byte(line))
		require.NoError(t, err)
		b, err := r.ReadBytes('\n')
		require.NoError(t, err, "a reply for %q", line)
		var rep Reply
		require.NoError(t, json.Unmarshal(b, &rep))
		require.NotNil(t, rep.Error, "%q", line)
		assert.Equal(t, ErrBadRequest, rep.Error.Type, "%q", line)
		assert.Contains(t, rep.Error.Message, "the request line is blank", "%q", line)
	}
	b, _ := json.Marshal(Request{Op: "rollout", Bundle: "b", Items: batch(0, 2)})
	_, err = conn.Write(append(b, '\n'))
	require.NoError(t, err)
	b, err = r.ReadBytes('\n')
	require.NoError(t, err)
	var rep Reply
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.Nil(t, rep.Error)
	assert.Equal(t, 2, rep.Counts.Charged)
}

// slowEval answers after a pause, so that a client can hang up first.
type slowEval struct{ fakeEval }

func (s *slowEval) Rollouts(ctx context.Context, bundle string, ids []string) ([]Outcome, error) {
	time.Sleep(200 * time.Millisecond)
	return s.fakeEval.Rollouts(ctx, bundle, ids)
}

// A client that hangs up before its reply: the rollouts stay charged, and
// the service's log says the reply was not written.
func TestServerLogsAReplyNobodyRead(t *testing.T) {
	m, _ := newMeter(t, 25, nil)
	sock := filepath.Join(t.TempDir(), "r.sock")
	var log syncbuf.Buffer
	srv, err := Listen(context.Background(), sock, m, &slowEval{}, &log)
	require.NoError(t, err)
	defer srv.Close()
	conn, err := net.Dial("unix", sock)
	require.NoError(t, err)
	b, _ := json.Marshal(Request{Op: "rollout", Bundle: "b", Items: batch(0, 5)})
	_, err = conn.Write(append(b, '\n'))
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	assert.Eventually(t, func() bool {
		return strings.Contains(log.String(), "closed before its reply was written")
	}, 10*time.Second, 10*time.Millisecond, log.String())
	assert.Equal(t, 5, m.Counts().Charged)
}

// A request whose evaluation ends after the service stopped (the method
// ended while it ran) has nobody to read its reply: nothing of it is
// charged, also when its items got results.
func TestMeterChargesNothingOnceTheServiceStopped(t *testing.T) {
	m, ledger := newMeter(t, 10, nil)
	charged := 0
	m.onCharge = func(outs []Outcome) { charged += len(outs) }
	ctx, cancel := context.WithCancel(context.Background())
	ev := evalFunc(func(ctx context.Context, bundle string, ids []string) ([]Outcome, error) {
		cancel() // the method ends while the rollouts run
		return (&fakeEval{}).Rollouts(ctx, bundle, ids)
	})
	rep := m.Serve(ctx, ev, Request{Op: "rollout", Bundle: "b", Items: batch(0, 3)})
	require.NotNil(t, rep.Error)
	assert.Equal(t, ErrInternal, rep.Error.Type)
	assert.Contains(t, rep.Error.Message, "nothing was charged")
	assert.Zero(t, m.Counts().Charged)
	assert.Zero(t, m.Counts().Attempted)
	b, err := os.ReadFile(ledger)
	require.NoError(t, err)
	assert.Empty(t, b, "nothing in the ledger")
	assert.Zero(t, charged, "nothing journaled")
}

type evalFunc func(ctx context.Context, bundle string, ids []string) ([]Outcome, error)

func (f evalFunc) Rollouts(ctx context.Context, bundle string, ids []string) ([]Outcome, error) {
	return f(ctx, bundle, ids)
}
