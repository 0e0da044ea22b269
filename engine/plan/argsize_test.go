package plan

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/stages"
)

// The ARG_MAX check counts the environment a command inherits, less the
// variables its stage's env sets, and reads that environment and the
// limit once a graph: checking a node's plain run list allocates nothing
// (the environment was copied, and the run list unmarked and copied out,
// for every node).
func TestArgSizeCheckReadsTheEnvironmentOnce(t *testing.T) {
	t.Setenv("ARGSIZE_TEST_BIG", strings.Repeat("x", argLimit()))
	room := &startRoom{}
	node := func(env map[string]string) *stages.Node {
		return &stages.Node{
			Args:   map[string]cty.Value{"run": cty.TupleVal([]cty.Value{cty.StringVal("echo"), cty.StringVal("hi")})},
			Common: stages.Common{Env: env},
		}
	}
	diags := argSizeCheck(node(nil), room)
	if !diags.HasErrors() || !strings.Contains(diags[0].Detail, "argument list too long") {
		t.Fatalf("a command inheriting a variable of ARG_MAX bytes: got %v, want it refused", diags)
	}
	if diags := argSizeCheck(node(map[string]string{"ARGSIZE_TEST_BIG": "x"}), room); diags.HasErrors() {
		t.Fatalf("a command whose stage sets the large variable to one byte: %v", diags)
	}
	small := node(map[string]string{"ARGSIZE_TEST_BIG": "x"})
	if allocs := testing.AllocsPerRun(20, func() { argSizeCheck(small, room) }); allocs > 0 {
		t.Errorf("argSizeCheck of a plain run list made %.0f allocations, want none", allocs)
	}
}
