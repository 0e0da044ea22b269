package dsl

import (
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// TidyDiagnostics rewrites, in place, diagnostics whose detail carries a
// Go stack trace: the expression library reports a panic inside a function
// or operator (say, a modulo of an infinite number) with the whole trace,
// which tells a pipeline author nothing. The first line is kept.
func TidyDiagnostics(diags hcl.Diagnostics) hcl.Diagnostics {
	for _, d := range diags {
		const panicText = "panic in function implementation: "
		i := strings.Index(d.Detail, panicText)
		if i < 0 {
			continue
		}
		msg := d.Detail[i+len(panicText):]
		if j := strings.IndexByte(msg, '\n'); j >= 0 {
			msg = msg[:j]
		}
		d.Detail = d.Detail[:i] + "the values are outside what this operation handles (" + strings.TrimSpace(msg) + ")."
	}
	return diags
}
