// Command cairn is a declarative pipeline engine for ML evaluation work on
// GPU machines: pipeline files in HCL become a content-addressed DAG that
// `cairn plan` explains and `cairn apply` runs, caching and journaling every
// finished node so that an interrupted run resumes where it stopped.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
	"golang.org/x/text/unicode/norm"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1 // a node failed or a gate refused
	exitBadInput    = 2 // pipeline, variables or arguments
	exitInterrupted = 130
)

// exitError carries an exit code to main; its message is already printed
// unless msg is set.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func badInput(format string, args ...any) error {
	return &exitError{code: exitBadInput, msg: fmt.Sprintf(format, args...)}
}

var version = "0.1.0-dev"

func main() {
	tuneGC()
	keepRunningOnClosedPipe()
	// CAIRN_MEMPROFILE=FILE writes an allocation profile of this command
	// when it ends (`go tool pprof -sample_index=alloc_space`): what cairn
	// allocates, and where.
	if p := os.Getenv("CAIRN_MEMPROFILE"); p != "" {
		runtime.MemProfileRate = 64 << 10
		code := run(os.Args[1:], os.Stdout, os.Stderr)
		if f, err := os.Create(p); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
		os.Exit(code)
	}
	// CAIRN_CPUPROFILE=FILE writes a CPU profile of this command (for
	// `go tool pprof`): how cairn's own time is spent.
	profiled("CAIRN_CPUPROFILE", pprof.StartCPUProfile, pprof.StopCPUProfile)
	// CAIRN_TRACE=FILE writes an execution trace of this command (for
	// `go tool trace`): when each goroutine ran, waited and was woken.
	profiled("CAIRN_TRACE", trace.Start, trace.Stop)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// keepRunningOnClosedPipe keeps cairn running when the reader of its
// standard output or error goes away (cairn apply | head, a pager quit, a
// jq that failed): Go's default is to die of SIGPIPE at the first write,
// which killed a run and its nodes with exit 141. With the signal handled
// (not ignored, which the nodes would inherit) a write returns EPIPE
// instead, what cairn prints from then on is lost, and the run ends as it
// would have, with its own exit code.
func keepRunningOnClosedPipe() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// profiled runs the command with a profile written to the file the
// environment variable names, and exits; it returns when the variable is
// unset or the profile cannot start.
func profiled(env string, start func(io.Writer) error, stop func()) {
	p := os.Getenv(env)
	if p == "" {
		return
	}
	f, err := os.Create(p)
	if err != nil {
		return
	}
	if start(f) != nil {
		f.Close()
		return
	}
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	f.Close()
	os.Exit(code)
}

// app holds global options and I/O for one invocation.
type app struct {
	stdout, stderr io.Writer
	// args are the command line cairn was given (less the program's
	// name), as the journal keeps it.
	args     []string
	chdir    string
	cacheDir string
	// cacheWarnings are the warnings opening the cache gave (a damaged
	// index record): printed at once, and kept in the run's event log.
	cacheWarnings []string
	noColor       bool
	vars          []dsl.VarArg
	warned        bool // diagnostics were printed (a memo would hide them next time)
}

func run(args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr, args: args}
	root := a.rootCmd()
	root.SetArgs(terraformAliases(args))
	root.SetOut(stdout)
	root.SetErr(stderr)
	strictHelpAndCompletion(root) // after SetOut: the scripts go there
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, "Error:", ee.msg)
		}
		return ee.code
	}
	// cobra's own errors: unknown flags, bad arguments.
	fmt.Fprintln(stderr, "Error:", err)
	if s := suggestFlag(cmd, err); s != "" {
		fmt.Fprintf(stderr, "Did you mean %s?\n", s)
	}
	fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	return exitBadInput
}

// suggestFlag returns the flag of cmd closest to the unknown one err
// names, or "": --target for --tagret or -tagret, --version for -v at the
// top level (where -v means nothing: it is apply's --verbose).
func suggestFlag(cmd *cobra.Command, err error) string {
	msg := err.Error()
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		// "unknown shorthand flag: 't' in -tagret"
		_, word, found := strings.Cut(msg, "unknown shorthand flag: ")
		if !found {
			return ""
		}
		_, name, _ = strings.Cut(word, " in -")
		if len(name) == 1 {
			// One letter: the one long flag it starts, if only one.
			var match []string
			for _, n := range names {
				if strings.HasPrefix(n, name) {
					match = append(match, n)
				}
			}
			if len(match) == 1 {
				return "--" + match[0]
			}
			return ""
		}
	}
	if s := dsl.Suggest(name, names); s != "" {
		return "--" + s
	}
	return ""
}

// longFlags are accepted with one dash too, as Terraform spells them.
var longFlags = map[string]bool{
	"var": true, "var-file": true, "out": true, "target": true, "replace": true,
	"chdir": true, "json": true, "check": true, "cache": true, "parallelism": true,
	"lock-timeout": true, "no-color": true, "help": true, "version": true,
}

// terraformAliases rewrites -var=x / -var x into --var, for the flags in
// longFlags. Single-letter shorthands are left alone.
func terraformAliases(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(a) > 2 {
			name := strings.TrimPrefix(a, "-")
			if k, _, ok := strings.Cut(name, "="); ok {
				name = k
			}
			if longFlags[name] {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "cairn",
		Short: "A declarative pipeline engine for ML evaluation work on GPU machines",
		Long: `cairn runs pipelines declared in HCL files: config checks, accuracy gates,
GPU benchmark batches, item-level evaluations and their aggregation.

Every node's key is a digest of exactly what determines its result, so
'cairn plan' can say what would run and why, and 'cairn apply' reuses every
finished node: a run killed at any moment resumes without redoing work, and
another pipeline that needs the same work takes it from the cache.

Exit codes: 0 ok, 1 a node failed or a gate refused, 2 bad input, 130 interrupted.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if err := a.checkChdir(); err != nil {
				return err
			}
			// Resolve variable files and --cache now: apply may take
			// the workspace root from a saved plan later.
			a.cacheDir = a.path(a.cacheDir)
			for i, v := range a.vars {
				if v.File {
					a.vars[i].Value = a.path(v.Value)
				}
			}
			return nil
		},
	}
	// --version without cobra's -v: -v is apply's --verbose, and one
	// letter has one meaning.
	root.Flags().Bool("version", false, "print cairn's version")
	root.SetVersionTemplate(versionLine())
	root.PersistentFlags().StringVar(&a.chdir, "chdir", "", "workspace root: commands run there and paths resolve against it (default: the current directory)")
	root.PersistentFlags().StringVar(&a.cacheDir, "cache", "", "cache folder, shareable among pipelines (default: <workspace>/.cairn; env CAIRN_CACHE)")
	root.PersistentFlags().BoolVar(&a.noColor, "no-color", false, "no colours and no live redrawing display (NO_COLOR and TERM=dumb do the same)")
	root.AddCommand(
		a.validateCmd(), a.planCmd(), a.applyCmd(), a.graphCmd(), a.fmtCmd(),
		a.showCmd(), a.statusCmd(), a.gcCmd(), a.gpusCmd(), a.aggregateCmd(), a.replayCmd(), a.reportCmd(), a.importCmd(), a.versionCmd(),
	)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagValueError(err) })
	runErrorsFail(root)
	return root
}

// strictHelpAndCompletion makes 'cairn help TOPIC' and 'cairn completion
// SHELL' refuse what they do not know (exit 2, as an unknown command),
// where cobra's own print their usage and exit 0.
func strictHelpAndCompletion(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			show := c.Run
			c.Run = nil
			c.RunE = func(c *cobra.Command, args []string) error {
				if cmd, _, err := c.Root().Find(args); err != nil || cmd == nil || cmd == c.Root() && len(args) > 0 {
					return badInput("no command %q: 'cairn --help' lists the commands", strings.Join(args, " "))
				}
				show(c, args)
				return nil
			}
		case "completion":
			// Its subcommands (bash, zsh, ...) write the scripts; an
			// argument that is none of them is an unknown command.
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
	}
}

// flagKinds says, per flag type, what a value must be and look like: a
// bad value is answered with this, not with the Go parser's words.
var flagKinds = map[string]string{
	"duration": "is not a duration: write it like 90s, 60m or 720h (units ms, s, m, h; a day is 24h)",
	"int":      "is not a whole number: write it like 4",
	"int64":    "is not a whole number: write it like 4",
	"uint":     "is not a whole number of 0 or more: write it like 4",
	"float64":  "is not a number: write it like 0.5",
	"bool":     "is not true or false",
}

// A flagProblem is what a flag of cairn's own type says of a bad value:
// "is empty: ...", after the flag and the value.
type flagProblem string

func (p flagProblem) Error() string { return string(p) }

// flagValueError rewrites a flag's bad value for people: the flag, the
// value and what it takes. Other flag errors are left as they are.
func flagValueError(err error) error {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return err
	}
	f := bad.GetFlag()
	kind, ok := flagKinds[f.Value.Type()]
	var own flagProblem
	if errors.As(err, &own) {
		kind, ok = string(own), true
	}
	if !ok {
		return err
	}
	if errors.Is(err, strconv.ErrRange) {
		// A whole number, and one too large to be any count or size.
		return fmt.Errorf("--%s %q is too large: write a number like 4", f.Name, bad.GetValue())
	}
	return fmt.Errorf("--%s %q %s", f.Name, bad.GetValue(), kind)
}

// runErrorsFail makes the errors a command returns once it runs exit 1,
// with their message and no usage hint: what went wrong then is not the
// command line (a full disk, a cache cairn may not write), unless the
// command says so with an *exitError (badInput). What cobra refuses
// before a command runs (unknown commands and flags, wrong arguments)
// stays a usage error, exit 2 (see run).
func runErrorsFail(c *cobra.Command) {
	if runE := c.RunE; runE != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			err := runE(cmd, args)
			var ee *exitError
			if err == nil || errors.As(err, &ee) {
				return err
			}
			if errors.Is(err, syscall.EPIPE) {
				// The reader of what the command prints went away
				// (cairn plan | head): it had what it wanted. Nothing
				// to say and no failure, as with the other tools of
				// such a pipeline.
				return nil
			}
			return &exitError{code: exitFailed, msg: err.Error()}
		}
	}
	for _, sub := range c.Commands() {
		runErrorsFail(sub)
	}
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print cairn's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(a.stdout, versionLine())
			return nil
		},
	}
}

// versionLine is what `cairn version` and `cairn --version` print: the
// version, and the key envelope and cache format it reads and writes.
func versionLine() string {
	return fmt.Sprintf("cairn %s (node key envelope %s, cache format %d)\n", version, plan.EnvelopeVersion, store.Format)
}

// varFlag collects --var and --var-file in command-line order.
type varFlag struct {
	dst  *[]dsl.VarArg
	file bool
}

func (v varFlag) String() string { return "" }
func (v varFlag) Type() string {
	if v.file {
		return "FILE"
	}
	return "NAME=VALUE"
}
func (v varFlag) Set(s string) error {
	*v.dst = append(*v.dst, dsl.VarArg{File: v.file, Value: s})
	return nil
}

// addrsFlag collects a repeatable address flag (--target, --replace),
// each address in NFC: the pipeline's keys are (cty's strings are), so an
// address typed or pasted in NFD ("cafe\u0301", as macOS names files)
// names the node all the same.
type addrsFlag struct{ dst *[]string }

func (f addrsFlag) String() string {
	if f.dst == nil || len(*f.dst) == 0 {
		return "[]"
	}
	return "[" + strings.Join(*f.dst, ",") + "]"
}
func (f addrsFlag) Type() string { return "stringArray" }
func (f addrsFlag) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		return flagProblem("is empty: an address looks like stage.NAME or stage.NAME[\"KEY\"]; `cairn plan` lists them")
	}
	*f.dst = append(*f.dst, norm.NFC.String(s))
	return nil
}

// decimalFlag is a whole number of 0 or more written in decimal digits
// only. pflag's int reads Go's literals: --bootstrap 010000 was 4096
// replicates (octal), and 0x10, 0b101, 1_000 and +5 were numbers too; a
// count typed with a leading zero means the decimal number.
type decimalFlag struct{ dst *int }

func (f decimalFlag) String() string {
	if f.dst == nil {
		return "0"
	}
	return strconv.Itoa(*f.dst)
}
func (f decimalFlag) Type() string { return "int" }
func (f decimalFlag) Set(s string) error {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return flagProblem("is not a whole number in decimal digits (0 to 9 only: no sign, 0x, 0b or _): write it like 4")
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return err // strconv.ErrRange: flagValueError says it is too large
	}
	*f.dst = n
	return nil
}

func (a *app) addVarFlags(cmd *cobra.Command) {
	cmd.Flags().Var(varFlag{dst: &a.vars}, "var", "set a variable (repeatable); later flags win")
	cmd.Flags().Var(varFlag{dst: &a.vars, file: true}, "var-file", "read variables from an HCL or JSON file (repeatable)")
}

func (a *app) varInputs() dsl.VarInputs {
	return dsl.VarInputs{Env: os.Environ(), Args: a.vars}
}

func (a *app) root() string {
	if a.chdir != "" {
		return a.chdir
	}
	wd, _ := os.Getwd()
	return wd
}

// path resolves a file named on the command line (--var-file, --out, fmt's
// files) against --chdir when one is given, as its help promises.
func (a *app) path(p string) string {
	if a.chdir == "" || p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(a.chdir, p)
}

// cachePath is the cache folder: --cache, else CAIRN_CACHE, else the
// workspace's .cairn. A relative one is relative to --chdir, as every
// path cairn is given: `cairn --chdir X` is `cd X && cairn`.
func (a *app) cachePath() string {
	if a.cacheDir != "" {
		return a.cacheDir
	}
	if env := os.Getenv("CAIRN_CACHE"); env != "" {
		return a.path(env)
	}
	return a.root() + "/.cairn"
}

// plainTerminal reports whether output must be plain even on a terminal:
// --no-color, NO_COLOR (any value), or TERM=dumb (a terminal that cannot
// take colours or cursor movement: Emacs' shell, some CI log viewers).
// Plain output has no colours and no redrawing live block.
func (a *app) plainTerminal() bool {
	return a.noColor || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb"
}

func (a *app) color() bool {
	if a.plainTerminal() {
		return false
	}
	f, ok := a.stderr.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// load loads the pipeline and prints diagnostics; errors become exit 2.
func (a *app) load(args []string) (*plan.Loaded, error) {
	path := "."
	if len(args) > 0 {
		path = args[0]
	}
	defer a.hugeHeap(path)()
	l, diags := plan.Load(plan.LoadOptions{
		Path: path, Root: a.root(),
		Vars: a.varInputs(), CacheDir: a.cachePath(),
	})
	if err := a.printDiags(l.Files(), diags); err != nil {
		return l, err
	}
	return l, nil
}

// inFileOrder sorts diagnostics, each once, by file and position, those
// without a position first: cairn finds problems phase by phase, but
// people fix them top to bottom.
func inFileOrder(diags hcl.Diagnostics) hcl.Diagnostics {
	// Each once: a reference checked in every instance of a stage gives
	// the same diagnostic once per instance.
	type same struct {
		sev                    hcl.DiagnosticSeverity
		summary, detail, where string
	}
	seen := map[same]bool{}
	out := make(hcl.Diagnostics, 0, len(diags))
	for _, d := range diags {
		k := same{d.Severity, d.Summary, d.Detail, ""}
		if d.Subject != nil {
			k.where = d.Subject.String()
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Subject, out[j].Subject
		switch {
		case a == nil || b == nil:
			return a == nil && b != nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		default:
			return a.Start.Byte < b.Start.Byte
		}
	})
	return out
}

// printDiags writes diagnostics with source snippets; errors among them
// become exit 2.
func (a *app) printDiags(files map[string]*hcl.File, diags hcl.Diagnostics) error {
	if len(diags) == 0 {
		return nil
	}
	a.warned = true
	diags = inFileOrder(dsl.TidyDiagnostics(diags))
	width := uint(100)
	if f, ok := a.stderr.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			width = uint(w)
		}
	}
	writeDiags(a.stderr, files, width, a.color(), diags)
	if diags.HasErrors() {
		n := 0
		var sources []string // where the values in error came from
		inValues := true     // every error is about a value given, not the pipeline
		for _, d := range diags {
			if d.Severity != hcl.DiagError {
				continue
			}
			n++
			if vi, ok := d.Extra.(dsl.ValueInput); ok {
				if !slices.Contains(sources, vi.Source) {
					sources = append(sources, vi.Source)
				}
			} else {
				inValues = false
			}
		}
		if inValues {
			return &exitError{code: exitBadInput, msg: fmt.Sprintf("%d error(s) in the variable values from %s; nothing was run", n, strings.Join(sources, ", "))}
		}
		return &exitError{code: exitBadInput, msg: fmt.Sprintf("%d error(s) in the pipeline; nothing was run", n)}
	}
	return nil
}
