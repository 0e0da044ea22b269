package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/store"
)

// An output the cache cannot take (its blob's folder cannot be made: a
// full disk, a cache cairn may not write in) fails the node with class
// infrastructure, which retry { on = ["infrastructure"] } covers: the
// node's file is fine. A declared output the node did not write stays
// class result.
func TestBlobStoreFailureIsInfrastructure(t *testing.T) {
	content := strings.Repeat("x", 4096) + "\n" // a blob, not inline
	sum := sha256.Sum256([]byte(content))
	digest := hex.EncodeToString(sum[:])
	w := newWorkspace(t, `
pipeline "p" {}
stage "command" "big" {
  run     = ["sh", "-c", "printf 'x%.0s' $(seq 4096) > big.txt; echo >> big.txt"]
  outputs = ["big.txt"]
}
stage "command" "lazy" {
  run     = ["true"]
  outputs = ["never.txt"]
}
`)
	// A file where the blob's fan-out folder goes.
	fan := filepath.Join(w.Cache, "cas", "sha256", digest[:2])
	require.NoError(t, os.MkdirAll(filepath.Dir(fan), 0o777))
	require.NoError(t, os.WriteFile(fan, nil, 0o666))

	r := w.apply(ApplyOptions{})
	require.Equal(t, 2, r.res.Failed, r.out)
	classes := map[string]Failure{}
	for _, f := range r.res.Failures {
		classes[f.Address] = f
	}
	assert.Equal(t, failclass.Infra, classes["stage.big"].Class, r.out)
	assert.Contains(t, classes["stage.big"].Message, "cannot store output big.txt in the cache")
	assert.Contains(t, classes["stage.big"].Message, fan)
	assert.Equal(t, failclass.Result, classes["stage.lazy"].Class, r.out)
}

// A blob this user may not read (a shared cache) is the cache's
// problem: the message says cairn cannot read the cache's copy and what
// to do, not to fix the workspace.
func TestRestoreUnreadableBlobMessage(t *testing.T) {
	cache := t.TempDir()
	blob := filepath.Join(cache, "cas", "sha256", "ab", "abcd")
	err := &restoreWorkspaceError{output: "big.bin", path: "/ws/big.bin", cache: cache,
		err: fmt.Errorf("cas: %w", &fs.PathError{Op: "open", Path: blob, Err: fs.ErrPermission})}
	msg := err.Error()
	assert.Contains(t, msg, "cairn cannot read the cache's copy (cas: open "+blob+": permission denied)")
	assert.Contains(t, msg, "let this user read the cache's files")
	assert.NotContains(t, msg, "writing it")

	// A folder in the workspace cairn may not write in is the workspace's.
	err = &restoreWorkspaceError{output: "d/x", path: "/ws/d/x", cache: cache,
		err: &fs.PathError{Op: "open", Path: "/ws/d/.x.cairn-1", Err: fs.ErrPermission}}
	assert.Contains(t, err.Error(), "cairn may not write in /ws/d")
}

// An output folder that is the cache by another path (a bind mount, which
// no path check can see) is refused when its files are stored, naming
// both, instead of storing the cache's own files in it.
func TestOutputFolderThatIsTheCacheIsRefused(t *testing.T) {
	c, err := store.Open(filepath.Join(t.TempDir(), "cache"), store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	a := &applier{cache: c}
	entry := func(p string) fs.DirEntry {
		info, err := os.Stat(p)
		require.NoError(t, err)
		return fs.FileInfoToDirEntry(info)
	}
	err = a.notTheCache(c.Dir, "out", entry(c.Dir))
	require.ErrorIs(t, err, errOutputHoldsCache)
	class, msg := a.storeFailed("out", err)
	assert.Equal(t, failclass.Setup, class)
	assert.Contains(t, msg, "put the cache outside the node's outputs")
	other := t.TempDir()
	assert.NoError(t, a.notTheCache(other, "out", entry(other)))
}
