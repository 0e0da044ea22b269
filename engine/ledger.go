package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/storage/atomicfile"
)

// The batch ledger is the markdown file a waves stage names in `ledger`
// (the user's memory file): cairn keeps a RUNNING row under "In-flight
// batches" when a batch starts, its state updated when it ends, and each
// failed variant logged under "Errors".
const (
	ledgerBatches = "## 1. In-flight batches"
	ledgerErrors  = "## 4. Errors"
	ledgerHeader  = "| tag | batch_id | started (UTC) | log_dir | variants | state |\n|---|---|---|---|---|---|"
)

func ledgerPath(a *applier, g *batchGroup) string {
	p := g.policy.Ledger
	if !filepath.IsAbs(p) {
		p = filepath.Join(a.g.Root, p)
	}
	return p
}

// editLedger rewrites the ledger under a lock. A missing file is created
// with both sections, and a file without one of them gets it at its end;
// what was added is returned, for a one-line notice.
func editLedger(path string, edit func(string) string) (added []string, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	lk := flock.New(path + ".lock")
	if err := lk.Lock(); err != nil {
		return nil, err
	}
	defer lk.Unlock()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	s := string(b)
	lines := strings.Split(s, "\n")
	if at, _ := findSection(lines, isBatchesHeading); at < 0 {
		s = strings.TrimRight(s, "\n")
		if s != "" {
			s += "\n\n"
		}
		s += ledgerBatches + "\n\n" + ledgerHeader + "\n"
		added = append(added, ledgerBatches)
	}
	if at, _ := findSection(strings.Split(s, "\n"), isErrorsHeading...); at < 0 {
		s = strings.TrimRight(s, "\n") + "\n\n" + ledgerErrors + "\n\n"
		added = append(added, ledgerErrors)
	}
	s = edit(s)
	return added, atomicfile.Write(path, []byte(s), false)
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

// ledgerNotice says once what editLedger added to the ledger.
func ledgerNotice(a *applier, path string, existed bool, added []string) {
	if len(added) == 0 {
		return
	}
	rel := relTo(a.g.Root, path)
	if !existed {
		a.printf("  ledger: created %s with the sections %q and %q\n", rel, ledgerBatches, ledgerErrors)
		return
	}
	a.printf("  ledger: added %s to %s\n", strings.Join(quoteAll(added), " and "), rel)
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}

func ledgerStart(a *applier, g *batchGroup) {
	b := g.batch
	row := fmt.Sprintf("| %s | %s | %s | %s | %s | %s |", b.Tag, b.ID, b.Start.Format("2006-01-02 15:04:05"), relTo(a.g.Root, b.LogDir), strings.Join(b.Variants, ","), BatchRunning)
	path := ledgerPath(a, g)
	_, statErr := os.Stat(path)
	added, err := editLedger(path, func(s string) string { return insertAfterTable(s, isBatchesHeading, row) })
	if err != nil {
		a.printf("warning: cannot update the ledger %s: %s\n", g.policy.Ledger, err)
		return
	}
	ledgerNotice(a, path, statErr == nil, added)
}

// setRowState changes the state of a batch's RUNNING row.
func setRowState(s, batchID, state string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.Contains(l, "| "+batchID+" |") && strings.Contains(l, "| "+BatchRunning+" |") {
			lines[i] = strings.Replace(l, "| "+BatchRunning+" |", "| "+state+" |", 1)
		}
	}
	return strings.Join(lines, "\n")
}

// ledgerInterrupted marks the rows of the batches a dead run left RUNNING
// as INTERRUPTED.
func ledgerInterrupted(entries []runlog.Entry) error {
	last := map[string]*runlog.Batch{}
	var order []string
	for _, e := range entries {
		if e.T == runlog.BatchEvent && e.Batch != nil {
			if last[e.Batch.ID] == nil {
				order = append(order, e.Batch.ID)
			}
			last[e.Batch.ID] = e.Batch
		}
	}
	var errs []error
	for _, id := range order {
		b := last[id]
		if b.State != BatchRunning || b.Ledger == "" {
			continue
		}
		if _, err := os.Stat(b.Ledger); err != nil {
			continue // moved or removed since: nothing to mark
		}
		_, err := editLedger(b.Ledger, func(s string) string { return setRowState(s, id, BatchInterrupted) })
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func ledgerEnd(a *applier, g *batchGroup) {
	b := g.batch
	var errs []string
	for _, id := range g.order {
		ns := a.nodes[id]
		if ns.status == plan.Failed || ns.class != "" {
			errs = append(errs, fmt.Sprintf("- %s UTC %s %s variant %s failed (%s): %s", time.Now().UTC().Format("2006-01-02 15:04:05"), b.Tag, b.ID, ns.n.Inst.Key, ns.class, ns.message))
		}
	}
	path := ledgerPath(a, g)
	_, statErr := os.Stat(path)
	added, err := editLedger(path, func(s string) string {
		s = setRowState(s, b.ID, b.State)
		if len(errs) > 0 {
			s = appendToSection(s, isErrorsHeading, errs)
		}
		return s
	})
	ledgerNotice(a, path, statErr == nil, added)
	if err != nil {
		a.printf("warning: cannot update the ledger %s: %s\n", g.policy.Ledger, err)
	}
}
