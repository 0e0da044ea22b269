package stages

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/stages/aggregate"
	"github.com/cairn-run/cairn/stats"
	"github.com/cairn-run/cairn/storage/atomicfile"
)

// Aggregate is seed 002's aggregation as a stage: the optimizer jobs under
// its roots become one row per method and cell over seeds 0, 1 and 2, with
// a stratified paired bootstrap and Holm families (docs/aggregate.md).
//
//	stage "aggregate" "summary" {
//	  roots                 = ["runs"]        # folders (or result.json files) in the workspace
//	  family                = "task"          # task (default), method or none
//	  bootstrap             = 10000           # replicates per row
//	  resample              = "within-seed"   # or "shared-items": one draw of items for every seed
//	  include_nonconformant = false
//	  out_dir               = "reports/summary" # default reports/<stage name>
//	  cpus                  = 4               # cores for the bootstrap; the result does not depend on it
//	}
//
// The roots are the node's inputs: their content keys it, so the node reruns
// when a job's files change and is cached otherwise; a job folder linked
// into a root keys it by its files, as it is read. It writes
// aggregate.tsv, summary.json and forest.svg into out_dir (outputs,
// restored on a cache hit); its result is the summary.
type Aggregate struct{}

func init() { Register(Aggregate{}) }

// Name implements Kind.
func (Aggregate) Name() string { return "aggregate" }

// Version implements Kind.
func (Aggregate) Version() int { return 2 }

// Schema implements Kind.
func (Aggregate) Schema() *hcl.BodySchema {
	return &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "roots", Required: true},
		{Name: "family"},
		{Name: "bootstrap"},
		{Name: "resample"},
		{Name: "include_nonconformant"},
		{Name: "out_dir"},
	}}
}

// The files an aggregate node writes into its out_dir.
const (
	AggregateTSV  = "aggregate.tsv"
	AggregateJSON = "summary.json"
	AggregateSVG  = "forest.svg"
)

type aggregateArgs struct {
	opts   aggregate.Options
	outDir string
}

// Check implements Kind.
func (Aggregate) Check(n *Node) hcl.Diagnostics {
	_, diags := aggregateDecode(n)
	return diags
}

// PathAttrs implements PathLinker.
func (Aggregate) PathAttrs() []PathAttr { return aggregatePaths }

var aggregatePaths = []PathAttr{{Attr: "roots"}, {Attr: "out_dir", Write: true, Default: reportsDefault}}

// DeclaredInputs implements InputDeclarer: the roots key the node by
// content, and so do the links below them that the aggregate follows (a
// job folder linked into a root is read through the link: its files, not
// the link's text, must key the node). A link leading out of the
// workspace is left to CheckWorkspace, which refuses it.
func (Aggregate) DeclaredInputs(n *Node, root string) []DeclaredPath {
	a, diags := aggregateDecode(n)
	if diags.HasErrors() {
		return nil
	}
	out := declaredPaths("roots", a.opts.Roots...)
	links, _ := aggregate.Links(root, a.opts.Roots) // unreadable: Run says why
	for _, l := range links {
		if _, outside := leavesWorkspace(root, l); !outside {
			out = append(out, DeclaredPath{Attr: "roots", Path: l})
		}
	}
	return out
}

// CheckWorkspace implements WorkspaceChecker: a link below the roots
// that leads out of the workspace is refused before anything runs. The
// aggregate would read the jobs there, and the engine keys nothing
// outside the workspace.
func (Aggregate) CheckWorkspace(n *Node, root string) hcl.Diagnostics {
	a, diags := aggregateDecode(n)
	if diags.HasErrors() {
		return nil
	}
	links, _ := aggregate.Links(root, a.opts.Roots)
	for _, l := range links {
		if real, outside := leavesWorkspace(root, l); outside {
			return Diag("Invalid roots", outsideLink(n, l, real, root), n.Range("roots"))
		}
	}
	return nil
}

// leavesWorkspace reports whether the workspace path rel resolves, through
// its links, to a place outside the workspace root, and that place.
func leavesWorkspace(root, rel string) (string, bool) {
	real, err := filepath.EvalSymlinks(filepath.Join(root, rel))
	if err != nil {
		return "", false
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		realRoot = root
	}
	r, err := filepath.Rel(realRoot, real)
	return real, err != nil || !filepath.IsLocal(r)
}

// outsideLink is the refusal of a link below an aggregate's roots that
// leads out of the workspace.
func outsideLink(n *Node, link, real, root string) string {
	return fmt.Sprintf("%s: the link %s below its roots leads to %s, outside the workspace (%s). The aggregate reads the jobs a link leads to, and only files in the workspace can key the node: copy the jobs into the workspace, or link to a folder inside it.", n.Address, link, real, root)
}

// unkeyedLinks refuses a reading of the roots through a link the node's
// key does not hold (one made since the node was planned) or one that
// leads out of the workspace: what it read would not be what keys it.
// "" when there is none.
func unkeyedLinks(n *Node, a aggregateArgs, root string) string {
	links, err := aggregate.Links(root, a.opts.Roots)
	if err != nil {
		return "" // aggregate.Run says why
	}
	for _, l := range links {
		if real, outside := leavesWorkspace(root, l); outside {
			return outsideLink(n, l, real, root)
		}
		if !slices.Contains(n.Common.Inputs, l) {
			return fmt.Sprintf("%s: the link %s below its roots was made after the node was planned, so the jobs it leads to are not in the node's key; apply again", n.Address, l)
		}
	}
	return ""
}

// DeclaredOutputs implements OutputDeclarer: the report folder.
func (Aggregate) DeclaredOutputs(n *Node) []DeclaredPath {
	a, diags := aggregateDecode(n)
	if diags.HasErrors() {
		return nil
	}
	return []DeclaredPath{{Attr: "out_dir", Path: a.outDir}}
}

func aggregateDecode(n *Node) (aggregateArgs, hcl.Diagnostics) {
	a := aggregateArgs{outDir: "reports/" + n.Stage}
	a.opts.Family = aggregate.FamilyTask
	a.opts.Replicates = stats.DefaultReplicates
	a.opts.Resample = stats.ResampleWithinSeed
	var diags hcl.Diagnostics
	known := func(attr string) (cty.Value, bool) {
		v, ok := n.Args[attr]
		if !ok || !v.IsWhollyKnown() || v.IsNull() {
			return cty.NilVal, false
		}
		v, _ = v.UnmarkDeep()
		return v, true
	}
	bad := func(attr, detail string) {
		diags = append(diags, Diag("Invalid "+attr, detail, n.Range(attr))...)
	}
	if v, ok := known("roots"); ok {
		roots, err := StringList(v)
		switch {
		case err != nil:
			bad("roots", fmt.Sprintf("roots is a list of folders (or result.json files) in the workspace: %s.", err))
		case len(roots) == 0:
			bad("roots", "roots must name at least one folder holding the optimizer jobs' result.json files.")
		}
		for _, r := range roots {
			clean, err := relPath(r)
			if err != nil {
				bad("roots", "roots: "+err.Error())
				continue
			}
			a.opts.Roots = append(a.opts.Roots, clean)
		}
	}
	if v, ok := known("family"); ok {
		if !v.Type().Equals(cty.String) || !slices.Contains(aggregate.FamilyNames, v.AsString()) {
			bad("family", fmt.Sprintf("family is %q (rows sharing dataset × model), %q (rows sharing the method) or %q (no correction).", aggregate.FamilyTask, aggregate.FamilyMethod, aggregate.FamilyNone))
		} else {
			a.opts.Family = v.AsString()
		}
	}
	if v, ok := known("bootstrap"); ok {
		b, ok := wholeNumber(v)
		if !ok || b < 1 || b > stats.MaxReplicates {
			bad("bootstrap", fmt.Sprintf("bootstrap is a whole number of replicates from 1 to %d (the protocol uses %d).", stats.MaxReplicates, stats.DefaultReplicates))
		} else {
			a.opts.Replicates = b
		}
	}
	if v, ok := known("resample"); ok {
		if !v.Type().Equals(cty.String) || !slices.Contains(stats.ResampleNames, v.AsString()) {
			bad("resample", fmt.Sprintf("resample is %q (each seed's items resampled on their own, the protocol's method) or %q (one draw of items used for every seed).", stats.ResampleWithinSeed, stats.ResampleSharedItems))
		} else {
			a.opts.Resample = v.AsString()
		}
	}
	if v, ok := known("include_nonconformant"); ok {
		if !v.Type().Equals(cty.Bool) {
			bad("include_nonconformant", "include_nonconformant must be true or false.")
		} else {
			a.opts.IncludeNonconformant = v.True()
		}
	}
	if v, ok := known("out_dir"); ok {
		var clean string
		var err error
		if v.Type().Equals(cty.String) {
			clean, err = relPath(v.AsString())
		} else {
			err = errors.New("must be a workspace-relative path")
		}
		if err != nil {
			bad("out_dir", "out_dir "+err.Error())
		} else {
			a.outDir = clean
		}
	}
	for _, r := range a.opts.Roots {
		switch {
		case a.outDir == ".":
			bad("out_dir", fmt.Sprintf("out_dir %q is the workspace root itself: the report would be written among the runs it reads; name a folder inside it, like \"reports/%s\".", a.outDir, n.Stage))
		case r == ".":
			bad("roots", fmt.Sprintf("the root %q is the whole workspace, which holds out_dir %q: the node's files would be among its own inputs and change its key at every run; name the folders that hold the runs in roots.", r, a.outDir))
		case within(a.outDir, r) || within(r, a.outDir):
			bad("out_dir", fmt.Sprintf("out_dir %q and the root %q overlap: the node's files would be among its own inputs and change its key at every run; put the report elsewhere.", a.outDir, r))
		default:
			continue
		}
		break
	}
	return a, diags
}

// within reports whether the clean relative path p is dir or lies below it.
func within(p, dir string) bool {
	return p == dir || dir == "." || strings.HasPrefix(p, dir+"/")
}

// Run implements Kind.
// staleTables says, for an aggregation refused, which of its files an
// earlier one left in outDir: they are not of the inputs just refused,
// and whoever reads them after the failure is told so. "" when none.
func staleTables(root, outDir string) string {
	var left []string
	for _, f := range []string{AggregateTSV, AggregateJSON, AggregateSVG} {
		if _, err := os.Lstat(filepath.Join(root, outDir, f)); err == nil {
			left = append(left, f)
		}
	}
	if len(left) == 0 {
		return ""
	}
	return fmt.Sprintf("; nothing was written: the %s in %s are an earlier aggregation's, not of these inputs", dsl.AndList(left), outDir)
}

func (Aggregate) Run(ctx context.Context, n *Node, rt Runtime) (*Outcome, error) {
	a, diags := aggregateDecode(n)
	if diags.HasErrors() {
		return nil, diags
	}
	if msg := unkeyedLinks(n, a, rt.Root()); msg != "" {
		return &Outcome{Class: failclass.Setup, Message: msg}, nil
	}
	a.opts.Dir = rt.Root()
	a.opts.Workers = max(n.Common.CPUs, 1)
	s, err := aggregate.Run(ctx, a.opts)
	switch {
	case ctx.Err() != nil:
		return &Outcome{Class: failclass.Interrupted, Message: "interrupted during the bootstrap"}, nil
	case errors.Is(err, aggregate.ErrBadInput):
		return &Outcome{Class: failclass.Setup, Message: err.Error() + staleTables(rt.Root(), a.outDir)}, nil
	case err != nil:
		return nil, err
	}
	var tsv, js, svg bytes.Buffer
	if err := s.TSV(&tsv); err != nil {
		return nil, err
	}
	if err := s.JSON(&js); err != nil {
		return nil, err
	}
	if err := s.SVG(&svg); err != nil {
		return nil, err
	}
	files := []string{
		filepath.ToSlash(filepath.Join(a.outDir, AggregateTSV)),
		filepath.ToSlash(filepath.Join(a.outDir, AggregateJSON)),
		filepath.ToSlash(filepath.Join(a.outDir, AggregateSVG)),
	}
	for i, data := range [][]byte{tsv.Bytes(), js.Bytes(), svg.Bytes()} {
		if err := atomicfile.Write(filepath.Join(rt.Root(), files[i]), data, false); err != nil {
			return nil, fmt.Errorf("aggregate: %w", err)
		}
	}

	w := &bytes.Buffer{}
	defer emitOutput(rt, n.Address, w)
	for _, sk := range s.Skipped {
		fmt.Fprintf(w, "  %s: %s\n", n.Address, sk.Warning())
	}
	for _, c := range s.CannotRejectWarnings() {
		fmt.Fprintf(w, "  %s: %s\n", n.Address, c)
	}
	var incomplete, nonconformant []string
	for _, r := range s.Rows {
		if r.Status != aggregate.StatusOK {
			incomplete = append(incomplete, r.Method+" "+r.CellID+" ("+r.Reason+")")
		}
		if len(r.Nonconformant) > 0 {
			nonconformant = append(nonconformant, r.Method+" "+r.CellID+" ("+strings.Join(r.Nonconformant, "; ")+")")
		}
	}
	scheme := ""
	if s.Resample != stats.ResampleWithinSeed {
		scheme = " resampling " + s.Resample
	}
	fmt.Fprintf(w, "\n%s: %d row(s) over seeds 0, 1, 2; %d replicates%s, family %s\n\n", n.Address, len(s.Rows), s.Replicates, scheme, s.Family)
	_, _ = w.Write(tsv.Bytes())
	if len(incomplete) > 0 {
		fmt.Fprintf(w, "\nIncomplete: %s\n", strings.Join(incomplete, "; "))
	}
	if len(nonconformant) > 0 {
		fmt.Fprintf(w, "\nNon-conformant (included on request): %s\n", strings.Join(nonconformant, "; "))
	}
	fmt.Fprintf(w, "\nTable: %s; summary: %s; plot: %s\n\n", files[0], files[1], files[2])
	return &Outcome{Result: js.Bytes(), Files: files}, nil
}
