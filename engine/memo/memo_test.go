package memo

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/fsdigest"
)

// A memo reads back as it was written; anything cut short or unknown is
// refused.
func TestMemoRoundTrip(t *testing.T) {
	m := &Memo{
		Identity: "abc", Pipeline: "p \"q\"", Summary: "pipeline \"p\": 1 stages, 1 nodes",
		Sensitive: []string{"token"},
		Index:     Index{Dev: 1, Ino: 2, Offset: 64},
		Files:     []File{{Path: "/w/p.hcl", Sig: sigFor(t)}, {Path: "/w/flag file", Absent: true}},
		Nodes: []Node{{Addr: `stage.x["a b"]`, Key: "k1",
			Outputs: []Output{{Path: "out/a b", Sig: sigFor(t)}},
			Inputs:  []Input{{Path: "data dir", Digest: "d1"}}}},
	}
	path := filepath.Join(t.TempDir(), "memo", "abc")
	require.NoError(t, m.Write(path))
	got, err := Read(path)
	require.NoError(t, err)
	assert.Equal(t, m, got)

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, bad := range []string{string(b[:len(b)-4]), "cairn-memo 9\n", string(b) + "node x \"y\"\n", "cairn-memo 1\nwhat\nend\n", ""} {
		require.NoError(t, os.WriteFile(path, []byte(bad), 0o644))
		_, err := Read(path)
		assert.Error(t, err, "%q", bad)
	}
}

func sigFor(t *testing.T) fsdigest.Sig {
	t.Helper()
	fi, err := os.Stat(t.TempDir())
	require.NoError(t, err)
	return fsdigest.SigOf(fi)
}

// Whatever a memo file holds, reading it never panics, and what reads back
// writes back the same.
func FuzzReadMemo(f *testing.F) {
	f.Add([]byte("cairn-memo 1\nidentity x\npipeline \"p\"\nsummary \"s\"\nindex 1 2 8\nfile 0:1:2:3:4:644 \"/a\"\nnode k \"stage.a\"\nout 0:1:2:3:4:644 \"out/a\"\nin d \"in\"\nend\n"))
	f.Add([]byte("cairn-memo 1\nidentity x\nout 1 \"a\"\nend\n"))
	f.Add([]byte("cairn-memo 1\nidentity x\nsensitive \"tok\"\nfile absent \"/b\"\nend\n"))
	// In memory: what Read and Write do besides the file's read and
	// its atomic write (a file and an fsync per input made the fuzzer
	// crawl, and its minimisation of a new input take its whole minute).
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parse("m", bytes.Clone(b))
		if err != nil {
			return
		}
		m2, err := parse("again", m.encode())
		require.NoError(t, err)
		assert.Equal(t, m, m2)
	})
}
