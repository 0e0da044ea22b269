package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/gpu"
)

// simGPUs is a pool of n simulated GPUs with a lease folder of the test's
// own.
func simGPUs(t *testing.T, n int) *gpu.Pool {
	t.Helper()
	leases := t.TempDir()
	pool, err := gpu.NewPool(func(k string) string {
		return map[string]string{"CAIRN_GPUS": fmt.Sprintf("sim:%d", n), "CAIRN_LEASE_DIR": leases}[k]
	})
	require.NoError(t, err)
	return pool
}

// fixBatchClock starts every batch of the test at one instant, as batches
// started in the same second do.
func fixBatchClock(t *testing.T, at time.Time) {
	t.Helper()
	old := batchNow
	batchNow = func() time.Time { return at }
	t.Cleanup(func() { batchNow = old })
}

// journalLogs is every log path the run's journal gives addr, in the
// order its records name them, each once: what `cairn show RUN` lists.
func journalLogs(t *testing.T, runDir, addr string) []string {
	t.Helper()
	ri, err := runlog.Load(runDir)
	require.NoError(t, err)
	var logs []string
	for _, e := range ri.Entries {
		if e.Node != addr || (e.T != runlog.Started && e.T != runlog.Failed) {
			continue
		}
		for _, l := range e.Logs {
			if !slices.Contains(logs, l) {
				logs = append(logs, l)
			}
		}
	}
	return logs
}

// batchLogDirs is the log folder of each batch the run's journal records,
// by stage.
func batchLogDirs(t *testing.T, runDir string) map[string]string {
	t.Helper()
	ri, err := runlog.Load(runDir)
	require.NoError(t, err)
	dirs := map[string]string{}
	for _, e := range ri.Entries {
		if e.T == runlog.BatchEvent && e.Batch != nil {
			dirs[e.Batch.Stage] = e.Batch.LogDir
		}
	}
	return dirs
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// A retried waves variant keeps every attempt's logs: attempt 2 writes
// gpu<i>_<key>.attempt2.out and .err beside attempt 1's, which keep the
// failure that caused the retry, and the run's journal (what `cairn show
// RUN` lists) names all four.
func TestRetriedWavesVariantKeepsEveryAttemptsLogs(t *testing.T) {
	w := newWorkspace(t, `
pipeline "t" {}
stage "waves" "b" {
  for_each   = ["v0"]
  batch_size = 1
  run        = ["sh", "-c", "echo attempt $CAIRN_ATTEMPT; if [ $CAIRN_ATTEMPT = 1 ]; then echo 'torch.OutOfMemoryError: CUDA out of memory' >&2; exit 1; fi"]
  retry {
    max = 1
    on  = ["memory_failure"]
  }
}
`)
	r := w.apply(ApplyOptions{GPUs: simGPUs(t, 1)})
	require.Equal(t, 0, r.res.Failed, r.out)
	require.Equal(t, 1, r.res.Ran, r.out)
	runDir := filepath.Join(w.Cache, "runs", r.res.RunID)
	dir := batchLogDirs(t, runDir)["b"]
	require.NotEmpty(t, dir, r.out)

	assert.Equal(t, "attempt 1\n", readLog(t, filepath.Join(dir, "gpu0_v0.out")))
	assert.Equal(t, "torch.OutOfMemoryError: CUDA out of memory\n", readLog(t, filepath.Join(dir, "gpu0_v0.err")))
	assert.Equal(t, "attempt 2\n", readLog(t, filepath.Join(dir, "gpu0_v0.attempt2.out")))
	assert.Equal(t, "", readLog(t, filepath.Join(dir, "gpu0_v0.attempt2.err")), "made even when empty, as attempt 1's")
	assert.Equal(t, []string{
		filepath.Join(dir, "gpu0_v0.out"), filepath.Join(dir, "gpu0_v0.err"),
		filepath.Join(dir, "gpu0_v0.attempt2.out"), filepath.Join(dir, "gpu0_v0.attempt2.err"),
	}, journalLogs(t, runDir, `stage.b["v0"]`))
}

// A variant whose key ends like a retry's logs ("v0.attempt2") does not
// share them: retried on the same GPU, v0's attempt 2 and the variant
// v0.attempt2 each keep their own logs.
func TestWavesKeyLikeAnAttemptKeepsItsOwnLogs(t *testing.T) {
	w := newWorkspace(t, `
pipeline "t" {}
stage "waves" "b" {
  for_each   = ["v0", "v0.attempt2"]
  batch_size = 2
  run        = ["sh", "-c", "echo ${each.key} attempt $CAIRN_ATTEMPT; if [ ${each.key} = v0 ] && [ $CAIRN_ATTEMPT = 1 ]; then exit 1; fi"]
  retry {
    max = 1
    on  = ["exit"]
  }
}
`)
	r := w.apply(ApplyOptions{GPUs: simGPUs(t, 1)})
	require.Equal(t, 0, r.res.Failed, r.out)
	runDir := filepath.Join(w.Cache, "runs", r.res.RunID)
	dir := batchLogDirs(t, runDir)["b"]
	require.NotEmpty(t, dir, r.out)

	assert.Equal(t, "v0 attempt 2\n", readLog(t, filepath.Join(dir, "gpu0_v0.attempt2.out")))
	other := journalLogs(t, runDir, `stage.b["v0.attempt2"]`)
	require.Len(t, other, 2, r.out)
	assert.Equal(t, dir, filepath.Dir(other[0]))
	assert.NotEqual(t, filepath.Join(dir, "gpu0_v0.attempt2.out"), other[0])
	assert.Equal(t, "v0.attempt2 attempt 1\n", readLog(t, other[0]))
}

const saltedBatch = `
pipeline "t" {}
variable "salt" {
  type = number
}
stage "waves" "b" {
  for_each   = ["v0", "v1"]
  batch_size = 2
  run        = ["sh", "-c", "echo salt ${var.salt} ${each.key}; echo err salt ${var.salt} ${each.key} >&2; test ${var.salt} = 2"]
}
`

// Two applies whose batches start in the same second each get a log
// folder of their own: the later one takes <log_dir>_<UTC>_2, and the
// first run's logs, and its journal's paths, still hold its own output.
func TestWavesBatchesInOneSecondKeepTheirOwnLogs(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	fixBatchClock(t, at)
	w := newWorkspace(t, saltedBatch)
	pool := simGPUs(t, 2)
	first := w.apply(ApplyOptions{GPUs: pool}, "salt=1")
	require.Equal(t, 2, first.res.Failed, first.out)
	second := w.apply(ApplyOptions{GPUs: pool}, "salt=2")
	require.Equal(t, 0, second.res.Failed, second.out)

	base := filepath.Join(w.Root, "logs", "b_20250102_030405")
	for i, c := range []struct {
		run  applyRun
		dir  string
		salt int
	}{{first, base, 1}, {second, base + "_2", 2}} {
		runDir := filepath.Join(w.Cache, "runs", c.run.res.RunID)
		assert.Equal(t, c.dir, batchLogDirs(t, runDir)["b"], "run %d", i+1)
		assert.Contains(t, c.run.out, "logs in "+relTo(w.Root, c.dir)+"\n", "run %d", i+1)
		for gpu, key := range []string{"v0", "v1"} {
			stem := filepath.Join(c.dir, fmt.Sprintf("gpu%d_%s", gpu, key))
			assert.Equal(t, fmt.Sprintf("salt %d %s\n", c.salt, key), readLog(t, stem+".out"))
			assert.Equal(t, fmt.Sprintf("err salt %d %s\n", c.salt, key), readLog(t, stem+".err"))
			assert.Equal(t, []string{stem + ".out", stem + ".err"}, journalLogs(t, runDir, `stage.b["`+key+`"]`))
		}
	}
}

// Two batches of one apply that log to the same log_dir and start in the
// same second get a folder each, each holding its own stage's logs.
func TestTwoBatchesOfOneApplyInOneSecondKeepTheirOwnLogs(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	fixBatchClock(t, at)
	w := newWorkspace(t, `
pipeline "t" {}
stage "waves" "b1" {
  for_each   = ["v0"]
  batch_size = 1
  log_dir    = "logs/bench"
  run        = ["sh", "-c", "echo b1"]
}
stage "waves" "b2" {
  for_each   = ["v0"]
  batch_size = 1
  log_dir    = "logs/bench"
  run        = ["sh", "-c", "echo b2"]
}
`)
	r := w.apply(ApplyOptions{GPUs: simGPUs(t, 1)})
	require.Equal(t, 0, r.res.Failed, r.out)
	require.Equal(t, 2, r.res.Ran, r.out)
	dirs := batchLogDirs(t, filepath.Join(w.Cache, "runs", r.res.RunID))
	require.Len(t, dirs, 2, r.out)
	base := filepath.Join(w.Root, "logs", "bench_20250102_030405")
	got := []string{dirs["b1"], dirs["b2"]}
	sort.Strings(got)
	assert.Equal(t, []string{base, base + "_2"}, got)
	for _, stage := range []string{"b1", "b2"} {
		assert.Equal(t, stage+"\n", readLog(t, filepath.Join(dirs[stage], "gpu0_v0.out")), stage)
	}
}

// Batch log folders are made exclusively: batches starting together (two
// applies at once) never get the same one, and a name another file holds
// is passed over.
func TestBatchLogDirIsMadeExclusively(t *testing.T) {
	root := t.TempDir()
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	base := filepath.Join(root, "logs", "b")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "logs"), 0o755))
	require.NoError(t, os.WriteFile(base+"_20250102_030405_3", []byte("mine\n"), 0o644))
	const n = 8
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = makeBatchLogDir(base, at)
		}()
	}
	wg.Wait()
	want := []string{base + "_20250102_030405"}
	for i := 2; i <= n+1; i++ {
		if i != 3 {
			want = append(want, fmt.Sprintf("%s_20250102_030405_%d", base, i))
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	assert.Equal(t, want, got)
	for _, d := range got {
		fi, err := os.Stat(d)
		require.NoError(t, err)
		assert.True(t, fi.IsDir(), d)
	}
	assert.Equal(t, "mine\n", readLog(t, base+"_20250102_030405_3"), "a file that holds a name is left as it was")
}

// A strict batch whose variant failed in the last launch, and kept the
// record of an earlier one, is not taken from the cache as it stands: its
// variants were measured in different launches. plan says so, and apply
// runs the whole batch again together.
func TestStrictBatchOfMixedLaunchesRunsAgain(t *testing.T) {
	w := newWorkspace(t, `
pipeline "t" {}
variable "v" {
  type    = number
  default = 1
}
stage "waves" "b" {
  for_each     = ["v0", "v1"]
  batch_size   = 2
  strict_batch = true
  run          = ["sh", "-c", "echo $0 >> runs.log; test ! -e fail_$0", each.key == "v1" ? "v1-${var.v}" : each.key]
}
`)
	gpus := simGPUs(t, 2)
	r := w.apply(ApplyOptions{GPUs: gpus})
	require.Equal(t, 2, r.res.Ran, r.out)
	// v1 changes (v0 does not): the whole batch runs again, and v0 fails
	// in it.
	w.Write("fail_v0", "")
	r = w.apply(ApplyOptions{GPUs: gpus}, "v=2")
	require.Equal(t, 1, r.res.Failed, r.out)
	require.NoError(t, os.Remove(filepath.Join(w.Root, "fail_v0")))

	// v0's record is the first launch's, v1's the second's.
	p := w.Plan(plan.Options{}, "v=2")
	for _, pn := range p.Nodes {
		assert.Equal(t, plan.ActRun, pn.Action, pn.Node.Addr)
		assert.Equal(t, []string{"strict_batch: the cached variants were measured in different launches, so the whole batch runs again together"}, pn.Reasons, pn.Node.Addr)
	}
	r = w.apply(ApplyOptions{GPUs: gpus}, "v=2")
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.Equal(t, 2, r.res.Ran, r.out)
	assert.Contains(t, r.out, "strict_batch: the 2 cached variant(s) were measured in different launches, so they run again together")

	// Now measured together: taken from the cache.
	r = w.apply(ApplyOptions{GPUs: gpus}, "v=2")
	assert.Equal(t, 0, r.res.Ran, r.out)
}
