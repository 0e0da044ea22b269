//go:build unix

package fsdigest

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// benchTree writes 1,000 files of 16 KiB in 20 directories.
func benchTree(b *testing.B) string {
	root := b.TempDir()
	buf := make([]byte, 16<<10)
	for i := 0; i < 1000; i++ {
		_, err := rand.Read(buf)
		require.NoError(b, err)
		p := filepath.Join(root, fmt.Sprintf("shard%02d", i%20), fmt.Sprintf("item%04d.bin", i))
		require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(b, os.WriteFile(p, buf, 0o644))
	}
	return root
}

// BenchmarkTree1000 digests a tree of 1,000 files with an empty stat cache
// (every file read and hashed) and with a warm one (every file only
// stat'ed). The page cache is warm in both.
func BenchmarkTree1000(b *testing.B) {
	root := benchTree(b)
	aged := func() time.Time { return time.Now().Add(time.Hour) }
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			c := Load("")
			c.clock = aged
			if _, err := c.Tree(root); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		c := Load("")
		c.clock = aged
		_, err := c.Tree(root)
		require.NoError(b, err)
		for b.Loop() {
			if _, err := c.Tree(root); err != nil {
				b.Fatal(err)
			}
		}
		hits, misses := c.Stats()
		require.Equal(b, 1000, misses)
		require.Positive(b, hits)
	})
}

// benchEntries builds n entries with paths shaped like a dataset's.
func benchEntries(n int) map[string]entry {
	m := make(map[string]entry, n)
	now := time.Now()
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("/home/researcher/projects/llm-eval/data/imagenet/train/n%08d/img_%07d.JPEG", i/1000, i)
		m[p] = entry{
			key: statKey{
				size: int64(100_000 + i), mtime: now.Add(-time.Duration(i) * time.Second).UnixNano(),
				ctime: now.UnixNano(), ino: uint64(1_000_000 + i), dev: 2049, mode: 0o644,
			},
			sum:  sha256.Sum256([]byte(p)),
			used: uint32(now.Unix() / 86400),
		}
	}
	return m
}

// BenchmarkLoad100k loads a stat cache of 100,000 entries.
func BenchmarkLoad100k(b *testing.B) {
	p := filepath.Join(b.TempDir(), "statcache")
	data := encode(benchEntries(100_000))
	require.NoError(b, os.WriteFile(p, data, 0o644))
	for b.Loop() {
		c := Load(p)
		if len(c.entries) != 100_000 {
			b.Fatalf("loaded %d entries", len(c.entries))
		}
	}
	b.ReportMetric(float64(len(data))/(1<<20), "file-MiB")
}

// BenchmarkSave100k writes a stat cache of 100,000 entries.
func BenchmarkSave100k(b *testing.B) {
	c := Load(filepath.Join(b.TempDir(), "statcache"))
	c.entries = benchEntries(100_000)
	for b.Loop() {
		c.dirty = true
		if err := c.Save(); err != nil {
			b.Fatal(err)
		}
	}
}
