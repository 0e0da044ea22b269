package dsl

import (
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// workspaceFunctions are the functions of the language's own table that
// read the workspace.
var workspaceFunctions = map[string]bool{"file": true, "filesha256": true, "fileexists": true}

// pureFunctions are the rest of the table: what they return depends on
// their arguments alone.
var pureFunctions = sync.OnceValue(func() map[string]bool {
	pure := map[string]bool{}
	for name := range ownFunctions() {
		if !workspaceFunctions[name] {
			pure[name] = true
		}
	}
	return pure
})

// ReadsWorkspace reports whether expr may call a function whose value is
// not its arguments' alone: file, filesha256, fileexists, a kind's own
// functions (FileFunc: they read files) or one the table does not have.
// Such an expression may evaluate to another value once an upstream node
// has written a file; any other evaluates to the same value wherever its
// references do. An expression that is not of the native syntax reads,
// for all cairn can tell.
func ReadsWorkspace(expr hcl.Expression) bool {
	se, ok := expr.(hclsyntax.Expression)
	if !ok {
		return true
	}
	reads := false
	_ = hclsyntax.VisitAll(se, func(n hclsyntax.Node) hcl.Diagnostics {
		var call *hclsyntax.FunctionCallExpr
		switch x := n.(type) {
		case *hclsyntax.FunctionCallExpr:
			call = x
		case checkedCall:
			call = x.FunctionCallExpr
		}
		if call != nil && !pureFunctions()[call.Name] {
			reads = true
		}
		return nil
	})
	return reads
}
