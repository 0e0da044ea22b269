package stages

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
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

// A Look digests each tree once while the plan's moment lasts, Tree and
// ContentTree apart, a missing path too (its error kept); once the Look
// has ended, and with a nil Look, every call digests again.
func TestLookDigestsEachTreeOnce(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, "bundle")
	require.NoError(t, os.MkdirAll(bundle, 0o755))
	missing := filepath.Join(dir, "data.jsonl")
	dg := &countingDigester{calls: map[string]int{}}

	l := &Look{}
	for range 3 {
		d, err := l.Tree(dg, bundle, false)
		require.NoError(t, err)
		assert.Equal(t, "tree "+bundle, d)
		d, err = l.Tree(dg, bundle, true)
		require.NoError(t, err)
		assert.Equal(t, "content "+bundle, d)
		_, err = l.Tree(dg, missing, false)
		require.ErrorIs(t, err, fs.ErrNotExist)
	}
	assert.Equal(t, map[string]int{"tree " + bundle: 1, "content " + bundle: 1, "tree " + missing: 1}, dg.calls)

	var none *Look
	_, _ = none.Tree(dg, bundle, false)
	l.End()
	_, _ = l.Tree(dg, bundle, false)
	assert.Equal(t, 3, dg.calls["tree "+bundle], "a nil Look and an ended one digest again")
}

// countingDigester digests a path as its kind and name, counting the
// calls; a path that does not exist is fs.ErrNotExist.
type countingDigester struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingDigester) digest(kind, path string) (string, error) {
	c.mu.Lock()
	c.calls[kind+" "+path]++
	c.mu.Unlock()
	if _, err := os.Stat(path); err != nil {
		return "", err
	}
	return kind + " " + path, nil
}

func (c *countingDigester) Tree(path string) (string, error) { return c.digest("tree", path) }

func (c *countingDigester) ContentTree(path string) (string, error) {
	return c.digest("content", path)
}
