package stages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	for _, r := range []string{LedgerRow("t", "run1/aime24", start, "logs", []string{"a", "b"}, "RUNNING"), LedgerRow("t", "run2/aime24", start, "logs", []string{"a"}, "DONE"), LedgerRow("u", "run3/aime24", start, "logs", []string{"c"}, "RUNNING")} {
		_, err := Ledger{Path: p}.AddRow(r)
		require.NoError(t, err)
	}
	ids, err = Ledger{Path: p}.RowsInState("RUNNING")
	require.NoError(t, err)
	assert.Equal(t, []string{"run1/aime24", "run3/aime24"}, ids)
}
