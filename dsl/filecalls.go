package dsl

import (
	"bytes"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// A FileCall is a call, in a pipeline expression, of a function that reads
// the workspace by a path given as its first argument: file, filesha256,
// fileexists, and the kinds' FileFuncs (decisionslots). Its value is what
// the file held when the pipeline was evaluated, which plan compares with
// the paths stages write (a file a stage writes is absent before it runs
// and there after).
type FileCall struct {
	Name  string
	Range hcl.Range // the call's
	// Path matches the paths the call may read (PathPattern).
	Path *regexp.Regexp
	// Known is the one path it reads, where its argument's value is
	// known; "" otherwise.
	Known string
}

// fileFuncNames are the language's functions that read a file by its path.
var fileFuncNames = []string{"file", "filesha256", "fileexists"}

// FileCalls lists the calls in e of the functions that read a file by its
// path (the language's, and those of extra), each with the pattern of the
// paths its first argument may name as evaluated in ctx: a part of the
// argument that ctx does not know (each.key, a for expression's variable)
// matches any text. A call whose argument could name any path (no text
// of it is known) is left out: it says nothing of where it reads.
func FileCalls(e hcl.Expression, ctx *hcl.EvalContext, extra map[string]FileFunc) []FileCall {
	node, ok := e.(hclsyntax.Node)
	if !ok {
		return nil
	}
	var calls []FileCall
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		x, ok := n.(hcl.Expression)
		if !ok {
			return nil
		}
		call, ok := Syntax(x).(*hclsyntax.FunctionCallExpr)
		if !ok || len(call.Args) == 0 {
			return nil
		}
		if _, own := extra[call.Name]; !own && !slices.Contains(fileFuncNames, call.Name) {
			return nil
		}
		if re, known := PathPattern(call.Args[0], ctx); re != nil {
			calls = append(calls, FileCall{Name: call.Name, Range: call.Range(), Path: re, Known: known})
		}
		return nil
	})
	return calls
}

// PathPattern is the pattern of the workspace-relative paths e, a path
// argument, may name in ctx: its value, cleaned, when known; else, for a
// template, its parts' text with any text for each part not known; else
// nil (any path). known is the one path, where the value is known.
func PathPattern(e hcl.Expression, ctx *hcl.EvalContext) (re *regexp.Regexp, known string) {
	if v, diags := e.Value(ctx); !diags.HasErrors() && v.IsWhollyKnown() && !v.IsNull() && v.Type() == cty.String {
		p := v.AsString()
		if root, ok := contextRoot(ctx); ok && filepath.IsAbs(p) {
			if rel, err := filepath.Rel(root, p); err == nil {
				p = rel
			}
		}
		p = filepath.Clean(p)
		return regexp.MustCompile("^" + regexp.QuoteMeta(p) + "$"), p
	}
	t, ok := Syntax(e).(*hclsyntax.TemplateExpr)
	if !ok {
		return nil, ""
	}
	var b strings.Builder
	b.WriteString("^")
	some := false // some text is known
	for i, part := range t.Parts {
		v, diags := part.Value(ctx)
		if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() || v.Type() != cty.String {
			b.WriteString(".*")
			continue
		}
		text := v.AsString()
		if i == 0 {
			text = strings.TrimPrefix(text, "./") // as cleaned
		}
		some = some || text != ""
		b.WriteString(regexp.QuoteMeta(text))
	}
	if !some {
		return nil, ""
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String()), ""
}

// MayCallFileFunctions reports whether src, a pipeline file's text, may
// call a function that reads a file by its path: whether it holds one's
// name followed by "(". A file that does not (most) is not walked for
// FileCalls: loading a chain of thousands of stages walks nothing more.
func MayCallFileFunctions(src []byte, extra map[string]FileFunc) bool {
	for _, n := range fileFuncNames {
		if mayCall(src, n) {
			return true
		}
	}
	for n := range extra {
		if mayCall(src, n) {
			return true
		}
	}
	return false
}

// mayCall reports whether src holds name followed by "(".
func mayCall(src []byte, name string) bool {
	for i := bytes.Index(src, []byte(name)); i >= 0; {
		j := i + len(name)
		if j < len(src) && src[j] == '(' {
			return true
		}
		k := bytes.Index(src[j:], []byte(name))
		if k < 0 {
			return false
		}
		i = j + k
	}
	return false
}

// contextRoot is path.root in ctx, where it is known.
func contextRoot(ctx *hcl.EvalContext) (string, bool) {
	for c := ctx; c != nil; c = c.Parent() {
		if p, ok := c.Variables["path"]; ok && p.Type().IsObjectType() && p.Type().HasAttribute("root") {
			r := p.GetAttr("root")
			if r.IsKnown() && !r.IsNull() && r.Type() == cty.String {
				return r.AsString(), true
			}
		}
	}
	return "", false
}
