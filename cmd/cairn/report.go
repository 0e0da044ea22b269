package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/runreport"
	"github.com/cairn-run/cairn/storage/filekind"
)

func (a *app) reportCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "report [RUN]",
		Short: "Write a run's report: one self-contained HTML page, and trace.tsv beside it",
		Long: `Write the report of a run (default: the last run of this cache that has a
journal: a run answered by the up-to-date check has none) from its journal
and the cache: report.html in the run's folder (or --out FILE), one
page with everything inlined (it opens offline, from a laptop after scp):
the run's header and the command to run it again, a timeline with a lane per
GPU and per CPU (or Slurm) slot, every node with its outcome, plan reason,
key, times, peak memory, GPU-seconds, attempts and log tails, resources per
GPU and stage, the tables and plots the run's nodes wrote, and the items of
each evaluation. trace.tsv, beside the page, has one row per node attempt,
and one per node without one (cached, skipped, not started).

A run still going, or killed, is reported as far as its journal goes.
'cairn apply --report' writes the page as the run goes.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := a.runDir(args)
			if err != nil {
				return err
			}
			if out != "" {
				if fi, err := os.Lstat(a.path(out)); err == nil && !fi.Mode().IsRegular() {
					return badInput("--out %s is not a regular file (%s): name the page's file, such as %s", out, filekind.Of(fi.Mode()), filepath.Join(out, runreport.HTMLName))
				}
				if filepath.Base(out) == runreport.TraceName {
					return badInput("--out %s is the name of the trace written beside the page: name the page otherwise, such as %s", out, filepath.Join(filepath.Dir(out), runreport.HTMLName))
				}
			}
			rep, cache, err := a.buildReport(dir)
			if err != nil {
				return err
			}
			defer cache.Close()
			if out != "" {
				if err := a.checkReportOut(out, rep); err != nil {
					return err
				}
			}
			path := filepath.Join(dir, runreport.HTMLName)
			if out != "" {
				path = a.path(out)
			}
			if err := rep.WriteFiles(path, cache); err != nil {
				return reportWriteError(path, out != "", err)
			}
			if abs, err := filepath.Abs(path); err == nil {
				path = abs
			}
			if rep.Run.Damaged != "" {
				// The page says so at its top; the terminal says it too.
				fmt.Fprintf(a.stderr, "warning: run %s: %s; its state (%s) is as far as the journal can tell\n", rep.Run.ID, rep.Run.Damaged, rep.Run.State)
			}
			if len(rep.Run.Gone) > 0 {
				fmt.Fprintf(a.stderr, "warning: run %s: %s; the page shows no results, tables, plots or items of them\n", rep.Run.ID, runreport.GoneText(&rep.Run))
			}
			fmt.Fprintf(a.stdout, "Report of run %s (%s): %s\n", rep.Run.ID, rep.Run.State, path)
			fmt.Fprintf(a.stdout, "Trace (one row per node attempt, or per node without one): %s\n", filepath.Join(filepath.Dir(path), runreport.TraceName))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the page here (trace.tsv goes beside it) instead of into the run's folder")
	return cmd
}

// checkReportOut refuses (exit 2) a report --out whose page, or the
// trace.tsv beside it, would write over what cairn reads (checkOutOfReads:
// the cache's files, a pipeline file, a var file any run was given), over
// a file the run read or wrote (a var-file, its nodes' inputs and outputs
// as their records have them), or replace a trace.tsv that is not one
// cairn wrote (a user's own, which IsTrace tells by its first line).
func (a *app) checkReportOut(out string, rep *runreport.Report) error {
	root := a.root()
	var files []string
	for _, f := range rep.Files() {
		files = append(files, filepath.Join(root, f))
	}
	for _, v := range rep.Run.Vars {
		if v.File {
			files = append(files, runPath(rep.Run.Dir, rep.Run.Args, v.Value))
		}
	}
	trace := filepath.Join(filepath.Dir(out), runreport.TraceName)
	for _, p := range []string{out, trace} {
		if err := a.checkOutOfReads("report", p, nil, files, "a file run "+rep.Run.ID+" read or wrote (a var-file, a stage's input or output)"); err != nil {
			return err
		}
	}
	if _, err := os.Stat(a.path(trace)); err == nil && !runreport.IsTrace(a.path(trace)) {
		return badInput("report: %s is there and is not a trace cairn wrote (its first line is not trace.tsv's header): the page's trace.tsv, written beside it, would replace it; move it, or write the page into another folder", trace)
	}
	return nil
}

// runPath is where path, named on a run's command line (args, started in
// dir), is: relative to the run's --chdir, itself relative to dir.
func runPath(dir string, args []string, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	for i, a := range args {
		if a == "--" {
			break
		}
		d, ok := "", false
		switch {
		case (a == "--chdir" || a == "-chdir") && i+1 < len(args):
			d, ok = args[i+1], true
		case strings.HasPrefix(a, "--chdir=") || strings.HasPrefix(a, "-chdir="):
			_, d, ok = strings.Cut(a, "=")
		}
		if ok && filepath.IsAbs(d) {
			dir = d
		} else if ok {
			dir = filepath.Join(dir, d)
		}
	}
	return filepath.Join(dir, path)
}

// runDir is the folder of the run args names, or of the cache's last run.
func (a *app) runDir(args []string) (string, error) {
	if err := a.checkCacheFolder(); err != nil {
		return "", err
	}
	base := filepath.Join(a.cachePath(), "runs")
	if len(args) == 1 {
		dir, ok := a.runFolder(args[0])
		if !ok {
			if r, err := runlog.FindUpToDate(a.cachePath(), args[0]); err == nil && r != nil {
				return "", badInput("run %s was answered by the up-to-date check (every node taken from the cache): it has no journal to report; 'cairn show %s' says so", args[0], args[0])
			}
			if runlog.IsRunID(args[0]) {
				return "", a.noRunInCache(args[0])
			}
			return "", badInput("no run %s in %s ('cairn status' lists the runs)", args[0], base)
		}
		return dir, nil
	}
	ents, err := os.ReadDir(base)
	if err != nil && !os.IsNotExist(err) {
		return "", badInput("%s", err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(base, e.Name(), "journal")); err == nil {
				names = append(names, e.Name())
			}
		}
	}
	if len(names) == 0 {
		return "", badInput("no run in %s to report: run 'cairn apply' first (or give --cache)", base)
	}
	return filepath.Join(base, slices.Max(names)), nil
}

// runFolder is the folder of run id in the cache, when id names one: a
// folder of runs/ that holds a journal (the cache's other files there, or
// a path, are not runs).
func (a *app) runFolder(id string) (string, bool) {
	if id == "" || id == "." || id == ".." || strings.ContainsRune(id, filepath.Separator) {
		return "", false
	}
	dir := filepath.Join(a.cachePath(), "runs", id)
	st, err := os.Stat(filepath.Join(dir, "journal"))
	return dir, err == nil && st.Mode().IsRegular()
}

// buildReport reads the run in dir, with the cache's records (open: the
// caller closes it).
func (a *app) buildReport(dir string) (*runreport.Report, *store.Cache, error) {
	cache, err := a.openCache()
	if err != nil {
		return nil, nil, err
	}
	rep, err := runreport.Build(dir, runreport.Options{Cache: cache})
	if err != nil {
		cache.Close()
		return nil, nil, badInput("cannot read run %s: %s", filepath.Base(dir), err)
	}
	return rep, cache, nil
}

// showRunJSON prints a run's report data: the numbers its page shows.
func (a *app) showRunJSON(dir string) error {
	rep, cache, err := a.buildReport(dir)
	if err != nil {
		return err
	}
	defer cache.Close()
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// liveReport rewrites this process's run's report every interval while
// apply runs, and once more when it ends.
type liveReport struct {
	cache    *store.Cache
	runs     string
	since    string
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	dir      string
	interval time.Duration
	warn     func(error)
}

// reportInterval is how often apply --report rewrites the page (less
// often when building it takes more than half of that).
const reportInterval = 3 * time.Second

func startLiveReport(cache *store.Cache, warn func(error)) *liveReport {
	l := &liveReport{cache: cache, runs: filepath.Join(cache.Dir, "runs"), stop: make(chan struct{}), done: make(chan struct{}), interval: reportInterval, warn: warn,
		// Run ids start with their start time: this apply's is not
		// before now.
		since: time.Now().UTC().Add(-time.Second).Format("20060102T150405.000Z")}
	go l.loop()
	return l
}

func (l *liveReport) loop() {
	defer close(l.done)
	wait := l.interval
	for {
		select {
		case <-l.stop:
			return
		case <-time.After(wait):
			began := time.Now()
			l.write()
			// A large run's page takes a while to build: it never takes
			// more than a third of the apply's time.
			wait = max(l.interval, 2*time.Since(began))
		}
	}
}

// find is this process's run folder, once its journal names it.
func (l *liveReport) find() string {
	if l.dir != "" {
		return l.dir
	}
	ents, _ := os.ReadDir(l.runs)
	for _, e := range ents {
		if !e.IsDir() || e.Name() < l.since {
			continue
		}
		dir := filepath.Join(l.runs, e.Name())
		es, _ := runlog.Read(dir)
		if len(es) > 0 && es[0].T == runlog.RunStart && es[0].PID == os.Getpid() {
			l.dir = dir
			return dir
		}
	}
	return ""
}

func (l *liveReport) write() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	dir := l.find()
	if dir == "" {
		return ""
	}
	rep, err := runreport.Build(dir, runreport.Options{Cache: l.cache})
	if err == nil {
		err = rep.WriteFiles(filepath.Join(dir, runreport.HTMLName), l.cache)
	}
	if err != nil {
		l.warn(err)
		return ""
	}
	return filepath.Join(dir, runreport.HTMLName)
}

// finish stops the rewrites and writes the page of the ended run; it
// returns the page's path ("" when the run left no folder).
func (l *liveReport) finish() string {
	close(l.stop)
	<-l.done
	return l.write()
}

// reportLine is how apply names the report it wrote.
func reportLine(path string) string {
	return "Report: " + strings.TrimSpace(path)
}

// reportWriteError says why the report could not be written to path
// (given with --out, or the run's folder) and what to do, naming no
// temporary file.
func reportWriteError(path string, out bool, err error) error {
	where := "the run's folder " + filepath.Dir(path)
	if out {
		where = "--out " + path
	}
	switch {
	case out && !diskFull(err):
		// The command line named a place the report cannot go: bad
		// input, as aggregate's and replay's --out (exit 2).
		return badInput("cannot write the report to %s (%s): give an --out you may write", where, errCause(err))
	case notWritable(err):
		return fmt.Errorf("cannot write the report in %s (%s): you may not write in the cache; give --out FILE to write it elsewhere (trace.tsv goes beside it)", where, errCause(err))
	case diskFull(err):
		return fmt.Errorf("cannot write the report in %s: %s; make room on its disk and run it again", where, errCause(err))
	}
	return fmt.Errorf("cannot write the report in %s: %s", where, errCause(err))
}
