package main

import (
	"bytes"
	"errors"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/stages/modelcache"
	"github.com/cairn-run/cairn/storage/atomicfile"
)

func (a *app) importCmd() *cobra.Command {
	var o modelcache.ImportOptions
	var out string
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
format named is refused (exit 2), naming it and the line or sample.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[1]
			if !filepath.IsAbs(path) {
				path = filepath.Join(a.root(), path)
			}
			var rs []modelcache.ItemResult
			var err error
			switch args[0] {
			case "lm-eval":
				rs, err = modelcache.ImportLMEval(path, o)
			case "inspect":
				rs, err = modelcache.ImportInspect(path, o)
			default:
				return badInput("import %q: the formats are lm-eval and inspect", args[0])
			}
			if err != nil {
				if errors.Is(err, modelcache.ErrBadImport) {
					return badInput("%s; nothing was written", err)
				}
				return badInput("%s", err)
			}
			var buf bytes.Buffer
			if err := modelcache.WriteResults(&buf, rs); err != nil {
				return err
			}
			if out == "" {
				_, err := a.stdout.Write(buf.Bytes())
				return err
			}
			if !filepath.IsAbs(out) {
				out = filepath.Join(a.root(), out)
			}
			return atomicfile.Write(out, buf.Bytes(), false)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the results to this file (default: standard output)")
	cmd.Flags().StringVar(&o.Metric, "metric", "", "lm-eval: the metric that becomes the score (default: each sample's first)")
	cmd.Flags().StringVar(&o.Filter, "filter", "", "lm-eval: the filter whose samples are kept (default: the file's first)")
	cmd.Flags().StringVar(&o.Scorer, "scorer", "", "inspect: the scorer whose value becomes the score (default: the only one)")
	return cmd
}
