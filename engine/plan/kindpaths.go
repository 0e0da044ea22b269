package plan

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/stages"
)

// kindPaths checks the paths node n's kind names in its attributes, once
// its evaluation sn has no error: the files it reads (stages.InputDeclarer)
// join its inputs, the workspace is checked (stages.WorkspaceChecker), the
// files it writes (stages.OutputDeclarer) are checked like outputs, and
// none of those may be, hold or lie inside one it reads, as spelled or
// where their links lead (readsOwnWrite), nor be a file an argument of its
// worker names, whether or not that exists yet (argNamesWrite). Each error
// names the attribute, at its position.
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
		var refused []stages.DeclaredPath
		for _, in := range d.DeclaredInputs(sn, g.Root) {
			clean, err := g.CheckPath(in.Path)
			if err != nil {
				if !insideRefused(refused, in) {
					// Once: not again for each link below a
					// root refused (an aggregate's).
					diags = append(diags, stages.Diag("Invalid "+in.Attr, err.Error()+".", attrRange(n, sn, in.Attr))...)
				}
				refused = append(refused, in)
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
		pc := g.PathCheck()
		for _, o := range d.DeclaredOutputs(sn) {
			clean, err := g.CheckPath(o.Path)
			if err != nil {
				diags = append(diags, stages.Diag("Invalid "+o.Attr, err.Error()+".", attrRange(n, sn, o.Attr))...)
				continue
			}
			w := kindPath{attr: o.Attr, path: clean}
			d := readsOwnWrite(w, reads, pc, at)
			if d == nil {
				d = g.argNamesWrite(n, sn, w, pc, at)
			}
			diags = append(diags, d...)
		}
	}
	return diags
}

// insideRefused reports whether in lies inside a path of its attribute
// already refused.
func insideRefused(refused []stages.DeclaredPath, in stages.DeclaredPath) bool {
	for _, r := range refused {
		if r.Attr == in.Attr && under(filepath.Clean(in.Path), filepath.Clean(r.Path)) {
			return true
		}
	}
	return false
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
// holding one, as spelled or where their links lead (pc.Leads): apply would
// write over what the node reads, and the next apply would read what it
// wrote (the scores as items, a worker that is no longer one). It names
// both attributes, with their positions (at).
func readsOwnWrite(w kindPath, reads []kindPath, pc *PathChecker, at func(kindPath) hcl.Range) hcl.Diagnostics {
	wWhere := pc.Leads(w.path)
	for _, r := range reads {
		why := overlap(w, r, w.path, r.path, w.path, r.path, at)
		if rWhere := pc.Leads(r.path); why == "" && (wWhere != w.path || rWhere != r.path) {
			why = overlap(w, r, wWhere, rWhere, w.path, r.path, at)
		}
		if why != "" {
			return ownWrite(w, why, at)
		}
	}
	return nil
}

// ownWrite is the refusal of the write w, for the reason why.
func ownWrite(w kindPath, why string, at func(kindPath) hcl.Range) hcl.Diagnostics {
	return stages.Diag("Invalid "+w.attr, why+": apply would write over what the node reads, and the next apply would read what it wrote. Give "+w.attr+" a path of its own, outside what the node reads.", at(w))
}

// overlap says how the write w, leading to wp, meets the read r, leading
// to rp: the same file, inside it, or holding it; "" when they do not
// meet. The paths as spelled are ws and rs: where a link leads elsewhere,
// the reason says where.
func overlap(w, r kindPath, wp, rp, ws, rs string, at func(kindPath) hcl.Range) string {
	rel := 0
	switch {
	case wp == rp:
		rel = 1
	case under(wp, rp):
		rel = 2
	case under(rp, wp):
		rel = 3
	default:
		return ""
	}
	if wp == ws && rp == rs {
		switch rel {
		case 1:
			return fmt.Sprintf("%s %q is the file %s names (%s), which the node reads", w.attr, ws, r.attr, dsl.Pos(at(r)))
		case 2:
			return fmt.Sprintf("%s %q is inside %s %q (%s), a folder the node reads", w.attr, ws, r.attr, rs, dsl.Pos(at(r)))
		}
		return fmt.Sprintf("%s %q holds %s %q (%s), which the node reads", w.attr, ws, r.attr, rs, dsl.Pos(at(r)))
	}
	wd, rd := linkedName(w.attr, ws, wp), linkedName(r.attr, rs, rp)
	switch rel {
	case 1:
		return fmt.Sprintf("%s and %s (%s) are the same file, which the node reads", wd, rd, dsl.Pos(at(r)))
	case 2:
		return fmt.Sprintf("%s is inside %s (%s), a folder the node reads", wd, rd, dsl.Pos(at(r)))
	}
	return fmt.Sprintf("%s holds %s (%s), which the node reads", wd, rd, dsl.Pos(at(r)))
}

// linkedName names an attribute's path as spelled, and where its links
// lead when that is elsewhere.
func linkedName(attr, spelled, where string) string {
	if where == spelled {
		return fmt.Sprintf("%s %q", attr, spelled)
	}
	return fmt.Sprintf("%s %q (which leads through a symlink to %q)", attr, spelled, where)
}

// argNamesWrite refuses a path w the node's kind writes that an element of
// one of its argument lists names (stages.PathAttr.Args: a worker's
// "--resume=out/s.jsonl"), whole or after its first "=", cleaned, relative
// or absolute inside the workspace, as spelled or where links lead,
// whether or not the file exists yet: the worker would read what the node
// writes, and once written it would be one of the worker's files, keying
// the node by what it wrote. Only the file itself counts: a folder an
// argument names that holds the write path (the worker's log folder) is
// the worker's to write in.
func (g *Graph) argNamesWrite(n *Node, sn *stages.Node, w kindPath, pc *PathChecker, at func(kindPath) hcl.Range) hcl.Diagnostics {
	l, ok := n.Kind.(stages.PathLinker)
	if !ok {
		return nil
	}
	wWhere := pc.Leads(w.path)
	bases := [2]string{filepath.Base(w.path), filepath.Base(wWhere)}
	for _, pa := range l.PathAttrs() {
		if !pa.Args || pa.Write {
			continue
		}
		v, ok := sn.Args[pa.Attr]
		if !ok || !v.IsKnown() || v.IsNull() || !(v.Type().IsListType() || v.Type().IsTupleType()) {
			continue
		}
		v, _ = v.Unmark()
		i, of := -1, v.LengthInt()
		for e := range dsl.Elements(v) {
			i++
			e, _ = e.Unmark()
			if !e.IsKnown() || e.IsNull() || e.Type() != cty.String {
				continue
			}
			a := e.AsString()
			var cands [2]string // as stages.ArgPaths, without a slice
			if !strings.Contains(a, "://") {
				if !strings.HasPrefix(a, "-") {
					cands[0] = a
				}
				if eq := strings.IndexByte(a, '='); eq >= 0 && eq+1 < len(a) {
					cands[1] = a[eq+1:]
				}
			}
			for _, p := range cands {
				if p == "" || !strings.Contains(p, bases[0]) && !strings.Contains(p, bases[1]) {
					// Another file: a link to it under another
					// name is not looked for.
					continue
				}
				r := kindPath{attr: pa.Attr, elem: i, of: of}
				if why := g.argNames(w, wWhere, r, a, p, pc, at); why != "" {
					return ownWrite(w, why, at)
				}
			}
		}
	}
	return nil
}

// argNames says how the path p the argument a (the read r) names meets
// the write w, which leads to wWhere: "" when it names another file.
func (g *Graph) argNames(w kindPath, wWhere string, r kindPath, a, p string, pc *PathChecker, at func(kindPath) hcl.Range) string {
	if filepath.IsAbs(p) {
		rel, ok := Below(pc.RootReal(), filepath.Clean(p))
		if !ok {
			rel = g.inWorkspace(p)
		}
		p = rel
	}
	r.path = filepath.Clean(p)
	if r.path == w.path {
		return fmt.Sprintf("%s %q is the file %s argument %q names (%s), which the worker reads", w.attr, w.path, r.attr, a, dsl.Pos(at(r)))
	}
	where := r.path
	if r.path != wWhere {
		if _, err := g.CheckPath(r.path); err != nil {
			return ""
		}
		where = pc.Leads(r.path)
	}
	if where != wWhere {
		return ""
	}
	rd := fmt.Sprintf("%s argument %q", r.attr, a)
	if where != r.path {
		rd += fmt.Sprintf(" (which leads through a symlink to %q)", where)
	}
	return fmt.Sprintf("%s and %s (%s) are the same file, which the worker reads", linkedName(w.attr, w.path, wWhere), rd, dsl.Pos(at(r)))
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
