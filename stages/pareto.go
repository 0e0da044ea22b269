package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/cairn-run/cairn/dsl/addrs"
	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/stages/report"
	"github.com/cairn-run/cairn/storage/atomicfile"
)

// Pareto compares the variants of a batch: the comparison table (Markdown,
// TSV, JSON), the variants no other beats on both axes (the Pareto front)
// and a scatter plot of the plane with the front highlighted.
//
//	stage "pareto" "batch" {
//	  on_upstream_failure = "run"      # failed variants are listed as failed
//	  rows    = stage.aime24           # the instances of a stage (or a list of them)
//	  x       = "throughput"           # default
//	  y       = "mean@16"              # default
//	  columns = ["name", "content_hash", "mean@16", "pass@16", "throughput", "e2e_time"]
//	  out_dir = "reports/batch"        # default reports/<stage name>
//	}
//
// A variant is dominated iff another has x >= and y >= with at least one
// strictly greater; both axes are maximised. A row whose instance did not
// finish (failed, skipped) stays in the table as FAILED with its reason and
// is never on the front. A finished row whose x or y is not a number
// fails the node (class result), naming the variant and the field: the
// front of the others is not the batch's. The node writes table.md,
// table.tsv, table.json and pareto.svg into out_dir (outputs, restored on
// a cache hit), prints the table and the front, and its result is
// {"x", "y", "columns", "rows", "pareto_front", "failed", "files"}.
type Pareto struct{}

func init() { Register(Pareto{}) }

// PurePlan implements PurePlanner.
func (Pareto) PurePlan() {}

// Compares implements Comparer: with no finished row there is no table.
func (Pareto) Compares() {}

// Name implements Kind.
func (Pareto) Name() string { return "pareto" }

// Version implements Kind.
func (Pareto) Version() int { return 1 }

// Schema implements Kind.
func (Pareto) Schema() *hcl.BodySchema {
	return &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "rows", Required: true},
		{Name: "x"},
		{Name: "y"},
		{Name: "columns"},
		{Name: "out_dir"},
		{Name: "title"},
	}}
}

// KeyValue implements KeyTransformer: of each row that is a stage
// instance, only what the table shows enters the key (its key, value,
// result, status, class, message and launch), not its duration or peak
// memory.
func (Pareto) KeyValue(attr string, v cty.Value) cty.Value {
	if attr != "rows" || !v.IsWhollyKnown() || v.IsNull() {
		return v
	}
	ty := v.Type()
	if !(ty.IsObjectType() || ty.IsMapType() || ty.IsTupleType() || ty.IsListType()) {
		return v
	}
	keep := []string{"key", "value", "result", "status", "class", "message", "launch"}
	project := func(row cty.Value) cty.Value {
		if row.IsNull() || !row.Type().IsObjectType() || !row.Type().HasAttribute("result") || !row.Type().HasAttribute("status") {
			return row
		}
		m := map[string]cty.Value{}
		for _, k := range keep {
			if row.Type().HasAttribute(k) {
				m[k] = row.GetAttr(k)
			}
		}
		return cty.ObjectVal(m)
	}
	if ty.IsObjectType() && ty.HasAttribute("result") && ty.HasAttribute("status") {
		return project(v)
	}
	if ty.IsObjectType() || ty.IsMapType() {
		m := map[string]cty.Value{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			m[k.AsString()] = project(e)
		}
		return cty.ObjectVal(m)
	}
	var out []cty.Value
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		out = append(out, project(e))
	}
	if len(out) == 0 {
		return v
	}
	return cty.TupleVal(out)
}

// The files a pareto node writes into its out_dir.
const (
	ParetoMarkdown = "table.md"
	ParetoTSV      = "table.tsv"
	ParetoJSON     = "table.json"
	ParetoSVG      = "pareto.svg"
)

// paretoArgs are a pareto node's decoded attributes.
type paretoArgs struct {
	X, Y    string
	Columns []string
	OutDir  string
	Title   string
}

// Check implements Kind.
func (Pareto) Check(n *Node) hcl.Diagnostics {
	_, diags := paretoDecode(n)
	if v, ok := n.Args["rows"]; ok && v.IsKnown() && !v.IsNull() {
		ty := v.Type()
		if !(ty.IsObjectType() || ty.IsMapType() || ty.IsListType() || ty.IsTupleType() || ty.IsSetType()) {
			diags = append(diags, Diag("Invalid rows",
				fmt.Sprintf("rows is the instances of a stage (rows = stage.aime24) or a list of result objects, not %s.", ty.FriendlyName()),
				n.Range("rows"))...)
		}
	}
	return diags
}

// PathAttrs implements PathLinker.
func (Pareto) PathAttrs() []PathAttr { return paretoPaths }

var paretoPaths = []PathAttr{{Attr: "out_dir", Write: true, Default: reportsDefault}}

// DeclaredOutputs implements OutputDeclarer: the report folder.
func (Pareto) DeclaredOutputs(n *Node) []DeclaredPath {
	a, diags := paretoDecode(n)
	if diags.HasErrors() {
		return nil
	}
	return []DeclaredPath{{Attr: "out_dir", Path: a.OutDir}}
}

func paretoDecode(n *Node) (paretoArgs, hcl.Diagnostics) {
	a := paretoArgs{X: report.ColThroughput, Y: report.ColMean16, OutDir: "reports/" + n.Stage}
	var diags hcl.Diagnostics
	str := func(attr string, dst *string) {
		v, ok, d := StringArg(n, attr)
		diags = append(diags, d...)
		if ok {
			*dst = v
		}
	}
	str("x", &a.X)
	str("y", &a.Y)
	str("title", &a.Title)
	var dir string
	str("out_dir", &dir)
	if dir != "" {
		clean, err := relPath(dir)
		if err != nil {
			diags = append(diags, Diag("Invalid out_dir", "out_dir "+err.Error(), n.Range("out_dir"))...)
		} else {
			a.OutDir = clean
		}
	}
	if v, ok := n.Args["columns"]; ok && v.IsWhollyKnown() && !v.IsNull() {
		cols, err := StringList(v)
		switch {
		case err != nil:
			diags = append(diags, Diag("Invalid columns", fmt.Sprintf("columns must be a list of metric names: %s.", err), n.Range("columns"))...)
		case len(cols) == 0:
			diags = append(diags, Diag("Invalid columns", "columns must name at least one column.", n.Range("columns"))...)
		default:
			a.Columns = cols
		}
	}
	if a.Columns == nil {
		for _, c := range report.DefaultColumns() {
			a.Columns = append(a.Columns, c.Name)
		}
	}
	return a, diags
}

// Run implements Kind.
func (Pareto) Run(ctx context.Context, n *Node, rt Runtime) (*Outcome, error) {
	a, diags := paretoDecode(n)
	if diags.HasErrors() {
		return nil, diags
	}
	// The rows are read once: the table and the check of their axes
	// see the same variants.
	items, err := paretoItems(n)
	if err != nil {
		return &Outcome{Class: failclass.Setup, Message: err.Error()}, nil
	}
	rows, simulated, err := paretoRows(n, a, items)
	if err != nil {
		return &Outcome{Class: failclass.Setup, Message: err.Error()}, nil
	}
	front, err := report.RowFront(rows, a.X, a.Y)
	if err == nil {
		err = checkAxes(rows, a.X, a.Y)
	}
	if err != nil {
		return &Outcome{Class: failclass.Setup, Message: fmt.Sprintf("%s (x = %q, y = %q; the rows' results hold: %s)", err, a.X, a.Y, strings.Join(resultFields(rows), ", "))}, nil
	}
	if bad, rerun := unreadableAxes(n, a, items); len(bad) > 0 {
		// The front of the others would be published as the batch's, and
		// the left-out variant may dominate them all: nothing is written.
		how := "run it again"
		if len(rerun) > 0 {
			how = "run it again (apply --replace '" + strings.Join(rerun, "' --replace '") + "')"
		}
		return &Outcome{Class: failclass.Result, Message: fmt.Sprintf("the Pareto front on (%s, %s) cannot be computed: %s; no table, front or plot was written: fix what writes the result and %s", a.X, a.Y, strings.Join(bad, "; "), how)}, nil
	}
	cols := make([]report.Column, len(a.Columns))
	for i, name := range a.Columns {
		cols[i] = presentColumn(name)
	}
	table := report.Table{Rows: rows, Front: front, Columns: cols, X: a.X, Y: a.Y}
	// On the terminal and in table.md, content hashes are cut to 12
	// characters (as in the runners' file names); TSV and JSON keep them
	// whole.
	short := table
	short.Columns = make([]report.Column, len(cols))
	for i, c := range cols {
		short.Columns[i] = c
		if c.Name == report.ColContentHash {
			inner := c.Value
			short.Columns[i].Value = func(r report.Row) (any, bool) {
				v, ok := inner(r)
				if s, isStr := v.(string); isStr && len(s) > 12 {
					return s[:12], ok
				}
				return v, ok
			}
		}
	}

	// The files say SIMULATED themselves (a copied table.md still does);
	// the terminal's heading says it above the table.
	var md, mdFile, tsv, js, svg bytes.Buffer
	if err := short.Markdown(&md); err != nil {
		return nil, err
	}
	short.Simulated, table.Simulated = simulated, simulated
	if err := short.Markdown(&mdFile); err != nil {
		return nil, err
	}
	if err := table.TSV(&tsv); err != nil {
		return nil, err
	}
	if err := table.JSON(&js); err != nil {
		return nil, err
	}
	plot := report.Plot{X: a.X, Y: a.Y, Title: a.Title}
	sim := ""
	if simulated {
		// Results from simulated workloads say so wherever they are shown.
		sim = " (SIMULATED results)"
		if plot.Title == "" {
			plot.Title = a.Y + " vs " + a.X
		}
		plot.Title += sim
	}
	if err := plot.SVG(&svg, rows, front); err != nil {
		return &Outcome{Class: failclass.Setup, Message: err.Error()}, nil
	}
	files := map[string]string{
		"markdown": filepath.ToSlash(filepath.Join(a.OutDir, ParetoMarkdown)),
		"tsv":      filepath.ToSlash(filepath.Join(a.OutDir, ParetoTSV)),
		"json":     filepath.ToSlash(filepath.Join(a.OutDir, ParetoJSON)),
		"svg":      filepath.ToSlash(filepath.Join(a.OutDir, ParetoSVG)),
	}
	for kind, data := range map[string][]byte{"markdown": mdFile.Bytes(), "tsv": tsv.Bytes(), "json": js.Bytes(), "svg": svg.Bytes()} {
		if err := atomicfile.Write(filepath.Join(rt.Root(), files[kind]), data, false); err != nil {
			return nil, fmt.Errorf("pareto: %w", err)
		}
	}

	// The result: the table's JSON with the files written.
	var res struct {
		X           string            `json:"x"`
		Y           string            `json:"y"`
		Columns     []string          `json:"columns"`
		Rows        []json.RawMessage `json:"rows"`
		ParetoFront []string          `json:"pareto_front"`
		Failed      []string          `json:"failed"`
		Launches    json.RawMessage   `json:"launches,omitempty"`
		Simulated   bool              `json:"simulated,omitempty"`
		Files       map[string]string `json:"files"`
	}
	if err := json.Unmarshal(js.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("pareto: %w", err)
	}
	res.Files = files
	out, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("pareto: %w", err)
	}

	w := &bytes.Buffer{}
	defer emitOutput(rt, n.Address, w)
	if len(res.Failed) == len(rows) {
		fmt.Fprintf(w, "  %s: no variant finished (%s failed or skipped): nothing to compare; table in %s\n", n.Address, strings.Join(res.Failed, ", "), files["markdown"])
	} else {
		fmt.Fprintf(w, "\n%s: %d variant(s) compared on (%s, %s)%s\n\n", n.Address, len(rows), a.X, a.Y, sim)
		_, _ = w.Write(md.Bytes())
		fmt.Fprintf(w, "\n%s\n", FrontSummary(a.X, a.Y, res.ParetoFront, res.Failed))
		fmt.Fprintf(w, "Table: %s (also %s, %s); plot: %s\n\n", files["markdown"], files["tsv"], files["json"], files["svg"])
	}

	return &Outcome{
		Result: out,
		Files:  []string{files["markdown"], files["tsv"], files["json"], files["svg"]},
	}, nil
}

// FrontSummary says which variants are on the front and which failed, in
// one or two lines.
func FrontSummary(x, y string, front, failed []string) string {
	s := fmt.Sprintf("Pareto front on (%s, %s): ", x, y)
	if len(front) == 0 {
		s += "none (no variant has both metrics)"
	} else {
		s += strings.Join(front, ", ")
	}
	if len(failed) > 0 {
		s += fmt.Sprintf("\nFailed (not compared): %s", strings.Join(failed, ", "))
	}
	return s
}

// presentColumn is report.Col, except that a metric the row's result does
// not hold (NaN here) is an empty cell rather than "NaN".
func presentColumn(name string) report.Column {
	c := report.Col(name)
	inner := c.Value
	c.Value = func(r report.Row) (any, bool) {
		v, ok := inner(r)
		if f, isF := v.(float64); isF && math.IsNaN(f) {
			return nil, false
		}
		return v, ok
	}
	return c
}

// ownMetrics are the report.Row fields filled from a result.
var ownMetrics = []string{report.ColMean16, report.ColPass16, report.ColThroughput, report.ColE2ETime}

// paretoItem is one row of the rows attribute: its instance key ("" in
// a list of results) and its value.
type paretoItem struct {
	key string
	val cty.Value
}

// paretoItems reads the rows attribute, in the order the variants were
// given (the order of the node's upstreams).
func paretoItems(n *Node) ([]paretoItem, error) {
	v, ok := n.Args["rows"]
	if !ok || v.IsNull() {
		return nil, fmt.Errorf("rows is empty: give the instances of a stage, like rows = stage.aime24")
	}
	v, _ = v.UnmarkDeep()
	if !v.IsWhollyKnown() {
		return nil, fmt.Errorf("rows is not known yet")
	}
	var items []paretoItem
	ty := v.Type()
	switch {
	case ty.IsObjectType() || ty.IsMapType():
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			items = append(items, paretoItem{key: k.AsString(), val: e})
		}
		order := upstreamOrder(n)
		sort.SliceStable(items, func(i, j int) bool {
			oi, iok := order[items[i].key]
			oj, jok := order[items[j].key]
			switch {
			case iok && jok:
				return oi < oj
			case iok != jok:
				return iok
			}
			return items[i].key < items[j].key
		})
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			items = append(items, paretoItem{val: e})
		}
	default:
		return nil, fmt.Errorf("rows must be the instances of a stage or a list of result objects, not %s", ty.FriendlyName())
	}
	return items, nil
}

// paretoRows turns items, the rows attribute (paretoItems), into report
// rows, in the order the variants were given (the order of the node's
// upstreams). simulated is true when a result says "simulated": true.
func paretoRows(n *Node, a paretoArgs, items []paretoItem) (rows []report.Row, simulated bool, err error) {
	if len(items) == 0 {
		// Nothing to compare: an empty table would be written over the
		// last comparison's.
		return nil, false, fmt.Errorf("rows holds no variant: there is nothing to compare, and nothing was written")
	}
	want := map[string]bool{a.X: true, a.Y: true}
	for _, c := range a.Columns {
		want[c] = true
	}
	rows = make([]report.Row, 0, len(items))
	for i, it := range items {
		r, sim, err := paretoRow(it.key, it.val, want)
		r.Simulated = sim
		if err != nil {
			if it.key != "" {
				return nil, false, fmt.Errorf("rows[%q]: %w", it.key, err)
			}
			return nil, false, fmt.Errorf("rows[%d]: %w", i, err)
		}
		rows = append(rows, r)
		simulated = simulated || sim
	}
	if err := checkRowNames(items, rows); err != nil {
		return nil, false, err
	}
	if v, given := n.Args["columns"]; given && !v.IsNull() {
		// The columns named (the default set shows what results hold).
		return rows, simulated, checkColumns(rows, a.Columns)
	}
	return rows, simulated, nil
}

// checkRowNames refuses rows given as a list of results whose names do
// not tell the variants apart: a row without a name, or two with one.
func checkRowNames(items []paretoItem, rows []report.Row) error {
	seen := map[string]int{}
	for i, r := range rows {
		if items[i].key != "" {
			continue // an instance: its key names it
		}
		if r.Name == "" && !r.Failed {
			return fmt.Errorf("rows[%d] has no name: each result in a rows list names its variant (\"name\": \"...\")", i)
		}
		if j, dup := seen[r.Name]; dup && r.Name != "" {
			return fmt.Errorf("rows[%d] and rows[%d] are both named %q: each variant is one row", j, i, r.Name)
		}
		seen[r.Name] = i
	}
	return nil
}

// checkColumns refuses a column given that no finished variant's result
// holds: a misspelt metric would be a column of blanks.
func checkColumns(rows []report.Row, columns []string) error {
	for _, c := range columns {
		if c == report.ColName || c == report.ColContentHash {
			continue
		}
		live, held := false, false
		for _, r := range rows {
			if r.Failed {
				continue
			}
			live = true
			if v, ok := r.Value(c); ok {
				if f, isNum := v.(float64); !isNum || !math.IsNaN(f) {
					held = true
					break
				}
			}
		}
		if live && !held {
			return fmt.Errorf("the column %q is in no finished variant's result (they hold: %s): it would be a column of blanks; name a field they hold", c, strings.Join(resultFields(rows), ", "))
		}
	}
	return nil
}

// unreadableAxes says, for each finished variant whose result does not
// hold x or y as a number (a string such as "0.50", null, a misspelt or
// missing key), which variant, whose result file (the upstream that
// declares it) and what the field holds; rerun lists those upstreams'
// addresses. Such a variant cannot be placed in the plane, and the front
// of the others is not the batch's front: it may dominate them all. A
// metric column of the table (pass@16, e2e_time) that a result holds as
// something else than a number ("0.9333", true) is said too: the table
// would show the figure blank. items are the rows attribute (paretoItems).
func unreadableAxes(n *Node, a paretoArgs, items []paretoItem) (bad, rerun []string) {
	axes := []string{a.X}
	if a.Y != a.X {
		axes = append(axes, a.Y)
	}
	var metrics []string // the table's metric columns, past the axes
	for _, c := range a.Columns {
		if slices.Contains(ownMetrics, c) && !slices.Contains(axes, c) {
			metrics = append(metrics, c)
		}
	}
	from := upstreamAddresses(n)
	for i, it := range items {
		fields, finished := finishedResult(it.val)
		if !finished {
			continue
		}
		var what []string
		for _, m := range axes {
			if _, isNum := ctyNumber(fields[m]); !isNum {
				what = append(what, describeField(fields, m))
			}
		}
		for _, m := range metrics {
			if fv, ok := fields[m]; ok && !fv.IsNull() {
				if _, isNum := ctyNumber(fv); !isNum {
					what = append(what, describeField(fields, m))
				}
			}
		}
		if len(what) == 0 {
			continue
		}
		name := it.key
		if name == "" {
			name = ctyString(fields["name"])
		}
		where := fmt.Sprintf("rows[%d]", i)
		if name != "" {
			where = fmt.Sprintf("variant %q", name)
		}
		src := "its result"
		if addr := from[it.key]; it.key != "" && addr != "" {
			src = "the result file of " + addr
			rerun = append(rerun, addr)
		}
		bad = append(bad, fmt.Sprintf("%s: %s %s", where, src, strings.Join(what, " and ")))
	}
	return bad, rerun
}

// finishedResult returns the result object of a row that finished (an
// instance with status "ok", or a plain result object).
func finishedResult(v cty.Value) (map[string]cty.Value, bool) {
	if v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return nil, false
	}
	attrs := v.AsValueMap()
	result := v
	if st, ok := attrs["status"]; ok && attrs["result"] != cty.NilVal {
		if ctyString(st) != "ok" {
			return nil, false
		}
		result = attrs["result"]
	}
	if result.IsNull() || !(result.Type().IsObjectType() || result.Type().IsMapType()) {
		return nil, false
	}
	return result.AsValueMap(), true
}

// describeField says what a result holds for a field that is not a
// number: `holds "mean@16" as a string ("0.50"), not a number`, or
// `has no "throughput" (it holds: ...)`.
func describeField(fields map[string]cty.Value, name string) string {
	v, ok := fields[name]
	if !ok {
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, strconv.Quote(k))
		}
		sort.Strings(keys)
		return fmt.Sprintf("has no %q (it holds %s)", name, strings.Join(keys, ", "))
	}
	var what string
	switch ty := v.Type(); {
	case v.IsNull():
		what = "null"
	case !v.IsKnown():
		what = "an unknown value"
	case ty.Equals(cty.String):
		s := v.AsString()
		if len(s) > 40 {
			s = strings.ToValidUTF8(s[:40], "") + "…"
		}
		what = fmt.Sprintf("a string (%q)", s)
	case ty.Equals(cty.Bool):
		what = fmt.Sprintf("a bool (%t)", v.True())
	case ty.IsObjectType() || ty.IsMapType():
		what = "an object"
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		what = "a list"
	default:
		what = ty.FriendlyName()
	}
	return fmt.Sprintf("holds %q as %s, not a number", name, what)
}

// upstreamAddresses maps each upstream instance's key to its address.
func upstreamAddresses(n *Node) map[string]string {
	out := map[string]string{}
	for _, u := range n.Upstreams {
		if a, err := addrs.Parse(u.Address); err == nil && a.Keyed {
			out[a.Key] = u.Address
		}
	}
	return out
}

// upstreamOrder maps each upstream's instance key to its position: the
// order of the for_each the rows come from.
func upstreamOrder(n *Node) map[string]int {
	out := map[string]int{}
	for _, u := range n.Upstreams {
		a, err := addrs.Parse(u.Address)
		if err != nil || !a.Keyed {
			continue
		}
		if _, seen := out[a.Key]; !seen {
			out[a.Key] = len(out)
		}
	}
	return out
}

// paretoRow reads one instance object ({key, status, class, message,
// result, ...}) or one plain result object.
func paretoRow(key string, v cty.Value, want map[string]bool) (report.Row, bool, error) {
	r := report.Row{Name: key}
	if v.IsNull() {
		return r, false, fmt.Errorf("want a result object (or an instance of a stage), got null")
	}
	if !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return r, false, fmt.Errorf("want an object, got %s", v.Type().FriendlyName())
	}
	attrs := v.AsValueMap()
	result := v
	if st, ok := attrs["status"]; ok && attrs["result"] != cty.NilVal {
		// An instance object.
		status := ctyString(st)
		result = attrs["result"]
		r.Launch = rowLaunch(attrs["launch"])
		if status != "ok" {
			r.Failed = true
			reason := status
			if c := ctyString(attrs["class"]); c != "" && c != "upstream" {
				reason = c
			}
			if m := ctyString(attrs["message"]); m != "" {
				reason += ": " + m
			}
			r.FailReason = reason
			return r, false, nil
		}
	}
	if result.IsNull() || !(result.Type().IsObjectType() || result.Type().IsMapType()) {
		r.Failed = true
		r.FailReason = "no result"
		return r, false, nil
	}
	fields := result.AsValueMap()
	sim := false
	if s, ok := fields["simulated"]; ok && s.IsKnown() && !s.IsNull() && s.Type().Equals(cty.Bool) {
		sim = s.True()
	}
	if r.Name == "" {
		r.Name = ctyString(fields["name"])
	}
	r.ContentHash = ctyString(fields[report.ColContentHash])
	set := map[string]*float64{
		report.ColMean16: &r.Mean16, report.ColPass16: &r.Pass16,
		report.ColThroughput: &r.Throughput, report.ColE2ETime: &r.E2ETime,
	}
	for _, m := range ownMetrics {
		*set[m] = math.NaN()
		if f, ok := ctyNumber(fields[m]); ok {
			*set[m] = f
		}
	}
	for name := range want {
		if _, own := set[name]; own || name == report.ColName || name == report.ColContentHash {
			continue
		}
		fv, ok := fields[name]
		if !ok || fv.IsNull() {
			continue
		}
		if r.Extra == nil {
			r.Extra = map[string]any{}
		}
		if f, ok := ctyNumber(fv); ok {
			r.Extra[name] = f
		} else if s, err := convert.Convert(fv, cty.String); err == nil && !s.IsNull() {
			r.Extra[name] = s.AsString()
		}
	}
	return r, sim, nil
}

// rowLaunch reads an instance's launch attribute (null for nodes that
// are not variants of a batch).
func rowLaunch(v cty.Value) *report.Launch {
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() || !v.Type().IsObjectType() {
		return nil
	}
	v, _ = v.UnmarkDeep()
	attr := func(name string) cty.Value {
		if v.Type().HasAttribute(name) {
			return v.GetAttr(name)
		}
		return cty.NilVal
	}
	num := func(name string) int {
		f, _ := ctyNumber(attr(name))
		return int(f)
	}
	l := &report.Launch{
		RunID: ctyString(attr("run_id")), Batch: ctyString(attr("batch")),
		Started: ctyString(attr("started")), BatchStarted: ctyString(attr("batch_started")),
		GPU: num("gpu"), Wave: num("wave"), InFlight: num("in_flight"),
		Launched: num("launched"), BatchSize: num("batch_size"),
	}
	if p := attr("partial"); p != cty.NilVal && !p.IsNull() && p.Type().Equals(cty.Bool) {
		l.Partial = p.True()
	}
	return l
}

func ctyString(v cty.Value) string {
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() {
		return ""
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil || s.IsNull() {
		return ""
	}
	return s.AsString()
}

func ctyNumber(v cty.Value) (float64, bool) {
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() || !v.Type().Equals(cty.Number) {
		return 0, false
	}
	f, _ := v.AsBigFloat().Float64()
	return f, true
}

// checkAxes fails when some variant has results but none holds x or y as
// a number: most likely a misspelt metric.
func checkAxes(rows []report.Row, x, y string) error {
	live := false
	for _, r := range rows {
		live = live || !r.Failed
	}
	if !live {
		return nil
	}
	for _, m := range []string{x, y} {
		found := false
		for _, r := range rows {
			if f, ok := r.Number(m); ok && !r.Failed && !math.IsNaN(f) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%w: no variant's result holds %q as a number", report.ErrUnknownMetric, m)
		}
	}
	return nil
}

// resultFields lists the metrics the rows hold, for an error message.
func resultFields(rows []report.Row) []string {
	seen := map[string]bool{}
	for _, r := range rows {
		if r.Failed {
			continue
		}
		for _, m := range ownMetrics {
			if f, ok := r.Number(m); ok && !math.IsNaN(f) {
				seen[m] = true
			}
		}
		for k := range r.Extra {
			seen[k] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"nothing"}
	}
	return out
}
