package plan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
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

// Why a key is unknown reads as it did when formatted.
func TestUnknownReasonStrings(t *testing.T) {
	for _, c := range []struct {
		u    UnknownReason
		want string
	}{
		{UnknownReason{Upstream: `stage.a["k"]`}, fmt.Sprintf("depends on the output of %s", `stage.a["k"]`)},
		{UnknownReason{Input: "data/x.csv"}, fmt.Sprintf("input %s does not exist yet", "data/x.csv")},
		{UnknownReason{Attr: "run"}, fmt.Sprintf("%s depends on upstream results", "run")},
		{UnknownReason{}, "known after apply"},
	} {
		if got := c.u.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.u, got, c.want)
		}
	}
}

// A node's envelope lists its upstreams' digests, an empty list when it
// has none (the key is made of the envelope's JSON: [] and not null); an
// upstream not known makes no list.
func TestEnvelopeFromUpstreams(t *testing.T) {
	a := &Node{ID: 0, Addr: "stage.a"}
	b := &Node{ID: 1, Addr: "stage.b", Deps: []int{0}}
	g := &Graph{Nodes: []*Node{a, b}}
	base := envBase{e: &Envelope{V: EnvelopeVersion}}
	known := func(*Node) (string, bool) { return "d0", true }
	unknown := func(*Node) (string, bool) { return "", false }
	e, why, err := g.envelopeFrom(base, a, known)
	if err != nil || why != nil || e.Upstreams == nil || len(e.Upstreams) != 0 {
		t.Errorf("no upstream: %#v, %v, %v", e, why, err)
	}
	if js, _ := json.Marshal(e); !strings.Contains(string(js), `"upstreams":[]`) {
		t.Errorf("no upstream: %s", js)
	}
	e, why, _ = g.envelopeFrom(base, b, known)
	if why != nil || len(e.Upstreams) != 1 || e.Upstreams[0] != "d0" {
		t.Errorf("known upstream: %#v, %v", e, why)
	}
	e, why, _ = g.envelopeFrom(base, b, unknown)
	if e != nil || why == nil || why.Upstream != "stage.a" {
		t.Errorf("unknown upstream: %#v, %v", e, why)
	}
	if allocs := testing.AllocsPerRun(10, func() { g.envelopeFrom(base, b, unknown) }); allocs > 1 {
		t.Errorf("an unknown upstream made %.0f allocations, want 1 (the reason)", allocs)
	}
}

// A plan's line reads as it did when formatted with "  %s %-*s  %s" and
// ": " and the reasons joined with "; ": the address padded to the width
// in characters, a longer one not cut.
func TestWriteLineIsFormatted(t *testing.T) {
	for _, c := range []struct {
		sym, addr, what string
		width           int
		reasons         []string
	}{
		{"+", "stage.a", "run", 12, []string{"new"}},
		{"?", `stage.b["é"]`, "may run", 14, []string{"depends on the output of stage.a", "x"}},
		{"=", "stage.long_name_here", "cached", 5, nil},
		{"~", "stage.c", "run", 7, []string{}},
		{"!", "", "refused", 0, []string{"a", "b", "c"}},
	} {
		var got, want bytes.Buffer
		bw := bufio.NewWriter(&got)
		WriteLine(bw, c.sym, c.width, c.addr, c.what, c.reasons)
		bw.Flush()
		fmt.Fprintf(&want, "  %s %-*s  %s", c.sym, c.width, c.addr, c.what)
		if len(c.reasons) > 0 {
			fmt.Fprintf(&want, ": %s", strings.Join(c.reasons, "; "))
		}
		want.WriteByte('\n')
		if got.String() != want.String() {
			t.Errorf("%q, want %q", got.String(), want.String())
		}
	}
}
