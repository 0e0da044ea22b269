package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/runreport"
	"github.com/cairn-run/cairn/stages"
	"github.com/cairn-run/cairn/storage/filekind"
)

// pipelineReads lists, as absolute paths, the files a loaded pipeline
// was read from: its pipeline files and its --var-file files.
func (a *app) pipelineReads(l *plan.Loaded) []string {
	var reads []string
	add := func(f string) {
		// As shown: relative to the current directory.
		if abs, err := filepath.Abs(f); err == nil {
			reads = append(reads, abs)
		}
	}
	for _, f := range l.Config.Paths {
		add(f)
	}
	for _, v := range a.vars {
		if v.File {
			add(a.path(v.Value))
		}
	}
	return reads
}

// checkOut refuses the file an --out names (out as given, path where the
// command writes it) when writing it would destroy what cairn or the
// command reads: a file inside the cache folder (its index, journals and
// blobs are cairn's own), one of reads (the command's input files, the
// same file reached through a link or a hard link counting), or a
// pipeline file (.hcl: cairn writes pages, graphs and results, never
// HCL), a new one too: a folder pipeline loads every .hcl file in its
// folder, and would fail on the next command. A folder or anything else that is not a regular file is refused
// too: the output goes to a temporary file renamed over it. cmd names
// the command for the message.
func (a *app) checkOut(cmd, out, path string, reads ...string) error {
	fi, err := os.Lstat(path)
	if err == nil && !fi.Mode().IsRegular() {
		return badInput("%s: --out %s is not a regular file (%s): name a file to write", cmd, out, filekind.Of(fi.Mode()))
	}
	real := realPath(path)
	cache := realPath(a.cachePath())
	if rel, err := filepath.Rel(cache, real); err == nil && (rel == "." || filepath.IsLocal(rel)) {
		return badInput("%s: --out %s is inside the cache folder %s, whose files are cairn's own (its index, runs and stored results): name a file outside it", cmd, out, a.cachePath())
	}
	st, statErr := os.Stat(path)
	for _, r := range reads {
		rst, err := os.Stat(r)
		same := realPath(r) == real || (statErr == nil && err == nil && os.SameFile(st, rst))
		if same {
			return badInput("%s: --out %s is %s, which it reads: writing it would destroy its input; name another file", cmd, out, r)
		}
	}
	switch {
	case statErr == nil && strings.HasSuffix(path, ".hcl"):
		return badInput("%s: --out %s is a pipeline file (.hcl), which it would write over; name another file", cmd, out)
	case strings.HasSuffix(path, ".hcl"):
		return badInput("%s: --out %s names a pipeline file (.hcl): a pipeline folder loads every .hcl file in it, and would not load with this one; name the file otherwise", cmd, out)
	}
	return nil
}

// checkOutOfReads refuses (exit 2) an --out (out as given) of cmd that
// would write over a file some run of the pipeline reads: checkOut's (a
// file inside the cache folder, a pipeline file, one of reads: the
// pipeline's files and this command's var files), a var file any run of
// the cache was given (runVarFiles: the next run given it again would
// read the page or the plan), and a file a stage reads or writes (work,
// absolute, what saying whose: checkNotWorkFile). plan, graph and report
// --out share it, so none of them writes where another would refuse to.
func (a *app) checkOutOfReads(cmd, out string, reads, work []string, what string) error {
	path := a.path(out)
	if err := a.checkOut(cmd, out, path, reads...); err != nil {
		return err
	}
	if err := checkNotWorkFile(cmd, out, path, "a var file a run of this cache was given (--var-file)", a.root(), a.runVarFiles()); err != nil {
		return err
	}
	return checkNotWorkFile(cmd, out, path, what, a.root(), work)
}

// runVarFiles are the var files the runs of the cache were given, on
// their command line or by the plan they applied (their run_start's args
// and rerun args), absolute: where each run was started, or its --chdir.
func (a *app) runVarFiles() []string {
	starts, _ := runlog.Starts(a.cachePath())
	var out []string
	for _, s := range starts {
		for _, args := range [][]string{s.Args, s.Rerun} {
			for _, f := range runreport.VarFiles(args) {
				out = append(out, runPath(s.Dir, args, f))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// checkNotWorkFile refuses (exit 2) an --out (out as given, path where
// cmd writes it) that is one of files (absolute: files the pipeline's
// nodes read or write, what says which), or inside one that is a folder
// other than the workspace root, the same file through a link counting:
// writing it would destroy a stage's input or output, or add a file to
// its folder.
func checkNotWorkFile(cmd, out, path, what, root string, files []string) error {
	real := realPath(path)
	st, statErr := os.Stat(path)
	for _, f := range files {
		fst, err := os.Stat(f)
		rf := realPath(f)
		folder := err == nil && fst.IsDir() && rf != realPath(root)
		if rf == real || folder && insideFolder(rf, real) || (statErr == nil && err == nil && os.SameFile(st, fst)) {
			return badInput("%s: --out %s is %s, %s: writing it would destroy it; name a file cairn does not read or write for the pipeline", cmd, out, f, what)
		}
	}
	return nil
}

// stageFiles are the files the plan's nodes read and write as they
// declare them (inputs, outputs, result, their kind's declared outputs),
// absolute: a node whose paths are known only after an upstream runs
// has none yet.
func stageFiles(p *plan.Plan) []string {
	var out []string
	add := func(rel string) {
		if rel != "" {
			out = append(out, filepath.Join(p.Graph.Root, rel))
		}
	}
	for _, pn := range p.Nodes {
		sn := pn.Spec
		if sn == nil {
			continue
		}
		for _, f := range append(append(slices.Clip(sn.Common.Inputs), sn.Common.Outputs...), sn.Common.Result) {
			add(f)
		}
		if d, ok := pn.Node.Kind.(stages.OutputDeclarer); ok {
			for _, o := range d.DeclaredOutputs(sn) {
				add(o.Path)
			}
		}
	}
	return out
}
