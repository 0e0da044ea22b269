package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The live display shows each running node with its elapsed time and the
// progress line its kind reports (e.g. an evaluation's item counts).
func TestLiveDisplayShowsProgress(t *testing.T) {
	w := newWorkspace(t, `
pipeline "live" {}
stage "command" "slow" {
  run = ["sleep", "0.1"]
}
`)
	l := w.load()
	c, err := OpenCache(w.cache, CacheOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, _ := MakePlan(l.Graph, c, PlanOptions{})
	var sb strings.Builder
	a := &applier{g: l.Graph, cache: c, out: &sb, res: &ApplyResult{}, running: map[int]*nodeState{}}
	ns := &nodeState{n: l.Graph.Nodes[0], pn: p.Nodes[0], status: stRunning, started: time.Now().Add(-3 * time.Second)}
	a.nodes = []*nodeState{ns}
	a.running[0] = ns
	(&nodeRuntime{a: a, ns: ns}).Progress("items 20/100: evaluated 20, from-cache 0, charged 20, infra-failures 0")
	ld := &liveDisplay{a: a, exp: map[int]time.Duration{}}
	ld.update()
	ld.draw()
	out := sb.String()
	assert.Contains(t, out, "[0/1] ran 0, cached 0, failed 0, skipped 0, running 1")
	assert.Contains(t, out, "stage.slow  3s  items 20/100: evaluated 20")
}
