package plan

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/fsdigest"
)

// TestLookDigesterDigestsEachTreeOnce checks the digests a plan takes of
// its nodes' inputs: a folder is digested once in a plan, whatever changes
// under it while the plan is made, and a path missing when first asked
// stays missing; another plan (another look) sees the changes.
func TestLookDigesterDigestsEachTreeOnce(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, "bundle")
	require.NoError(t, os.MkdirAll(bundle, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bundle, "system.txt"), []byte("v1"), 0o644))
	missing := filepath.Join(dir, "data.jsonl")
	stat := fsdigest.Load("")

	look := newLookDigester(stat)
	first, err := look.Tree(bundle)
	require.NoError(t, err)
	content, err := look.ContentTree(bundle)
	require.NoError(t, err)
	_, err = look.Tree(missing)
	require.ErrorIs(t, err, fs.ErrNotExist)

	require.NoError(t, os.WriteFile(filepath.Join(bundle, "extra.txt"), []byte("new"), 0o644))
	require.NoError(t, os.WriteFile(missing, []byte("{}\n"), 0o644))
	again, err := look.Tree(bundle)
	require.NoError(t, err)
	assert.Equal(t, first, again, "one look digests a folder once")
	contentAgain, err := look.ContentTree(bundle)
	require.NoError(t, err)
	assert.Equal(t, content, contentAgain)
	_, err = look.Tree(missing)
	assert.ErrorIs(t, err, fs.ErrNotExist, "missing when the look first asked")

	next := newLookDigester(stat)
	changed, err := next.Tree(bundle)
	require.NoError(t, err)
	assert.NotEqual(t, first, changed, "the next look sees the new file")
	now, err := stat.Tree(bundle)
	require.NoError(t, err)
	assert.Equal(t, now, changed)
	_, err = next.Tree(missing)
	assert.NoError(t, err)
}
