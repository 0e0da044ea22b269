package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/executor/slurm"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/ui"
)

// applyFlags are apply's flags.
type applyFlags struct {
	targets, replace []string
	parallelism      int
	lockTimeout      time.Duration
	waitGPUs         time.Duration
	waitBatch        time.Duration
	asJSON, verbose  bool
	summaries        bool
	only             bool
	executorName     string
	leaveJobs        bool
	withReport       bool
}

// fullPath reports whether the flags ask for the full path, which the
// up-to-date check never takes (see docs/durability.md): a saved plan,
// --target, --replace, --json, --summaries or --report.
func (o *applyFlags) fullPath(saved *plan.File) bool {
	return saved != nil || len(o.targets) > 0 || len(o.replace) > 0 || o.asJSON || o.summaries || o.withReport
}

func (a *app) applyCmd() *cobra.Command {
	var o applyFlags
	cmd := &cobra.Command{
		Use:   "apply [PATH | PLANFILE]",
		Short: "Run the pipeline: cached nodes are restored, the rest run as resources allow",
		Long:  applyLong,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			planArg := strings.Join(args, "")
			saved, args, err := a.savedPlan(args, &o.targets, &o.replace, &o.only)
			if err != nil {
				return err
			}
			// The flags are checked before the up-to-date check: a
			// command line gets the same answer whatever the cache holds.
			if err := checkApplyFlags(cmd, &o); err != nil {
				return err
			}
			// Nothing changed since an apply that ended well: no need to
			// evaluate the pipeline again (see docs/durability.md).
			identity, full := "", o.fullPath(saved)
			if !full && !o.verbose {
				identity = a.memoIdentity(args)
			}
			if m := a.upToDate(identity); m != nil {
				if done, err := a.applyUpToDate(m); done {
					return err
				}
			}
			// Ctrl-C is heard from here on: one pressed while the
			// pipeline loads, or while the cluster's controller is
			// waited for, stops the apply before anything runs rather
			// than being lost (a shell starts a background job with
			// SIGINT ignored until cairn asks for it).
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hard, stopSignals := a.onInterrupt(cancel)
			defer stopSignals()
			explainID := ""
			if o.verbose {
				explainID = a.explainEvaluation(args, full)
			}
			l, cache, p, err := a.loadAndPlan(args, plan.Options{Targets: o.targets, Replace: o.replace, Only: o.only}, false)
			if err != nil {
				return err
			}
			defer cache.Close()
			if err := a.checkSavedPlan(saved, l, p); err != nil {
				return err
			}
			rep := replaceRequested(p)
			debug := a.singleVariantTargets(l.Graph, o.targets)
			if ctx.Err() != nil {
				return &exitError{code: exitInterrupted, msg: "interrupted before anything ran"}
			}
			ex, pool, err := a.executor(ctx, l.Config.Executor, o.executorName, o.leaveJobs)
			if err != nil {
				if ctx.Err() != nil {
					return &exitError{code: exitInterrupted, msg: "interrupted before anything ran (while the executor was set up)"}
				}
				return err
			}
			parallelism := o.parallelism
			if sx, ok := ex.(*slurm.Executor); ok {
				// Nothing the executor started outlives the apply's end.
				defer sx.Close()
				if parallelism == 0 {
					// The cluster's cores, not this machine's, run the nodes.
					parallelism = sx.MaxSubmitted()
				}
			}
			// With --summaries standard output carries the summary lines
			// alone; what goes there otherwise goes to standard error.
			progress, summaryOut := a.stdout, io.Writer(nil)
			if o.summaries {
				progress, summaryOut = a.stderr, a.stdout
			}
			if !o.asJSON {
				a.applyHeader(progress, l.Graph.Summary(), p, cache.Dir, pool)
			}
			live, width := liveBlock(progress, o.asJSON || a.plainTerminal())
			var liveRep *liveReport
			if o.withReport {
				liveRep = startLiveReport(cache, func(err error) { fmt.Fprintf(a.stderr, "warning: the run's report: %s\n", err) })
			}
			// The apply prints nothing itself: its events go to the
			// terminal (or --json) and to the run's event log.
			tty := ui.NewTerminal(ui.Options{
				Progress: progress, Stderr: a.stderr, Summaries: summaryOut, JSON: o.asJSON, Verbose: o.verbose, Live: live, Width: width,
				Expect: expectedDuration(cache, l.Graph.Config.Name),
			})
			defer tty.Close()
			evlog := &ui.EventLog{}
			fan, restoreWarn := a.runEvents(cache, tty, evlog)
			journaled := redactArgs(a.args, l.Config.Variables)
			res, err := engine.Apply(ctx, engine.ApplyOptions{
				Plan: p, Cache: cache, Parallelism: parallelism, LockTimeout: o.lockTimeout,
				Events: fan,
				NoSync: noFsync(), SampleInterval: sampleInterval(), Args: journaled, Version: version,
				Rerun:   a.rerunArgs(journaled, l.Config, saved, planArg),
				Replace: rep, Hard: hard, GPUs: pool, NodeLimit: nodeLimit(pool), Debug: debug, Executor: ex,
				WaitGPUs: o.waitGPUs, WaitBatch: o.waitBatch, Exact: saved != nil,
			})
			restoreWarn()
			tty.Close()
			if lerr := evlog.Close(); lerr != nil {
				fmt.Fprintf(a.stderr, "warning: the run's event log is incomplete: %s\n", lerr)
			}
			reportPath := ""
			if liveRep != nil {
				reportPath = liveRep.finish()
			}
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return &exitError{code: exitInterrupted, msg: "interrupted before anything ran (while waiting for cairn gc to finish)"}
				}
				if errors.Is(err, engine.ErrRefused) {
					return &exitError{code: exitFailed, msg: strings.TrimPrefix(err.Error(), engine.ErrRefused.Error()+": ")}
				}
				return err
			}
			if !o.asJSON {
				a.printSummary(progress, res)
			}
			if reportPath != "" {
				fmt.Fprintln(progress, reportLine(reportPath))
			}
			a.rememberUpToDate(identity, explainID, p, res, cache)
			if res.JournalErr != nil {
				fmt.Fprintf(a.stderr, "Error: %s: the results of the nodes that ran are in the cache, but this run's history is not all recorded ('cairn status' may show it interrupted); %s\n", res.JournalErr, engine.JournalWriteAdvice(res.JournalErr))
			}
			return applyExit(res)
		},
	}
	a.addVarFlags(cmd)
	o.define(cmd)
	return cmd
}

// define adds apply's flags to cmd.
func (o *applyFlags) define(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Var(addrsFlag{&o.targets}, "target", "run only this address and what it needs (repeatable)")
	f.Var(addrsFlag{&o.replace}, "replace", "run this address even if cached (repeatable)")
	f.BoolVar(&o.only, "only", false, "with --target: run just the targets, refusing (exit 2) when a node they need is not cached")
	f.IntVar(&o.parallelism, "parallelism", 0, "CPU slots for nodes without GPUs (default: number of cores)")
	f.DurationVar(&o.lockTimeout, "lock-timeout", 0, "give up waiting for a node another process runs after this long (default: wait)")
	f.DurationVar(&o.waitGPUs, "wait-gpus", 0, "a GPU batch waits up to this long for a free GPU instead of refusing")
	f.DurationVar(&o.waitBatch, "wait-batch", 0, "a GPU batch waits up to this long for another process's batch instead of refusing")
	f.BoolVar(&o.asJSON, "json", false, "one JSON line per node event on standard output (a node's summary line in its \"summary\")")
	f.BoolVar(&o.summaries, "summaries", false, "standard output carries only the summary lines (an optimizer job's result, one JSON object a line); progress, node events and errors go to standard error")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "also list cached nodes")
	f.StringVar(&o.executorName, "executor", "", "where nodes run: local or slurm (default: the pipeline's executor block, else local)")
	f.BoolVar(&o.withReport, "report", false, "write the run's report (report.html and trace.tsv in its run folder) as it goes, every few seconds, and at its end ('cairn report')")
	f.BoolVar(&o.leaveJobs, "leave-jobs", false, "slurm executor: at an interrupt, leave the submitted jobs running instead of cancelling them")
}

// checkApplyFlags refuses (exit 2) the flags that make no sense, before
// anything else: --only without --target, an unknown --executor,
// --parallelism below 1, a negative duration.
func checkApplyFlags(cmd *cobra.Command, o *applyFlags) error {
	if err := checkOnly(o.targets, o.only); err != nil {
		return err
	}
	if err := checkExecutorName(o.executorName); err != nil {
		return err
	}
	if cmd.Flags().Changed("parallelism") && o.parallelism < 1 {
		return badInput("--parallelism %d: give 1 or more CPU slots (leave the flag out for one per core)", o.parallelism)
	}
	for _, d := range []struct {
		name string
		val  time.Duration
	}{{"lock-timeout", o.lockTimeout}, {"wait-gpus", o.waitGPUs}, {"wait-batch", o.waitBatch}} {
		if d.val < 0 {
			return badInput("--%s %s: a time to wait cannot be negative; give 0 or more, like 90s, 60m or 1h30m", d.name, d.val)
		}
	}
	return nil
}

// checkOnly refuses --only without --target (exit 2), for plan and apply.
func checkOnly(targets []string, only bool) error {
	if only && len(targets) == 0 {
		return badInput("--only without --target: --only runs just the nodes --target names, from what their prerequisites saved; name them with --target")
	}
	return nil
}

// checkExecutorName refuses an --executor that names no executor.
func checkExecutorName(name string) error {
	switch name {
	case "", "local", "slurm":
		return nil
	}
	return badInput("--executor %s: there is no such executor; use local or slurm", name)
}

// liveBlock reports whether apply redraws a live status block on w (a
// terminal, unless plain: --json, or a plain terminal, see
// plainTerminal), and the terminal's width, asked at each redraw, to which
// the block's lines are cut.
func liveBlock(w io.Writer, plain bool) (live bool, width func() int) {
	f, ok := w.(*os.File)
	if !ok || plain || !term.IsTerminal(int(f.Fd())) {
		return false, nil
	}
	return true, func() int {
		cols, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			return 0
		}
		return cols
	}
}

// explainEvaluation is -v's word on why the pipeline is evaluated
// (full: a saved plan or a flag asks for the full path) and returns the
// memo identity that the apply leaves its memo for (and says why not).
func (a *app) explainEvaluation(args []string, full bool) (explainID string) {
	why := ""
	if full {
		why = "a saved plan, --target, --replace, --json, --summaries or --report asks for the full path"
	} else {
		explainID = a.memoIdentity(args)
	}
	a.explainUpToDate(explainID, why)
	return explainID
}

// expectedDuration is the live display's expected duration of a node: its
// last run's, from the cache, or 0 where none is known.
func expectedDuration(cache *store.Cache, pipeline string) func(node string) time.Duration {
	return func(node string) time.Duration {
		if k := cache.LastKey(pipeline, node); k != "" {
			if r, ok := cache.Lookup(k); ok {
				return r.Ended.Sub(r.Started)
			}
		}
		return 0
	}
}

const applyLong = `Run every node whose result is not in the cache, in dependency order, on this
machine's CPU slots and free GPUs. Finished nodes are committed to the cache as
they end, so an apply killed at any moment resumes where it stopped; a node
that another process is running is waited for, then taken from the cache.

With a PLANFILE from 'cairn plan --out', run exactly that plan (its variables,
--target and --replace, on the cache folder it was made on), or refuse with exit 2, running nothing, naming what
changed since it was saved: a node added or removed, the pipeline's name, a
key known then, what was known then of a key known only after apply (a
"may run" node's command, say), or an action.

Streams: standard output carries apply's progress (a line per node that
runs or fails, or with --json one JSON object per node event) and its
closing report (each failure whole, then the counts); standard error carries
the stages' own progress lines (an evaluation's item counts, a method's
rollout counts), the summary lines of the nodes that make one (an optimizer
job's result: {"status", "cell_id", ..., "method", "seed", "out"}) and
"Error:" messages. With --summaries, standard output carries only those
summary lines, one JSON object each (cairn apply --summaries ... | jq), and
everything else goes to standard error.

Ctrl-C stops scheduling, terminates running nodes (SIGTERM, then SIGKILL after
their kill_grace) and exits 130; a second Ctrl-C kills them at once.
Exit codes: 0 all done, 1 a node failed or a gate refused, 2 bad input, 130
interrupted.`

// savedPlan reads the saved plan args names, if it names one: the plan's
// pipeline becomes the argument, and its --target, --replace, --only and
// variables those of this apply. Giving them again is refused (exit 2).
func (a *app) savedPlan(args []string, targets, replace *[]string, only *bool) (*plan.File, []string, error) {
	if len(args) != 1 {
		return nil, args, nil
	}
	pf, isPlan, err := plan.LoadFile(a.path(args[0]))
	if !isPlan {
		if why := notPipeline(a.path(args[0])); why != "" {
			return nil, nil, badInput("%s %s: give a plan saved by 'cairn plan --out FILE', or a pipeline (.hcl)", args[0], why)
		}
	}
	switch {
	case isPlan && err != nil:
		return nil, nil, badInput("%s", err)
	case isPlan && (len(*targets) > 0 || len(*replace) > 0 || *only):
		return nil, nil, badInput("a saved plan is applied as it was planned: give --target, --replace and --only to 'cairn plan --out FILE', not to 'cairn apply PLANFILE'")
	case isPlan:
		*targets, *replace, *only = pf.Targets, pf.Replace, pf.Only
		a.vars = append(append([]dsl.VarArg{}, pf.Vars...), a.vars...)
		if a.chdir == "" {
			a.chdir = pf.Root
		}
		if err := a.planCache(args[0], pf); err != nil {
			return nil, nil, err
		}
		return pf, []string{pf.Path}, nil
	}
	return nil, args, nil
}

// planCache makes the cache folder a saved plan was made on this
// apply's when neither --cache nor CAIRN_CACHE names one: the plan's
// actions are what that cache held, and on another its cached nodes would
// all be found stale. One that names another folder is refused (exit 2),
// naming both. A plan file that names no cache (saved by an older cairn)
// is applied on this apply's.
func (a *app) planCache(planArg string, pf *plan.File) error {
	if pf.Cache == "" {
		return nil
	}
	if a.cacheDir == "" && os.Getenv("CAIRN_CACHE") == "" {
		a.cacheDir = pf.Cache
		return nil
	}
	if sameFolder(a.cachePath(), pf.Cache) {
		return nil
	}
	return badInput("%s was planned on the cache folder %s, and %s is another: apply it without --cache (it takes the plan's cache), or make a new plan on this cache with 'cairn plan --out FILE'", planArg, pf.Cache, a.cacheSource())
}

// sameFolder reports whether paths a and b name one folder: the same
// path once links are resolved, or the same folder on disk.
func sameFolder(a, b string) bool {
	if realPath(a) == realPath(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// notPipeline says why path, a file that is not a plan file (LoadFile
// said so) nor named as a pipeline file (.hcl), is no pipeline either:
// it holds a JSON object, or JSON cut short or damaged (a plan file's
// start, "{"), or nothing. It is "" for any other file (a folder, an HCL
// pipeline named otherwise), which is loaded as a pipeline.
func notPipeline(path string) string {
	if strings.HasSuffix(path, ".hcl") {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var obj map[string]json.RawMessage
	switch text := bytes.TrimSpace(b); {
	case len(text) == 0:
		return "is empty"
	case json.Unmarshal(b, &obj) == nil:
		return "holds JSON but is not a cairn plan file (it has no \"pipeline\" and \"nodes\")"
	case text[0] == '{':
		return "is not a plan file: it " + dsl.JSONProblem(b)
	}
	return ""
}

// replaceRequested is the set of nodes the plan runs because --replace
// names them (or an upstream).
func replaceRequested(p *plan.Plan) map[string]bool {
	rep := map[string]bool{}
	for _, pn := range p.Nodes {
		for _, r := range pn.Reasons {
			if strings.HasPrefix(r, "replace requested") {
				rep[pn.Node.Addr] = true
			}
		}
	}
	return rep
}

// stopSignals are the signals that interrupt a command: Ctrl-C, SIGTERM,
// and SIGHUP (its terminal closed, an ssh connection dropped), unless
// cairn was started with SIGHUP ignored (nohup), which then stays ignored.
func stopSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

// onInterrupt handles Ctrl-C, SIGTERM and SIGHUP (stopSignals): the first
// stops the apply (cancel), the second closes hard, to kill running nodes
// at once. stop ends the handling.
func (a *app) onInterrupt(cancel context.CancelFunc) (hard chan struct{}, stop func()) {
	hard = make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, stopSignals()...)
	go func() {
		n := 0
		for sig := range sigs {
			n++
			if n == 1 {
				why := "interrupted"
				if sig == syscall.SIGHUP {
					why = "the terminal hung up (SIGHUP)"
				}
				fmt.Fprintf(a.stderr, "\ncairn: %s: stopping running nodes (Ctrl-C again to kill them at once)\n", why)
				cancel()
			} else {
				close(hard)
				return
			}
		}
	}()
	return hard, func() { signal.Stop(sigs) }
}

// applyExit is the exit of an apply that ran: 130 interrupted, 2 a node
// refused its input, 1 a node failed or the run's journal could not be
// written, else 0.
func applyExit(res *engine.ApplyResult) error {
	switch {
	case res.Interrupted:
		return &exitError{code: exitInterrupted, msg: interruptedMessage(res)}
	case slices.ContainsFunc(res.Failures, func(f engine.Failure) bool { return f.Refused }):
		return &exitError{code: exitBadInput}
	case res.Failed > 0, res.JournalErr != nil:
		return &exitError{code: exitFailed}
	}
	return nil
}

// executor is the apply's executor and its GPU pool: the pipeline's
// executor block, or --executor, which wins; the local executor with this
// machine's GPUs by default. The slurm executor's GPUs are its partition's.
func (a *app) executor(ctx context.Context, block *dsl.Executor, name string, leave bool) (executor.Executor, *gpu.Pool, error) {
	if name == "" && block != nil {
		name = block.Name
	}
	switch name {
	case "", "local":
		pool, err := gpu.NewPool(os.Getenv)
		if err != nil {
			return nil, nil, badInput("%s", err)
		}
		return executor.Local{}, pool, nil
	case "slurm":
		opts := slurmOptions(block)
		// Until the apply's journal takes them, what the executor waits
		// for is said on standard error, at once.
		opts.Notify = func(n executor.Notice) {
			if n.Error != "" {
				fmt.Fprintf(a.stderr, "cairn: %s\n", n.Error)
				return
			}
			fmt.Fprintf(a.stderr, "cairn: slurm executor: %s\n", n)
		}
		// A controller that is restarting is waited for, not long, and
		// not past a Ctrl-C.
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		ex, err := slurm.NewExecutor(ctx, opts)
		if err != nil {
			return nil, nil, badInput("the slurm executor cannot reach the cluster: %s", err)
		}
		ex.Leave = leave
		inv, err := slurm.ClusterGPUs(ctx, opts)
		if err != nil {
			return nil, nil, partitionInput(block, err)
		}
		pool, err := a.clusterPool(inv)
		if err != nil {
			return nil, nil, badInput("%s", err)
		}
		return ex, pool, nil
	}
	return nil, nil, checkExecutorName(name)
}

// nodeLimit is what the executor of pool can ever give one node: on the
// Slurm executor, its partition's largest node (nil elsewhere).
func nodeLimit(pool *gpu.Pool) engine.NodeLimit {
	if pool == nil {
		return nil
	}
	if inv, ok := pool.Inv.(*slurm.Inventory); ok {
		return inv.Refusal
	}
	return nil
}

// slurmOptions are the slurm executor's options that the pipeline's
// executor block sets (none where it names another executor).
func slurmOptions(block *dsl.Executor) slurm.Options {
	if block == nil || block.Name != "slurm" {
		return slurm.Options{}
	}
	return slurm.Options{Partition: block.Partition, Account: block.Account, QOS: block.QOS,
		ExtraArgs: block.ExtraArgs, MaxSubmitted: block.MaxSubmitted, PollInterval: block.PollInterval}
}

// clusterPool is the pool of a cluster's GPUs, leased in the cache.
func (a *app) clusterPool(inv *slurm.Inventory) (*gpu.Pool, error) {
	pool, err := gpu.NewPoolFor(inv, filepath.Join(a.cachePath(), "leases", "slurm"))
	if err != nil {
		return nil, err
	}
	pool.SampleInterval = sampleInterval()
	return pool, nil
}

// partitionInput is the bad input of a failed count of the cluster's
// GPUs; a partition the cluster does not have is named where the pipeline
// sets it.
func partitionInput(block *dsl.Executor, err error) error {
	if errors.Is(err, slurm.ErrPartition) && block != nil && block.Partition != "" {
		return badInput("%s: executor \"slurm\": %s: set partition to one of the cluster's ('sinfo' lists them), or leave it out for the default partition",
			dsl.Pos(block.PartitionRange), strings.TrimPrefix(err.Error(), slurm.ErrPartition.Error()+": "))
	}
	return badInput("%s", err)
}

// redactArgs returns the command line with the values of sensitive
// variables given as --var NAME=VALUE (or -var, or with "=") replaced, for
// the journal, which must never hold them.
func redactArgs(args []string, vars map[string]*dsl.Variable) []string {
	out := append([]string(nil), args...)
	redact := func(kv string) string {
		name, _, ok := strings.Cut(kv, "=")
		if v := vars[strings.TrimSpace(name)]; ok && v != nil && v.Sensitive {
			return name + "=(sensitive)"
		}
		return kv
	}
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		switch {
		case a == "--var" || a == "-var":
			if i+1 < len(out) {
				out[i+1] = redact(out[i+1])
				i++
			}
		case strings.HasPrefix(a, "--var="):
			out[i] = "--var=" + redact(strings.TrimPrefix(a, "--var="))
		case strings.HasPrefix(a, "-var="):
			out[i] = "-var=" + redact(strings.TrimPrefix(a, "-var="))
		}
	}
	return out
}

// singleVariantTargets: a --target naming one variant of a batch stage is a
// debugging run; its results are marked so.
func (a *app) singleVariantTargets(g *plan.Graph, targets []string) map[string]bool {
	out := g.SingleVariantTargets(targets)
	for _, addr := range slices.Sorted(maps.Keys(out)) {
		fmt.Fprintf(a.stderr, "warning: %s is one variant of a batch: single-variant runs are for debugging only; its result is marked as such\n", addr)
	}
	return out
}

// printApplyHeader is apply's first line, and a note when the GPUs are
// simulated.
func (a *app) printApplyHeader(w io.Writer, summary string, counts plan.Counts, pool *gpu.Pool) {
	fmt.Fprintf(w, "cairn apply: %s: %s\n", summary, counts)
	if pool != nil && pool.Total() > 0 && pool.Simulated() {
		fmt.Fprintf(w, "GPUs: %s\n", pool.Inv.Note())
	}
}

// applyHeader prints apply's first line. The nodes apply will refuse are
// counted as refused, as plan counts them, not as to run.
func (a *app) applyHeader(w io.Writer, summary string, p *plan.Plan, cacheDir string, pool *gpu.Pool) {
	_ = engine.NoteRefusals(p, cacheDir)
	engine.NoteGPURefusals(p, pool)
	a.printApplyHeader(w, summary, p.Counts(), pool)
}

// printPlanHeader is plan's first line.
func (a *app) printPlanHeader(summary string) {
	fmt.Fprintf(a.stdout, "cairn plan: %s\n\n", summary)
}

// printSummary is apply's closing report on w: each failure whole, then
// the counts.
func (a *app) printSummary(w io.Writer, res *engine.ApplyResult) {
	for _, f := range res.Failures {
		if f.Stopped {
			fmt.Fprintf(w, "\n%s interrupted: %s\n", f.Address, f.Message)
		} else {
			fmt.Fprintf(w, "\n%s failed (%s): %s\n", f.Address, f.Class, f.Message)
		}
		if f.Tail != "" {
			for _, l := range strings.Split(f.Tail, "\n") {
				fmt.Fprintf(w, "  | %s\n", l)
			}
		}
		for _, l := range f.Logs {
			fmt.Fprintf(w, "  log: %s\n", l)
		}
		if f.NoOutput {
			fmt.Fprintf(w, "  log: none (the node wrote no output)\n")
		}
	}
	fmt.Fprintf(w, "\nApply complete: %d ran, %d cached, %d failed, %d skipped", res.Ran, res.Cached, res.Failed, res.Skipped)
	if res.Stopped > 0 || res.Interrupted {
		fmt.Fprintf(w, ", %d interrupted", res.Stopped)
	}
	fmt.Fprint(w, ".")
	if res.Interrupted {
		fmt.Fprint(w, " (interrupted)")
	}
	fmt.Fprintf(w, " [%s, run %s]\n", res.Dur.Round(time.Millisecond), res.RunID)
}

// interruptedMessage says what the next apply does after an interrupt: it
// resumes the nodes that did not finish, except those whose kind does not
// resume them (their messages above say what it does instead).
func interruptedMessage(res *engine.ApplyResult) string {
	var not, refuses []string
	for _, f := range res.Failures {
		switch {
		case f.NoResume:
			not = append(not, f.Address)
		case f.RefusesRestart:
			refuses = append(refuses, f.Address)
		}
	}
	msg := fmt.Sprintf("interrupted (run %s); the next 'cairn apply' resumes the nodes that did not finish", res.RunID)
	if len(not) > 0 {
		msg += fmt.Sprintf(", except %s: it does not restart it (see its message above)", strings.Join(not, ", "))
	}
	if len(refuses) > 0 {
		quoted := make([]string, len(refuses))
		for i, a := range refuses {
			quoted[i] = "--replace '" + a + "'"
		}
		msg += fmt.Sprintf("; it refuses to restart %s, whose stage declares on_interrupt = \"fail\" (%s runs it again from the start)", strings.Join(refuses, ", "), strings.Join(quoted, " "))
	}
	return msg
}

// runEvents is where an apply's events go: the terminal and the run's
// event log. What opening the cache warned of (printed already) goes in
// the event log too, and so in the run's report; what the cache warns of
// during the run is printed on standard error, as before the run, and
// kept in the event log, until restore.
func (a *app) runEvents(cache *store.Cache, tty, evlog events.Sink) (fan events.Fanout, restore func()) {
	for _, w := range a.cacheWarnings {
		evlog.Emit(&events.Warning{Text: w})
	}
	stderrWarn := cache.Warn
	cache.Warn = func(format string, args ...any) {
		stderrWarn(format, args...)
		evlog.Emit(&events.Warning{Text: fmt.Sprintf(format, args...)})
	}
	return events.Fanout{tty, evlog}, func() { cache.Warn = stderrWarn }
}
