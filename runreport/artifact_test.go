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
