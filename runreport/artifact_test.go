package runreport

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A markdown table cell holding an escaped "|" (as cairn's comparison
// tables and ledgers write one) stays one cell, shown as written: the
// figures after it stay under their own headers.
func TestArtifactTableKeepsEscapedPipesInTheirCells(t *testing.T) {
	md := "# batch\n\n| name | status | mean |\n|---|---|---:|\n| b | FAILED: OOM \\| exit 1 | 0.25 |\n| c | ok | 0.5 |\n\ntext after\n"
	a := artifactOf("stage.table", "out/table.md", []byte(md))
	assert.Equal(t, "table", a.Type)
	assert.Equal(t, [][]string{
		{"name", "status", "mean"},
		{"b", "FAILED: OOM | exit 1", "0.25"},
		{"c", "ok", "0.5"},
	}, a.Rows)
}

// A markdown output is shown whole: its tables, and the text around them
// (a table's legend, its caveat), in order; the first table is its rows.
func TestArtifactMarkdownKeepsItsTextAndEveryTable(t *testing.T) {
	md := "# batch\n\n| name | launch |\n| --- | --- |\n| a | 1 |\n| b | 2 (partial) |\n\nLaunches (run, batch start in UTC, variants it launched):\n- 1: run R1\n- 2: run R2\nRows of different launches were not measured together: compare them with care.\n\n| x | y |\n|---|---|\n| 1 | 2 |\n"
	a := artifactOf("stage.cmp", "reports/cmp/table.md", []byte(md))
	assert.Equal(t, "table", a.Type)
	assert.Equal(t, [][]string{{"name", "launch"}, {"a", "1"}, {"b", "2 (partial)"}}, a.Rows)
	assert.Equal(t, []*Part{
		{Text: "# batch"},
		{Rows: [][]string{{"name", "launch"}, {"a", "1"}, {"b", "2 (partial)"}}},
		{Text: "Launches (run, batch start in UTC, variants it launched):\n- 1: run R1\n- 2: run R2\nRows of different launches were not measured together: compare them with care."},
		{Rows: [][]string{{"x", "y"}, {"1", "2"}}},
	}, a.Parts)
}
