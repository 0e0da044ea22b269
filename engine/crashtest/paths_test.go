package crashtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// linkRestorePipeline: stage mk prepares d (a folder in one workspace, a
// symlink in the other) and stage use writes d/f.txt.
func linkRestorePipeline(mk string) string {
	return `
pipeline "links" {}
stage "command" "mk" {
  run = ["sh", "-c", "` + mk + `"]
}
stage "command" "use" {
  after   = [stage.mk]
  run     = ["sh", "-c", "echo x > d/f.txt"]
  outputs = ["d/f.txt"]
}
`
}

// TestRestoreNeverWritesThroughLink: workspaces A and B share a cache; in
// A, mk makes d a folder, in B a symlink to a folder outside. B's restore
// of use from A's record must not write outside: the node fails with class
// "result" and the outside folder stays empty. The same holds when the
// link leads into the cache, or to another folder of the workspace.
func TestRestoreNeverWritesThroughLink(t *testing.T) {
	shared := t.TempDir()
	a := newWS(t, linkRestorePipeline("mkdir -p d"))
	res := a.run(nil, "--cache", shared, "apply")
	require.Equal(t, 0, res.code, res.String())
	require.Equal(t, "x\n", a.read("d/f.txt"))

	outside := t.TempDir()
	for _, tc := range []struct{ name, target string }{
		{"outside", outside},
		{"cache", shared},
		{"workspace folder", "e"},
		{"dangling", filepath.Join(outside, "missing")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newWS(t, linkRestorePipeline("mkdir -p e && ln -sfn "+tc.target+" d"))
			before, beforeOut := snapshot(t, shared, ""), snapshot(t, outside, "")
			res := b.run(nil, "--cache", shared, "apply")
			assert.Equal(t, 1, res.code, res.String())
			assert.Contains(t, res.stdout, "stage.use failed (result)")
			assert.Contains(t, res.stdout, "d is a symlink")
			assert.Equal(t, beforeOut, snapshot(t, outside, ""), "files outside the workspace")
			assert.Empty(t, cacheChanges(before, snapshot(t, shared, "")), "files of the cache written")
			assert.False(t, b.exists("e/f.txt"), "restored through a link inside the workspace")
			fi, err := os.Lstat(b.path("d"))
			require.NoError(t, err)
			assert.NotZero(t, fi.Mode()&os.ModeSymlink, "d is still the workload's link")
		})
	}
	// The record was not evicted: A still takes it from the cache.
	res = a.run(nil, "--cache", shared, "apply", "-v")
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "= stage.use")
}

// TestWorkspaceRestoreFailureKeepsRecord: workspaces A and B share a
// cache. When B cannot write a cached output (a folder stands where the
// file goes), B's node fails naming the path in B and what to do, and the
// record stays: A's plan still says cached, A's apply takes it, and B's
// apply takes it once the folder is gone. For an output kept inside its
// record (small.txt) and one in a blob (big.txt).
func TestWorkspaceRestoreFailureKeepsRecord(t *testing.T) {
	const pipeline = `
pipeline "p" {}
stage "command" "w" {
  run     = ["sh", "-c", "mkdir -p d && echo small > d/small.txt && seq 1 2000 > d/big.txt"]
  outputs = ["d/small.txt", "d/big.txt"]
}
`
	shared := t.TempDir()
	a := newWS(t, pipeline)
	res := a.run(nil, "--cache", shared, "apply")
	require.Equal(t, 0, res.code, res.String())
	for _, out := range []string{"d/small.txt", "d/big.txt"} {
		t.Run(out, func(t *testing.T) {
			b := newWS(t, pipeline)
			require.NoError(t, os.MkdirAll(b.path(out+"/x"), 0o755))
			res := b.run(nil, "--cache", shared, "apply")
			assert.Equal(t, 1, res.code, res.String())
			assert.Contains(t, res.stdout, "stage.w failed (result)")
			assert.Contains(t, res.stdout, b.path(out)+" is a folder: remove it, or move it aside, and apply again")
			assert.NotContains(t, res.stdout, "damaged")

			res = a.run([]string{"CAIRN_NO_MEMO=1"}, "--cache", shared, "plan")
			require.Equal(t, 0, res.code, res.String())
			assert.Contains(t, res.stdout, "= stage.w  cached")
			assert.NotContains(t, res.stdout, "gone")

			require.NoError(t, os.RemoveAll(b.path(out)))
			res = b.run(nil, "--cache", shared, "apply", "-v")
			require.Equal(t, 0, res.code, res.String())
			assert.Contains(t, res.stdout, "1 cached")
			assert.Equal(t, a.read(out), b.read(out))
		})
	}
	if os.Geteuid() != 0 { // root writes in any folder
		b := newWS(t, pipeline)
		require.NoError(t, os.MkdirAll(b.path("d"), 0o555))
		t.Cleanup(func() { _ = os.Chmod(b.path("d"), 0o755) })
		res := b.run(nil, "--cache", shared, "apply")
		assert.Equal(t, 1, res.code, res.String())
		assert.Contains(t, res.stdout, "cairn may not write in "+b.path("d")+": make it writable")
		res = a.run([]string{"CAIRN_NO_MEMO=1"}, "--cache", shared, "plan")
		assert.Contains(t, res.stdout, "= stage.w  cached")
	}
}

// TestPathsCoveringCacheRefused: a declared output, result or input that is
// the workspace root, holds the cache folder, is it or lies inside it
// (wherever --cache puts it, also through a symlink) is refused by
// validate, plan and apply with exit 2 and the attribute's position;
// nothing runs and the cache is left as it was.
func TestPathsCoveringCacheRefused(t *testing.T) {
	cases := []struct {
		name, attr string
		cache      string // relative to the workspace; "" is the default .cairn
		want       string
	}{
		{"root output", `outputs = ["."]`, "", "workspace root itself"},
		{"root output slash", `outputs = ["./"]`, "", "workspace root itself"},
		{"root by dotdot", `outputs = ["a/.."]`, "", "workspace root itself"},
		{"root result", `result = "."`, "", "workspace root itself"},
		{"root input", `inputs = ["."]`, "", "workspace root itself"},
		{"default cache output", `outputs = [".cairn"]`, "", "inside the cache folder"},
		{"inside default cache", `outputs = [".cairn/index.log"]`, "", "inside the cache folder"},
		{"inside default cache result", `result = ".cairn/r.json"`, "", "inside the cache folder"},
		{"inside default cache input", `inputs = [".cairn/index.log"]`, "", "inside the cache folder"},
		{"above --cache", `outputs = ["sub"]`, "sub/c", "holds the cache folder"},
		{"equal --cache", `outputs = ["sub/c/"]`, "sub/c", "inside the cache folder"},
		{"inside --cache", `outputs = ["sub/c/runs/x"]`, "sub/c", "inside the cache folder"},
		{"link into cache", `outputs = ["lc/x"]`, "", "inside the cache folder"},
		{"link to root", `outputs = ["lr"]`, "", "workspace root itself"},
		{"link to root holds cache", `outputs = ["lr/.cairn/x"]`, "", "inside the cache folder"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWS(t, `
pipeline "cover" {}
stage "command" "bad" {
  run = ["sh", "-c", "echo ran > ran.txt"]
  `+tc.attr+`
}
`)
			cache := w.cache
			if tc.cache != "" {
				cache = w.path(tc.cache)
			}
			w.write(".cairn/index.log", "")
			require.NoError(t, os.MkdirAll(cache, 0o755))
			require.NoError(t, os.Symlink(".cairn", w.path("lc")))
			require.NoError(t, os.Symlink(".", w.path("lr")))
			before := treeFiles(t, cache)
			for _, cmd := range []string{"validate", "plan", "apply"} {
				res := w.run(nil, "--cache", cache, cmd, "pipeline.hcl")
				assert.Equal(t, 2, res.code, "%s: %s", cmd, res)
				assert.Contains(t, res.stderr, tc.want, cmd)
				assert.Contains(t, res.stderr, "pipeline.hcl:5:", cmd)
			}
			res := w.run(nil, "--cache", cache, "validate", "--json", "pipeline.hcl")
			assert.Equal(t, 2, res.code, res.String())
			assert.Regexp(t, `"line": 5,\s+"column": \d+`, res.stdout)
			assert.False(t, w.exists("ran.txt"), "the node ran")
			assert.Equal(t, before, treeFiles(t, cache), "the cache changed")
		})
	}
	// A cache outside the workspace leaves .cairn an ordinary folder.
	w := newWS(t, `
pipeline "cover" {}
stage "command" "ok" {
  run     = ["sh", "-c", "mkdir -p .cairn && echo ok > .cairn/x"]
  outputs = [".cairn/x"]
}
`)
	res := w.run(nil, "--cache", t.TempDir(), "apply")
	assert.Equal(t, 0, res.code, res.String())
}

// TestCacheFilesNeverStored: a workload that makes an output, a file in an
// output folder or its result a symlink into the cache folder when it
// runs gets none of the cache's files stored: the node fails with class
// "result" and no blob is added.
func TestCacheFilesNeverStored(t *testing.T) {
	cases := map[string]string{
		"output file": `run = ["ln", "-s", ".cairn/index.log", "out.txt"]
  outputs = ["out.txt"]`,
		"output dir": `run = ["sh", "-c", "mkdir -p res && ln -s ../.cairn/index.log res/f.txt"]
  outputs = ["res/"]`,
		"output dir link": `run = ["ln", "-s", ".cairn/cas", "res"]
  outputs = ["res"]`,
		"folder on the way": `run = ["ln", "-s", ".cairn", "d"]
  outputs = ["d/index.log"]`,
		"result": `run = ["sh", "-c", "echo '{}' > .cairn/r.json && ln -s .cairn/r.json r.json"]
  result = "r.json"`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWS(t, `
pipeline "links" {}
stage "command" "seed" {
  run     = ["sh", "-c", "echo seed > seed.txt"]
  outputs = ["seed.txt"]
}
stage "command" "link" {
  after = [stage.seed]
  `+body+`
}
`)
			res := w.run(nil, "apply", "--target", "stage.seed")
			require.Equal(t, 0, res.code, res.String())
			blobs := func() map[string]string {
				all := treeFiles(t, w.cache)
				for p := range all {
					if !strings.HasPrefix(p, "cas/") {
						delete(all, p)
					}
				}
				return all
			}
			before := blobs()
			res = w.apply()
			assert.Equal(t, 1, res.code, res.String())
			assert.Contains(t, res.stdout, "stage.link failed (result)")
			assert.Contains(t, res.stdout, "cache")
			assert.Equal(t, before, blobs(), "blobs stored")
		})
	}
}
