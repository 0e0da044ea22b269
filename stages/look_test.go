package stages

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Look answers each look once while the plan's moment lasts, and looks
// again once it has ended; a nil Look always looks.
func TestLookRemembersUntilItEnds(t *testing.T) {
	root := t.TempDir()
	w := filepath.Join(root, "w.py")
	argv := []string{"python3", "w.py"}

	var none *Look
	assert.Empty(t, workerFiles(none, root, argv))

	l := &Look{}
	assert.Empty(t, workerFiles(l, root, argv), "w.py does not exist yet")
	require.NoError(t, os.WriteFile(w, []byte("print(1)\n"), 0o644))
	assert.Empty(t, workerFiles(l, root, argv), "the plan's moment: as it was")
	assert.Len(t, workerFiles(none, root, argv), 1, "a nil Look looks again")

	require.NoError(t, os.MkdirAll(filepath.Join(root, "b"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "b", "p.txt"), []byte("x"), 0o644))
	require.NoError(t, l.bundleLinkProblem(root, []string{"b"}))
	require.NoError(t, os.Symlink("/", filepath.Join(root, "b", "out")))
	require.NoError(t, l.bundleLinkProblem(root, []string{"b"}), "the plan's moment: as it was")
	assert.ErrorContains(t, bundleLinkProblem(nil, root, []string{"b"}), "outside the workspace")

	l.End()
	assert.Len(t, workerFiles(l, root, argv), 1, "an ended Look looks again")
	assert.ErrorContains(t, l.bundleLinkProblem(root, []string{"b"}), "outside the workspace")
}
