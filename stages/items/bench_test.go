package items

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"testing"
)

// BenchmarkEvaluateNoopWorker pushes b.N items through the worker protocol
// to a worker that answers at once, with a durable store (fsync per group
// commit): ns/op is cairn's cost per item, keys, claims, pipes, JSON and
// storage included.
func BenchmarkEvaluateNoopWorker(b *testing.B) {
	for _, tc := range []struct{ replicas, inFlight int }{{1, 256}, {2, 256}} {
		b.Run(fmt.Sprintf("replicas=%d/in-flight=%d", tc.replicas, tc.inFlight), func(b *testing.B) {
			items := makeItems(b.N)
			store, err := OpenStore(b.TempDir(), StoreOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			b.ResetTimer()
			sum, err := Evaluate(context.Background(), Config{
				Worker:       self(b),
				Env:          helperEnvFor("noop"),
				Items:        items,
				BundleDigest: "sha256:bundle",
				ModelID:      "model",
				WorkerDigest: "sha256:noop",
				Replicas:     tc.replicas,
				MaxInFlight:  tc.inFlight,
				Store:        store,
			})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if sum.Evaluated != b.N {
				b.Fatalf("evaluated %d of %d", sum.Evaluated, b.N)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkOpenStore1M opens a store of 1,000,000 results and loads its
// index: what a resumed evaluation reads before it sends anything.
func BenchmarkOpenStore1M(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	store, err := OpenStore(dir, StoreOptions{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]Record, 0, 10_000)
	for i := range n {
		var buf [8]byte
		binary.LittleEndian.PutUint64(buf[:], uint64(i))
		sum := sha256.Sum256(buf[:])
		sc := float64(i%2) * 1.0
		recs = append(recs, Record{Key: hex.EncodeToString(sum[:]), Result: Result{Score: &sc, Charged: 1}})
		if len(recs) == cap(recs) {
			if err := store.PutBatch(recs); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	if err := store.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		s, err := OpenStore(dir, StoreOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if s.Len() != n {
			b.Fatalf("opened %d items, want %d", s.Len(), n)
		}
		s.Close()
	}
}

// scoresBench is what the scores benchmarks write: n items, each with a
// score and outputs, whose results are in the store (Cached, Result nil)
// or in memory (Result set).
func scoresBench(n int, inMemory bool) (Summary, []Record) {
	return scoresBenchOutputs(n, inMemory, `{"answer":"%d"}`)
}

// scoresBenchOutputs is scoresBench with each item's outputs made of
// format and the item's number.
func scoresBenchOutputs(n int, inMemory bool, format string) (Summary, []Record) {
	recs := make([]Record, n)
	sum := Summary{Items: make([]ItemOutcome, n)}
	for i := range n {
		var buf [8]byte
		binary.LittleEndian.PutUint64(buf[:], uint64(i))
		h := sha256.Sum256(buf[:])
		sc := float64(i % 2)
		key := hex.EncodeToString(h[:])
		recs[i] = Record{Key: key, Result: Result{Score: &sc, Charged: 1, Outputs: json.RawMessage(fmt.Sprintf(format, i))}}
		sum.Items[i] = ItemOutcome{ID: fmt.Sprintf("q%d", i), Key: key, Score: &sc, Cached: !inMemory, Done: true}
		if inMemory {
			sum.Items[i].Result = &recs[i].Result
		}
	}
	return sum, recs
}

// BenchmarkWriteScoresFromStore writes the scores file of an evaluation
// whose 50,000 items were all in the store: their outputs are read from
// the log (what a resumed evaluation does at its end).
func BenchmarkWriteScoresFromStore(b *testing.B) {
	dir := b.TempDir()
	store, err := OpenStore(dir, StoreOptions{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	sum, recs := scoresBench(50_000, false)
	if err := store.PutBatch(recs); err != nil {
		b.Fatal(err)
	}
	store.Close()
	if store, err = OpenStore(dir, StoreOptions{}); err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	b.ResetTimer()
	for b.Loop() {
		if err := sum.WriteScores(io.Discard, store); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteScoresEvaluated writes the scores file of 50,000 items
// just evaluated: their results are in memory (what an evaluation does at
// its end, while its workers exit).
func BenchmarkWriteScoresEvaluated(b *testing.B) {
	benchWriteScoresEvaluated(b, `{"answer":"%d"}`)
}

// BenchmarkWriteScoresSentences is BenchmarkWriteScoresEvaluated with
// outputs in sentences, as a model answers: spaces in their strings.
func BenchmarkWriteScoresSentences(b *testing.B) {
	benchWriteScoresEvaluated(b, `{"answer":"The answer is %d.","reasoning":"Add the two numbers, then check the sum."}`)
}

func benchWriteScoresEvaluated(b *testing.B, format string) {
	sum, _ := scoresBenchOutputs(50_000, true, format)
	st, err := OpenStore(b.TempDir(), StoreOptions{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for b.Loop() {
		if err := sum.WriteScores(io.Discard, st); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCanonicalMembers canonicalizes a dataset of 2,000 short
// question items, as an evaluate node does with its items before keying
// them: ns/op is that step of the node's start.
func BenchmarkCanonicalMembers(b *testing.B) {
	raws := make([]json.RawMessage, 2000)
	for i := range raws {
		raws[i] = json.RawMessage(fmt.Sprintf(`{"id":"q%d","question":"What is %d + %d?","answer":"%d"}`, i, i, i+1, 2*i+1))
	}
	b.SetBytes(int64(len(raws[0]) * len(raws)))
	for b.Loop() {
		if _, _, errs := CanonicalMembers(raws, "id"); errs[0] != nil {
			b.Fatal(errs[0])
		}
	}
}

// BenchmarkReadReply reads a reply line as handle does: decodeReply, and
// json.Unmarshal (what handle did before it, and does for other lines).
func BenchmarkReadReply(b *testing.B) {
	line := []byte(`{"id":"q1234","score":1,"charged":1,"outputs":{"answer":"2469"}}` + "\n")
	b.Run("decodeReply", func(b *testing.B) {
		var c canonicalizer
		for b.Loop() {
			var r response
			if !decodeReply(line, &r, &c) {
				b.Fatal("left to Unmarshal")
			}
		}
	})
	b.Run("Unmarshal", func(b *testing.B) {
		for b.Loop() {
			var r response
			if err := json.Unmarshal(line, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
