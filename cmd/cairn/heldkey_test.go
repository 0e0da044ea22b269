package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Workspaces sharing a cache each hold their own configuration: a node's
// change is told against what this workspace holds, and another
// configuration's file left in its folder output is refused, whatever
// another workspace committed since.
func TestEachWorkspaceHoldsItsOwnConfiguration(t *testing.T) {
	pipeline := `pipeline "held" {}
variable "files" {
  type    = list(string)
  default = ["f", "g"]
}
variable "tag" {
  type    = string
  default = "A"
}
stage "command" "x" {
  run     = ["sh", "-c", "mkdir -p od && for f in ${join(" ", var.files)}; do echo ${var.tag} > od/$f; done"]
  outputs = ["od"]
}
`
	w1 := cliWorkspace(t, map[string]string{"pipeline.hcl": pipeline})
	w2 := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(w2, "pipeline.hcl"), []byte(pipeline), 0o644))
	t.Setenv("CAIRN_CACHE", filepath.Join(t.TempDir(), "cache"))

	t.Chdir(w1)
	r := runCLI(t, "apply")
	require.Equal(t, 0, r.code, r.stderr)
	t.Chdir(w2)
	r = runCLI(t, "apply", "--var", `files=["f"]`, "--var", "tag=B")
	require.Equal(t, 0, r.code, r.stderr)

	t.Chdir(w1)
	r = runCLI(t, "plan", "--var", `files=["f"]`, "--var", "tag=C")
	assert.Contains(t, r.stdout, "do echo A > od", "told against A, which this workspace holds, not B")
	r = runCLI(t, "apply", "--var", `files=["f"]`, "--var", "tag=C")
	assert.Equal(t, 1, r.code, r.stdout)
	assert.Contains(t, r.stdout+r.stderr, "od holds od/g, which this run did not write")
}

// gc collects the record of configuration A and keeps the pointers that
// say which configuration each workspace holds: the workspace that held A
// is refused A's file left in its folder (whose it is can no longer be
// told), while a workspace that never held A keeps its own file there.
func TestCollectedConfigurationRefusedOnlyWhereItWasHeld(t *testing.T) {
	pipeline := `pipeline "held" {}
variable "files" {
  type    = list(string)
  default = ["f", "g"]
}
stage "command" "x" {
  run     = ["sh", "-c", "mkdir -p od && for f in ${join(" ", var.files)}; do echo $f > od/$f; done"]
  outputs = ["od"]
}
`
	w1 := cliWorkspace(t, map[string]string{"pipeline.hcl": pipeline})
	w2 := cliWorkspace(t, map[string]string{"pipeline.hcl": pipeline, "od/mine.txt": "mine\n"})
	t.Setenv("CAIRN_CACHE", filepath.Join(t.TempDir(), "cache"))

	t.Chdir(w1)
	r := runCLI(t, "apply")
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "gc", "--older-than", "0s")
	require.Equal(t, 0, r.code, r.stderr)

	t.Chdir(w2)
	r = runCLI(t, "apply", "--var", `files=["f"]`)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	got, err := os.ReadFile(filepath.Join(w2, "od", "mine.txt"))
	require.NoError(t, err)
	assert.Equal(t, "mine\n", string(got))

	t.Chdir(w1)
	r = runCLI(t, "apply", "--var", `files=["f", "h"]`)
	assert.Equal(t, 1, r.code, r.stdout)
	assert.Contains(t, r.stdout+r.stderr, "od holds od/g, which this run did not write")
	assert.Contains(t, r.stdout+r.stderr, "whose record is gone from the cache")
}
