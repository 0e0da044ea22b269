package simlib

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/storage/atomicfile"
)

// Env is what a simulated program sees of its process: arguments, output
// streams, environment, clock and working directory.
type Env struct {
	Args   []string // without the program name
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	Now    func() time.Time
	// Dir resolves relative paths (config, outputs, $SIM_RUN_LOG); empty
	// means the process working directory.
	Dir string
	Pid int
	// IgnoreSIGTERM is called when the config asks the program to ignore
	// SIGTERM; nil when signals are not wired (tests).
	IgnoreSIGTERM func()
}

// Outcome is how a simulated program ended.
type Outcome struct {
	// Code is the exit status.
	Code int
	// Signal is set when a signal ended the program; the caller re-raises
	// it so the parent sees a death by signal, as with a real Python tool.
	Signal syscall.Signal
}

// SignalError is the cancellation cause [Main] gives a program's context
// when a signal arrives.
type SignalError struct{ Signal syscall.Signal }

func (e *SignalError) Error() string { return "simlib: " + e.Signal.String() }

// Exit statuses of the simulated programs.
const (
	ExitOK    = 0
	ExitFail  = 1 // invalid config, no GPU, OOM, preflight failure
	ExitUsage = 2
	ExitCrash = 3
)

// OOMMessage is the line printed by a simulated CUDA out-of-memory failure.
const OOMMessage = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"

// RunLogRecord is one line of $SIM_RUN_LOG, appended when a run ends
// (normally, by exit status, or by SIGTERM/SIGINT; a run killed with
// SIGKILL leaves no line).
type RunLogRecord struct {
	Program            string `json:"program"`
	Config             string `json:"config"`
	Pid                int    `json:"pid"`
	CUDAVisibleDevices string `json:"cuda_visible_devices"`
	StartNS            int64  `json:"start_ns"`
	EndNS              int64  `json:"end_ns"`
	ExitCode           int    `json:"exit_code"`
	Signal             string `json:"signal,omitempty"`
}

// RulerResult is the content of summary_ruler_submissions/<tag>/<name>/latest.json.
type RulerResult struct {
	Name        string  `json:"name"`
	Config      string  `json:"config"`
	ContentHash string  `json:"content_hash"`
	Accuracy    float64 `json:"accuracy"`
	NumExamples int     `json:"num_examples"`
	GPU         string  `json:"gpu"`
	Simulated   bool    `json:"simulated"`
}

// AIME24Result is the content of summary_submissions/<tag>/<name>/latest.json
// and of the timestamped file beside it.
type AIME24Result struct {
	Name        string `json:"name"`
	Config      string `json:"config"`
	ContentHash string `json:"content_hash"`
	Metrics
	GPU       string `json:"gpu"`
	Simulated bool   `json:"simulated"`
}

func usage(program string) string {
	switch program {
	case Preflight:
		return "usage: preflight CONFIG.json\n\n" +
			"SIMULATED stand-in for check_engine_config(CONFIG) (cairn sim/work).\n" +
			"Exits 0 when the config is valid, 1 with the problem on stderr otherwise.\n"
	case Ruler:
		return "usage: ruler --config submissions/<tag>/<name>.json\n\n" +
			"SIMULATED stand-in for algorithm_scientist/run_ruler.py (cairn sim/work).\n" +
			"Needs CUDA_VISIBLE_DEVICES; writes summary_ruler_submissions/<tag>/<name>/latest.json\n" +
			"with a simulated accuracy. No model runs and no GPU is used.\n"
	case AIME24:
		return "usage: aime24 --config submissions/<tag>/<name>.json\n\n" +
			"SIMULATED stand-in for algorithm_scientist/run_submission_aime24.py (cairn sim/work).\n" +
			"Needs CUDA_VISIBLE_DEVICES; writes summary_submissions/<tag>/<name>/<UTC time>__<hash>.json\n" +
			"and latest.json with simulated metrics. No model runs and no GPU is used.\n"
	}
	return "usage: simulated program " + program + "\n"
}

// Run runs the simulated program (Preflight, Ruler or AIME24) to its end.
// Cancelling ctx with a [SignalError] cause stands for that signal's
// arrival: the run stops and reports it in the Outcome.
func Run(ctx context.Context, program string, env Env) Outcome {
	if env.Now == nil {
		env.Now = time.Now
	}
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	r := &runner{program: program, env: env, start: env.Now()}
	out := r.run(ctx)
	r.logRun(out)
	return out
}

type runner struct {
	program string
	env     Env
	start   time.Time
	config  string // as given on the command line
	cvd     string
}

func (r *runner) path(p string) string {
	if r.env.Dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(r.env.Dir, p)
}

func (r *runner) failf(code int, format string, args ...any) Outcome {
	fmt.Fprintf(r.env.Stderr, format+"\n", args...)
	return Outcome{Code: code}
}

func (r *runner) parseArgs() (ok bool) {
	fs := flag.NewFlagSet(r.program, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cfg string
	if r.program != Preflight {
		fs.StringVar(&cfg, "config", "", "config JSON under submissions/")
	}
	if err := fs.Parse(r.env.Args); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(r.env.Stderr, "%s: %v\n", r.program, err)
		}
		return false
	}
	if r.program == Preflight {
		if fs.NArg() != 1 {
			return false
		}
		cfg = fs.Arg(0)
	} else if cfg == "" || fs.NArg() != 0 {
		return false
	}
	r.config = cfg
	return true
}

func (r *runner) run(ctx context.Context) Outcome {
	switch r.program {
	case Preflight, Ruler, AIME24:
	default:
		return r.failf(ExitUsage, "simlib: unknown program %q", r.program)
	}
	if !r.parseArgs() {
		fmt.Fprint(r.env.Stderr, usage(r.program))
		return Outcome{Code: ExitUsage}
	}
	r.cvd = r.env.Getenv("CUDA_VISIBLE_DEVICES")

	cfg, err := LoadConfig(r.path(r.config))
	if err == nil && r.program != Preflight {
		err = cfg.Validate()
	}
	if err != nil {
		if r.program == Preflight {
			return r.failf(ExitFail, "[simulated preflight] %s: %v", r.config, err)
		}
		return r.failf(ExitFail, "%sValueError: %v", traceback(r.program, "load_config"), err)
	}
	var devices []string
	if r.program != Preflight {
		devices = visibleDevices(r.cvd)
		if len(devices) == 0 {
			return r.failf(ExitFail, "no GPU visible (CUDA_VISIBLE_DEVICES=%q)", r.cvd)
		}
		fmt.Fprintf(r.env.Stdout, "[simulated %s] CUDA_VISIBLE_DEVICES=%s: %d device(s): %s\n",
			r.program, r.cvd, len(devices), strings.Join(devices, ", "))
	}
	fmt.Fprintf(r.env.Stdout, "[simulated %s] config %s (content hash %s)\n", r.program, r.config, cfg.ContentHash[:12])

	fail := cfg.Sim.AppliesTo(r.program)
	if fail && cfg.Sim.IgnoreSIGTERM && r.env.IgnoreSIGTERM != nil {
		r.env.IgnoreSIGTERM()
	}
	if out, stopped := r.sleep(ctx, Duration(cfg, r.program)); stopped {
		return out
	}
	if fail {
		switch {
		case cfg.Sim.Hang:
			fmt.Fprintf(r.env.Stdout, "[simulated %s] hanging until a signal ends it (sim.hang)\n", r.program)
			<-ctx.Done()
			return r.interrupted(ctx)
		case cfg.Sim.Crash:
			return r.failf(ExitCrash, "%sRuntimeError: simulated crash in %s (sim.crash)", traceback(r.program, "generate"), r.program)
		case cfg.Sim.OOM:
			return r.failf(ExitFail, "%s%s", traceback(r.program, "generate"), OOMMessage)
		}
	}

	var out Outcome
	switch r.program {
	case Preflight:
		out = r.preflight(cfg)
	case Ruler:
		out = r.ruler(cfg, devices)
	case AIME24:
		out = r.aime24(cfg, devices)
	}
	if out.Code == ExitOK && fail && cfg.Sim.ExitCode != 0 {
		fmt.Fprintf(r.env.Stderr, "[simulated %s] exiting with status %d (sim.exit_code)\n", r.program, cfg.Sim.ExitCode)
		out.Code = cfg.Sim.ExitCode
	}
	return out
}

// sleep waits d or until ctx ends; stopped reports the latter.
func (r *runner) sleep(ctx context.Context, d time.Duration) (Outcome, bool) {
	if d <= 0 {
		if ctx.Err() != nil {
			return r.interrupted(ctx), true
		}
		return Outcome{}, false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return Outcome{}, false
	case <-ctx.Done():
		return r.interrupted(ctx), true
	}
}

func (r *runner) interrupted(ctx context.Context) Outcome {
	sig := syscall.SIGTERM
	var se *SignalError
	if errors.As(context.Cause(ctx), &se) {
		sig = se.Signal
	}
	fmt.Fprintf(r.env.Stderr, "[simulated %s] %v\n", r.program, sig)
	return Outcome{Code: 128 + int(sig), Signal: sig}
}

func (r *runner) preflight(cfg *Config) Outcome {
	if err := cfg.Validate(); err != nil {
		return r.failf(ExitFail, "[simulated preflight] %s: %v", r.config, err)
	}
	if cfg.Sim.PreflightError != "" {
		return r.failf(ExitFail, "[simulated preflight] %s: %s", r.config, cfg.Sim.PreflightError)
	}
	fmt.Fprintf(r.env.Stdout, "[simulated preflight] %s: ok (topk_val=%d, topk_ratio=%g)\n", r.config, cfg.TopkVal, cfg.TopkRatio)
	return Outcome{}
}

func (r *runner) ruler(cfg *Config, devices []string) Outcome {
	dir, err := MirrorDir(r.config, "summary_ruler_submissions")
	if err != nil {
		return r.failf(ExitFail, "%v", err)
	}
	res := RulerResult{
		Name:        configName(r.config),
		Config:      r.config,
		ContentHash: cfg.ContentHash,
		Accuracy:    RulerAccuracy(cfg),
		NumExamples: RulerExamples,
		GPU:         strings.Join(devices, ","),
		Simulated:   true,
	}
	latest := filepath.Join(dir, "latest.json")
	if err := writeJSONAtomic(r.path(latest), res); err != nil {
		return r.failf(ExitFail, "[simulated ruler] %v", err)
	}
	fmt.Fprintf(r.env.Stdout, "[simulated ruler] accuracy %.4f on %d examples -> %s\n", res.Accuracy, RulerExamples, latest)
	return Outcome{}
}

func (r *runner) aime24(cfg *Config, devices []string) Outcome {
	dir, err := MirrorDir(r.config, "summary_submissions")
	if err != nil {
		return r.failf(ExitFail, "%v", err)
	}
	res := AIME24Result{
		Name:        configName(r.config),
		Config:      r.config,
		ContentHash: cfg.ContentHash,
		Metrics:     AIME24Metrics(cfg),
		GPU:         strings.Join(devices, ","),
		Simulated:   true,
	}
	stamped := filepath.Join(dir, r.env.Now().UTC().Format("20060102T150405Z")+"__"+cfg.ContentHash[:12]+".json")
	if err := writeJSONAtomic(r.path(stamped), res); err != nil {
		return r.failf(ExitFail, "[simulated aime24] %v", err)
	}
	latest := filepath.Join(dir, "latest.json")
	if err := writeJSONAtomic(r.path(latest), res); err != nil {
		return r.failf(ExitFail, "[simulated aime24] %v", err)
	}
	fmt.Fprintf(r.env.Stdout, "[simulated aime24] mean@16 %.4f pass@16 %.4f throughput %.1f tok/s e2e %.1f s -> %s\n",
		res.Mean16, res.Pass16, res.Throughput, res.E2ETime, stamped)
	return Outcome{}
}

func (r *runner) logRun(out Outcome) {
	p := r.env.Getenv("SIM_RUN_LOG")
	if p == "" {
		return
	}
	rec := RunLogRecord{
		Program:            r.program,
		Config:             r.config,
		Pid:                r.env.Pid,
		CUDAVisibleDevices: r.cvd,
		StartNS:            r.start.UnixNano(),
		EndNS:              r.env.Now().UnixNano(),
		ExitCode:           out.Code,
	}
	if out.Signal != 0 {
		rec.ExitCode = -1
		rec.Signal = out.Signal.String()
	}
	line, _ := json.Marshal(rec)
	line = append(line, '\n')
	// O_APPEND makes each single write land whole at the end, so concurrent
	// runs never interleave their lines.
	f, err := os.OpenFile(r.path(p), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintf(r.env.Stderr, "[simulated %s] SIM_RUN_LOG: %v\n", r.program, err)
		return
	}
	defer f.Close()
	if _, err := f.Write(line); err != nil {
		fmt.Fprintf(r.env.Stderr, "[simulated %s] SIM_RUN_LOG: %v\n", r.program, err)
	}
}

// MirrorDir maps a config path under a "submissions" directory to the
// matching result directory under summaryRoot, as the real runners do:
// submissions/<tag>/<name>.json becomes <summaryRoot>/<tag>/<name>, and
// /repo/submissions/t/n.json becomes /repo/<summaryRoot>/t/n.
func MirrorDir(configPath, summaryRoot string) (string, error) {
	parts := strings.Split(filepath.ToSlash(filepath.Clean(configPath)), "/")
	i := len(parts) - 2
	for ; i >= 0 && parts[i] != "submissions"; i-- {
	}
	last := parts[len(parts)-1]
	if i < 0 || !strings.HasSuffix(last, ".json") || last == ".json" {
		return "", fmt.Errorf("%w: config %q is not a submissions/<tag>/<name>.json file", ErrInvalidConfig, configPath)
	}
	parts[i] = summaryRoot
	parts[len(parts)-1] = strings.TrimSuffix(last, ".json")
	return filepath.FromSlash(strings.Join(parts, "/")), nil
}

func configName(p string) string {
	return strings.TrimSuffix(filepath.Base(p), ".json")
}

// visibleDevices lists the device ids in a CUDA_VISIBLE_DEVICES value; as
// with CUDA, an empty value or a leading -1 hides every device.
func visibleDevices(cvd string) []string {
	var ids []string
	for _, s := range strings.Split(cvd, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if s == "-1" {
			break
		}
		ids = append(ids, s)
	}
	return ids
}

func traceback(program, fn string) string {
	script := map[string]string{
		Preflight: "<string>",
		Ruler:     "algorithm_scientist/run_ruler.py",
		AIME24:    "algorithm_scientist/run_submission_aime24.py",
	}[program]
	return "Traceback (most recent call last):\n" +
		fmt.Sprintf("  File %q, line 212, in <module>\n    main()\n", script) +
		fmt.Sprintf("  File %q, line 187, in main\n    results = engine.%s(batch)\n", script, fn) +
		"  [simulated traceback: cairn sim/work]\n"
}

// writeJSONAtomic writes v as indented JSON to path through a temporary
// file in the same directory and a rename, so readers see the old file or
// the new one, never a partial one.
func writeJSONAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'), true)
}
