package modelcache

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-run/cairn/sim/simmodel"
	"github.com/cairn-run/cairn/stages/items"
)

// The figures of make bench (bench/modelcache.sh): requests per second
// answered from the store, and the latency a miss adds to the model's.

func benchServer(b *testing.B, sim *simmodel.Running) *Server {
	b.Helper()
	return benchServer2(b, sim, b.TempDir())
}

// benchServer2 is a cache on the store in dir.
func benchServer2(b *testing.B, sim *simmodel.Running, dir string) *Server {
	b.Helper()
	st, err := items.OpenStore(dir, items.StoreOptions{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	s, err := Start(Config{Endpoints: []string{sim.URL}, Store: st})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close(); st.Close() })
	return s
}

func benchClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 1024
	return &http.Client{Transport: tr}
}

func benchBody(i int) []byte {
	return fmt.Appendf(nil, `{"model":"sim-model","messages":[{"role":"system","content":"You are a careful assistant."},{"role":"user","content":"What is %d + 1? Answer with the number only."}],"temperature":0,"max_tokens":16}`, i)
}

func do(b *testing.B, c *http.Client, url string, body []byte) []byte {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
	return out
}

// load is a load generator that costs little next to what it measures:
// conns keep-alive connections, each one goroutine that writes a prebuilt
// HTTP/1.1 request and reads the answer (status line, headers, a body of
// Content-Length bytes or chunked). Each answer must be 200 and, where
// header is given, carry it.
type load struct {
	addr   string
	reqs   [][]byte // whole requests, asked in turn
	conns  []net.Conn
	rds    []*bufio.Reader
	header string // a header line every answer must carry ("" for none)
}

func newLoad(b *testing.B, base, path string, bodies [][]byte, conns int, header string) *load {
	b.Helper()
	u, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	l := &load{addr: u.Host, header: header}
	for _, body := range bodies {
		l.reqs = append(l.reqs, fmt.Appendf(nil, "POST %s%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", u.Path, path, u.Host, len(body), body))
	}
	for range conns {
		c, err := net.Dial("tcp", l.addr)
		if err != nil {
			b.Fatal(err)
		}
		l.conns = append(l.conns, c)
		l.rds = append(l.rds, bufio.NewReaderSize(c, 64<<10))
	}
	b.Cleanup(func() {
		for _, c := range l.conns {
			c.Close()
		}
	})
	return l
}

// run asks n requests over all connections at once and returns the time
// it took and the CPU time (user and system) the process spent meanwhile.
func (l *load) run(b *testing.B, n int) (wall, cpu time.Duration) {
	return l.runFrom(b, 0, n)
}

// runFrom is run asking the requests from the from-th on.
func (l *load) runFrom(b *testing.B, from, n int) (wall, cpu time.Duration) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(l.conns))
	cpu0 := cpuTime()
	start := time.Now()
	for i := range l.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := next.Add(1) - 1
				if k >= int64(n) {
					return
				}
				if _, err := l.conns[i].Write(l.reqs[(int64(from)+k)%int64(len(l.reqs))]); err != nil {
					errs <- err
					return
				}
				if err := readAnswer(l.rds[i], l.header); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	wall, cpu = time.Since(start), cpuTime()-cpu0
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return wall, cpu
}

// readAnswer reads one HTTP/1.1 answer whole.
func readAnswer(r *bufio.Reader, want string) error {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
		return fmt.Errorf("answer %q", line)
	}
	size, chunked, seen := -1, false, want == ""
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		h := bytes.TrimRight(line, "\r\n")
		if len(h) == 0 {
			break
		}
		name, val, _ := bytes.Cut(h, []byte(": "))
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			size, _ = strconv.Atoi(string(val))
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.Equal(val, []byte("chunked"))
		}
		if !seen && string(h) == want {
			seen = true
		}
	}
	if !seen {
		return fmt.Errorf("the answer lacks %q", want)
	}
	if !chunked {
		if size <= 0 {
			return fmt.Errorf("answer without a body")
		}
		_, err := r.Discard(size)
		return err
	}
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(string(bytes.TrimRight(line, "\r\n")), 16, 64)
		if err != nil {
			return fmt.Errorf("chunk size %q", line)
		}
		if _, err := r.Discard(int(n) + 2); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkModelCacheHit: requests answered from the store, 1,000 distinct
// ones asked over and over on 64 connections; reports the median req/s of
// rounds interleaved with the anchor's: the same load generator against a
// trivial server that sends a stored answer as the cache does (net/http,
// Content-Type and Content-Length), with no lookup at all. It bounds what
// the cache could reach on this machine at this load. cpu-us/req is the
// process's CPU time per request (the load generator's included), the
// figure load on the machine changes least.
func BenchmarkModelCacheHit(b *testing.B) {
	sim, err := simmodel.Start(simmodel.Config{}, "")
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	s := benchServer(b, sim)
	c := benchClient()
	const distinct, conns, rounds = 1000, 64, 5
	bodies := make([][]byte, distinct)
	var answer []byte
	for i := range bodies {
		bodies[i] = benchBody(i)
		answer = do(b, c, s.URL+"/chat/completions", bodies[i])
	}
	anchor := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		_, _ = w.Write(answer)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = anchor.Serve(ln) }()
	defer anchor.Close()

	cache := newLoad(b, s.URL, "/chat/completions", bodies, conns, "X-Cairn-Model-Cache: hit")
	trivial := newLoad(b, "http://"+ln.Addr().String()+"/v1", "/chat/completions", bodies, conns, "")
	per := max(b.N/rounds, 1)
	var hit, anc, hitCPU, ancCPU []float64
	b.ResetTimer()
	for range rounds {
		w, cpu := trivial.run(b, per)
		anc = append(anc, float64(per)/w.Seconds())
		ancCPU = append(ancCPU, float64(cpu.Microseconds())/float64(per))
		w, cpu = cache.run(b, per)
		hit = append(hit, float64(per)/w.Seconds())
		hitCPU = append(hitCPU, float64(cpu.Microseconds())/float64(per))
	}
	b.StopTimer()
	b.ReportMetric(median(hit), "req/s")
	b.ReportMetric(median(anc), "anchor-req/s")
	b.ReportMetric(median(hitCPU), "cpu-us/req")
	b.ReportMetric(median(ancCPU), "anchor-cpu-us/req")
	if f := s.Counts().Forwarded; f != distinct {
		b.Fatalf("forwarded %d, want %d", f, distinct)
	}
}

// BenchmarkModelCacheHitResumed: hits as a resumed run asks them: b.N
// distinct requests answered before (stored by an earlier process), each
// asked once of a cache just started, so that every answer is read from
// the store's log; 64 connections; the median req/s of 5 rounds.
func BenchmarkModelCacheHitResumed(b *testing.B) {
	sim, err := simmodel.Start(simmodel.Config{}, "")
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	const conns, rounds = 64, 5
	per := max(b.N/rounds, conns)
	dir := b.TempDir()
	st, err := items.OpenStore(dir, items.StoreOptions{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	// One answer from the model, stored under every request's key as
	// the cache would have stored it.
	answer := do(b, benchClient(), sim.URL+"/chat/completions", benchBody(0))
	out, _ := json.Marshal((&Stored{Format: storedFormat, Status: 200, ContentType: "application/json", Body: answer, Path: "/v1/chat/completions", Model: "sim-model"}))
	bodies := make([][]byte, rounds*per)
	var recs []items.Record
	for i := range bodies {
		bodies[i] = benchBody(i)
		req, err := Parse("/v1/chat/completions", bodies[i])
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, items.Record{Key: req.Key("", 0), Result: items.Result{Outputs: out}})
	}
	if err := st.PutBatch(recs); err != nil {
		b.Fatal(err)
	}
	st.Close()
	s := benchServer2(b, sim, dir)
	l := newLoad(b, s.URL, "/chat/completions", bodies, conns, "X-Cairn-Model-Cache: hit")
	var rate, cpus []float64
	b.ResetTimer()
	for r := range rounds {
		w, cpu := l.runFrom(b, r*per, per)
		rate = append(rate, float64(per)/w.Seconds())
		cpus = append(cpus, float64(cpu.Microseconds())/float64(per))
	}
	b.StopTimer()
	b.ReportMetric(median(rate), "req/s")
	b.ReportMetric(median(cpus), "cpu-us/req")
	if c := s.Counts(); c.Forwarded != 0 || c.FromStore != int64(len(bodies)) {
		b.Fatalf("not every request was answered from the store: %+v", c)
	}
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	sort.Float64s(v)
	return v[len(v)/2]
}

// BenchmarkModelCacheMiss: one client, each request new; reports the
// median latency straight to the simulated model and through the cache
// (forwarded and stored), and their difference.
func BenchmarkModelCacheMiss(b *testing.B) {
	sim, err := simmodel.Start(simmodel.Config{}, "")
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	s := benchServer(b, sim)
	c := benchClient()
	p50 := func(url string, off int) float64 {
		lat := make([]float64, b.N)
		for i := range b.N {
			t := time.Now()
			do(b, c, url, benchBody(off+i))
			lat[i] = float64(time.Since(t).Microseconds())
		}
		return median(lat)
	}
	do(b, c, sim.URL+"/chat/completions", benchBody(-1))
	do(b, c, s.URL+"/chat/completions", benchBody(-2))
	b.ResetTimer()
	direct := p50(sim.URL+"/chat/completions", 1_000_000)
	cached := p50(s.URL+"/chat/completions", 2_000_000)
	b.ReportMetric(direct, "direct-p50-us")
	b.ReportMetric(cached, "miss-p50-us")
	b.ReportMetric(cached-direct, "added-p50-us")
}

// discard is a ResponseWriter that keeps nothing but the status.
type discard struct {
	h      http.Header
	status int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(status int)      { d.status = status }

// hitRequest asks s, in this goroutine and without a connection, one request
// it has the answer to; it returns the answer's status.
func hitRequest(s *Server, body []byte) int {
	r, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	w := &discard{h: http.Header{}}
	s.ServeHTTP(w, r)
	return w.status
}

// BenchmarkModelCacheHitHandler: the cache's own work for a hit (the body
// read, parsed, keyed, looked up, answered), without HTTP or connections.
func BenchmarkModelCacheHitHandler(b *testing.B) {
	sim, err := simmodel.Start(simmodel.Config{}, "")
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	s := benchServer(b, sim)
	body := benchBody(7)
	do(b, benchClient(), s.URL+"/chat/completions", body)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if st := hitRequest(s, body); st != 200 {
			b.Fatalf("status %d", st)
		}
	}
}
