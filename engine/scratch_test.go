package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each node finds CAIRN_OUT_DIR an empty folder of its own; what a node
// leaves there stays in the run's out/ folder, and a node that leaves
// nothing leaves no folder (its folder goes to a later node).
const scratchPipeline = `
pipeline "scratch" {}
stage "command" "s" {
  for_each = toset(["a", "b", "c", "d", "e", "f", "g", "h"])
  shell    = true
  run      = <<-EOT
    set -e
    test -d "$CAIRN_OUT_DIR"
    if [ -n "$(ls -A "$CAIRN_OUT_DIR")" ]; then echo "scratch not empty" >&2; exit 3; fi
    mkdir -p out
    echo "$CAIRN_OUT_DIR" > out/${each.key}
    case ${each.key} in a|d|h) echo ${each.key} > "$CAIRN_OUT_DIR/note";; esac
    touch "$CAIRN_OUT_DIR/tmp.$$" && rm "$CAIRN_OUT_DIR/tmp.$$"
  EOT
  outputs  = ["out/${each.key}"]
}
`

func TestScratchFolders(t *testing.T) {
	for _, par := range []int{1, 3} {
		w := newWorkspace(t, scratchPipeline)
		r := w.apply(ApplyOptions{Parallelism: par})
		require.Equal(t, 8, r.res.Ran, r.out)
		run := filepath.Join(w.Cache, "runs", r.res.RunID)
		seen := map[string]bool{}
		for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			d := strings.TrimSpace(w.Read("out/" + k))
			assert.Equal(t, filepath.Join(run, "out"), filepath.Dir(d), "the scratch folder is in the run's out folder")
			assert.False(t, seen[d], "two nodes shared %s", d)
			seen[d] = true
			note, err := os.ReadFile(filepath.Join(d, "note"))
			switch k {
			case "a", "d", "h":
				require.NoError(t, err, "node %s's scratch folder was kept", k)
				assert.Equal(t, k+"\n", string(note))
			default:
				_, err := os.Stat(d)
				assert.True(t, os.IsNotExist(err), "node %s left nothing: no folder (par %d)", k, par)
			}
		}
		left, err := os.ReadDir(filepath.Join(run, "out"))
		require.NoError(t, err)
		assert.Len(t, left, 3, "only the kept folders remain: %v", left)
	}
}

// Addresses that flatten to the same characters (stage.train_a and
// stage.train["a"]; x["a.b"] and x["a_b"]) still get logs and scratch
// folders of their own, when they run side by side.
const collidingNamesPipeline = `
pipeline "names" {}
locals {
  body = <<-EOT
    set -e
    echo "$CAIRN_NODE" > "$CAIRN_OUT_DIR/mine"
    echo "out of $CAIRN_NODE"
    echo "err of $CAIRN_NODE" >&2
    # All six run at once: each checks that its folder holds its own file only.
    mkdir -p seen && : > "seen/$(echo "$CAIRN_NODE" | sha256sum | cut -c1-16)"
    while [ "$(ls seen | wc -l)" -lt 6 ]; do sleep 0.05; done
    test "$(cat "$CAIRN_OUT_DIR/mine")" = "$CAIRN_NODE"
    test "$(ls "$CAIRN_OUT_DIR" | wc -l)" -eq 1
  EOT
}
stage "command" "train_a" {
  shell = true
  run   = "# train_a\n${local.body}"
}
stage "command" "train" {
  for_each = toset(["a"])
  shell    = true
  run      = "# train ${each.key}\n${local.body}"
}
stage "command" "x" {
  for_each = toset(["a.b", "a_b", "a/b", "a b"])
  shell    = true
  run      = "# x ${each.key}\n${local.body}"
}
`

func TestNodeNamesDoNotCollide(t *testing.T) {
	w := newWorkspace(t, collidingNamesPipeline)
	r := w.apply(ApplyOptions{Parallelism: 6})
	require.Equal(t, 6, r.res.Ran, r.out)
	require.Equal(t, 0, r.res.Failed, r.out)
	run := filepath.Join(w.Cache, "runs", r.res.RunID)
	addrs := []string{`stage.train_a`, `stage.train["a"]`, `stage.x["a.b"]`, `stage.x["a_b"]`, `stage.x["a/b"]`, `stage.x["a b"]`}
	stems := map[string]string{}
	for _, a := range addrs {
		stem := nodeLog(run, a, 1)
		if other, dup := stems[stem]; dup {
			t.Fatalf("%s and %s share the log %s", a, other, stem)
		}
		stems[stem] = a
		assert.Equal(t, filepath.Join(run, "logs"), filepath.Dir(stem), "%s: the name is one path element", a)
		out, err := os.ReadFile(stem + ".out")
		require.NoError(t, err, a)
		assert.Equal(t, "out of "+a+"\n", string(out), "%s's log holds its own output only", a)
		errb, err := os.ReadFile(stem + ".err")
		require.NoError(t, err, a)
		assert.Equal(t, "err of "+a+"\n", string(errb))
		mine, err := os.ReadFile(filepath.Join(run, "out", filepath.Base(stem), "mine"))
		require.NoError(t, err, "%s kept its scratch folder under its log name", a)
		assert.Equal(t, a+"\n", string(mine))
	}
	assert.Equal(t, "train_a", filepath.Base(nodeLog(run, "stage.train_a", 1)), "a stage without a key keeps its name")
	assert.Equal(t, "train_a.attempt2", filepath.Base(nodeLog(run, "stage.train_a", 2)))
	assert.Regexp(t, `^train_a~[0-9a-f]{16}\.attempt3$`, filepath.Base(nodeLog(run, `stage.train["a"]`, 3)))
	long := `stage.x["` + strings.Repeat("k", 200) + `"]`
	assert.Less(t, len(filepath.Base(nodeLog(run, long, 1))), 120)
}

// emptyDir tells an empty folder from one with anything in it (a hidden
// file too), and from one that cannot be read.
func TestEmptyDir(t *testing.T) {
	d := t.TempDir()
	assert.True(t, emptyDir(d))
	require.NoError(t, os.WriteFile(filepath.Join(d, ".hidden"), nil, 0o644))
	assert.False(t, emptyDir(d))
	require.NoError(t, os.Remove(filepath.Join(d, ".hidden")))
	require.NoError(t, os.Mkdir(filepath.Join(d, "sub"), 0o755))
	assert.False(t, emptyDir(d))
	assert.True(t, emptyDir(filepath.Join(d, "sub")))
	assert.False(t, emptyDir(filepath.Join(d, "missing")))
	require.NoError(t, os.WriteFile(filepath.Join(d, "file"), nil, 0o644))
	assert.False(t, emptyDir(filepath.Join(d, "file")), "a file is not an empty folder")
}

// Four nodes hold their scratch folders at once; the one node after them
// needs one folder: the other three emptied folders are removed as their
// nodes end, not kept in out/.free until the run's end.
const wideScratchPipeline = `
pipeline "scratch" {}
stage "command" "wide" {
  for_each = toset(["a", "b", "c", "d"])
  shell    = true
  run      = <<-EOT
    mkdir -p seen && : > seen/${each.key}
    while [ "$(ls seen | wc -l)" -lt 4 ]; do sleep 0.02; done
    echo ${each.key} > ${each.key}.txt
  EOT
  outputs  = ["${each.key}.txt"]
}
stage "command" "last" {
  after = [stage.wide]
  shell = true
  run   = "ls -A \"$(dirname \"$CAIRN_OUT_DIR\")/.free\" 2>/dev/null | wc -l > free.txt"
  outputs = ["free.txt"]
}
`

func TestScratchFreedWhenNoNodeIsLeftToUseIt(t *testing.T) {
	w := newWorkspace(t, wideScratchPipeline)
	r := w.apply(ApplyOptions{Parallelism: 4})
	require.Equal(t, 5, r.res.Ran, r.out)
	assert.Equal(t, "0", strings.TrimSpace(w.Read("free.txt")), "emptied folders kept while the last node ran")
	_, err := os.Stat(filepath.Join(w.Cache, "runs", r.res.RunID, "out", ".free"))
	assert.True(t, os.IsNotExist(err), "no folder kept for reuse after the run")
}
