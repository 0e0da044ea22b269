package atomicfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteReplacesAndLeavesNoTemporaryFile(t *testing.T) {
	for _, sync := range []bool{false, true} {
		dir := t.TempDir()
		p := filepath.Join(dir, "a", "b", "f.json")
		require.NoError(t, Write(p, []byte("one"), sync), "the folder is made")
		require.NoError(t, Write(p, []byte("two"), sync))
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, "two", string(b))
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
		left, err := os.ReadDir(filepath.Dir(p))
		require.NoError(t, err)
		assert.Len(t, left, 1, "no temporary file is left: %v", left)
	}
}

func TestWriteFailureKeepsTheOldContent(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	require.NoError(t, Write(p, []byte("old"), false))
	// A folder in the way of the rename: the write fails, the old file
	// is untouched and nothing is left behind.
	q := filepath.Join(dir, "d")
	require.NoError(t, os.MkdirAll(filepath.Join(q, "x"), 0o755))
	assert.Error(t, Write(q, []byte("new"), false))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "old", string(b))
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, left, 2, "%v", left)
}

// TestWriteRespectsUmask: the file gets 0666 less the umask, so the group
// of a shared cache may replace it when the umask lets it.
func TestWriteRespectsUmask(t *testing.T) {
	old := syscall.Umask(0o002)
	defer syscall.Umask(old)
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, Write(p, []byte("x"), false))
	st, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o664), st.Mode().Perm())
}

// WriteAll writes every file or, when one cannot be written, none: the
// others keep their old content and no temporary file is left.
func TestWriteAllIsAllOrNone(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "sub", "b.svg")
	require.NoError(t, WriteAll([]File{{a, []byte("a1")}, {b, []byte("b1")}}, true))
	for p, want := range map[string]string{a: "a1", b: "b1"} {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
	// The second file's folder cannot be made (a file is in its way):
	// the first is not replaced either.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "blocker"), nil, 0o644))
	c := filepath.Join(dir, "blocker", "c.svg")
	assert.Error(t, WriteAll([]File{{a, []byte("a2")}, {c, []byte("c2")}}, false))
	got, err := os.ReadFile(a)
	require.NoError(t, err)
	assert.Equal(t, "a1", string(got), "nothing is written when one file cannot be")
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"a.json", "sub", "blocker"}, names, "no temporary file is left")
}

// WriteKeepMode writes a link's target, with the target's mode, and
// leaves the link a link.
func TestWriteKeepModeThroughALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "notes.md")
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o600))
	link := filepath.Join(dir, "link.md")
	require.NoError(t, os.Symlink(target, link))
	require.NoError(t, WriteKeepMode(link, []byte("new"), false))
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "still a link")
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "new", string(b))
	fi, err = os.Stat(target)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

// WriteKeepMode keeps the file's owner and group where the user may set
// them (root may): a rename would otherwise make the file the writer's.
func TestWriteKeepModeKeepsTheOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("gives a file to another user: needs root")
	}
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o640))
	require.NoError(t, os.Chown(p, 65534, 65534))
	require.NoError(t, WriteKeepMode(p, []byte("new"), false))
	st, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, uint32(65534), st.Sys().(*syscall.Stat_t).Uid)
	assert.Equal(t, uint32(65534), st.Sys().(*syscall.Stat_t).Gid)
	assert.Equal(t, os.FileMode(0o640), st.Mode().Perm())
}

// RemoveLeftovers removes the temporary files a killed writer left beside
// a file (beside a link's target for a link), named as cairn names them;
// not one a live writer holds, nor any other file.
func TestRemoveLeftoversTakesOnlyDeadWritersTemps(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.hcl")
	require.NoError(t, Write(p, []byte("x = 1\n"), false))
	dead := filepath.Join(dir, ".p.hcl.tmp-0123456789abcdef")
	others := []string{".p.hcl.tmp-mine", ".p.hcl.tmp-0123456789abcdeg", ".p.hcl.tmp-0123456789abcdef0",
		".q.hcl.tmp-0123456789abcdef", "p.hcl.tmp-0123456789abcdef", ".p.hcl.tmp-"}
	for _, n := range append(others, filepath.Base(dead)) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("partial"), 0o644))
	}
	live, held, err := createTemp(p)
	require.NoError(t, err)
	require.NoError(t, live.Close(), "its writer holds the lock until the rename, not the file")
	require.NotNil(t, held, "this file system has flock")

	assert.Equal(t, []string{dead}, RemoveLeftovers(p))
	assert.NoFileExists(t, dead)
	assert.FileExists(t, live.Name(), "a live writer's temporary file")
	for _, n := range others {
		assert.FileExists(t, filepath.Join(dir, n), "not a temporary file of p.hcl")
	}
	assert.FileExists(t, p)

	// Once its writer is gone (killed: its lock goes with it), it is a
	// leftover too; through a link, the target's leftovers go.
	release(held)
	require.NoError(t, os.Symlink(p, filepath.Join(dir, "l.hcl")))
	assert.Equal(t, []string{live.Name()}, RemoveLeftovers(filepath.Join(dir, "l.hcl")))
	require.NoError(t, Write(p, []byte("x = 2\n"), true), "a write after it")
	assert.Empty(t, RemoveLeftovers(p))
}
