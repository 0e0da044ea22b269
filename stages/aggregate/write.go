package aggregate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-run/cairn/stats"
)

// TableHeader are the table's columns.
var TableHeader = []string{"family", "method", "cell", "n_seeds", "baseline_mean", "deployed_mean", "delta_pp", "ci_low", "ci_high", "p", "p_holm", "reject", "status"}

// TSV writes the table: the header, then per row its line and one detail
// line per seed (n_seeds holds "seed K" there, and status the seed's own
// status, test items and file). A row or seed with a non-conformant job
// says so in its status: "; non-conformant: REASONS". Means have 4
// decimals, percentage points 2, p-values 4 significant digits; "-" stands
// for no value.
func (s *Summary) TSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	line := func(cols ...string) {
		bw.WriteString(strings.Join(cols, "\t"))
		bw.WriteByte('\n')
	}
	line(TableHeader...)
	for _, r := range s.Rows {
		status := r.Status
		if r.Reason != "" {
			status += ": " + r.Reason
		}
		if len(r.Nonconformant) > 0 {
			status += "; non-conformant: " + strings.Join(r.Nonconformant, "; ")
		}
		status += s.rowMarks(r)
		fam := r.Family
		if fam == "" {
			fam = "-"
		}
		reject := "-"
		if r.Reject != nil {
			reject = map[bool]string{true: "yes", false: "no"}[*r.Reject]
		}
		line(fam, r.Method, r.CellID, strconv.Itoa(r.NSeeds),
			num(r.BaselineMean, 'f', 4), num(r.DeployedMean, 'f', 4), num(r.DeltaPP, 'f', 2),
			num(r.CILow, 'f', 2), num(r.CIHigh, 'f', 2), num(r.P, 'g', 4), num(r.PHolm, 'g', 4),
			reject, clean(status))
		for _, sd := range r.Seeds {
			st := sd.Status
			switch {
			case sd.Status == SeedMissing:
			case sd.Status == SeedSkipped:
				st += fmt.Sprintf(" as non-conformant: %s, %s", strings.Join(sd.Nonconformant, "; "), sd.File)
			case sd.Invalid > 0:
				st += fmt.Sprintf(": %d of %d test items invalid, %s", sd.Invalid, sd.Items, sd.File)
			default:
				st += fmt.Sprintf(": %d test items, %s", sd.Items, sd.File)
			}
			if len(sd.Nonconformant) > 0 && sd.Status != SeedSkipped {
				st += "; non-conformant: " + strings.Join(sd.Nonconformant, "; ")
			}
			line(fam, r.Method, r.CellID, "seed "+strconv.Itoa(sd.Seed),
				num(sd.BaselineMean, 'f', 4), num(sd.DeployedMean, 'f', 4), num(sd.DeltaPP, 'f', 2),
				"-", "-", "-", "-", "-", clean(st))
		}
	}
	return bw.Flush()
}

// JSON writes the summary, indented, ending in a newline.
func (s *Summary) JSON(w io.Writer) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("aggregate: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// CannotRejectNote says why the rows of family name (any row, with no
// correction) cannot be significant: the bootstrap's replicates give no
// p-value small enough.
func (s *Summary) CannotRejectNote(name string) string {
	need, by := stats.Alpha, "a row with no correction needs"
	for _, f := range s.Families {
		if f.Name == name && s.Family != FamilyNone {
			need, by = stats.Alpha/float64(f.Rows), fmt.Sprintf("Holm's first step in a family of %d rows needs", f.Rows)
		}
	}
	return fmt.Sprintf("%d bootstrap replicates give no p-value below %.4g, and %s p <= %.4g (at least %d replicates)",
		s.Replicates, s.PFloor, by, need, minReplicates(need))
}

// rowMarks is what a row's status adds to say its figures cannot say
// what they seem to: "; cannot be significant: WHY" for each reason, and
// "; rounding noise: ..." for differences counted as ties.
func (s *Summary) rowMarks(r Row) string {
	var b strings.Builder
	for _, why := range r.CannotRejectWhy {
		note := s.CannotRejectNote(r.Family)
		if why == WhyItems {
			note = TooFewItemsNote(r, s.Resample)
		}
		b.WriteString("; cannot be significant: " + note)
	}
	if r.NoiseTies > 0 {
		b.WriteString("; rounding noise: " + noiseNote(r))
	}
	if r.CINot95 {
		b.WriteString("; interval not 95%: " + s.IntervalNote())
	}
	return b.String()
}

// IntervalNote says why the intervals of too few replicates
// (stats.MinIntervalReplicates) are no 95% intervals.
func (s *Summary) IntervalNote() string {
	return fmt.Sprintf("%d bootstrap replicate(s) are too few: the interval's ends, their 2.5th and 97.5th percentiles, fall between the two most extreme replicates on each side ((B − 1) · 0.025 < 1), so it is about their range, not their middle 95%% (at least %d replicates)",
		s.Replicates, stats.MinIntervalReplicates)
}

// TooFewItemsNote says why a row of too few items (WhyItems) cannot be
// significant: how many of its items differ between the bundles
// (SignedItems), as the resampling draws them.
func TooFewItemsNote(r Row, resample string) string {
	n := r.Seeds[0].Items
	if resample == stats.ResampleSharedItems {
		return fmt.Sprintf("too few items: %d of %d test item(s) differ between the bundles averaged over the seeds (the others are ties, 0, which carry no sign), and no test of fewer than %d paired signs reaches p <= %.4g (at least %d items that differ)",
			r.signedItems, n, MinDraws, stats.Alpha, MinDraws)
	}
	return fmt.Sprintf("too few items: %d of %d test item(s) differ between the bundles in some seed (the others are ties, 0, in every seed, which carry no sign; an item's differences in the %d seeds, which share their items, are not independent signs), and no test of fewer than %d paired signs reaches p <= %.4g (at least %d items that differ)",
		r.signedItems, n, r.NSeeds, MinDraws, stats.Alpha, MinDraws)
}

func noiseNote(r Row) string {
	return fmt.Sprintf("%d item difference(s) within %g of the score scale counted as ties (deployed − baseline at most %g × max(1, |baseline|, |deployed|))",
		r.NoiseTies, NoiseTolerance, NoiseTolerance)
}

// CannotRejectWarnings are the warnings for the marked families (for a
// summary with no correction, one for all its rows) and rows, and for
// intervals of too few replicates, one a line.
func (s *Summary) CannotRejectWarnings() []string {
	var out []string
	if s.Family == FamilyNone {
		for _, r := range s.Rows {
			if slices.Contains(r.CannotRejectWhy, WhyReplicates) {
				out = append(out, "warning: no row can be significant: "+s.CannotRejectNote(""))
				break
			}
		}
	}
	for _, f := range s.Families {
		if f.CannotReject {
			out = append(out, fmt.Sprintf("warning: family %s: no row can be significant: %s", f.Name, s.CannotRejectNote(f.Name)))
		}
	}
	for _, r := range s.Rows {
		if slices.Contains(r.CannotRejectWhy, WhyItems) {
			out = append(out, fmt.Sprintf("warning: %s %s: cannot be significant: %s", r.Method, r.CellID, TooFewItemsNote(r, s.Resample)))
		}
		if r.NoiseTies > 0 {
			out = append(out, fmt.Sprintf("warning: %s %s: rounding noise: %s", r.Method, r.CellID, noiseNote(r)))
		}
	}
	if s.Replicates < stats.MinIntervalReplicates {
		out = append(out, "warning: no interval is a 95% interval: "+s.IntervalNote())
	}
	for _, d := range s.DifferentItems {
		out = append(out, "warning: "+d)
	}
	return out
}

// minReplicates is the fewest replicates whose p-value floor 2/(B+1) is
// at most need.
func minReplicates(need float64) int {
	return int(math.Ceil(2/need - 1))
}

// num formats a value, "-" for none; a value that rounds to zero has no
// minus sign.
func num(v *float64, f byte, prec int) string {
	if v == nil || math.IsNaN(*v) {
		return "-"
	}
	s := strconv.FormatFloat(*v, f, prec, 64)
	if strings.HasPrefix(s, "-") && strings.Trim(s, "-0.") == "" {
		s = s[1:]
	}
	return s
}

// clean keeps a table cell on its line and in its column.
func clean(s string) string {
	return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
}
