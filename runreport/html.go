package runreport

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairn-run/cairn/engine/store"
)

//go:embed assets/report.html assets/report.css assets/report.js
var assets embed.FS

// tailBytes is how much of the end of each log a node row shows.
const tailBytes = 4 << 10

// maxTails bounds the log tails a page carries (a failed node's always
// are): a run of 100,000 nodes keeps its page small.
const maxTails = 16 << 20

// maxItems is the most items an evaluation's table carries.
const maxItems = 200_000

// page is the data the page's script reads.
type page struct {
	Run       Run      `json:"run"`
	T0        int64    `json:"t0"` // the run's start, ms since the epoch
	Now       int64    `json:"now"`
	Generated string   `json:"generated"`
	Lanes     []string `json:"lanes"`
	Cols      []string `json:"cols"`
	// Nodes are the node rows by column (cols): a list of the column's
	// values; for a column of one value but in a few rows, {fill, at, v};
	// for one of few distinct strings, {dict, idx} (see column). Columns parse in a fraction
	// of the time rows do (#32: a page of 100,000 nodes opens in under
	// 3 s).
	Nodes map[string]any `json:"nodes"`
	Count int            `json:"count"`
	// Bars are the timeline's bars, barWidth numbers each (node, lane,
	// start ms, end ms, attempt, state, peak GPU MiB, class: the
	// attempt's own, an index in Classes), in one flat list, sorted by
	// lane and start.
	Bars   []float64 `json:"bars"`
	States []string  `json:"states"`
	// Classes are the attempts' failure classes; the first is "", an
	// attempt without one.
	Classes   []string         `json:"classes"`
	Batches   []*Batch         `json:"batches"`
	Stages    []*StageUse      `json:"stages"`
	Artifacts []*Artifact      `json:"artifacts"`
	Charges   []*Charge        `json:"charges"`
	Ledger    []*LedgerAttempt `json:"ledger"`
	Items     []itemsRef       `json:"items"`
	// GPUMem are the GPUs' memory series: lane, node, attempt, then
	// [ms since t0, MiB] pairs.
	GPUMem [][]any `json:"gpumem"`
	Trace  string  `json:"trace,omitempty"`
}

type itemsRef struct {
	Node  int    `json:"node"`
	Path  string `json:"path"`
	Count int    `json:"count"`
	Blob  string `json:"blob"`
}

// barWidth is how many numbers a timeline bar is (page.Bars).
const barWidth = 8

var states = []string{"ok", "cached", "failed", "skipped", "running", "interrupted", "planned"}

// cols are the node row's fields, in order.
var cols = []string{"address", "kind", "state", "class", "reason", "key", "start", "end", "duration", "queue_wait", "peak_rss", "peak_gpu", "gpu_seconds", "attempts", "retries", "gpus", "wave", "message", "job"}

// WriteHTML writes the report's page. cache gives evaluations' items
// (nil: none). trace names the trace file shown in the page ("" none).
func (r *Report) WriteHTML(w io.Writer, cache *store.Cache, trace string) error {
	p := &page{Run: r.Run, States: states, Cols: cols, Batches: r.Batches, Stages: r.Stages, Artifacts: r.Artifacts, Charges: r.Charges, Ledger: r.Ledger, Trace: trace}
	p.Generated = time.Now().UTC().Format("2006-01-02 15:04:05 UTC")
	t0 := r.timeZero()
	p.T0 = t0.UnixMilli()
	// The timeline's end: the run's, else what endOf gives an attempt
	// without one (now while the run goes, else its last record).
	now := r.Run.End
	if now.IsZero() {
		now = r.endOf(&Attempt{Start: t0})
	}
	p.Now = now.Sub(t0).Milliseconds()
	lanes, laneNames := r.lanes()
	// Never null in the page: a run whose nodes were all cached has no
	// lane and no bar.
	p.Lanes = append([]string{}, laneNames...)
	// Nor is a run's list of stages: a run of no nodes (an empty
	// for_each) has none.
	p.Stages = append([]*StageUse{}, r.Stages...)
	p.Count = len(r.Nodes)
	tails := r.nodeRows(p, lanes, t0)
	r.gpuMemory(p, lanes, t0)
	blobs, err := r.itemBlobs(p, cache)
	if err != nil {
		return err
	}
	return r.render(w, p, tails, blobs)
}

// timeZero is the run's start, or else its earliest attempt's: the
// page's times count from it.
func (r *Report) timeZero() time.Time {
	t0 := r.Run.Start
	if t0.IsZero() {
		for _, n := range r.Nodes {
			for _, t := range n.Tries {
				if !t.Start.IsZero() && (t0.IsZero() || t.Start.Before(t0)) {
					t0 = t.Start
				}
			}
		}
	}
	return t0
}

// lanes are the timeline's lanes in their order, and each one's index.
func (r *Report) lanes() (map[string]int, []string) {
	lanes := map[string]int{}
	var laneNames []string
	for _, n := range r.Nodes {
		for _, t := range n.Tries {
			for _, l := range tryLanes(t) {
				if _, ok := lanes[l]; !ok {
					lanes[l] = 0
					laneNames = append(laneNames, l)
				}
			}
		}
	}
	sort.Slice(laneNames, func(i, j int) bool { return laneLess(laneNames[i], laneNames[j]) })
	for i, l := range laneNames {
		lanes[l] = i
	}
	return lanes, laneNames
}

// nodeRows fills the page's node columns and timeline bars (flat, sorted
// by lane, then start), and returns the log tails by node row.
func (r *Report) nodeRows(p *page, lanes map[string]int, t0 time.Time) map[int][2]string {
	rel := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t.Sub(t0).Milliseconds()
	}
	columns := make([][]any, len(cols))
	for c := range columns {
		columns[c] = make([]any, 0, len(r.Nodes))
	}
	type bar struct {
		lane  int
		start int64
		v     [barWidth]float64
	}
	var bars []bar
	stateCode := map[string]float64{}
	for i, s := range states {
		stateCode[s] = float64(i)
	}
	p.Classes = []string{""}
	classCode := map[string]float64{"": 0}
	classOf := func(c string) float64 {
		k, ok := classCode[c]
		if !ok {
			k = float64(len(p.Classes))
			classCode[c] = k
			p.Classes = append(p.Classes, c)
		}
		return k
	}
	tails := map[int][2]string{}
	tailed := 0
	for i, n := range r.Nodes {
		job := ""
		if k := len(n.Tries); k > 0 && n.Tries[k-1].Job != "" {
			job = n.Tries[k-1].Executor + ":" + n.Tries[k-1].Job
		}
		for c, v := range []any{n.Addr, n.Kind, n.State, n.Class, n.Reason, keyPrefix(n.Key),
			rel(n.Start), rel(n.End), round3(n.Duration), round3(n.QueueWait), round1(n.PeakRSS), round1(n.PeakGPU), round3(n.GPUSeconds),
			n.Attempts, n.Retries, intsText(n.GPUs), n.Wave, n.Message, job} {
			columns[c] = append(columns[c], v)
		}
		for _, t := range n.Tries {
			if t.Start.IsZero() {
				continue
			}
			end := r.endOf(t)
			st := t.State
			if st == "ok" && n.State == "cached" {
				st = "cached"
			}
			for _, l := range tryLanes(t) {
				ms := t.Start.Sub(t0).Milliseconds()
				bars = append(bars, bar{lanes[l], ms, [barWidth]float64{float64(i), float64(lanes[l]), float64(ms), float64(end.Sub(t0).Milliseconds()), float64(t.N), stateCode[st], round1(t.PeakGPU), classOf(t.Class)}})
			}
		}
		if n.State == "failed" || n.State == "interrupted" || tailed < maxTails {
			out, errs := tailsOf(n.Logs)
			if out != "" || errs != "" {
				tails[i] = [2]string{out, errs}
				tailed += len(out) + len(errs)
			}
		}
	}
	sort.SliceStable(bars, func(i, j int) bool {
		if bars[i].lane != bars[j].lane {
			return bars[i].lane < bars[j].lane
		}
		return bars[i].start < bars[j].start
	})
	p.Bars = make([]float64, 0, barWidth*len(bars))
	for _, b := range bars {
		p.Bars = append(p.Bars, b.v[:]...)
	}
	p.Nodes = make(map[string]any, len(cols))
	for c, name := range cols {
		p.Nodes[name] = column(columns[c])
	}
	return tails
}

// gpuMemory adds each GPU's memory over time, on its lane, with the node
// that held it.
func (r *Report) gpuMemory(p *page, lanes map[string]int, t0 time.Time) {
	nodeIndex := make(map[string]int, len(r.Nodes))
	for i, n := range r.Nodes {
		nodeIndex[n.Addr] = i
	}
	for _, g := range r.GPUMemory {
		li, ok := lanes[laneGPU(g.GPU)]
		if !ok {
			continue
		}
		pts := make([]float64, 0, 2*len(g.T))
		for i, t := range g.T {
			pts = append(pts, float64(t.Sub(t0).Milliseconds()), round1(g.MiB[i]))
		}
		node, ok := nodeIndex[g.Node]
		if !ok {
			node = -1
		}
		p.GPUMem = append(p.GPUMem, []any{li, node, g.Attempt, pts})
	}
}

// itemBlobs packs each evaluation's items, read from the cache, into a
// blob of its own, loaded when its node is opened.
func (r *Report) itemBlobs(p *page, cache *store.Cache) ([]string, error) {
	var blobs []string
	if cache == nil {
		return nil, nil
	}
	for i, n := range r.Nodes {
		if n.scores == "" || n.record == nil {
			continue
		}
		items, err := readItems(cache, n)
		if err != nil || len(items) == 0 {
			continue
		}
		b, err := packJSON(items)
		if err != nil {
			return nil, err
		}
		id := "cairn-items-" + strconv.Itoa(len(blobs))
		blobs = append(blobs, blobTag(id, b))
		p.Items = append(p.Items, itemsRef{Node: i, Path: n.scores, Count: len(items), Blob: id})
	}
	return blobs, nil
}

// render writes the page: the template with its styles, script and data.
func (r *Report) render(w io.Writer, p *page, tails map[int][2]string, blobs []string) error {
	data, err := packJSON(p)
	if err != nil {
		return err
	}
	logs, err := packJSON(tails)
	if err != nil {
		return err
	}
	tmpl, _ := assets.ReadFile("assets/report.html")
	css, _ := assets.ReadFile("assets/report.css")
	js, _ := assets.ReadFile("assets/report.js")
	title := "cairn run " + r.Run.ID
	if r.Run.Pipeline != "" {
		title = r.Run.Pipeline + " · " + title
	}
	out := string(tmpl)
	out = strings.Replace(out, "{{TITLE}}", html.EscapeString(title), 1)
	out = strings.Replace(out, "{{CSS}}", string(css), 1)
	out = strings.Replace(out, "{{DATA}}", blobTag("cairn-data", data)+blobTag("cairn-logs", logs)+strings.Join(blobs, ""), 1)
	out = strings.Replace(out, "{{JS}}", strings.ReplaceAll(string(js), "</script", `<\/script`), 1)
	_, err = io.WriteString(w, out)
	return err
}

// column is a column of the page's node rows: when nine in ten rows or
// more hold the same value (a run's nodes mostly ok, without a class, on
// no GPU), {fill, at, v}: that value, and the rows that differ with their
// values; else, when they are strings of few distinct values (a kind, a
// plan reason), {dict, idx}; else the values. A run of no nodes has
// columns of no rows: those stay an empty list, since {dict, idx} of no
// words would be {dict: null}, which the page cannot tell from {fill}.
func column(vals []any) any {
	if len(vals) == 0 {
		return []any{}
	}
	counts := map[any]int{}
	var common any
	for _, v := range vals {
		counts[v]++
		if counts[v] > counts[common] {
			common = v
		}
	}
	if len(vals) > 0 && counts[common]*10 >= len(vals)*9 {
		at, vs := []int{}, []any{}
		for i, v := range vals {
			if v != common {
				at, vs = append(at, i), append(vs, v)
			}
		}
		return map[string]any{"fill": common, "at": at, "v": vs}
	}
	dict := map[string]int{}
	var words []string
	idx := make([]int, len(vals))
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			return vals
		}
		k, ok := dict[s]
		if !ok {
			if len(words) > len(vals)/4+16 {
				return vals
			}
			k = len(words)
			dict[s] = k
			words = append(words, s)
		}
		idx[i] = k
	}
	return map[string]any{"dict": words, "idx": idx}
}

// pageKey is how much of a key the page carries: enough for `cairn show
// KEY` (8 hex digits or more), a quarter of the page's data less at
// 100,000 nodes than whole keys.
const pageKey = 16

func keyPrefix(k string) string { return k[:min(len(k), pageKey)] }

// tryLanes are the lanes an attempt is drawn in: each GPU it held, or
// its slot.
func tryLanes(t *Attempt) []string {
	if len(t.GPUs) <= 1 {
		if t.Lane == "" {
			return nil
		}
		return []string{t.Lane}
	}
	ls := make([]string, len(t.GPUs))
	for i, g := range t.GPUs {
		ls[i] = laneGPU(g)
	}
	return ls
}

// laneLess orders lanes: GPUs by index, then CPU slots, then Slurm slots.
func laneLess(a, b string) bool {
	ka, na := laneKey(a)
	kb, nb := laneKey(b)
	if ka != kb {
		return ka < kb
	}
	return na < nb
}

func laneKey(l string) (int, int) {
	kind, num, _ := strings.Cut(l, " ")
	n, _ := strconv.Atoi(num)
	switch kind {
	case "gpu":
		return 0, n
	case "cpu":
		return 1, n
	}
	return 2, n
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }
func round3(x float64) float64 {
	if x < 0 {
		return x
	}
	return float64(int64(x*1000+0.5)) / 1000
}

func intsText(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// packJSON is v's JSON, gzipped and base64-encoded: the page unpacks it
// with the browser's DecompressionStream.
func packJSON(v any) (string, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err := json.NewEncoder(zw).Encode(v); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

func blobTag(id, b64 string) string {
	return `<script type="application/gzip+base64" id="` + id + `">` + b64 + "</script>\n"
}

// tailsOf reads the end of a node's stdout and stderr logs (the files
// ending .out and .err of its last attempt, or the first two).
func tailsOf(logs []string) (out, errs string) {
	for _, l := range logs {
		t := tail(l)
		switch {
		case strings.HasSuffix(l, ".err"):
			errs = t
		default:
			out = t
		}
	}
	return out, errs
}

func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(0, fi.Size()-tailBytes)
	b := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(b, off)
	s := string(b[:n])
	if off > 0 {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
		s = fmt.Sprintf("[… %d bytes before]\n", off) + s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// maxOutputRunes is how much of an item's outputs its row shows.
const maxOutputRunes = 300

// outputsText is an item's outputs as a reader wants them: a string as
// its text, an object's fields as "name: value" lines (a string field as
// its text), anything else as compact JSON, with < > & as they are (the
// scores file has them as \u003c...: its JSON is written HTML-safe). Cut
// after maxOutputRunes characters, never inside one, saying how many more
// there are.
func outputsText(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	text := func(v any) string {
		if s, ok := v.(string); ok {
			return s
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(v) != nil {
			return ""
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	var out string
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
		// Fields in the order the worker wrote them.
		var lines []string
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return strings.ToValidUTF8(string(raw), "\uFFFD")
			}
			var v any
			if dec.Decode(&v) != nil {
				return strings.ToValidUTF8(string(raw), "\uFFFD")
			}
			lines = append(lines, fmt.Sprint(k)+": "+text(v))
		}
		out = strings.Join(lines, "\n")
	} else {
		var v any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if d.Decode(&v) != nil {
			return strings.ToValidUTF8(string(raw), "\uFFFD")
		}
		out = text(v)
	}
	n := 0
	for i := range out {
		if n == maxOutputRunes {
			return out[:i] + fmt.Sprintf("… (%d more characters)", utf8.RuneCountInString(out[i:]))
		}
		n++
	}
	return out
}

// inSpans says whether i is in one of the spans [from, to).
func inSpans(spans [][2]int, i int) bool {
	k := sort.Search(len(spans), func(k int) bool { return spans[k][1] > i })
	return k < len(spans) && spans[k][0] <= i
}

// readItems reads an evaluation's scores file from its record: one row
// per item (id, score, outputs, error, origin: "store" for a result that
// was in the item store, "asked" for one asked of the model in this run,
// "" where the run does not say: a node taken from the cache, an item not
// done).
func readItems(cache *store.Cache, n *Node) ([][]any, error) {
	b, err := cache.OutputBytes(n.record, n.scores)
	if err != nil {
		return nil, err
	}
	var rows [][]any
	lineNo := 0
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		i := lineNo
		lineNo++
		var it struct {
			ID      string          `json:"id"`
			Score   *float64        `json:"score"`
			Outputs json.RawMessage `json:"outputs"`
			Error   string          `json:"error"`
			Failed  string          `json:"failed"`
			Pending bool            `json:"pending"`
		}
		if json.Unmarshal(line, &it) != nil {
			continue
		}
		origin := ""
		switch {
		case !n.origins || it.Pending:
		case inSpans(n.fromStore, i):
			origin = "store"
		default:
			origin = "asked"
		}
		if it.Error == "" {
			it.Error = it.Failed
		}
		outs := outputsText(it.Outputs)
		var score any
		if it.Score != nil {
			score = *it.Score
		}
		rows = append(rows, []any{it.ID, score, outs, it.Error, origin})
		if len(rows) >= maxItems {
			break
		}
	}
	return rows, nil
}
