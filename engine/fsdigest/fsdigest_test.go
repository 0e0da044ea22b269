//go:build unix

package fsdigest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func shaHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func write(t testing.TB, path string, content string, perm os.FileMode) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), perm))
	require.NoError(t, os.Chmod(path, perm))
	return path
}

// later returns a cache whose digests are taken an hour from now, so that
// files written by the test are old enough to be stored.
func later(path string) *Cache {
	c := Load(path)
	c.clock = func() time.Time { return time.Now().Add(time.Hour) }
	return c
}

func stat(t *testing.T, path string) statKey {
	t.Helper()
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	return keyOf(fi)
}

// rewriteSameSize replaces the content of path in place with content of the
// same length and puts the modification time back, the way a tool that
// preserves timestamps would. It waits until the change time moves on, so
// the rewrite is not racy in the sense of the package comment.
func rewriteSameSize(t *testing.T, path, content string) {
	t.Helper()
	before := stat(t, path)
	beforeCtime := rawCtime(t, path)
	require.Equal(t, before.size, int64(len(content)))
	mtime := time.Unix(0, before.mtime)
	deadline := time.Now().Add(10 * time.Second)
	for {
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		require.NoError(t, os.Chtimes(path, mtime, mtime))
		after := stat(t, path)
		require.Equal(t, before.size, after.size)
		require.Equal(t, before.mtime, after.mtime)
		require.Equal(t, before.ino, after.ino)
		if rawCtime(t, path) != beforeCtime {
			return
		}
		require.True(t, time.Now().Before(deadline), "change time never moved")
		time.Sleep(time.Millisecond)
	}
}

func TestFileDigest(t *testing.T) {
	dir := t.TempDir()
	a := write(t, filepath.Join(dir, "a"), "same content", 0o644)
	b := write(t, filepath.Join(dir, "sub", "b"), "same content", 0o755)
	other := write(t, filepath.Join(dir, "c"), "other content", 0o644)
	c := Load("")
	da, err := c.File(a)
	require.NoError(t, err)
	db, err := c.File(b)
	require.NoError(t, err)
	dc, err := c.File(other)
	require.NoError(t, err)
	assert.Equal(t, shaHex([]byte("same content")), da)
	assert.Equal(t, da, db, "name and mode do not enter a file digest")
	assert.NotEqual(t, da, dc)

	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink("a", link))
	dl, err := c.File(link)
	require.NoError(t, err)
	assert.Equal(t, da, dl, "File follows symbolic links")

	_, err = c.File(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = c.File(dir)
	assert.ErrorContains(t, err, "not a regular file")
}

func TestRelativePathsShareEntries(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "f"), "x", 0o644)
	t.Chdir(dir)
	c := later("")
	_, err := c.File("f")
	require.NoError(t, err)
	_, err = c.File(filepath.Join(dir, "f"))
	require.NoError(t, err)
	_, err = c.File("./sub/../f")
	require.NoError(t, err)
	hits, misses := c.Stats()
	assert.Equal(t, 2, hits)
	assert.Equal(t, 1, misses)
}

func TestRacy(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	ns := func(d time.Duration) int64 { return now.Add(d).UnixNano() }
	tests := []struct {
		name         string
		mtime, ctime int64
		want         bool
	}{
		{"old", ns(-time.Hour), ns(-time.Hour), false},
		{"just outside the window", ns(-racyWindow - 1), ns(-racyWindow - 1), false},
		{"modified within the window", ns(-time.Second), ns(-time.Second), true},
		{"modified at the same instant", ns(0), ns(0), true},
		{"mtime set back, changed just now", ns(-time.Hour), ns(-time.Millisecond), true},
		{"from the future", ns(time.Hour), ns(time.Hour), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, racy(statKey{mtime: tt.mtime, ctime: tt.ctime}, now))
		})
	}
}

func TestFreshFileIsNotStored(t *testing.T) {
	p := write(t, filepath.Join(t.TempDir(), "f"), "just written", 0o644)
	c := Load("") // real clock: the file is younger than the racy window
	for i := 0; i < 3; i++ {
		d, err := c.File(p)
		require.NoError(t, err)
		assert.Equal(t, shaHex([]byte("just written")), d)
	}
	hits, misses := c.Stats()
	assert.Equal(t, 0, hits)
	assert.Equal(t, 3, misses)
	assert.Empty(t, c.entries)

	c.clock = func() time.Time { return time.Now().Add(time.Hour) } // the file has aged
	_, err := c.File(p)
	require.NoError(t, err)
	_, err = c.File(p)
	require.NoError(t, err)
	hits, misses = c.Stats()
	assert.Equal(t, 1, hits)
	assert.Equal(t, 4, misses)
}

// The racy case: a file rewritten right after it was hashed, with the same
// size, in place, and its modification time put back.
func TestRewriteRightAfterHashingIsSeen(t *testing.T) {
	p := write(t, filepath.Join(t.TempDir(), "f"), "content A", 0o644)
	fi, err := os.Stat(p)
	require.NoError(t, err)
	c := Load("")
	d1, err := c.File(p)
	require.NoError(t, err)

	require.NoError(t, os.WriteFile(p, []byte("content B"), 0o644))
	require.NoError(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
	d2, err := c.File(p)
	require.NoError(t, err)
	assert.Equal(t, shaHex([]byte("content A")), d1)
	assert.Equal(t, shaHex([]byte("content B")), d2)
}

func TestStatChangeForcesRehash(t *testing.T) {
	tests := []struct {
		name    string
		change  func(t *testing.T, p string)
		content string // after the change
	}{
		{"content with size and mtime preserved", func(t *testing.T, p string) {
			rewriteSameSize(t, p, "content B")
		}, "content B"},
		{"mtime", func(t *testing.T, p string) {
			old := time.Now().Add(-3 * time.Hour)
			require.NoError(t, os.Chtimes(p, old, old))
		}, "content A"},
		{"inode (replaced by a copy with the same mtime)", func(t *testing.T, p string) {
			fi, err := os.Stat(p)
			require.NoError(t, err)
			tmp := write(t, p+".new", "content A", 0o644)
			require.NoError(t, os.Chtimes(tmp, fi.ModTime(), fi.ModTime()))
			require.NoError(t, os.Rename(tmp, p))
		}, "content A"},
		{"mode", func(t *testing.T, p string) {
			require.NoError(t, os.Chmod(p, 0o600))
		}, "content A"},
		{"size", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, []byte("content A, longer"), 0o644))
		}, "content A, longer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := write(t, filepath.Join(t.TempDir(), "f"), "content A", 0o644)
			c := later("")
			_, err := c.File(p)
			require.NoError(t, err)
			d, err := c.File(p)
			require.NoError(t, err)
			hits, misses := c.Stats()
			require.Equal(t, 1, hits, "the unchanged file is a hit")
			require.Equal(t, 1, misses)
			assert.Equal(t, shaHex([]byte("content A")), d)

			tt.change(t, p)
			d, err = c.File(p)
			require.NoError(t, err)
			assert.Equal(t, shaHex([]byte(tt.content)), d)
			hits, misses = c.Stats()
			assert.Equal(t, 1, hits)
			assert.Equal(t, 2, misses, "the change forced a rehash")
		})
	}
}

// buildTree lays out the tree used by the encoding and mutation tests.
func buildTree(t *testing.T, root string) {
	t.Helper()
	write(t, filepath.Join(root, "a", "x"), "1", 0o755)
	write(t, filepath.Join(root, "a.txt"), "2", 0o644)
	write(t, filepath.Join(root, ".hidden"), "3", 0o600)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "empty"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "z", "deep"), 0o755))
	require.NoError(t, os.Symlink("a/x", filepath.Join(root, "link")))
}

func TestTreeEncoding(t *testing.T) {
	root := t.TempDir()
	buildTree(t, root)
	want := sha256.Sum256([]byte("cairn.tree.v1\n" +
		".hidden\x00-\x00" + shaHex([]byte("3")) + "\n" +
		"a/x\x00x\x00" + shaHex([]byte("1")) + "\n" +
		"a.txt\x00-\x00" + shaHex([]byte("2")) + "\n" +
		"empty/\x00d\n" +
		"link\x00l\x00a/x\n" +
		"z/deep/\x00d\n"))
	got, err := Load("").Tree(root)
	require.NoError(t, err)
	assert.Equal(t, hex.EncodeToString(want[:]), got)

	empty, err := Load("").Tree(t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, shaHex([]byte("cairn.tree.v1\n")), empty)
}

// Names lists what Tree encodes, in its order, without reading a file;
// a file has none.
func TestNamesAreTheTreesEntries(t *testing.T) {
	root := t.TempDir()
	buildTree(t, root)
	names, err := Names(root)
	require.NoError(t, err)
	assert.Equal(t, []string{".hidden", "a/x", "a.txt", "empty", "link", "z/deep"}, names)

	write(t, filepath.Join(root, "a", "__pycache__", "x.pyc"), "c", 0o644)
	write(t, filepath.Join(root, "z", "deep", "__pycache__", "y.pyc"), "c", 0o644)
	names, err = Names(root)
	require.NoError(t, err)
	assert.Equal(t, []string{".hidden", "a/x", "a.txt", "empty", "link", "z/deep"}, names, "__pycache__ folders are not there")

	names, err = Names(filepath.Join(root, "a.txt"))
	require.NoError(t, err)
	assert.Nil(t, names)
	_, err = Names(filepath.Join(root, "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestTreeChanges(t *testing.T) {
	base := t.TempDir()
	buildTree(t, base)
	baseDigest, err := Load("").Tree(base)
	require.NoError(t, err)

	tests := []struct {
		name    string
		mutate  func(t *testing.T, root string)
		changes bool
	}{
		{"nothing", func(*testing.T, string) {}, false},
		{"mtime only", func(t *testing.T, root string) {
			old := time.Now().Add(-time.Hour)
			require.NoError(t, os.Chtimes(filepath.Join(root, "a.txt"), old, old))
		}, false},
		{"non-exec permission bits", func(t *testing.T, root string) {
			require.NoError(t, os.Chmod(filepath.Join(root, "a.txt"), 0o600))
		}, false},
		{"rename a file", func(t *testing.T, root string) {
			require.NoError(t, os.Rename(filepath.Join(root, "a.txt"), filepath.Join(root, "b.txt")))
		}, true},
		{"move a file into a directory", func(t *testing.T, root string) {
			require.NoError(t, os.Rename(filepath.Join(root, "a.txt"), filepath.Join(root, "empty", "a.txt")))
		}, true},
		{"set an exec bit", func(t *testing.T, root string) {
			require.NoError(t, os.Chmod(filepath.Join(root, "a.txt"), 0o744))
		}, true},
		{"clear the exec bits", func(t *testing.T, root string) {
			require.NoError(t, os.Chmod(filepath.Join(root, "a", "x"), 0o644))
		}, true},
		{"add an empty directory", func(t *testing.T, root string) {
			require.NoError(t, os.Mkdir(filepath.Join(root, "new"), 0o755))
		}, true},
		{"remove an empty directory", func(t *testing.T, root string) {
			require.NoError(t, os.Remove(filepath.Join(root, "empty")))
		}, true},
		{"add a hidden file", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "a", ".keep"), "", 0o644)
		}, true},
		{"change content, same size", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "a.txt"), "9", 0o644)
		}, true},
		{"retarget a symlink", func(t *testing.T, root string) {
			require.NoError(t, os.Remove(filepath.Join(root, "link")))
			require.NoError(t, os.Symlink("a.txt", filepath.Join(root, "link")))
		}, true},
		{"replace a symlink by the file it points to", func(t *testing.T, root string) {
			require.NoError(t, os.Remove(filepath.Join(root, "link")))
			write(t, filepath.Join(root, "link"), "1", 0o755)
		}, true},
		// Python's bytecode caches beside the modules it imports are
		// not there for the digest; a folder holding nothing else is
		// an empty folder.
		{"add __pycache__ folders", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "__pycache__", "m.cpython-311.pyc"), "c", 0o644)
			write(t, filepath.Join(root, "a", "__pycache__", "x.pyc"), "c", 0o644)
			write(t, filepath.Join(root, "empty", "__pycache__", "sub", "y.pyc"), "c", 0o644)
			require.NoError(t, os.MkdirAll(filepath.Join(root, "z", "deep", "__pycache__"), 0o755))
		}, false},
		{"add a __pycache__ in a new folder", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "new", "__pycache__", "m.pyc"), "c", 0o644)
		}, true},
		{"add a file named __pycache__", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "a", "__pycache__"), "c", 0o644)
		}, true},
		// The lock an apply holds on an optimizer job's out folder says
		// which apply holds it, no figure of the job.
		{"add out folder locks", func(t *testing.T, root string) {
			write(t, filepath.Join(root, OutLock), `{"pid":1}`, 0o644)
			write(t, filepath.Join(root, "a", OutLock), `{"pid":2}`, 0o644)
		}, false},
		{"add an out folder lock in a new folder", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "job", OutLock), `{"pid":3}`, 0o644)
		}, true},
		{"add a folder named like the lock", func(t *testing.T, root string) {
			write(t, filepath.Join(root, OutLock, "f"), "c", 0o644)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			buildTree(t, root)
			c := later("")
			before, err := c.Tree(root)
			require.NoError(t, err)
			assert.Equal(t, baseDigest, before, "the same tree elsewhere has the same digest")
			tt.mutate(t, root)
			after, err := c.Tree(root)
			require.NoError(t, err)
			fresh, err := Load("").Tree(root)
			require.NoError(t, err)
			assert.Equal(t, fresh, after, "the cache gives what a fresh read gives")
			if tt.changes {
				assert.NotEqual(t, before, after)
			} else {
				assert.Equal(t, before, after)
			}
		})
	}
}

// Without escaping, a link target holding a newline could make two different
// trees encode alike: link "a" -> "t\nc" beside empty dir "c", and link
// "a" -> "t" beside an empty dir named "c\nc".
func TestTreeEncodingIsUnambiguous(t *testing.T) {
	one, two := t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink("t\nc", filepath.Join(one, "a")))
	require.NoError(t, os.Mkdir(filepath.Join(one, "c"), 0o755))
	require.NoError(t, os.Symlink("t", filepath.Join(two, "a")))
	require.NoError(t, os.Mkdir(filepath.Join(two, "c\nc"), 0o755))
	d1, err := Load("").Tree(one)
	require.NoError(t, err)
	d2, err := Load("").Tree(two)
	require.NoError(t, err)
	assert.NotEqual(t, d1, d2)

	esc := sha256.Sum256([]byte("cairn.tree.v1\n" + "a\x00l\x00t\\nc\n" + "c/\x00d\n"))
	assert.Equal(t, hex.EncodeToString(esc[:]), d1)
}

func TestTreeOfFileAndErrors(t *testing.T) {
	dir := t.TempDir()
	f := write(t, filepath.Join(dir, "f"), "just a file", 0o644)
	c := Load("")
	d, err := c.Tree(f)
	require.NoError(t, err)
	assert.Equal(t, shaHex([]byte("just a file")), d)

	_, err = c.Tree(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)

	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644))
	_, err = c.Tree(dir)
	assert.ErrorContains(t, err, "pipe")

	// A root given as a symlink is followed.
	tree := t.TempDir()
	buildTree(t, tree)
	link := filepath.Join(t.TempDir(), "tree")
	require.NoError(t, os.Symlink(tree, link))
	viaLink, err := c.Tree(link)
	require.NoError(t, err)
	direct, err := c.Tree(tree)
	require.NoError(t, err)
	assert.Equal(t, direct, viaLink)
}

func TestTreeUsesTheCache(t *testing.T) {
	root := t.TempDir()
	for i := 0; i < 20; i++ {
		write(t, filepath.Join(root, fmt.Sprintf("d%d", i%3), fmt.Sprintf("f%02d", i)), fmt.Sprint(i), 0o644)
	}
	c := later("")
	d1, err := c.Tree(root)
	require.NoError(t, err)
	hits, misses := c.Stats()
	assert.Equal(t, 0, hits)
	assert.Equal(t, 20, misses)
	d2, err := c.Tree(root)
	require.NoError(t, err)
	assert.Equal(t, d1, d2)
	hits, misses = c.Stats()
	assert.Equal(t, 20, hits)
	assert.Equal(t, 20, misses)
}

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	cachePath := filepath.Join(dir, "state", "statcache")
	files := make([]string, 50)
	for i := range files {
		files[i] = write(t, filepath.Join(dir, "in", fmt.Sprintf("f%02d", i)), fmt.Sprint("content ", i), 0o644)
	}
	c := later(cachePath)
	require.NoError(t, c.Save(), "saving an unchanged empty cache is a no-op")
	assert.NoFileExists(t, cachePath)
	want := map[string]string{}
	for _, f := range files {
		d, err := c.File(f)
		require.NoError(t, err)
		want[f] = d
	}
	require.NoError(t, c.Save())
	ino := stat(t, cachePath).ino
	require.NoError(t, c.Save())
	assert.Equal(t, ino, stat(t, cachePath).ino, "nothing changed: no rewrite")

	c2 := later(cachePath)
	assert.Len(t, c2.entries, 50)
	for _, f := range files {
		d, err := c2.File(f)
		require.NoError(t, err)
		assert.Equal(t, want[f], d)
	}
	hits, misses := c2.Stats()
	assert.Equal(t, 50, hits)
	assert.Equal(t, 0, misses)
	require.NoError(t, c2.Save())
	assert.Equal(t, ino, stat(t, cachePath).ino, "hits on the same day change nothing")

	ents, err := os.ReadDir(filepath.Dir(cachePath))
	require.NoError(t, err)
	assert.Len(t, ents, 1, "no temporary file left")
}

func TestUnusedEntriesExpire(t *testing.T) {
	dir := t.TempDir()
	cachePath := filepath.Join(dir, "statcache")
	old := write(t, filepath.Join(dir, "old"), "old", 0o644)
	kept := write(t, filepath.Join(dir, "kept"), "kept", 0o644)
	day := time.Now().Add(time.Hour)

	c := Load(cachePath)
	c.clock = func() time.Time { return day }
	for _, f := range []string{old, kept} {
		_, err := c.File(f)
		require.NoError(t, err)
	}
	require.NoError(t, c.Save())

	// Ten days on, "kept" is used, which is worth saving.
	c = Load(cachePath)
	c.clock = func() time.Time { return day.Add(10 * 24 * time.Hour) }
	_, err := c.File(kept)
	require.NoError(t, err)
	ino := stat(t, cachePath).ino
	require.NoError(t, c.Save())
	assert.NotEqual(t, ino, stat(t, cachePath).ino, "the new last-use day was saved")

	// Thirty-five days after the first use, "old" was last used 35 days ago.
	c = Load(cachePath)
	c.clock = func() time.Time { return day.Add(35 * 24 * time.Hour) }
	_, err = c.File(kept)
	require.NoError(t, err)
	require.NoError(t, c.Save())
	c = Load(cachePath)
	abs := func(p string) string { a, err := filepath.Abs(p); require.NoError(t, err); return a }
	assert.Contains(t, c.entries, abs(kept))
	assert.NotContains(t, c.entries, abs(old))
}

func TestCorruptCacheFileGivesEmptyCache(t *testing.T) {
	dir := t.TempDir()
	f := write(t, filepath.Join(dir, "in"), "input", 0o644)
	good := filepath.Join(dir, "good")
	c := later(good)
	_, err := c.File(f)
	require.NoError(t, err)
	require.NoError(t, c.Save())
	valid, err := os.ReadFile(good)
	require.NoError(t, err)
	require.Len(t, Load(good).entries, 1)

	withCRC := func(body []byte) []byte {
		return binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, castagnoli()))
	}
	flipped := append([]byte(nil), valid...)
	flipped[len(magic)+5] ^= 0x40
	tests := []struct {
		name    string
		content []byte
	}{
		{"empty", []byte{}},
		{"garbage", []byte("this is not a stat cache at all, just some text")},
		{"truncated", valid[:len(valid)-10]},
		{"flipped bit", flipped},
		{"other version", append([]byte("cairn.statcache.v0\n"), valid[len(magic):]...)},
		{"huge count, valid checksum", withCRC(binary.AppendUvarint([]byte(magic), 1<<40))},
		{"prefix longer than previous path, valid checksum", withCRC(binary.AppendUvarint(binary.AppendUvarint(binary.AppendUvarint([]byte(magic), 1), 5), 9))},
		{"trailing bytes, valid checksum", withCRC(append(append([]byte(nil), valid[:len(valid)-4]...), 0))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "statcache")
			require.NoError(t, os.WriteFile(p, tt.content, 0o644))
			c := later(p)
			assert.Empty(t, c.entries)
			d, err := c.File(f)
			require.NoError(t, err)
			assert.Equal(t, shaHex([]byte("input")), d)
			require.NoError(t, c.Save())
			assert.Len(t, Load(p).entries, 1, "the damaged file was replaced by a good one")
		})
	}
	t.Run("missing", func(t *testing.T) {
		assert.Empty(t, Load(filepath.Join(dir, "nope")).entries)
	})
	t.Run("a directory", func(t *testing.T) {
		assert.Empty(t, Load(dir).entries)
	})
}

func TestConcurrentUse(t *testing.T) {
	root := t.TempDir()
	want := map[string]string{}
	for i := 0; i < 40; i++ {
		content := fmt.Sprint("file ", i)
		p := write(t, filepath.Join(root, fmt.Sprintf("d%d", i%4), fmt.Sprintf("f%02d", i)), content, 0o644)
		want[p] = shaHex([]byte(content))
	}
	c := later(filepath.Join(t.TempDir(), "statcache"))
	treeWant, err := Load("").Tree(root)
	require.NoError(t, err)

	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for round := 0; round < 5; round++ {
				for p, w := range want {
					if d, err := c.File(p); err != nil || d != w {
						errs <- fmt.Errorf("File(%s) = %s, %v; want %s", p, d, err, w)
					}
				}
				if d, err := c.Tree(root); err != nil || d != treeWant {
					errs <- fmt.Errorf("Tree = %s, %v", d, err)
				}
				if g == 0 {
					if err := c.Save(); err != nil {
						errs <- err
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	hits, misses := c.Stats()
	assert.Equal(t, 8*5*40*2, hits+misses)
	assert.GreaterOrEqual(t, misses, 40)
	require.NoError(t, c.Save())
	assert.Len(t, Load(c.path).entries, 40)
}

// TreeWith must give the digest Tree gives once the pending files are
// written as cairn restores them: each replaces what is at its path (a
// file, a link), folders on its way are made.
func TestTreeWithIsTreeAfterTheWrites(t *testing.T) {
	cases := map[string]map[string]string{ // path -> content; an "x:" prefix marks it executable
		"replace a file":             {"a/x": "new"},
		"same content, new mode":     {"a.txt": "x:2"},
		"fill an empty folder":       {"empty/f": "f"},
		"deep under an empty one":    {"z/deep/k/f": "k", "z/g": "g"},
		"replace a link":             {"link": "was a link"},
		"new folder, sorted among":   {"a/w": "w", "a.b/c": "c", "0": "zero"},
		"nothing":                    {},
		"into __pycache__ folders":   {"a/__pycache__/x.pyc": "c", "__pycache__/r.pyc": "r", "empty/__pycache__/e.pyc": "e"},
		"a new folder's __pycache__": {"n/m/__pycache__/m.pyc": "m", "n/k": "k"},
		"only a __pycache__ below":   {"q/__pycache__/m.pyc": "m"},
		"a file named __pycache__":   {"a/__pycache__": "f"},
		"out folder locks":           {OutLock: "l", "a/" + OutLock: "l", "j/" + OutLock: "l", "j/result.json": "r"},
		"a new folder's lock alone":  {"k/" + OutLock: "l"},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "tree")
			require.NoError(t, os.Mkdir(root, 0o755))
			buildTree(t, root)
			pending := map[string]Pending{}
			for rel, content := range files {
				exec := strings.HasPrefix(content, "x:")
				content = strings.TrimPrefix(content, "x:")
				pending[rel] = Pending{Digest: shaHex([]byte(content)), Exec: exec}
			}
			c := Load("")
			got, err := c.TreeWith(root, pending)
			require.NoError(t, err)
			for rel, content := range files {
				perm := os.FileMode(0o644)
				if strings.HasPrefix(content, "x:") {
					perm = 0o755
				}
				full := filepath.Join(root, rel)
				require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
				tmp := full + ".tmp-write"
				write(t, tmp, strings.TrimPrefix(content, "x:"), perm)
				require.NoError(t, os.Chmod(tmp, perm))
				require.NoError(t, os.Rename(tmp, full))
			}
			want, err := Load("").Tree(root)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
	t.Run("missing root", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "out")
		pending := map[string]Pending{"f": {Digest: shaHex([]byte("f"))}, "d/g": {Digest: shaHex([]byte("g")), Exec: true}}
		got, err := Load("").TreeWith(root, pending)
		require.NoError(t, err)
		write(t, filepath.Join(root, "f"), "f", 0o644)
		require.NoError(t, os.MkdirAll(filepath.Join(root, "d"), 0o755))
		write(t, filepath.Join(root, "d", "g"), "g", 0o755)
		want, err := Load("").Tree(root)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
	t.Run("missing root, only __pycache__ below", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "out")
		got, err := Load("").TreeWith(root, map[string]Pending{"__pycache__/m.pyc": {Digest: shaHex([]byte("m"))}})
		require.NoError(t, err)
		assert.Equal(t, shaHex([]byte(TreeVersion)), got, "a folder of nothing else")
		_, err = Load("").TreeWith(root, map[string]Pending{"__pycache__/m.pyc": {Remove: true}})
		assert.ErrorIs(t, err, fs.ErrNotExist)
	})
	// Removing from a __pycache__ folder changes nothing; removing the
	// folder itself, or a file named so, what there is to remove.
	t.Run("removals in __pycache__", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "tree")
		buildTree(t, root)
		write(t, filepath.Join(root, "a", "__pycache__", "x.pyc"), "c", 0o644)
		write(t, filepath.Join(root, "p", "__pycache__", "y.pyc"), "c", 0o644)
		write(t, filepath.Join(root, "s", "__pycache__"), "f", 0o644)
		pending := map[string]Pending{
			"a/__pycache__/x.pyc": {Remove: true}, "p/__pycache__/y.pyc": {Remove: true}, "p/__pycache__": {Remove: true},
			"s/__pycache__": {Remove: true},
		}
		got, err := Load("").TreeWith(root, pending)
		require.NoError(t, err)
		for _, p := range []string{"a/__pycache__/x.pyc", "p/__pycache__/y.pyc", "p/__pycache__", "s/__pycache__"} {
			require.NoError(t, os.Remove(filepath.Join(root, p)))
		}
		want, err := Load("").Tree(root)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
	t.Run("the path itself", func(t *testing.T) {
		got, err := Load("").TreeWith(filepath.Join(t.TempDir(), "f.txt"), map[string]Pending{"": {Digest: shaHex([]byte("x"))}})
		require.NoError(t, err)
		assert.Equal(t, shaHex([]byte("x")), got)
		f := filepath.Join(t.TempDir(), "f.txt")
		write(t, f, "f", 0o644)
		_, err = Load("").TreeWith(f, map[string]Pending{"": {Remove: true}})
		assert.ErrorIs(t, err, fs.ErrNotExist)
	})
	// The path removed, then files written below it: a file replaced by a
	// folder of them alone, or a folder by another.
	t.Run("the path replaced by a folder", func(t *testing.T) {
		for _, was := range []string{"file", "folder"} {
			root := filepath.Join(t.TempDir(), "x")
			if was == "file" {
				write(t, root, "F", 0o644)
			} else {
				buildTree(t, root)
			}
			pending := map[string]Pending{"": {Remove: true}, "a": {Remove: true}, "sub/f": {Digest: shaHex([]byte("D"))}}
			got, err := Load("").TreeWith(root, pending)
			require.NoError(t, err, was)
			require.NoError(t, os.RemoveAll(root))
			write(t, filepath.Join(root, "sub", "f"), "D", 0o644)
			want, err := Load("").Tree(root)
			require.NoError(t, err)
			assert.Equal(t, want, got, was)
		}
	})
	// Removals: a file, a folder emptied with its file, a file whose
	// folder is left empty and stays, beside a write.
	t.Run("removals", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "tree")
		buildTree(t, root)
		write(t, filepath.Join(root, "b", "c", "f"), "f", 0o644)
		write(t, filepath.Join(root, "s", "g"), "g", 0o644)
		pending := map[string]Pending{
			"a.txt": {Remove: true}, "b/c/f": {Remove: true}, "b/c": {Remove: true}, "b": {Remove: true},
			"s/g": {Remove: true}, "a/y": {Digest: shaHex([]byte("y"))},
		}
		got, err := Load("").TreeWith(root, pending)
		require.NoError(t, err)
		for _, p := range []string{"a.txt", "b/c/f", "b/c", "b", "s/g"} {
			require.NoError(t, os.Remove(filepath.Join(root, p)))
		}
		write(t, filepath.Join(root, "a", "y"), "y", 0o644)
		want, err := Load("").Tree(root)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
}

// ContentTree digests what links point to: a checkpoint linked into a
// weights folder is its bytes, so new bytes under the same link give a
// new digest (Tree keeps the link's target name), and a folder holding
// the bytes themselves digests the same. A link to nothing, or one
// leading back into its own folder, is an error.
func TestContentTreeFollowsLinks(t *testing.T) {
	store := t.TempDir()
	write(t, filepath.Join(store, "blob1"), "weights v1", 0o644)
	write(t, filepath.Join(store, "sub", "tok.json"), "{}", 0o644)
	linked := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(store, "blob1"), filepath.Join(linked, "model.bin")))
	require.NoError(t, os.Symlink(filepath.Join(store, "sub"), filepath.Join(linked, "sub")))
	plain := t.TempDir()
	write(t, filepath.Join(plain, "model.bin"), "weights v1", 0o644)
	write(t, filepath.Join(plain, "sub", "tok.json"), "{}", 0o644)

	c := later("")
	d1, err := c.ContentTree(linked)
	require.NoError(t, err)
	p, err := c.ContentTree(plain)
	require.NoError(t, err)
	assert.Equal(t, p, d1, "a link digests as the bytes it points to")
	byName, err := c.Tree(linked)
	require.NoError(t, err)

	write(t, filepath.Join(store, "blob1"), "weights v2", 0o644)
	d2, err := c.ContentTree(linked)
	require.NoError(t, err)
	assert.NotEqual(t, d1, d2, "new bytes under the same link")
	again, err := c.Tree(linked)
	require.NoError(t, err)
	assert.Equal(t, byName, again, "Tree keeps the link's name")

	// A __pycache__ folder, or a link to one, is not there for it either.
	write(t, filepath.Join(plain, "sub", "__pycache__", "t.pyc"), "c", 0o644)
	require.NoError(t, os.Symlink(filepath.Join(plain, "sub"), filepath.Join(linked, "__pycache__")))
	again, err = c.ContentTree(linked)
	require.NoError(t, err)
	assert.Equal(t, d2, again, "__pycache__ left out")
	pc, err := c.ContentTree(plain)
	require.NoError(t, err)
	assert.Equal(t, p, pc, "__pycache__ left out")

	require.NoError(t, os.Symlink(filepath.Join(store, "gone"), filepath.Join(linked, "dangling")))
	_, err = c.ContentTree(linked)
	assert.ErrorContains(t, err, "dangling")
	require.NoError(t, os.Remove(filepath.Join(linked, "dangling")))
	require.NoError(t, os.Symlink(linked, filepath.Join(linked, "loop")))
	_, err = c.ContentTree(linked)
	assert.ErrorContains(t, err, "leads back into a folder it is in")
}
