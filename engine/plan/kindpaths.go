package plan

import (
	"fmt"
	"slices"

	"github.com/hashicorp/hcl/v2"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/stages"
)

// kindPaths checks the paths node n's kind names in its attributes, once
// its evaluation sn has no error: the files it reads (stages.InputDeclarer)
// join its inputs, the workspace is checked (stages.WorkspaceChecker), the
// files it writes (stages.OutputDeclarer) are checked like outputs, and
// none of those may be, hold or lie inside one it reads (readsOwnWrite).
// Each error names the attribute, at its position.
func (g *Graph) kindPaths(n *Node, sn *stages.Node) hcl.Diagnostics {
	var diags hcl.Diagnostics
	// What the node reads, for the check of what it writes: made only for
	// a kind that writes, its positions found only for an error.
	_, writes := n.Kind.(stages.OutputDeclarer)
	var reads []kindPath
	if writes {
		reads = make([]kindPath, 0, len(sn.Common.Inputs)+4)
		for i, p := range sn.Common.Inputs {
			reads = append(reads, kindPath{attr: "inputs", path: p, elem: i, of: len(sn.Common.Inputs)})
		}
	}
	if d, ok := n.Kind.(stages.InputDeclarer); ok {
		// Files named by the kind's attributes key the node like inputs.
		for _, in := range d.DeclaredInputs(sn, g.Root) {
			clean, err := g.CheckPath(in.Path)
			if err != nil {
				diags = append(diags, stages.Diag("Invalid "+in.Attr, err.Error()+".", attrRange(n, sn, in.Attr))...)
				continue
			}
			if writes {
				reads = append(reads, kindPath{attr: in.Attr, path: clean})
			}
			if !slices.Contains(sn.Common.Inputs, clean) {
				sn.Common.Inputs = append(sn.Common.Inputs, clean)
			}
		}
	}
	if c, ok := n.Kind.(stages.WorkspaceChecker); ok && !diags.HasErrors() {
		diags = append(diags, c.CheckWorkspace(sn, g.Root)...)
	}
	if d, ok := n.Kind.(stages.OutputDeclarer); ok && !diags.HasErrors() {
		// Files a kind's attributes name for writing are checked like
		// outputs.
		at := func(p kindPath) hcl.Range {
			if p.of > 0 {
				return g.elemRange(sn, p.attr, p.elem, p.of)
			}
			return attrRange(n, sn, p.attr)
		}
		for _, o := range d.DeclaredOutputs(sn) {
			clean, err := g.CheckPath(o.Path)
			if err != nil {
				diags = append(diags, stages.Diag("Invalid "+o.Attr, err.Error()+".", attrRange(n, sn, o.Attr))...)
				continue
			}
			diags = append(diags, readsOwnWrite(kindPath{attr: o.Attr, path: clean}, reads, at)...)
		}
	}
	return diags
}

// kindPath is a path a node's attribute names, cleaned: the attribute
// whole, or its element elem of of (of > 0).
type kindPath struct {
	attr, path string
	elem, of   int
}

// readsOwnWrite refuses a path w the node's kind writes that is one the
// node reads (an evaluate stage's scores written over its items or its
// worker script), inside a folder it reads (its bundle), or a folder
// holding one: apply would write over what the node reads, and the next
// apply would read what it wrote (the scores as items, a worker that is no
// longer one). It names both attributes, with their positions (at).
func readsOwnWrite(w kindPath, reads []kindPath, at func(kindPath) hcl.Range) hcl.Diagnostics {
	for _, r := range reads {
		var why string
		switch {
		case r.path == w.path:
			why = fmt.Sprintf("%s %q is the file %s names (%s), which the node reads", w.attr, w.path, r.attr, dsl.Pos(at(r)))
		case under(w.path, r.path):
			why = fmt.Sprintf("%s %q is inside %s %q (%s), a folder the node reads", w.attr, w.path, r.attr, r.path, dsl.Pos(at(r)))
		case under(r.path, w.path):
			why = fmt.Sprintf("%s %q holds %s %q (%s), which the node reads", w.attr, w.path, r.attr, r.path, dsl.Pos(at(r)))
		default:
			continue
		}
		return stages.Diag("Invalid "+w.attr, why+": apply would write over what the node reads, and the next apply would read what it wrote. Give "+w.attr+" a path of its own, outside what the node reads.", at(w))
	}
	return nil
}

// under reports whether path p lies inside the folder dir ("/"-separated,
// clean).
func under(p, dir string) bool {
	rel, ok := relUnder(dir, p)
	return ok && rel != ""
}

// attrRange locates the attribute attr of node n's stage; the stage's first
// line when the stage does not write it (a default).
func attrRange(n *Node, sn *stages.Node, attr string) hcl.Range {
	if r, ok := sn.LookupRange(attr); ok {
		return r
	}
	return n.Stage.DeclRange
}
