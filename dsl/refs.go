package dsl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Ref is one reference found in an expression.
type Ref struct {
	Root string // var, local, path, stage, each, self
	Name string // the attribute after the root (stage name, variable name, ...)
	// For stage references: HasKey with Key when the instance key is
	// static; KeyExpr when the key is an expression (evaluated per node).
	HasKey  bool
	Key     string
	KeyExpr hcl.Expression
	Range   hcl.Range
	// SameKey marks a for_each over a whole stage (for_each = stage.X):
	// each instance depends on the instance of X with the same key.
	SameKey bool
}

// Roots are the names a reference may start with.
var Roots = []string{"var", "local", "path", "stage", "each", "self"}

// InstanceAttrs are the attributes of a stage instance object
// (stage.NAME[KEY].ATTR and self.ATTR).
var InstanceAttrs = []string{
	"key", "value", "result", "status", "class", "message", "exit_code",
	"duration_s", "peak_rss_mib", "peak_gpu_mib", "key_digest", "launch",
	"endpoints",
}

// PathAttrs are the attributes of the path object.
var PathAttrs = []string{"pipeline", "root"}

// References lists the references of expr. A stage reference indexed by an
// expression (stage.x[each.key]) is returned with KeyExpr set, so a node
// depends on one instance rather than the whole stage.
func References(expr hcl.Expression) ([]Ref, hcl.Diagnostics) {
	return AppendReferences(nil, expr)
}

// AppendReferences appends the references of expr, as References lists
// them, to refs.
func AppendReferences(refs []Ref, expr hcl.Expression) ([]Ref, hcl.Diagnostics) {
	if constant(expr) {
		return refs, nil // what the walks below find in it: nothing
	}
	if st, ok := expr.(*hclsyntax.ScopeTraversalExpr); ok {
		// One traversal, as in after = [stage.x]: what the walks below
		// find in it, without walking.
		r, ok, diags := parseRef(st.Traversal)
		if ok {
			refs = append(refs, r)
		}
		return refs, diags
	}
	found, diags := walkReferences(expr)
	if len(refs) == 0 {
		return found, diags
	}
	return append(refs, found...), diags
}

// walkReferences is References for any expression, by walking it.
func walkReferences(expr hcl.Expression) ([]Ref, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var dynamic map[hcl.Pos]bool
	var refs []Ref
	if se, ok := expr.(hclsyntax.Expression); ok {
		_ = hclsyntax.VisitAll(se, func(n hclsyntax.Node) hcl.Diagnostics {
			ie, ok := IndexExprOf(n)
			if !ok {
				return nil
			}
			st, ok := ie.Collection.(*hclsyntax.ScopeTraversalExpr)
			if !ok || len(st.Traversal) != 2 || st.Traversal.RootName() != "stage" {
				return nil
			}
			attr, ok := st.Traversal[1].(hcl.TraverseAttr)
			if !ok {
				return nil
			}
			if dynamic == nil {
				dynamic = map[hcl.Pos]bool{}
			}
			dynamic[st.SrcRange.Start] = true
			refs = append(refs, Ref{Root: "stage", Name: attr.Name, KeyExpr: ie.Key, Range: ie.SrcRange})
			return nil
		})
	}
	for _, t := range expr.Variables() {
		if dynamic[t.SourceRange().Start] && len(t) == 2 {
			continue
		}
		r, ok, d := parseRef(t)
		diags = append(diags, d...)
		if ok {
			refs = append(refs, r)
		}
	}
	return refs, diags
}

// Constant reports whether expr is made of literal values only (see
// constant): it refers to nothing, calls nothing and iterates over
// nothing, so it evaluates without a context to the same value.
func Constant(expr hcl.Expression) bool { return constant(expr) }

// constant reports whether expr is made of literal values, negated ones,
// lists of them and quoted strings without templates only: it refers to
// nothing. It walks without allocating, where the syntax tree's walks
// allocate for each node (a large locals block of nested lists is
// millions of nodes).
func constant(expr hcl.Expression) bool {
	switch x := expr.(type) {
	case *hclsyntax.LiteralValueExpr:
		return true
	case checkedLiteral, *evaluated, *textTemplate:
		return true
	case *hclsyntax.TupleConsExpr, tupleCons:
		t, _ := TupleConsOf(x)
		for _, e := range t.Exprs {
			if !constant(e) {
				return false
			}
		}
		return true
	case *hclsyntax.UnaryOpExpr:
		return constant(x.Val) // -1, !true
	case *hclsyntax.TemplateExpr:
		for _, e := range x.Parts {
			if _, ok := e.(*hclsyntax.LiteralValueExpr); !ok {
				return false
			}
		}
		return true
	}
	return false
}

// parseRef is the reference t makes; ok is false where it makes none
// (the diagnostics say why).
func parseRef(t hcl.Traversal) (r Ref, ok bool, diags hcl.Diagnostics) {
	root := t.RootName()
	r = Ref{Root: root, Range: t.SourceRange()}
	switch root {
	case "each", "self":
		if len(t) > 1 {
			if a, ok := t[1].(hcl.TraverseAttr); ok {
				r.Name = a.Name
			}
		}
		return r, true, nil
	case "var", "local", "path", "stage":
	default:
		detail := fmt.Sprintf("%q is not something a pipeline can refer to. References start with %s.", root, strings.Join(Roots, ", "))
		if s := Suggest(root, Roots); s != "" {
			detail = fmt.Sprintf("%q is not something a pipeline can refer to. Did you mean %q? References start with %s.", root, s, strings.Join(Roots, ", "))
		}
		return Ref{}, false, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unknown reference", Detail: detail, Subject: r.Range.Ptr()}}
	}
	if len(t) < 2 {
		return Ref{}, false, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid reference",
			Detail:   fmt.Sprintf("%q must be followed by an attribute name, like %s.NAME.", root, root),
			Subject:  r.Range.Ptr(),
		}}
	}
	a, ok := t[1].(hcl.TraverseAttr)
	if !ok {
		return Ref{}, false, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid reference",
			Detail:   fmt.Sprintf("%q must be followed by .NAME, not an index.", root),
			Subject:  r.Range.Ptr(),
		}}
	}
	r.Name = a.Name
	if root == "stage" && len(t) > 2 {
		if ix, ok := t[2].(hcl.TraverseIndex); ok {
			if ix.Key.Type() == cty.String && ix.Key.IsKnown() && !ix.Key.IsNull() {
				r.HasKey = true
				r.Key = ix.Key.AsString()
			} else {
				return Ref{}, false, hcl.Diagnostics{{
					Severity: hcl.DiagError,
					Summary:  "Invalid stage instance key",
					Detail:   "Stage instances are keyed by strings: stage.NAME[\"key\"].",
					Subject:  ix.SrcRange.Ptr(),
				}}
			}
		}
	}
	return r, true, nil
}

// RefContext says where an expression appears, which decides which
// references are allowed.
type RefContext struct {
	Stage     *Stage // nil outside a stage
	AllowSelf bool   // postconditions
	AllowEach bool
	// AllowStage is false in for_each (stage results do not exist at plan
	// time; stage instance maps do, so for_each may name a stage).
	NoStageResults bool
	// InForEach: the references are for_each's own, which makes each.
	InForEach bool
}

// CheckRefs validates references against the config: unknown variables,
// locals, stages, path attributes, misplaced each/self.
func (c *Config) CheckRefs(refs []Ref, rc RefContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, r := range refs {
		bad := func(summary, detail string) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: r.Range.Ptr()})
		}
		switch r.Root {
		case "var":
			if _, ok := c.Variables[r.Name]; !ok {
				bad("Reference to undeclared variable", notDeclared("variable", r.Name, c.VarOrder, "Declare it with a variable block."))
			}
		case "local":
			if _, ok := c.Locals[r.Name]; !ok {
				bad("Reference to undeclared local value", notDeclared("local value", r.Name, c.LocalOrd, "Declare it in a locals block."))
			}
		case "path":
			if !slices.Contains(PathAttrs, r.Name) {
				bad("Unknown path attribute", notDeclared("path attribute", r.Name, PathAttrs, "path has pipeline (the pipeline file's folder) and root (the workspace root)."))
			}
		case "stage":
			s, ok := c.StageMap[r.Name]
			if !ok {
				names := make([]string, len(c.Stages))
				for i, s := range c.Stages {
					names[i] = s.Name
				}
				bad("Reference to undeclared stage", notDeclared("stage", r.Name, names, "Declare it with a stage block."))
				continue
			}
			if rc.Stage != nil && s == rc.Stage {
				bad("Stage refers to itself", fmt.Sprintf("%s cannot refer to itself; inside its postconditions use self.", s.Address()))
			}
		case "each":
			if !rc.AllowEach {
				switch {
				case rc.Stage == nil:
					bad("Invalid each reference", "each is available only inside a stage with for_each.")
				case rc.InForEach:
					bad("Invalid each reference", fmt.Sprintf("each.key and each.value are made by %s's for_each, one instance each, so for_each itself cannot use them: write the collection to iterate over with var, local or stage references.", rc.Stage.Address()))
				default:
					bad("Invalid each reference", fmt.Sprintf("%s has no for_each, so each.key and each.value do not exist. Add for_each or remove the reference.", rc.Stage.Address()))
				}
			} else if r.Name != "" && r.Name != "key" && r.Name != "value" {
				bad("Invalid each reference", fmt.Sprintf("each has key and value; there is no each.%s.", r.Name))
			}
		case "self":
			if !rc.AllowSelf && rc.Stage != nil && r.Name == "model_cache" {
				// self.model_cache.url: the stage's model-call cache
				// (docs/model-cache.md), in its attributes.
			} else if !rc.AllowSelf {
				bad("Invalid self reference", "self is available only inside a stage's postcondition block (and self.model_cache.url in a stage's attributes).")
			} else if r.Name != "" && !slices.Contains(InstanceAttrs, r.Name) {
				bad("Unsupported attribute", notDeclared("instance attribute", r.Name, InstanceAttrs,
					"self is the stage instance: "+strings.Join(InstanceAttrs, ", ")+"; a field of the result file is self.result.NAME."))
			}
		}
	}
	return diags
}

func notDeclared(what, name string, have []string, hint string) string {
	d := fmt.Sprintf("There is no %s named %q.", what, name)
	if s := Suggest(name, have); s != "" {
		d += fmt.Sprintf(" Did you mean %q?", s)
	}
	return d + " " + hint
}
