package main

import (
	"os"

	"github.com/cairn-run/cairn/dsl/gcpace"
	"github.com/cairn-run/cairn/engine/plan"
)

// tuneGC sets the collector for a command-line run: most of what cairn
// allocates (the parsed pipeline, the node graph, the plan) stays live to
// the end, so no collection runs until the heap is large (gcpace.Tune).
// GOGC or GOMEMLIMIT in the environment leave the collector as they set
// it.
func tuneGC() { gcpace.Tune(os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "") }

// expectNodes says that g's nodes, evaluated next, stay live to the end
// of the command (plan, validate): no collection runs while they are
// evaluated (gcpace.Expect). An apply goes on past its plan and sheds
// what it no longer needs: it keeps the usual pacing.
func expectNodes(g *plan.Graph) {
	if g != nil {
		gcpace.Expect(uint64(len(g.Nodes)) * plan.NodeHeap)
	}
}
