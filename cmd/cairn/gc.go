package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/cairn-run/cairn/dsl/gcpace"
	"github.com/cairn-run/cairn/engine/plan"
)

// tuneGC sets the collector for a command-line run: most of what cairn
// allocates (the parsed pipeline, the node graph, the plan) stays live to
// the end, so no collection runs until the heap is large (gcpace.Tune).
// GOGC or GOMEMLIMIT in the environment leave the collector as they set
// it.
func tuneGC() { gcpace.Tune(os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "") }

// hugeHeap backs the heap the load of the pipeline at path and its graph
// grow into by huge pages where the system gives them to the programs
// that ask (gcpace.HugePages): a plan of 10,000 stage blocks took 0.12 s,
// a third of its CPU time faulting in 4 KiB pages, and 0.08 s in 2 MiB
// ones. A pipeline of hugeSource bytes or more has it done at once;
// another once its load allocated a few MiB, which one of a few stages
// never does. Not with GODEBUG=disablethp=1, which asks Go to keep away
// from them. Call the function it returns when the load is done.
func (a *app) hugeHeap(path string) (stop func()) {
	if gcpace.THPDisabled(os.Getenv("GODEBUG")) {
		return func() {}
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(a.root(), path)
	}
	return gcpace.HugePages(gcpace.HugePageHeap, sourceBytes(path) >= hugeSource)
}

// hugeSource is the size of pipeline files past which hugeHeap starts at
// once: a pipeline of about 2,000 stage blocks.
const hugeSource = 256 << 10

// sourceBytes is the size of the pipeline file at path, or of the .hcl
// files of the folder; 0 where it cannot be read (the load says why).
func sourceBytes(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	if !fi.IsDir() {
		return fi.Size()
	}
	entries, _ := os.ReadDir(path)
	var n int64
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".hcl") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// expectNodes says that g's nodes, evaluated next, stay live to the end
// of the command (plan, validate): no collection runs while they are
// evaluated (gcpace.Expect). An apply goes on past its plan and sheds
// what it no longer needs: it keeps the usual pacing.
func expectNodes(g *plan.Graph) {
	if g != nil {
		gcpace.Expect(uint64(len(g.Nodes)) * plan.NodeHeap)
	}
}
