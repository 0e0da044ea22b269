package pipelines_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/gpu"
	"github.com/cairn-run/cairn/sim/simlib"
)

// The end-to-end tests run pipelines/aime24_batch.hcl through the real
// cairn binary with simulated GPUs (CAIRN_GPUS=sim:N) and the simulated
// preflight, RULER and AIME24 programs, each test in its own workspace,
// cache and machine-wide lease folder. The schedule is read from the run
// journals (lease records with their wave numbers, in the order they were
// written), never from timings.

var bins string // cairn and the simulated programs, built once

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	b := e2etest.Binaries{Packages: []string{"cmd/cairn", "cmd/cairn-sim-model", "sim/work/preflight", "sim/work/ruler", "sim/work/aime24", "sim/work/train"}}
	code := b.Main(m, os.Stderr, func(dir string) { bins = dir })
	if failpointBin != "" {
		_ = os.RemoveAll(filepath.Dir(failpointBin))
	}
	os.Exit(code)
}

const tag = "t"

var names = []string{"v0", "v1", "v2", "v3"}

// goodConfig is a variant that passes preflight and the RULER gate (the
// simulated accuracies of these four are 0.895, 0.94, 0.945 and 0.92).
func goodConfig(i int) map[string]any {
	topk := []int{2048, 1024, 768, 512}[i]
	ratio := []float64{0.12, 0.2, 0.3, 0.5}[i]
	return map[string]any{
		"vortex_topk_val": topk, "vortex_topk_ratio": ratio,
		"sim": map[string]any{"duration_ms": map[string]int{"preflight": 10, "ruler": 30, "aime24": 250}},
	}
}

type workspace struct {
	t      *testing.T
	dir    string
	leases string
	gpus   string
}

// newWorkspace makes a workspace with the four good variants, wrapper
// scripts bin/sim/{preflight,ruler,aime24} (the runners the pipeline
// declares as inputs) and its own lease folder.
func newWorkspace(t *testing.T, gpus string) *workspace {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: builds cairn and runs it")
	}
	w := &workspace{t: t, dir: t.TempDir(), leases: t.TempDir(), gpus: gpus}
	for _, p := range []string{"preflight", "ruler", "aime24"} {
		w.write("bin/sim/"+p, fmt.Sprintf("#!/bin/sh\nexec %q \"$@\"\n", filepath.Join(bins, p)))
		require.NoError(t, os.Chmod(filepath.Join(w.dir, "bin/sim", p), 0o755))
	}
	for i, n := range names {
		w.config(n, goodConfig(i))
	}
	return w
}

func (w *workspace) write(rel, content string) {
	w.t.Helper()
	e2etest.WriteFile(w.t, w.dir, rel, content)
}

func (w *workspace) config(name string, cfg map[string]any) {
	w.t.Helper()
	b, err := json.MarshalIndent(cfg, "", "  ")
	require.NoError(w.t, err)
	w.write(filepath.Join("submissions", tag, name+".json"), string(b)+"\n")
}

// setSim merges fields into a variant's "sim" object.
func (w *workspace) setSim(i int, fields map[string]any) {
	cfg := goodConfig(i)
	sim := cfg["sim"].(map[string]any)
	for k, v := range fields {
		if k == "aime24_ms" {
			sim["duration_ms"] = map[string]int{"preflight": 10, "ruler": 30, "aime24": v.(int)}
			continue
		}
		sim[k] = v
	}
	w.config(names[i], cfg)
}

func (w *workspace) command(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(bins, "cairn"), args...)
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(),
		"CAIRN_GPUS="+w.gpus,
		"CAIRN_LEASE_DIR="+w.leases,
		"CAIRN_NO_FSYNC=1",
		"CAIRN_CACHE=",
		"NO_COLOR=1",
		"SIM_RUN_LOG="+filepath.Join(w.dir, "simrun.jsonl"),
	)
	return cmd
}

// pipelineArgs are the arguments of plan and apply for the batch of names.
func pipelineArgs(variants []string, extra ...string) []string {
	pipe, _ := filepath.Abs("aime24_batch.hcl")
	vars, _ := filepath.Abs("sim.tfvars")
	q := make([]string, len(variants))
	for i, v := range variants {
		q[i] = fmt.Sprintf("%q", v)
	}
	args := []string{pipe, "--var-file", vars, "--var", "tag=" + tag, "--var", "variants=[" + strings.Join(q, ",") + "]"}
	return append(args, extra...)
}

// run runs cairn to its end and returns its output and exit status.
func (w *workspace) run(args ...string) (string, int) {
	w.t.Helper()
	cmd := w.command(args...)
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		require.True(w.t, errors.As(err, &ee), "running cairn: %v\n%s", err, out)
		code = ee.ExitCode()
	}
	return string(out), code
}

func (w *workspace) apply(extra ...string) (string, int) {
	return w.run(append([]string{"apply"}, pipelineArgs(names, extra...)...)...)
}

// runs lists the workspace's runs, oldest first.
func (w *workspace) runs() []*runlog.RunInfo {
	w.t.Helper()
	rs, err := runlog.List(filepath.Join(w.dir, ".cairn"))
	require.NoError(w.t, err)
	sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
	return rs
}

// lastJournal is the journal of the newest run.
func (w *workspace) lastJournal() []runlog.Entry {
	w.t.Helper()
	rs := w.runs()
	require.NotEmpty(w.t, rs)
	return rs[len(rs)-1].Entries
}

func (w *workspace) simLog() []simlib.RunLogRecord {
	w.t.Helper()
	f, err := os.Open(filepath.Join(w.dir, "simrun.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(w.t, err)
	defer f.Close()
	var out []simlib.RunLogRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r simlib.RunLogRecord
		require.NoError(w.t, json.Unmarshal(sc.Bytes(), &r))
		out = append(out, r)
	}
	return out
}

// simRuns counts the simulated runs of program per variant.
func (w *workspace) simRuns(program string) map[string]int {
	out := map[string]int{}
	for _, r := range w.simLog() {
		if r.Program == program {
			out[strings.TrimSuffix(filepath.Base(r.Config), ".json")]++
		}
	}
	return out
}

// variant is the instance key of an address like stage.aime24["v0"].
func variant(addr string) string {
	_, rest, ok := strings.Cut(addr, `["`)
	if !ok {
		return ""
	}
	return strings.TrimSuffix(rest, `"]`)
}

type leaseRec struct {
	name string
	dev  int
	wave int
	at   int // position in the journal
}

// batchLeases are the aime24 lease records, in journal order.
func batchLeases(es []runlog.Entry) []leaseRec {
	var out []leaseRec
	for i, e := range es {
		if e.T == runlog.Lease && strings.HasPrefix(e.Node, "stage.aime24[") {
			out = append(out, leaseRec{name: variant(e.Node), dev: e.GPUs[0], wave: e.Wave, at: i})
		}
	}
	return out
}

// ended is the journal position of each node's last finished or failed
// record.
func ended(es []runlog.Entry) map[string]int {
	out := map[string]int{}
	for i, e := range es {
		if e.T == runlog.Finished || e.T == runlog.Failed {
			out[e.Node] = i
		}
	}
	return out
}

// nodesWith lists the addresses with a record of type typ.
func nodesWith(es []runlog.Entry, typ string) []string {
	var out []string
	for _, e := range es {
		if e.T == typ {
			out = append(out, e.Node)
		}
	}
	sort.Strings(out)
	return out
}

func addrs(stage string, keys ...string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("stage.%s[%q]", stage, k)
	}
	sort.Strings(out)
	return out
}

type tableJSON struct {
	Rows []struct {
		Name       string   `json:"name"`
		Mean16     *float64 `json:"mean@16"`
		Failed     bool     `json:"failed"`
		FailReason string   `json:"fail_reason"`
		Launch     *struct {
			RunID     string `json:"run_id"`
			Batch     string `json:"batch"`
			Started   string `json:"started"`
			GPU       int    `json:"gpu"`
			InFlight  int    `json:"in_flight"`
			Launched  int    `json:"launched"`
			BatchSize int    `json:"batch_size"`
			Partial   bool   `json:"partial"`
		} `json:"launch"`
		PartialBatch bool `json:"partial_batch"`
	} `json:"rows"`
	ParetoFront []string `json:"pareto_front"`
	Failed      []string `json:"failed"`
	Launches    []struct {
		Index    int    `json:"index"`
		RunID    string `json:"run_id"`
		Launched int    `json:"launched"`
		Partial  bool   `json:"partial"`
	} `json:"launches"`
}

func (w *workspace) table() tableJSON {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, "reports", tag, "table.json"))
	require.NoError(w.t, err)
	var tj tableJSON
	require.NoError(w.t, json.Unmarshal(b, &tj))
	return tj
}

func TestWavesPinnedToFreeGPUs(t *testing.T) {
	tests := []struct {
		gpus    string
		devices []int      // the batch's devices
		waves   [][]string // variants per wave, in launch order
	}{
		{"sim:1", []int{0}, [][]string{{"v0"}, {"v1"}, {"v2"}, {"v3"}}},
		{"sim:2", []int{0, 1}, [][]string{{"v0", "v1"}, {"v2", "v3"}}},
		{"sim:3", []int{0, 1, 2}, [][]string{{"v0", "v1", "v2"}, {"v3"}}},
		{"sim:4", []int{0, 1, 2, 3}, [][]string{{"v0", "v1", "v2", "v3"}}},
		{"sim:4,busy=0,2", []int{1, 3}, [][]string{{"v0", "v1"}, {"v2", "v3"}}},
		{"sim:8,busy=1", []int{0, 2, 3, 4}, [][]string{{"v0", "v1", "v2", "v3"}}},
	}
	for _, tt := range tests {
		t.Run(tt.gpus, func(t *testing.T) {
			t.Parallel()
			w := newWorkspace(t, tt.gpus)
			out, code := w.apply()
			require.Equal(t, 0, code, out)
			es := w.lastJournal()

			// The batch record names the devices, fixed at its start.
			var batch []runlog.Entry
			for _, e := range es {
				if e.T == runlog.BatchEvent {
					batch = append(batch, e)
				}
			}
			require.Len(t, batch, 2, "a start and an end record")
			assert.Equal(t, tt.devices, batch[0].GPUs)
			assert.Equal(t, names, batch[0].Batch.Variants)
			assert.Equal(t, tag, batch[0].Batch.Tag)
			assert.Equal(t, engine.BatchDone, batch[1].Batch.State)

			leases := batchLeases(es)
			require.Len(t, leases, 4)
			var got [][]string
			for _, l := range leases {
				assert.Contains(t, tt.devices, l.dev, "%s pinned to a device free at the batch's start", l.name)
				for len(got) < l.wave {
					got = append(got, nil)
				}
				got[l.wave-1] = append(got[l.wave-1], l.name)
			}
			assert.Equal(t, tt.waves, got)

			// Within a wave, one device each, taken in the batch's order;
			// a wave starts only after every variant of the previous one
			// ended.
			end := ended(es)
			for _, l := range leases {
				for _, o := range leases {
					if o.wave == l.wave && o.name != l.name {
						assert.NotEqual(t, o.dev, l.dev, "%s and %s share GPU %d in wave %d", l.name, o.name, l.dev, l.wave)
					}
					if o.wave == l.wave-1 {
						assert.Less(t, end[fmt.Sprintf("stage.aime24[%q]", o.name)], l.at, "%s (wave %d) leased before %s (wave %d) ended", l.name, l.wave, o.name, o.wave)
					}
				}
				slot := 0
				for _, o := range leases {
					if o.wave == l.wave && o.at < l.at {
						slot++
					}
				}
				assert.Equal(t, tt.devices[slot], l.dev, "%s takes the wave's slot %d", l.name, slot)
			}

			// Each variant ran once on its device, with its logs named
			// gpu<idx>_<name> in the batch's log folder.
			devs := map[string]string{}
			for _, r := range w.simLog() {
				if r.Program == "aime24" {
					devs[strings.TrimSuffix(filepath.Base(r.Config), ".json")] = r.CUDAVisibleDevices
				}
			}
			logDir := batch[0].Batch.LogDir
			assert.True(t, strings.HasPrefix(logDir, filepath.Join(w.dir, "logs/submission", tag+"_")), logDir)
			for _, l := range leases {
				assert.Equal(t, fmt.Sprint(l.dev), devs[l.name])
				assert.FileExists(t, filepath.Join(logDir, fmt.Sprintf("gpu%d_%s.out", l.dev, l.name)))
				assert.FileExists(t, filepath.Join(logDir, fmt.Sprintf("gpu%d_%s.err", l.dev, l.name)))
			}

			// The table lists the four, in the given order.
			tj := w.table()
			require.Len(t, tj.Rows, 4)
			for i, r := range tj.Rows {
				assert.Equal(t, names[i], r.Name)
				assert.False(t, r.Failed)
			}
			assert.NotEmpty(t, tj.ParetoFront)
			assert.Contains(t, out, "Pareto front on (throughput, mean@16): ")
		})
	}
}

func TestSecondApplyIsCached(t *testing.T) {
	w := newWorkspace(t, "sim:2")
	out, code := w.apply()
	require.Equal(t, 0, code, out)
	out, code = w.apply()
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Apply complete: 0 ran, 13 cached, 0 failed")
	assert.Equal(t, map[string]int{"v0": 1, "v1": 1, "v2": 1, "v3": 1}, w.simRuns("aime24"))
}

func TestBackfillStartsOnTheFirstFreedGPU(t *testing.T) {
	w := newWorkspace(t, "sim:2")
	// v0 runs long: its GPU stays busy while the other three pass through
	// the second one.
	w.setSim(0, map[string]any{"aime24_ms": 4000})
	out, code := w.apply("--var", "batch_mode=backfill")
	require.Equal(t, 0, code, out)
	es := w.lastJournal()
	leases := batchLeases(es)
	require.Len(t, leases, 4)
	byName := map[string]leaseRec{}
	for _, l := range leases {
		assert.Zero(t, l.wave, "backfill has no waves")
		byName[l.name] = l
	}
	assert.NotEqual(t, byName["v0"].dev, byName["v1"].dev)
	assert.Equal(t, byName["v1"].dev, byName["v2"].dev, "v2 takes the GPU v1 freed")
	assert.Equal(t, byName["v1"].dev, byName["v3"].dev, "v3 takes the GPU v2 freed")
	end := ended(es)
	assert.Less(t, byName["v3"].at, end[`stage.aime24["v0"]`], "v3 started while v0 was still running")
	assert.Less(t, end[`stage.aime24["v1"]`], byName["v2"].at)
}

func TestRulerGateStopsTheBatch(t *testing.T) {
	w := newWorkspace(t, "sim:4")
	w.setSim(2, map[string]any{"ruler_accuracy": 0.615})
	out, code := w.apply()
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "RULER accuracy 0.615 < 0.85 for t/v2")
	// The failing gate is shown failed, never "ok" first.
	assert.Contains(t, out, `✗ stage.ruler["v2"]  failed (postcondition)`)
	assert.NotContains(t, out, `✓ stage.ruler["v2"]`)
	assert.Contains(t, out, `✓ stage.ruler["v1"]  ok in `)
	assert.Contains(t, out, "widen vortex_topk_val / vortex_topk_ratio")
	assert.Contains(t, out, "revise the indexer")
	assert.Empty(t, w.simRuns("aime24"), "no AIME24 run starts while a gate fails")
	assert.Equal(t, map[string]int{"v0": 1, "v1": 1, "v2": 1, "v3": 1}, w.simRuns("ruler"))

	// RULER ran one variant at a time: each started after the previous
	// one ended.
	es := w.lastJournal()
	var order []string
	end := ended(es)
	for i, e := range es {
		if e.T == runlog.Started && strings.HasPrefix(e.Node, "stage.ruler[") {
			for _, prev := range order {
				assert.Less(t, end[prev], i, "%s started before %s ended", e.Node, prev)
			}
			order = append(order, e.Node)
		}
	}
	assert.Len(t, order, 4)
	// The batch was skipped, and with it the comparison (nothing to
	// compare).
	assert.Equal(t, append(addrs("aime24", names...), "stage.batch"), nodesWith(es, runlog.Skipped))
	assert.NoFileExists(t, filepath.Join(w.dir, "reports", tag, "table.md"))

	// plan says the same before the next apply.
	plan, code := w.run(append([]string{"plan"}, pipelineArgs(names)...)...)
	require.Equal(t, 0, code, plan)
	assert.Regexp(t, `stage\.batch\s+skipped: nothing to compare: no upstream finished \(stage\.aime24\["v0"\] skipped\)`, plan)
}

func TestFailingPreflightNamesTheVariants(t *testing.T) {
	w := newWorkspace(t, "sim:4")
	w.setSim(1, map[string]any{"preflight_error": "indexer returns 0 blocks"})
	cfg := goodConfig(3)
	cfg["vortex_topk_ratio"] = 0
	w.config("v3", cfg)
	out, code := w.apply()
	assert.Equal(t, 1, code, out)
	// Every failure is reported, each naming <tag>/<name>.
	assert.Contains(t, out, "[preflight] FAILED: t/v1")
	assert.Contains(t, out, "[preflight] FAILED: t/v3")
	assert.NotContains(t, out, "FAILED: t/v0")
	assert.Equal(t, map[string]int{"v0": 1, "v1": 1, "v2": 1, "v3": 1}, w.simRuns("preflight"))
	assert.Empty(t, w.simRuns("ruler"), "no RULER run while a preflight fails")
	assert.Empty(t, w.simRuns("aime24"))
}

func TestHungVariantIsKilledAtItsTimeout(t *testing.T) {
	w := newWorkspace(t, "sim:4")
	w.setSim(1, map[string]any{"hang": true, "stages": []string{"aime24"}})
	// The user's memory file has sections after section 4.
	w.write("algorithm_scientist/memory.md", "# memory\n\n## 1. In-flight batches\n\n## 4. Errors\n\n- an older error\n\n## 5. Next batches\n\n- try a wider top-k\n")
	out, code := w.apply("--var", "aime24_timeout=2s")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, `stage.aime24["v1"] failed (timeout)`)

	// The others finished; the table lists v1 as failed.
	tj := w.table()
	require.Len(t, tj.Rows, 4)
	assert.Equal(t, []string{"v1"}, tj.Failed)
	assert.True(t, tj.Rows[1].Failed)
	assert.Contains(t, tj.Rows[1].FailReason, "timeout")
	assert.Nil(t, tj.Rows[1].Mean16)
	for _, i := range []int{0, 2, 3} {
		assert.False(t, tj.Rows[i].Failed)
		assert.NotNil(t, tj.Rows[i].Mean16)
	}
	assert.NotContains(t, tj.ParetoFront, "v1")

	// The simulated runner was ended by cairn's SIGTERM.
	for _, r := range w.simLog() {
		if r.Program == "aime24" && strings.HasSuffix(r.Config, "/v1.json") {
			assert.Equal(t, "terminated", r.Signal)
		}
	}

	// The ledger (the pipeline's default) has the batch's row, FAILED,
	// and the error at the end of section 4, before section 5.
	b, err := os.ReadFile(filepath.Join(w.dir, "algorithm_scientist/memory.md"))
	require.NoError(t, err)
	ledger := string(b)
	assert.NotContains(t, out, "ledger: created", "the file existed")
	assert.Contains(t, ledger, "| t | ")
	assert.Contains(t, ledger, "| v0,v1,v2,v3 | FAILED |")
	assert.Regexp(t, `## 4\. Errors\n\n- an older error\n- \S+ \S+ UTC t \S+/aime24 variant v1 failed \(timeout\): [^\n]*\n\n## 5\. Next batches\n\n- try a wider top-k\n$`, ledger)
	assert.Equal(t, 1, strings.Count(ledger, "## 4. Errors"))
}

// The pipeline keeps the protocol's ledger in algorithm_scientist/memory.md
// by default, creating it with sections 1 and 4 (and saying so once).
func TestLedgerIsKeptByDefault(t *testing.T) {
	w := newWorkspace(t, "sim:4")
	out, code := w.apply()
	require.Equal(t, 0, code, out)
	assert.Equal(t, 1, strings.Count(out, `ledger: created algorithm_scientist/memory.md with the sections "## 1. In-flight batches" and "## 4. Errors"`), out)
	b, err := os.ReadFile(filepath.Join(w.dir, "algorithm_scientist/memory.md"))
	require.NoError(t, err)
	run := w.runs()[0].ID
	assert.Regexp(t, `^## 1\. In-flight batches\n\n\| tag \| batch_id \| started \(UTC\) \| log_dir \| variants \| state \|\n\|---\|---\|---\|---\|---\|---\|\n`+
		`\| t \| `+regexp.QuoteMeta(run)+`/aime24 \| [0-9-]+ [0-9:]+ \| logs/submission/t_\d{8}_\d{6} \| v0,v1,v2,v3 \| DONE \|\n\n## 4\. Errors\n\n$`, string(b))

	// The next batch adds its row and says nothing about the file.
	w.setSim(2, map[string]any{"aime24_ms": 300})
	out, code = w.apply()
	require.Equal(t, 0, code, out)
	assert.NotContains(t, out, "ledger:")
	b, err = os.ReadFile(filepath.Join(w.dir, "algorithm_scientist/memory.md"))
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(b), "| DONE |"))
	assert.Regexp(t, `\| DONE \|\n\| t \| [^\n]+ \| DONE \|\n\n## 4\. Errors\n\n$`, string(b))

	// ledger = "" keeps none.
	w2 := newWorkspace(t, "sim:4")
	out, code = w2.apply("--var", "ledger=")
	require.Equal(t, 0, code, out)
	assert.NoFileExists(t, filepath.Join(w2.dir, "algorithm_scientist/memory.md"))
}

// A killed batch whose run's journal is then damaged (from its first
// record: the batch's record is not read) is still marked INTERRUPTED in
// the ledger by the next batch: its row names a run of this cache that
// ended without a run_end.
func TestKilledBatchWithDamagedJournalIsMarkedInterrupted(t *testing.T) {
	w := newWorkspace(t, "sim:2")
	run, _ := killDuringSecondWave(t, w)
	ledger, err := os.ReadFile(filepath.Join(w.dir, "memory.md"))
	require.NoError(t, err)
	require.Contains(t, string(ledger), "| v0,v1,v2,v3 | RUNNING |")

	// A flipped byte inside the journal's first record: nothing of the
	// run, its batch included, can be read from it.
	j := filepath.Join(w.dir, ".cairn", "runs", run, "journal")
	b, err := os.ReadFile(j)
	require.NoError(t, err)
	b[20] ^= 0x20
	require.NoError(t, os.WriteFile(j, b, 0o644))

	out, code := w.apply("--var", "ledger=memory.md")
	require.Equal(t, 0, code, out)
	ledger, err = os.ReadFile(filepath.Join(w.dir, "memory.md"))
	require.NoError(t, err)
	assert.Contains(t, string(ledger), "| v0,v1,v2,v3 | INTERRUPTED |")
	assert.NotContains(t, string(ledger), "RUNNING")
}

// killDuringSecondWave applies the batch with ledger = memory.md, its
// second wave slow, and kills cairn (SIGKILL) once that wave runs; it
// returns the run and the second wave's started records.
func killDuringSecondWave(t *testing.T, w *workspace) (run string, started []runlog.Entry) {
	t.Helper()
	w.setSim(2, map[string]any{"aime24_ms": 3000})
	w.setSim(3, map[string]any{"aime24_ms": 3000})
	cmd := w.command(append([]string{"apply"}, pipelineArgs(names, "--var", "ledger=memory.md")...)...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	require.NoError(t, cmd.Start())
	e2etest.WaitFor(t, "the second wave to start", 60*time.Second, func() bool {
		rs, err := runlog.List(filepath.Join(w.dir, ".cairn"))
		if err != nil || len(rs) == 0 {
			return false
		}
		started = nil
		for _, e := range rs[0].Entries {
			if e.T == runlog.Started && (e.Node == `stage.aime24["v2"]` || e.Node == `stage.aime24["v3"]`) {
				started = append(started, e)
			}
		}
		run = rs[0].ID
		return len(started) == 2
	})
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	return run, started
}

func TestKillDuringBatchThenResume(t *testing.T) {
	w := newWorkspace(t, "sim:2")
	// Kill cairn once the second wave runs.
	_, started := killDuringSecondWave(t, w)

	// No child holds a device, nor the batch lock.
	leases, err := gpu.OpenLeaseDir(filepath.Join(w.leases, "simulated"))
	require.NoError(t, err)
	e2etest.WaitFor(t, "the children to die", 10*time.Second, func() bool {
		for _, e := range started {
			if !e2etest.ProcGone(e.PID) {
				return false
			}
		}
		h, err := leases.Holders()
		return err == nil && len(h) == 0
	})
	lk := flock.New(filepath.Join(w.leases, "simulated", "batch.lock"))
	got, err := lk.TryLock()
	require.NoError(t, err)
	assert.True(t, got, "the batch lock died with cairn")
	_ = lk.Unlock()

	ledger, err := os.ReadFile(filepath.Join(w.dir, "memory.md"))
	require.NoError(t, err)
	assert.Contains(t, string(ledger), "| v0,v1,v2,v3 | RUNNING |", "killed: nobody ended the row")

	out, code := w.apply("--var", "ledger=memory.md")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "were running when an earlier apply stopped")
	// The killed batch's row is marked as such; the resumed batch has its
	// own row.
	ledger, err = os.ReadFile(filepath.Join(w.dir, "memory.md"))
	require.NoError(t, err)
	assert.Contains(t, string(ledger), "| v0,v1,v2,v3 | INTERRUPTED |")
	assert.Contains(t, string(ledger), "| v2,v3 | DONE |")
	assert.NotContains(t, string(ledger), "RUNNING")
	es := w.lastJournal()
	assert.Equal(t, addrs("aime24", "v2", "v3"), filterPrefix(nodesWith(es, runlog.Finished), "stage.aime24["))
	assert.Equal(t, addrs("aime24", "v0", "v1"), filterPrefix(nodesWith(es, runlog.Cached), "stage.aime24["))
	// v0 and v1 ran once, in the killed apply; v2 and v3 once to the end.
	assert.Equal(t, map[string]int{"v0": 1, "v1": 1, "v2": 1, "v3": 1}, w.simRuns("aime24"))
	tj := w.table()
	assert.Len(t, tj.Rows, 4)
	assert.Empty(t, tj.Failed)

	// The table says which launch measured each row: v0 and v1 the
	// killed apply's full batch (2 at a time on 2 GPUs), v2 and v3 the
	// resumed one, a partial batch of 2.
	rs := w.runs()
	require.Len(t, rs, 2)
	for i, r := range tj.Rows {
		require.NotNil(t, r.Launch, r.Name)
		run, launched, partial := rs[0].ID, 4, false
		if i >= 2 {
			run, launched, partial = rs[1].ID, 2, true
		}
		assert.Equal(t, run, r.Launch.RunID, r.Name)
		assert.Equal(t, run+"/aime24", r.Launch.Batch, r.Name)
		assert.Equal(t, launched, r.Launch.Launched, r.Name)
		assert.Equal(t, 4, r.Launch.BatchSize, r.Name)
		assert.Equal(t, 2, r.Launch.InFlight, r.Name)
		assert.Equal(t, partial, r.PartialBatch, r.Name)
		assert.Equal(t, i%2, r.Launch.GPU, r.Name)
		_, err := time.Parse(time.RFC3339, r.Launch.Started)
		assert.NoError(t, err, r.Name)
	}
	require.Len(t, tj.Launches, 2)
	assert.Equal(t, []bool{false, true}, []bool{tj.Launches[0].Partial, tj.Launches[1].Partial})
	md, err := os.ReadFile(filepath.Join(w.dir, "reports", tag, "table.md"))
	require.NoError(t, err)
	assert.Regexp(t, `\| v2 +\|.*\| 2 \(partial\) \| +0 \| +2 \| (front|dominated) `, string(md))
	assert.Contains(t, string(md), "- 1: run "+rs[0].ID+", ")
	assert.Contains(t, string(md), "- 2: run "+rs[1].ID+", ")
	assert.Contains(t, string(md), "2 of 4 variants (partial batch)")
}

// One config changed: only its variant reruns, alone, and the table flags
// its row as measured in a partial batch.
func TestOneConfigChangedRerunsAPartialBatch(t *testing.T) {
	w := newWorkspace(t, "sim:4")
	out, code := w.apply()
	require.Equal(t, 0, code, out)
	first := w.runs()[0].ID
	for _, r := range w.table().Rows {
		require.NotNil(t, r.Launch, r.Name)
		assert.Equal(t, first, r.Launch.RunID)
		assert.Equal(t, 4, r.Launch.InFlight)
		assert.False(t, r.PartialBatch)
	}

	cfg := goodConfig(2)
	cfg["vortex_topk_ratio"] = 0.32
	w.config("v2", cfg)
	out, code = w.apply()
	require.Equal(t, 0, code, out)
	assert.Equal(t, map[string]int{"v0": 1, "v1": 1, "v2": 2, "v3": 1}, w.simRuns("aime24"))
	second := w.runs()[1].ID
	tj := w.table()
	for _, r := range tj.Rows {
		require.NotNil(t, r.Launch, r.Name)
		if r.Name == "v2" {
			assert.Equal(t, second, r.Launch.RunID)
			assert.Equal(t, 1, r.Launch.InFlight)
			assert.Equal(t, 1, r.Launch.Launched)
			assert.True(t, r.PartialBatch)
			continue
		}
		assert.Equal(t, first, r.Launch.RunID, r.Name)
		assert.False(t, r.PartialBatch, r.Name)
	}
	assert.Contains(t, out, "1 of 4 variants (partial batch)")
}

func filterPrefix(xs []string, prefix string) []string {
	var out []string
	for _, x := range xs {
		if strings.HasPrefix(x, prefix) {
			out = append(out, x)
		}
	}
	return out
}

func TestRunnerChangeRerunsTheStagesThatDeclareIt(t *testing.T) {
	w := newWorkspace(t, "sim:4")
	out, code := w.apply()
	require.Equal(t, 0, code, out)

	// "Revise" the RULER runner: only RULER reruns; its results are the
	// same, so the batch and the table stay cached.
	f, err := os.OpenFile(filepath.Join(w.dir, "bin/sim/ruler"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, _ = f.WriteString("# revised\n")
	require.NoError(t, f.Close())
	plan, code := w.run(append([]string{"plan"}, pipelineArgs(names)...)...)
	require.Equal(t, 0, code, plan)
	assert.Contains(t, plan, `~ stage.ruler["v0"]`)
	assert.Contains(t, plan, "input bin/sim/ruler changed")
	assert.Contains(t, plan, `= stage.preflight["v0"]`)

	out, code = w.apply()
	require.Equal(t, 0, code, out)
	es := w.lastJournal()
	assert.Equal(t, addrs("ruler", names...), nodesWith(es, runlog.Finished), "exactly the RULER stage reran")

	// Revise the AIME24 runner: the batch reruns, preflight and RULER do not.
	f, err = os.OpenFile(filepath.Join(w.dir, "bin/sim/aime24"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, _ = f.WriteString("# revised\n")
	require.NoError(t, f.Close())
	out, code = w.apply()
	require.Equal(t, 0, code, out)
	ran := nodesWith(w.lastJournal(), runlog.Finished)
	assert.Equal(t, addrs("aime24", names...), filterPrefix(ran, "stage.aime24["))
	assert.Empty(t, filterPrefix(ran, "stage.preflight["))
	assert.Empty(t, filterPrefix(ran, "stage.ruler["))
	assert.Equal(t, map[string]int{"v0": 1, "v1": 1, "v2": 1, "v3": 1}, w.simRuns("preflight"))
	assert.Equal(t, map[string]int{"v0": 2, "v1": 2, "v2": 2, "v3": 2}, w.simRuns("ruler"))
	assert.Equal(t, map[string]int{"v0": 2, "v1": 2, "v2": 2, "v3": 2}, w.simRuns("aime24"))
}

func TestBatchOfExactlyFour(t *testing.T) {
	w := newWorkspace(t, "sim:4")
	const refusal = "Batches must contain exactly 4 variants. Got 3 — re-design and re-invoke."

	// Through the pipeline's variable.
	out, code := w.run(append([]string{"apply"}, pipelineArgs(names[:3])...)...)
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, refusal)

	// A variant given twice: refused in the protocol's words, not HCL's.
	out, code = w.run(append([]string{"apply"}, pipelineArgs([]string{"v0", "v0", "v1", "v2"})...)...)
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, `Batches must contain 4 different variants: "v0" given more than once — re-design and re-invoke.`)
	assert.NotContains(t, out, "Duplicate object key")

	// Through the waves kind itself, pointing at the stage's for_each.
	w.write("five.hcl", `pipeline "five" {}

stage "waves" "aime24" {
  for_each = ["a", "b", "c", "d", "e"]
  run      = ["bin/sim/aime24", "--config", "submissions/t/${each.key}.json"]
}
`)
	for _, cmd := range []string{"validate", "plan", "apply"} {
		out, code = w.run(cmd, "five.hcl")
		assert.Equal(t, 2, code, "%s: %s", cmd, out)
		assert.Contains(t, out, "Batches must contain exactly 4 variants. Got 5 — re-design and re-invoke.", cmd)
		assert.Contains(t, out, "on five.hcl:4:14, in stage \"waves\" \"aime24\"", cmd)
	}
	assert.Empty(t, w.simLog(), "nothing ran")
}

func TestNoFreeGPUs(t *testing.T) {
	const refusal = "No free GPUs. Wait, do not launch."
	// Every device busy from the start: the first GPU step (RULER) refuses.
	w := newWorkspace(t, "sim:4,busy=0,1,2,3")
	out, code := w.apply()
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, refusal)
	assert.Empty(t, w.simRuns("ruler"))
	assert.Empty(t, w.simRuns("aime24"))

	// Devices taken between the gates and the batch: the batch refuses.
	w = newWorkspace(t, "sim:4")
	out, code = w.apply("--target", "stage.ruler")
	require.Equal(t, 0, code, out)
	w.gpus = "sim:4,busy=0,1,2,3"
	out, code = w.apply()
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, `stage.aime24["v0"] failed (setup): `+refusal)
	assert.Contains(t, out, "GPUs 0,1,2,3: 1 compute process (simulated)")
	assert.Empty(t, w.simRuns("aime24"))
	// Nothing ran, so there is nothing to compare: no table of four
	// FAILED rows.
	assert.Contains(t, out, `- stage.batch  skipped: nothing to compare: no upstream finished (stage.aime24["v0"] failed (setup): `+refusal)
	assert.NoFileExists(t, filepath.Join(w.dir, "reports", tag, "table.md"))
	assert.NoFileExists(t, filepath.Join(w.dir, "reports", tag, "table.json"))
}

func TestOneBatchAtATimePerMachine(t *testing.T) {
	a := newWorkspace(t, "sim:4")
	for i := range names {
		a.setSim(i, map[string]any{"aime24_ms": 5000})
	}
	b := newWorkspace(t, "sim:4")
	b.leases = a.leases // the same machine
	out, code := b.apply("--target", "stage.ruler")
	require.Equal(t, 0, code, out)

	cmdA := a.command(append([]string{"apply"}, pipelineArgs(names)...)...)
	var bufA bytes.Buffer
	cmdA.Stdout, cmdA.Stderr = &bufA, &bufA
	require.NoError(t, cmdA.Start())
	var runA string
	e2etest.WaitFor(t, "A's batch to start", 60*time.Second, func() bool {
		rs, err := runlog.List(filepath.Join(a.dir, ".cairn"))
		if err != nil || len(rs) == 0 {
			return false
		}
		for _, e := range rs[0].Entries {
			if e.T == runlog.BatchEvent {
				runA = rs[0].ID
				return true
			}
		}
		return false
	})

	// cairn status shows A's batch running.
	st, code := a.run("status")
	require.Equal(t, 0, code, st)
	assert.Regexp(t, `t\s+`+regexp.QuoteMeta(runA)+`/aime24\s+.*logs/submission/t_\S+\s+v0,v1,v2,v3\s+RUNNING`, st)

	// B's batch refuses, naming A's.
	out, code = b.apply()
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "another batch is running on this machine: run "+runA)
	assert.Contains(t, out, "stage.aime24")
	assert.Contains(t, out, "variants v0, v1, v2, v3")
	assert.Contains(t, out, "--wait-batch")
	assert.Empty(t, b.simRuns("aime24"))

	// With --wait-batch, B waits for A's batch to end, then runs.
	out, code = b.apply("--wait-batch", "2m")
	require.NoError(t, cmdA.Wait(), bufA.String())
	require.Equal(t, 0, code, out)
	var endA, startB time.Time
	for _, e := range a.lastJournal() {
		if e.T == runlog.BatchEvent && e.Status == engine.BatchDone {
			endA = e.Time
		}
	}
	esB := b.lastJournal()
	for _, e := range esB {
		if e.T == runlog.BatchEvent && e.Status == "" {
			startB = e.Time
		}
	}
	require.False(t, endA.IsZero())
	require.False(t, startB.IsZero())
	assert.True(t, startB.After(endA), "B's batch started (%s) before A's ended (%s)", startB, endA)
	assert.Len(t, batchLeases(esB), 4)

	st, code = a.run("status")
	require.Equal(t, 0, code, st)
	assert.Regexp(t, regexp.QuoteMeta(runA)+`/aime24\s+.*DONE`, st)
}

// Waves launch in the order given, as the seed's loop does (variant y of a
// wave on the wave's y-th device), on reruns too; backfill starts the
// longest known variant first.
func TestRerunOrderByMode(t *testing.T) {
	w := newWorkspace(t, "sim:2")
	w.setSim(3, map[string]any{"aime24_ms": 1500})
	reviseRunner := func() {
		f, err := os.OpenFile(filepath.Join(w.dir, "bin/sim/aime24"), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, _ = f.WriteString("# revised\n")
		require.NoError(t, f.Close())
	}
	launches := func() (order []string, devs []int) {
		for _, l := range batchLeases(w.lastJournal()) {
			order = append(order, l.name)
			devs = append(devs, l.dev)
		}
		return order, devs
	}
	out, code := w.apply()
	require.Equal(t, 0, code, out)
	order, devs := launches()
	assert.Equal(t, names, order)
	assert.Equal(t, []int{0, 1, 0, 1}, devs)

	// The AIME24 runner changes: all four rerun, in waves in the given
	// order although v3 is known to take longest.
	reviseRunner()
	out, code = w.apply()
	require.Equal(t, 0, code, out)
	order, devs = launches()
	assert.Equal(t, names, order, "waves keep the given order")
	assert.Equal(t, []int{0, 1, 0, 1}, devs, "variant y of a wave on the wave's y-th GPU")

	// In backfill mode the one known to be the longest starts first, so
	// the batch ends sooner.
	reviseRunner()
	out, code = w.apply("--var", "batch_mode=backfill")
	require.Equal(t, 0, code, out)
	order, _ = launches()
	require.Len(t, order, 4)
	assert.Equal(t, "v3", order[0])
}

func TestInterruptedBatch(t *testing.T) {
	w := newWorkspace(t, "sim:4")
	for i := range names {
		w.setSim(i, map[string]any{"aime24_ms": 30000})
	}
	cmd := w.command(append([]string{"apply"}, pipelineArgs(names, "--var", "ledger=memory.md")...)...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	require.NoError(t, cmd.Start())
	e2etest.WaitFor(t, "the batch to run", 60*time.Second, func() bool {
		rs, err := runlog.List(filepath.Join(w.dir, ".cairn"))
		if err != nil || len(rs) == 0 {
			return false
		}
		var logs []string
		for _, e := range rs[0].Entries {
			if e.T == runlog.Started && strings.HasPrefix(e.Node, "stage.aime24[") {
				logs = append(logs, e.Logs[0])
			}
		}
		if len(logs) < 4 {
			return false
		}
		// Each child is past its start (it handles SIGTERM) once it has
		// printed its config line.
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			if !strings.Contains(string(b), "[simulated aime24] config") {
				return false
			}
		}
		return true
	})
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "%v\n%s", err, buf.String())
	assert.Equal(t, 130, ee.ExitCode(), buf.String())

	var last *runlog.Batch
	for _, e := range w.lastJournal() {
		if e.T == runlog.BatchEvent {
			last = e.Batch
		}
	}
	require.NotNil(t, last)
	assert.Equal(t, engine.BatchInterrupted, last.State)
	st, code := w.run("status")
	require.Equal(t, 0, code, st)
	assert.Regexp(t, `v0,v1,v2,v3\s+INTERRUPTED`, st)
	ledger, err := os.ReadFile(filepath.Join(w.dir, "memory.md"))
	require.NoError(t, err)
	assert.Contains(t, string(ledger), "| v0,v1,v2,v3 | INTERRUPTED |")
	// The four children were stopped by cairn's SIGTERM.
	for _, r := range w.simLog() {
		if r.Program == "aime24" {
			assert.Equal(t, "terminated", r.Signal, r.Config)
		}
	}
	assert.Len(t, w.simRuns("aime24"), 4)
}

// A single-variant run is for debugging: its result is marked so, and the
// batch does not take it from the cache but runs that variant again. Its
// row in the ledger and in status says it is a debug run, not the batch.
func TestSingleVariantRunIsNotTheBatchs(t *testing.T) {
	w := newWorkspace(t, "sim:4")
	out, code := w.apply("--target", `stage.aime24["v0"]`)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "single-variant runs are for debugging only")
	assert.Equal(t, map[string]int{"v0": 1}, w.simRuns("aime24"))
	ledger, err := os.ReadFile(filepath.Join(w.dir, "algorithm_scientist/memory.md"))
	require.NoError(t, err)
	assert.Contains(t, string(ledger), "| v0 (debug run, not the batch) | DONE |")
	st, code := w.run("status")
	require.Equal(t, 0, code, st)
	assert.Regexp(t, `v0 \(debug run, not the batch\)\s+DONE`, st)

	plan, code := w.run(append([]string{"plan"}, pipelineArgs(names)...)...)
	require.Equal(t, 0, code, plan)
	assert.Regexp(t, `stage\.aime24\["v0"\]\s+run: the cached result is a single-variant debug run's`, plan)

	out, code = w.apply()
	require.Equal(t, 0, code, out)
	assert.Equal(t, map[string]int{"v0": 2, "v1": 1, "v2": 1, "v3": 1}, w.simRuns("aime24"), "v0 ran again, in the batch")
	ledger, err = os.ReadFile(filepath.Join(w.dir, "algorithm_scientist/memory.md"))
	require.NoError(t, err)
	assert.Contains(t, string(ledger), "| v0,v1,v2,v3 | DONE |", "the batch's own row is not marked")

	// The batch's result replaced the debug one: nothing runs again, and
	// a debug run now takes the batch's result.
	out, code = w.apply()
	require.Equal(t, 0, code, out)
	out, code = w.apply("--target", `stage.aime24["v0"]`)
	require.Equal(t, 0, code, out)
	assert.Equal(t, map[string]int{"v0": 2, "v1": 1, "v2": 1, "v3": 1}, w.simRuns("aime24"))
}

// make demo shows the comparison table once: printed by the comparison
// stage when it runs, by the demo from the file when it comes from the
// cache.
func TestDemoShowsTheTableOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds cairn and runs it")
	}
	bin := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(bin, "sim"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(bins, "cairn"), filepath.Join(bin, "cairn")))
	for _, p := range []string{"preflight", "ruler", "aime24"} {
		require.NoError(t, os.Symlink(filepath.Join(bins, p), filepath.Join(bin, "sim", p)))
	}
	ws := t.TempDir()
	demo := func() string {
		cmd := exec.Command("bash", "demo.sh")
		cmd.Env = append(os.Environ(), "DEMO_BIN="+bin, "DEMO_DIR="+ws, "CAIRN_GPUS=sim:4",
			"CAIRN_LEASE_DIR="+t.TempDir(), "CAIRN_NO_FSYNC=1", "CAIRN_CACHE=", "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	header := regexp.MustCompile(`(?m)^\| name +\| content_hash `)
	out := demo()
	assert.Len(t, header.FindAllString(out, -1), 1, out)
	assert.Contains(t, out, "Comparison table and Pareto front: printed above by stage.batch")
	assert.Equal(t, 1, strings.Count(out, "Pareto front on (throughput, mean@16): batch_demo_id"), out)

	out = demo()
	assert.Contains(t, out, "Apply complete: 0 ran, 13 cached")
	assert.Len(t, header.FindAllString(out, -1), 1, out)
	assert.Contains(t, out, "from the cache")
	assert.Equal(t, 1, strings.Count(out, "Pareto front on (throughput, mean@16): batch_demo_id"), out)
}

// With strict_batch = true, one variant to run reruns the whole batch:
// plan says so, all four run again together, and no row is partial.
func TestStrictBatchRerunsTheWholeBatch(t *testing.T) {
	w := newWorkspace(t, "sim:4")
	out, code := w.apply("--var", "strict_batch=true")
	require.Equal(t, 0, code, out)

	cfg := goodConfig(2)
	cfg["vortex_topk_ratio"] = 0.32
	w.config("v2", cfg)
	plan, code := w.run(append([]string{"plan"}, pipelineArgs(names, "--var", "strict_batch=true")...)...)
	require.Equal(t, 0, code, plan)
	assert.Regexp(t, `stage\.aime24\["v0"\]\s+may run: strict_batch: the whole batch runs again if stage\.aime24\["v2"\] must run`, plan)
	out, code = w.apply("--var", "strict_batch=true")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, `strict_batch: stage.aime24["v2"] must run, so the 3 cached variant(s) run again with it`)
	assert.Equal(t, map[string]int{"v0": 2, "v1": 2, "v2": 2, "v3": 2}, w.simRuns("aime24"))
	second := w.runs()[1].ID
	tj := w.table()
	require.Len(t, tj.Rows, 4)
	for i, r := range tj.Rows {
		require.NotNil(t, r.Launch, r.Name)
		assert.Equal(t, second, r.Launch.RunID, r.Name)
		assert.Equal(t, 4, r.Launch.Launched, r.Name)
		assert.Equal(t, 4, r.Launch.InFlight, r.Name)
		assert.Equal(t, i, r.Launch.GPU, r.Name)
		assert.False(t, r.PartialBatch, r.Name)
	}
	leases := batchLeases(w.lastJournal())
	require.Len(t, leases, 4)
	for i, l := range leases {
		assert.Equal(t, names[i], l.name, "in the given order")
		assert.Equal(t, 1, l.wave)
	}

	// Nothing changed: all four from the cache, nothing runs.
	out, code = w.apply("--var", "strict_batch=true")
	require.Equal(t, 0, code, out)
	assert.Equal(t, map[string]int{"v0": 2, "v1": 2, "v2": 2, "v3": 2}, w.simRuns("aime24"))

	// A variant known to run (here --replace) names itself in the others'
	// reasons.
	plan, code = w.run(append([]string{"plan"}, pipelineArgs(names, "--var", "strict_batch=true", "--replace", `stage.aime24["v1"]`)...)...)
	require.Equal(t, 0, code, plan)
	assert.Regexp(t, `~ stage\.aime24\["v3"\]\s+run: strict_batch: stage\.aime24\["v1"\] runs, so the whole batch runs again`, plan, "it ran before: a rerun")
	assert.Contains(t, plan, "Plan: 4 to run, 1 may run, 8 cached.")

	// Without it, the same change reruns v2 alone.
	cfg["vortex_topk_ratio"] = 0.34
	w.config("v2", cfg)
	out, code = w.apply()
	require.Equal(t, 0, code, out)
	assert.Equal(t, map[string]int{"v0": 2, "v1": 2, "v2": 3, "v3": 2}, w.simRuns("aime24"))
}

// The seed's RULER gate after a configuration change, with a runner that
// exits 0 without writing its result (ruler_command = ["true"]): the
// latest.json of the earlier run is not this run's, so the gate fails
// (class result, naming the file) and no AIME24 variant launches.
func TestRulerThatWritesNothingStopsTheBatch(t *testing.T) {
	w := newWorkspace(t, "sim:4")
	out, code := w.apply()
	require.Equal(t, 0, code, out)
	cfg := goodConfig(2)
	cfg["vortex_topk_ratio"] = 0.32
	w.config("v2", cfg)
	out, code = w.apply("--var", `ruler_command=["true"]`)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, `✗ stage.ruler["v2"]  failed (result): the result file summary_ruler_submissions/`+tag+`/v2/latest.json was not written by this run`)
	assert.Equal(t, map[string]int{"v0": 1, "v1": 1, "v2": 1, "v3": 1}, w.simRuns("aime24"), "no AIME24 variant launched on the stale gate")
}
