package plan

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/hashicorp/hcl/v2"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/stages"
)

// fileCallWarnings warns where file(), filesha256(), fileexists() or a
// kind's file function (decisionslots) reads a path a stage of the
// pipeline writes, in an expression whose value enters node keys. The
// call reads the file when the pipeline is evaluated: before the stage
// runs it is absent (or what an earlier run left), after it is written,
// so the value, and the keys it enters, differ from one plan to the next
// and the node runs again at every other apply. Nothing orders the call
// after the stage either. A warning, not an error: the path is matched
// by pattern where the argument is computed (each.key, a for expression),
// and a value that stays out of keys (an evaluation's needed, which is
// how a phase is skipped once its artifact is written) is not this trap.
func (g *Graph) fileCallWarnings() hcl.Diagnostics {
	if !g.anyWriter() {
		return nil
	}
	calls := g.keyedFileCalls()
	if len(calls) == 0 {
		return nil
	}
	writes := g.declaredWrites()
	var diags hcl.Diagnostics
	for _, c := range calls {
		w, path, ok := writtenBy(writes, c)
		if !ok {
			continue
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "File read before the stage that writes it",
			Detail: fmt.Sprintf("%s() reads %s when the pipeline is evaluated, and %s writes it (%s, at %s). Before %s runs the file is absent or holds what an earlier run left, after it is written: the value here, and the keys of the nodes it enters, change from one plan to the next, so those nodes run again at the next apply, and nothing makes them wait for %s. Let the node's process read the file and list it in inputs (the node then waits for %s and is keyed by the file's content), or use stage.%s's result.",
				c.Name, path, w.node.Addr, w.attr, dsl.Pos(w.rng), w.node.Addr, w.node.Addr, w.node.Addr, w.node.Stage.Name),
			Subject: c.Range.Ptr(),
		})
	}
	return diags
}

// anyWriter reports whether a stage of the graph declares a path it
// writes.
func (g *Graph) anyWriter() bool {
	for _, s := range g.StageOrder {
		if _, writes := g.readsWrites(s); writes {
			return true
		}
	}
	return false
}

// writtenBy finds a declared write the call c reads: the path it names,
// one its pattern matches, or, for a path known, an output folder above it.
func writtenBy(writes *pathIndex, c dsl.FileCall) (w declPath, path string, ok bool) {
	if c.Known != "" {
		for d := range writes.overlapping(c.Known) {
			if d.path == c.Known || under(c.Known, d.path) {
				return d, c.Known, true
			}
		}
		return declPath{}, "", false
	}
	for _, p := range writes.sorted {
		if c.Path.MatchString(p) {
			return writes.by[p][0], p, true
		}
	}
	return declPath{}, "", false
}

// keyedFileCalls lists the file function calls in the attributes that
// enter node keys, and in the locals those refer to (through other
// locals too), each once, in the order of the files.
func (g *Graph) keyedFileCalls() []dsl.FileCall {
	some := false
	for _, f := range g.Config.Files {
		some = some || (f != nil && dsl.MayCallFileFunctions(f.Bytes, g.Config.Funcs))
	}
	if !some {
		return nil
	}
	ctx := g.Scope.Context(nil)
	seen := map[hcl.Range]bool{}
	var calls []dsl.FileCall
	add := func(e hcl.Expression) {
		for _, c := range dsl.FileCalls(e, ctx, g.Config.Funcs) {
			if !seen[c.Range] {
				seen[c.Range] = true
				calls = append(calls, c)
			}
		}
	}
	locals := map[string]bool{}
	var todo []string
	refer := func(e hcl.Expression) {
		for _, t := range e.Variables() {
			if t.RootName() != "local" || len(t) < 2 {
				continue
			}
			if a, ok := t[1].(hcl.TraverseAttr); ok && !locals[a.Name] {
				locals[a.Name] = true
				todo = append(todo, a.Name)
			}
		}
	}
	for _, s := range g.StageOrder {
		k, _ := stages.Lookup(s.Kind)
		excluded := keyExcluded(k)
		for name, a := range s.Attrs {
			if notKeyed[name] || excluded[name] {
				continue
			}
			add(a.Expr)
			refer(a.Expr)
		}
	}
	for len(todo) > 0 {
		l := g.Config.Locals[todo[0]]
		todo = todo[1:]
		if l != nil {
			add(l.Expr)
			refer(l.Expr)
		}
	}
	sort.Slice(calls, func(i, j int) bool {
		a, b := calls[i].Range, calls[j].Range
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Start.Byte < b.Start.Byte
	})
	return calls
}

// keyExcluded are the attributes of kind k that stay out of its nodes'
// keys (stages.KeyExcluder), besides the generic notKeyed ones.
func keyExcluded(k stages.Kind) map[string]bool {
	ke, ok := k.(stages.KeyExcluder)
	if !ok {
		return nil
	}
	out := map[string]bool{}
	for _, a := range ke.KeyExcluded() {
		out[a] = true
	}
	return out
}

// declaredWrites are the paths the nodes declare they write: linkPaths'
// when it matched paths, else found now.
func (g *Graph) declaredWrites() *pathIndex {
	_, writes := g.declaredPathIndexes()
	return writes
}

// DeclaredFiles are the paths the nodes declare they read or write
// (inputs, outputs, result and their kinds' paths, such as an evaluation's
// items and scores), absolute, as known when the graph was built (a path
// computed from an upstream's result is not): what a command that writes
// into the workspace, graph --out, must not replace.
func (g *Graph) DeclaredFiles() []string {
	reads, writes := g.declaredPathIndexes()
	var out []string
	for _, x := range []*pathIndex{reads, writes} {
		for _, p := range x.sorted {
			if !filepath.IsAbs(p) {
				p = filepath.Join(g.Root, p)
			}
			out = append(out, p)
		}
	}
	return out
}

// declaredPathIndexes are the paths the nodes declare they read and write:
// linkPaths' when it matched paths, else found now.
func (g *Graph) declaredPathIndexes() (reads, writes *pathIndex) {
	if g.pathDeps != nil {
		return &g.pathDeps.reads, &g.pathDeps.writes
	}
	var r, w pathIndex
	_, found := g.evalNodePaths()
	for i := range found {
		r.add(found[i].reads)
		w.add(found[i].writes)
	}
	r.seal()
	w.seal()
	return &r, &w
}
