package engine

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/stages"
)

// A path a node declares: an element of inputs, outputs or result, with
// the position of the expression that wrote it.
type declPath struct {
	node *Node
	attr string // inputs, outputs or result
	path string // cleaned, workspace-relative
	rng  hcl.Range
}

// linkPaths makes a node whose inputs name another stage's declared output
// depend on the node that writes it, as make and ninja do: an input equal
// to an output, below an output folder, or a folder holding an output. The
// dependency is a data dependency: the node waits for the writer, and the
// writer's output digest enters the node's key. Only paths known when the
// graph is built (from variables, locals and each) are matched; a path
// computed from a result is not.
//
// Two nodes of one stage cannot wait for each other, and a writer that
// itself depends on the reader would make a cycle: both are errors that
// say what to change.
func (g *Graph) linkPaths() hcl.Diagnostics {
	var readers, writers []*dsl.Stage
	for _, s := range g.StageOrder {
		if s.Attrs["inputs"] != nil {
			readers = append(readers, s)
		}
		if s.Attrs["outputs"] != nil || s.Attrs["result"] != nil {
			writers = append(writers, s)
		}
	}
	if len(readers) == 0 || len(writers) == 0 {
		return nil
	}
	byPath := map[string][]declPath{}
	for _, s := range writers {
		for _, n := range g.StageNodes[s.Name] {
			for _, attr := range []string{"outputs", "result"} {
				for _, p := range g.declaredPaths(n, attr) {
					byPath[p.path] = append(byPath[p.path], p)
				}
			}
		}
	}
	if len(byPath) == 0 {
		return nil
	}
	written := make([]string, 0, len(byPath))
	for p := range byPath {
		written = append(written, p)
	}
	sort.Strings(written)

	var diags hcl.Diagnostics
	reported := map[string]bool{}
	added := false
	for _, s := range readers {
		for _, n := range g.StageNodes[s.Name] {
			for _, in := range g.declaredPaths(n, "inputs") {
				for _, out := range writersOf(in.path, byPath, written) {
					u := out.node
					if u == n {
						continue
					}
					if u.Stage == n.Stage {
						if k := n.Addr + "\x00" + in.path; !reported[k] {
							reported[k] = true
							diags = append(diags, &hcl.Diagnostic{
								Severity: hcl.DiagError, Summary: "Input written by the same stage",
								Detail: fmt.Sprintf("%s reads %s (inputs), which %s of the same stage writes (%s): nodes of one stage do not wait for each other, so it would read whatever is there when it starts. Move the part that writes %s into a stage of its own; the reader then waits for it.",
									n.Addr, in.path, u.Addr, out.attr, out.path),
								Subject: in.rng.Ptr(),
							})
						}
						continue
					}
					if g.stageReaches(u.Stage.Name, n.Stage.Name) {
						if k := n.Stage.Name + "\x00" + u.Stage.Name + "\x00" + in.path; !reported[k] {
							reported[k] = true
							diags = append(diags, &hcl.Diagnostic{
								Severity: hcl.DiagError, Summary: "Dependency cycle",
								Detail: fmt.Sprintf("%s reads %s (inputs), which %s writes (%s); but stage.%s itself runs after stage.%s, so neither could start first. Read the file in a later stage, or have stage.%s write it elsewhere.",
									n.Addr, in.path, u.Addr, out.attr, u.Stage.Name, n.Stage.Name, u.Stage.Name),
								Subject: in.rng.Ptr(),
							})
						}
						continue
					}
					if !containsInt(n.Deps, u.ID) {
						n.Deps = append(n.Deps, u.ID)
						sort.Ints(n.Deps)
					}
					n.OrderOnly = removeInt(n.OrderOnly, u.ID)
					if !containsString(g.StageDeps[n.Stage.Name], u.Stage.Name) {
						g.StageDeps[n.Stage.Name] = append(g.StageDeps[n.Stage.Name], u.Stage.Name)
						sort.Strings(g.StageDeps[n.Stage.Name])
						added = true
					}
				}
			}
		}
	}
	if added {
		g.reorderNodes()
	}
	return diags
}

// writersOf lists the declared outputs that overlap an input path: the
// same path, a folder above it, or a path below it.
func writersOf(in string, byPath map[string][]declPath, written []string) []declPath {
	var out []declPath
	for q := in; ; q = filepath.Dir(q) {
		out = append(out, byPath[q]...)
		if q == "." || q == "/" || filepath.Dir(q) == q {
			break
		}
	}
	prefix := in + "/"
	if in == "." {
		prefix = ""
	}
	for i := sort.SearchStrings(written, prefix); i < len(written) && strings.HasPrefix(written[i], prefix); i++ {
		if written[i] != in {
			out = append(out, byPath[written[i]]...)
		}
	}
	return out
}

// declaredPaths evaluates one of a node's path attributes as far as it is
// known before anything runs. Values not known yet, and values that are
// wrong (reported when the node is evaluated), give nothing.
func (g *Graph) declaredPaths(n *Node, attr string) []declPath {
	a := n.Stage.Attrs[attr]
	if a == nil || g.badAttr(n.Stage, a) {
		return nil
	}
	v, d := a.Expr.Value(g.nodeContext(n, unknownInstance, g.evalsStage(n)))
	if d.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
		return nil
	}
	var list []string
	if attr == "result" {
		v, _ = v.Unmark()
		if v.Type() != cty.String {
			return nil
		}
		list = []string{v.AsString()}
	} else {
		var err error
		if list, err = stages.StringList(v); err != nil {
			return nil
		}
	}
	out := make([]declPath, 0, len(list))
	for i, p := range list {
		if p == "" || filepath.IsAbs(p) {
			continue
		}
		clean := filepath.Clean(p)
		if clean == ".." || strings.HasPrefix(clean, "../") {
			continue
		}
		rng := a.Expr.Range()
		if tc, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok && len(tc.Exprs) == len(list) {
			rng = tc.Exprs[i].Range()
		}
		out = append(out, declPath{node: n, attr: attr, path: clean, rng: rng})
	}
	return out
}

// stageReaches reports whether stage from depends on stage to, directly or
// through other stages.
func (g *Graph) stageReaches(from, to string) bool {
	seen := map[string]bool{}
	stack := []string{from}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s == to {
			return true
		}
		if seen[s] {
			continue
		}
		seen[s] = true
		stack = append(stack, g.StageDeps[s]...)
	}
	return false
}

// reorderNodes puts the nodes back in a topological order after new
// stage dependencies were added: stages in the order orderStages gives
// them, each stage's nodes together as expanded, with IDs renumbered.
func (g *Graph) reorderNodes() {
	order, d := g.orderStages()
	if d.HasErrors() {
		return
	}
	expanded := map[string]bool{}
	for _, s := range g.StageOrder {
		expanded[s.Name] = true
	}
	stageOrder := make([]*dsl.Stage, 0, len(g.StageOrder))
	nodes := make([]*Node, 0, len(g.Nodes))
	for _, s := range order {
		if !expanded[s.Name] {
			continue
		}
		stageOrder = append(stageOrder, s)
		nodes = append(nodes, g.StageNodes[s.Name]...)
	}
	newID := make([]int, len(g.Nodes))
	for i, n := range nodes {
		newID[n.ID] = i
	}
	for i, n := range nodes {
		n.ID = i
		remap := func(ids []int) {
			for j, id := range ids {
				ids[j] = newID[id]
			}
			sort.Ints(ids)
		}
		remap(n.Deps)
		remap(n.OrderOnly)
	}
	g.Nodes, g.StageOrder = nodes, stageOrder
}

func containsInt(xs []int, x int) bool {
	i := sort.SearchInts(xs, x)
	return i < len(xs) && xs[i] == x
}

// removeInt returns xs, sorted, without x.
func removeInt(xs []int, x int) []int {
	if i := sort.SearchInts(xs, x); i < len(xs) && xs[i] == x {
		return append(xs[:i], xs[i+1:]...)
	}
	return xs
}

func containsString(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}
