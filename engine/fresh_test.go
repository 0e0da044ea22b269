package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/fsdigest"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/stages"
	"github.com/cairn-run/cairn/storage/wal"
)

// The node writes its files when var.write is true; var.v changes its key.
const freshPipeline = `
pipeline "t" {}
variable "v" {
  type    = string
  default = "1"
}
variable "script" {
  type    = string
  default = "true"
}
stage "command" "gate" {
  run     = ["sh", "-c", "${var.script} # ${var.v}"]
  result  = "out/latest.json"
  outputs = ["out/table.txt", "out/dir"]
  postcondition {
    condition     = self.result.accuracy >= 0.85
    error_message = "accuracy too low"
  }
}
stage "command" "after" {
  run = ["sh", "-c", "echo ${stage.gate.result.accuracy} > out/after.txt"]
  outputs = ["out/after.txt"]
}
`

const writeAll = `mkdir -p out/dir && echo '{"accuracy": 0.9}' > out/latest.json && echo t > out/table.txt && echo f > out/dir/f.txt`

func failureOf(r applyRun, addr string) *Failure {
	for i := range r.res.Failures {
		if r.res.Failures[i].Address == addr {
			return &r.res.Failures[i]
		}
	}
	return nil
}

func TestStaleResultFailsTheNode(t *testing.T) {
	w := newWorkspace(t, freshPipeline)
	r := w.apply(ApplyOptions{}, "script="+writeAll)
	require.Equal(t, 0, r.res.Failed, r.out)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	require.NoError(t, os.Chtimes(filepath.Join(w.Root, "out/latest.json"), old, old))

	// The configuration changed and the runner exits 0 writing nothing:
	// the earlier run's accuracy must not pass the gate.
	r = w.apply(ApplyOptions{}, "v=2")
	f := failureOf(r, "stage.gate")
	require.NotNil(t, f, r.out)
	assert.Equal(t, "result", f.Class, r.out)
	assert.Contains(t, f.Message, "out/latest.json was not written by this run")
	assert.Nil(t, failureOf(r, "stage.after"), "the downstream is skipped, not run")
	assert.Equal(t, "0.9\n", w.Read("out/after.txt"), "the downstream did not run on the stale result")
	// The file the node left alone keeps its own time.
	st, err := os.Stat(filepath.Join(w.Root, "out/latest.json"))
	require.NoError(t, err)
	assert.True(t, st.ModTime().Equal(old), "mtime %s, want %s", st.ModTime(), old)
}

func TestStaleOutputFailsTheNode(t *testing.T) {
	for name, script := range map[string]string{
		"file":   `echo '{"accuracy": 0.9}' > out/latest.json && echo f > out/dir/f.txt`,
		"folder": `echo '{"accuracy": 0.9}' > out/latest.json && echo t > out/table.txt`,
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorkspace(t, freshPipeline)
			r := w.apply(ApplyOptions{}, "script="+writeAll)
			require.Equal(t, 0, r.res.Failed, r.out)
			r = w.apply(ApplyOptions{}, "v=2", "script="+script)
			f := failureOf(r, "stage.gate")
			require.NotNil(t, f, r.out)
			assert.Equal(t, "result", f.Class)
			want := map[string]string{"file": "out/table.txt", "folder": "out/dir"}[name]
			assert.Contains(t, f.Message, "the declared output "+want+" was not written by this run")
		})
	}
}

func TestRewrittenFilesAreFresh(t *testing.T) {
	for name, scripts := range map[string][2]string{
		// The same bytes again, at once (within the clock tick of the
		// earlier write on a coarse filesystem).
		"same content": {writeAll, writeAll},
		// Write and rename, as careful runners do; a new file in the
		// folder (empty before: no other configuration's file is left
		// in it) counts as writing it.
		"rename": {
			`mkdir -p out/dir && echo '{"accuracy": 0.9}' > out/latest.json && echo t > out/table.txt`,
			`echo '{"accuracy": 0.95}' > out/tmp && mv out/tmp out/latest.json && touch out/table.txt && echo g > out/dir/g.txt`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorkspace(t, freshPipeline)
			r := w.apply(ApplyOptions{}, "script="+scripts[0])
			require.Equal(t, 0, r.res.Failed, r.out)
			r = w.apply(ApplyOptions{}, "v=2", "script="+scripts[1])
			assert.Equal(t, 0, r.res.Failed, r.out)
			assert.GreaterOrEqual(t, r.res.Ran, 1, r.out)
		})
	}
}

func TestStaleWavesResultFailsTheVariant(t *testing.T) {
	w := newWorkspace(t, `
pipeline "t" {}
variable "script" {
  type    = string
  default = "true"
}
stage "waves" "b" {
  for_each   = toset(["v0"])
  batch_size = 1
  run        = ["sh", "-c", var.script]
  result     = "sum/${each.key}.json"
}
`)
	leases := t.TempDir()
	pool, err := gpu.NewPool(func(k string) string {
		return map[string]string{"CAIRN_GPUS": "sim:1", "CAIRN_LEASE_DIR": leases}[k]
	})
	require.NoError(t, err)
	r := w.apply(ApplyOptions{GPUs: pool}, `script=mkdir -p sum && echo '{"x":1}' > sum/v0.json`)
	require.Equal(t, 0, r.res.Failed, r.out)
	r = w.apply(ApplyOptions{GPUs: pool}, "script=exit 0")
	f := failureOf(r, `stage.b["v0"]`)
	require.NotNil(t, f, r.out)
	assert.Equal(t, "result", f.Class)
	assert.Contains(t, f.Message, "sum/v0.json was not written by this run")
}

// A stale file whose time is ahead of this machine's clock (a file server
// whose clock runs ahead) is still seen as not written: the check does not
// compare times with the node's start.
func TestStaleFileFromTheFutureFailsTheNode(t *testing.T) {
	w := newWorkspace(t, freshPipeline)
	r := w.apply(ApplyOptions{}, "script="+writeAll)
	require.Equal(t, 0, r.res.Failed, r.out)
	ahead := time.Now().Add(time.Hour).Truncate(time.Second)
	require.NoError(t, os.Chtimes(filepath.Join(w.Root, "out/latest.json"), ahead, ahead))
	r = w.apply(ApplyOptions{}, "v=2")
	f := failureOf(r, "stage.gate")
	require.NotNil(t, f, r.out)
	assert.Equal(t, "result", f.Class)
	assert.Contains(t, f.Message, "out/latest.json was not written by this run")
}

// A folder the node writes that still holds a file another configuration
// of the node wrote, and this run did not, fails the node: committed, that
// file would be this configuration's output, restored wherever it is asked
// for. A file no committed record holds (the user's own, an interrupted
// attempt's) stays: a command that skips what it finds may rely on it.
func TestOtherConfigurationsFileInAFolderFailsTheNode(t *testing.T) {
	w := newWorkspace(t, freshPipeline)
	r := w.apply(ApplyOptions{}, "script="+writeAll+" && echo g > out/dir/g.txt")
	require.Equal(t, 0, r.res.Failed, r.out)

	// Another configuration writes f.txt and not g.txt.
	r = w.apply(ApplyOptions{}, "v=2", "script="+writeAll)
	f := failureOf(r, "stage.gate")
	require.NotNil(t, f, r.out)
	assert.Equal(t, "result", f.Class)
	assert.Contains(t, f.Message, "out/dir holds out/dir/g.txt, which this run did not write")
	assert.Contains(t, f.Message, "another configuration")
	assert.Contains(t, f.Message, "remove it")

	// Removed, the configuration runs and commits what it wrote.
	require.NoError(t, os.Remove(filepath.Join(w.Root, "out/dir/g.txt")))
	r = w.apply(ApplyOptions{}, "v=2", "script="+writeAll)
	require.Equal(t, 0, r.res.Failed, r.out)

	// A file of the user's own in the folder is no other
	// configuration's: it stays, and the node passes.
	w.Write("out/dir/notes.txt", "mine\n")
	r = w.apply(ApplyOptions{}, "v=3", "script="+writeAll)
	assert.Equal(t, 0, r.res.Failed, r.out)
}

// gc collects the record of the configuration the workspace held and
// keeps its address pointer: a file that configuration left in the
// folder can no longer be told from the user's own. It fails the node
// rather than being kept and stored as this configuration's output.
func TestOtherConfigurationsFileAfterGCFailsTheNode(t *testing.T) {
	w := newWorkspace(t, freshPipeline)
	r := w.apply(ApplyOptions{}, "script="+writeAll+" && echo g > out/dir/g.txt")
	require.Equal(t, 0, r.res.Failed, r.out)
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	_, err = GC(c, store.GCOptions{AgeSet: true})
	require.NoError(t, err)
	require.NoError(t, c.Close())

	r = w.apply(ApplyOptions{}, "v=2", "script="+writeAll)
	f := failureOf(r, "stage.gate")
	require.NotNil(t, f, r.out)
	assert.Equal(t, "result", f.Class)
	assert.Contains(t, f.Message, "out/dir holds out/dir/g.txt, which this run did not write")
	assert.Contains(t, f.Message, "whose record is gone from the cache")
	c, err = store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	assert.Empty(t, c.KeysOf("t", "stage.gate"), "nothing was committed")
	require.NoError(t, c.Close())

	// Removed, the configuration runs and commits what it wrote.
	require.NoError(t, os.Remove(filepath.Join(w.Root, "out/dir/g.txt")))
	r = w.apply(ApplyOptions{}, "v=2", "script="+writeAll)
	require.Equal(t, 0, r.res.Failed, r.out)
}

// Taken from the cache, a node's output folder holds what its record
// holds: a file another configuration of the node wrote there (restored
// when the user switched to it, and back) is removed, and said; a file of
// the user's own stays.
func TestRestoredFolderDropsOtherConfigurationsFiles(t *testing.T) {
	w := newWorkspace(t, freshPipeline)
	withG := "script=" + writeAll + " && echo g > out/dir/g.txt"
	fresh := "script=rm -rf out/dir && " + writeAll
	r := w.apply(ApplyOptions{}, withG)
	require.Equal(t, 0, r.res.Failed, r.out)
	r = w.apply(ApplyOptions{}, "v=2", fresh)
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.NoFileExists(t, filepath.Join(w.Root, "out/dir/g.txt"))

	// Back to the first configuration: taken from the cache, g.txt too.
	r = w.apply(ApplyOptions{}, withG)
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.Equal(t, "g\n", w.Read("out/dir/g.txt"))
	w.Write("out/dir/notes.txt", "mine\n")

	// And to the second again: g.txt is not its output.
	r = w.apply(ApplyOptions{}, "v=2", fresh)
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.Equal(t, 0, r.res.Ran, r.out)
	assert.NoFileExists(t, filepath.Join(w.Root, "out/dir/g.txt"))
	assert.Contains(t, r.out, "removed out/dir/g.txt from its output folder")
	assert.Equal(t, "mine\n", w.Read("out/dir/notes.txt"), "the user's file stays")
	assert.Equal(t, "f\n", w.Read("out/dir/f.txt"))
}

// A node whose input folder holds its own output runs again after a run
// that changed that output: plan's reason says why, and what to do.
func TestPlanExplainsAnInputHoldingTheNodesOwnOutput(t *testing.T) {
	w := newWorkspace(t, `
stage "command" "build" {
  run     = ["sh", "-c", "cat work/src.txt > work/out.txt"]
  inputs  = ["work"]
  outputs = ["work/out.txt"]
}
`)
	w.Write("work/src.txt", "src\n")
	r := w.apply(ApplyOptions{})
	require.Equal(t, 1, r.res.Ran, r.out)
	out := w.PlanText(plan.Options{})
	assert.Contains(t, out, "~ stage.build  run: input work changed: it holds the node's own output work/out.txt")
	assert.Contains(t, out, "list the files it reads in inputs")
	// The digest cannot tell the run's change from the user's: the
	// reason says which it is when nothing else changed, and no more.
	assert.Contains(t, out, "(where nothing else in work changed, its last run did)")
}

// A configuration taken from the cache is what the workspace holds: the
// next configuration is compared with it, not with the one run before it.
// Its files left in a folder the next one does not write are another
// configuration's (the node fails), and plan's reason names its values.
func TestConfigurationTakenFromTheCacheIsTheOneCompared(t *testing.T) {
	w := newWorkspace(t, freshPipeline)
	withG := "script=" + writeAll + " && echo g > out/dir/g.txt"
	r := w.apply(ApplyOptions{}, withG)
	require.Equal(t, 0, r.res.Failed, r.out)
	r = w.apply(ApplyOptions{}, "v=2", "script=rm -rf out/dir && "+writeAll)
	require.Equal(t, 0, r.res.Failed, r.out)
	r = w.apply(ApplyOptions{}, withG)
	require.Equal(t, 0, r.res.Failed, r.out)
	require.Equal(t, 0, r.res.Ran, r.out)
	require.Equal(t, "g\n", w.Read("out/dir/g.txt"))

	text := w.PlanText(plan.Options{}, "v=3", "script="+writeAll)
	assert.Contains(t, text, "echo g", "the change is told against the configuration the workspace holds")

	r = w.apply(ApplyOptions{}, "v=3", "script="+writeAll)
	f := failureOf(r, "stage.gate")
	require.NotNil(t, f, r.out)
	assert.Equal(t, "result", f.Class)
	assert.Contains(t, f.Message, "out/dir holds out/dir/g.txt, which this run did not write")
}

// A folder the run only added files to (it rewrote none of those it
// found) is checked all the same: another configuration's files in it
// fail the node, and are not committed beside the new ones.
func TestFolderThatOnlyGainedFilesIsChecked(t *testing.T) {
	w := newWorkspace(t, freshPipeline)
	r := w.apply(ApplyOptions{}, "script="+writeAll+" && echo g > out/dir/g.txt")
	require.Equal(t, 0, r.res.Failed, r.out)

	// Another configuration writes only out/dir/h.txt in the folder.
	other := `echo '{"accuracy": 0.9}' > out/latest.json && echo t > out/table.txt && echo h > out/dir/h.txt`
	r = w.apply(ApplyOptions{}, "v=2", "script="+other)
	f := failureOf(r, "stage.gate")
	require.NotNil(t, f, r.out)
	assert.Equal(t, "result", f.Class)
	assert.Contains(t, f.Message, "out/dir holds out/dir/f.txt, out/dir/g.txt, which this run did not write")
}

// A file left in the folder is another configuration's only where that
// configuration's record holds it with the same content: a file of the
// user's own by the same name (another workspace sharing the cache, or
// one rewritten by hand) is not blamed on an earlier run, and stays.
func TestFileByAnotherConfigurationsNameWithOtherContentStays(t *testing.T) {
	w := newWorkspace(t, freshPipeline)
	r := w.apply(ApplyOptions{}, "script="+writeAll+" && echo g > out/dir/g.txt")
	require.Equal(t, 0, r.res.Failed, r.out)

	w.Write("out/dir/g.txt", "my own notes\n")
	r = w.apply(ApplyOptions{}, "v=2", "script="+writeAll)
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.Equal(t, "my own notes\n", w.Read("out/dir/g.txt"))
}

// A file the run found in its folder and did not write (the user's own) is
// stored with the record and marked kept there: the next configuration
// does not take it for that one's output, and a configuration taken from
// the cache does not remove it.
func TestKeptFileIsNoConfigurationsOutput(t *testing.T) {
	w := newWorkspace(t, freshPipeline)
	r := w.apply(ApplyOptions{}, "script="+writeAll)
	require.Equal(t, 0, r.res.Failed, r.out)
	w.Write("out/dir/notes.txt", "mine\n")

	r = w.apply(ApplyOptions{}, "v=2", "script="+writeAll)
	require.Equal(t, 0, r.res.Failed, r.out)
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	rec, ok := c.Lookup(c.LastKey("t", "stage.gate"))
	require.True(t, ok)
	require.NoError(t, c.Close())
	assert.Contains(t, rec.Outputs, "out/dir/notes.txt", "a kept file is stored")
	assert.Equal(t, []string{"out/dir/notes.txt"}, rec.Kept)

	r = w.apply(ApplyOptions{}, "v=3", "script="+writeAll)
	require.Equal(t, 0, r.res.Failed, r.out)

	// Back to the first configuration, taken from the cache.
	r = w.apply(ApplyOptions{}, "script="+writeAll)
	require.Equal(t, 0, r.res.Failed, r.out)
	require.Equal(t, 0, r.res.Ran, r.out)
	assert.NotContains(t, r.out, "removed")
	assert.Equal(t, "mine\n", w.Read("out/dir/notes.txt"))
}

// A file an earlier run of the same configuration wrote, and a run of it
// again (--replace) left in place (a command that skips what it finds), is
// that configuration's output, not a kept file of no configuration: the
// next configuration is refused for holding it.
func TestRerunLeavesItsOwnOutputsTheConfigurations(t *testing.T) {
	w := newWorkspace(t, freshPipeline)
	skips := "script=" + writeAll + " && ([ -e out/dir/g.txt ] || echo g > out/dir/g.txt)"
	r := w.apply(ApplyOptions{}, skips)
	require.Equal(t, 0, r.res.Failed, r.out)
	r = w.apply(ApplyOptions{Replace: map[string]bool{"stage.gate": true}}, skips)
	require.Equal(t, 0, r.res.Failed, r.out)
	require.Equal(t, 1, r.res.Ran, r.out)

	r = w.apply(ApplyOptions{}, "v=2", skips)
	f := failureOf(r, "stage.gate")
	require.NotNil(t, f, r.out)
	assert.Equal(t, "result", f.Class)
	assert.Contains(t, f.Message, "out/dir holds out/dir/g.txt, which this run did not write")
}

// A node taken from the cache, whose folder holds a file no record of its
// own takes away, reads the records of its own address only, never the
// whole cache's (one pass decoding every record, per node, made an apply
// of 500 such nodes take 8 s): a damaged record of no node of the
// workspace is left alone, not evicted as a decode would.
func TestRestoredFolderReadsOnlyItsAddresssRecords(t *testing.T) {
	w := newWorkspace(t, freshPipeline)
	withG := "script=" + writeAll + " && echo g > out/dir/g.txt"
	r := w.apply(ApplyOptions{}, withG)
	require.Equal(t, 0, r.res.Failed, r.out)
	r = w.apply(ApplyOptions{}, "v=2", "script=rm -rf out/dir && "+writeAll)
	require.Equal(t, 0, r.res.Failed, r.out)
	w.Write("out/dir/notes.txt", "mine\n")

	bad := strings.Repeat("e", 64)
	l, err := wal.Open(store.IndexPath(w.Cache), wal.Options{Shared: true, NoSync: true})
	require.NoError(t, err)
	require.NoError(t, l.Append([][]byte{[]byte("A" + bad + "{not a record")}, wal.Durable))
	require.NoError(t, l.Close())

	r = w.apply(ApplyOptions{}, withG)
	require.Equal(t, 0, r.res.Failed, r.out)
	require.Equal(t, 0, r.res.Ran, r.out)
	assert.Equal(t, "mine\n", w.Read("out/dir/notes.txt"))
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	assert.True(t, c.Has(bad), "another node's record was read (and, damaged, evicted)")
}

// Removing another configuration's files from a folder taken from the
// cache removes the folders that leaves empty too, and only those: a
// downstream listing the folder reads what it read when this
// configuration ran (and is taken from the cache), and a folder of the
// user's own that was empty before stays.
func TestRestoredFolderDropsFoldersItEmptied(t *testing.T) {
	w := newWorkspace(t, `
pipeline "t" {}
variable "mode" {
  type    = string
  default = "a"
}
stage "command" "w" {
  run     = ["sh", "-c", "rm -rf od && mkdir -p od/${var.mode}/deep && echo ${var.mode} > od/${var.mode}/deep/f"]
  outputs = ["od"]
}
stage "command" "r" {
  run     = ["sh", "-c", "find od | sort > r.txt"]
  inputs  = ["od"]
  outputs = ["r.txt"]
}
`)
	r := w.apply(ApplyOptions{})
	require.Equal(t, 0, r.res.Failed, r.out)
	first := w.Read("r.txt")
	r = w.apply(ApplyOptions{}, "mode=b")
	require.Equal(t, 0, r.res.Failed, r.out)

	r = w.apply(ApplyOptions{})
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.Equal(t, 0, r.res.Ran, r.out)
	assert.NoDirExists(t, filepath.Join(w.Root, "od/b"))
	assert.Equal(t, first, w.Read("r.txt"))
	assert.Contains(t, r.out, "removed od/b/deep/f from its output folder, and the folders od/b, od/b/deep that this left empty")

	// A folder that was empty before stays, and so does one holding it.
	require.NoError(t, os.MkdirAll(filepath.Join(w.Root, "od/mine/empty"), 0o755))
	r = w.apply(ApplyOptions{}, "mode=b")
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.NoDirExists(t, filepath.Join(w.Root, "od/a"))
	assert.DirExists(t, filepath.Join(w.Root, "od/mine/empty"))
}

// A restore cut short by a kill leaves its temporary file beside the file
// it restored (.NAME.cairn-HEX). The next restore of the folder removes it,
// and a run of the node does not store it as its output.
func TestRestoreTempFilesAreNobodysOutput(t *testing.T) {
	w := newWorkspace(t, `
variable "v" {
  type    = string
  default = "1"
}
stage "command" "gen" {
  run     = ["sh", "-c", "mkdir -p od && echo a > od/a.txt && echo b > od/b.txt # ${var.v}"]
  outputs = ["od"]
}
stage "command" "count" {
  run     = ["sh", "-c", "ls -A od | wc -l > n.txt"]
  inputs  = ["od"]
  outputs = ["n.txt"]
}
`)
	r := w.apply(ApplyOptions{})
	require.Equal(t, 0, r.res.Failed, r.out)
	require.Equal(t, "2", strings.TrimSpace(w.Read("n.txt")))

	// As a kill during the restore of od/b.txt leaves it.
	temp := "od/.b.txt.cairn-0123456789abcdef"
	require.NoError(t, os.Remove(filepath.Join(w.Root, "od/b.txt")))
	w.Write(temp, "b")
	r = w.apply(ApplyOptions{})
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.NoFileExists(t, filepath.Join(w.Root, temp), "removed by the restore")
	assert.Equal(t, "2", strings.TrimSpace(w.Read("n.txt")))

	// A run with one there stores its own files only.
	w.Write(temp, "b")
	r = w.apply(ApplyOptions{}, "v=2")
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.NoFileExists(t, filepath.Join(w.Root, temp))
	assert.Equal(t, "2", strings.TrimSpace(w.Read("n.txt")))
}

// An evaluation writes its scores file anew on every attempt: while it
// runs, the file an earlier configuration left carries the mark, so a
// cairn killed meanwhile leaves it looking stale, not current; the run
// that finishes writes it with the current time.
func TestEvaluationScoresCarryTheMarkWhileItRuns(t *testing.T) {
	w := evalKeysWorkspace(t, `
pipeline "k" {}
variable "v" { default = "1" }
stage "evaluate" "ev" {
  worker    = ["python3", "worker.py", var.v]
  items     = "items.jsonl"
  model     = "m1"
  endpoints = ["ENDPOINT"]
  scores    = "out/scores.jsonl"
}
`)
	// The worker notes the scores file's modification time as it starts.
	w.Write("worker.py", `import json, os, sys
try:
    seen = str(int(os.stat("out/scores.jsonl").st_mtime))
except FileNotFoundError:
    seen = "none"
open("seen.txt", "w").write(seen)
for line in sys.stdin:
    r = json.loads(line)
    print(json.dumps({"id": r["id"], "score": 1.0}), flush=True)
`)
	r := w.apply(ApplyOptions{}, "v=1")
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.Equal(t, "none", w.Read("seen.txt"))

	r = w.apply(ApplyOptions{}, "v=2")
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.Equal(t, fmt.Sprint(freshMark.Unix()), w.Read("seen.txt"), "the earlier configuration's scores carry the mark while the node runs")
	st, err := os.Stat(filepath.Join(w.Root, "out", "scores.jsonl"))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), st.ModTime(), time.Hour, "written by this run")
}

// TestInputChangedWhileRunningFailsTheNode: a node whose declared input
// is rewritten while it runs (here by its own command, after reading it)
// read content its key was not taken from; its result is not stored, so
// no later apply takes it from the cache for the input's first content.
func TestInputChangedWhileRunningFailsTheNode(t *testing.T) {
	w := newWorkspace(t, `
pipeline "t" {}
stage "command" "s" {
  run     = ["sh", "-c", "echo EDITED > in.txt; cat in.txt > out.txt"]
  inputs  = ["in.txt"]
  outputs = ["out.txt"]
}
`)
	w.Write("in.txt", "orig\n")
	r := w.apply(ApplyOptions{})
	f := failureOf(r, "stage.s")
	require.NotNil(t, f, r.out)
	assert.Equal(t, "result", f.Class)
	assert.Contains(t, f.Message, "its input in.txt changed while it ran")
	assert.Contains(t, f.Message, "apply again")

	w.Write("in.txt", "orig\n")
	r = w.apply(ApplyOptions{})
	assert.Equal(t, 0, r.res.Cached, "the result read from the edited input was not cached for the original: %s", r.out)
	assert.NotNil(t, failureOf(r, "stage.s"), r.out)
}

// TestInputRewrittenByAnotherApplyFailsTheNode: while stage.st of one
// apply (n=1) reads data/x.txt, another apply (n=2) writes its own
// data/x.txt there. The first st's result is not stored under the key of
// the content it was keyed on, and the next apply with n=1 computes st
// from n=1's file.
func TestInputRewrittenByAnotherApplyFailsTheNode(t *testing.T) {
	w := newWorkspace(t, `
pipeline "t" {}
variable "n" {
  type    = number
  default = 1
}
stage "command" "gen" {
  run     = ["sh", "-c", "mkdir -p data; seq ${var.n} > data/x.txt; touch gen${var.n}.done"]
  outputs = ["data/x.txt"]
}
stage "command" "st" {
  run     = ["sh", "-c", "touch st${var.n}.started; while [ ${var.n} = 1 ] && [ ! -f gen2.done ]; do sleep 0.01; done; wc -l < data/x.txt | tr -d ' ' > st.txt"]
  inputs  = ["data/x.txt"]
  outputs = ["st.txt"]
}
`)
	first := make(chan applyRun, 1)
	go func() { first <- w.apply(ApplyOptions{}, "n=1") }()
	// The first apply's st is keyed on n=1's file and waits for the
	// second apply's gen to have written n=2's.
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(w.Root, "st1.started"))
		return err == nil
	}, 30*time.Second, 10*time.Millisecond)
	second := w.apply(ApplyOptions{}, "n=2")
	require.Equal(t, 0, second.res.Failed, second.out)
	r := <-first
	f := failureOf(r, "stage.st")
	require.NotNil(t, f, r.out)
	assert.Equal(t, "result", f.Class)
	assert.Contains(t, f.Message, "its input data/x.txt changed while it ran")

	r = w.apply(ApplyOptions{}, "n=1")
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.Equal(t, "1\n", w.Read("data/x.txt"))
	assert.Equal(t, "1\n", w.Read("st.txt"), "st is n=1's, not read from n=2's file")
}

// TestInputFolderChangedWhileRunning: a folder input whose files were
// rewritten or removed while its node ran fails the node; one to which
// files were only added (the node's own caches) holds what the key was
// taken from, and the node's result is stored.
func TestInputFolderChangedWhileRunning(t *testing.T) {
	for name, c := range map[string]struct {
		script string
		fails  bool
	}{
		"a file rewritten":          {"echo EDITED > src/a.txt", true},
		"a file removed":            {"rm src/a.txt", true},
		"a file added":              {"echo n > src/new.txt", false},
		"a folder added":            {"mkdir -p src/cache/x && echo c > src/cache/x/m.bin", false},
		"a file in an empty folder": {"echo n > src/empty/new.txt", false},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorkspace(t, `
pipeline "t" {}
stage "command" "s" {
  run     = ["sh", "-c", "cat src/a.txt > out.txt; `+c.script+`"]
  inputs  = ["src"]
  outputs = ["out.txt"]
}
`)
			w.Write("src/a.txt", "a\n")
			require.NoError(t, os.MkdirAll(filepath.Join(w.Root, "src/empty"), 0o755))
			r := w.apply(ApplyOptions{})
			f := failureOf(r, "stage.s")
			if !c.fails {
				require.Nil(t, f, r.out)
				require.Equal(t, 1, r.res.Ran, r.out)
				return
			}
			require.NotNil(t, f, r.out)
			assert.Equal(t, "result", f.Class)
			assert.Contains(t, f.Message, "its input src changed while it ran")
		})
	}
}

// ranThenCached applies w, whose one node addr runs Python that imports a
// module from the input folder dir: it runs, Python writes its bytecode
// into dir/__pycache__, and the next plan and apply find the node cached.
func ranThenCached(t *testing.T, w *workspace, addr, dir string) {
	t.Helper()
	r := w.apply(ApplyOptions{})
	require.Equal(t, 1, r.res.Ran, r.out)
	require.DirExists(t, filepath.Join(w.Root, dir, "__pycache__"), "Python wrote its bytecode")
	assert.Equal(t, map[string][]string{plan.ActCached: {addr}}, planSets(w.Plan(plan.Options{})))
	r = w.apply(ApplyOptions{})
	assert.Equal(t, 1, r.res.Cached, r.out)
}

// TestPythonCacheInInputFolderKeepsKey: the __pycache__ Python writes
// beside the modules a command imports from an input folder is not there
// for the node's key, so the next plan and apply find the node cached; an
// edit of a module still runs it.
func TestPythonCacheInInputFolderKeepsKey(t *testing.T) {
	w := newWorkspace(t, `
pipeline "t" {}
stage "command" "train" {
  run     = ["python3", "train.py"]
  inputs  = ["train.py", "lib/"]
  outputs = ["out.txt"]
  env     = { PYTHONDONTWRITEBYTECODE = "" }
}
`)
	w.Write("train.py", "import sys\nsys.path.insert(0, 'lib')\nimport m\nopen('out.txt', 'w').write(m.V)\n")
	w.Write("lib/m.py", "V = 'a'\n")
	ranThenCached(t, w, "stage.train", "lib")

	// Another size: Python's cache tells sources apart by size and
	// whole seconds.
	w.Write("lib/m.py", "V = 'bb'\n")
	r := w.apply(ApplyOptions{})
	require.Equal(t, 1, r.res.Ran, r.out)
	assert.Equal(t, "bb", w.Read("out.txt"))
}

// An optimizer job's out folder lock (.cairn-out.lock: which apply holds
// the folder, its pid and start) is in no digest: a stage reading the
// runs folder, an aggregate, stays cached when another apply rewrote the
// lock and nothing else (it reran on every --replace of a job's result).
func TestOutFolderLockIsNoInput(t *testing.T) {
	require.Equal(t, stages.OutLockFile, fsdigest.OutLock, "the lock the stage kinds write is the one digests leave out")
	w := newWorkspace(t, `
pipeline "t" {}
stage "command" "sum" {
  run     = ["sh", "-c", "cat runs/*/result.json > sum.txt"]
  inputs  = ["runs"]
  outputs = ["sum.txt"]
}
`)
	w.Write("runs/a/result.json", "1\n")
	w.Write("runs/a/"+stages.OutLockFile, `{"pid": 100, "started": "2026-12-08T01:00:00Z"}`)
	r := w.apply(ApplyOptions{})
	require.Equal(t, 1, r.res.Ran, r.out)

	w.Write("runs/a/"+stages.OutLockFile, `{"pid": 200, "started": "2026-12-08T02:00:00Z"}`)
	p := w.Plan(plan.Options{})
	assert.Equal(t, []string{"stage.sum"}, planSets(p)[plan.ActCached])
	r = w.apply(ApplyOptions{})
	assert.Equal(t, 1, r.res.Cached, r.out)

	w.Write("runs/b/result.json", "2\n")
	r = w.apply(ApplyOptions{})
	require.Equal(t, 1, r.res.Ran, r.out)
	assert.Equal(t, "1\n2\n", w.Read("sum.txt"))
}
