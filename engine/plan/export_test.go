package plan

import "github.com/hashicorp/hcl/v2"

// What the tests of package plan_test reach inside the package.

// DiffEnvelopes is diffEnvelopes with no note of a kind's.
func DiffEnvelopes(old, cur *Envelope, own []string, hideInputs bool) []string {
	return diffEnvelopes(old, cur, own, hideInputs, func(string) string { return "" })
}

func (g *Graph) ResolveAddrs(given []string, flag string) (map[int]bool, hcl.Diagnostics) {
	return g.resolveAddrs(given, flag)
}

// Lstats is how many paths the checker looked at one by one.
func (pc *PathChecker) Lstats() int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.lstats
}

// SetGuessAhead turns makePlan's evaluation ahead of the nodes reading
// stage objects on or off; it returns the setting before.
func SetGuessAhead(on bool) bool {
	was := guessAhead
	guessAhead = on
	return was
}

// Bases is how many key bases (envelopeBase) the graph has built.
func (g *Graph) Bases() int64 { return g.bases.Load() }

// SetConstantsAlone turns EvalNode's evaluation of constant attributes
// without a context on or off; it returns the setting before.
func SetConstantsAlone(on bool) bool {
	was := constantsAlone
	constantsAlone = on
	return was
}

// SetCaseProbe makes writeClashes take probe's word on whether the
// workspace's filesystem folds case, until the test ends.
func SetCaseProbe(t interface{ Cleanup(func()) }, probe func(root string) bool) {
	old := caseProbe
	caseProbe = probe
	t.Cleanup(func() { caseProbe = old })
}

// SetParallelInstances sets the fewest instances of a stage that expand
// makes on every core, until the test ends.
func SetParallelInstances(t interface{ Cleanup(func()) }, n int) {
	old := parallelInstances
	parallelInstances = n
	t.Cleanup(func() { parallelInstances = old })
}
