package stages_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/plan"
)

// A job's seed and budget are whole numbers as cpus and concurrency are:
// written as strings, or through an untyped variable given --var (a
// string), they are taken; a string that is no whole number is refused
// at the attribute's file:line:col, in words.
func TestJobSeedBudgetFromStringsAndVars(t *testing.T) {
	load := func(seed, budget string, vars ...string) hcl.Diagnostics {
		t.Helper()
		root := t.TempDir()
		src := `pipeline "p" {}

variable "seed" {
  default = 0
}

stage "job" "j" {
  out        = "runs/x"
  method     = "gepa"
  dataset    = "d"
  runtime    = "r"
  model      = "m"
  task_model = "t"
  seed       = ` + seed + `
  budget     = ` + budget + `
}
`
		require.NoError(t, os.WriteFile(filepath.Join(root, "pipeline.hcl"), []byte(src), 0o644))
		var args []dsl.VarArg
		for _, v := range vars {
			args = append(args, dsl.VarArg{Value: v})
		}
		// As cairn validate checks a pipeline.
		l, diags := plan.Load(plan.LoadOptions{Path: "pipeline.hcl", Root: root, Vars: dsl.VarInputs{Args: args}, Validate: true})
		require.NotNil(t, l.Graph, "%s", diags.Error())
		if !diags.HasErrors() {
			diags = append(diags, l.Graph.CheckStages()...)
		}
		return diags
	}
	for _, c := range [][]string{
		{`"1"`, `"10"`}, {"1", "10"}, {"var.seed", `"600"`, "seed=1"}, {"var.seed", "10", "seed=0"}, {`"2.0"`, `"1e3"`},
	} {
		diags := load(c[0], c[1], c[2:]...)
		assert.False(t, diags.HasErrors(), "seed = %s, budget = %s %v: %s", c[0], c[1], c[2:], diags.Error())
	}
	for _, c := range []struct {
		seed, budget, summary, detail string
		line, col                     int
		vars                          []string
	}{
		{`"abc"`, "10", "Invalid seed", "seed must be a whole number.", 14, 16, nil},
		{`"1.5"`, "10", "Invalid seed", "seed must be a whole number.", 14, 16, nil},
		{"var.seed", "10", "Invalid seed", "seed must be a whole number.", 14, 16, []string{"seed=abc"}},
		{"1", `"ten"`, "Invalid budget", "budget must be a whole number of rollouts, 0 or more.", 15, 16, nil},
		{"1", `"-1"`, "Invalid budget", "budget must be a whole number of rollouts, 0 or more.", 15, 16, nil},
	} {
		diags := load(c.seed, c.budget, c.vars...)
		require.True(t, diags.HasErrors(), "seed = %s, budget = %s", c.seed, c.budget)
		var errs []*hcl.Diagnostic
		for _, d := range diags {
			if d.Severity == hcl.DiagError {
				errs = append(errs, d)
			}
		}
		require.Len(t, errs, 1, "%s", diags.Error())
		d := errs[0]
		assert.Equal(t, c.summary, d.Summary)
		assert.Equal(t, c.detail, d.Detail)
		require.NotNil(t, d.Subject)
		assert.True(t, strings.HasSuffix(d.Subject.Filename, "pipeline.hcl"), d.Subject.Filename)
		assert.Equal(t, c.line, d.Subject.Start.Line, "seed = %s, budget = %s", c.seed, c.budget)
		assert.Equal(t, c.col, d.Subject.Start.Column, "seed = %s, budget = %s", c.seed, c.budget)
	}
}
