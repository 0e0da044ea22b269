package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/dsl/addrs"
	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/engine/executor/slurm"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/storage/atomicfile"
)

func (a *app) validateCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate [PATH]",
		Short: "Check a pipeline: syntax, references, types, for_each, cycles, variable validations",
		Long: `Check a pipeline without running anything. PATH is a .hcl file or a directory
of them (default: the current directory). Every problem is reported at once,
with its file:line:col. Exit 0 when valid, 2 otherwise.

A directory in which more than one file declares a pipeline block is a folder
of pipelines, one per file (as pipelines/ in cairn's own repository): each of
its .hcl files is checked as a pipeline of its own.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "."
			if len(args) > 0 {
				path = args[0]
			}
			paths := []string{path}
			dir := path
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(a.root(), dir)
			}
			if many := dsl.PipelineFolder(dir); many != nil {
				paths = paths[:0]
				for _, f := range many {
					paths = append(paths, filepath.Join(path, f))
				}
			}
			var all hcl.Diagnostics
			var allWaiting []plan.WaitingStage
			bad := 0
			for _, p := range paths {
				l, diags, waiting := a.validateOne(p)
				all = append(all, diags...)
				allWaiting = append(allWaiting, waiting...)
				if asJSON {
					continue
				}
				if err := a.printDiags(l.Files(), diags); err != nil {
					if len(paths) == 1 {
						return err
					}
					fmt.Fprintf(a.stderr, "%s: %s\n\n", p, err)
					bad++
					continue
				}
				if len(paths) > 1 {
					fmt.Fprintf(a.stdout, "%s: ", p)
				}
				fmt.Fprintf(a.stdout, "Valid: %s.\n", l.Graph.Summary())
				if unset := l.Graph.Unset(); len(unset) > 0 {
					fmt.Fprintf(a.stdout, "Checked without values for %s: what needs them is checked by plan and apply.\n", strings.Join(unset, ", "))
				}
				for _, w := range waiting {
					fmt.Fprintf(a.stdout, "  %s (%s): its instances wait for %s\n", w.Stage, dsl.Pos(w.Range), w.WaitsFor)
				}
			}
			if asJSON {
				return a.writeDiagJSON(all, allWaiting)
			}
			if bad > 0 {
				return &exitError{code: exitBadInput, msg: fmt.Sprintf("%d of the %d pipelines in %s have errors", bad, len(paths), path)}
			}
			return nil
		},
	}
	a.addVarFlags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	return cmd
}

// validateOne loads and checks the pipeline at path (a file or a folder).
func (a *app) validateOne(path string) (*plan.Loaded, hcl.Diagnostics, []plan.WaitingStage) {
	defer a.hugeHeap(path)()
	l, diags := plan.Load(plan.LoadOptions{Path: path, Root: a.root(), Vars: a.varInputs(), CacheDir: a.cachePath(), Validate: true})
	if l.Graph != nil && !diags.HasErrors() {
		expectNodes(l.Graph)
		diags = append(diags, l.Graph.CheckStages()...)
	}
	var waiting []plan.WaitingStage
	if l.Graph != nil {
		waiting = l.Graph.WaitingStages()
	}
	return l, diags, waiting
}

type diagJSON struct {
	Severity string     `json:"severity"`
	Summary  string     `json:"summary"`
	Detail   string     `json:"detail,omitempty"`
	Range    *rangeJSON `json:"range,omitempty"`
}

// rangeJSON is a place in a pipeline file as --json writes it:
// {"filename", "start": {"line", "column", "byte"}, "end": {...}}, lines
// and columns from 1, bytes from 0.
type rangeJSON struct {
	Filename string  `json:"filename"`
	Start    posJSON `json:"start"`
	End      posJSON `json:"end"`
}

type posJSON struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

func rangeToJSON(r *hcl.Range) *rangeJSON {
	if r == nil {
		return nil
	}
	pos := func(p hcl.Pos) posJSON { return posJSON{Line: p.Line, Column: p.Column, Byte: p.Byte} }
	return &rangeJSON{Filename: r.Filename, Start: pos(r.Start), End: pos(r.End)}
}

type waitingJSON struct {
	Stage    string     `json:"stage"`
	WaitsFor string     `json:"waits_for"`
	Range    *rangeJSON `json:"range"`
}

func (a *app) writeDiagJSON(diags hcl.Diagnostics, waiting []plan.WaitingStage) error {
	diags = inFileOrder(diags)
	out := struct {
		Valid       bool          `json:"valid"`
		ErrorCount  int           `json:"error_count"`
		Diagnostics []diagJSON    `json:"diagnostics"`
		Waiting     []waitingJSON `json:"waiting_for_values,omitempty"`
	}{Valid: !diags.HasErrors(), Diagnostics: []diagJSON{}}
	for _, w := range waiting {
		out.Waiting = append(out.Waiting, waitingJSON{Stage: w.Stage, WaitsFor: w.WaitsFor, Range: rangeToJSON(&w.Range)})
	}
	for _, d := range diags {
		sev := "warning"
		if d.Severity == hcl.DiagError {
			sev = "error"
			out.ErrorCount++
		}
		out.Diagnostics = append(out.Diagnostics, diagJSON{Severity: sev, Summary: d.Summary, Detail: detailPlaces(d.Detail), Range: rangeToJSON(d.Subject)})
	}
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	if diags.HasErrors() {
		return &exitError{code: exitBadInput}
	}
	return nil
}

func (a *app) planCmd() *cobra.Command {
	var asJSON bool
	var out string
	var targets, replace []string
	var only bool
	cmd := &cobra.Command{
		Use:   "plan [PATH]",
		Short: "Show what apply would run, what comes from the cache, and why",
		Long: `Show, per node, what 'cairn apply' would do:

  + run      new node
  ~ run      the node ran before with another key: the reasons name what
             changed (an argument old -> new, an input file, an upstream)
  ? may run  its key is known only once an upstream has run: it runs then
             unless that key is cached
  = cached   the node's result is in the cache
  - skipped  an upstream fails (a cached result failing its postcondition,
             a node listed as refused) or is skipped
  ! refused  apply would refuse to start it: it was interrupted, and its
             stage declares on_interrupt = "fail", or its kind refuses
             (an optimizer job whose out folder holds an interrupted
             optimization); --replace runs it again. Or its kind refuses
             it, replaced or not (a decision slot its ledger holds as
             collected under another key: give another ledger). Or apply
             would not restore its cached output over something of the
             user's (a folder where the output file goes)

--out FILE saves the plan; 'cairn apply FILE' runs exactly that plan, or
refuses (exit 2) naming what changed since: a node added or removed, the
pipeline's name, a key or an action.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Checked before the up-to-date check: a command line gets
			// the same answer whatever the cache holds.
			if err := checkOnly(targets, only); err != nil {
				return err
			}
			if !asJSON && out == "" && len(targets) == 0 && len(replace) == 0 {
				if m := a.upToDate(a.memoIdentity(args)); m != nil {
					a.printPlanHeader(m.Summary)
					return m.RenderPlan(a.stdout)
				}
			}
			l, cache, p, err := a.loadAndPlan(args, plan.Options{Targets: targets, Replace: replace, Only: only}, true)
			if err != nil {
				return err
			}
			defer cache.Close()
			if out != "" {
				if err := a.checkOutOfReads("plan", out, a.pipelineReads(l), stageFiles(p), "a file the pipeline's stages read or write"); err != nil {
					return err
				}
			}
			if err := engine.NoteRefusals(p, cache.Dir); err != nil {
				fmt.Fprintf(a.stderr, "warning: %s\n", err)
			}
			if err := a.noteGPURefusals(l.Config.Executor, p); err != nil {
				return err
			}
			out = a.path(out)
			if out != "" {
				if err := plan.Save(out, p, pipelineArgs(args), a.vars, cache.Dir); err != nil {
					return badInput("cannot save the plan: %s", err)
				}
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(p.JSON())
			}
			a.printPlanHeader(l.Graph.Summary())
			if err := p.Render(a.stdout); err != nil {
				return err
			}
			if out != "" {
				fmt.Fprintf(a.stdout, "Saved the plan to %s; run it with: cairn apply %s%s\n", out, out, sensitiveAgain(a.vars, l.Config))
			}
			return nil
		},
	}
	a.addVarFlags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	cmd.Flags().StringVar(&out, "out", "", "save the plan (with every key known now, and what is known now of the others) to FILE")
	cmd.Flags().Var(addrsFlag{&targets}, "target", "plan only this address and what it needs (repeatable)")
	cmd.Flags().Var(addrsFlag{&replace}, "replace", "run this address even if cached (repeatable)")
	cmd.Flags().BoolVar(&only, "only", false, "with --target: plan just the targets, refusing (exit 2) when a node they need is not cached")
	return cmd
}

// loadAndPlan loads the pipeline, opens the cache and makes the plan,
// printing diagnostics; the caller closes the cache. endsWithPlan says
// that the command ends with the plan (plan, not apply), which then
// stays live to the end (expectNodes).
func (a *app) loadAndPlan(args []string, opts plan.Options, endsWithPlan bool) (*plan.Loaded, *store.Cache, *plan.Plan, error) {
	var early *openingCache
	if store.Made(a.cachePath()) {
		early = a.openCacheEarly()
	}
	l, err := a.load(args)
	if err != nil {
		early.close()
		return nil, nil, nil, err
	}
	if endsWithPlan {
		expectNodes(l.Graph)
	}
	var cache *store.Cache
	if early != nil {
		cache, err = early.wait()
	} else {
		if len(opts.Targets) == 0 {
			// Opening the cache makes its folders: a pipeline that
			// validate refuses (a path inside the cache folder) leaves
			// none behind. A --target plan checks only what the targets
			// need: the plan itself says.
			if diags := l.Graph.CheckStages(); diags.HasErrors() {
				return nil, nil, nil, a.printDiags(l.Files(), diags)
			}
		}
		cache, err = a.openCache()
	}
	if err != nil {
		return nil, nil, nil, err
	}
	p, diags := plan.Make(l.Graph, cache, opts)
	if err := a.printDiags(l.Files(), diags); err != nil {
		cache.Close()
		return nil, nil, nil, err
	}
	return l, cache, p, nil
}

// openingCache is a cache folder that already exists, opened while the
// pipeline loads (openCacheEarly).
type openingCache struct {
	a    *app
	done chan struct{}
	c    *store.Cache
	err  error

	mu       sync.Mutex
	held     bool     // the warnings wait to be printed (wait)
	warnings []string // those that wait, in order
}

// openCacheEarly starts opening the cache: reading its index (the 40,000
// entries of 10,000 cached nodes: 40 ms of CPU) then takes a core that the
// load's one-core steps leave idle. What opening it warns of is printed
// after the pipeline's diagnostics, as when the cache is opened after the
// load (wait, close). Only a cache folder that exists is opened early:
// making one waits for the load (loadAndPlan).
func (a *app) openCacheEarly() *openingCache {
	o := &openingCache{a: a, done: make(chan struct{}), held: true}
	go func() {
		defer close(o.done)
		o.c, o.err = a.openCacheWarn(o.warn)
	}()
	return o
}

func (o *openingCache) warn(msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.held {
		o.warnings = append(o.warnings, msg)
		return
	}
	o.a.cacheWarning(msg)
}

// wait returns the opened cache, once the warnings opening it gave are
// printed.
func (o *openingCache) wait() (*store.Cache, error) {
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, msg := range o.warnings {
		o.a.cacheWarning(msg)
	}
	o.held, o.warnings = false, nil
	return o.c, o.err
}

// close closes the cache opened for a pipeline that did not load (nil: no
// cache was opened early).
func (o *openingCache) close() {
	if o == nil {
		return
	}
	if c, err := o.wait(); err == nil {
		c.Close()
	}
}

func pipelineArgs(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return "."
}

func (a *app) openCache() (*store.Cache, error) {
	return a.openCacheWarn(a.cacheWarning)
}

// openCacheWarn opens the cache, which says what it warns of to warn.
func (a *app) openCacheWarn(warn func(msg string)) (*store.Cache, error) {
	if err := a.checkCacheFolder(); err != nil {
		return nil, err
	}
	root, err := filepath.Abs(a.root())
	if err != nil {
		root = a.root()
	}
	c, err := store.Open(a.cachePath(), store.Options{
		NoSync:    noFsync(),
		Workspace: root,
		Warn:      func(format string, args ...any) { warn(fmt.Sprintf(format, args...)) },
	})
	if err != nil {
		return nil, &exitError{code: exitBadInput, msg: a.cacheError("open the cache", err).Error()}
	}
	if w := store.SharedWarning(c.Dir); w != "" {
		c.Warn("%s", w)
	}
	return c, nil
}

// cacheWarning prints a warning of the cache and keeps it for the run
// report.
func (a *app) cacheWarning(msg string) {
	a.cacheWarnings = append(a.cacheWarnings, msg)
	fmt.Fprintf(a.stderr, "warning: %s\n", msg)
}

func (a *app) graphCmd() *cobra.Command {
	var stagesOnly bool
	var format, out string
	cmd := &cobra.Command{
		Use:   "graph [PATH]",
		Short: "Print the pipeline's DAG as DOT (or SVG with graphviz)",
		Long: `Print the DAG in Graphviz DOT. With --stages, one vertex per stage instead of
one per node. --format svg (or --out FILE.svg) renders through graphviz's
'dot' when it is installed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := a.load(args)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := writeDOT(&buf, l.Graph, stagesOnly); err != nil {
				return err
			}
			if format == "" && strings.HasSuffix(out, ".svg") {
				format = "svg"
			}
			data := buf.Bytes()
			switch format {
			case "", "dot":
			case "svg":
				dot, err := exec.LookPath("dot")
				if err != nil {
					return badInput("SVG needs graphviz's 'dot' (apt-get install graphviz); use --format dot for DOT text")
				}
				c := exec.Command(dot, "-Tsvg")
				c.Stdin = &buf
				c.Stderr = a.stderr
				data, err = c.Output()
				if err != nil {
					return fmt.Errorf("dot: %w", err)
				}
			default:
				return badInput("--format takes dot or svg, not %q", format)
			}
			if out == "" {
				_, err = a.stdout.Write(data)
				return err
			}
			if err := a.checkOutOfReads("graph", out, a.pipelineReads(l), l.Graph.DeclaredFiles(), "a file the pipeline's stages read or write"); err != nil {
				return err
			}
			if err := os.WriteFile(a.path(out), data, 0o644); err != nil {
				return badInput("cannot write the graph to --out %s (%s): give a file you may write, in a folder that exists", out, errCause(err))
			}
			return nil
		},
	}
	a.addVarFlags(cmd)
	cmd.Flags().BoolVar(&stagesOnly, "stages", false, "one vertex per stage")
	cmd.Flags().StringVar(&format, "format", "", "dot (default) or svg")
	cmd.Flags().StringVar(&out, "out", "", "write to FILE instead of stdout")
	return cmd
}

// writeDOT writes the DAG in Graphviz DOT, in plan order so that the
// output is stable. Addresses hold quotes (stage.x["k"]) and instance keys
// may hold anything, so every ID and label is escaped.
func writeDOT(w *bytes.Buffer, g *plan.Graph, stagesOnly bool) error {
	fmt.Fprintf(w, "strict digraph %s {\n\tnode [shape=box];\n", dotQuote(g.Config.Name))
	if stagesOnly {
		for _, s := range g.StageOrder {
			label := fmt.Sprintf("%s\n(%s, %d)", s.Address(), s.Kind, len(g.StageNodes[s.Name]))
			fmt.Fprintf(w, "\t%s [label=%s];\n", dotQuote(s.Address()), dotQuote(label))
		}
		for _, s := range g.StageOrder {
			for _, d := range g.StageDeps[s.Name] {
				style := ""
				if orderOnlyStages(g, s.Name, d) {
					style = " [style=dashed]" // wait_for: orders, does not key
				}
				fmt.Fprintf(w, "\t%s -> %s%s;\n", dotQuote(addrs.Stage(d).String()), dotQuote(s.Address()), style)
			}
		}
	} else {
		for _, n := range g.Nodes {
			fmt.Fprintf(w, "\t%s;\n", dotQuote(n.Addr))
		}
		for _, n := range g.Nodes {
			for _, d := range n.Deps {
				style := ""
				if slices.Contains(n.OrderOnly, d) {
					style = " [style=dashed]" // wait_for: orders, does not key
				}
				fmt.Fprintf(w, "\t%s -> %s%s;\n", dotQuote(g.Nodes[d].Addr), dotQuote(n.Addr), style)
			}
		}
	}
	w.WriteString("}\n")
	return nil
}

// orderOnlyStages reports whether stage s depends on stage d by order
// alone: some node of s depends on a node of d, and every such
// dependency is order-only (wait_for, a postcondition).
func orderOnlyStages(g *plan.Graph, s, d string) bool {
	found := false
	for _, n := range g.StageNodes[s] {
		for _, id := range n.Deps {
			if g.Nodes[id].Stage.Name != d {
				continue
			}
			if !slices.Contains(n.OrderOnly, id) {
				return false
			}
			found = true
		}
	}
	return found
}

// dotQuote makes s a quoted DOT ID; a newline becomes DOT's centred line
// break.
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "")
	return `"` + r.Replace(s) + `"`
}

func (a *app) fmtCmd() *cobra.Command {
	var check, recursive bool
	cmd := &cobra.Command{
		Use:   "fmt [PATH...]",
		Short: "Rewrite pipeline files in canonical format",
		Long: `Rewrite .hcl files in the canonical layout (aligned '=', standard indentation).
With --check, change nothing: list the files that need formatting and exit 1
if there are any. A file you may not write (read-only, or another user's), or
one in a folder you may not write, is left as it is and named, and fmt exits 1.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"."}
			}
			var files []string
			for _, p := range args {
				p = a.path(p)
				st, err := os.Stat(p)
				if errors.Is(err, fs.ErrNotExist) {
					return badInput("%s does not exist: name .hcl files, or folders holding some", p)
				}
				if err != nil {
					return badInput("%s", err)
				}
				if !st.IsDir() {
					files = append(files, p)
					continue
				}
				err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
					if err != nil {
						return err
					}
					if d.IsDir() && path != p && (!recursive || strings.HasPrefix(d.Name(), ".")) {
						return filepath.SkipDir
					}
					if !d.IsDir() && strings.HasSuffix(path, ".hcl") {
						files = append(files, path)
					}
					return nil
				})
				if err != nil {
					return badInput("%s", err)
				}
			}
			// A file named twice (a.hcl a.hcl, or a.hcl and its folder) is
			// formatted, and listed, once.
			for i, f := range files {
				files[i] = filepath.Clean(f)
			}
			sort.Strings(files)
			files = slices.Compact(files)
			// Every file is taken up: one that cannot be parsed is named
			// and left as it is, and the others are formatted (or, with
			// --check, listed) all the same.
			var unformatted, unparsed, refused []string
			for _, f := range files {
				if !check {
					// The temporary files of an fmt killed while it
					// rewrote f: cairn's names, no live writer's.
					atomicfile.RemoveLeftovers(f)
				}
				src, err := os.ReadFile(f)
				if err != nil {
					return badInput("%s", err)
				}
				_, diags := hclwrite.ParseConfig(src, f, hcl.InitialPos)
				if diags.HasErrors() {
					_ = a.printDiags(map[string]*hcl.File{f: {Bytes: src}}, diags)
					unparsed = append(unparsed, f)
					continue
				}
				formatted := hclwrite.Format(src)
				if bytes.Equal(src, formatted) {
					continue
				}
				if check {
					unformatted = append(unformatted, f)
					continue
				}
				// Whole or not at all, keeping the file's mode; a link
				// stays a link, its target rewritten. A file its
				// permissions keep the user from writing is left alone.
				if err := rewrite(f, formatted); err != nil {
					refused = append(refused, err.Error())
					continue
				}
				unformatted = append(unformatted, f)
			}
			for _, f := range unformatted {
				fmt.Fprintln(a.stdout, f)
			}
			if len(unparsed) > 0 {
				for _, r := range refused {
					fmt.Fprintln(a.stderr, "Error:", r)
				}
				return badInput("%s cannot be parsed, so it was left as it is; fix it and run cairn fmt again", strings.Join(unparsed, ", "))
			}
			if len(refused) > 0 {
				return &exitError{code: exitFailed, msg: strings.Join(refused, "\nError: ")}
			}
			if check && len(unformatted) > 0 {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("%d file(s) need formatting (listed above): run the same command without --check to format them", len(unformatted))}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "change nothing; exit 1 if any file needs formatting")
	cmd.Flags().BoolVar(&recursive, "recursive", false, "also format files in subdirectories")
	return cmd
}

// sensitiveAgain is what 'cairn apply PLANFILE' needs besides the file:
// the --var of each sensitive variable given with --var, whose value the
// plan file leaves out ("" when there is none).
func sensitiveAgain(vars []dsl.VarArg, cfg *dsl.Config) string {
	out := plan.SensitiveGiven(vars, cfg)
	if len(out) == 0 {
		return ""
	}
	var b strings.Builder
	for _, name := range out {
		fmt.Fprintf(&b, " --var %s=VALUE", name)
	}
	what := "the sensitive variable " + out[0]
	if len(out) > 1 {
		what = "the sensitive variables " + strings.Join(out, ", ")
	}
	return fmt.Sprintf("%s (the plan file leaves out the value of %s: give it again)", b.String(), what)
}

// noteGPURefusals marks in p the nodes that apply refuses to start for
// want of GPUs, as apply does, when a node to run asks for some (the
// devices are looked up only then): this machine's with the local
// executor, the partition's (one sinfo call) with the Slurm executor. On
// Slurm, the partition is asked about whatever the nodes ask for: a
// partition the cluster does not have is bad input, as in apply, and a
// node asking for more CPUs or memory than its largest node has is
// refused, as in apply. A cluster that cannot be asked leaves the nodes
// unchecked, with a warning.
func (a *app) noteGPURefusals(block *dsl.Executor, p *plan.Plan) error {
	gpus := engine.NeedsGPUs(p)
	if block == nil || block.Name != "slurm" {
		if !gpus {
			return nil
		}
		pool, err := gpu.NewPool(os.Getenv)
		if err != nil {
			return nil // apply says why
		}
		engine.NoteGPURefusals(p, pool)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterAskFor)
	defer cancel()
	inv, err := slurm.ClusterGPUs(ctx, slurmOptions(block))
	if errors.Is(err, slurm.ErrPartition) {
		return partitionInput(block, err)
	}
	var pool *gpu.Pool
	if err == nil && gpus {
		pool, err = a.clusterPool(inv)
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "warning: what the nodes ask for (GPUs, CPUs, memory) was not checked against the cluster's: %s\n", err)
		return nil
	}
	if gpus {
		engine.NoteGPURefusals(p, pool)
	}
	engine.NoteLimitRefusals(p, inv.Refusal)
	return nil
}

// clusterAskFor bounds plan's question to the cluster (its GPUs): a
// controller that does not answer leaves the check to apply.
const clusterAskFor = 10 * time.Second
