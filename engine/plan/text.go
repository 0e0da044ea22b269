package plan

import (
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/cairn-run/cairn/dsl"
)

// OneLine puts a message on one line of at most 300 bytes.
func OneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}

// DiagsLine puts a pipeline's errors on one line, each at its
// file:line:col as validate names places ("main.hcl:6:32: Unsupported
// attribute: ..."), not in hcl's "main.hcl:6,32-41" form.
func DiagsLine(diags hcl.Diagnostics) string {
	return OneLine(dsl.DiagsText(diags))
}

// Below returns p relative to dir when p is dir or inside it.
func Below(dir, p string) (string, bool) {
	if p == dir {
		return ".", true
	}
	if dir == "/" {
		return strings.TrimPrefix(p, "/"), strings.HasPrefix(p, "/")
	}
	// p starts with dir and a separator (tested without joining them).
	if len(p) > len(dir) && p[len(dir)] == filepath.Separator && strings.HasPrefix(p, dir) {
		return p[len(dir)+1:], true
	}
	return "", false
}
