// Command itemstore writes or opens an evaluate node's item store of N
// items (stages/items), for bench/rss.sh: opening it is timed, and its
// peak RSS taken, in a process of its own (/usr/bin/time -v), apart from
// the process that wrote it.
//
//	itemstore -write -n 1000000 DIR   # a store of N results under DIR
//	itemstore DIR                     # open it; prints items and seconds
//	itemstore -cpuprofile F DIR       # and writes the open's CPU profile
package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/stages/items"
)

func main() {
	write := flag.Bool("write", false, "write a store of -n items instead of opening one")
	n := flag.Int("n", 1_000_000, "items to write")
	prof := flag.String("cpuprofile", "", "write the open's CPU profile to `file`")
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
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			fmt.Fprintln(os.Stderr, "itemstore:", err)
			os.Exit(1)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "itemstore:", err)
			os.Exit(1)
		}
	}
	cpu0 := cpuTime()
	start := time.Now()
	s, err := items.OpenStore(dir, items.StoreOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "itemstore:", err)
		os.Exit(1)
	}
	took, cpu := time.Since(start), cpuTime()-cpu0
	if *prof != "" {
		pprof.StopCPUProfile()
	}
	fmt.Printf("items=%d open_s=%.3f cpu_s=%.3f\n", s.Len(), took.Seconds(), cpu.Seconds())
	_ = s.Close()
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
