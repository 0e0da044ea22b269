// Command itemstore writes or opens an evaluate node's item store of N
// items (stages/items), for bench/rss.sh: opening it is timed, and its
// peak RSS taken, in a process of its own (/usr/bin/time -v), apart from
// the process that wrote it.
//
//	itemstore -write -n 1000000 DIR   # a store of N results under DIR
//	itemstore DIR                     # open it; prints items and seconds
package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/cairn-run/cairn/stages/items"
)

func main() {
	write := flag.Bool("write", false, "write a store of -n items instead of opening one")
	n := flag.Int("n", 1_000_000, "items to write")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: itemstore [-write -n N] DIR")
		os.Exit(2)
	}
	dir := flag.Arg(0)
	if *write {
		if err := writeStore(dir, *n); err != nil {
			fmt.Fprintln(os.Stderr, "itemstore:", err)
			os.Exit(1)
		}
		return
	}
	start := time.Now()
	s, err := items.OpenStore(dir, items.StoreOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "itemstore:", err)
		os.Exit(1)
	}
	took := time.Since(start)
	fmt.Printf("items=%d open_s=%.3f\n", s.Len(), took.Seconds())
	_ = s.Close()
}

// writeStore writes n results, keyed like BenchmarkOpenStore1M's.
func writeStore(dir string, n int) error {
	s, err := items.OpenStore(dir, items.StoreOptions{NoSync: true})
	if err != nil {
		return err
	}
	recs := make([]items.Record, 0, 10_000)
	for i := range n {
		var buf [8]byte
		binary.LittleEndian.PutUint64(buf[:], uint64(i))
		sum := sha256.Sum256(buf[:])
		sc := float64(i % 2)
		recs = append(recs, items.Record{Key: hex.EncodeToString(sum[:]), Result: items.Result{Score: &sc, Charged: 1}})
		if len(recs) == cap(recs) || i == n-1 {
			if err := s.PutBatch(recs); err != nil {
				return err
			}
			recs = recs[:0]
		}
	}
	return s.Close()
}
