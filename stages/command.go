package stages

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
)

// Command runs one process: the workhorse kind.
//
//	stage "command" "NAME" {
//	  run   = ["python", "train.py", "--seed", "1"]   # an argument list, no shell
//	  shell = false                                   # true: run is one string for /bin/sh -c
//	  model_cache = {                                 # optional (docs/model-cache.md)
//	    endpoints = ["http://gpu1:8000/v1"]
//	  }
//	}
//
// With model_cache, cairn serves a model-call cache on loopback for the
// life of the process (commandcache.go).
type Command struct{}

func init() { Register(Command{}) }

// Name implements Kind.
// PurePlan implements PurePlanner.
func (Command) PurePlan() {}

func (Command) Name() string { return "command" }

// Version implements Kind.
func (Command) Version() int { return 1 }

// Schema implements Kind.
func (Command) Schema() *hcl.BodySchema {
	return &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "run", Required: true},
		{Name: "shell"},
		{Name: "model_cache"},
	}}
}

// Check implements Kind.
func (Command) Check(n *Node) hcl.Diagnostics {
	p, diags := commandArgv(n)
	_, mdiags := decodeModelCache(n)
	diags = append(diags, mdiags...)
	if !diags.HasErrors() && !hasModelCache(n) && usesModelCacheURL(p) {
		diags = append(diags, Diag("Invalid run", "run uses self.model_cache.url, but the stage has no model_cache: add model_cache = { endpoints = [...] } (docs/model-cache.md).", n.Range("run"))...)
	}
	return diags
}

// KeepsTimeout implements TimeoutKeeper: each process is killed at the
// stage's timeout (Runtime.Exec).
func (Command) KeepsTimeout() {}

// Run implements Kind.
func (Command) Run(ctx context.Context, n *Node, rt Runtime) (*Outcome, error) {
	p, diags := commandArgv(n)
	if diags.HasErrors() {
		return nil, diags
	}
	if hasModelCache(n) {
		return runWithModelCache(ctx, n, rt, p)
	}
	// Its one process writes the outputs: a cluster executor may check
	// that they are what the job left when cairn collects it.
	p.Outputs = n.Common.Outputs
	res, err := rt.Exec(ctx, p)
	if err != nil {
		return nil, err
	}
	return &Outcome{Class: res.Class, Message: res.Message, Proc: res}, nil
}

// maxArgLen is the kernel's limit on one argument (MAX_ARG_STRLEN, 32
// pages): execve refuses a longer one with "argument list too long".
const maxArgLen = 128 << 10

// checkArgs refuses what execve would refuse or silently cut: an argument
// holding a NUL byte (the program would see it end there) or longer than
// maxArgLen, counting its terminating NUL. It looks at the arguments known
// now; the others are checked when they are.
func checkArgs(run cty.Value, rng hcl.Range) hcl.Diagnostics {
	if run == cty.NilVal || !run.IsKnown() || run.IsNull() {
		return nil
	}
	run, _ = run.Unmark()
	check := func(i int, v cty.Value) hcl.Diagnostics {
		v, _ = v.Unmark()
		if !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
			return nil
		}
		return checkArg(i, v.AsString(), rng)
	}
	ty := run.Type()
	if ty.Equals(cty.String) {
		return check(-1, run)
	}
	if !(ty.IsListType() || ty.IsTupleType()) {
		return nil
	}
	var diags hcl.Diagnostics
	i := 0
	for ev := range dsl.Elements(run) {
		diags = append(diags, check(i, ev)...)
		i++
	}
	return diags
}

// checkArg is checkArgs for one argument, run[i] (run itself for i < 0).
func checkArg(i int, s string, rng hcl.Range) hcl.Diagnostics {
	name := func() string {
		if i < 0 {
			return "run"
		}
		return fmt.Sprintf("run[%d]", i)
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return Diag("Invalid run", fmt.Sprintf("%s holds a NUL byte (at byte %d): a program's arguments cannot hold one, so it would receive the argument cut there. Remove it.", name(), i), rng)
	}
	if len(s)+1 > maxArgLen {
		return Diag("Invalid run", fmt.Sprintf("%s is %d bytes: Linux refuses a single argument over 128 KiB (MAX_ARG_STRLEN), so the program could not start. Pass the data in a file instead (and name it in inputs).", name(), len(s)), rng)
	}
	return nil
}

// commandArgv decodes run and shell into a Proc. Unknown values (plan time)
// pass.
func commandArgv(n *Node) (Proc, hcl.Diagnostics) {
	var p Proc
	run := n.Args["run"]
	shell := n.Args["shell"]
	rng := n.Range("run")
	if shell != cty.NilVal && shell.IsKnown() && !shell.IsNull() {
		s, _ := shell.Unmark()
		if !s.Type().Equals(cty.Bool) {
			return p, Diag("Invalid shell", "shell must be true or false.", n.Range("shell"))
		}
		p.Shell = s.True()
	}
	// The common case, a list of known plain strings, in one pass.
	if argv, ok := plainStrings(run); ok {
		var diags hcl.Diagnostics
		for i, a := range argv {
			diags = append(diags, checkArg(i, a, rng)...)
		}
		if diags.HasErrors() {
			return p, diags
		}
		return p, argvChecks(&p, argv, rng)
	}
	if d := checkArgs(run, rng); d.HasErrors() {
		return p, d
	}
	if !run.IsWhollyKnown() {
		if err := StringElementsError(run); err != nil {
			return p, Diag("Invalid run", fmt.Sprintf("run must be a list of strings: %s.", err), rng)
		}
		return p, nil
	}
	run = unmarkDeep(run)
	if run.Type().Equals(cty.String) {
		if !p.Shell {
			return p, Diag("Invalid run",
				"run is an argument list, like [\"python\", \"train.py\"]; cairn never passes it through a shell unless the stage says shell = true (then run may be one string).", rng)
		}
		return p, argvChecks(&p, []string{run.AsString()}, rng)
	}
	argv, err := StringList(run)
	if err != nil {
		return p, Diag("Invalid run", fmt.Sprintf("run must be a list of strings: %s.", err), rng)
	}
	return p, argvChecks(&p, argv, rng)
}

// argvChecks checks a run list of strings and sets p.Argv to it.
func argvChecks(p *Proc, argv []string, rng hcl.Range) hcl.Diagnostics {
	if len(argv) == 0 {
		return Diag("Invalid run", "run must name a program: it is empty.", rng)
	}
	if p.Shell && len(argv) != 1 {
		return Diag("Invalid run", "With shell = true, run is one string (or a list of one string) for /bin/sh -c.", rng)
	}
	if p.Shell && strings.TrimSpace(argv[0]) == "" {
		return Diag("Invalid run", "With shell = true, run is the script /bin/sh -c runs: it is empty, and would do nothing.", rng)
	}
	p.Argv = argv
	return nil
}
