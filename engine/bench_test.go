package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/process"
)

// benchPipeline writes a pipeline of about n trivial nodes in the shape of
// bench/gen: distinct stages chained ten at a time, and chains of four
// for_each stages over 50 keys (each instance after the previous stage's
// same key) closed by a fan-in stage.
func benchPipeline(n int) string {
	const keys, chain = 50, 4
	var b strings.Builder
	b.WriteString("pipeline \"bench\" {}\nlocals {\n  keys = [")
	for i := 0; i < keys; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "\"k%02d\"", i)
	}
	b.WriteString("]\n}\n")
	chains := n * 9 / 10 / (keys*chain + 1)
	distinct := n - chains*(keys*chain+1)
	for i := 0; i < distinct; i++ {
		fmt.Fprintf(&b, "stage \"command\" \"d%d\" {\n  run = [\"touch\", \"out/d%d\"]\n  outputs = [\"out/d%d\"]\n", i, i, i)
		if i%10 != 0 {
			fmt.Fprintf(&b, "  after = [stage.d%d]\n", i-1)
		}
		b.WriteString("}\n")
	}
	for c := 0; c < chains; c++ {
		for l := 0; l < chain; l++ {
			name := fmt.Sprintf("c%d_s%d", c, l)
			fmt.Fprintf(&b, "stage \"command\" %q {\n  for_each = local.keys\n  run = [\"touch\", \"out/%s_${each.key}\"]\n  outputs = [\"out/%s_${each.key}\"]\n", name, name, name)
			if l == 0 {
				fmt.Fprintf(&b, "  after = [stage.d%d]\n", (c*10)%distinct)
			} else {
				fmt.Fprintf(&b, "  after = [stage.c%d_s%d[each.key]]\n", c, l-1)
			}
			b.WriteString("}\n")
		}
		fmt.Fprintf(&b, "stage \"command\" \"c%d_all\" {\n  run = [\"touch\", \"out/c%d_all\"]\n  outputs = [\"out/c%d_all\"]\n  after = [stage.c%d_s%d]\n}\n", c, c, c, c, chain-1)
	}
	return b.String()
}

// touchExecutor runs `touch FILE` in-process: apply benchmarks then
// measure cairn rather than process start-up.
var touchExecutor = inProcess{name: "touch", run: touch}

func touch(spec *executor.Spec) (*process.Result, error) {
	res := &process.Result{Started: time.Now()}
	for _, f := range spec.Argv[1:] {
		if err := os.WriteFile(filepath.Join(spec.Dir, f), nil, 0o644); err != nil {
			return nil, err
		}
	}
	res.Ended = time.Now()
	return res, nil
}

type benchSpace struct {
	root, cache string
}

func newBenchSpace(b *testing.B, n int) *benchSpace {
	b.Helper()
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, "pipeline.hcl"), []byte(benchPipeline(n)), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "out"), 0o755); err != nil {
		b.Fatal(err)
	}
	return &benchSpace{root: root, cache: filepath.Join(root, ".cairn")}
}

func (s *benchSpace) load(b *testing.B) *plan.Loaded {
	l, diags := plan.Load(plan.LoadOptions{Path: filepath.Join(s.root, "pipeline.hcl"), Root: s.root})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	return l
}

// plan loads, opens the cache, plans and renders, as `cairn plan` does.
func (s *benchSpace) plan(b *testing.B) *plan.Plan {
	l := s.load(b)
	c, err := store.Open(s.cache, store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	p, diags := plan.Make(l.Graph, c, plan.Options{})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	if err := p.Render(io.Discard); err != nil {
		b.Fatal(err)
	}
	return p
}

// apply plans and applies, as `cairn apply` does.
func (s *benchSpace) apply(b *testing.B, noSync bool) *ApplyResult {
	l := s.load(b)
	c, err := store.Open(s.cache, store.Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	p, diags := plan.Make(l.Graph, c, plan.Options{})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	res, err := Apply(context.Background(), ApplyOptions{
		Plan: p, Cache: c, Executor: touchExecutor, Parallelism: 2, NoSync: noSync,
	})
	if err != nil {
		b.Fatal(err)
	}
	if res.Failed > 0 {
		b.Fatalf("%d nodes failed: %+v", res.Failed, res.Failures[0])
	}
	return res
}

func benchPlanEmpty(b *testing.B, n int) {
	s := newBenchSpace(b, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := s.plan(b)
		if p.ToRun+p.MayRun != n {
			b.Fatalf("plan: %d to run and %d may run, want %d in all", p.ToRun, p.MayRun, n)
		}
	}
}

func benchPlanCached(b *testing.B, n int) {
	s := newBenchSpace(b, n)
	s.apply(b, true)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := s.plan(b)
		if p.Cached != n {
			b.Fatalf("plan: %d cached, want %d", p.Cached, n)
		}
	}
}

func benchApplyNoop(b *testing.B, n int) {
	s := newBenchSpace(b, n)
	s.apply(b, true)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := s.apply(b, true); res.Cached != n {
			b.Fatalf("apply: %d cached, want %d", res.Cached, n)
		}
	}
}

func benchApplyCold(b *testing.B, n int, noSync bool) {
	s := newBenchSpace(b, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for _, d := range []string{"out", ".cairn"} {
			if err := os.RemoveAll(filepath.Join(s.root, d)); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(s.root, "out"), 0o755); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if res := s.apply(b, noSync); res.Ran != n {
			b.Fatalf("apply: %d ran, want %d", res.Ran, n)
		}
	}
}

func BenchmarkLoad10k(b *testing.B) {
	s := newBenchSpace(b, 10000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.load(b)
	}
}

func BenchmarkPlan1k(b *testing.B)        { benchPlanEmpty(b, 1000) }
func BenchmarkPlan10k(b *testing.B)       { benchPlanEmpty(b, 10000) }
func BenchmarkPlanCached10k(b *testing.B) { benchPlanCached(b, 10000) }
func BenchmarkApplyNoop1k(b *testing.B)   { benchApplyNoop(b, 1000) }
func BenchmarkApplyNoop10k(b *testing.B)  { benchApplyNoop(b, 10000) }

// The cold applies run nodes in-process (touchExecutor): they measure the
// scheduler, keys, output storage, cache commits and the journal.
func BenchmarkApplyCold1k(b *testing.B)      { benchApplyCold(b, 1000, true) }
func BenchmarkApplyCold1kFsync(b *testing.B) { benchApplyCold(b, 1000, false) }
