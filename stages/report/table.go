package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Column is one column of a table: a header and how to get a row's cell.
type Column struct {
	Name string
	// Value returns the cell's value (a string or a number) and whether the
	// row has one; a missing value renders empty (null in JSON).
	Value func(Row) (any, bool)
	// Digits is the number of decimals shown for a number in Markdown;
	// negative means as many as needed. TSV and JSON keep full precision.
	Digits int
}

// Col returns the column for a Row field or Extra key, with the precision
// its metric is printed with: mean@16 and pass@16 to 4 digits, throughput
// and e2e_time to 1, any other as it is.
func Col(name string) Column {
	digits := -1
	switch name {
	case ColMean16, ColPass16:
		digits = 4
	case ColThroughput, ColE2ETime:
		digits = 1
	}
	return Column{Name: name, Value: func(r Row) (any, bool) { return r.Value(name) }, Digits: digits}
}

// Columns returns the columns for the given names (see Col).
func Columns(names ...string) []Column {
	cols := make([]Column, len(names))
	for i, n := range names {
		cols[i] = Col(n)
	}
	return cols
}

// DefaultColumns are the seed-000 comparison columns: name, content_hash,
// mean@16, pass@16, throughput, e2e_time.
func DefaultColumns() []Column {
	return Columns(ColName, ColContentHash, ColMean16, ColPass16, ColThroughput, ColE2ETime)
}

// ParetoColumn is the header of the column every table ends with: "front"
// for a non-dominated row, "dominated", "FAILED: reason", or "n/a" for a row
// whose X or Y is not a number (only when the Table names X and Y).
const ParetoColumn = "pareto"

// Table is a comparison table: rows, the indices of those on the Pareto
// front (see Front and RowFront) and the columns to show.
type Table struct {
	Rows  []Row
	Front []int
	// Columns default to DefaultColumns.
	Columns []Column
	// X and Y optionally name the plane the front was computed on; they
	// appear in the JSON and let the pareto column tell "n/a" (not
	// comparable) from "dominated".
	X, Y string
	// Simulated marks every figure as a simulated workload's: Markdown
	// says so above the table, TSV in a last column, JSON in a field, so
	// that a copied file still says it.
	Simulated bool
}

// SimulatedNote is the line above a table of simulated results.
const SimulatedNote = "SIMULATED results: every figure below comes from simulated workloads, not from a model or a GPU."

// mixedSimulation names the finished rows whose figures are simulated
// when only some are (Row.Simulated); nil when all or none are, or when
// no row says (the table's Simulated then speaks for every row).
func (t Table) mixedSimulation() []string {
	var sim []string
	live := 0
	for _, r := range t.Rows {
		if r.Failed {
			continue
		}
		live++
		if r.Simulated {
			sim = append(sim, r.Name)
		}
	}
	if len(sim) == 0 || len(sim) == live {
		return nil
	}
	return sim
}

// simulatedNote is the line above the table: SimulatedNote, or, when
// only some rows are simulated, which.
func (t Table) simulatedNote() string {
	if mixed := t.mixedSimulation(); mixed != nil {
		return fmt.Sprintf("SIMULATED results in some rows: the figures of %s come from simulated workloads, not from a model or a GPU; the other rows' do not.", strings.Join(mixed, ", "))
	}
	return SimulatedNote
}

// Markdown writes the default table (DefaultColumns) as GitHub Markdown.
func Markdown(w io.Writer, rows []Row, front []int) error {
	return Table{Rows: rows, Front: front}.Markdown(w)
}

// TSV writes the default table as tab-separated values.
func TSV(w io.Writer, rows []Row, front []int) error {
	return Table{Rows: rows, Front: front}.TSV(w)
}

// JSON writes the default table as JSON:
// {"columns": [...], "rows": [...], "pareto_front": [names], "failed": [names]}.
func JSON(w io.Writer, rows []Row, front []int) error {
	return Table{Rows: rows, Front: front}.JSON(w)
}

func (t Table) columns() []Column {
	if t.Columns == nil {
		return DefaultColumns()
	}
	return t.Columns
}

// status is the pareto cell of row i.
func (t Table) status(i int, onFront map[int]bool) string {
	r := t.Rows[i]
	switch {
	case r.Failed:
		reason := r.FailReason
		if reason == "" {
			reason = "no reason given"
		}
		return "FAILED: " + reason
	case onFront[i]:
		return "front"
	case t.X != "" && t.Y != "" && !comparable(r, t.X, t.Y):
		return "n/a"
	}
	return "dominated"
}

func comparable(r Row, x, y string) bool {
	xv, okx := r.Number(x)
	yv, oky := r.Number(y)
	return okx && oky && !math.IsNaN(xv) && !math.IsNaN(yv)
}

// cell is one rendered value: text, and whether it is a number (right-aligned
// in Markdown).
type cell struct {
	text    string
	numeric bool
}

// cells renders every row; a failed row's numbers render as "-", since they
// are not results.
func (t Table) cells(markdown bool) ([]string, [][]cell, error) {
	onFront, err := frontSet(t.Rows, t.Front)
	if err != nil {
		return nil, nil, err
	}
	cols := t.columns()
	launches, launchOf := t.launches()
	header := make([]string, 0, len(cols)+1)
	for _, c := range cols {
		header = append(header, c.Name)
	}
	if len(launches) > 0 {
		header = append(header, launchHeader(markdown)...)
	}
	header = append(header, ParetoColumn)
	body := make([][]cell, len(t.Rows))
	for i, r := range t.Rows {
		line := make([]cell, 0, len(cols)+1)
		for _, c := range cols {
			v, ok := c.Value(r)
			if !ok || v == nil {
				line = append(line, cell{})
				continue
			}
			if f, isNum := toFloat(v); isNum {
				text := "-"
				if !r.Failed {
					text = formatFloat(f, c.Digits, markdown)
				}
				line = append(line, cell{text: text, numeric: true})
				continue
			}
			line = append(line, cell{text: fmt.Sprint(v)})
		}
		if len(launches) > 0 {
			line = append(line, launchCells(r, launchOf[i], markdown)...)
		}
		line = append(line, cell{text: t.status(i, onFront)})
		body[i] = line
	}
	return header, body, nil
}

func formatFloat(f float64, digits int, markdown bool) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case markdown && digits >= 0 && f != 0 && (math.Abs(f) < 0.5*math.Pow10(-digits) || math.Abs(f) >= 1e15):
		// Fixed digits would show it as 0.0000, or as 300 digits that
		// break the column: four significant digits with an exponent.
		return strconv.FormatFloat(f, 'g', 4, 64)
	case markdown && digits >= 0:
		return strconv.FormatFloat(f, 'f', digits, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Markdown writes the table as GitHub Markdown, columns padded to line up
// in a terminal, numbers right-aligned. "|" in a cell is escaped; line
// breaks and tabs become spaces.
func (t Table) Markdown(w io.Writer) error {
	header, body, err := t.cells(true)
	if err != nil {
		return err
	}
	for i := range header {
		header[i] = escapeCell(header[i])
	}
	for _, line := range body {
		for j := range line {
			line[j].text = escapeCell(line[j].text)
		}
	}
	width := make([]int, len(header))
	numeric := make([]bool, len(header))
	for j, h := range header {
		width[j] = max(3, utf8.RuneCountInString(h))
		numeric[j] = len(body) > 0
		for _, line := range body {
			width[j] = max(width[j], utf8.RuneCountInString(line[j].text))
			if line[j].text != "" && !line[j].numeric {
				numeric[j] = false
			}
		}
	}
	var b bytes.Buffer
	if t.Simulated {
		b.WriteString(t.simulatedNote() + "\n\n")
	}
	writeLine := func(cells []string, right []bool) {
		b.WriteString("|")
		for j, c := range cells {
			pad := strings.Repeat(" ", width[j]-utf8.RuneCountInString(c))
			if right[j] {
				b.WriteString(" " + pad + c + " |")
			} else {
				b.WriteString(" " + c + pad + " |")
			}
		}
		b.WriteString("\n")
	}
	writeLine(header, make([]bool, len(header)))
	rule := make([]string, len(header))
	for j := range rule {
		if numeric[j] {
			rule[j] = strings.Repeat("-", width[j]-1) + ":"
		} else {
			rule[j] = strings.Repeat("-", width[j])
		}
	}
	writeLine(rule, make([]bool, len(header)))
	for _, line := range body {
		texts := make([]string, len(line))
		for j, c := range line {
			texts[j] = c.text
		}
		writeLine(texts, numeric)
	}
	if ls, _ := t.launches(); len(ls) > 0 {
		b.WriteString(launchLegend(ls))
	}
	_, err = w.Write(b.Bytes())
	return err
}

// TSV writes the table as tab-separated values with a header line. Numbers
// keep full precision; a tab, line break or backslash in a cell is written
// as \t, \n, \r or \\.
func (t Table) TSV(w io.Writer) error {
	if t.Simulated {
		mixed := t.mixedSimulation() != nil
		t.Columns = append(slices.Clone(t.columns()), Column{Name: "simulated", Value: func(r Row) (any, bool) {
			if mixed && !r.Simulated {
				return "no", true
			}
			return "yes", true
		}, Digits: -1})
	}
	header, body, err := t.cells(false)
	if err != nil {
		return err
	}
	esc := strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)
	var b bytes.Buffer
	for j, h := range header {
		if j > 0 {
			b.WriteByte('\t')
		}
		b.WriteString(esc.Replace(h))
	}
	b.WriteByte('\n')
	for _, line := range body {
		for j, c := range line {
			if j > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(esc.Replace(c.text))
		}
		b.WriteByte('\n')
	}
	_, err = w.Write(b.Bytes())
	return err
}

// JSON writes the table as one indented JSON object:
//
//	{"x": ..., "y": ...,                       (when the Table names them)
//	 "columns": [names],
//	 "rows": [{<column>: value, ..., "pareto": bool, "failed": bool,
//	           "fail_reason": "...", "extra": {...},
//	           "launch": {...}, "partial_batch": bool}],   (when rows have a Launch)
//	 "pareto_front": [names], "failed": [names],
//	 "launches": [{"index", "run_id", "batch", "batch_started",
//	               "launched", "batch_size", "partial"}]}  (when rows have a Launch)
//
// Row objects keep the column order. A number that JSON cannot carry (NaN,
// ±Inf) and every number of a failed row are null.
func (t Table) JSON(w io.Writer) error {
	onFront, err := frontSet(t.Rows, t.Front)
	if err != nil {
		return err
	}
	cols := t.columns()
	launches, _ := t.launches()
	var b bytes.Buffer
	obj := &orderedObject{b: &b}
	if t.Simulated {
		obj.field("simulated", true)
	}
	if t.X != "" || t.Y != "" {
		obj.field("x", t.X)
		obj.field("y", t.Y)
	}
	names := make([]string, len(cols))
	for j, c := range cols {
		names[j] = c.Name
	}
	obj.field("columns", names)
	obj.key("rows")
	b.WriteByte('[')
	frontNames, failedNames := []string{}, []string{}
	mixed := t.Simulated && t.mixedSimulation() != nil
	for i, r := range t.Rows {
		if i > 0 {
			b.WriteByte(',')
		}
		row := &orderedObject{b: &b}
		for _, c := range cols {
			v, ok := c.Value(r)
			if f, isNum := toFloat(v); ok && isNum {
				if r.Failed || math.IsNaN(f) || math.IsInf(f, 0) {
					v = nil
				} else {
					v = f
				}
			}
			if !ok {
				v = nil
			}
			row.field(c.Name, v)
		}
		row.field("pareto", onFront[i])
		if mixed {
			row.field("simulated", r.Simulated)
		}
		row.field("failed", r.Failed)
		if r.Failed {
			row.field("fail_reason", r.FailReason)
			failedNames = append(failedNames, r.Name)
		}
		if onFront[i] {
			frontNames = append(frontNames, r.Name)
		}
		if len(r.Extra) > 0 {
			row.field("extra", sanitize(r.Extra))
		}
		if len(launches) > 0 {
			row.field("launch", r.Launch)
			row.field("partial_batch", r.Launch != nil && r.Launch.Partial)
		}
		row.end()
	}
	b.WriteByte(']')
	obj.field("pareto_front", frontNames)
	obj.field("failed", failedNames)
	if len(launches) > 0 {
		obj.field("launches", launches)
	}
	obj.end()
	if obj.err != nil {
		return fmt.Errorf("report: %w", obj.err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

// sanitize replaces numbers JSON cannot carry with null, recursively.
func sanitize(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil
		}
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = sanitize(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = sanitize(e)
		}
		return s
	}
	return v
}

// orderedObject writes a JSON object whose keys keep the order they are
// written in.
type orderedObject struct {
	b       *bytes.Buffer
	started bool
	err     error
}

func (o *orderedObject) key(k string) {
	if !o.started {
		o.b.WriteByte('{')
		o.started = true
	} else {
		o.b.WriteByte(',')
	}
	kb, _ := json.Marshal(k)
	o.b.Write(kb)
	o.b.WriteByte(':')
}

func (o *orderedObject) field(k string, v any) {
	o.key(k)
	vb, err := json.Marshal(v)
	if err != nil {
		if o.err == nil {
			o.err = fmt.Errorf("field %q: %w", k, err)
		}
		vb = []byte("null")
	}
	o.b.Write(vb)
}

func (o *orderedObject) end() {
	if !o.started {
		o.b.WriteByte('{')
	}
	o.b.WriteByte('}')
}
