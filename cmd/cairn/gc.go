package main

import (
	"os"

	"github.com/cairn-run/cairn/dsl/gcpace"
)

// tuneGC sets the collector for a command-line run: most of what cairn
// allocates (the parsed pipeline, the node graph, the plan) stays live to
// the end, so no collection runs until the heap is large (gcpace.Tune).
// GOGC or GOMEMLIMIT in the environment leave the collector as they set
// it.
func tuneGC() { gcpace.Tune(os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "") }
