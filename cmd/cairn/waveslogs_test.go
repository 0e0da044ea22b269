package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// showRunLogs is the log paths `cairn show RUN` lists for addr.
func showRunLogs(t *testing.T, root, run, addr string) []string {
	t.Helper()
	r := runCLI(t, "--chdir", root, "show", run)
	require.Equal(t, exitOK, r.code, r.stderr)
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, addr+" ") {
			return regexp.MustCompile(`/\S+\.(?:out|err)\b`).FindAllString(l, -1)
		}
	}
	t.Fatalf("no row for %s in:\n%s", addr, r.stdout)
	return nil
}

// runIDs is the ids of the workspace's run folders.
func runIDs(t *testing.T, root string) []string {
	t.Helper()
	runs, err := filepath.Glob(filepath.Join(root, ".cairn", "runs", "2*"))
	require.NoError(t, err)
	for i := range runs {
		runs[i] = filepath.Base(runs[i])
	}
	return runs
}

func fileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// A waves variant retried after running out of memory keeps attempt 1's
// logs, the out-of-memory error included, and `cairn show RUN` lists both
// attempts' logs, as it does a command node's.
func TestShowRunListsEveryAttemptsWavesLogs(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"w.hcl": `stage "waves" "b" {
  for_each   = ["v0"]
  batch_size = 1
  run        = ["sh", "-c", "echo attempt $CAIRN_ATTEMPT; if [ $CAIRN_ATTEMPT = 1 ]; then echo 'torch.OutOfMemoryError: CUDA out of memory' >&2; exit 1; fi"]
  retry {
    max = 1
    on  = ["memory_failure"]
  }
}
`})
	t.Setenv("CAIRN_GPUS", "sim:1")
	t.Setenv("CAIRN_LEASE_DIR", t.TempDir())
	r := runCLI(t, "--chdir", root, "apply", "w.hcl")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	dirs, err := filepath.Glob(filepath.Join(root, "logs", "b_*"))
	require.NoError(t, err)
	require.Len(t, dirs, 1)
	dir := dirs[0]
	runs := runIDs(t, root)
	require.Len(t, runs, 1)
	logs := showRunLogs(t, root, runs[0], `stage.b["v0"]`)
	assert.Equal(t, []string{
		filepath.Join(dir, "gpu0_v0.out"), filepath.Join(dir, "gpu0_v0.err"),
		filepath.Join(dir, "gpu0_v0.attempt2.out"), filepath.Join(dir, "gpu0_v0.attempt2.err"),
	}, logs)
	require.Len(t, logs, 4)
	assert.Equal(t, "attempt 1\n", fileText(t, logs[0]))
	assert.Contains(t, fileText(t, logs[1]), "torch.OutOfMemoryError: CUDA out of memory")
	assert.Equal(t, "attempt 2\n", fileText(t, logs[2]))
	assert.Equal(t, "", fileText(t, logs[3]))
}

// Two applies whose batches start in the same second do not share a log
// folder: `cairn show` of the first still points at the first's output,
// however quickly the second followed.
func TestShowRunPointsAtEachBatchsOwnLogs(t *testing.T) {
	// Until both batches start in one second (the first pair, about
	// always: each apply takes milliseconds), five pairs at most.
	for try := 1; ; try++ {
		root := cliWorkspace(t, map[string]string{"w2.hcl": `variable "salt" {
  type = number
}
stage "waves" "b" {
  for_each   = ["v0", "v1"]
  batch_size = 2
  run        = ["sh", "-c", "echo salt ${var.salt} ${each.key}; echo err salt ${var.salt} ${each.key} >&2; test ${var.salt} = 2"]
}
`})
		t.Setenv("CAIRN_GPUS", "sim:2")
		t.Setenv("CAIRN_LEASE_DIR", t.TempDir())
		r := runCLI(t, "--chdir", root, "apply", "w2.hcl", "--var", "salt=1")
		require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
		runs := runIDs(t, root)
		require.Len(t, runs, 1)
		first := runs[0]
		r = runCLI(t, "--chdir", root, "apply", "w2.hcl", "--var", "salt=2")
		require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
		runs = runIDs(t, root)
		require.Len(t, runs, 2)
		second := runs[0]
		if second == first {
			second = runs[1]
		}

		firstLogs := showRunLogs(t, root, first, `stage.b["v0"]`)
		secondLogs := showRunLogs(t, root, second, `stage.b["v0"]`)
		require.Len(t, firstLogs, 2)
		require.Len(t, secondLogs, 2)
		require.Equal(t, "salt 1 v0\n", fileText(t, firstLogs[0]))
		require.Equal(t, "err salt 1 v0\n", fileText(t, firstLogs[1]))
		require.Equal(t, "salt 2 v0\n", fileText(t, secondLogs[0]))
		require.Equal(t, "err salt 2 v0\n", fileText(t, secondLogs[1]))
		d1, d2 := filepath.Dir(firstLogs[0]), filepath.Dir(secondLogs[0])
		if d2 == d1+"_2" {
			return // the same second: the second took <folder>_2
		}
		if try == 5 {
			// On a loaded machine: each kept its own logs all the same;
			// engine's TestWavesBatchesInOneSecondKeepTheirOwnLogs fixes
			// the clock for the same second.
			t.Logf("the batches started in different seconds each time (%s, %s)", d1, d2)
			return
		}
	}
}

// A variant key holding a ',' in a batch that keeps a ledger is refused
// before anything runs (exit 2, at the stage's for_each): the ledger's
// row lists the variants separated by commas, where "a,b" and "c" would
// read as three variants. Without a ledger the key is accepted.
func TestWavesLedgerRefusesACommaInAVariantKey(t *testing.T) {
	const src = `variable "tag" {
  default = "t"
}

stage "waves" "aime24" {
  for_each   = toset(["v0,v1", "v2"])
  batch_size = 2
  run        = ["sh", "-c", "echo ${each.key}"]
  log_dir    = "logs/submission/${var.tag}"
  tag        = var.tag
  ledger     = "algorithm_scientist/memory.md"
}
`
	root := cliWorkspace(t, map[string]string{"w.hcl": src})
	t.Setenv("CAIRN_GPUS", "sim:2")
	t.Setenv("CAIRN_LEASE_DIR", t.TempDir())
	r := runCLI(t, "--chdir", root, "apply", "w.hcl")
	assert.Equal(t, exitBadInput, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "w.hcl:6:16")
	assert.Contains(t, r.stderr, `stage.aime24["v0,v1"]: the ledger algorithm_scientist/memory.md lists a batch's variants`)
	assert.Contains(t, r.stderr, "Name the variant without a comma")
	assert.NoFileExists(t, filepath.Join(root, "algorithm_scientist/memory.md"))
	assert.Empty(t, runIDs(t, root), "nothing ran")

	root = cliWorkspace(t, map[string]string{"w.hcl": strings.Replace(src, `  ledger     = "algorithm_scientist/memory.md"`+"\n", "", 1)})
	t.Setenv("CAIRN_GPUS", "sim:2")
	t.Setenv("CAIRN_LEASE_DIR", t.TempDir())
	r = runCLI(t, "--chdir", root, "apply", "w.hcl")
	assert.Equal(t, exitOK, r.code, r.stdout+r.stderr)
}
