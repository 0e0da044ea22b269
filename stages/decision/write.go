package decision

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/cairn-run/cairn/storage/atomicfile"
)

// TotalKey names the totals in the JSON and TSV output.
const TotalKey = "total"

// metricsJSON is one metrics object as JSON: counts as numbers, bounds as
// [min, max] pairs even when min = max, coverage null when no admissible
// assignment has a candidate within margin.
type metricsJSON struct {
	Decisions                map[string]Decision `json:"decisions,omitempty"`
	Approvals                int                 `json:"approvals"`
	TrueApprovals            Bounds              `json:"true_approvals"`
	ApprovalErrors           Bounds              `json:"approval_errors"`
	Within                   Bounds              `json:"within"`
	Coverage                 *[2]float64         `json:"coverage"`
	Charged                  int                 `json:"charged"`
	ColdStartCharged         int                 `json:"cold_start_charged"`
	Unavailable              int                 `json:"unavailable"`
	UnresolvedTruths         int                 `json:"unresolved_truths"`
	UnresolvedMemoryFailures int                 `json:"unresolved_memory_failures"`
	EvaluationAttempts       int                 `json:"evaluation_attempts"`
}

func (m *Metrics) jsonValue() metricsJSON {
	j := metricsJSON{
		Decisions: m.Decisions, Approvals: m.Approvals,
		TrueApprovals: m.TrueApprovals, ApprovalErrors: m.ApprovalErrors, Within: m.Within,
		Charged: m.Charged, ColdStartCharged: m.ColdStartCharged, Unavailable: m.Unavailable,
		UnresolvedTruths: m.UnresolvedTruths, UnresolvedMemoryFailures: m.UnresolvedMemoryFailures,
		EvaluationAttempts: m.EvaluationAttempts,
	}
	if m.Coverage.Defined {
		j.Coverage = &[2]float64{m.Coverage.Min, m.Coverage.Max}
	}
	return j
}

// JSON is the replay as one object, {"inputs": {...}, case_id: {rule:
// {budget: metrics}}, "total": {rule: {budget: metrics}}}, with budgets as
// strings; cases, rules and budgets in protocol order. "inputs" names the
// protocol and outcomes files with their sha256, and what was checked of
// the files the protocol froze.
func (r *Result) JSON() []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	in, _ := json.Marshal(r.Inputs)
	fmt.Fprintf(&b, "  %s: %s,\n", quote(InputsKey), in)
	block := func(name string, byRule map[string]map[int]*Metrics, last bool) {
		fmt.Fprintf(&b, "  %s: {\n", quote(name))
		for ri, rule := range r.Protocol.Rules {
			fmt.Fprintf(&b, "    %s: {\n", quote(rule))
			for bi, budget := range r.Protocol.BudgetsPerCase {
				v, _ := json.Marshal(byRule[rule][budget].jsonValue())
				fmt.Fprintf(&b, "      %s: %s%s\n", quote(strconv.Itoa(budget)), v, comma(bi, len(r.Protocol.BudgetsPerCase)))
			}
			fmt.Fprintf(&b, "    }%s\n", comma(ri, len(r.Protocol.Rules)))
		}
		if last {
			b.WriteString("  }\n")
		} else {
			b.WriteString("  },\n")
		}
	}
	for _, c := range r.Cases {
		block(c.Case.ID, c.Metrics, false)
	}
	block(TotalKey, r.Total, true)
	b.WriteString("}\n")
	return b.Bytes()
}

func quote(s string) string {
	v, _ := json.Marshal(s)
	return string(v)
}

func comma(i, n int) string {
	if i < n-1 {
		return ","
	}
	return ""
}

var tsvColumns = []string{
	"case_id", "rule", "budget", "approvals",
	"true_approvals_min", "true_approvals_max", "approval_errors_min", "approval_errors_max",
	"within_min", "within_max", "coverage_min", "coverage_max",
	"charged", "cold_start_charged", "unavailable", "unresolved_truths", "unresolved_memory_failures",
	"evaluation_attempts", "decisions",
}

// TSV is the replay as a table with a header row: one row per case, rule
// and budget, then the totals (case_id "total"). Coverage is empty where
// it is undefined; decisions are candidate=decision pairs in query order.
// When the outcomes leave planned slots out, a column absent counts the
// row's (its case's, or all); when outcomes were judged on simulated
// GPUs, a last column, simulated, counts the row's so judged: a copied
// file still says what its figures rest on.
func (r *Result) TSV() []byte {
	var b bytes.Buffer
	cols := slices.Clone(tsvColumns)
	var extra []map[string]int // per case id, for each extra column
	if m := r.Inputs.NotMeasured; m != nil {
		for _, c := range []struct {
			name  string
			total int
			of    func(*CaseResult) int
		}{
			{"absent", len(m.Absent), func(c *CaseResult) int { return c.Absent }},
			{"simulated", m.Simulated, func(c *CaseResult) int { return c.Simulated }},
		} {
			if c.total == 0 {
				continue
			}
			per := map[string]int{TotalKey: c.total}
			for _, cr := range r.Cases {
				per[cr.Case.ID] = c.of(cr)
			}
			cols = append(cols, c.name)
			extra = append(extra, per)
		}
	}
	b.WriteString(strings.Join(cols, "\t") + "\n")
	row := func(name, rule string, budget int, m *Metrics) {
		cov := []string{"", ""}
		if m.Coverage.Defined {
			cov = []string{fmtFloat(m.Coverage.Min), fmtFloat(m.Coverage.Max)}
		}
		var ds []string
		for _, id := range m.Order {
			ds = append(ds, id+"="+string(m.Decisions[id]))
		}
		f := []string{name, rule, strconv.Itoa(budget), strconv.Itoa(m.Approvals),
			strconv.Itoa(m.TrueApprovals[0]), strconv.Itoa(m.TrueApprovals[1]),
			strconv.Itoa(m.ApprovalErrors[0]), strconv.Itoa(m.ApprovalErrors[1]),
			strconv.Itoa(m.Within[0]), strconv.Itoa(m.Within[1]), cov[0], cov[1],
			strconv.Itoa(m.Charged), strconv.Itoa(m.ColdStartCharged), strconv.Itoa(m.Unavailable),
			strconv.Itoa(m.UnresolvedTruths), strconv.Itoa(m.UnresolvedMemoryFailures),
			strconv.Itoa(m.EvaluationAttempts), strings.Join(ds, ";")}
		for _, per := range extra {
			f = append(f, strconv.Itoa(per[name]))
		}
		b.WriteString(strings.Join(f, "\t") + "\n")
	}
	r.each(row)
	return b.Bytes()
}

func (r *Result) each(f func(name, rule string, budget int, m *Metrics)) {
	for _, c := range r.Cases {
		for _, rule := range r.Protocol.Rules {
			for _, budget := range r.Protocol.BudgetsPerCase {
				f(c.Case.ID, rule, budget, c.Metrics[rule][budget])
			}
		}
	}
	for _, rule := range r.Protocol.Rules {
		for _, budget := range r.Protocol.BudgetsPerCase {
			f(TotalKey, rule, budget, r.Total[rule][budget])
		}
	}
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func bounds(b Bounds) string {
	if b[0] == b[1] {
		return strconv.Itoa(b[0])
	}
	return fmt.Sprintf("%d–%d", b[0], b[1])
}

func coverage(r Range) string {
	if !r.Defined {
		return "n/a"
	}
	if r.Min == r.Max {
		return fmt.Sprintf("%.3f", r.Min)
	}
	return fmt.Sprintf("%.3f–%.3f", r.Min, r.Max)
}

// WriteTable prints the replay for people: a header naming the protocol
// and outcomes files with their sha256 and what was checked of the files
// the protocol froze, then per case and in total a row per rule and
// budget; a range a–b where unresolved truths leave the figure open.
func (r *Result) WriteTable(w io.Writer) error {
	if _, err := fmt.Fprintln(w, r.Inputs.Describe()); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRULE\tBUDGET\tDECISIONS\tAPPROVED\tTRUE\tERRORS\tWITHIN\tCOVERAGE\tCHARGED\tCOLD START\tUNAVAILABLE\tUNRESOLVED")
	r.each(func(name, rule string, budget int, m *Metrics) {
		var ds []string
		for _, id := range m.Order {
			ds = append(ds, decisionLetter[m.Decisions[id]])
		}
		dec := strings.Join(ds, " ")
		if name == TotalKey {
			dec = ""
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", name, rule, budget, dec, m.Approvals,
			bounds(m.TrueApprovals), bounds(m.ApprovalErrors), bounds(m.Within), coverage(m.Coverage),
			m.Charged, m.ColdStartCharged, m.Unavailable, m.UnresolvedTruths)
	})
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "DECISIONS in each case's query order: A approve, R reject, - abstain. TRUE, ERRORS, WITHIN, COVERAGE: min–max over the admissible truths of unresolved candidates.")
	return err
}

var decisionLetter = map[Decision]string{Approve: "A", Reject: "R", Abstain: "-"}

// Files are the names WriteFiles writes in its folder.
var Files = []string{"replay.json", "replay.tsv"}

// WriteFiles writes replay.json and replay.tsv into dir, each whole or not
// at all.
func (r *Result) WriteFiles(dir string, sync bool) error {
	for name, data := range map[string][]byte{"replay.json": r.JSON(), "replay.tsv": r.TSV()} {
		if err := atomicfile.Write(filepath.Join(dir, name), data, sync); err != nil {
			return fmt.Errorf("cannot write the replay: %w", err)
		}
	}
	return nil
}
