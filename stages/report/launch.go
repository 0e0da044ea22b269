package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Launch says which batch launch measured a row: a variant resumed after
// an interruption, or rerun alone after its config changed, was measured
// in another launch than the rows beside it, maybe with fewer variants
// sharing the machine.
type Launch struct {
	RunID        string `json:"run_id"`
	Batch        string `json:"batch"`         // <run id>/<stage>
	Started      string `json:"started"`       // the variant's start, RFC 3339 UTC
	BatchStarted string `json:"batch_started"` // the batch's start, RFC 3339 UTC
	GPU          int    `json:"gpu"`
	Wave         int    `json:"wave,omitempty"`
	// InFlight is the most variants of the batch that ran at once while
	// this one ran, itself included.
	InFlight int `json:"in_flight"`
	// Launched is how many variants the batch launched; Partial is true
	// when that is fewer than BatchSize.
	Launched  int  `json:"launched"`
	BatchSize int  `json:"batch_size"`
	Partial   bool `json:"partial"`
}

// The launch columns, added before the pareto column when some row has a
// Launch. Markdown shows the launch's number (explained below the table),
// the GPU and the in-flight count; TSV and JSON the full values.
const (
	ColLaunch   = "launch"
	ColGPU      = "gpu"
	ColInFlight = "in_flight"
)

// launchSummary is one launch of a table, numbered from 1 in the order
// the launches started (the order their rows first appear, where a start
// is not known).
type launchSummary struct {
	Index        int    `json:"index"`
	RunID        string `json:"run_id"`
	Batch        string `json:"batch"`
	BatchStarted string `json:"batch_started"`
	Launched     int    `json:"launched"`
	BatchSize    int    `json:"batch_size"`
	Partial      bool   `json:"partial"`
}

// launches lists the table's launches and maps each row to its launch's
// number (0: none).
func (t Table) launches() ([]launchSummary, []int) {
	var out []launchSummary
	of := make([]int, len(t.Rows))
	seen := map[string]int{}
	for i, r := range t.Rows {
		l := r.Launch
		if l == nil {
			continue
		}
		n, ok := seen[l.Batch]
		if !ok {
			n = len(out) + 1
			seen[l.Batch] = n
			out = append(out, launchSummary{Index: n, RunID: l.RunID, Batch: l.Batch, BatchStarted: l.BatchStarted, Launched: l.Launched, BatchSize: l.BatchSize, Partial: l.Partial})
		}
		of[i] = n
	}
	// Number them in time: launch 2 is not earlier than launch 1,
	// whatever the rows' order.
	slices.SortStableFunc(out, func(a, b launchSummary) int { return cmp.Compare(launchStart(a), launchStart(b)) })
	renumber := make([]int, len(out)+1)
	for i := range out {
		renumber[out[i].Index] = i + 1
		out[i].Index = i + 1
	}
	for i := range of {
		of[i] = renumber[of[i]]
	}
	return out, of
}

// launchStart is when a launch started, in nanoseconds (0 when unknown:
// such launches keep their rows' order, first).
func launchStart(l launchSummary) int64 {
	t, err := time.Parse(time.RFC3339Nano, l.BatchStarted)
	if err != nil {
		return 0
	}
	return t.UnixNano()
}

// launchCells are row i's launch cells: for Markdown the launch's number
// (with "partial" for a partial batch), the GPU and the in-flight count;
// for TSV the run id, the variant's start, the GPU, the in-flight count
// and whether the batch was partial.
func launchCells(r Row, number int, markdown bool) []cell {
	l := r.Launch
	if l == nil {
		if markdown {
			return []cell{{}, {}, {}}
		}
		return []cell{{}, {}, {}, {}, {}}
	}
	gpu := cell{text: fmt.Sprint(l.GPU), numeric: true}
	inFlight := cell{text: fmt.Sprint(l.InFlight), numeric: true}
	if markdown {
		n := fmt.Sprint(number)
		if l.Partial {
			n += " (partial)"
		}
		return []cell{{text: n}, gpu, inFlight}
	}
	return []cell{{text: l.RunID}, {text: l.Started}, gpu, inFlight, {text: fmt.Sprint(l.Partial)}}
}

// launchHeader is the header of the launch columns.
func launchHeader(markdown bool) []string {
	if markdown {
		return []string{ColLaunch, ColGPU, ColInFlight}
	}
	return []string{"run_id", "started", ColGPU, ColInFlight, "partial_batch"}
}

// launchLegend explains the launch numbers of a Markdown table, one line
// per launch.
func launchLegend(ls []launchSummary) string {
	var b strings.Builder
	b.WriteString("\nLaunches (run, batch start in UTC, variants it launched):\n")
	partial := false
	for _, l := range ls {
		fmt.Fprintf(&b, "- %d: run %s, %s UTC, %d of %d variants", l.Index, l.RunID, utcText(l.BatchStarted), l.Launched, l.BatchSize)
		if l.Partial {
			b.WriteString(" (partial batch)")
			partial = true
		}
		b.WriteString("\n")
	}
	if len(ls) > 1 || partial {
		b.WriteString("Rows of different launches, or of a partial batch, were not measured together: compare them with care, or rerun the whole batch (strict_batch = true).\n")
	}
	return b.String()
}

// utcText shows an RFC 3339 time as "2006-01-02 15:04:05".
func utcText(s string) string {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC().Format("2006-01-02 15:04:05")
	}
	return s
}
