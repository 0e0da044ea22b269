package plan

import (
	"encoding/json"
	"errors"
	"io/fs"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/cairn-run/cairn/engine/fsdigest"
	"github.com/cairn-run/cairn/stages"
)

// definitionVersion names the format of a node's definition: changing
// what goes into one means a new version.
const definitionVersion = "cairn.plan.definition.v1"

// unknownPart stands, in a definition, for the part of a value that is
// known only after apply.
var unknownPart = []byte(`{"known_after_apply":true}`)

// definitions are, by node ID, the digests of what the plan knows of the
// key of each node planned whose key is known only after apply (a "may
// run"): its kind, its keyed arguments with the parts that wait for an
// upstream's result marked so (and, for such an argument, what its
// expression is made of: argSource), the seal, and the digest of each
// path it reads that no ancestor writes; an ancestor's output enters its
// key as that ancestor's output digest, once it ran. A saved plan holds
// them, and apply refuses one that is another now, as it refuses a
// changed key: a node the plan has as "may run" runs what was planned, or
// nothing. "" for the other nodes.
func (p *Plan) definitions() []string {
	out := make([]string, len(p.Nodes))
	stat := p.stat
	if stat == nil {
		stat = fsdigest.Load("")
	}
	var x *outputIndex
	for _, pn := range p.Nodes {
		if pn.Skipped || pn.Key != "" || pn.Spec == nil {
			continue
		}
		if x == nil {
			x = &outputIndex{}
			for _, w := range p.Nodes {
				x.add(w)
			}
		}
		out[pn.Node.ID] = p.Graph.definition(pn.Node, pn.Spec, x, stat)
	}
	return out
}

// definition is the digest of what is known of n's key before apply
// (definitions): an envelope of its own, of another version, so that it
// is never taken for a key. x holds what the planned nodes write.
func (g *Graph) definition(n *Node, sn *stages.Node, x *outputIndex, stat *fsdigest.Cache) string {
	e := &Envelope{V: definitionVersion, Args: map[string]json.RawMessage{}, Inputs: map[string]string{}, Seal: g.Seal}
	if n.Kind != nil {
		e.Kind = n.Kind.Name()
		e.KindVersion = n.Kind.Version()
	}
	keyedArgsAs(n, sn, e.Args, unknownPart)
	if v, ok := sn.Args["inputs"]; ok && !v.IsWhollyKnown() {
		// The paths known of inputs that are not all known yet.
		e.Args["inputs"], _ = canonicalJSONAs(v, unknownPart)
	}
	var partly []string
	for name := range e.Args {
		if !sn.Args[name].IsWhollyKnown() {
			partly = append(partly, name)
		}
	}
	for _, name := range partly {
		if a := n.Stage.Attrs[name]; a != nil {
			e.Args["source "+name] = g.argSource(a.Expr, sn.EvalContext)
		}
	}
	for _, kp := range g.keyedPaths(n, sn, stat) {
		e.Inputs[kp.path] = g.inputDefinition(n, kp, x)
	}
	return e.Key()
}

// argSource is what the expression of an argument not wholly known is
// made of: its tokens (its text less spaces and comments) and the value
// in ctx of each reference it makes, its parts known only after apply
// marked so. The value alone does not say it: a template that reads an
// upstream's result is unknown as a whole, whatever else it holds.
func (g *Graph) argSource(expr hcl.Expression, ctx *hcl.EvalContext) json.RawMessage {
	var src struct {
		Tokens []string                   `json:"tokens"`
		Refs   map[string]json.RawMessage `json:"refs"`
	}
	text := func(r hcl.Range) []byte {
		f := g.Config.Files[r.Filename]
		if f == nil || r.End.Byte > len(f.Bytes) || r.Start.Byte > r.End.Byte {
			return nil
		}
		return f.Bytes[r.Start.Byte:r.End.Byte]
	}
	r := expr.Range()
	toks, _ := hclsyntax.LexExpression(text(r), r.Filename, r.Start)
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenNewline, hclsyntax.TokenComment, hclsyntax.TokenEOF:
		default:
			src.Tokens = append(src.Tokens, string(t.Bytes))
		}
	}
	src.Refs = map[string]json.RawMessage{}
	for _, t := range expr.Variables() {
		val := json.RawMessage(unknownPart)
		if ctx != nil {
			if v, diags := t.TraverseAbs(ctx); !diags.HasErrors() {
				val, _ = canonicalJSONAs(v, unknownPart)
			}
		}
		src.Refs[string(text(t.SourceRange()))] = val
	}
	b, _ := json.Marshal(src)
	return b
}

// inputDefinition is what a definition holds of the path kp that n
// reads: its digest now, or, where an ancestor of n writes there, not
// that (the ancestor's output enters n's key instead).
func (g *Graph) inputDefinition(n *Node, kp keyedPath, x *outputIndex) string {
	for _, w := range x.overlapping(kp.path) {
		if g.isAncestor(w.id, n) {
			return "written by an upstream"
		}
	}
	d, err := kp.tree(kp.full)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "absent"
	case err != nil:
		return "unreadable"
	}
	return d
}
