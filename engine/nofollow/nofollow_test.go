package nofollow

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenDirRefusesLinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "a", "out")))
	require.NoError(t, os.Symlink("b", filepath.Join(root, "a", "in")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "missing"), filepath.Join(root, "dangling")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "file"), nil, 0o644))

	d, err := OpenDir(root, "a/b", false)
	require.NoError(t, err)
	d.Close()

	for rel, want := range map[string]LinkError{
		"a/out":      {Path: "a/out", Target: outside},
		"a/out/x/y":  {Path: "a/out", Target: outside},
		"a/in":       {Path: "a/in", Target: "b"},
		"dangling/x": {Path: "dangling", Target: filepath.Join(outside, "missing")},
		"file/x":     {Path: "file", NotDir: true},
		"a/./out/x/": {Path: "a/out", Target: outside},
	} {
		for _, create := range []bool{false, true} {
			_, err := OpenDir(root, rel, create)
			var le *LinkError
			require.True(t, errors.As(err, &le), "%s: %v", rel, err)
			assert.Equal(t, want, *le, rel)
		}
	}
	ents, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, ents, "created outside")

	_, err = OpenDir(filepath.Join(root, "a"), "../file", true)
	assert.ErrorContains(t, err, "leaves its root")
	_, err = Open(filepath.Join(root, "a"), "../file")
	assert.ErrorContains(t, err, "leaves its root")

	_, err = OpenDir(root, "new/x", false)
	assert.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
	d, err = OpenDir(root, "new/x", true)
	require.NoError(t, err)
	defer d.Close()
	fi, err := os.Lstat(filepath.Join(root, "new", "x"))
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
}

func TestOpenRefusesFinalLink(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "f"), []byte("content"), 0o644))
	require.NoError(t, os.Symlink("f", filepath.Join(root, "l")))
	f, err := Open(root, "f")
	require.NoError(t, err)
	b, err := io.ReadAll(f)
	f.Close()
	require.NoError(t, err)
	assert.Equal(t, "content", string(b))
	_, err = Open(root, "l")
	var le *LinkError
	require.True(t, errors.As(err, &le), "%v", err)
	assert.Equal(t, LinkError{Path: "l", Target: "f"}, *le)
	_, err = Open(root, "missing")
	assert.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
}

func TestRenameReplacesLink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "t")
	require.NoError(t, os.WriteFile(target, []byte("outside"), 0o644))
	require.NoError(t, os.Symlink(target, filepath.Join(root, "dst")))
	d, err := OpenDir(root, ".", false)
	require.NoError(t, err)
	defer d.Close()
	f, name, err := CreateTemp(d, ".tmp-")
	require.NoError(t, err)
	_, err = f.WriteString("new")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, Rename(d, name, "dst"))
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "outside", string(b), "written through the link")
	fi, err := os.Lstat(filepath.Join(root, "dst"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
	b, err = os.ReadFile(filepath.Join(root, "dst"))
	require.NoError(t, err)
	assert.Equal(t, "new", string(b))
}
