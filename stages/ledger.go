package stages

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/cairn-run/cairn/stages/report"
	"github.com/cairn-run/cairn/storage/atomicfile"
)

// A Ledger is the markdown file a waves stage names in `ledger` (the
// user's memory file): the engine keeps a RUNNING row under "In-flight
// batches" when a batch starts, its state updated when it ends, and each
// failed variant logged under "Errors" (docs/language.md, the waves kind).
type Ledger struct {
	Path string
}

// The sections a ledger is given when it lacks them.
const (
	LedgerBatches = "## 1. In-flight batches"
	LedgerErrors  = "## 4. Errors"
	ledgerHeader  = "| tag | batch_id | started (UTC) | log_dir | variants | state |\n|---|---|---|---|---|---|"
	ledgerTime    = "2006-01-02 15:04:05"
)

// LedgerRow is a batch's row in the table of in-flight batches; debug
// marks a run of only the variants --target named (LedgerVariants).
// Each cell's '|' is written "\|", as markdown tables escape it, so that a
// tag or a variant key holding one stays in its column.
func LedgerRow(tag, batchID string, start time.Time, logDir string, variants []string, debug bool, state string) string {
	cell := report.EscapeCell
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s |", cell(tag), cell(batchID), start.Format(ledgerTime), cell(logDir), cell(LedgerVariants(variants, debug)), state)
}

// LedgerDebug follows the variants of a debug run (--target naming some
// variants of a batch) in the ledger and in `cairn status`: single-variant
// runs are for debugging only, and a reader of the table must not take
// such a row, or its results, for the batch's.
const LedgerDebug = " (debug run, not the batch)"

// LedgerVariants is a batch's variants as the ledger and `cairn status`
// list them: comma-separated, marked when the run is a debug run.
func LedgerVariants(variants []string, debug bool) string {
	s := strings.Join(variants, ",")
	if debug {
		s += LedgerDebug
	}
	return s
}

// LedgerError is a failed variant's line in the errors section.
func LedgerError(at time.Time, tag, batchID, variant, class, message string) string {
	return fmt.Sprintf("- %s UTC %s %s variant %s failed (%s): %s", at.UTC().Format(ledgerTime), tag, batchID, variant, class, message)
}

// AddRow adds row at the end of the table of in-flight batches. It
// returns the sections it had to add, for a one-line notice.
func (l Ledger) AddRow(row string) (added []string, err error) {
	return l.edit(func(s string) string { return insertAfterTable(s, isBatchesHeading, row) })
}

// RowsInState lists the batch ids of the table rows whose state is state
// (a row "| tag | batch_id | started | log_dir | variants | state |"); a
// missing file has none.
func (l Ledger) RowsInState(state string) ([]string, error) {
	b, err := os.ReadFile(l.Path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, line := range strings.Split(string(b), "\n") {
		if cells := report.Cells(line); len(cells) == 6 && cells[5] == state {
			ids = append(ids, cells[1])
		}
	}
	return ids, nil
}

// SetState changes the state of the batch's rows in state from to to, and
// adds errLines at the end of the errors section. It returns the sections
// it had to add, for a one-line notice.
func (l Ledger) SetState(batchID, from, to string, errLines []string) (added []string, err error) {
	return l.SetStateOrAdd(batchID, from, to, "", errLines)
}

// SetStateOrAdd is SetState, and where no row of the batch is in state
// from (the file was rewritten or removed while the batch ran) it adds
// row, the batch's row in state to, and says so among the sections it
// added: a batch's end is never lost from the ledger.
func (l Ledger) SetStateOrAdd(batchID, from, to, row string, errLines []string) (added []string, err error) {
	var readded []string
	added, err = l.edit(func(s string) string {
		s = setRowState(s, batchID, from, to)
		if row != "" && !hasRow(s, batchID, to) {
			s = insertAfterTable(s, isBatchesHeading, row)
			readded = []string{"the row of batch " + batchID + ", which was gone"}
		}
		if len(errLines) > 0 {
			s = appendToSection(s, isErrorsHeading, errLines)
		}
		return s
	})
	return append(added, readded...), err
}

// edit rewrites the ledger under a lock. A missing file is created
// with both sections, and a file without one of them gets it at its end
// (the in-flight heading above its table, where the table is left);
// what was added is returned, for a one-line notice.
func (l Ledger) edit(edit func(string) string) (added []string, err error) {
	if err := os.MkdirAll(filepath.Dir(l.Path), 0o755); err != nil {
		return nil, err
	}
	// A ledger that is a link (to notes kept elsewhere in the workspace;
	// one leading out of it is refused when the pipeline is read) is
	// edited where it points, the link left as it is.
	if real, err := filepath.EvalSymlinks(l.Path); err == nil {
		l.Path = real
	}
	lk := flock.New(l.Path + ".lock")
	if err := lk.Lock(); err != nil {
		return nil, err
	}
	defer lk.Unlock()
	b, err := os.ReadFile(l.Path)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	s := string(b)
	lines := strings.Split(s, "\n")
	if at, _ := findSection(lines, isBatchesHeading); at < 0 {
		s, added = addBatchesHeading(s, lines)
	}
	if at, _ := findSection(strings.Split(s, "\n"), isErrorsHeading...); at < 0 {
		s = strings.TrimRight(s, "\n") + "\n\n" + LedgerErrors + "\n\n"
		added = append(added, LedgerErrors)
	}
	s = edit(s)
	return added, atomicfile.WriteKeepMode(l.Path, []byte(s), false)
}

// addBatchesHeading gives s, a ledger without the heading of in-flight
// batches, that heading, and says what it added. Where the ledger's table
// is still there (its heading removed, say while a batch ran), the heading
// goes back above it, so that its rows, and the rows added after them,
// stay in their section; else the section is added at the end.
func addBatchesHeading(s string, lines []string) (string, []string) {
	head, _, _ := strings.Cut(ledgerHeader, "\n")
	t := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == head })
	if t < 0 {
		s = strings.TrimRight(s, "\n")
		if s != "" {
			s += "\n\n"
		}
		return s + LedgerBatches + "\n\n" + ledgerHeader + "\n", []string{LedgerBatches}
	}
	ins := []string{LedgerBatches, ""}
	if t > 0 && strings.TrimSpace(lines[t-1]) != "" {
		ins = append([]string{""}, ins...)
	}
	lines = slices.Insert(slices.Clone(lines), t, ins...)
	return strings.Join(lines, "\n"), []string{"the heading " + LedgerBatches + ", back above its table"}
}

// hasRow reports whether a table row of batchID in state is in s.
func hasRow(s, batchID, state string) bool {
	return slices.ContainsFunc(strings.Split(s, "\n"), func(l string) bool { return isRowOf(l, batchID, state) })
}

// isRowOf reports whether line is a table row of batchID in state.
func isRowOf(line, batchID, state string) bool {
	return strings.Contains(line, "| "+batchID+" |") && strings.Contains(line, "| "+state+" |")
}

// headingLevel is the level of a markdown heading line ("## x" is 2), or 0.
func headingLevel(l string) int {
	l = strings.TrimSpace(l)
	n := len(l) - len(strings.TrimLeft(l, "#"))
	if n == 0 || n > 6 || len(l) > n && l[n] != ' ' {
		return 0
	}
	return n
}

// headingTitle is a heading's text without its hashes and a leading "§".
func headingTitle(l string) string {
	return strings.TrimPrefix(strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "#")), "§")
}

// isBatchesHeading matches the ledger's section of in-flight batches (made
// as "## 1. In-flight batches" when missing).
func isBatchesHeading(title string) bool {
	return strings.Contains(strings.ToLower(title), "in-flight batches")
}

// isErrorsHeading matches the ledger's errors section (made as "## 4. Errors"
// when missing): the heading numbered 4, or else the first about errors.
var isErrorsHeading = []func(string) bool{
	func(title string) bool { return strings.HasPrefix(title, "4.") || strings.HasPrefix(title, "4 ") },
	func(title string) bool { return strings.Contains(strings.ToLower(title), "errors") },
}

// findSection returns the line of the first heading whose title matches
// (the first matcher that matches any heading wins), and the line where
// its section ends: the next heading of the same or a higher level, or the
// end. at is -1 when no heading matches.
func findSection(lines []string, match ...func(string) bool) (at, end int) {
	for _, m := range match {
		for i, l := range lines {
			lv := headingLevel(l)
			if lv == 0 || !m(headingTitle(l)) {
				continue
			}
			for j := i + 1; j < len(lines); j++ {
				if h := headingLevel(lines[j]); h > 0 && h <= lv {
					return i, j
				}
			}
			return i, len(lines)
		}
	}
	return -1, len(lines)
}

// insertAfterTable adds a row at the end of the first table of the section
// whose heading matches; with no table there, it starts one with the
// ledger's header after the heading.
func insertAfterTable(s string, match func(string) bool, row string) string {
	lines := strings.Split(s, "\n")
	at, secEnd := findSection(lines, match)
	if at < 0 {
		return s + row + "\n"
	}
	end := -1
	for i := at + 1; i < secEnd; i++ {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "|") {
			end = i + 1
		} else if end >= 0 {
			break
		}
	}
	ins := []string{row}
	if end < 0 {
		end = at + 1
		ins = append([]string{"", ledgerHeader}, row)
	}
	out := append([]string{}, lines[:end]...)
	out = append(out, ins...)
	return strings.Join(append(out, lines[end:]...), "\n")
}

// appendToSection adds lines at the end of the section whose heading
// matches (after its last non-blank line), so that the sections after it
// stay where they are.
func appendToSection(s string, match []func(string) bool, add []string) string {
	lines := strings.Split(s, "\n")
	at, end := findSection(lines, match...)
	if at < 0 {
		return strings.TrimRight(s, "\n") + "\n" + strings.Join(add, "\n") + "\n"
	}
	last := end
	for last > at+1 && strings.TrimSpace(lines[last-1]) == "" {
		last--
	}
	out := append([]string{}, lines[:last]...)
	if last == at+1 {
		out = append(out, "") // a blank line under the heading
	}
	out = append(out, add...)
	rest := lines[last:]
	if len(rest) == 0 || strings.TrimSpace(rest[0]) != "" {
		rest = append([]string{""}, rest...) // a final newline, or a blank line before the next heading
	}
	return strings.Join(append(out, rest...), "\n")
}

// setRowState changes the state of a batch's rows in state from to to.
func setRowState(s, batchID, from, to string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if isRowOf(l, batchID, from) {
			lines[i] = strings.Replace(l, "| "+from+" |", "| "+to+" |", 1)
		}
	}
	return strings.Join(lines, "\n")
}
