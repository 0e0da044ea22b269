package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --replace on a node that ran before is a rerun, "~" as docs/language.md
// says; on a node that never ran it is new, "+".
func TestPlanShowsAReplacedNodeAsARerun(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "pipeline \"p\" {}\nstage \"command\" \"a\" {\n  run = [\"true\"]\n}\nstage \"command\" \"b\" {\n  run = [\"echo\", \"b\"]\n}\n"})
	r := runCLI(t, "--chdir", root, "plan", "--no-color", "--replace", "stage.a", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `(?m)^\s*\+ stage\.a\s+run: replace requested \(--replace\)$`, r.stdout)
	r = runCLI(t, "--chdir", root, "apply", "--target", "stage.a", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runCLI(t, "--chdir", root, "plan", "--no-color", "--replace", "stage.a", "--replace", "stage.b", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `(?m)^\s*~ stage\.a\s+run: replace requested \(--replace\)$`, r.stdout)
	assert.Regexp(t, `(?m)^\s*\+ stage\.b\s+run: replace requested \(--replace\)$`, r.stdout)
}
