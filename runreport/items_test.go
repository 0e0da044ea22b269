package runreport_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/cas"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/runreport"
	"github.com/cairn-run/cairn/runreport/browsertest"
)

// evalPage writes the page of a run of one evaluation, stage.eval, whose
// record holds this scores file (and result), opens it and its items.
func evalPage(t *testing.T, scores, result string) *browsertest.Page {
	t.Helper()
	p, _ := recordPage(t, "evaluate", result, map[string][]byte{"out/scores.jsonl": []byte(scores)})
	browsertest.Eval[bool](t, p, `new Promise(ok => { document.querySelector("#itemlist .card[data-node='stage.eval'] button").click(); const f = () => document.querySelector("#itemlist table") ? ok(true) : setTimeout(f, 5); f() })`)
	return p
}

// recordPage writes the page of a run of one node, stage.eval, of this
// kind, which ran and whose record holds this result and these outputs,
// and opens it.
func recordPage(t *testing.T, kind, result string, outputs map[string][]byte) (*browsertest.Page, *runreport.Report) {
	t.Helper()
	cacheDir := t.TempDir()
	cache, err := store.Open(cacheDir, store.Options{NoSync: true})
	require.NoError(t, err)
	defer cache.Close()
	const id = "20260301T120000.000Z-999999"
	key := strings.Repeat("9", 64)
	rec := &store.Record{Format: 1, Key: key, Envelope: []byte(`{"v":"cairn.node.v1","kind":"` + kind + `"}`), Result: []byte(result),
		Outputs: map[string]string{}, Inline: map[string][]byte{},
		Started: at(10), Ended: at(500), Attempts: 1, Pipeline: "synthetic", Address: "stage.eval", RunID: id}
	for p, b := range outputs {
		rec.Outputs[p], rec.Inline[p] = string(cas.DigestBytes(b)), b
	}
	_, err = cache.Commit(rec, nil)
	require.NoError(t, err)
	dir := writeJournal(t, cacheDir, id, []runlog.Entry{
		{T: runlog.Planned, Time: t0, Node: "stage.eval", Key: key},
		{T: runlog.Started, Time: at(10), Node: "stage.eval", Key: key, Attempt: 1},
		{T: runlog.Finished, Time: at(600), Node: "stage.eval", Key: key, Attempt: 1, Duration: 0.49},
	}, "ok")
	r, err := runreport.Build(dir, runreport.Options{Cache: cache})
	require.NoError(t, err)
	page := filepath.Join(dir, runreport.HTMLName)
	require.NoError(t, r.WriteFiles(page, cache))
	return browsertest.Open(t, page, 1400, 1000), r
}

// An evaluation none of whose items has a score has no range and no
// mean: its items panel says so, and shows no 0 and no Infinity.
func TestItemsWithoutScoreHaveNoMean(t *testing.T) {
	p := evalPage(t, `{"id":"a","error":"could not parse the answer"}`+"\n"+`{"id":"b","error":"could not parse the answer"}`+"\n", `{"scores_file":"out/scores.jsonl","mean_score":null}`)
	summary := browsertest.Eval[string](t, p, `document.querySelector("#itemlist svg text").textContent`)
	assert.Contains(t, summary, "no scored item")
	assert.NotContains(t, summary, "Infinity")
	assert.NotContains(t, summary, "mean 0")
	assert.Empty(t, p.Errors(), "console errors")
}

// The items panel ends with its table: no stray text after it.
func TestItemsPanelEndsWithItsTable(t *testing.T) {
	p := evalPage(t, `{"id":"a","score":1}`+"\n"+`{"id":"b","score":0}`+"\n", `{"scores_file":"out/scores.jsonl","mean_score":0.5}`)
	assert.Contains(t, browsertest.Eval[string](t, p, `document.querySelector("#itemlist svg text").textContent`), "mean 0.5000 over 2")
	assert.Equal(t, "TABLE", browsertest.Eval[string](t, p, `document.querySelector("#itemlist .card > div").lastChild.nodeName`))
	assert.NotContains(t, browsertest.Eval[string](t, p, `document.querySelector("#itemlist .card").textContent`), "null")
}

// A markdown output is shown whole in "Tables and plots": its tables as
// tables, the text around them (a legend, a caveat) as text, in order.
func TestPageShowsMarkdownOutputWhole(t *testing.T) {
	md := "| name | launch |\n| --- | --- |\n| a | 1 |\n| b | 2 (partial) |\n\nLaunches (run, batch start in UTC, variants it launched):\n- 1: run R1\nRows of different launches were not measured together: compare them with care.\n\n| x | y |\n|---|---|\n| 1 | 2 |\n"
	p, _ := recordPage(t, "pareto", `{}`, map[string][]byte{"reports/cmp/table.md": []byte(md)})
	shown := browsertest.Eval[[]string](t, p, `[...document.querySelectorAll("#artifacts [data-path='reports/cmp/table.md']")].map(e => e.nodeName + ": " + e.textContent)`)
	assert.Equal(t, []string{
		"TABLE: namelauncha1b2 (partial)",
		"PRE: Launches (run, batch start in UTC, variants it launched):\n- 1: run R1\nRows of different launches were not measured together: compare them with care.",
		"TABLE: xy12",
	}, shown)
	assert.Empty(t, p.Errors(), "console errors")
}

// An output too big for the page is named in "Tables and plots", with
// its size, the page's limit and where the file is; the others are shown.
func TestPageNamesOutputsItLeavesOut(t *testing.T) {
	small := `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="40"><text x="5" y="20">small</text></svg>`
	big := `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">` + strings.Repeat(`<circle cx="1" cy="1" r="1"/>`, 3<<20/29) + `</svg>`
	p, r := recordPage(t, "command", `{}`, map[string][]byte{"out/small.svg": []byte(small), "out/scatter.svg": []byte(big)})
	var omitted *runreport.Artifact
	for _, a := range r.Artifacts {
		if a.Path == "out/scatter.svg" {
			omitted = a
		}
	}
	require.NotNil(t, omitted, "the big output is in the report")
	assert.Equal(t, "omitted", omitted.Type)
	assert.Equal(t, int64(len(big)), omitted.Size)
	assert.Empty(t, omitted.SVG)
	note := browsertest.Eval[string](t, p, `document.querySelector("#artifacts .artifact-omitted[data-path='out/scatter.svg']").textContent`)
	assert.Contains(t, note, "3.0 MiB, over the 2 MiB a page carries")
	assert.Contains(t, note, "/work/out/scatter.svg")
	assert.Equal(t, 1, browsertest.Eval[int](t, p, `document.querySelectorAll("#artifacts img[data-path='out/small.svg']").length`))
	assert.Empty(t, p.Errors(), "console errors")
}

// An item's outputs are shown as text: a string field as its text, with
// < > & as the worker wrote them (the scores file has them as \u003c),
// one field a line, cut after 300 characters, never inside one, saying
// how many more there are.
func TestItemOutputsAreShownAsText(t *testing.T) {
	long := strings.Repeat("é", 291) + "漢字" + strings.Repeat("x", 40)
	scores := `{"id":"a","score":1,"outputs":{"answer":"\u003cb\u003e42\u003c/b\u003e \u0026 more","n":3}}` + "\n" +
		`{"id":"b","score":0,"outputs":{"answer":"` + long + `"}}` + "\n" +
		`{"id":"c","score":0,"outputs":"plain"}` + "\n"
	p := evalPage(t, scores, `{"scores_file":"out/scores.jsonl","mean_score":0.3333}`)
	cell := func(id string) string {
		return browsertest.Eval[string](t, p, `document.querySelector("#itemlist tr[data-id='`+id+`'] td.outputs").textContent`)
	}
	assert.Equal(t, "answer: <b>42</b> & more\nn: 3", cell("a"))
	b := cell("b")
	assert.Equal(t, "answer: "+strings.Repeat("é", 291)+"漢… (41 more characters)", b)
	assert.NotContains(t, b, "\uFFFD", "never cut inside a character")
	assert.Equal(t, "plain", cell("c"))
	assert.Empty(t, p.Errors(), "console errors")
}
