package stages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/stages/report"
)

// A user's memory file, with sections after the errors section.
const userMemory = `# memory

## 1. In-flight batches

| tag | batch_id | started (UTC) | log_dir | variants | state |
|---|---|---|---|---|---|
| t | r1/aime24 | 2026-01-01 10:00:00 | logs/x | a,b,c,d | DONE |

## 2. Lessons

- wider top-k helps

## 4. Errors

- 2026-01-01 UTC an old error

## 5. Next batches

- try ratio 0.3
`

func TestLedgerErrorsGoAtTheEndOfSection4(t *testing.T) {
	got := appendToSection(userMemory, isErrorsHeading, []string{"- new error 1", "- new error 2"})
	want := strings.Replace(userMemory, "- 2026-01-01 UTC an old error\n", "- 2026-01-01 UTC an old error\n- new error 1\n- new error 2\n", 1)
	assert.Equal(t, want, got)

	// An empty section 4, followed by another.
	s := "## 1. In-flight batches\n\n## 4. Errors\n## 5. Next\n\ntext\n"
	assert.Equal(t, "## 1. In-flight batches\n\n## 4. Errors\n\n- e\n\n## 5. Next\n\ntext\n", appendToSection(s, isErrorsHeading, []string{"- e"}))

	// Section 4 last, without a final newline.
	assert.Equal(t, "## 4. Errors\n\n- old\n- e\n", appendToSection("## 4. Errors\n\n- old", isErrorsHeading, []string{"- e"}))

	// A subsection of section 4 is part of it.
	s = "## 4. Errors\n\n### GPU\n\n- g\n\n## 5. Next\n"
	assert.Equal(t, "## 4. Errors\n\n### GPU\n\n- g\n- e\n\n## 5. Next\n", appendToSection(s, isErrorsHeading, []string{"- e"}))
}

func TestLedgerRowsGoIntoSection1sTable(t *testing.T) {
	got := insertAfterTable(userMemory, isBatchesHeading, "| t | r2/aime24 | x | y | a,b,c,d | RUNNING |")
	assert.Contains(t, got, "| DONE |\n| t | r2/aime24 | x | y | a,b,c,d | RUNNING |\n\n## 2. Lessons")

	// A section 1 without a table gets one; a table of a later section is
	// left alone.
	s := "## 1. In-flight batches\n\n(none yet)\n\n## 2. Other\n\n| a | b |\n|---|---|\n"
	got = insertAfterTable(s, isBatchesHeading, "| row |")
	assert.Equal(t, "## 1. In-flight batches\n\n"+ledgerHeader+"\n| row |\n\n(none yet)\n\n## 2. Other\n\n| a | b |\n|---|---|\n", got)
}

func TestEditLedgerCreatesTheSeedsSections(t *testing.T) {
	path := filepath.Join(t.TempDir(), "algorithm_scientist", "memory.md")
	added, err := Ledger{Path: path}.AddRow("| row |")
	require.NoError(t, err)
	assert.Equal(t, []string{LedgerBatches, LedgerErrors}, added)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, LedgerBatches+"\n\n"+ledgerHeader+"\n| row |\n\n"+LedgerErrors+"\n\n", string(b))

	// Nothing is added the second time.
	added, err = Ledger{Path: path}.edit(func(s string) string { return s })
	require.NoError(t, err)
	assert.Empty(t, added)

	// A file with section 1 only gets section 4 at its end.
	require.NoError(t, os.WriteFile(path, []byte("# notes\n\n## 1. In-flight batches\n"), 0o644))
	added, err = Ledger{Path: path}.edit(func(s string) string { return s })
	require.NoError(t, err)
	assert.Equal(t, []string{LedgerErrors}, added)
}

func TestLedgerRowsInState(t *testing.T) {
	p := filepath.Join(t.TempDir(), "memory.md")
	ids, err := Ledger{Path: p}.RowsInState("RUNNING")
	require.NoError(t, err)
	assert.Empty(t, ids, "a missing ledger has none")
	start := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	for _, r := range []string{LedgerRow("t", "run1/aime24", start, "logs", []string{"a", "b"}, false, "RUNNING"), LedgerRow("t", "run2/aime24", start, "logs", []string{"a"}, false, "DONE"), LedgerRow("u", "run3/aime24", start, "logs", []string{"c"}, false, "RUNNING")} {
		_, err := Ledger{Path: p}.AddRow(r)
		require.NoError(t, err)
	}
	ids, err = Ledger{Path: p}.RowsInState("RUNNING")
	require.NoError(t, err)
	assert.Equal(t, []string{"run1/aime24", "run3/aime24"}, ids)
}

// A ledger that is a link is edited where it points (the link kept), a
// rewritten ledger keeps its permission bits, and a batch whose RUNNING
// row was removed while it ran gets its row back in its final state.
func TestLedgerKeepsLinksModesAndTheBatchsEnd(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "notes", "real.md")
	require.NoError(t, os.MkdirAll(filepath.Dir(real), 0o755))
	require.NoError(t, os.WriteFile(real, []byte(userMemory), 0o600))
	link := filepath.Join(dir, "memory.md")
	require.NoError(t, os.Symlink("notes/real.md", link))

	start := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	row := LedgerRow("t", "r2/aime24", start, "logs/y", []string{"a", "b"}, false, "RUNNING")
	_, err := Ledger{Path: link}.AddRow(row)
	require.NoError(t, err)
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link is kept")
	b, err := os.ReadFile(real)
	require.NoError(t, err)
	assert.Contains(t, string(b), row)
	fi, err = os.Stat(real)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a private ledger stays private")

	// The row is gone (an agent rewrote the file from an older copy).
	require.NoError(t, os.WriteFile(real, []byte(userMemory), 0o600))
	added, err := Ledger{Path: link}.SetStateOrAdd("r2/aime24", "RUNNING", "DONE", LedgerRow("t", "r2/aime24", start, "logs/y", []string{"a", "b"}, false, "DONE"), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"the row of batch r2/aime24, which was gone"}, added)
	b, err = os.ReadFile(real)
	require.NoError(t, err)
	assert.Contains(t, string(b), "| t | r2/aime24 | 2026-12-05 10:00:00 | logs/y | a,b | DONE |")
	assert.Contains(t, string(b), "| t | r1/aime24 |", "the other rows are kept")
	// Once there, it is not added twice.
	added, err = Ledger{Path: link}.SetStateOrAdd("r2/aime24", "RUNNING", "DONE", LedgerRow("t", "r2/aime24", start, "logs/y", []string{"a", "b"}, false, "DONE"), nil)
	require.NoError(t, err)
	assert.Empty(t, added)
	b, err = os.ReadFile(real)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(b), "| r2/aime24 |"))
}

// The heading of in-flight batches removed while a batch ran (its table
// left, with the batch's RUNNING row): the heading goes back above that
// table, and apply says so; the batch's end and the next batch's row go
// into it, not into a second table at the file's end while the first
// sits outside any section.
func TestLedgerHeadingRemovedWhileABatchRanGoesBackAboveItsTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.md")
	require.NoError(t, os.WriteFile(path, []byte("# memory\n\n## 1. In-flight batches\n\n## 4. Errors\n\n- an older error\n\n## 5. Next batches\n\n- try\n"), 0o644))
	l := Ledger{Path: path}
	start := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	_, err := l.AddRow(LedgerRow("t", "r1/b", start, "logs/x", []string{"a", "b"}, false, "RUNNING"))
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), "## 1. In-flight batches\n\n", "", 1)), 0o644))

	added, err := l.SetStateOrAdd("r1/b", "RUNNING", "DONE", LedgerRow("t", "r1/b", start, "logs/x", []string{"a", "b"}, false, "DONE"), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"the heading ## 1. In-flight batches, back above its table"}, added)
	added, err = l.AddRow(LedgerRow("t", "r2/b", start, "logs/y", []string{"a", "b"}, false, "RUNNING"))
	require.NoError(t, err)
	assert.Empty(t, added)
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "# memory\n\n## 1. In-flight batches\n\n"+ledgerHeader+"\n"+
		"| t | r1/b | 2026-12-05 10:00:00 | logs/x | a,b | DONE |\n"+
		"| t | r2/b | 2026-12-05 10:00:00 | logs/y | a,b | RUNNING |\n"+
		"\n## 4. Errors\n\n- an older error\n\n## 5. Next batches\n\n- try\n", string(b))

	// With the table gone too, the section is added at the end, as to a
	// file that never had it.
	require.NoError(t, os.WriteFile(path, []byte("# memory\n\n## 4. Errors\n"), 0o644))
	added, err = l.AddRow(LedgerRow("t", "r3/b", start, "logs/z", []string{"a", "b"}, false, "RUNNING"))
	require.NoError(t, err)
	assert.Equal(t, []string{LedgerBatches}, added)
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "# memory\n\n## 4. Errors\n\n## 1. In-flight batches\n\n"+ledgerHeader+"\n| t | r3/b | 2026-12-05 10:00:00 | logs/z | a,b | RUNNING |\n", string(b))
}

// A '|' in a tag or a variant key is escaped in its cell, so that the row
// keeps its six columns, and the row is still found by its state.
func TestLedgerRowEscapesPipes(t *testing.T) {
	row := LedgerRow("x|y", "r3/aime24", time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC), "logs/z", []string{"a|1", "b"}, false, "RUNNING")
	assert.Equal(t, `| x\|y | r3/aime24 | 2026-12-05 10:00:00 | logs/z | a\|1,b | RUNNING |`, row)
	assert.Len(t, report.Cells(row), 6)
	path := filepath.Join(t.TempDir(), "memory.md")
	_, err := Ledger{Path: path}.AddRow(row)
	require.NoError(t, err)
	ids, err := Ledger{Path: path}.RowsInState("RUNNING")
	require.NoError(t, err)
	assert.Equal(t, []string{"r3/aime24"}, ids)
}
