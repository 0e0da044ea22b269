package dsl

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// TidyDiagnostics rewrites diagnostics in place: a call of an unknown
// function gets the closest known name (suggestFunction), and a detail
// carrying a Go stack trace keeps its first line (the expression library
// reports a panic inside a function or operator, say a modulo of an
// infinite number, with the whole trace, which tells a pipeline author
// nothing).
func TidyDiagnostics(diags hcl.Diagnostics) hcl.Diagnostics {
	for _, d := range diags {
		suggestFunction(d)
		suggestInstanceAttr(d)
		const panicText = "panic in function implementation: "
		i := strings.Index(d.Detail, panicText)
		if i < 0 {
			continue
		}
		msg := d.Detail[i+len(panicText):]
		if j := strings.IndexByte(msg, '\n'); j >= 0 {
			msg = msg[:j]
		}
		if strings.Contains(msg, "(NaN)") {
			// big.Float's panic on making a number of NaN (a math
			// function's result with no real value): its Go words,
			// "Float.SetFloat64(NaN)", tell an author nothing.
			d.Detail = d.Detail[:i] + notANumber.Error() + "."
			continue
		}
		d.Detail = d.Detail[:i] + "the values are outside what this operation handles (" + strings.TrimSpace(msg) + ")."
	}
	return diags
}

// suggestInstanceAttr adds to an attribute that a stage's instance object
// (stage.X, stage.X[KEY], self) does not have the closest name it has,
// and the names: "stage.train.stauts" gets Did you mean "status"?. hcl
// suggests none where it evaluates the object unknown (plan, validate).
func suggestInstanceAttr(d *hcl.Diagnostic) {
	if d.Summary != "Unsupported attribute" || d.Expression == nil || strings.Contains(d.Detail, "Did you mean") {
		return
	}
	name, ok := quotedName(d.Detail, "This object does not have an attribute named ")
	if !ok {
		return
	}
	var tr hcl.Traversal
	switch e := Syntax(d.Expression).(type) {
	case *hclsyntax.ScopeTraversalExpr:
		tr = e.Traversal
	default:
		return
	}
	if root := tr.RootName(); root != "stage" && root != "self" {
		return
	}
	// The attribute named must be the one after the instance: stage.X
	// (or stage.X[KEY]) then ATTR, or self then ATTR.
	i := 1
	if tr.RootName() == "stage" {
		i = 2
		if len(tr) > 2 {
			if _, idx := tr[2].(hcl.TraverseIndex); idx {
				i = 3
			}
		}
	}
	if len(tr) <= i {
		return
	}
	if a, ok := tr[i].(hcl.TraverseAttr); !ok || a.Name != name {
		return
	}
	if s := Suggest(name, InstanceAttrs); s != "" {
		d.Detail += fmt.Sprintf(" Did you mean %q?", s)
	}
	d.Detail += " An instance has " + strings.Join(InstanceAttrs, ", ") + "; a field of its result file is result.NAME."
}

// suggestFunction adds to a call of an unknown function the closest name
// of the functions its context has. hcl suggests one only from the
// functions of the very context of the call, which in a for expression's
// body or a stage's context holds none (they are its parent's).
func suggestFunction(d *hcl.Diagnostic) {
	if d.Summary != "Call to unknown function" || d.EvalContext == nil || strings.Contains(d.Detail, "Did you mean") {
		return
	}
	name, ok := quotedName(d.Detail, "There is no function named ")
	if !ok {
		return
	}
	for ctx := d.EvalContext; ctx != nil; ctx = ctx.Parent() {
		if len(ctx.Functions) == 0 {
			continue
		}
		names := make([]string, 0, len(ctx.Functions))
		for n := range ctx.Functions {
			names = append(names, n)
		}
		sort.Strings(names) // the same suggestion every time
		if s := Suggest(name, names); s != "" {
			d.Detail += fmt.Sprintf(" Did you mean %q?", s)
		}
		return
	}
}

// quotedName is the name in double quotes right after prefix at the start
// of detail ("There is no function named \"x\"..." gives x).
func quotedName(detail, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(detail, prefix+"\"")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, "\"")
	return name, ok
}
