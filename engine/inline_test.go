package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/cas"
	"github.com/cairn-run/cairn/engine/store"
)

// Small outputs are kept inside their record, larger ones in blobs; both
// are restored as they were made (content and mode), also after gc.
func TestSmallOutputsKeptInTheRecord(t *testing.T) {
	w := newWorkspace(t, `
pipeline "inline" {}
stage "command" "make" {
  run     = ["sh", "-c", "mkdir -p out; echo small > out/small.txt; chmod 755 out/small.txt; head -c 1024 /dev/zero | tr '\\0' a > out/edge.txt; head -c 1025 /dev/zero | tr '\\0' b > out/big.txt; : > out/empty.txt; for i in 1 2 3 4 5 6 7 8 9 10; do head -c 1000 /dev/zero | tr '\\0' c > out/many/$i.txt; done"]
  outputs = ["out/small.txt", "out/edge.txt", "out/big.txt", "out/empty.txt", "out/many"]
}
`)
	require.NoError(t, os.MkdirAll(filepath.Join(w.Root, "out/many"), 0o755))
	r := w.apply(ApplyOptions{})
	require.Equal(t, 1, r.res.Ran, r.out)

	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	rec, ok := c.Lookup(c.LastKey("inline", "stage.make"))
	require.True(t, ok)
	for _, p := range []string{"out/small.txt", "out/edge.txt", "out/empty.txt"} {
		assert.Contains(t, rec.Inline, p, "a file of at most 1 KiB is kept in the record")
		assert.False(t, c.Blobs.Has(cas.Digest(rec.Outputs[p])), "%s has no blob", p)
	}
	assert.NotContains(t, rec.Inline, "out/big.txt", "1025 bytes go to a blob")
	assert.True(t, c.Blobs.Has(cas.Digest(rec.Outputs["out/big.txt"])))
	// A record keeps at most 8 KiB inline: of the ten 1000-byte files,
	// what does not fit goes to blobs.
	var inline int
	for p, b := range rec.Inline {
		inline += len(b)
		if strings.HasPrefix(p, "out/many/") {
			assert.Len(t, b, 1000)
		}
	}
	assert.LessOrEqual(t, inline, 8<<10)
	blobs := 0
	for p, d := range rec.Outputs {
		if strings.HasPrefix(p, "out/many/") {
			if _, ok := rec.Inline[p]; !ok {
				blobs++
				assert.True(t, c.Blobs.Has(cas.Digest(d)), "%s is in a blob", p)
			}
		}
	}
	assert.Positive(t, blobs, "the record's inline room ran out")
	for p := range rec.Outputs {
		b, err := c.OutputBytes(rec, p)
		require.NoError(t, err, p)
		want, err := os.ReadFile(filepath.Join(w.Root, p))
		require.NoError(t, err)
		assert.Equal(t, want, b, p)
	}
	require.NoError(t, c.Close())

	// Collected garbage leaves what records hold.
	c, err = store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	_, err = store.GC(c, store.GCOptions{})
	require.NoError(t, err)
	require.NoError(t, c.Close())

	want := map[string]string{}
	for _, p := range []string{"out/small.txt", "out/edge.txt", "out/big.txt", "out/empty.txt", "out/many/3.txt", "out/many/10.txt"} {
		want[p] = w.Read(p)
	}
	require.NoError(t, os.RemoveAll(filepath.Join(w.Root, "out")))
	r = w.apply(ApplyOptions{})
	require.Equal(t, 0, r.res.Ran, r.out)
	require.Equal(t, 1, r.res.Cached, r.out)
	for p, content := range want {
		assert.Equal(t, content, w.Read(p), p)
	}
	fi, err := os.Stat(filepath.Join(w.Root, "out/small.txt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "the mode is restored")
}

// Bytes kept in a record that do not hash to the output's digest are
// refused, never restored.
func TestInlineOutputVerified(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Open(dir)
	require.NoError(t, err)
	defer f.Close()
	err = cas.RestoreBytesAt(cas.DigestBytes([]byte("good\n")), []byte("evil\n"), f, "x.txt", 0o644)
	require.ErrorIs(t, err, cas.ErrCorrupt)
	_, err = os.Stat(filepath.Join(dir, "x.txt"))
	assert.True(t, os.IsNotExist(err), "nothing is written")
	require.NoError(t, cas.RestoreBytesAt(cas.DigestBytes([]byte("good\n")), []byte("good\n"), f, "x.txt", 0o600))
	b, err := os.ReadFile(filepath.Join(dir, "x.txt"))
	require.NoError(t, err)
	assert.Equal(t, "good\n", string(b))
}
