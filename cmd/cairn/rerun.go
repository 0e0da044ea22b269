package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/plan"
)

// rerunArgs are the arguments that run this apply's configuration again,
// for the journal (engine.ApplyOptions.Rerun): args, the command line
// redacted, with what it does not say made explicit; nil where args say
// it all. A variable taken from CAIRN_VAR_ is a --var right after
// "apply", so that a --var-file or --var given later overrides it as it
// does the environment (a sensitive one as NAME=(sensitive), which the
// report asks for again). A saved plan (planArg, the apply's argument)
// is stale once applied: its pipeline, variables, --target, --replace and
// --only take its place.
func (a *app) rerunArgs(args []string, cfg *dsl.Config, saved *plan.File, planArg string) []string {
	at := slices.Index(args, "apply")
	if at < 0 {
		return nil
	}
	out := slices.Clone(args[:at+1])
	out = append(out, a.envVarArgs(cfg)...)
	rest := args[at+1:]
	if i := slices.Index(rest, planArg); saved != nil && i >= 0 {
		out = append(out, rest[:i]...)
		out = append(out, savedPlanArgs(saved, args)...)
		rest = rest[i+1:]
	}
	out = append(out, rest...)
	if slices.Equal(out, args) {
		return nil
	}
	return out
}

// envVarArgs are the --var flags for the pipeline's variables that this
// apply took from CAIRN_VAR_ environment variables: those that no --var
// (its own or its saved plan's) sets.
func (a *app) envVarArgs(cfg *dsl.Config) []string {
	given := map[string]bool{}
	for _, v := range a.vars {
		if name := v.Name(); name != "" {
			given[name] = true
		}
	}
	var out []string
	for _, name := range cfg.VarOrder {
		val, ok := os.LookupEnv("CAIRN_VAR_" + name)
		v := cfg.Variables[name]
		if !ok || given[name] || v == nil {
			continue
		}
		if v.Sensitive {
			val = "(sensitive)"
		}
		out = append(out, "--var", name+"="+val)
	}
	return out
}

// savedPlanArgs are the arguments that plan what saved plans: its
// pipeline, variables (a sensitive one is not in the file: the apply
// gives it again), targets, replaced nodes and --only; with --chdir its
// workspace root, where args (the apply's command line) has none and it
// is not the folder cairn was started in; with --cache its cache folder,
// where args has none and it is not the workspace's default.
func savedPlanArgs(saved *plan.File, args []string) []string {
	var out []string
	wd, _ := os.Getwd()
	if !givesFlag(args, "--chdir") && saved.Root != "" && filepath.Clean(saved.Root) != filepath.Clean(wd) {
		out = append(out, "--chdir", saved.Root)
	}
	if !givesFlag(args, "--cache") && saved.Cache != "" && filepath.Clean(saved.Cache) != filepath.Join(saved.Root, ".cairn") {
		out = append(out, "--cache", saved.Cache)
	}
	out = append(out, saved.Path)
	for _, v := range saved.Vars {
		flag := "--var"
		if v.File {
			flag = "--var-file"
		}
		out = append(out, flag, v.Value)
	}
	for _, t := range saved.Targets {
		out = append(out, "--target", t)
	}
	for _, r := range saved.Replace {
		out = append(out, "--replace", r)
	}
	if saved.Only {
		out = append(out, "--only")
	}
	return out
}

// givesFlag reports whether args give the flag, as "--flag VALUE" or
// "--flag=VALUE".
func givesFlag(args []string, flag string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") })
}
