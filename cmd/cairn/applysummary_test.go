package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-run/cairn/engine"
)

// An apply interrupted before any node ran (while it restored cached
// nodes) says so in its closing line, with its count of interrupted
// nodes, as one that stopped running nodes does.
func TestApplySummaryCountsInterruptedWhenNoneRan(t *testing.T) {
	var b strings.Builder
	(&app{}).printSummary(&b, &engine.ApplyResult{Cached: 2, Interrupted: true, RunID: "r"})
	assert.Contains(t, b.String(), "Apply complete: 0 ran, 2 cached, 0 failed, 0 skipped, 0 interrupted. (interrupted)")
	b.Reset()
	(&app{}).printSummary(&b, &engine.ApplyResult{Cached: 2, RunID: "r"})
	assert.Contains(t, b.String(), "Apply complete: 0 ran, 2 cached, 0 failed, 0 skipped. [")
}
