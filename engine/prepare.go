package engine

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/stages"
)

// instance is the object downstream expressions see for a node.
func (a *applier) instance(n *plan.Node) cty.Value {
	ns := a.nodes[n.ID]
	if ns.final {
		return a.finalInstance(ns)
	}
	return plan.UnknownInstance(n)
}

// upstreamDigest is an upstream's output digest for a downstream key.
func (a *applier) upstreamDigest(n *plan.Node) (string, bool) {
	ns := a.nodes[n.ID]
	switch ns.status {
	case plan.OK, plan.Cached:
		if ns.record != nil {
			return ns.record.OutputDigest, true
		}
	case plan.Failed, plan.Skipped:
		return plan.FailedOutputDigest(ns.status, ns.class), true
	}
	if ns.pn.Skipped && ns.pn.Record != nil {
		return ns.pn.Record.OutputDigest, true
	}
	return "", false
}

// prepare evaluates a ready node with its upstreams' real results,
// computes its key and takes it from the cache when possible. It returns
// true when the node finished inline (cached, skipped or failed).
func (a *applier) prepare(ns *nodeState) bool {
	ns.prepared = true
	n := ns.n
	// Upstream failures.
	var failedUp *nodeState
	for _, d := range n.Deps {
		u := a.nodes[d]
		if u.status == plan.Failed || u.status == plan.Skipped && !u.pn.Skipped {
			failedUp = u
			break
		}
	}
	if failedUp != nil && n.Stage.OnUpstreamFailure != "run" {
		a.skip(ns, fmt.Sprintf("upstream %s %s", failedUp.n.Addr, failedUp.status))
		return true
	}
	if _, cmp := n.Kind.(stages.Comparer); cmp && failedUp != nil && !a.anyUpstreamOK(n) {
		// A batch refused or failed as a whole: no table of failures
		// replaces the last comparison.
		a.skip(ns, fmt.Sprintf("nothing to compare: no upstream finished (%s %s)", failedUp.n.Addr, upstreamFailure(failedUp)))
		return true
	}
	// The plan evaluated the node already; unless its expressions read
	// upstream results, which may have changed since, that evaluation
	// stands.
	sn := ns.pn.Spec
	reused := true
	// A node the plan takes from the cache beside a service that was not
	// started keeps the plan's evaluation: the endpoints it would read
	// are none, and it sends no request.
	beside := a.g.EvalsStage(n) && a.cachedBesideIdleServices(ns)
	if sn == nil || sn.Key != "" || sn.Upstreams != nil || a.g.EvalsStage(n) && !a.upstreamsAsPlanned(n) && !beside {
		reused = false
		var diags hcl.Diagnostics
		sn, diags = a.g.EvalNode(n, a.instance)
		if diags.HasErrors() {
			a.fail(ns, failclass.Setup, "cannot evaluate its attributes: "+plan.DiagsLine(diags))
			return true
		}
	}
	// Digested now, not as planned: an upstream may have written them.
	if err := a.g.SetServiceWeights(n, sn, a.cache.Stat); err != nil {
		a.fail(ns, failclass.Setup, err.Error())
		return true
	}
	if err := a.g.SetServiceFiles(n, sn, a.cache.Stat); err != nil {
		a.fail(ns, failclass.Setup, "the server's inputs: "+err.Error())
		return true
	}
	for _, d := range n.Deps {
		u := a.nodes[d]
		up := stages.Upstream{Address: u.n.Addr, Status: string(u.status), Class: u.class}
		if u.record != nil {
			up.Result = u.record.Result
		}
		if u.spec != nil {
			up.Args = u.spec.Args
		}
		sn.Upstreams = append(sn.Upstreams, up)
	}
	ns.spec = sn
	if msg := a.g.LateCheck(n, sn); msg != "" {
		a.fail(ns, failclass.Setup, msg)
		return true
	}
	var env *plan.Envelope
	var why *plan.UnknownReason
	var err error
	if reused && a.samePlannedUpstreams(ns) {
		// Same arguments, no input files, the same upstream outputs as
		// planned: the planned envelope stands.
		env = ns.pn.Envelope
	} else {
		env, why, err = a.g.NodeEnvelope(n, sn, a.upstreamDigest, a.cache.Stat)
	}
	if err != nil {
		a.fail(ns, failclass.Setup, err.Error())
		return true
	}
	if env == nil {
		msg := why.String()
		if why.Input != "" {
			// The spelling is looked for again, not taken from why.Hint:
			// the graph keeps the hint the plan found, and an upstream may
			// have written the file under another spelling since.
			msg = fmt.Sprintf("input %s does not exist%s", why.Input, dsl.SpellingHint(a.g.Root, why.Input))
		}
		a.fail(ns, failclass.Setup, msg)
		return true
	}
	ns.env = env
	sn.InputDigests = a.g.InputDigests(n, sn, env, a.cache.Stat)
	if env == ns.pn.Envelope && ns.pn.Key != "" {
		ns.key = ns.pn.Key
	} else {
		ns.key, ns.envJSON = env.KeyJSON()
	}
	sn.Key = ns.key
	if a.opts.Exact && ns.pn.Key != "" && ns.key != ns.pn.Key {
		a.fail(ns, failclass.Setup, fmt.Sprintf("its key changed since the plan was saved (%s then, %s now): not run; make a new plan with 'cairn plan --out FILE'", store.Short(ns.pn.Key), store.Short(ns.key)))
		return true
	}
	if grp := a.sched.groups[n.Stage.Name]; grp != nil && grp.policy.Strict {
		// A strict batch decides for all its variants at once.
		ns.secrets = plan.SensitiveStrings(sn.Args)
		return a.settleStrict(grp, ns)
	}
	if ns.svc != nil {
		ns.secrets = plan.SensitiveStrings(sn.Args)
		if !a.serviceNeeded(ns) {
			a.serviceIdle(ns)
			return true
		}
		return false
	}
	if !a.opts.Replace[n.Addr] && a.cache.Has(ns.key) {
		// The plan decoded this record moments ago.
		if rec := ns.pn.Record; rec != nil && rec.Key == ns.key {
			if a.takeCachedRecord(ns, rec) {
				return true
			}
		} else if a.takeCached(ns) {
			return true
		}
	}
	if beside && reused {
		// It would run with the endpoints of a service nobody started.
		a.fail(ns, failclass.Setup, fmt.Sprintf("planned as cached beside %s, which was therefore not started, and its cached result is gone or its inputs changed since: not run; apply again, and its servers start", a.idleUpstreams(n)))
		return true
	}
	if a.opts.Exact && ns.pn.Action == plan.ActCached && !a.interrupted() {
		a.fail(ns, failclass.Setup, "planned as cached, but its cached result is gone since the plan was saved: not run; make a new plan with 'cairn plan --out FILE'")
		return true
	}
	// It runs: what its logs must not show, and what its input folders
	// hold, for the check after its run.
	ns.secrets = plan.SensitiveStrings(sn.Args)
	a.noteInputNames(ns)
	return false
}

// idleUpstreams names the services upstream of n that were not started.
func (a *applier) idleUpstreams(n *plan.Node) string {
	var names []string
	for _, d := range n.Deps {
		if u := a.nodes[d]; u.svc != nil && u.svc.idle {
			names = append(names, u.n.Addr)
		}
	}
	return strings.Join(names, ", ")
}

// anyUpstreamOK reports whether some upstream of n finished (ran or
// cached).
func (a *applier) anyUpstreamOK(n *plan.Node) bool {
	for _, d := range n.Deps {
		if st := a.nodes[d].status; st == plan.OK || st == plan.Cached {
			return true
		}
	}
	return false
}

// upstreamFailure says how an upstream ended: "failed (class): message"
// or "skipped".
func upstreamFailure(u *nodeState) string {
	if u.status != plan.Failed {
		return string(u.status)
	}
	return fmt.Sprintf("failed (%s): %s", u.class, u.message)
}

// upstreamsAsPlanned reports whether every upstream of n was cached at plan
// time and was taken from that same record: the instance objects n's
// expressions read are then the ones the plan evaluated it with.
func (a *applier) upstreamsAsPlanned(n *plan.Node) bool {
	for _, d := range n.Deps {
		u := a.nodes[d]
		if !n.KeyedDep(d) {
			continue // wait_for: never read
		}
		if u.status != plan.Cached || u.record == nil || u.pn.Record == nil || u.record.Key != u.pn.Record.Key {
			return false
		}
	}
	return true
}

// samePlannedUpstreams reports whether a node's planned envelope still
// holds: it has one, declares no input files (their content is read again
// at apply), and its upstreams' output digests are those it was planned
// with.
func (a *applier) samePlannedUpstreams(ns *nodeState) bool {
	env := ns.pn.Envelope
	if env == nil || ns.pn.Key == "" || len(ns.pn.Spec.Common.Inputs) > 0 || len(env.Inputs) > 0 {
		return false
	}
	if len(env.Upstreams) != len(ns.n.Deps)-len(ns.n.OrderOnly) {
		return false
	}
	got := make([]string, 0, len(ns.n.Deps))
	for _, d := range ns.n.Deps {
		if !ns.n.KeyedDep(d) {
			continue
		}
		dg, ok := a.upstreamDigest(a.g.Nodes[d])
		if !ok {
			return false
		}
		got = append(got, dg)
	}
	sort.Strings(got)
	for i := range got {
		if got[i] != env.Upstreams[i] {
			return false
		}
	}
	return true
}
