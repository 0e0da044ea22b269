package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/stages/aggregate"
	"github.com/cairn-run/cairn/stats"
	"github.com/cairn-run/cairn/storage/atomicfile"
	"github.com/cairn-run/cairn/storage/filekind"
)

func (a *app) aggregateCmd() *cobra.Command {
	var o aggregate.Options
	var out, plot string
	cmd := &cobra.Command{
		Use:   "aggregate ROOTS...",
		Short: "Aggregate optimizer jobs over seeds: table, bootstrap intervals, Holm families",
		Long: `Aggregate the optimizer jobs found under ROOTS (every result.json, with the
test.json beside it; see docs/job-artifacts.md) into one row per method and
cell over seeds 0, 1 and 2: the baseline and deployed means, delta_pp (100 ×
the mean over seeds of deployed − baseline), its 95% interval and p-value
from a paired bootstrap stratified by seed, and the Holm–Bonferroni
correction at α = 0.05 within each family. A row with a missing seed or with
invalid test items (no score from a bundle) is printed as incomplete, with
the reason; non-conformant jobs are skipped with a warning (a row's seed so
skipped is "skipped"), or kept with --include-nonconformant and then marked
"non-conformant" in the table, the summary and the plot.

By default each seed's items are resampled on their own (--resample
within-seed, the protocol's method); --resample shared-items draws one set
of items per replicate for all three seeds, which keeps the interval's
coverage when an item's effect is alike across seeds (the seeds share their
test items). Scores must be finite and within the range whose sums do not
overflow (docs/aggregate.md): anything else is refused, naming the file and
the item. docs/aggregate.md describes every figure and the random stream
(the same output on any machine).

A tab-separated table goes to standard output; --out writes the JSON
summary and --plot the forest plot (SVG). Every output is computed before
any is written: all are written, or none.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Replicates < 1 {
				return badInput("--bootstrap %d: give at least 1 replicate (the protocol uses %d)", o.Replicates, stats.DefaultReplicates)
			}
			if !slices.Contains(aggregate.FamilyNames, o.Family) {
				// "" means task to the library, not to the command line.
				return badInput("--family %q: give %s", o.Family, strings.Join(aggregate.FamilyNames, ", "))
			}
			if !slices.Contains(stats.ResampleNames, o.Resample) {
				return badInput("--resample %q: give %s", o.Resample, strings.Join(stats.ResampleNames, " or "))
			}
			if plot == "" && out != "" {
				plot = strings.TrimSuffix(out, ".json") + ".svg"
			}
			if err := a.checkAggregateOutputs(args, out, plot); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
			defer stop()
			o.Dir = a.root()
			o.Roots = args
			s, err := aggregate.Run(ctx, o)
			switch {
			case ctx.Err() != nil:
				return &exitError{code: exitInterrupted, msg: "interrupted; nothing was written"}
			case errors.Is(err, aggregate.ErrBadInput):
				return badInput("%s; nothing was written", err)
			case err != nil:
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			for _, sk := range s.Skipped {
				fmt.Fprintln(a.stderr, sk.Warning())
			}
			for _, c := range s.CannotRejectWarnings() {
				fmt.Fprintln(a.stderr, c)
			}
			if n := s.SkippedNonconformant(); n > 0 && !o.IncludeNonconformant {
				fmt.Fprintf(a.stderr, "%d job(s) skipped as non-conformant; --include-nonconformant adds them.\n", n)
			}
			// Everything is rendered before anything is written, so that
			// the outputs are written whole or not at all.
			var table, summary, svg bytes.Buffer
			files := []struct {
				path   string
				buf    *bytes.Buffer
				render func(*bytes.Buffer) error
			}{
				{"", &table, func(b *bytes.Buffer) error { return s.TSV(b) }},
				{plot, &svg, func(b *bytes.Buffer) error { return s.SVG(b) }},
				{out, &summary, func(b *bytes.Buffer) error { return s.JSON(b) }},
			}
			for _, f := range files {
				if err := f.render(f.buf); err != nil {
					return &exitError{code: exitFailed, msg: err.Error() + "; nothing was written"}
				}
			}
			var write []atomicfile.File
			for _, f := range files {
				if f.path != "" {
					write = append(write, atomicfile.File{Path: a.path(f.path), Data: f.buf.Bytes()})
				}
			}
			if err := atomicfile.WriteAll(write, !noFsync()); err != nil {
				// --out or --plot names a place that cannot take a file:
				// bad input, as for report, graph and plan.
				return badInput("cannot write the outputs: %s", err)
			}
			if _, err := a.stdout.Write(table.Bytes()); err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			complete, nonconformant := 0, 0
			for _, r := range s.Rows {
				if r.Status == aggregate.StatusOK {
					complete++
				}
				if len(r.Nonconformant) > 0 {
					nonconformant++
				}
			}
			fmt.Fprintf(a.stderr, "%d row(s): %d complete, %d incomplete", len(s.Rows), complete, len(s.Rows)-complete)
			if nonconformant > 0 {
				fmt.Fprintf(a.stderr, ", %d with non-conformant jobs (marked)", nonconformant)
			}
			fmt.Fprintf(a.stderr, "; %d bootstrap replicates", s.Replicates)
			if s.Resample != stats.ResampleWithinSeed {
				fmt.Fprintf(a.stderr, " resampling %s", s.Resample)
			}
			fmt.Fprintf(a.stderr, ", family %s.", s.Family)
			if out != "" {
				fmt.Fprintf(a.stderr, " Summary: %s; plot: %s.", out, plot)
			} else if plot != "" {
				fmt.Fprintf(a.stderr, " Plot: %s.", plot)
			}
			fmt.Fprintln(a.stderr)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the full JSON summary to FILE")
	cmd.Flags().StringVar(&plot, "plot", "", "write the forest plot (SVG) to FILE (default: beside --out, .svg for .json)")
	cmd.Flags().StringVar(&o.Family, "family", aggregate.FamilyTask, "the Holm family: task (rows sharing dataset × model), method, or none (no correction)")
	o.Replicates = stats.DefaultReplicates
	cmd.Flags().Var(decimalFlag{&o.Replicates}, "bootstrap", "bootstrap replicates per row, in decimal digits")
	cmd.Flags().StringVar(&o.Resample, "resample", stats.ResampleWithinSeed, "how a replicate draws a row's items: within-seed (each seed's items on their own, the protocol's method) or shared-items (one draw of item indices used for every seed)")
	cmd.Flags().BoolVar(&o.IncludeNonconformant, "include-nonconformant", false, "keep jobs whose result.json lists reasons they are not part of the experiment (smoke budgets, off-grid cells, another reflection model)")
	return cmd
}

// checkAggregateOutputs refuses, before anything is read or written, an
// --out or --plot that would write over something that is not aggregate's
// own output: any file in the folder of a job under the roots (the folder
// of a result.json it reads, as found and where a linked result.json
// leads: its inputs, and the job's other files), or a new file there or
// below; a folder, a device or a link (/dev/stdout, say: the file is
// written beside it and renamed over it); or the other output.
func (a *app) checkAggregateOutputs(roots []string, out, plot string) error {
	type output struct {
		flag, path, abs string
		fi              os.FileInfo // the file there now; nil: none
	}
	var outs []output
	for _, o := range []output{{flag: "--out", path: out}, {flag: "--plot", path: plot}} {
		if o.path == "" {
			continue
		}
		o.abs = realPath(a.path(o.path))
		fi, err := os.Lstat(a.path(o.path))
		if err == nil && !fi.Mode().IsRegular() {
			return badInput("%s %s is not a regular file (%s): aggregate writes its own file, to a temporary file then renamed over it; name a file", o.flag, o.path, filekind.Of(fi.Mode()))
		}
		if err == nil {
			o.fi = fi
		}
		outs = append(outs, o)
	}
	if len(outs) == 2 && outs[0].abs == outs[1].abs {
		return badInput("--out and --plot both name %s: give the plot a file of its own", out)
	}
	results, err := aggregate.FindResults(a.root(), roots)
	if err != nil {
		return nil // aggregate.Run reports the roots' problem
	}
	const never = "aggregate never writes over what it reads, nor into a job's folder; name a file outside the job folders"
	for _, f := range a.jobFolders(results) {
		for _, o := range outs {
			if rel, err := filepath.Rel(f.real, o.abs); err == nil && filepath.IsLocal(rel) {
				if o.fi != nil {
					return badInput("%s %s is a job's own file (%s, in the folder of a job aggregate reads): %s", o.flag, o.path, filepath.Join(f.name, rel), never)
				}
				return badInput("%s %s is in a job's folder (%s, the folder of a job aggregate reads): %s", o.flag, o.path, f.name, never)
			}
			if o.fi == nil {
				continue
			}
			// The same file reached another way: a hard link to one of
			// the job's files.
			entries, _ := os.ReadDir(f.real)
			for _, e := range entries {
				fi, err := os.Stat(filepath.Join(f.real, e.Name()))
				if err == nil && fi.Mode().IsRegular() && os.SameFile(fi, o.fi) {
					return badInput("%s %s is a job's own file (%s, in the folder of a job aggregate reads): %s", o.flag, o.path, filepath.Join(f.name, e.Name()), never)
				}
			}
		}
	}
	return nil
}

// jobFolder is the folder of a job aggregate reads: name as shown, real
// with its links resolved.
type jobFolder struct{ name, real string }

// jobFolders are the folders of the result.json files found (names as
// found): each one's folder, and for a result.json that is a link, the
// folder of the file it leads to. Each once, by its real path, absolute:
// the outputs' paths are (realPath), and a relative folder (roots given
// without --chdir) would contain none of them.
func (a *app) jobFolders(results []string) []jobFolder {
	var out []jobFolder
	seen := map[string]bool{}
	add := func(name, path string) {
		real, err := filepath.EvalSymlinks(path)
		if err == nil {
			real, err = filepath.Abs(real)
		}
		if err != nil || seen[real] {
			return
		}
		seen[real] = true
		out = append(out, jobFolder{name: name, real: real})
	}
	for _, r := range results {
		res := a.path(r)
		add(filepath.Dir(r), filepath.Dir(res))
		if real, err := filepath.EvalSymlinks(res); err == nil {
			add(filepath.Dir(real), filepath.Dir(real))
		}
	}
	return out
}

// realPath is p, absolute, with the links of its folders resolved: of
// the longest leading part that exists (p itself, and folders that an
// output would create, may not exist yet).
func realPath(p string) string {
	p, _ = filepath.Abs(p)
	rest := filepath.Base(p)
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(real, rest)
		}
		if filepath.Dir(d) == d {
			return p
		}
		rest = filepath.Join(filepath.Base(d), rest)
	}
}
