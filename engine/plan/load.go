package plan

import (
	"fmt"
	"github.com/cairn-run/cairn/dsl/gcpace"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/stages"
)

// LoadOptions say where a pipeline is and what its variables are.
type LoadOptions struct {
	// Path is a pipeline file or directory, relative to Root or absolute.
	Path string
	// Root is the workspace root: commands run there and relative paths
	// resolve against it.
	Root string
	Vars dsl.VarInputs
	// CacheDir is the cache folder the pipeline will use (default: .cairn
	// in Root): declared paths must stay out of it (Graph.SetCacheDir).
	CacheDir string
	// Validate loads without requiring values: a required variable that
	// has none is unknown, a for_each over it waits for values (one
	// placeholder instance stands for the stage's instances, see
	// Graph.Waiting), and every check that needs no value still runs.
	// The graph is then for checking only, never for plan or apply.
	Validate bool
}

// Loaded is a decoded, evaluated and expanded pipeline.
type Loaded struct {
	Loader *dsl.Loader
	Config *dsl.Config
	Graph  *Graph
}

// Files returns the parsed files, for diagnostic snippets.
func (l *Loaded) Files() map[string]*hcl.File {
	if l == nil || l.Loader == nil {
		return nil
	}
	return l.Loader.Parser.Files()
}

// Load parses, decodes, resolves variables and locals, and builds the node
// graph. The Loaded value is returned even with errors so callers can print
// diagnostics with source snippets.
func Load(opts LoadOptions) (*Loaded, hcl.Diagnostics) {
	root := opts.Root
	if root == "" {
		root, _ = os.Getwd()
	}
	root, _ = filepath.Abs(root)
	path := opts.Path
	if path == "" {
		path = "."
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	// Show pipeline files relative to the current directory when they are
	// below it: diagnostics then read "pipelines/x.hcl:12:3".
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
			path = rel
		}
	}
	loader := dsl.NewLoader(stages.Registry{})
	loader.Funcs = stages.Functions
	l := &Loaded{Loader: loader}
	if d := varFilesInFolder(path, opts.Vars.Args); d != nil {
		return l, hcl.Diagnostics{d}
	}
	cfg, diags := loader.Load(path)
	if cfg == nil {
		return l, diags
	}
	defer func() { oneFileHint(cfg, diags) }()
	// Keep going after errors so that one run reports every problem:
	// variables, references and cycles are checked even when a block
	// failed to decode.
	l.Config = cfg
	cfg.Root = root
	in := opts.Vars
	in.Unknown = opts.Validate
	vars, d := cfg.ResolveVariables(in, loader.Parser)
	diags = append(diags, d...)
	var unset map[string]bool
	if opts.Validate {
		unset = map[string]bool{}
		for _, name := range cfg.VarOrder {
			if v, ok := vars[name]; ok && !v.IsKnown() && !cfg.Variables[name].HasDefault {
				unset[name] = true
			}
		}
	}
	for _, name := range cfg.VarOrder {
		if _, ok := vars[name]; !ok {
			vars[name] = cty.DynamicVal
		}
	}
	// path.pipeline: the pipeline's folder relative to the workspace
	// root. cfg.Dir is relative to the current directory (as the files
	// are shown), which --chdir makes another folder than the root.
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		dir = cfg.Dir
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		rel = dir
	}
	// Text is NFC: path.root and path.pipeline must not name another
	// folder than the one cairn runs in.
	diags = append(diags, cfg.PathSpelling(root, rel)...)
	scope := dsl.NewScope(vars, root, rel, cfg.Reads, cfg.Funcs)
	before := gcpace.HeapAllocs()
	diags = append(diags, cfg.EvalLocals(scope)...)
	// The for expressions' intermediate collections are most of what
	// locals allocate, garbage once they are evaluated: seed 002's grid
	// made 50 MB of it, which the nodes reuse after this collection
	// (peak RSS 120 -> 70 MB) instead of growing the heap.
	gcpace.Collect(before, localsGarbage)
	seal, d := cfg.CheckSeals(scope)
	diags = append(diags, d...)
	// After an error in a variable or local, its value is unknown: a
	// for_each over it is left unexpanded rather than reported as known
	// only after apply.
	broken := diags.HasErrors() && !valuesKnown(cfg, vars, scope.Locals)
	g, d := build(cfg, scope, root, broken, unset)
	g.Seal = seal
	g.SetCacheDir(opts.CacheDir)
	diags = append(diags, d...)
	if diags.HasErrors() {
		// Evaluate the stages that could be expanded, so that bad
		// attribute values are reported along with everything else.
		diags = append(diags, g.CheckStages()...)
		return l, dsl.TidyDiagnostics(diags)
	}
	l.Graph = g
	return l, diags
}

// oneFileHint adds to the errors that another file of a folder pipeline
// can cause (a required variable, a second pipeline block) which file it
// is and how to load one file instead.
func oneFileHint(cfg *dsl.Config, diags hcl.Diagnostics) {
	if len(cfg.Paths) < 2 {
		return
	}
	for _, d := range diags {
		if d.Severity != hcl.DiagError || d.Subject == nil {
			continue
		}
		if !strings.HasPrefix(d.Summary, "No value for required variable") && d.Summary != "Duplicate pipeline block" {
			continue
		}
		dir := "the folder " + cfg.Dir
		if cfg.Dir == "." {
			dir = "the current folder"
		}
		d.Detail += fmt.Sprintf(" It comes from %s, one of the %d .hcl files in %s, which cairn reads as one pipeline; to load one file, name it: cairn plan FILE, cairn apply FILE.",
			filepath.Base(d.Subject.Filename), len(cfg.Paths), dir)
	}
}

// valuesKnown reports whether every variable and local value evaluated:
// after an error in one, it is unknown (or missing).
func valuesKnown(cfg *dsl.Config, vars, locals map[string]cty.Value) bool {
	for _, v := range vars {
		if !v.IsWhollyKnown() {
			return false
		}
	}
	for _, n := range cfg.LocalOrd {
		v, ok := locals[n]
		if !ok || !v.IsWhollyKnown() {
			return false
		}
	}
	return true
}

// CheckStages evaluates every node at plan level (unknown results) and
// runs the kinds' stage-wide checks, so `validate` reports bad attribute
// values without touching the cache.
func (g *Graph) CheckStages() hcl.Diagnostics {
	// Like a plan, the check looks at the workspace at one moment: paths
	// are checked against folder listings, not one lstat each.
	g.setPathSnapshot(true)
	defer g.setPathSnapshot(false)
	var diags hcl.Diagnostics
	byID := make([]*stages.Node, len(g.Nodes))
	// Every node evaluates with its upstreams unknown: those reading
	// stage objects too go ahead.
	all := func(*Node) bool { return true }
	ahead := g.evalAhead(all, all, nil, nil)
	for _, n := range g.Nodes {
		sn, d := ahead[n.ID].sn, ahead[n.ID].diags
		if !ahead[n.ID].done {
			sn, d = g.EvalNode(n, UnknownInstance)
		}
		diags = append(diags, d...)
		byID[n.ID] = sn
	}
	diags = append(diags, g.stageChecks(byID)...)
	diags = append(diags, g.writeClashes(byID, nil)...)
	return uniqueDiags(append(diags, g.servedModelChecks(byID)...))
}

// uniqueDiags drops repeats: the instances of one stage evaluate the same
// expressions, and a mistake that does not depend on the instance would
// otherwise be reported once per instance.
func uniqueDiags(diags hcl.Diagnostics) hcl.Diagnostics {
	if len(diags) < 2 {
		return diags
	}
	seen := make(map[string]bool, len(diags))
	out := diags[:0:0]
	for _, d := range diags {
		k := fmt.Sprintf("%d\x00%s\x00%s", d.Severity, d.Summary, d.Detail)
		if d.Subject != nil {
			k += "\x00" + d.Subject.String()
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, d)
		}
	}
	return out
}

// stageChecks runs the kinds' whole-stage checks on evaluated nodes.
func (g *Graph) stageChecks(byID []*stages.Node) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, s := range g.StageOrder {
		k, _ := stages.Lookup(s.Kind)
		sc, ok := k.(stages.StageChecker)
		if !ok || g.Waiting[s.Name] != "" {
			// A check of the whole stage (how many instances) waits
			// for the values its for_each needs.
			continue
		}
		var specs []*stages.Node // the instances that evaluated, in order
		for _, n := range g.StageNodes[s.Name] {
			if sn := byID[n.ID]; sn != nil {
				specs = append(specs, sn)
			}
		}
		info := &stages.StageInfo{Name: s.Name, Nodes: specs, DeclRange: s.DeclRange}
		if s.ForEach != nil {
			info.ForEach = s.ForEach.Range().Ptr()
		}
		for _, n := range g.StageNodes[s.Name] {
			info.Keys = append(info.Keys, n.Inst.Key)
		}
		diags = append(diags, sc.CheckStage(info)...)
	}
	return diags
}

// Summary describes the graph in one line.
func (g *Graph) Summary() string {
	if len(g.Waiting) > 0 {
		nodes := 0
		for _, n := range g.Nodes {
			if !n.waiting {
				nodes++
			}
		}
		wait := "wait"
		if len(g.Waiting) == 1 {
			wait = "waits"
		}
		return fmt.Sprintf("pipeline %q: %s, %s known (%s %s for values)%s", g.Config.Name, countOf(len(g.Config.Stages), "stage"),
			countOf(nodes, "node"), countOf(len(g.Waiting), "stage"), wait, g.sealNote())
	}
	return fmt.Sprintf("pipeline %q: %s, %s%s", g.Config.Name, countOf(len(g.Config.Stages), "stage"), countOf(len(g.Nodes), "node"), g.sealNote())
}

// sealNote says that the sealed files were checked and match: a check that
// passes is worth a word, since one that fails refuses the run.
func (g *Graph) sealNote() string {
	if len(g.Seal) == 0 {
		return ""
	}
	if len(g.Seal) == 1 {
		return ", 1 sealed file matches its sha256"
	}
	return fmt.Sprintf(", %d sealed files match their sha256", len(g.Seal))
}

// Unset lists the required variables that were given no value (validate
// without values) as var.NAME, in declaration order.
func (g *Graph) Unset() []string {
	var out []string
	for _, name := range g.Config.VarOrder {
		if g.unset[name] {
			out = append(out, "var."+name)
		}
	}
	return out
}

// WaitingStage is a stage whose for_each waits for values (validate
// without values): what it waits for, and where its for_each is.
type WaitingStage struct {
	Stage    string    `json:"stage"`
	WaitsFor string    `json:"waits_for"`
	Range    hcl.Range `json:"range"`
}

// WaitingStages lists the stages whose for_each waits for values, in
// declaration order.
func (g *Graph) WaitingStages() []WaitingStage {
	var out []WaitingStage
	for _, s := range g.Config.Stages {
		if w := g.Waiting[s.Name]; w != "" {
			out = append(out, WaitingStage{Stage: s.Address(), WaitsFor: w, Range: s.ForEach.Range()})
		}
	}
	return out
}

func countOf(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// varFilesInFolder refuses a --var-file that is one of the *.hcl files a
// folder pipeline at path reads: it would be read as part of the pipeline
// (its values as unexpected arguments), not as values.
func varFilesInFolder(path string, args []dsl.VarArg) *hcl.Diagnostic {
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return nil
	}
	dir, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	for _, v := range args {
		if !v.File || !strings.HasSuffix(v.Value, ".hcl") {
			continue
		}
		if f, err := filepath.Abs(v.Value); err == nil && filepath.Dir(f) == dir {
			return &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Variable file inside the pipeline folder",
				Detail: fmt.Sprintf("--var-file %s is in the pipeline folder %s, which is read as one pipeline: every *.hcl file in it, %s too, as stages and variables, not as values. Rename it %s.vars (or write it as .json), or move it out of the folder.",
					v.Value, dir, filepath.Base(f), strings.TrimSuffix(filepath.Base(f), ".hcl")),
			}
		}
	}
	return nil
}

// localsGarbage is how much the locals may allocate before their garbage
// is collected at once.
const localsGarbage = 16 << 20

// linkGarbage is how much linking stages by paths may allocate before its
// garbage is collected (Collect). Most of what it allocates stays live:
// the nodes' contexts and path values, which their evaluation takes
// (aheadEval), and the paths' index. Seed 002's grid allocates 19 MB
// there, 10 of them garbage: a collection freeing them cost 6% of its
// plan's time (it marks while both cores evaluate nodes) and kept its
// peak RSS at 74 MiB; without it, 89 MiB.
const linkGarbage = 64 << 20

// NodeHeap is about what evaluating and planning one node keeps live, for
// gcpace.Expect: 2.5 KB for a node of bench/gen's 100k grid (three
// attributes), more for a node of many attributes.
const NodeHeap = 4 << 10
