package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/cas"
	"github.com/cairn-run/cairn/engine/plan"
)

// A restore that fails in the workspace is not damage to the cache, also
// when the workspace folder went away meanwhile (an ENOENT, which must not
// read as a blob that is gone); a blob or inline bytes that do not hash to
// their digest, or a blob that is gone, are.
func TestRestoreDamagedTellsCacheFromWorkspace(t *testing.T) {
	store, err := cas.Open(t.TempDir(), cas.Options{NoSync: true})
	require.NoError(t, err)
	content := []byte("cached output\n")
	d, err := store.PutBytes(content)
	require.NoError(t, err)

	gone := filepath.Join(t.TempDir(), "d")
	require.NoError(t, os.Mkdir(gone, 0o755))
	dir, err := os.Open(gone)
	require.NoError(t, err)
	defer dir.Close()
	require.NoError(t, os.Remove(gone))

	err = store.RestoreAt(d, dir, "f.txt", 0o644)
	require.Error(t, err)
	assert.False(t, restoreDamaged(err), "a removed workspace folder: %v", err)
	err = cas.RestoreBytesAt(d, content, dir, "f.txt", 0o644)
	require.Error(t, err)
	assert.False(t, restoreDamaged(err), "a removed workspace folder: %v", err)

	ws, err := os.Open(t.TempDir())
	require.NoError(t, err)
	defer ws.Close()
	assert.True(t, restoreDamaged(cas.RestoreBytesAt(d, []byte("other bytes\n"), ws, "f.txt", 0o644)), "inline bytes that do not hash to their digest")
	assert.True(t, restoreDamaged(store.RestoreAt(cas.DigestBytes([]byte("never stored")), ws, "f.txt", 0o644)), "a blob that is gone")
	require.NoError(t, store.RestoreAt(d, ws, "f.txt", 0o644))
}

// fileOrFolder's output res is a file in one configuration and a folder
// in the other.
const fileOrFolder = `
variable "mode" { default = "file" }
stage "command" "s" {
  run     = ["sh", "-c", var.mode == "file" ? "rm -rf res; echo F > res" : "rm -rf res; mkdir res; echo D > res/a"]
  outputs = ["res"]
}
`

// TestSwitchingBetweenAFileAndAFolderOutput: a node whose output res was
// a file in one configuration and a folder in another is taken from the
// cache when the user switches back, either way: plan says cached, and
// apply replaces what the other configuration wrote (cairn's own, which
// the cache keeps) instead of failing on "rename ...: is a directory".
// Where the folder holds a file of the user's, plan says apply will refuse,
// and apply refuses with the same advice, leaving the folder as it is.
func TestSwitchingBetweenAFileAndAFolderOutput(t *testing.T) {
	w := newWorkspace(t, fileOrFolder)
	r := w.apply(ApplyOptions{})
	require.Equal(t, 1, r.res.Ran, r.out)
	r = w.apply(ApplyOptions{}, "mode=dir")
	require.Equal(t, 1, r.res.Ran, r.out)
	require.Equal(t, "D\n", w.Read("res/a"))

	// Back to the file: the folder the other configuration wrote goes.
	assert.Contains(t, w.PlanText(plan.Options{}), "= stage.s  cached")
	r = w.apply(ApplyOptions{})
	require.Equal(t, 0, r.res.Failed, r.out)
	require.Equal(t, 1, r.res.Cached, r.out)
	assert.Equal(t, "F\n", w.Read("res"))
	assert.Contains(t, r.out, "removed res/a and the folder res, where its cached output goes")

	// And to the folder: the file goes.
	assert.Contains(t, w.PlanText(plan.Options{}, "mode=dir"), "= stage.s  cached")
	r = w.apply(ApplyOptions{}, "mode=dir")
	require.Equal(t, 0, r.res.Failed, r.out)
	require.Equal(t, 1, r.res.Cached, r.out)
	assert.Equal(t, "D\n", w.Read("res/a"))

	// A file of the user's in the folder: plan says apply refuses, and
	// apply does, leaving it.
	w.Write("res/notes.txt", "mine\n")
	text := w.PlanText(plan.Options{})
	res := filepath.Join(w.Root, "res")
	want := "the cached output res is not restored to " + res + ": the folder there holds res/notes.txt, which cairn did not write; " + res + " is a folder: remove it, or move it aside, and apply again"
	assert.Contains(t, text, "! stage.s  refused: ")
	assert.Contains(t, strings.Join(strings.Fields(text), " "), want, "plan gives apply's advice")
	assert.Contains(t, text, "Plan: 0 to run, 1 refused, 0 cached.")
	r = w.apply(ApplyOptions{})
	f := failureOf(r, "stage.s")
	require.NotNil(t, f, r.out)
	assert.Equal(t, "result", f.Class)
	assert.Equal(t, want, f.Message)
	assert.Equal(t, "mine\n", w.Read("res/notes.txt"))
	assert.Equal(t, "D\n", w.Read("res/a"))

	// A file of the user's where the folder goes: the same.
	require.NoError(t, os.RemoveAll(res))
	w.Write("res", "mine\n")
	want = "the cached output res/a is not restored to " + filepath.Join(res, "a") + ": " + res + " is a file where a folder goes, and cairn did not write it: remove it, or move it aside, and apply again"
	assert.Contains(t, strings.Join(strings.Fields(w.PlanText(plan.Options{}, "mode=dir")), " "), "! stage.s refused: "+want)
	r = w.apply(ApplyOptions{}, "mode=dir")
	f = failureOf(r, "stage.s")
	require.NotNil(t, f, r.out)
	assert.Equal(t, want, f.Message)
	assert.Equal(t, "mine\n", w.Read("res"))
}
