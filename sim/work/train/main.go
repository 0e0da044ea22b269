// Command train is a SIMULATED stand-in for seed 003's instrumented training
// job (run_grpo_instrumented.slurm), for running pipelines/memory_decision.hcl
// on machines without GPUs. It trains nothing and measures nothing: its peak
// GPU memory is a made-up function of the model family, dataset, actor micro
// batch, reservation and seed, reported through cairn's simulated GPU
// inventory (CAIRN_SIM_GPU_MEMORY) so that cairn's sampler sees it as it
// would see a real job's through NVML.
//
//	train --model-family F --dataset D --actor-micro-batch N --reservation R --seed S --slot ID
//	      [--duration 300ms] [--faults FILE] [--state DIR]
//
// Above 41000 MiB it fails as a CUDA out-of-memory error would. A faults
// file (JSON: slot id -> fault) makes chosen slots fail:
//
//	{"SLOT": {"setup": "port_collision", "times": 1}}   fail setup the first `times` attempts
//	{"SLOT": {"hang": true}}                            never end (cairn's timeout ends it)
//	{"SLOT": {"crash": true}}                           exit 3 with a traceback
//	{"SLOT": {"oom": true}}                             a CUDA out-of-memory error
//
// The setup failures print the messages of the seed's documented setup
// classes: missing_dependency, missing_data, gpu_visibility,
// port_collision, corrupted_artifact. --state keeps the count of attempts
// per slot (default: $CAIRN_WORKSPACE/.sim-train).
package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-run/cairn/gpu"
)

type fault struct {
	Setup string `json:"setup"`
	Times int    `json:"times"`
	Hang  bool   `json:"hang"`
	Crash bool   `json:"crash"`
	OOM   bool   `json:"oom"`
}

var setupMessages = map[string]string{
	"missing_dependency": "ModuleNotFoundError: No module named 'verl'",
	"missing_data":       "FileNotFoundError: [Errno 2] No such file or directory: 'data/gsm8k/train.parquet'",
	"gpu_visibility":     "RuntimeError: CUDA error: invalid device ordinal (CUDA_VISIBLE_DEVICES does not match the allocation)",
	"port_collision":     "RuntimeError: The server socket has failed to listen on any local network address. port: 29500: [errno: 98] Address already in use",
	"corrupted_artifact": "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory (corrupted checkpoint artifact)",
}

// OOMMiB is where the simulated job runs out of memory.
const OOMMiB = 41000

func main() {
	family := flag.String("model-family", "", "model family (qwen25_3b, phi4_mini)")
	dataset := flag.String("dataset", "", "dataset (gsm8k, math)")
	mb := flag.Int("actor-micro-batch", 0, "actor micro batch")
	res := flag.Float64("reservation", 0, "memory reservation")
	seed := flag.Int("seed", 0, "seed")
	slot := flag.String("slot", "", "the protocol's slot id")
	dur := flag.Duration("duration", 300*time.Millisecond, "simulated training time")
	faults := flag.String("faults", "", "JSON file of slot id -> fault")
	state := flag.String("state", "", "folder counting attempts per slot")
	flag.Parse()
	fmt.Printf("SIMULATED training: %s on %s, micro batch %d, reservation %g, seed %d (slot %s)\n", *family, *dataset, *mb, *res, *seed, *slot)

	var f fault
	if *faults != "" {
		b, err := os.ReadFile(*faults)
		if err != nil {
			fatal(2, "cannot read the faults file: %v", err)
		}
		var all map[string]fault
		if err := json.Unmarshal(b, &all); err != nil {
			fatal(2, "faults file %s: %v", *faults, err)
		}
		f = all[*slot]
	}
	attempt := countAttempt(*state, *slot)
	switch {
	case f.Setup != "" && attempt <= max(f.Times, 1):
		msg, ok := setupMessages[f.Setup]
		if !ok {
			fatal(2, "unknown setup fault %q", f.Setup)
		}
		fatal(1, "%s", msg)
	case f.Crash:
		time.Sleep(*dur / 2)
		fatal(3, "Traceback (most recent call last):\n  File \"main_ppo.py\", line 1\nSegmentation fault in the rollout worker")
	case f.Hang:
		report(peakMiB(*family, *dataset, *mb, *res, *seed) / 2)
		for {
			time.Sleep(time.Hour)
		}
	}
	peak := peakMiB(*family, *dataset, *mb, *res, *seed)
	if f.OOM {
		peak = OOMMiB + 1
	}
	// Ramp up, hold the peak long enough for a 100 ms sampler, end.
	report(peak * 0.6)
	time.Sleep(*dur / 3)
	if peak > OOMMiB {
		report(OOMMiB)
		time.Sleep(*dur / 3)
		clear()
		fatal(1, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (SIMULATED)")
	}
	report(peak)
	time.Sleep(*dur * 2 / 3)
	clear()
	fmt.Printf("SIMULATED peak %.0f MiB per GPU\n", peak)
}

// peakMiB is the simulated peak per GPU.
func peakMiB(family, dataset string, mb int, res float64, seed int) float64 {
	base := map[string]float64{"qwen25_3b": 28000, "phi4_mini": 31000}[family]
	if base == 0 {
		base = 30000
	}
	p := base + float64(mb-8)/8*5000 + (res-0.6)*20000
	if dataset == "math" {
		p += 400
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%d/%g/%d", family, dataset, mb, res, seed)))
	return p + float64(binary.BigEndian.Uint64(h[:8])%2001) - 1000
}

func devices() []int {
	var out []int
	for _, d := range strings.Split(os.Getenv("CUDA_VISIBLE_DEVICES"), ",") {
		if i, err := strconv.Atoi(strings.TrimSpace(d)); err == nil {
			out = append(out, i)
		}
	}
	return out
}

// report says the job uses mib on each of its simulated GPUs.
func report(mib float64) {
	dir := os.Getenv(gpu.EnvSimMemory)
	if dir == "" {
		return
	}
	for _, d := range devices() {
		p := gpu.SimMemoryFile(dir, d, os.Getpid())
		_ = os.MkdirAll(filepath.Dir(p), 0o777)
		tmp := p + ".tmp"
		if os.WriteFile(tmp, []byte(fmt.Sprintf("%.0f\n", mib)), 0o666) == nil {
			_ = os.Rename(tmp, p)
		}
	}
}

func clear() {
	dir := os.Getenv(gpu.EnvSimMemory)
	if dir == "" {
		return
	}
	for _, d := range devices() {
		_ = os.Remove(gpu.SimMemoryFile(dir, d, os.Getpid()))
	}
}

// countAttempt counts this start of slot and returns its number.
func countAttempt(state, slot string) int {
	if state == "" {
		state = filepath.Join(os.Getenv("CAIRN_WORKSPACE"), ".sim-train")
	}
	if slot == "" || state == "" {
		return 1
	}
	_ = os.MkdirAll(state, 0o777)
	f, err := os.OpenFile(filepath.Join(state, slot), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return 1
	}
	_, _ = f.WriteString("x")
	f.Close()
	st, err := os.Stat(filepath.Join(state, slot))
	if err != nil {
		return 1
	}
	return int(st.Size())
}

func fatal(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(code)
}
