package stages

import (
	"context"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Command runs one process: the workhorse kind.
//
//	stage "command" "NAME" {
//	  run   = ["python", "train.py", "--seed", "1"]   # an argument list, no shell
//	  shell = false                                   # true: run is one string for /bin/sh -c
//	}
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
	}}
}

// Check implements Kind.
func (Command) Check(n *Node) hcl.Diagnostics {
	_, diags := commandArgv(n)
	return diags
}

// Run implements Kind.
func (Command) Run(ctx context.Context, n *Node, rt Runtime) (*Outcome, error) {
	p, diags := commandArgv(n)
	if diags.HasErrors() {
		return nil, diags
	}
	res, err := rt.Exec(ctx, p)
	if err != nil {
		return nil, err
	}
	return &Outcome{Class: res.Class, Message: res.Message, Proc: res}, nil
}

// commandArgv decodes run and shell into a Proc. Unknown values (plan time)
// pass.
func commandArgv(n *Node) (Proc, hcl.Diagnostics) {
	var p Proc
	run := n.Args["run"]
	shell := n.Args["shell"]
	rng := n.Ranges["run"]
	if shell != cty.NilVal && shell.IsKnown() && !shell.IsNull() {
		s, _ := shell.Unmark()
		if !s.Type().Equals(cty.Bool) {
			return p, Diag("Invalid shell", "shell must be true or false.", n.Ranges["shell"])
		}
		p.Shell = s.True()
	}
	if !run.IsWhollyKnown() {
		return p, nil
	}
	run = unmarkDeep(run)
	if run.Type().Equals(cty.String) {
		if !p.Shell {
			return p, Diag("Invalid run",
				"run is an argument list, like [\"python\", \"train.py\"]; cairn never passes it through a shell unless the stage says shell = true (then run may be one string).", rng)
		}
		p.Argv = []string{run.AsString()}
		return p, nil
	}
	argv, err := StringList(run)
	if err != nil {
		return p, Diag("Invalid run", fmt.Sprintf("run must be a list of strings: %s.", err), rng)
	}
	if len(argv) == 0 {
		return p, Diag("Invalid run", "run must name a program: it is empty.", rng)
	}
	if p.Shell {
		if len(argv) != 1 {
			return p, Diag("Invalid run", "With shell = true, run is one string (or a list of one string) for /bin/sh -c.", rng)
		}
	}
	p.Argv = argv
	return p, nil
}
