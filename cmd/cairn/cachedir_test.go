package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRefusedPlanMakesNoCacheFolders: `cairn --cache .. plan` of a
// pipeline whose outputs the cache folder would hold is refused (exit 2),
// and so is apply; neither leaves the cache's folders (cas/) behind in
// the folder it names, nor a default .cairn in the workspace.
func TestRefusedPlanMakesNoCacheFolders(t *testing.T) {
	parent := cliWorkspace(t, map[string]string{"ws/p.hcl": `stage "command" "s" {
  run     = ["sh", "-c", "echo 1 > o.txt"]
  outputs = ["o.txt"]
}
`})
	ws := filepath.Join(parent, "ws")
	for _, cmd := range []string{"plan", "apply"} {
		r := runCLI(t, "--chdir", ws, "--cache", parent, cmd, "p.hcl")
		assert.Equal(t, exitBadInput, r.code, cmd)
		assert.Contains(t, r.stderr, "is inside the cache folder", cmd)
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		require.Len(t, entries, 1, "%s left %v in the cache folder", cmd, entries)
		assert.Equal(t, "ws", entries[0].Name())
	}

	// The default cache folder, in the workspace: a refused pipeline
	// leaves no .cairn.
	root := cliWorkspace(t, map[string]string{"p.hcl": `stage "command" "s" {
  run     = ["true"]
  outputs = [".cairn/o.txt"]
}
`})
	r := runCLI(t, "--chdir", root, "plan", "p.hcl")
	assert.Equal(t, exitBadInput, r.code)
	assert.NoDirExists(t, filepath.Join(root, ".cairn"))
}
