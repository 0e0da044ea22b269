package plan

import "github.com/hashicorp/hcl/v2"

// What the tests of package plan_test reach inside the package.

var DiffEnvelopes = diffEnvelopes

func (g *Graph) ResolveAddrs(given []string, flag string) (map[int]bool, hcl.Diagnostics) {
	return g.resolveAddrs(given, flag)
}

// Lstats is how many paths the checker looked at one by one.
func (pc *PathChecker) Lstats() int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.lstats
}
