package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-run/cairn/engine/store"
)

// upstreamReasons says which upstreams make a node's upstream digests
// differ from those its last key was made with (old, against cur), each
// reason naming one: "upstream ADDR changed" for an upstream whose output
// old was not keyed on, and "upstream ADDR removed" for an output old was
// keyed on that no upstream has now and that is not the earlier output of
// one that changed: a for_each instance gone from the pipeline, or a node
// no longer depended on, named by the address of this pipeline whose last
// record in the cache holds that output.
func (p *Plan) upstreamReasons(old, cur []string, n *Node, upstream func(*Node) (string, bool), cache *store.Cache) []string {
	count := map[string]int{} // old's count of a digest less cur's
	for _, d := range old {
		count[d]++
	}
	for _, d := range cur {
		count[d]--
	}
	var out []string
	changed := 0
	taken := map[string]bool{n.Addr: true} // addresses that cannot be a removed upstream
	for _, id := range n.Deps {
		if !n.KeyedDep(id) {
			continue
		}
		u := p.Graph.Nodes[id]
		taken[u.Addr] = true
		if d, ok := upstream(u); ok && count[d] < 0 {
			out = append(out, fmt.Sprintf("upstream %s changed", u.Addr))
			changed++
		}
	}
	var gone []string // old's outputs that no upstream has now
	for _, d := range slices.Compact(slices.Clone(old)) {
		for i := 0; i < count[d]; i++ {
			gone = append(gone, d)
		}
	}
	// An address no longer in the pipeline whose last output old was
	// keyed on was removed. Of the other outputs gone, as many as
	// upstreams changed are taken for their earlier outputs; an address
	// still in the pipeline (not depended on now) names one of the rest,
	// and what none names is said without a name.
	var rest []string
	for _, d := range gone {
		if a := p.heldBy(d, taken, cache, false); a != "" {
			taken[a] = true
			out = append(out, fmt.Sprintf("upstream %s removed", a))
		} else {
			rest = append(rest, d)
		}
	}
	extra := len(rest) - changed
	for _, d := range rest {
		if extra <= 0 {
			break
		}
		if a := p.heldBy(d, taken, cache, true); a != "" {
			taken[a] = true
			out = append(out, fmt.Sprintf("upstream %s removed", a))
			extra--
		}
	}
	switch {
	case extra == 1:
		out = append(out, "an upstream was removed (no record in the cache names it any more)")
	case extra > 1:
		out = append(out, fmt.Sprintf("%d upstreams were removed (no record in the cache names them any more)", extra))
	}
	return out
}

// heldBy is an address of the plan's pipeline, not in taken, whose last
// record in the cache has the output digest d: one no longer in the
// pipeline, else (inGraph) one still in it, each in address order; ""
// when none.
func (p *Plan) heldBy(d string, taken map[string]bool, cache *store.Cache, inGraph bool) string {
	if p.byOutput == nil {
		p.byOutput = map[string][]string{}
		if cache != nil {
			keys := cache.PipelineKeys(p.Graph.Config.Name)
			addrs := make([]string, 0, len(keys))
			for a := range keys {
				addrs = append(addrs, a)
			}
			slices.SortFunc(addrs, func(a, b string) int {
				_, inA := p.Graph.ByAddr[a]
				_, inB := p.Graph.ByAddr[b]
				if inA != inB {
					if inB {
						return -1
					}
					return 1
				}
				return strings.Compare(a, b)
			})
			for _, a := range addrs {
				if rec, ok := cache.Lookup(keys[a]); ok {
					p.byOutput[rec.OutputDigest] = append(p.byOutput[rec.OutputDigest], a)
				}
			}
		}
	}
	for _, a := range p.byOutput[d] {
		if _, in := p.Graph.ByAddr[a]; !taken[a] && (inGraph || !in) {
			return a
		}
	}
	return ""
}
