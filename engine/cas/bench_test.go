//go:build unix

package cas

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkPutFile stores a new 64 MiB file (content differs each time by
// its first bytes, so nothing is deduplicated), with fsync.
func BenchmarkPutFile(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	require.NoError(b, err)
	content := randomBytes(b, 64<<20)
	src := filepath.Join(b.TempDir(), "ckpt")
	b.SetBytes(int64(len(content)))
	i := uint64(0)
	for b.Loop() {
		b.StopTimer()
		i++
		for k := 0; k < 8; k++ {
			content[k] = byte(i >> (8 * k))
		}
		require.NoError(b, os.WriteFile(src, content, 0o644))
		b.StartTimer()
		d, _, err := s.PutFile(src)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		require.NoError(b, s.Remove(d))
		b.StartTimer()
	}
}

// BenchmarkRestore copies a 64 MiB blob into a workspace, verifying it.
func BenchmarkRestore(b *testing.B) {
	s, err := Open(b.TempDir(), Options{NoSync: true})
	require.NoError(b, err)
	d, err := s.PutBytes(randomBytes(b, 64<<20))
	require.NoError(b, err)
	dst := filepath.Join(b.TempDir(), "out", "ckpt")
	b.SetBytes(64 << 20)
	for b.Loop() {
		if err := s.Restore(d, dst, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
