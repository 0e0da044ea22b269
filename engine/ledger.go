package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/cairn-run/cairn/engine/atomicfile"
)

// The batch ledger keeps the seed's markdown rows in the user's memory
// file: a RUNNING row under "In-flight batches" when a batch starts, its
// state updated when it ends, and each failed variant logged under
// "Errors".
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

// editLedger rewrites the ledger under a lock, creating it with both
// sections when missing.
func editLedger(path string, edit func(string) string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	lk := flock.New(path + ".lock")
	if err := lk.Lock(); err != nil {
		return err
	}
	defer lk.Unlock()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	s := string(b)
	if !strings.Contains(s, "In-flight batches") {
		s = strings.TrimRight(s, "\n")
		if s != "" {
			s += "\n\n"
		}
		s += ledgerBatches + "\n\n" + ledgerHeader + "\n"
	}
	if !strings.Contains(s, "Errors") {
		s = strings.TrimRight(s, "\n") + "\n\n" + ledgerErrors + "\n\n"
	}
	s = edit(s)
	return atomicfile.Write(path, []byte(s), false)
}

// insertAfterTable adds a row at the end of the first table that follows
// the line containing heading.
func insertAfterTable(s, heading, row string) string {
	lines := strings.Split(s, "\n")
	at := -1
	for i, l := range lines {
		if strings.Contains(l, heading) {
			at = i
			break
		}
	}
	if at < 0 {
		return s + row + "\n"
	}
	end := at + 1
	inTable := false
	for i := at + 1; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "|") {
			inTable = true
			end = i + 1
			continue
		}
		if inTable || strings.HasPrefix(l, "#") {
			break
		}
	}
	out := append([]string{}, lines[:end]...)
	out = append(out, row)
	return strings.Join(append(out, lines[end:]...), "\n")
}

func ledgerStart(a *applier, g *batchGroup) {
	b := g.batch
	row := fmt.Sprintf("| %s | %s | %s | %s | %s | %s |", b.Tag, b.ID, b.Start.Format("2006-01-02 15:04:05"), relTo(a.g.Root, b.LogDir), strings.Join(b.Variants, ","), BatchRunning)
	if err := editLedger(ledgerPath(a, g), func(s string) string { return insertAfterTable(s, "In-flight batches", row) }); err != nil {
		a.printf("warning: cannot update the ledger %s: %s\n", g.policy.Ledger, err)
	}
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
func ledgerInterrupted(entries []JEntry) error {
	last := map[string]*Batch{}
	var order []string
	for _, e := range entries {
		if e.T == JBatch && e.Batch != nil {
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
		errs = append(errs, editLedger(b.Ledger, func(s string) string { return setRowState(s, id, BatchInterrupted) }))
	}
	return errors.Join(errs...)
}

func ledgerEnd(a *applier, g *batchGroup) {
	b := g.batch
	var errs []string
	for _, id := range g.order {
		ns := a.nodes[id]
		if ns.status == stFailed || ns.class != "" {
			errs = append(errs, fmt.Sprintf("- %s UTC %s %s variant %s failed (%s): %s", time.Now().UTC().Format("2006-01-02 15:04:05"), b.Tag, b.ID, ns.n.Inst.Key, ns.class, ns.message))
		}
	}
	err := editLedger(ledgerPath(a, g), func(s string) string {
		s = setRowState(s, b.ID, b.State)
		if len(errs) > 0 {
			s = strings.TrimRight(s, "\n") + "\n" + strings.Join(errs, "\n") + "\n"
		}
		return s
	})
	if err != nil {
		a.printf("warning: cannot update the ledger %s: %s\n", g.policy.Ledger, err)
	}
}
