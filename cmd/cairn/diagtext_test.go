package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A place that hcl writes into a message as a range ("p.hcl:2,3-6") reads
// FILE:LINE:COL, as the place each error starts with.
func TestPlacesInMessagesReadFileLineCol(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"p.hcl":    "variable \"a\" {\n  default = 1\n}\nstage \"command\" \"s\" {\n  run = [\"true\"]\n  run = [\"false\"]\n}\n",
		"dup.json": "{\"a\": 1,\n \"a\": 2}\n",
	})
	r := runCLI(t, "--chdir", root, "validate", "p.hcl")
	require.Equal(t, exitBadInput, r.code, r.stderr)
	assert.Regexp(t, `The argument "run" was already set at\s+\S*p\.hcl:5:3\.`, r.stderr)
	assert.NotRegexp(t, `p\.hcl:\d+,\d+`, r.stderr)

	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte("variable \"a\" {\n  default = 1\n}\nstage \"command\" \"s\" {\n  run = [\"true\"]\n}\n"), 0o644))
	r = runCLI(t, "--chdir", root, "validate", "p.hcl", "--var-file", "dup.json")
	require.Equal(t, exitBadInput, r.code, r.stderr)
	assert.Regexp(t, `The argument "a" was already set at\s+\S*dup\.json:1:2\.`, r.stderr)
}
