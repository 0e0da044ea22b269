package runreport_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/cas"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/runreport"
	"github.com/cairn-run/cairn/runreport/browsertest"
)

// The page's replay table (a decision node's replay.tsv, which leaves the
// inputs out) is headed by what the replay read, as the terminal table
// and replay.json are: the protocol and outcomes files with their sha256,
// what was checked of the frozen files, and the SIMULATED mark.
func TestReportReplayTableNamesItsInputs(t *testing.T) {
	cacheDir, cache := openCache(t)
	psum, osum := strings.Repeat("ad8ad5bc", 8), strings.Repeat("0e1f2a3b", 8)
	result := `{"inputs": {"protocol": {"file": "decision_protocol.json", "sha256": "` + psum + `"},
	 "outcomes": {"file": "reports/decision/outcomes.json", "sha256": "` + osum + `"},
	 "frozen_files": {"matched": ["a.py", "b.csv"], "absent": [], "matrix": ""},
	 "not_measured": {"planned": 48, "simulated": 48, "absent": []}},
	 "total": {}}`
	tsv := "case_id\trule\tbudget\tapprovals\tsimulated\ntotal\tsource_copy\t0\t6\t48\n"
	key := strings.Repeat("d", 64)
	rec := &store.Record{Format: 1, Key: key, Envelope: []byte(`{"v":"cairn.node.v1","kind":"decision"}`),
		Outputs: map[string]string{}, Inline: map[string][]byte{}, Result: []byte(result), Started: t0, Ended: t0.Add(time.Second),
		Attempts: 1, Pipeline: "synthetic", Address: "stage.replay", RunID: "20260301T120000.000Z-dddddd"}
	for p, b := range map[string][]byte{"reports/decision/replay.tsv": []byte(tsv), "reports/decision/replay.json": []byte(result)} {
		rec.Outputs[p] = string(cas.DigestBytes(b))
		rec.Inline[p] = b
	}
	_, err := cache.Commit(rec, nil)
	require.NoError(t, err)
	dir := writeJournal(t, cacheDir, "20260301T120000.000Z-dddddd", []runlog.Entry{
		{T: runlog.Planned, Time: t0, Node: "stage.replay", Key: key},
		{T: runlog.Started, Time: at(10), Node: "stage.replay", Key: key, Attempt: 1},
		{T: runlog.Finished, Time: at(20), Node: "stage.replay", Key: key, Attempt: 1},
	}, "ok")
	r, err := runreport.Build(dir, runreport.Options{Cache: cache})
	require.NoError(t, err)
	var table *runreport.Artifact
	for _, a := range r.Artifacts {
		if a.Path == "reports/decision/replay.tsv" {
			table = a
		}
	}
	require.NotNil(t, table, "the replay table is in the report")
	require.Len(t, table.Parts, 2, "what it read, then the table")
	head := table.Parts[0].Text
	assert.Contains(t, head, "protocol  decision_protocol.json  sha256 "+psum+"\n")
	assert.Contains(t, head, "outcomes  reports/decision/outcomes.json  sha256 "+osum+"\n")
	assert.Contains(t, head, "frozen files: 2 match the protocol's sha256")
	assert.Contains(t, head, "SIMULATED: the outcomes of 48 of the 48 planned slots were judged on simulated GPUs")
	assert.Equal(t, [][]string{{"case_id", "rule", "budget", "approvals", "simulated"}, {"total", "source_copy", "0", "6", "48"}}, table.Parts[1].Rows)

	page := filepath.Join(dir, runreport.HTMLName)
	require.NoError(t, r.WriteFiles(page, cache))
	p := browsertest.Open(t, page, 1400, 1000)
	shown := browsertest.Eval[string](t, p, `[...document.querySelectorAll("[data-path='reports/decision/replay.tsv']")].map(e => e.tagName + ": " + e.textContent).join("\n")`)
	assert.Contains(t, shown, "PRE: protocol  decision_protocol.json  sha256 "+psum)
	assert.Contains(t, shown, "outcomes  reports/decision/outcomes.json  sha256 "+osum)
	assert.Contains(t, shown, "SIMULATED")
	assert.Contains(t, shown, "TABLE: case_idrulebudgetapprovalssimulated")
	assert.Empty(t, p.Errors(), "console errors")
}

// The attempt ledger marks the attempts that ran on simulated GPUs (their
// peaks, and so their outcomes, made up), as the ledger's files do.
func TestReportLedgerMarksSimulatedAttempts(t *testing.T) {
	cacheDir, cache := openCache(t)
	var es []runlog.Entry
	for i, sim := range []bool{true, false} {
		slot := []string{"s1", "s2"}[i]
		addr, key := `stage.collect["`+slot+`"]`, strings.Repeat(slot[1:], 64)
		simJSON := ""
		if sim {
			simJSON = `, "simulated": true`
		}
		result := `{"slot": "` + slot + `", "state": "within_margin", "attempts": 1` + simJSON + `, "ledger": [{"attempt": 1, "state": "within_margin", "class": "",
		 "setup_class": "", "charged": true, "replacement": false, "started": "2026-03-01T12:00:00Z", "ended": "2026-03-01T12:00:01Z", "peak_gpu_mib": 20000` + simJSON + `}]}`
		_, err := cache.Commit(&store.Record{Format: 1, Key: key, Envelope: []byte(`{"v":"cairn.node.v1","kind":"slot"}`), Result: []byte(result),
			Started: t0, Ended: t0.Add(time.Second), Attempts: 1, Pipeline: "synthetic", Address: addr, RunID: "20260301T120000.000Z-eeeeee"}, nil)
		require.NoError(t, err)
		es = append(es, runlog.Entry{T: runlog.Planned, Time: t0, Node: addr, Key: key},
			runlog.Entry{T: runlog.Started, Time: at(10), Node: addr, Key: key, Attempt: 1},
			runlog.Entry{T: runlog.Finished, Time: at(20), Node: addr, Key: key, Attempt: 1})
	}
	dir := writeJournal(t, cacheDir, "20260301T120000.000Z-eeeeee", es, "ok")
	r, err := runreport.Build(dir, runreport.Options{Cache: cache})
	require.NoError(t, err)
	require.Len(t, r.Ledger, 2)
	sim := map[string]bool{}
	for _, a := range r.Ledger {
		sim[a.Slot] = a.Simulated
	}
	assert.Equal(t, map[string]bool{"s1": true, "s2": false}, sim)

	page := filepath.Join(dir, runreport.HTMLName)
	require.NoError(t, r.WriteFiles(page, cache))
	p := browsertest.Open(t, page, 1400, 1000)
	assert.Equal(t, "SIMULATED: 1 of the 2 attempts ran on simulated GPUs: their peaks, and so their outcomes, are made up, not measurements.",
		browsertest.Eval[string](t, p, `document.getElementById("ledger-simulated").textContent`))
	assert.Equal(t, map[string]string{"s1": "SIMULATED", "s2": ""},
		browsertest.Eval[map[string]string](t, p, `Object.fromEntries([...document.querySelectorAll("#ledger-table tr[data-slot]")].map(r => [r.dataset.slot, r.querySelector("td.gpus").textContent]))`))
	assert.Empty(t, p.Errors(), "console errors")
}

// openCache opens a new cache, closed with the test.
func openCache(t *testing.T) (string, *store.Cache) {
	t.Helper()
	dir := t.TempDir()
	cache, err := store.Open(dir, store.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { cache.Close() })
	return dir, cache
}
