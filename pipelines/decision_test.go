package pipelines_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/runreport/browsertest"
	"github.com/cairn-run/cairn/stages/decision"
)

// The decision protocol end to end: pipelines/memory_decision.hcl on the
// fixture protocol of testdata/decision (seed 003's protocol with its pins
// replaced by the digests of the fixture files beside it, and an 8-second
// process timeout), the SIMULATED training job sim/work/train, and
// ten simulated GPUs, so that the protocol's cap (4 allocations of 2 GPUs)
// binds, not the GPUs.

const decisionGPUs = "sim:10"

// decisionWorkspace copies the fixture protocol and its files into a new
// workspace, with a faults file for the simulated job.
func decisionWorkspace(t *testing.T, faults map[string]map[string]any) *workspace {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: builds cairn and runs it")
	}
	w := &workspace{t: t, dir: t.TempDir(), leases: t.TempDir(), gpus: decisionGPUs}
	src := "../testdata/decision"
	require.NoError(t, filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		w.write(rel, string(b))
		return nil
	}))
	b, err := json.Marshal(faults)
	require.NoError(t, err)
	w.write("faults.json", string(b))
	return w
}

func decisionArgs(cmd string, extra ...string) []string {
	pipe, _ := filepath.Abs("memory_decision.hcl")
	train := fmt.Sprintf(`train_command=[%q, "--duration", "300ms", "--faults", "faults.json"]`, filepath.Join(bins, "train"))
	return append([]string{cmd, pipe, "--var", "protocol=decision_protocol.json", "--var", train}, extra...)
}

func (w *workspace) protocol() *decision.Protocol {
	w.t.Helper()
	p, err := decision.ReadProtocol(filepath.Join(w.dir, "decision_protocol.json"))
	require.NoError(w.t, err)
	return p
}

// ledgerEvents reads the attempt ledger's log.
func (w *workspace) ledgerEvents() []decision.Event {
	w.t.Helper()
	f, err := os.Open(filepath.Join(w.dir, "decision/ledger", decision.LedgerLog))
	require.NoError(w.t, err)
	defer f.Close()
	var out []decision.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e decision.Event
		require.NoError(w.t, json.Unmarshal(sc.Bytes(), &e), sc.Text())
		out = append(out, e)
	}
	return out
}

// slotOf is the slot id of a stage.collect address.
func slotOf(addr string) string { return variant(addr) }

// allocations checks, from the journals, that no more than max slot nodes
// held an allocation at once, each of exactly gpus GPUs, and never two on
// the same GPU; it returns the most at once. An allocation runs from its
// node's first started record to its finished or failed record (or the
// run's end).
func allocations(t *testing.T, runs []*runlog.RunInfo, max, gpus int) int {
	t.Helper()
	type span struct {
		node       string
		start, end int // positions in the run's journal
		gpus       []int
	}
	most := 0
	for _, r := range runs {
		var spans []*span
		open := map[string]*span{}
		for i, e := range r.Entries {
			if !strings.HasPrefix(e.Node, "stage.collect[") {
				continue
			}
			switch e.T {
			case runlog.Started:
				if open[e.Node] == nil {
					assert.Len(t, e.GPUs, gpus, "%s: an allocation is %d GPUs", e.Node, gpus)
					s := &span{node: e.Node, start: i, end: len(r.Entries), gpus: e.GPUs}
					open[e.Node] = s
					spans = append(spans, s)
				}
			case runlog.Finished, runlog.Failed:
				if s := open[e.Node]; s != nil {
					s.end = i
					delete(open, e.Node)
				}
			}
		}
		for i := range r.Entries {
			var now []*span
			for _, s := range spans {
				if s.start <= i && i < s.end {
					now = append(now, s)
				}
			}
			most = maxInt(most, len(now))
			assert.LessOrEqual(t, len(now), max, "run %s, journal record %d: %d allocations at once", r.ID, i, len(now))
			used := map[int]string{}
			for _, s := range now {
				for _, g := range s.gpus {
					assert.Empty(t, used[g], "GPU %d held by %s and %s at once", g, used[g], s.node)
					used[g] = s.node
				}
			}
		}
	}
	return most
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// startedCounts counts the started records of each slot in the journals.
func startedCounts(runs []*runlog.RunInfo) map[string]int {
	out := map[string]int{}
	for _, r := range runs {
		for _, e := range r.Entries {
			if e.T == runlog.Started && strings.HasPrefix(e.Node, "stage.collect[") {
				out[slotOf(e.Node)]++
			}
		}
	}
	return out
}

// checkLedger checks the failure policy on the ledger: a slot starts again
// only after a replacement decided (and recorded) after its failed attempt;
// at most one replacement per slot and max in all. It returns the starts
// per slot.
func checkLedger(t *testing.T, events []decision.Event, max int) map[string]int {
	t.Helper()
	starts := map[string]int{}
	replaced := map[string]int{} // slot -> the attempt decided
	ended := map[string]int{}
	total := 0
	for _, e := range events {
		switch e.Event {
		case "start":
			if starts[e.Slot] > 0 {
				assert.Equal(t, e.Attempt, replaced[e.Slot], "%s started again (attempt %d) without a replacement decided before it", e.Slot, e.Attempt)
			}
			starts[e.Slot]++
			assert.Equal(t, starts[e.Slot], e.Attempt, "%s: attempts are numbered in order", e.Slot)
		case "end":
			ended[e.Slot] = e.Attempt
		case "replace":
			total++
			assert.Zero(t, replaced[e.Slot], "%s replaced twice", e.Slot)
			assert.Equal(t, e.Attempt-1, ended[e.Slot], "%s: the replacement is decided after the failed attempt ended", e.Slot)
			replaced[e.Slot] = e.Attempt
		}
	}
	assert.LessOrEqual(t, total, max, "replacements in all")
	return starts
}

func TestDecisionProtocolEndToEnd(t *testing.T) {
	w := decisionWorkspace(t, nil)
	p := w.protocol()
	order := p.CollectionOrder()
	require.Len(t, order, 48)
	// Faults: nine setup failures (the ninth finds the eight replacements
	// used up), a memory failure, a hang and a crash.
	classes := []string{"port_collision", "missing_dependency", "missing_data", "gpu_visibility", "corrupted_artifact"}
	faults := map[string]map[string]any{}
	var setups []string
	for i := 0; i < 9; i++ {
		id := order[3+4*i].ID
		faults[id] = map[string]any{"setup": classes[i%len(classes)], "times": 1}
		setups = append(setups, id)
	}
	oom, hang, crash := order[1].ID, order[2].ID, order[44].ID
	faults[oom] = map[string]any{"oom": true}
	faults[hang] = map[string]any{"hang": true}
	faults[crash] = map[string]any{"crash": true}
	b, _ := json.Marshal(faults)
	w.write("faults.json", string(b))

	// 48 processes planned, in the collection order.
	out, code := w.run(decisionArgs("plan", "--json")...)
	require.Equal(t, 0, code, out)
	var plan plan.JSON
	require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &plan))
	var planned []string
	for _, n := range plan.Nodes {
		if n.Stage == "collect" {
			planned = append(planned, slotOf(n.Address))
		}
	}
	var want []string
	for _, s := range order {
		want = append(want, s.ID)
	}
	assert.Equal(t, want, planned)

	out, code = w.run(decisionArgs("apply")...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "CASE                                 RULE            BUDGET  DECISIONS", "the replay's table")
	// Judged on simulated GPUs: marked wherever the figures are shown.
	assert.Contains(t, out, "over 48 slot outcomes (SIMULATED: 48 judged on simulated GPUs)")
	assert.Contains(t, out, "SIMULATED: the outcomes of 48 of the 48 planned slots were judged on simulated GPUs (made-up peak memory): no figure resting on them is a measurement")
	for _, f := range []string{"decision/ledger/" + decision.LedgerTSV, "reports/decision/replay.tsv"} {
		b, err := os.ReadFile(filepath.Join(w.dir, f))
		require.NoError(t, err)
		assert.True(t, strings.HasSuffix(strings.SplitN(string(b), "\n", 2)[0], "\tsimulated"), "%s: a simulated column", f)
	}

	// The cap, from the journal: never more than 4 allocations of 2 GPUs.
	runs := w.runs()
	require.Len(t, runs, 1)
	assert.Equal(t, 4, allocations(t, runs, 4, 2), "the cap is reached, not exceeded")

	// The failure policy, from the ledger.
	events := w.ledgerEvents()
	starts := checkLedger(t, events, 8)
	assert.Len(t, starts, 48, "every slot started")
	var atts []decision.Attempt
	b, err := os.ReadFile(filepath.Join(w.dir, "decision/ledger", decision.LedgerJSON))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &atts))
	assert.Len(t, atts, 48+8, "48 planned and 8 replacements, every one charged")
	bySlot := map[string][]decision.Attempt{}
	for _, a := range atts {
		assert.True(t, a.Charged)
		assert.True(t, a.Simulated, "on simulated GPUs")
		bySlot[a.Slot] = append(bySlot[a.Slot], a)
	}
	replacedSetups, notReplaced := 0, 0
	for _, id := range setups {
		as := bySlot[id]
		require.NotEmpty(t, as, id)
		assert.NotEmpty(t, as[0].SetupClass, "%s: its setup failure is recognised", id)
		switch len(as) {
		case 2:
			replacedSetups++
			assert.True(t, as[1].Replacement)
			assert.NotEqual(t, decision.Unresolved, as[1].State, "%s: the replacement ran to its end", id)
		case 1:
			notReplaced++
			assert.Equal(t, decision.Unresolved, as[0].State)
		}
	}
	assert.Equal(t, 8, replacedSetups, "eight setup failures replaced once")
	assert.Equal(t, 1, notReplaced, "the ninth is not replaced")
	require.Len(t, bySlot[oom], 1, "a memory failure is not retried")
	assert.Equal(t, decision.MemoryFailure, bySlot[oom][0].State)
	require.Len(t, bySlot[hang], 1)
	assert.Equal(t, "timeout", bySlot[hang][0].Class)
	assert.Equal(t, decision.Unresolved, bySlot[hang][0].State)
	require.Len(t, bySlot[crash], 1, "an unresolved failure is not retried")
	assert.Equal(t, decision.Unresolved, bySlot[crash][0].State)

	// Every started process is charged once: the journal's started records
	// are the ledger's starts.
	assert.Equal(t, starts, startedCounts(runs))

	// The replay: its files, and `cairn replay` over the outcomes the stage
	// wrote gives the same figures.
	replay, err := os.ReadFile(filepath.Join(w.dir, "reports/decision/replay.json"))
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(replay, &got))
	assert.Len(t, got, 6, "the inputs, four cases and the total")
	offline, code := w.run("replay", "decision_protocol.json", "reports/decision/outcomes.json", "--json", "--out", "")
	require.Equal(t, 0, code, offline)
	assert.JSONEq(t, string(replay), offline)
	var outcomes decision.Outcomes
	b, err = os.ReadFile(filepath.Join(w.dir, "reports/decision/outcomes.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &outcomes))
	assert.Equal(t, decision.Outcome{State: decision.MemoryFailure, Attempts: 1, Simulated: true}, outcomes[oom])
	charged := 0
	for _, o := range outcomes {
		charged += o.Attempts
	}
	assert.Equal(t, 48+8, charged, "every started attempt is charged, the replacements too")

	// Applying again runs nothing: no slot starts twice.
	out, code = w.run(decisionArgs("apply")...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "0 ran")
	assert.Len(t, w.ledgerEvents(), len(events))

	// Another configuration (here another command) gives the slots new
	// keys: the ledger refuses to count their old outcomes as theirs, and
	// starts nothing. Plan says so first, as apply then does: every slot
	// refused, the replay skipped; the saved plan is applied so.
	other := fmt.Sprintf(`train_command=[%q, "--duration", "301ms", "--faults", "faults.json"]`, filepath.Join(bins, "train"))
	pipe, _ := filepath.Abs("memory_decision.hcl")
	out, code = w.run("plan", pipe, "--var", "protocol=decision_protocol.json", "--var", other, "--out", "other.plan")
	require.Equal(t, 0, code, out)
	flat := strings.Join(strings.Fields(out), " ")
	assert.Equal(t, 48, strings.Count(flat, "refused: slot "), out)
	assert.Contains(t, flat, "was collected in ledger decision/ledger by a node with another key")
	assert.Contains(t, flat, "- stage.replay skipped: nothing to compare: no upstream finished")
	assert.Contains(t, flat, "Plan: 0 to run, 48 refused, 0 cached, 1 skipped.")
	out, code = w.run("apply", "other.plan")
	assert.Equal(t, 1, code, out)
	flat = strings.Join(strings.Fields(out), " ")
	assert.Contains(t, flat, "was collected in ledger decision/ledger by a node with another key")
	assert.Contains(t, flat, "0 ran, 0 cached, 48 failed, 1 skipped")
	assert.Len(t, w.ledgerEvents(), len(events), "nothing started")
}

// kill -9 of cairn mid-protocol, then apply again: no charged attempt lost
// or counted twice, no slot started twice but by a recorded replacement.
func TestDecisionProtocolSurvivesKill9(t *testing.T) {
	w := decisionWorkspace(t, nil)
	order := w.protocol().CollectionOrder()
	faults := map[string]map[string]any{}
	for i := 0; i < 6; i++ {
		faults[order[2*i+1].ID] = map[string]any{"setup": "port_collision", "times": 1}
	}
	b, _ := json.Marshal(faults)
	w.write("faults.json", string(b))

	cmd := w.command(decisionArgs("apply")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(filepath.Join(w.dir, "apply1.log"))
	require.NoError(t, err)
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	// Wait until a dozen attempts have started, then kill cairn alone.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		n := 0
		if b, err := os.ReadFile(filepath.Join(w.dir, "decision/ledger", decision.LedgerLog)); err == nil {
			n = strings.Count(string(b), `"event":"start"`)
		}
		if n >= 12 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the apply did not start 12 attempts")
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	before := w.ledgerEvents()
	open := map[string]bool{} // started in the killed run, not ended
	for _, e := range before {
		switch e.Event {
		case "start":
			open[e.Slot] = true
		case "end":
			delete(open, e.Slot)
		}
	}

	out, code := w.run(decisionArgs("apply")...)
	require.Equal(t, 0, code, out)

	events := w.ledgerEvents()
	starts := checkLedger(t, events, 8)
	assert.Len(t, starts, 48)
	runs := w.runs()
	require.Len(t, runs, 2)
	journaled := startedCounts(runs)
	for slot, n := range starts {
		// A process the journal shows started was charged; the ledger
		// may hold one start more, for a process cairn was killed while
		// starting.
		assert.LessOrEqual(t, journaled[slot], n, "%s ran uncharged", slot)
		assert.GreaterOrEqual(t, journaled[slot], n-1, slot)
	}
	// The slots cut off by the kill are unresolved, charged once, and were
	// not started again.
	hs := decision.Histories(events)
	var cut []string
	for slot := range open {
		cut = append(cut, slot)
	}
	sort.Strings(cut)
	require.NotEmpty(t, cut, "the kill cut off running slots")
	second := startedCounts(runs[1:])
	for _, slot := range cut {
		h := hs[slot]
		last := h.Last()
		assert.Equal(t, decision.Unresolved, last.State, slot)
		assert.Equal(t, "interrupted", last.Class, slot)
		assert.Zero(t, second[slot], "%s was started again after the kill", slot)
		// When it ended is not known: no end time, and no duration, in
		// the ledger or on its progress line.
		assert.Nil(t, last.Ended, slot)
		assert.True(t, last.EndUnseen, slot)
		assert.Regexp(t, regexp.QuoteMeta(slot)+`"\]\s+unresolved: interrupted \(cairn stopped while it ran: its end was not seen, so it has no duration\)( after a replacement \(2 attempts charged\))?\n`, out)
	}
	tsv, err := os.ReadFile(filepath.Join(w.dir, "decision/ledger", decision.LedgerTSV))
	require.NoError(t, err)
	require.Equal(t, len(cut), strings.Count(string(tsv), "\tinterrupted\t"), "%s", tsv)
	for _, line := range strings.Split(string(tsv), "\n") {
		if f := strings.Split(line, "\t"); len(f) > 5 && slices.Contains(cut, f[0]) && f[2] == "interrupted" {
			assert.Empty(t, f[5], "an interrupted attempt has no end time: %s", line)
		}
	}
	allocations(t, runs, 4, 2)

	// The replay charges each slot's started attempts, no more, no less.
	b, err = os.ReadFile(filepath.Join(w.dir, "reports/decision/outcomes.json"))
	require.NoError(t, err)
	var outcomes decision.Outcomes
	require.NoError(t, json.Unmarshal(b, &outcomes))
	for slot, n := range starts {
		assert.Equal(t, n, outcomes[slot].Attempts, slot)
	}
}

// Against seed 003's own protocol file, whose pinned files this repository
// does not hold, the pipeline refuses before anything runs, naming them.
func TestDecisionRefusesTheUnsealedSeedProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds cairn and runs it")
	}
	w := &workspace{t: t, dir: t.TempDir(), leases: t.TempDir(), gpus: decisionGPUs}
	seed, err := os.ReadFile("../stages/decision/testdata/seed_protocol.json")
	require.NoError(t, err)
	w.write("decision_protocol.json", string(seed))
	out, code := w.run(decisionArgs("apply")...)
	assert.Equal(t, 2, code, out)
	flat := strings.Join(strings.Fields(out), " ")
	p := w.protocol()
	n := 0
	for _, pins := range []map[string]string{p.SourceFilesSHA256, p.DataFilesSHA256, p.ImplementationSHA256} {
		for f, d := range pins {
			n++
			assert.Contains(t, flat, "Sealed file "+f+" does not match")
			assert.Contains(t, flat, "pins "+f+" to sha256 "+d+", but the file does not exist")
		}
	}
	assert.Equal(t, 12, n)
	assert.Contains(t, flat, fmt.Sprintf("%d error(s) in the pipeline; nothing was run", n))
	_, err = os.Stat(filepath.Join(w.dir, "decision/ledger"))
	assert.True(t, os.IsNotExist(err), "nothing ran")

	// One changed byte in a pinned file of the fixture refuses it too,
	// naming the file.
	w2 := decisionWorkspace(t, nil)
	f := filepath.Join(w2.dir, "memory_tuner/benchmark_v2_env.py")
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	b[0] ^= 1
	require.NoError(t, os.WriteFile(f, b, 0o644))
	out, code = w2.run(decisionArgs("plan")...)
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "Sealed file memory_tuner/benchmark_v2_env.py does not match")

	// The protocol at the digest recorded when it was frozen
	// (--var protocol_sha256): one byte of a donor's peak is refused, both
	// digests named; the matrix file, when given, against matrix_sha256.
	w3 := decisionWorkspace(t, nil)
	pf := filepath.Join(w3.dir, "decision_protocol.json")
	pb, err := os.ReadFile(pf)
	require.NoError(t, err)
	frozen := sha256Hex(pb)
	out, code = w3.run(decisionArgs("plan", "--var", "protocol_sha256="+frozen)...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "13 sealed files match their sha256", "the seal check is said")
	edited := strings.Replace(string(pb), `"max_completed_run_peak_mib": "33108.0"`, `"max_completed_run_peak_mib": "33109.0"`, 1)
	require.NotEqual(t, string(pb), edited)
	require.NoError(t, os.WriteFile(pf, []byte(edited), 0o644))
	out, code = w3.run(decisionArgs("plan", "--var", "protocol_sha256="+frozen)...)
	assert.Equal(t, 2, code, out)
	assert.Contains(t, strings.Join(strings.Fields(out), " "), "pins decision_protocol.json to sha256 "+frozen+", but the file's sha256 is "+sha256Hex([]byte(edited)))
	require.NoError(t, os.WriteFile(pf, pb, 0o644))
	w3.write("matrix.csv", "not the matrix\n")
	out, code = w3.run(decisionArgs("plan", "--var", "matrix=matrix.csv")...)
	assert.Equal(t, 2, code, out)
	assert.Contains(t, strings.Join(strings.Fields(out), " "), "pins matrix.csv to sha256 "+p.MatrixSHA256+", but the file's sha256 is "+sha256Hex([]byte("not the matrix\n")))
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// make demo-decision runs to its end, replacing the setup failures it
// injects and replaying the outcomes; its output says what each slot's
// process did, lists the plan's 48 slots in the collection order, says the
// seal matched, and a second, cached run still shows the replay (#28).
func TestDecisionDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds cairn and runs it")
	}
	repo := t.TempDir()
	for _, f := range []string{"pipelines/demo-decision.sh", "pipelines/memory_decision.hcl"} {
		b, err := os.ReadFile(filepath.Join("..", f))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(repo, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(repo, f), b, 0o755))
	}
	require.NoError(t, os.CopyFS(filepath.Join(repo, "testdata", "decision"), os.DirFS("../testdata/decision")))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "bin", "sim"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(bins, "cairn"), filepath.Join(repo, "bin", "cairn")))
	require.NoError(t, os.Symlink(filepath.Join(bins, "train"), filepath.Join(repo, "bin", "sim", "train")))
	leases := t.TempDir()
	demo := func() string {
		cmd := exec.Command("bash", filepath.Join(repo, "pipelines", "demo-decision.sh"))
		cmd.Env = append(os.Environ(), "CAIRN_GPUS=sim:8", "CAIRN_LEASE_DIR="+leases, "CAIRN_NO_FSYNC=1",
			"CAIRN_CACHE=", "NO_COLOR=1", "DEMO_TRAIN_DURATION=300ms")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	out := demo()
	assert.Contains(t, out, "Apply complete: 49 ran, 0 cached, 0 failed, 0 skipped.")
	assert.Contains(t, out, "missing_dependency")
	ledgerPath := filepath.Join(repo, "demo", "decision", "decision", "ledger", decision.LedgerJSON)
	checkLedgerInReport(t, out, ledgerPath)

	// Each faulty slot's line says what its process did, never "✓ ok".
	var faults map[string]map[string]any
	b, err := os.ReadFile("../testdata/decision/demo-faults.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &faults))
	progress := out[strings.Index(out, "== apply"):]
	line := func(slot string) string {
		for _, l := range strings.Split(progress, "\n") {
			if strings.Contains(l, fmt.Sprintf("stage.collect[%q]", slot)) && !strings.Contains(l, "  > ") && !strings.Contains(l, ": slot ") {
				return strings.TrimSpace(l)
			}
		}
		t.Fatalf("no line ends slot %s:\n%s", slot, out)
		return ""
	}
	want := map[string]string{
		"oom":   "memory_failure in ",
		"hang":  "unresolved: timeout in ",
		"crash": "unresolved: crashed (exited with status 3) in ",
	}
	for slot, f := range faults {
		l := line(slot)
		assert.True(t, strings.HasPrefix(l, "! "), "%s: %s", slot, l)
		assert.NotContains(t, l, "ok in", slot)
		for k, w := range want {
			if f[k] == true {
				assert.Contains(t, l, w, slot)
			}
		}
		if f["setup"] != nil {
			assert.Contains(t, l, "after a replacement (2 attempts charged)", slot)
		}
	}
	assert.Contains(t, line("decision-phi4_mini-gsm8k-shape1024-n4-steps5-c3-s142"), "✓ ", "a slot that completed")

	// The plan section lists the 48 slots in the collection order, and the
	// seal check says it matched.
	planSection := out[:strings.Index(out, "== apply")]
	assert.Contains(t, planSection, "13 sealed files match their sha256")
	var planned []string
	for _, l := range strings.Split(planSection, "\n") {
		if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(f[1], "stage.collect[") {
			planned = append(planned, slotOf(f[1]))
		}
	}
	p, err := decision.ReadProtocol("../testdata/decision/decision_protocol.json")
	require.NoError(t, err)
	var order []string
	for _, s := range p.CollectionOrder() {
		order = append(order, s.ID)
	}
	assert.Equal(t, order, planned)

	// A second run is cached, and shows the replay table whole.
	again := demo()
	assert.Contains(t, again, "Apply complete: 0 ran, 49 cached")
	checkLedgerInReport(t, again, ledgerPath)
	for _, c := range p.Cases {
		for _, rule := range p.Rules {
			assert.Regexp(t, fmt.Sprintf(`(?m)^%s +%s +3 `, c.ID, rule), again)
		}
	}
	assert.Regexp(t, `(?m)^total +direct_screen +3 `, again)
	assert.Contains(t, again, "The same figures as the pipeline's reports/decision/replay.json.")
	assert.Contains(t, again, "protocol  decision_protocol.json  sha256 "+sha256Hex(mustRead(t, "../testdata/decision/decision_protocol.json")))
}

// checkLedgerInReport opens the report the demo printed and reads its
// attempt ledger: a row per attempt of the ledger file, each with the
// slot's outcome, class, charge and whether it counts under the cap on
// replacements; the demo's setup failures are there with their
// replacements.
func checkLedgerInReport(t *testing.T, out, ledgerPath string) {
	t.Helper()
	_, _, page := reportOf(t, out)
	var atts []decision.Attempt
	require.NoError(t, json.Unmarshal(mustRead(t, ledgerPath), &atts))
	want := map[string][]string{}
	replacements := 0
	for _, a := range atts {
		class := a.Class
		if a.SetupClass != "" {
			class += " (" + a.SetupClass + ")"
		}
		charged, cap := "not charged", "initial allocation: not counted"
		if a.Charged {
			charged = "charged"
		}
		if a.Replacement {
			cap = "replacement: counted"
			replacements++
		}
		want[fmt.Sprintf("%s#%d", a.Slot, a.Attempt)] = []string{string(a.State), class, charged, cap}
	}
	assert.Len(t, atts, 48+3, "48 slots, 3 setup failures replaced once")
	assert.Equal(t, 3, replacements)
	p := browsertest.Open(t, page, 1400, 1000)
	got := browsertest.Eval[map[string][]string](t, p, `Object.fromEntries([...document.querySelectorAll("#ledger-table tr[data-slot]")].map(r => [r.dataset.slot + "#" + r.dataset.attempt, ["outcome", "class", "charged", "cap"].map(c => r.querySelector("td." + c).textContent)]))`)
	assert.Equal(t, want, got)
	assert.Equal(t, "51 attempts of 48 slots: 51 charged, 3 replacements counted under the cap on replacements (max_repair_allocations)", browsertest.Eval[string](t, p, `document.getElementById("ledger-summary").textContent`))
	assert.Contains(t, browsertest.Eval[string](t, p, `document.getElementById("ledger-simulated").textContent`), "SIMULATED: 51 of the 51 attempts ran on simulated GPUs")
	assert.Contains(t, browsertest.Eval[string](t, p, `document.querySelector("pre.artifact-text[data-path$='replay.tsv']").textContent`), "protocol  decision_protocol.json  sha256 ", "the replay table names what it replayed")
	// Beside it, the slots in collection order and the replay table.
	assert.Contains(t, browsertest.Eval[string](t, p, `document.querySelector("table.artifact-table[data-path^='results of stage.collect']").textContent`), "memory_failure")
	assert.Contains(t, browsertest.Eval[string](t, p, `[...document.querySelectorAll("table.artifact-table")].map(t => t.dataset.path).join(" ")`), "replay")
	assert.Empty(t, p.Errors(), "console errors")
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
