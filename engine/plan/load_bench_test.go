package plan_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
)

// BenchmarkLoadPlanChain loads and plans a chain of 10,000 stage blocks,
// as bench/gen -shape chain writes it, the way `cairn plan` does. cairn
// runs with the collector off until the heap reaches 256 MiB
// (cmd/cairn/gc.go): GOGC=off gives the profile it has there.
func BenchmarkLoadPlanChain(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pipeline.hcl"), []byte(chainSource(10000)), 0o644); err != nil {
		b.Fatal(err)
	}
	cache, err := store.Open(filepath.Join(dir, ".cairn"), store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer cache.Close()
	b.ReportAllocs()
	for b.Loop() {
		l, diags := plan.Load(plan.LoadOptions{Path: dir, Root: dir})
		if diags.HasErrors() {
			b.Fatal(diags)
		}
		p, d := plan.Make(l.Graph, cache, plan.Options{})
		if d.HasErrors() {
			b.Fatal(d)
		}
		if len(p.Nodes) != 10000 {
			b.Fatalf("%d nodes planned, want 10000", len(p.Nodes))
		}
	}
}

// BenchmarkPlanSeed002Grid loads and plans seed 002's experiment grid
// (pipelines/optimizer_grid.hcl with pipelines/grids/experiment.json,
// 3,748 nodes) and renders the plan, the way `cairn plan` does from the
// repository's root (bench/grid.sh's row).
func BenchmarkPlanSeed002Grid(b *testing.B) {
	root, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	b.Chdir(root)
	cache, err := store.Open(filepath.Join(b.TempDir(), "cache"), store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer cache.Close()
	vars := dsl.VarInputs{Args: []dsl.VarArg{{Value: "grid=pipelines/grids/experiment.json"}}}
	b.ReportAllocs()
	for b.Loop() {
		l, diags := plan.Load(plan.LoadOptions{Path: "pipelines/optimizer_grid.hcl", Root: root, Vars: vars})
		if diags.HasErrors() {
			b.Fatal(diags)
		}
		p, d := plan.Make(l.Graph, cache, plan.Options{})
		if d.HasErrors() {
			b.Fatal(d)
		}
		if err := p.Render(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// chainSource is a pipeline of n stage blocks c0..c<n-1>, each after the
// one before, as bench/gen -shape chain writes it.
func chainSource(n int) string {
	var src strings.Builder
	src.WriteString("pipeline \"bench\" {\n  description = \"a chain of stage blocks\"\n}\n")
	for i := range n {
		fmt.Fprintf(&src, "\nstage \"command\" \"c%d\" {\n  run     = [\"sh\", \"-c\", \"echo c%d > out/c%d\"]\n  outputs = [\"out/c%d\"]\n", i, i, i, i)
		if i > 0 {
			fmt.Fprintf(&src, "  after   = [stage.c%d]\n", i-1)
		}
		src.WriteString("}\n")
	}
	return src.String()
}
