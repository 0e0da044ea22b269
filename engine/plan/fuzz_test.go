package plan_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/plan"
)

// FuzzPipeline feeds arbitrary pipeline files through what `cairn validate`
// runs: parse, decode, variables, locals, graph build and the evaluation of
// every node at plan level. No input may panic or hang, and every error
// must point at a place in the file.
//
// It is seeded from both corpora and pipelines/; inputs that once failed are kept in
// testdata/fuzz/FuzzPipeline and run with every `go test`. Run it with
//
//	make fuzz                      # or:
//	go test -run '^$' -fuzz '^FuzzPipeline$' -fuzztime 30s ./engine
//
// A progress line reading 0 execs/s is the fuzzer minimizing a new
// interesting input: its executions are counted when it ends (make fuzz
// bounds it to 5 s per input). An input that is slow to validate shows as
// a line that stays at 0 long after; numbers like 1e10000000, whose
// text takes minutes to write, were such inputs and are refused now.
func FuzzPipeline(f *testing.F) {
	// The corpora, and the example pipelines (they use the other kinds).
	for _, dir := range []string{invalidDir, validDir, "../../pipelines"} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".hcl") {
				return err
			}
			b, err := os.ReadFile(p)
			if err == nil {
				f.Add(b)
			}
			return err
		})
		if err != nil {
			f.Fatal(err)
		}
	}

	// One workspace per fuzzing process, with the valid corpus's data
	// files (for file() and inputs) and a symlink that leads outside.
	root, err := os.MkdirTemp("", "cairn-fuzz-")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(root) })
	if err := os.CopyFS(filepath.Join(root, "data"), os.DirFS(filepath.Join(validDir, "data"))); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(os.TempDir(), filepath.Join(root, "outside")); err != nil {
		f.Fatal(err)
	}
	file := filepath.Join(root, "pipeline.hcl")
	// A pipeline that loops a million times is refused either way; a
	// lower bound refuses it sooner and keeps the fuzzer fast.
	defer func(n, m int64) { dsl.MaxIterations, dsl.MaxTotalIterations = n, m }(dsl.MaxIterations, dsl.MaxTotalIterations)
	dsl.MaxIterations, dsl.MaxTotalIterations = 1<<10, 1<<16

	f.Fuzz(func(t *testing.T, src []byte) {
		if err := os.WriteFile(file, src, 0o644); err != nil {
			t.Fatal(err)
		}
		l, diags := validateLike(plan.LoadOptions{Path: file, Root: root})
		if l == nil {
			t.Fatal("Load returned no result")
		}
		for _, d := range diags {
			if d.Severity == hcl.DiagError && d.Subject == nil {
				t.Errorf("error without a position: %s; %s", d.Summary, d.Detail)
			}
		}
		if !diags.HasErrors() && l.Graph == nil {
			t.Fatal("no errors and no graph")
		}
		if l.Graph != nil {
			for _, n := range l.Graph.Nodes {
				for _, d := range n.Deps {
					if d >= n.ID {
						t.Fatalf("%s depends on a later node %s", n.Addr, l.Graph.Nodes[d].Addr)
					}
				}
			}
		}
	})
}
