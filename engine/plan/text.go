package plan

import (
	"path/filepath"
	"strings"
)

// OneLine puts a message on one line of at most 300 bytes.
func OneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
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
