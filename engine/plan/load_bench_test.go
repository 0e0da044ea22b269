package plan_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
)

// BenchmarkLoadPlanChain loads and plans a chain of 10,000 stage blocks,
// as bench/gen -shape chain writes it, the way `cairn plan` does. cairn
// runs with the collector off until the heap reaches 256 MiB
// (cmd/cairn/gc.go): GOGC=off gives the profile it has there.
func BenchmarkLoadPlanChain(b *testing.B) {
	dir := b.TempDir()
	var src strings.Builder
	src.WriteString("pipeline \"bench\" {\n  description = \"a chain of stage blocks\"\n}\n")
	for i := range 10000 {
		fmt.Fprintf(&src, "\nstage \"command\" \"c%d\" {\n  run     = [\"sh\", \"-c\", \"echo c%d > out/c%d\"]\n  outputs = [\"out/c%d\"]\n", i, i, i, i)
		if i > 0 {
			fmt.Fprintf(&src, "  after   = [stage.c%d]\n", i-1)
		}
		src.WriteString("}\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "pipeline.hcl"), []byte(src.String()), 0o644); err != nil {
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
