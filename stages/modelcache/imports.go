package modelcache

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/cairn-run/cairn/stages/items"
	"github.com/cairn-run/cairn/stages/jsonpos"
)

// ItemResult is one item's result as cairn's scores files hold it (the
// evaluate kind's per-item lines): its id, its score (nil when the source
// has none) and what else the source says of it.
type ItemResult struct {
	ID      string          `json:"id"`
	Score   *float64        `json:"score"`
	Outputs json.RawMessage `json:"outputs,omitempty"`
	// Where names the item in its file ("line 12 (doc_id 3)", "sample
	// 7"), and Field what became its score (`metric "acc"`, `scorer
	// "match"`): for messages about it.
	Where string `json:"-"`
	Field string `json:"-"`
}

// ErrBadImport reports a file that is not in the format it was read as.
var ErrBadImport = errors.New("bad input")

func badImport(file string, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrBadImport, file, fmt.Sprintf(format, args...))
}

// ImportOptions choose what an import keeps.
type ImportOptions struct {
	// Metric is the lm-eval metric that becomes the score (default: the
	// first of each sample's "metrics").
	Metric string
	// Filter is the lm-eval filter whose lines are kept (default: the
	// first line's; a file with several filters needs one named).
	Filter string
	// Scorer is the Inspect scorer whose value becomes the score (default:
	// the only one; a log with several needs one named).
	Scorer string
}

// ImportLMEval reads lm-evaluation-harness's per-sample log
// (samples_<task>_<time>.jsonl, written with --log_samples).
func ImportLMEval(path string, o ImportOptions) ([]ItemResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	var out []ItemResult
	seen := map[string]bool{}
	filters := map[string]bool{}
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if line == 1 && bytes.HasPrefix(sc.Bytes(), jsonpos.BOM) {
			return nil, badImport(path, "%s", jsonpos.BOMMessage)
		}
		var s map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, badImport(path, "line %d is not a JSON object: %v", line, strings.TrimPrefix(err.Error(), "json: "))
		}
		// A key given twice (doc_id, the metric) would be read as the last.
		if amb := items.Ambiguous(sc.Bytes()); amb != nil {
			_, col := amb.LineCol(sc.Bytes())
			return nil, badImport(path, "line %d, column %d: %s", line, col, amb.Msg)
		}
		var docID json.Number
		if err := json.Unmarshal(s["doc_id"], &docID); err != nil {
			return nil, badImport(path, "line %d has no doc_id number: not an lm-eval samples file", line)
		}
		if _, err := strconv.ParseUint(strings.TrimPrefix(docID.String(), "-"), 10, 64); err != nil {
			// 0 and 0.0 would be two items.
			return nil, badImport(path, "line %d: doc_id %s is not a whole number: lm-eval numbers its samples 0, 1, 2, ...", line, docID)
		}
		var filter string
		_ = json.Unmarshal(s["filter"], &filter)
		filters[filter] = true
		if o.Filter == "" {
			o.Filter = filter
		}
		if filter != o.Filter {
			continue
		}
		metric := o.Metric
		var metrics []string
		_ = json.Unmarshal(s["metrics"], &metrics)
		if metric == "" {
			if len(metrics) == 0 {
				return nil, badImport(path, "line %d lists no metrics: name one with --metric", line)
			}
			metric = metrics[0]
		}
		raw, ok := s[metric]
		if !ok {
			return nil, badImport(path, "line %d (doc_id %s) has no metric %q (it has %s)", line, docID, metric, strings.Join(metrics, ", "))
		}
		score, err := scoreValue(raw)
		if err != nil {
			return nil, badImport(path, "line %d (doc_id %s): metric %q: %v", line, docID, metric, err)
		}
		id := docID.String()
		if seen[id] {
			return nil, badImport(path, "line %d: doc_id %s twice for filter %q", line, id, filter)
		}
		seen[id] = true
		outputs := map[string]json.RawMessage{"metric": quote(metric), "filter": quote(filter)}
		for _, k := range []string{"doc", "target", "resps", "filtered_resps", "doc_hash", "prompt_hash", "target_hash"} {
			if v, ok := s[k]; ok {
				outputs[k] = v
			}
		}
		ms := map[string]json.RawMessage{}
		for _, m := range metrics {
			if v, ok := s[m]; ok {
				ms[m] = v
			}
		}
		outputs["metrics"], _ = json.Marshal(ms)
		ob, _ := json.Marshal(outputs)
		out = append(out, ItemResult{ID: id, Score: score, Outputs: ob,
			Where: fmt.Sprintf("line %d (doc_id %s)", line, id), Field: fmt.Sprintf("metric %q", metric)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(filters) > 0 && !filters[o.Filter] {
		var names []string
		for f := range filters {
			names = append(names, fmt.Sprintf("%q", f))
		}
		sort.Strings(names)
		return nil, badImport(path, "no samples for filter %q (its filters: %s): give one of them to --filter", o.Filter, strings.Join(names, ", "))
	}
	if len(out) == 0 {
		return nil, badImport(path, "no samples")
	}
	sort.SliceStable(out, func(i, j int) bool { return idLess(out[i].ID, out[j].ID) })
	return out, nil
}

func quote(s string) json.RawMessage { b, _ := json.Marshal(s); return b }

func idLess(a, b string) bool {
	x, ex := strconv.Atoi(a)
	y, ey := strconv.Atoi(b)
	if ex == nil && ey == nil {
		return x < y
	}
	return a < b
}

// scoreValue reads a metric's or a score's value: a number, a bool (1 or
// 0), Inspect's letters (C correct 1, I incorrect 0, P partial 0.5, N no
// answer 0), or a number in a string (a JSON number: jsonpos.IsNumber);
// null is no score.
func scoreValue(raw json.RawMessage) (*float64, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	f := func(x float64) (*float64, error) { return &x, nil }
	switch x := v.(type) {
	case nil:
		return nil, nil
	case float64:
		return f(x)
	case bool:
		if x {
			return f(1)
		}
		return f(0)
	case string:
		switch x {
		case "C":
			return f(1)
		case "I", "N":
			return f(0)
		case "P":
			return f(0.5)
		}
		// A JSON number and nothing else: ParseFloat alone read "1_0"
		// as 10, "0x1p-1" as 0.5, and "+1" and ".5", which other readers
		// of the log read otherwise or not at all.
		if !jsonpos.IsNumber(x) {
			break
		}
		if n, err := strconv.ParseFloat(x, 64); err == nil && !math.IsNaN(n) && !math.IsInf(n, 0) {
			return f(n)
		}
	}
	return nil, fmt.Errorf("value %s is not a score (a finite number, true/false, or C/I/P/N; in a string, a JSON number and nothing else: \"0.5\", not \".5\", \"+1\", \"1_0\" or \"0x1p-1\")", raw)
}

// zipZstd is the zip compression method of zstd.
const zipZstd = 93

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// inspectSample is what the import reads of an Inspect sample.
type inspectSample struct {
	ID     json.RawMessage            `json:"id"`
	Epoch  int                        `json:"epoch"`
	Input  json.RawMessage            `json:"input"`
	Target json.RawMessage            `json:"target"`
	Output json.RawMessage            `json:"output"`
	Scores map[string]json.RawMessage `json:"scores"`
}

// ImportInspect reads an Inspect log: a .eval file (a zip with one
// samples/<id>_epoch_<n>.json per sample) or a .json log (its "samples").
func ImportInspect(path string, o ImportOptions) ([]ItemResult, error) {
	var samples []inspectSample
	switch strings.ToLower(filepath.Ext(path)) {
	case ".eval":
		zr, err := zip.OpenReader(path)
		if err != nil {
			return nil, badImport(path, "not an Inspect .eval log (a zip): %v", err)
		}
		defer zr.Close()
		// Inspect writes its .eval members with zstd (zip method 93).
		zr.RegisterDecompressor(zipZstd, func(r io.Reader) io.ReadCloser {
			d, err := zstd.NewReader(r)
			if err != nil {
				return io.NopCloser(errReader{err})
			}
			return d.IOReadCloser()
		})
		for _, zf := range zr.File {
			if !strings.HasPrefix(zf.Name, "samples/") || !strings.HasSuffix(zf.Name, ".json") {
				continue
			}
			rc, err := zf.Open()
			if err != nil {
				return nil, badImport(path, "%s: %v", zf.Name, err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return nil, badImport(path, "%s: %v", zf.Name, err)
			}
			var s inspectSample
			if err := json.Unmarshal(b, &s); err != nil {
				return nil, badImport(path, "%s is not a sample: %v", zf.Name, err)
			}
			samples = append(samples, s)
		}
	case ".json":
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var log struct {
			Samples []inspectSample `json:"samples"`
		}
		if err := json.Unmarshal(b, &log); err != nil {
			return nil, badImport(path, "not an Inspect .json log: %v", err)
		}
		samples = log.Samples
	default:
		return nil, badImport(path, "an Inspect log ends in .eval or .json")
	}
	if len(samples) == 0 {
		return nil, badImport(path, "no samples (an Inspect log written with --no-log-samples has none)")
	}
	epochs := map[int]bool{}
	for _, s := range samples {
		epochs[s.Epoch] = true
	}
	var out []ItemResult
	seen := map[string]bool{}
	for _, s := range samples {
		var id string
		var num json.Number
		if json.Unmarshal(s.ID, &id) != nil {
			if json.Unmarshal(s.ID, &num) != nil {
				return nil, badImport(path, "a sample has no id")
			}
			id = num.String()
		}
		if len(epochs) > 1 {
			id = fmt.Sprintf("%s@%d", id, s.Epoch)
		}
		if seen[id] {
			return nil, badImport(path, "sample %s twice", id)
		}
		seen[id] = true
		scorer := o.Scorer
		if scorer == "" {
			if len(s.Scores) != 1 {
				names := make([]string, 0, len(s.Scores))
				for n := range s.Scores {
					names = append(names, n)
				}
				sort.Strings(names)
				return nil, badImport(path, "sample %s has %d scorers (%s): name one with --scorer", id, len(s.Scores), strings.Join(names, ", "))
			}
			for n := range s.Scores {
				scorer = n
			}
		}
		sc, ok := s.Scores[scorer]
		if !ok {
			return nil, badImport(path, "sample %s has no scorer %q", id, scorer)
		}
		var score struct {
			Value       json.RawMessage `json:"value"`
			Answer      json.RawMessage `json:"answer"`
			Explanation json.RawMessage `json:"explanation"`
		}
		if err := json.Unmarshal(sc, &score); err != nil {
			return nil, badImport(path, "sample %s: score %q: %v", id, scorer, err)
		}
		v, err := scoreValue(score.Value)
		if err != nil {
			return nil, badImport(path, "sample %s: scorer %q: %v", id, scorer, err)
		}
		outputs := map[string]json.RawMessage{"scorer": quote(scorer), "value": score.Value, "epoch": json.RawMessage(strconv.Itoa(s.Epoch))}
		for k, raw := range map[string]json.RawMessage{"answer": score.Answer, "explanation": score.Explanation, "input": s.Input, "target": s.Target} {
			if len(raw) > 0 {
				outputs[k] = raw
			}
		}
		var o struct {
			Completion string `json:"completion"`
		}
		if json.Unmarshal(s.Output, &o) == nil {
			outputs["completion"] = quote(o.Completion)
		}
		ob, _ := json.Marshal(outputs)
		out = append(out, ItemResult{ID: id, Score: v, Outputs: ob, Where: "sample " + id, Field: fmt.Sprintf("scorer %q", scorer)})
	}
	sort.SliceStable(out, func(i, j int) bool { return idLess(out[i].ID, out[j].ID) })
	return out, nil
}

// WriteResults writes results as JSON lines.
func WriteResults(w io.Writer, rs []ItemResult) error {
	bw := bufio.NewWriter(w)
	for _, r := range rs {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		bw.Write(b)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
