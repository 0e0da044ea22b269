// Command cairn-sim-model serves a SIMULATED task model: an OpenAI-compatible
// HTTP server (chat, completions, embeddings, vLLM's tokenizer endpoints) with deterministic
// answers, configurable latency and failure rate, and a request log. It runs
// no model; it stands in for a vLLM replica in tests and demos.
//
// The first line on stdout is the base URL to use as an endpoint
// (http://127.0.0.1:PORT/v1).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/sim/simmodel"
)

type modelList []string

func (m *modelList) String() string { return strings.Join(*m, ",") }

func (m *modelList) Set(v string) error {
	*m = append(*m, v)
	return nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cairn-sim-model", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var models modelList
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on (port 0 picks a free one)")
	fs.Var(&models, "model", "model id to serve (repeatable; default "+simmodel.DefaultModel+")")
	latency := fs.Duration("latency", 0, "delay added to every chat completion")
	failRate := fs.Float64("fail-rate", 0, "share of chat requests answered with HTTP 503 (seeded)")
	wrongRate := fs.Float64("wrong-rate", 0.25, "share of arithmetic questions answered wrongly (by digest of model and messages)")
	seed := fs.Uint64("seed", 0, "seed of the failure draws")
	maxModelLen := fs.Int("max-model-len", 0, "context length in tokens (words of the messages): longer requests get HTTP 400, as from vLLM (0: no limit)")
	requestLog := fs.String("request-log", "", "append one JSON line per chat request to this file")
	port := fs.Int("port", -1, "port to listen on, on 127.0.0.1 (overrides --addr's port)")
	startDelay := fs.Duration("start-delay", 0, "a slow start: wait this long before listening")
	warmup := fs.Duration("warmup", 0, "after listening, answer chat completions with HTTP 503 for this long (GET /health and /v1/models answer)")
	crashAfter := fs.Int("crash-after", 0, "exit with status 3, answering nothing, on the chat request after this many (0: never)")
	hangAfter := fs.Int("hang-after", 0, "hang on the chat request after this many: from then on nothing (GET /health included) is answered, and the process stays alive (0: never)")
	serial := fs.Bool("serial", false, "answer one request at a time, in order, GET /health included: a busy server answers its health path late")
	gpuMiB := fs.Float64("gpu-mib", 0, "on simulated GPUs, report this much device memory in use on each device of CUDA_VISIBLE_DEVICES ("+gpu.EnvSimMemory+")")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `cairn-sim-model: a SIMULATED OpenAI-compatible task model for tests and demos.
It runs no model: answers are a deterministic function of (model, messages).
Arithmetic questions ("What is 17 + 25?") get the number, wrong for a share
--wrong-rate of them; a reflection request (a prompt between triple-backtick
fences and a request for a new instruction) gets that prompt back with a new
simulated quality; anything else gets "simulated answer <digest>".
The first line on stdout is the base URL (http://HOST:PORT/v1); as from vLLM,
the API is served under /v1 (GET /v1/models, POST /v1/chat/completions,
/v1/completions with echo and logprobs, /v1/embeddings; streamed or not),
and vLLM's tokenizer endpoints at the root (GET /tokenizer_info, POST
/tokenize, /detokenize) with a byte-level tokenizer.

Usage: cairn-sim-model [flags]

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cairn-sim-model: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *failRate < 0 || *failRate > 1 || *wrongRate < 0 || *wrongRate > 1 {
		fmt.Fprintln(stderr, "cairn-sim-model: --fail-rate and --wrong-rate are shares between 0 and 1")
		return 2
	}
	cfg := simmodel.Config{
		Models:      models,
		Latency:     *latency,
		FailRate:    *failRate,
		Seed:        *seed,
		WrongRate:   *wrongRate,
		MaxModelLen: *maxModelLen,
		Warmup:      *warmup,
		CrashAfter:  *crashAfter,
		HangAfter:   *hangAfter,
		Serial:      *serial,
		Hang: func() {
			fmt.Fprintf(stderr, "cairn-sim-model: SIMULATED hang after %d chat requests: nothing is answered from now on\n", *hangAfter)
		},
		Crash: func() {
			fmt.Fprintf(stderr, "cairn-sim-model: SIMULATED crash after %d chat requests\n", *crashAfter)
			os.Exit(3)
		},
	}
	if *port >= 0 {
		host, _, err := net.SplitHostPort(*addr)
		if err != nil {
			host = "127.0.0.1"
		}
		*addr = net.JoinHostPort(host, strconv.Itoa(*port))
	}
	if *startDelay > 0 {
		fmt.Fprintf(stderr, "cairn-sim-model: SIMULATED slow start: listening in %s\n", *startDelay)
		time.Sleep(*startDelay)
	}
	if *gpuMiB > 0 {
		reportGPUMemory(*gpuMiB)
	}
	if *requestLog != "" {
		f, err := os.OpenFile(*requestLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "cairn-sim-model: open the request log: %v\n", err)
			return 2
		}
		defer f.Close()
		cfg.RequestLog = f
	}
	srv, err := simmodel.Start(cfg, *addr)
	if err != nil {
		fmt.Fprintf(stderr, "cairn-sim-model: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintln(stdout, srv.URL)
	if len(cfg.Models) == 0 {
		cfg.Models = []string{simmodel.DefaultModel}
	}
	fmt.Fprintf(stderr, "cairn-sim-model: SIMULATED model serving %s at %s\n", strings.Join(cfg.Models, ", "), srv.URL)
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintf(stderr, "cairn-sim-model: shutdown: %v\n", err)
		return 1
	}
	return 0
}

// reportGPUMemory writes mib as this process's use of each simulated GPU
// it sees, where cairn's simulated inventory reads it: the file goes when
// the process has ended, as a real server's memory is freed.
func reportGPUMemory(mib float64) {
	dir := os.Getenv(gpu.EnvSimMemory)
	if dir == "" {
		return
	}
	for _, f := range strings.Split(os.Getenv("CUDA_VISIBLE_DEVICES"), ",") {
		idx, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			continue
		}
		p := gpu.SimMemoryFile(dir, idx, os.Getpid())
		if os.MkdirAll(filepath.Dir(p), 0o777) == nil {
			_ = os.WriteFile(p, []byte(strconv.FormatFloat(mib, 'f', -1, 64)), 0o644)
		}
	}
}
