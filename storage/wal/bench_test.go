package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// bigLog is the 1,000,000-record file BenchmarkRead1M reads, built once per test
// binary and removed by TestMain.
var bigLog struct {
	once    sync.Once
	dir     string
	path    string
	records int
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bigLog.dir != "" {
		os.RemoveAll(bigLog.dir)
	}
	os.Exit(code)
}

// BenchmarkAppendGroupCommit: 8 producers call Append in a loop; b.N is the total
// number of records. Reports throughput, the Append latency a producer sees, and
// how many records each commit carried.
func BenchmarkAppendGroupCommit(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"durable", Options{}},
		{"nosync", Options{NoSync: true}},
		{"durable-shared", Options{Shared: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchAppend(b, 8, bc.opts, Durable)
		})
	}
}

// BenchmarkAppendWritten: one producer appends Written records, one at a
// time, as an apply commits a node's record to the cache index (shared)
// and journals a node's start (private): the latency of a lone Append,
// which commits on the caller's goroutine when no commit is under way.
// The idle cases pause 200 µs between appends, as an apply does between
// nodes, so that every Append finds the log idle (p50-µs is the figure to
// read there; ns/op counts the pauses).
func BenchmarkAppendWritten(b *testing.B) {
	for _, bc := range []struct {
		name  string
		opts  Options
		pause time.Duration
	}{
		{"private", Options{}, 0},
		{"shared", Options{Shared: true}, 0},
		{"private-idle", Options{}, 200 * time.Microsecond},
		{"shared-idle", Options{Shared: true}, 200 * time.Microsecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchAppendPaced(b, 1, bc.opts, Written, bc.pause)
		})
	}
}

func benchAppend(b *testing.B, producers int, opts Options, d Durability) {
	benchAppendPaced(b, producers, opts, d, 0)
}

func benchAppendPaced(b *testing.B, producers int, opts Options, d Durability, pause time.Duration) {
	path := filepath.Join(b.TempDir(), "log")
	l, err := Open(path, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.ReportAllocs()
	lat := make([][]time.Duration, producers)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for g := 0; g < producers; g++ {
		n := b.N / producers
		if g < b.N%producers {
			n++
		}
		lat[g] = make([]time.Duration, 0, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := payload(g, 100)
			for i := 0; i < n; i++ {
				t0 := time.Now()
				if err := l.Append([][]byte{p}, d); err != nil {
					b.Error(err)
					return
				}
				lat[g] = append(lat[g], time.Since(t0))
				if pause > 0 {
					time.Sleep(pause)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()

	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(q float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[int(q*float64(len(all)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	if c := l.commits.Load(); c > 0 {
		b.ReportMetric(float64(b.N)/float64(c), "records/commit")
	}
}

// BenchmarkRead1M reads a log of 1,000,000 records of 80 to 120 bytes.
func BenchmarkRead1M(b *testing.B) {
	const records = 1_000_000
	bigLog.once.Do(func() {
		bigLog.dir, bigLog.err = os.MkdirTemp("", "wal-bench-")
		if bigLog.err != nil {
			return
		}
		bigLog.path = filepath.Join(bigLog.dir, "log")
		l, err := Open(bigLog.path, Options{NoSync: true})
		if err != nil {
			bigLog.err = err
			return
		}
		batch := make([][]byte, 0, 10_000)
		for i := 0; i < records; i++ {
			batch = append(batch, payload(i, 80+i%41))
			if len(batch) == cap(batch) {
				if err := l.Append(batch, Durable); err != nil {
					bigLog.err = err
					return
				}
				batch = batch[:0]
			}
		}
		bigLog.records = records
		bigLog.err = l.Close()
	})
	if bigLog.err != nil {
		b.Fatal(bigLog.err)
	}
	fi, err := os.Stat(bigLog.path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var sum int
		st, err := Read(bigLog.path, func(_ int64, p []byte) error {
			sum += len(p)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if st.Records != bigLog.records || int64(sum) != st.Bytes {
			b.Fatal(fmt.Sprintf("read %d records, %d bytes; want %d records", st.Records, sum, bigLog.records))
		}
	}
	b.ReportMetric(float64(records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
