package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rerunPipeline writes a.txt from var.name; var.token, sensitive, has no
// default; stage b writes one file per key of var.sizes.
const rerunPipeline = `pipeline "p" {}
variable "name" {
  default = "n"
}
variable "token" {
  sensitive = true
}
variable "sizes" {
  type    = map(number)
  default = { small = 1 }
}
stage "command" "a" {
  run     = ["sh", "-c", "printf %s ${var.name} > a.txt"]
  outputs = ["a.txt"]
}
stage "command" "b" {
  for_each = var.sizes
  run      = ["sh", "-c", "seq ${each.value} > b-${each.key}.txt"]
  outputs  = ["b-${each.key}.txt"]
}
`

// lastRunAgain is the report of root's last run: its variables as the
// page lists them ("name=value"; "--var-file=PATH"), and the arguments
// its command to run it again gives cairn, read by sh with env (the
// environment the command runs in).
func lastRunAgain(t *testing.T, root string, env ...string) ([]string, []string) {
	t.Helper()
	return lastRunAgainIn(t, root, filepath.Join(root, ".cairn"), env...)
}

// lastRunAgainIn is lastRunAgain of the last run in the cache folder cache.
func lastRunAgainIn(t *testing.T, root, cache string, env ...string) ([]string, []string) {
	t.Helper()
	runs, err := filepath.Glob(filepath.Join(cache, "runs", "2*"))
	require.NoError(t, err)
	require.NotEmpty(t, runs)
	show := runCLI(t, "--chdir", root, "--cache", cache, "show", filepath.Base(runs[len(runs)-1]), "--json")
	require.Equal(t, exitOK, show.code, show.stderr)
	var rep struct {
		Run struct {
			Command string `json:"command"`
			Vars    []struct {
				Name, Value string
				File        bool
			} `json:"vars"`
		} `json:"run"`
	}
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &rep))
	var vars []string
	for _, v := range rep.Run.Vars {
		if v.File {
			vars = append(vars, "--var-file="+v.Value)
		} else {
			vars = append(vars, v.Name+"="+v.Value)
		}
	}
	cmd := exec.Command("sh", "-c", `cairn() { printf '%s\n' "$@"; }; `+rep.Run.Command)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s: %s", rep.Run.Command, out)
	return vars, strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}

// Variables an apply took from CAIRN_VAR_ are part of its run's
// configuration: the report lists them, and its command to run it again
// gives them (a sensitive one from CAIRN_VAR_ and its name in capitals),
// so that, run without the environment, it plans nothing new.
func TestRerunCommandCarriesEnvironmentVariables(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"pipeline.hcl": rerunPipeline})
	t.Setenv("CAIRN_VAR_name", "fromenv")
	t.Setenv("CAIRN_VAR_token", "S3")
	r := runCLI(t, "--chdir", root, "apply")
	require.Equal(t, exitOK, r.code, r.stderr)
	vars, args := lastRunAgain(t, root, "CAIRN_VAR_TOKEN=S3")
	assert.Equal(t, []string{"name=fromenv", "token=(sensitive)"}, vars)
	assert.Equal(t, []string{"--chdir", root, "apply", "--var", "name=fromenv", "--var", "token=S3"}, args)
	os.Unsetenv("CAIRN_VAR_name")
	os.Unsetenv("CAIRN_VAR_token")
	again := runCLI(t, args...)
	require.Equal(t, exitOK, again.code, again.stderr)
	assert.Contains(t, again.stdout, "0 ran")
	b, err := os.ReadFile(filepath.Join(root, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "fromenv", string(b))
}

// A run of a saved plan is reported with the plan's variables, and its
// command to run it again plans the same configuration (the pipeline,
// the variables, the targets), not the plan file, which the apply made
// stale.
func TestRerunCommandOfSavedPlanRunsItsConfiguration(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"pipeline.hcl": rerunPipeline})
	r := runCLI(t, "--chdir", root, "plan", "--var", "sizes={small=7,large=8}", "--var", "token=T", "--target", `stage.b["small"]`, "--out", "t.plan")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runCLI(t, "--chdir", root, "apply", "t.plan", "--var", "token=T")
	require.Equal(t, exitOK, r.code, r.stderr)
	vars, args := lastRunAgain(t, root, "CAIRN_VAR_TOKEN=T")
	assert.Equal(t, []string{"sizes={small=7,large=8}", "token=(sensitive)"}, vars)
	assert.Equal(t, []string{"--chdir", root, "apply", ".", "--var", "sizes={small=7,large=8}", "--target", `stage.b["small"]`, "--var", "token=T"}, args)
	again := runCLI(t, args...)
	require.Equal(t, exitOK, again.code, again.stderr)
	assert.Contains(t, again.stdout, "0 ran")
	_, err := os.Stat(filepath.Join(root, "b-large.txt"))
	assert.True(t, os.IsNotExist(err), "only the target ran: %v", err)
}

// A saved plan made on a --cache is applied there without one, and its
// run's command to run it again names that cache: run, it finds every
// node cached where the plan's apply left them.
func TestRerunCommandOfSavedPlanNamesItsCache(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"pipeline.hcl": rerunPipeline})
	r := runCLI(t, "--chdir", root, "--cache", "c", "plan", "--var", "token=T", "--out", "t.plan")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runCLI(t, "--chdir", root, "apply", "t.plan", "--var", "token=T")
	require.Equal(t, exitOK, r.code, r.stderr)
	_, args := lastRunAgainIn(t, root, filepath.Join(root, "c"), "CAIRN_VAR_TOKEN=T")
	assert.Equal(t, []string{"--chdir", root, "apply", "--cache", filepath.Join(root, "c"), ".", "--var", "token=T"}, args)
	again := runCLI(t, args...)
	require.Equal(t, exitOK, again.code, again.stderr)
	assert.Contains(t, again.stdout, "0 ran")
	assertNoDefaultCache(t, root)
}
