package memo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/fsdigest"
	"github.com/cairn-run/cairn/engine/store"
)

// A memo reads back as it was written; anything cut short or unknown is
// refused.
func TestMemoRoundTrip(t *testing.T) {
	m := &Memo{
		Identity: "abc", Pipeline: "p \"q\"", Summary: "pipeline \"p\": 1 stages, 1 nodes",
		Sensitive: []string{"token"},
		Index:     Index{Dev: 1, Ino: 2, Offset: 64},
		Files:     []File{{Path: "/w/p.hcl", Sig: sigFor(t)}, {Path: "/w/flag file", Absent: true}, {Path: "/w/pipes", Sig: sigFor(t), Listing: "l1"}},
		Nodes: []Node{{Addr: `stage.x["a b"]`, Key: "k1",
			Outputs: []Output{{Path: "out/a b", Sig: sigFor(t)}, {Path: "out/c", Sig: sigFor(t), Digest: "d2"}},
			Inputs:  []Input{{Path: "data dir", Digest: "d1"}, {Path: "linked", Digest: "d3", Leads: "/w/real dir"}, {Path: "z", Digest: "d4"}}}},
	}
	path := filepath.Join(t.TempDir(), "memo", "abc")
	require.NoError(t, m.Write(path))
	got, err := Read(path)
	require.NoError(t, err)
	assert.Equal(t, m, got)

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, bad := range []string{string(b[:len(b)-4]), "cairn-memo 9\n", string(b) + "node x \"y\"\n", "cairn-memo 1\nwhat\nend\n", "cairn-memo 1\nidentity x\nnode k a\nleads /w\nend\n", ""} {
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
	f.Add([]byte("cairn-memo 1\nidentity x\nnode k \"stage.a\"\nfresh 0:1:2:3:4:644 d \"out/a\"\nend\n"))
	f.Add([]byte("cairn-memo 1\nidentity x\nsensitive \"tok\"\nfile absent \"/b\"\nend\n"))
	f.Add([]byte("cairn-memo 1\nidentity x\ndir 0:1:2:3:4:755 l \"/w\"\nend\n"))
	f.Add([]byte("cairn-memo 1\nidentity x\nnode k \"stage.a\"\nin d \"l\"\nleads /w/f\nin e m\nend\n"))
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

// An output written moments before its memo was made is read by the check
// and compared with its digest: other content with the same stat
// information fails the check; the same content passes, and once the
// file's times can vouch for it the output is settled (checked by its
// times alone from then on) and the memo says it is worth writing again
// (#34).
func TestCheckReadsFreshOutputsUntilSettled(t *testing.T) {
	root, cache := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "out"), 0o755))
	out := filepath.Join(root, "out", "a")
	require.NoError(t, os.WriteFile(out, []byte("a\n"), 0o644))
	require.NoError(t, os.WriteFile(store.IndexPath(cache), []byte("x"), 0o644))
	osig, err := fsdigest.LstatSig(out)
	require.NoError(t, err)
	fi, err := os.Stat(store.IndexPath(cache))
	require.NoError(t, err)
	isig := fsdigest.SigOf(fi)
	sum := sha256.Sum256([]byte("a\n"))
	memoOf := func(digest string) *Memo {
		return &Memo{Identity: "id", Index: Index{Dev: isig.Dev, Ino: isig.Ino, Offset: 1},
			Nodes: []Node{{Addr: "stage.a", Key: "k", Outputs: []Output{{Path: "out/a", Sig: osig, Digest: digest}}}}}
	}
	require.True(t, osig.Racy(time.Now()), "the file was just written")

	ok, why := memoOf(strings.Repeat("0", 64)).Check(root, cache)
	assert.False(t, ok, "other content than the memo's")
	assert.Equal(t, "output out/a changed", why)

	m := memoOf(hex.EncodeToString(sum[:]))
	path := filepath.Join(cache, "memo", "id")
	require.NoError(t, m.Write(path))
	m, err = Read(path)
	require.NoError(t, err)
	require.Equal(t, hex.EncodeToString(sum[:]), m.Nodes[0].Outputs[0].Digest, "the digest reads back")
	for osig.Racy(time.Now()) {
		ok, why = m.Check(root, cache)
		require.True(t, ok, why)
		if m.Settled() {
			break
		}
		assert.Equal(t, hex.EncodeToString(sum[:]), m.Nodes[0].Outputs[0].Digest, "not settled while its times cannot vouch for it")
		time.Sleep(50 * time.Millisecond)
	}
	ok, why = m.Check(root, cache)
	require.True(t, ok, why)
	assert.True(t, m.Settled(), "its times vouch for it now")
	assert.Empty(t, m.Nodes[0].Outputs[0].Digest)
	require.NoError(t, m.Write(path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(b), "\nout ")
	assert.NotContains(t, string(b), "\nfresh ")
	m, err = Read(path)
	require.NoError(t, err)
	ok, _ = m.Check(root, cache)
	assert.True(t, ok)
	assert.False(t, m.Settled(), "nothing left to settle")
}

// A pipeline folder listed moments after it changed is listed again by
// the check: other pipeline files than the memo's fail it; the same pass,
// and once the folder's times can vouch for it the memo checks its times
// alone (#34).
func TestCheckListsFreshPipelineFoldersUntilSettled(t *testing.T) {
	root, cache := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.hcl"), nil, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(root, "sub.hcl"), 0o755))
	require.NoError(t, os.WriteFile(store.IndexPath(cache), []byte("x"), 0o644))
	fi, err := os.Stat(root)
	require.NoError(t, err)
	dsig := fsdigest.SigOf(fi)
	fi, err = os.Stat(store.IndexPath(cache))
	require.NoError(t, err)
	isig := fsdigest.SigOf(fi)
	memoOf := func(names ...string) *Memo {
		return &Memo{Identity: "id", Index: Index{Dev: isig.Dev, Ino: isig.Ino, Offset: 1},
			Files: []File{{Path: root, Sig: dsig, Listing: listingDigest(names)}}}
	}
	require.True(t, dsig.Racy(time.Now()), "the folder just changed")

	ok, why := memoOf("a.hcl", "b.hcl").Check(root, cache)
	assert.False(t, ok, "other pipeline files than the memo's")
	assert.Equal(t, root+" changed", why)

	m := memoOf("a.hcl")
	for dsig.Racy(time.Now()) {
		ok, why = m.Check(root, cache)
		require.True(t, ok, why)
		if m.Settled() {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	ok, why = m.Check(root, cache)
	require.True(t, ok, why)
	assert.True(t, m.Settled(), "its times vouch for it now")
	assert.Empty(t, m.Files[0].Listing)
}
