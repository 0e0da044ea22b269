package modelcache

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-run/cairn/sim/simmodel"
	"github.com/cairn-run/cairn/stages/items"
)

// The figures of make bench (bench/modelcache.sh): requests per second
// answered from the store, and the latency a miss adds to the model's.

func benchServer(b *testing.B, sim *simmodel.Running) *Server {
	b.Helper()
	st, err := items.OpenStore(b.TempDir(), items.StoreOptions{NoSync: true})
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

func do(b *testing.B, c *http.Client, url string, body []byte) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// BenchmarkModelCacheHit: requests answered from the store, 1,000 distinct
// ones asked over and over by 64 concurrent clients; reports req/s.
func BenchmarkModelCacheHit(b *testing.B) {
	sim, err := simmodel.Start(simmodel.Config{}, "")
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	s := benchServer(b, sim)
	c := benchClient()
	const distinct = 1000
	bodies := make([][]byte, distinct)
	for i := range bodies {
		bodies[i] = benchBody(i)
		do(b, c, s.URL+"/chat/completions", bodies[i])
	}
	var n atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			do(b, c, s.URL+"/chat/completions", bodies[n.Add(1)%distinct])
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	if f := s.Counts().Forwarded; f != distinct {
		b.Fatalf("forwarded %d, want %d", f, distinct)
	}
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
		sort.Float64s(lat)
		return lat[len(lat)/2]
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
