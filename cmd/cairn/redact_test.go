package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl"
)

// The command line journaled by apply never holds a sensitive variable's
// value, however the flag is spelled; other variables stay readable.
func TestRedactArgs(t *testing.T) {
	vars := map[string]*dsl.Variable{
		"token": {Name: "token", Sensitive: true},
		"tag":   {Name: "tag"},
	}
	cases := []struct{ in, want []string }{
		{[]string{"apply", "--var", "token=abc", "--var", "tag=x"}, []string{"apply", "--var", "token=(sensitive)", "--var", "tag=x"}},
		{[]string{"apply", "-var", "token=abc"}, []string{"apply", "-var", "token=(sensitive)"}},
		{[]string{"apply", "--var=token=abc=def"}, []string{"apply", "--var=token=(sensitive)"}},
		{[]string{"apply", "-var=token=abc", "-var=tag=y"}, []string{"apply", "-var=token=(sensitive)", "-var=tag=y"}},
		{[]string{"apply", "--var-file", "token=abc"}, []string{"apply", "--var-file", "token=abc"}},
		{[]string{"apply", "--var"}, []string{"apply", "--var"}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, redactArgs(tc.in, vars), "%q", tc.in)
	}
}

// plan's reasons never show a sensitive value, in an input path either:
// missing, changed, or replaced by another secret's file.
func TestPlanReasonsHideSensitiveInputPaths(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": `pipeline "p" {}
variable "tok" {
  default   = "s3cr3t"
  sensitive = true
}
stage "command" "c" {
  run    = ["true"]
  inputs = ["${var.tok}.in"]
}
`})
	check := func(r cliResult, want string) {
		t.Helper()
		assert.NotContains(t, r.stdout+r.stderr, "s3cr3t")
		assert.NotContains(t, r.stdout+r.stderr, "other.in")
		assert.Contains(t, r.stdout, want)
	}
	r := runCLI(t, "--chdir", root, "plan", "p.hcl")
	check(r, "input (sensitive) does not exist yet")
	require.NoError(t, os.WriteFile(filepath.Join(root, "s3cr3t.in"), []byte("a"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "other.in"), []byte("b"), 0o644))
	r = runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.NoError(t, os.WriteFile(filepath.Join(root, "s3cr3t.in"), []byte("z"), 0o644))
	check(runCLI(t, "--chdir", root, "plan", "p.hcl"), "input (sensitive) changed")
	check(runCLI(t, "--chdir", root, "plan", "p.hcl", "--var", "tok=other"), "input (sensitive) added")
	journals, err := filepath.Glob(filepath.Join(root, ".cairn", "runs", "*", "journal"))
	require.NoError(t, err)
	for _, j := range journals {
		b, err := os.ReadFile(j)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "s3cr3t", j)
	}
}
