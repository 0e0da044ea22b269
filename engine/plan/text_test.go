package plan

import (
	"path/filepath"
	"strings"
	"testing"
)

// belowJoined is Below as it was written first: p against dir joined with
// a separator.
func belowJoined(dir, p string) (string, bool) {
	if p == dir {
		return ".", true
	}
	if dir == "/" {
		return strings.TrimPrefix(p, "/"), strings.HasPrefix(p, "/")
	}
	if strings.HasPrefix(p, dir+string(filepath.Separator)) {
		return p[len(dir)+1:], true
	}
	return "", false
}

// Below answers as the joined test does, and allocates nothing.
func TestBelowIsTheJoinedTest(t *testing.T) {
	paths := []string{"", "/", "/a", "/a/", "/a/b", "/ab", "/ab/c", "a", "a/b", "ab", "/a/b/c", "/work/root/.cairn", "/work/root/.cairn/x", "/work/root/.cairnx", "/work/root"}
	for _, dir := range paths {
		for _, p := range paths {
			wantRel, wantOK := belowJoined(dir, p)
			rel, ok := Below(dir, p)
			if rel != wantRel || ok != wantOK {
				t.Errorf("Below(%q, %q) = %q, %t; want %q, %t", dir, p, rel, ok, wantRel, wantOK)
			}
		}
	}
	dir := "/a/workspace/root/with/a/long/name/.cairn"
	p := dir + "/objects/ab/cdef"
	if allocs := testing.AllocsPerRun(20, func() { Below(dir, p) }); allocs > 0 {
		t.Errorf("Below made %.0f allocations, want none", allocs)
	}
}
