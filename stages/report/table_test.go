package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run `go test ./stages/report -update` to create it")
	assert.Equal(t, string(want), string(got), "differs from %s (regenerate with -update after checking the change)", path)
}

// batch4 is a seed-000 batch: four variants, one dominated.
func batch4() []Row {
	return []Row{
		{Name: "batch_a_id0", ContentHash: "69cb65213182", Mean16: 0.2771, Pass16: 0.7333, Throughput: 9538.5, E2ETime: 460.2},
		{Name: "batch_a_id1", ContentHash: "8f7e2463d0b7", Mean16: 0.3958, Pass16: 0.8667, Throughput: 7295.5, E2ETime: 603},
		{Name: "batch_a_id2", ContentHash: "35e62864c0d6", Mean16: 0.3875, Pass16: 0.8333, Throughput: 5918.2, E2ETime: 729.2},
		{Name: "batch_a_id3", ContentHash: "68f17db58d21", Mean16: 0.4833, Pass16: 0.9, Throughput: 4358.9, E2ETime: 979.7},
	}
}

// troubled has a failed variant (which would dominate were it compared), a
// variant without a throughput, and text that needs escaping.
func troubled() []Row {
	return []Row{
		{Name: "b_id0", ContentHash: "aaaa", Mean16: 0.41, Pass16: 0.9, Throughput: 5000, E2ETime: 800, Extra: map[string]any{"ruler": 0.91}},
		{Name: "b_id1", ContentHash: "bbbb", Mean16: 0.99, Pass16: 1, Throughput: 99999, E2ETime: 1, Failed: true,
			FailReason: "torch.OutOfMemoryError: CUDA out of memory | exit 1\nsee gpu1_b_id1.err"},
		{Name: "b_id2", ContentHash: "cccc", Mean16: 0.35, Pass16: 0.8, Throughput: nan, E2ETime: 900, Extra: map[string]any{"ruler": 0.88}},
		{Name: "b\tid3", ContentHash: "dddd", Mean16: 0.3, Pass16: 0.7, Throughput: 7000, E2ETime: 500, Extra: map[string]any{"ruler": 0.86, "note": "pipe | tab\there"}},
		{Name: "b_id4", Failed: true},
	}
}

func TestTablesGolden(t *testing.T) {
	rows := batch4()
	front, err := RowFront(rows, ColThroughput, ColMean16)
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 3}, front)

	var md, tsv, js bytes.Buffer
	require.NoError(t, Markdown(&md, rows, front))
	require.NoError(t, TSV(&tsv, rows, front))
	require.NoError(t, JSON(&js, rows, front))
	golden(t, "batch4.md", md.Bytes())
	golden(t, "batch4.tsv", tsv.Bytes())
	golden(t, "batch4.json", js.Bytes())

	rows = troubled()
	front, err = RowFront(rows, ColThroughput, ColMean16)
	require.NoError(t, err)
	require.Equal(t, []int{0, 3}, front)
	tbl := Table{Rows: rows, Front: front, X: ColThroughput, Y: ColMean16,
		Columns: append(DefaultColumns(), Col("ruler"), Col("note"))}
	md.Reset()
	tsv.Reset()
	js.Reset()
	require.NoError(t, tbl.Markdown(&md))
	require.NoError(t, tbl.TSV(&tsv))
	require.NoError(t, tbl.JSON(&js))
	golden(t, "troubled.md", md.Bytes())
	golden(t, "troubled.tsv", tsv.Bytes())
	golden(t, "troubled.json", js.Bytes())
}

func TestMarkdownShape(t *testing.T) {
	rows := troubled()
	front, err := RowFront(rows, ColThroughput, ColMean16)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, Table{Rows: rows, Front: front, X: ColThroughput, Y: ColMean16}.Markdown(&b))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, 2+len(rows), "header, rule, one line per row (line breaks in cells removed)")
	wantCells := len(DefaultColumns()) + 1
	for _, l := range lines {
		// Unescaped pipes delimit cells; every line has the same count.
		assert.Equal(t, wantCells+1, strings.Count(l, "|")-strings.Count(l, `\|`), l)
		assert.Equal(t, len([]rune(lines[0])), len([]rune(l)), "columns are padded to line up")
	}
	assert.Contains(t, lines[0], "| name ")
	assert.Regexp(t, `\| pareto +\|$`, lines[0])
	assert.Regexp(t, `^\| -+ \| -+ \| -+: \| -+: \| -+: \| -+: \| -+ \|$`, lines[1], "numbers are right-aligned")
	assert.Contains(t, lines[3], `FAILED: torch.OutOfMemoryError: CUDA out of memory \| exit 1 see gpu1_b_id1.err`)
	assert.NotContains(t, lines[3], "99999", "a failed row's numbers are not shown")
	assert.Contains(t, lines[4], "| n/a", "a NaN throughput is not comparable")
	assert.Contains(t, lines[4], "NaN")
	assert.Contains(t, lines[6], "FAILED: no reason given")
	assert.Contains(t, lines[2], "| front")

	// Without X and Y the table cannot tell n/a from dominated.
	b.Reset()
	require.NoError(t, Markdown(&b, rows, front))
	assert.Contains(t, strings.Split(b.String(), "\n")[4], "| dominated")
}

// Cells reads a row the writer wrote back into its columns, a cell with
// an escaped "|" whole; UnescapeCell gives its text as it was.
func TestMarkdownCellsReadBack(t *testing.T) {
	rows := troubled()
	var b bytes.Buffer
	require.NoError(t, Markdown(&b, rows, nil))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	header := Cells(lines[0])
	for _, l := range lines {
		assert.Len(t, Cells(l), len(header), l)
	}
	found := false
	for _, c := range Cells(lines[3]) {
		if strings.HasPrefix(c, "FAILED:") {
			found = true
			assert.Equal(t, "FAILED: torch.OutOfMemoryError: CUDA out of memory | exit 1 see gpu1_b_id1.err", UnescapeCell(c))
		}
	}
	assert.True(t, found, lines[3])
	assert.Equal(t, []string{`a\|b`, "", "c"}, Cells(`| a\|b |  | c |`))
	assert.Equal(t, []string{`x\|`}, Cells(`| x\|`), "an escaped pipe at the end is the cell's")
}

func TestTSVShape(t *testing.T) {
	rows := troubled()
	var b bytes.Buffer
	require.NoError(t, TSV(&b, rows, []int{0}))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, 1+len(rows))
	for _, l := range lines {
		assert.Len(t, strings.Split(l, "\t"), len(DefaultColumns())+1, l)
	}
	assert.Equal(t, "name\tcontent_hash\tmean@16\tpass@16\tthroughput\te2e_time\tpareto", lines[0])
	assert.True(t, strings.HasPrefix(lines[4], `b\tid3`+"\t"), "a tab in a cell is escaped: %q", lines[4])
	assert.Contains(t, lines[2], `CUDA out of memory | exit 1\nsee gpu1_b_id1.err`)
}

func TestJSONShape(t *testing.T) {
	rows := troubled()
	front, err := RowFront(rows, ColThroughput, ColMean16)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, Table{Rows: rows, Front: front, X: ColThroughput, Y: ColMean16}.JSON(&b))

	var doc struct {
		X, Y        string
		Columns     []string
		Rows        []map[string]any
		ParetoFront []string `json:"pareto_front"`
		Failed      []string
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	assert.Equal(t, ColThroughput, doc.X)
	assert.Equal(t, []string{"b_id0", "b\tid3"}, doc.ParetoFront)
	assert.Equal(t, []string{"b_id1", "b_id4"}, doc.Failed)
	require.Len(t, doc.Rows, len(rows))
	assert.Equal(t, 0.41, doc.Rows[0]["mean@16"])
	assert.Equal(t, true, doc.Rows[0]["pareto"])
	assert.Equal(t, map[string]any{"ruler": 0.91}, doc.Rows[0]["extra"])
	assert.Nil(t, doc.Rows[1]["mean@16"], "a failed row's numbers are null")
	assert.Equal(t, true, doc.Rows[1]["failed"])
	assert.Contains(t, doc.Rows[1]["fail_reason"], "CUDA out of memory")
	assert.Contains(t, doc.Rows[2], "throughput")
	assert.Nil(t, doc.Rows[2]["throughput"], "NaN is null")

	// The rows keep the column order.
	first := strings.Index(b.String(), `"name"`)
	last := strings.Index(b.String(), `"e2e_time"`)
	assert.Less(t, first, last)

	// An empty batch is still a document.
	b.Reset()
	require.NoError(t, JSON(&b, nil, nil))
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	assert.Empty(t, doc.Rows)
	assert.NotNil(t, doc.ParetoFront)
	assert.Contains(t, b.String(), `"pareto_front": []`)
}

func TestBadFront(t *testing.T) {
	rows := troubled()
	for _, front := range [][]int{{7}, {-1}, {0, 0}, {1}} {
		for name, write := range map[string]func(io.Writer) error{
			"markdown": Table{Rows: rows, Front: front}.Markdown,
			"tsv":      Table{Rows: rows, Front: front}.TSV,
			"json":     Table{Rows: rows, Front: front}.JSON,
			"svg": func(w io.Writer) error {
				return Plot{X: ColThroughput, Y: ColMean16}.SVG(w, rows, front)
			},
		} {
			var b bytes.Buffer
			err := write(&b)
			assert.ErrorIs(t, err, ErrBadFront, "%s %v", name, front)
			assert.Zero(t, b.Len(), "nothing is written on error")
		}
	}
	err := Markdown(io.Discard, rows, []int{1})
	assert.ErrorContains(t, err, `row 1 ("b_id1") failed but is listed on the front`)
}

type failingWriter struct{}

var errDiskFull = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func TestWriteErrors(t *testing.T) {
	rows := batch4()
	assert.ErrorIs(t, Markdown(failingWriter{}, rows, nil), errDiskFull)
	assert.ErrorIs(t, TSV(failingWriter{}, rows, nil), errDiskFull)
	assert.ErrorIs(t, JSON(failingWriter{}, rows, nil), errDiskFull)
	assert.ErrorIs(t, SVG(failingWriter{}, rows, nil, ColThroughput, ColMean16), errDiskFull)
}

func TestCustomColumn(t *testing.T) {
	rows := batch4()
	short := Column{Name: "hash", Value: func(r Row) (any, bool) { return r.ContentHash[:4], true }}
	speed := Column{Name: "tok/s per s", Value: func(r Row) (any, bool) { return r.Throughput / r.E2ETime, true }, Digits: 2}
	var b bytes.Buffer
	require.NoError(t, Table{Rows: rows, Columns: []Column{Col(ColName), short, speed}}.Markdown(&b))
	lines := strings.Split(b.String(), "\n")
	assert.Equal(t, "| name        | hash | tok/s per s | pareto    |", lines[0])
	assert.Equal(t, "| batch_a_id0 | 69cb |       20.73 | dominated |", lines[2])
}

// Rows measured in different launches say so: a launch number per row
// (flagged when partial), the GPU and the in-flight count, one line per
// launch below the table; TSV and JSON carry the full values.
func TestTableLaunches(t *testing.T) {
	full := func(gpu int) *Launch {
		return &Launch{RunID: "r1", Batch: "r1/aime24", Started: "2026-01-01T10:00:05Z", BatchStarted: "2026-01-01T10:00:00Z", GPU: gpu, Wave: 1, InFlight: 2, Launched: 4, BatchSize: 4}
	}
	rows := []Row{
		{Name: "a", Mean16: 0.5, Throughput: 10, Launch: full(0)},
		{Name: "b", Mean16: 0.6, Throughput: 5, Launch: &Launch{RunID: "r2", Batch: "r2/aime24", Started: "2026-01-02T09:00:01Z", BatchStarted: "2026-01-02T09:00:00Z", GPU: 1, Wave: 1, InFlight: 1, Launched: 1, BatchSize: 4, Partial: true}},
		{Name: "c", Failed: true, FailReason: "setup: No free GPUs"},
	}
	tb := Table{Rows: rows, Front: []int{0, 1}, Columns: Columns(ColName, ColMean16), X: ColThroughput, Y: ColMean16}
	var md bytes.Buffer
	require.NoError(t, tb.Markdown(&md))
	assert.Equal(t, `| name | mean@16 | launch      | gpu | in_flight | pareto                      |
| ---- | ------: | ----------- | --: | --------: | --------------------------- |
| a    |  0.5000 | 1           |   0 |         2 | front                       |
| b    |  0.6000 | 2 (partial) |   1 |         1 | front                       |
| c    |       - |             |     |           | FAILED: setup: No free GPUs |

Launches (run, batch start in UTC, variants it launched):
- 1: run r1, 2026-01-01 10:00:00 UTC, 4 of 4 variants
- 2: run r2, 2026-01-02 09:00:00 UTC, 1 of 4 variants (partial batch)
Rows of different launches, or of a partial batch, were not measured together: compare them with care, or rerun the whole batch (strict_batch = true).
`, md.String())

	var tsv bytes.Buffer
	require.NoError(t, tb.TSV(&tsv))
	assert.Equal(t, "name\tmean@16\trun_id\tstarted\tgpu\tin_flight\tpartial_batch\tpareto\n"+
		"a\t0.5\tr1\t2026-01-01T10:00:05Z\t0\t2\tfalse\tfront\n"+
		"b\t0.6\tr2\t2026-01-02T09:00:01Z\t1\t1\ttrue\tfront\n"+
		"c\t-\t\t\t\t\t\tFAILED: setup: No free GPUs\n", tsv.String())

	var js bytes.Buffer
	require.NoError(t, tb.JSON(&js))
	var got struct {
		Rows []struct {
			Name         string  `json:"name"`
			Launch       *Launch `json:"launch"`
			PartialBatch bool    `json:"partial_batch"`
		} `json:"rows"`
		Launches []launchSummary `json:"launches"`
	}
	require.NoError(t, json.Unmarshal(js.Bytes(), &got))
	require.Len(t, got.Rows, 3)
	assert.Equal(t, full(0), got.Rows[0].Launch)
	assert.False(t, got.Rows[0].PartialBatch)
	assert.True(t, got.Rows[1].PartialBatch)
	assert.Nil(t, got.Rows[2].Launch)
	assert.Equal(t, []launchSummary{
		{Index: 1, RunID: "r1", Batch: "r1/aime24", BatchStarted: "2026-01-01T10:00:00Z", Launched: 4, BatchSize: 4},
		{Index: 2, RunID: "r2", Batch: "r2/aime24", BatchStarted: "2026-01-02T09:00:00Z", Launched: 1, BatchSize: 4, Partial: true},
	}, got.Launches)

	// Rows without launches (plain result objects) keep the table as it was.
	md.Reset()
	require.NoError(t, Table{Rows: []Row{{Name: "x", Mean16: 1}}, Columns: Columns(ColName, ColMean16)}.Markdown(&md))
	assert.NotContains(t, md.String(), "launch")
}

// A table of simulated results says so in every file, so that a copied
// file still does: a line above the Markdown table, a last TSV column, a
// JSON field.
func TestSimulatedTablesSaySo(t *testing.T) {
	rows := batch4()
	table := Table{Rows: rows, Simulated: true}
	var md, tsv, js bytes.Buffer
	require.NoError(t, table.Markdown(&md))
	require.NoError(t, table.TSV(&tsv))
	require.NoError(t, table.JSON(&js))
	assert.True(t, strings.HasPrefix(md.String(), SimulatedNote+"\n\n|"), md.String())
	lines := strings.Split(strings.TrimSuffix(tsv.String(), "\n"), "\n")
	col := slices.Index(strings.Split(lines[0], "\t"), "simulated")
	require.GreaterOrEqual(t, col, 0, lines[0])
	for _, l := range lines[1:] {
		assert.Equal(t, "yes", strings.Split(l, "\t")[col], l)
	}
	var obj map[string]any
	require.NoError(t, json.Unmarshal(js.Bytes(), &obj))
	assert.Equal(t, true, obj["simulated"])

	var plain bytes.Buffer
	require.NoError(t, Table{Rows: rows}.Markdown(&plain))
	assert.NotContains(t, plain.String(), "SIMULATED")
}

// A figure fixed digits would show as 0 (1e-7 at four places) or as
// hundreds of digits (1e308) is shown with four significant digits and
// an exponent in Markdown; TSV and JSON keep every digit, as always.
func TestTinyAndHugeFiguresAreShownAsTheyAre(t *testing.T) {
	assert.Equal(t, "1e-07", formatFloat(1e-7, 4, true))
	assert.Equal(t, "1e+308", formatFloat(1e308, 4, true))
	assert.Equal(t, "-2.5e-05", formatFloat(-0.000025, 4, true))
	assert.Equal(t, "0.0000", formatFloat(0, 4, true))
	assert.Equal(t, "0.2771", formatFloat(0.2771, 4, true))
	assert.Equal(t, "9538.5", formatFloat(9538.5, 1, true))
	assert.Equal(t, "1e-07", formatFloat(1e-7, 4, false))
}

// A table where only some rows are simulated says which, and marks each
// row in TSV and JSON; it does not call every figure simulated.
func TestPartlySimulatedTablesSayWhichRows(t *testing.T) {
	rows := batch4()
	rows[1].Simulated, rows[3].Simulated = true, true
	table := Table{Rows: rows, Simulated: true}
	var md, tsv, js bytes.Buffer
	require.NoError(t, table.Markdown(&md))
	require.NoError(t, table.TSV(&tsv))
	require.NoError(t, table.JSON(&js))
	assert.True(t, strings.HasPrefix(md.String(), "SIMULATED results in some rows: the figures of "+rows[1].Name+", "+rows[3].Name+" come from simulated workloads"), md.String())
	assert.NotContains(t, md.String(), SimulatedNote)
	lines := strings.Split(strings.TrimSuffix(tsv.String(), "\n"), "\n")
	col := slices.Index(strings.Split(lines[0], "\t"), "simulated")
	require.GreaterOrEqual(t, col, 0, lines[0])
	var got []string
	for _, l := range lines[1:] {
		got = append(got, strings.Split(l, "\t")[col])
	}
	assert.Equal(t, []string{"no", "yes", "no", "yes"}, got)
	var obj struct {
		Rows []struct{ Simulated *bool }
	}
	require.NoError(t, json.Unmarshal(js.Bytes(), &obj))
	require.Len(t, obj.Rows, 4)
	require.NotNil(t, obj.Rows[1].Simulated)
	assert.True(t, *obj.Rows[1].Simulated)
	assert.False(t, *obj.Rows[0].Simulated)
}

// Launches are numbered in the order they started, not the order of the
// rows: a table whose first row came from the later launch calls that
// launch 2.
func TestLaunchesAreNumberedInTime(t *testing.T) {
	rows := batch4()[:2]
	rows[0].Launch = &Launch{RunID: "late", Batch: "late/b", BatchStarted: "2026-12-07T20:46:41Z", Launched: 1, BatchSize: 2}
	rows[1].Launch = &Launch{RunID: "early", Batch: "early/b", BatchStarted: "2026-12-07T20:45:52Z", Launched: 2, BatchSize: 2}
	launches, of := Table{Rows: rows}.launches()
	require.Len(t, launches, 2)
	assert.Equal(t, "early", launches[0].RunID)
	assert.Equal(t, 1, launches[0].Index)
	assert.Equal(t, []int{2, 1}, of)
}
