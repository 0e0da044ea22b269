package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A node that asks for more GPUs than the machine has is planned as
// refused, as apply refuses it (exit 1, nothing run), not as "run"; and
// apply's first line counts it so.
func TestPlanShowsANodeAskingForTooManyGPUsAsRefused(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": "pipeline \"p\" {}\nstage \"command\" \"g\" {\n  run  = [\"true\"]\n  gpus = 3\n}\nstage \"command\" \"c\" {\n  run = [\"true\"]\n}\n"})
	t.Setenv("CAIRN_GPUS", "sim:2")
	r := runCLI(t, "--chdir", root, "plan", "--no-color", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `(?m)^\s*! stage\.g\s+refused: asks for 3 GPU\(s\); this machine has 2 \(simulated`, r.stdout)
	assert.Regexp(t, `(?m)^\s*\+ stage\.c\s+run: new$`, r.stdout)
	assert.Contains(t, r.stdout, "Plan: 1 to run, 1 refused, 0 cached.")
	r = runCLI(t, "--chdir", root, "apply", "--no-color", "p.hcl")
	assert.Equal(t, exitFailed, r.code, r.stderr)
	assert.Contains(t, r.stdout, "1 to run, 1 refused, 0 cached")
	assert.Contains(t, r.stderr, "stage.g asks for 3 GPU(s)")

	t.Setenv("CAIRN_GPUS", "sim:3")
	r = runCLI(t, "--chdir", root, "plan", "--no-color", "p.hcl")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `(?m)^\s*\+ stage\.g\s+run: new$`, r.stdout)
	assert.Contains(t, r.stdout, "Plan: 2 to run, 0 cached.")
}
