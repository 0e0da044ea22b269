package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/storage/digest"
)

// checkSavedPlan refuses (exit 2) to apply a saved plan that p, the plan
// made now, does not match, or whose variables this apply's --var or
// --var-file change. a.vars holds the plan's variable flags, then the
// apply's own (see savedPlan).
func (a *app) checkSavedPlan(saved *plan.File, l *plan.Loaded, p *plan.Plan) error {
	if saved == nil {
		return nil
	}
	given := a.vars[len(saved.Vars):]
	if err := checkPlanInputs(saved, given); err != nil {
		return err
	}
	if err := a.checkPlanVars(l, saved.Vars, given); err != nil {
		return err
	}
	changed := saved.CheckAgainst(p)
	if len(changed) == 0 {
		return nil
	}
	msg := "the saved plan is stale; nothing was run. Changed since it was saved:\n  " + strings.Join(changed, "\n  ")
	if env := envVariables(l.Config); len(env) > 0 {
		msg += fmt.Sprintf("\nThe environment sets %s, which apply reads again: a value other than the one the plan was made with changes it (give it with --var to 'cairn plan --out FILE' to save it in the plan).", strings.Join(env, ", "))
	}
	return &exitError{code: exitBadInput, msg: msg + "\nMake a new plan with 'cairn plan --out FILE'."}
}

// checkPlanInputs refuses (exit 2) to apply a saved plan whose values
// cannot be had as they were planned: a sensitive variable given with
// --var at plan time (the file leaves its value out) and not given again
// (--var or CAIRN_VAR_), or a --var-file whose content changed since.
// The plan would be stale, and the stale keys would not say why.
func checkPlanInputs(saved *plan.File, given []dsl.VarArg) error {
	for _, name := range saved.Sensitive {
		again := slices.ContainsFunc(given, func(g dsl.VarArg) bool { return g.Name() == name })
		if _, env := os.LookupEnv("CAIRN_VAR_" + name); !again && !env {
			return badInput("the plan was made with --var %s=..., a sensitive variable whose value the plan file does not keep; nothing was run. Give it again: cairn apply PLANFILE --var %s=VALUE (or set CAIRN_VAR_%s)", name, name, name)
		}
	}
	for _, path := range slices.Sorted(maps.Keys(saved.VarFiles)) {
		now, err := digest.File(path)
		switch {
		case err != nil:
			return badInput("the variable file %s the plan was made with cannot be read now (%s); nothing was run. Make a new plan with 'cairn plan --out FILE'", path, err)
		case now != saved.VarFiles[path]:
			return badInput("the variable file %s changed since the plan was saved (sha256 %s then, %s now); nothing was run. A saved plan is applied with the variables it was planned with: make a new plan with 'cairn plan --out FILE'", path, saved.VarFiles[path][:12], now[:12])
		}
	}
	return nil
}

// checkPlanVars refuses a --var or --var-file given to 'cairn apply
// PLANFILE' (given) that gives a variable another value than the plan's
// own flags (saved) did: the plan would then be stale, but the flag, not
// the pipeline, changed it. A flag that gives the saved value again is
// accepted, and so is a sensitive variable's, whose value the plan file
// leaves out and apply needs again.
func (a *app) checkPlanVars(l *plan.Loaded, saved, given []dsl.VarArg) error {
	if len(given) == 0 {
		return nil
	}
	env := os.Environ()
	resolve := func(args []dsl.VarArg) map[string]cty.Value {
		vals, _ := l.Config.ResolveVariables(dsl.VarInputs{Env: env, Args: args}, l.Loader.Parser)
		return vals
	}
	planned := resolve(saved)
	for _, g := range given {
		now := resolve(append(slices.Clip(saved), g))
		for _, name := range l.Config.VarOrder {
			if v := l.Config.Variables[name]; v == nil || v.Sensitive {
				continue
			}
			was, ok1 := planned[name]
			is, ok2 := now[name]
			if !ok1 || !ok2 || !was.IsWhollyKnown() || !is.IsWhollyKnown() || was.Equals(is).True() {
				continue
			}
			flag := "--var " + g.Value
			if g.File {
				flag = "--var-file " + g.Value
			}
			isText, wasText := valueText(is), valueText(was)
			if !is.Type().Equals(was.Type()) {
				// "2" and 2 look alike in words: their types tell them apart.
				isText += ", " + is.Type().FriendlyName()
				wasText += ", " + was.Type().FriendlyName()
			}
			return badInput("%s gives var.%s another value (%s) than the saved plan was made with (%s); nothing was run. "+
				"A saved plan is applied with the variables it was planned with: give --var to 'cairn plan --out FILE', and apply the new plan "+
				"(a value the same as the saved one is accepted, and a sensitive variable's, which the plan file leaves out, is given again to apply)",
				flag, name, isText, wasText)
		}
	}
	return nil
}

// envVariables are the CAIRN_VAR_ environment variables set for the
// pipeline's variables that are not sensitive.
func envVariables(cfg *dsl.Config) []string {
	var out []string
	for _, name := range cfg.VarOrder {
		if v := cfg.Variables[name]; v != nil && !v.Sensitive {
			if _, ok := os.LookupEnv("CAIRN_VAR_" + name); ok {
				out = append(out, "CAIRN_VAR_"+name)
			}
		}
	}
	return out
}

// valueText is a variable's value as it is written in HCL.
func valueText(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	return strings.TrimSpace(string(hclwrite.TokensForValue(v).Bytes()))
}
