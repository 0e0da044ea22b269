package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/stages"
	"github.com/cairn-run/cairn/stages/aggregate"
	"github.com/cairn-run/cairn/stages/modelcache"
	"github.com/cairn-run/cairn/storage/atomicfile"
)

// importJob is what `cairn import --job` needs besides the files.
type importJob struct {
	dir, baseline, method, cell string
	seed                        int
}

func (a *app) importCmd() *cobra.Command {
	var o modelcache.ImportOptions
	var out string
	var job importJob
	cmd := &cobra.Command{
		Use:   "import lm-eval|inspect FILE",
		Short: "Turn an evaluation harness's per-sample log into cairn item results",
		Long: `Read an evaluation harness's per-sample log and write cairn's item results,
one JSON object a line: {"id", "score", "outputs"}, as the evaluate kind's
scores file holds them (docs/model-cache.md says how each format maps).

  lm-eval   samples_<task>_<time>.jsonl (lm-eval --log_samples): id is the
            doc_id; the score is the sample's --metric (default: its first
            listed metric) for --filter (default: the file's first filter).
  inspect   an Inspect log, .eval or .json: id is the sample id (id@epoch
            when the log has several epochs); the score is the --scorer's
            value (default: the only scorer), C = 1, I = 0, P = 0.5, N = 0.

Results go to standard output, or to --out. A file that is not in the
format named is refused (exit 2), naming it and the line or sample.

With --job DIR, FILE is a method's results and --baseline FILE the
results it is compared with (the same format, the same items): they
become an optimizer job's test.json and result.json in DIR
(docs/job-artifacts.md), for --method, --cell DATASET/RUNTIME/MODEL and
--seed, which cairn aggregate and the aggregate kind read like any job's.
Every item must have a numeric score in both files, once each: a missing
or non-numeric score, a repeated id or an item only one file has is
refused (exit 2), naming the file and the item.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, path := args[0], args[1]
			if format != "lm-eval" && format != "inspect" {
				return badInput("import %q: the formats are lm-eval and inspect", format)
			}
			if job.dir != "" || job.baseline != "" {
				if out != "" {
					return badInput("import: --out writes item results, --job a job's artifacts: give one of them")
				}
				return a.importJob(format, path, o, job)
			}
			rs, err := a.importFile(format, path, o)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := modelcache.WriteResults(&buf, rs); err != nil {
				return err
			}
			if out == "" {
				_, err := a.stdout.Write(buf.Bytes())
				return err
			}
			if err := a.checkOut("import", out, a.abs(out), a.abs(path)); err != nil {
				return err
			}
			if err := atomicfile.Write(a.abs(out), buf.Bytes(), false); err != nil {
				return fmt.Errorf("cannot write %s (%w); nothing was written", a.abs(out), err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the results to this file (default: standard output)")
	cmd.Flags().StringVar(&o.Metric, "metric", "", "lm-eval: the metric that becomes the score (default: each sample's first)")
	cmd.Flags().StringVar(&o.Filter, "filter", "", "lm-eval: the filter whose samples are kept (default: the file's first)")
	cmd.Flags().StringVar(&o.Scorer, "scorer", "", "inspect: the scorer whose value becomes the score (default: the only one)")
	cmd.Flags().StringVar(&job.dir, "job", "", "write an optimizer job's test.json and result.json into this folder (with --baseline, --method, --cell, --seed)")
	cmd.Flags().StringVar(&job.baseline, "baseline", "", "with --job: the results FILE is compared with (the job's baseline)")
	cmd.Flags().StringVar(&job.method, "method", "", "with --job: the method FILE's results are of")
	cmd.Flags().StringVar(&job.cell, "cell", "", "with --job: the cell, DATASET/RUNTIME/MODEL")
	job.seed = -1 // not given
	cmd.Flags().Var(decimalFlag{&job.seed}, "seed", "with --job: the optimizer seed (0, 1 or 2 for the aggregation)")
	return cmd
}

func (a *app) abs(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(a.root(), path)
}

// importFile reads one harness file as item results.
func (a *app) importFile(format, path string, o modelcache.ImportOptions) ([]modelcache.ItemResult, error) {
	var rs []modelcache.ItemResult
	var err error
	if format == "lm-eval" {
		rs, err = modelcache.ImportLMEval(a.abs(path), o)
	} else {
		rs, err = modelcache.ImportInspect(a.abs(path), o)
	}
	if err != nil {
		if errors.Is(err, modelcache.ErrBadImport) {
			return nil, badInput("%s; nothing was written", strings.Replace(err.Error(), a.abs(path), path, 1))
		}
		return nil, badInput("%s", err)
	}
	return rs, nil
}

// importJob writes a job's test.json and result.json of two harness files
// (docs/model-cache.md#imported-results-in-the-seed-002-statistics).
func (a *app) importJob(format, path string, o modelcache.ImportOptions, j importJob) error {
	parts := strings.Split(j.cell, "/")
	switch {
	case j.dir == "" || j.baseline == "" || j.method == "" || j.cell == "" || j.seed < 0:
		return badInput("import --job DIR needs --baseline FILE, --method NAME, --cell DATASET/RUNTIME/MODEL and --seed N")
	case strings.IndexFunc(j.method, unicode.IsControl) >= 0:
		return badInput("import: --method %q has control characters", j.method)
	case len(parts) != 3 || slicesHasEmpty(parts) || strings.IndexFunc(j.cell, func(r rune) bool { return r == ' ' || unicode.IsControl(r) }) >= 0:
		return badInput("import: --cell %q is not DATASET/RUNTIME/MODEL (three non-empty names without spaces)", j.cell)
	}
	dep, err := a.importFile(format, path, o)
	if err != nil {
		return err
	}
	base, err := a.importFile(format, j.baseline, o)
	if err != nil {
		return err
	}
	byID := map[string]modelcache.ItemResult{}
	for _, r := range dep {
		if err := scored(path, r); err != nil {
			return err
		}
		byID[r.ID] = r
	}
	tf := stages.TestFile{Format: stages.TestFormat, Method: j.method, CellID: j.cell, Seed: j.seed, Deployed: "incumbent", Items: []stages.TestItem{}}
	var onlyBase []string
	for _, b := range base {
		if err := scored(j.baseline, b); err != nil {
			return err
		}
		d, ok := byID[b.ID]
		if !ok {
			onlyBase = append(onlyBase, b.ID)
			continue
		}
		delete(byID, b.ID)
		tf.Items = append(tf.Items, stages.TestItem{ID: b.ID, Baseline: b.Score, Deployed: d.Score, Valid: true})
	}
	if len(onlyBase) > 0 || len(byID) > 0 {
		var onlyDep []string
		for _, r := range dep {
			if _, ok := byID[r.ID]; ok {
				onlyDep = append(onlyDep, r.ID)
			}
		}
		return badInput("import: %s and %s do not score the same items (only %s has %s; only %s has %s): a paired comparison needs both scores of every item; nothing was written",
			path, j.baseline, j.baseline, idsOrNone(onlyBase), path, idsOrNone(onlyDep))
	}
	src := &stages.ImportSource{Format: format, Metric: o.Metric, Filter: o.Filter, Scorer: o.Scorer}
	resolved(dep, src)
	for _, f := range []struct {
		name string
		to   *stages.ImportedFile
	}{{path, &src.Deployed}, {j.baseline, &src.Baseline}} {
		b, err := os.ReadFile(a.abs(f.name))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		*f.to = stages.ImportedFile{File: f.name, SHA256: "sha256:" + hex.EncodeToString(sum[:])}
	}
	res := stages.ResultFile{
		Format: stages.ResultFormat, Status: "ok", Method: j.method, CellID: j.cell,
		Dataset: parts[0], Runtime: parts[1], Model: parts[2], Seed: j.seed, Deployed: "incumbent", Source: src,
	}
	tb, rb, err := stages.JobFiles(&tf, &res)
	if err != nil {
		return badInput("import: %s and %s: %s; nothing was written", path, j.baseline, err)
	}
	dir := a.abs(j.dir)
	if b, err := os.ReadFile(filepath.Join(dir, aggregate.ResultFile)); err == nil {
		var prev struct {
			Source json.RawMessage `json:"source"`
		}
		if json.Unmarshal(b, &prev) != nil || len(prev.Source) == 0 {
			return badInput("import: %s already holds a job's %s that cairn ran, not one imported: give another --job folder", j.dir, aggregate.ResultFile)
		}
	}
	if err := writeJobFiles(dir, tb, rb, atomicfile.Write); err != nil {
		return err
	}
	means := "no valid item, so no means"
	if res.BaselineMean != nil {
		means = fmt.Sprintf("baseline %.6g, deployed %.6g, delta %.6g pp", *res.BaselineMean, *res.DeployedMean, *res.DeltaPP)
	}
	fmt.Fprintf(a.stderr, "imported %d items: %s %s seed %d, %s -> %s\n",
		len(tf.Items), j.method, j.cell, j.seed, means, filepath.Join(j.dir, aggregate.ResultFile))
	return nil
}

// writeJobFiles writes a job's test.json (tb) and result.json (rb) into
// dir with write, replacing those of a job imported before. The old
// result.json goes first, durably, and the new one comes last: a kill
// at any point leaves both files of one import, or a test.json without
// a result.json (a job that has not finished, which aggregate does not
// read and importing again completes), never a test.json beside a
// result.json that names another.
func writeJobFiles(dir string, tb, rb []byte, write func(path string, b []byte, sync bool) error) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := atomicfile.Remove(filepath.Join(dir, aggregate.ResultFile), true); err != nil {
		return err
	}
	if err := write(filepath.Join(dir, aggregate.TestFile), tb, true); err != nil {
		return err
	}
	return write(filepath.Join(dir, aggregate.ResultFile), rb, true)
}

// scored refuses an item without a score: no figure is computed from it.
func scored(file string, r modelcache.ItemResult) error {
	if r.Score == nil {
		return badInput("import: %s: %s: %s has no score (null): a paired comparison needs a number for every item; nothing was written", file, r.Where, r.Field)
	}
	return nil
}

// resolved records the metric, filter or scorer the import used when
// none was named: the one in the items' outputs.
func resolved(rs []modelcache.ItemResult, src *stages.ImportSource) {
	if len(rs) == 0 {
		return
	}
	var out struct{ Metric, Filter, Scorer string }
	_ = json.Unmarshal(rs[0].Outputs, &out)
	if src.Metric == "" {
		src.Metric = out.Metric
	}
	if src.Filter == "" {
		src.Filter = out.Filter
	}
	if src.Scorer == "" {
		src.Scorer = out.Scorer
	}
}

func slicesHasEmpty(s []string) bool {
	for _, x := range s {
		if x == "" {
			return true
		}
	}
	return false
}

// idsOrNone lists up to 5 ids.
func idsOrNone(ids []string) string {
	switch {
	case len(ids) == 0:
		return "none"
	case len(ids) > 5:
		return fmt.Sprintf("%s and %d more", strings.Join(ids[:5], ", "), len(ids)-5)
	}
	return strings.Join(ids, ", ")
}
