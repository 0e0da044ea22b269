package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/engine/atomicfile"
	"github.com/cairn-run/cairn/stages/aggregate"
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
infrastructure-invalid test items is printed as incomplete, with the reason;
non-conformant jobs are skipped with a warning. docs/aggregate.md describes
every figure and the random stream (the same output on any machine).

A tab-separated table goes to standard output; --out writes the JSON
summary and --plot the forest plot (SVG).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Replicates < 1 {
				return badInput("--bootstrap %d: give at least 1 replicate (the protocol uses %d)", o.Replicates, aggregate.DefaultReplicates)
			}
			if plot == "" && out != "" {
				plot = strings.TrimSuffix(out, ".json") + ".svg"
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
			if len(s.Skipped) > 0 && !o.IncludeNonconformant {
				fmt.Fprintf(a.stderr, "%d job(s) skipped; --include-nonconformant adds the non-conformant ones.\n", len(s.Skipped))
			}
			var table, summary, svg bytes.Buffer
			if err := s.TSV(&table); err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			sync := os.Getenv("CAIRN_NO_FSYNC") != "1"
			for _, f := range []struct {
				path  string
				buf   *bytes.Buffer
				write func(*bytes.Buffer) error
			}{
				{plot, &svg, func(b *bytes.Buffer) error { return s.SVG(b) }},
				{out, &summary, func(b *bytes.Buffer) error { return s.JSON(b) }},
			} {
				if f.path == "" {
					continue
				}
				if err := f.write(f.buf); err != nil {
					return &exitError{code: exitFailed, msg: err.Error()}
				}
				if err := atomicfile.Write(a.path(f.path), f.buf.Bytes(), sync); err != nil {
					return &exitError{code: exitFailed, msg: fmt.Sprintf("cannot write %s: %s", f.path, err)}
				}
			}
			if _, err := a.stdout.Write(table.Bytes()); err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			complete := 0
			for _, r := range s.Rows {
				if r.Status == aggregate.StatusOK {
					complete++
				}
			}
			fmt.Fprintf(a.stderr, "%d row(s): %d complete, %d incomplete; %d bootstrap replicates, family %s.", len(s.Rows), complete, len(s.Rows)-complete, s.Replicates, s.Family)
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
	cmd.Flags().IntVar(&o.Replicates, "bootstrap", aggregate.DefaultReplicates, "bootstrap replicates per row")
	cmd.Flags().BoolVar(&o.IncludeNonconformant, "include-nonconformant", false, "keep jobs whose result.json lists reasons they are not part of the experiment (smoke budgets, off-grid cells, another reflection model)")
	return cmd
}
