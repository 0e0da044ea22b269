package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/dsl/addrs"
	"github.com/cairn-run/cairn/stages"
)

// ActNotStarted: a service node (a serve stage) none of whose consumers
// will run or send it a request (every evaluation it would serve is in the
// item store): apply does not start it.
const ActNotStarted = "not_started"

// NotStartedReason is the plan's reason for ActNotStarted.
const NotStartedReason = "nothing to evaluate"

// SetServiceWeights digests the weights a service node names (through
// dg, the stat cache: a large folder is read again only when a file of it
// changed) and sets sn.WeightsDigest. Other nodes are left alone.
func (g *Graph) SetServiceWeights(n *Node, sn *stages.Node, dg contentDigester) error {
	svc, ok := n.Kind.(stages.Service)
	if !ok {
		return nil
	}
	p := svc.WeightsPath(sn)
	if p == "" {
		return nil
	}
	full := p
	if !filepath.IsAbs(p) {
		full = filepath.Join(g.Root, p)
	}
	// Through links: a checkpoint linked into the folder is its bytes.
	d, err := dg.ContentTree(full)
	if err != nil {
		return fmt.Errorf("weights %s: %w", p, err)
	}
	sn.WeightsDigest = "sha256:" + d
	return nil
}

// SetServiceFiles digests a service node's inputs, the files its server
// reads besides its weights (a launcher script, a chat template, an
// adapter folder), each as an input is digested, and sets
// sn.FilesDigest: its consumers' keys hold it, so such a file edited is
// another server. Files its command line names are keyed as written,
// not by content: a server writes some of them (a log, a download
// folder), which would give it another identity at every run. The
// digest is the sha256 of "PATH\x00DIGEST\n" for each input in byte
// order (the weights, digested as such, left out); "" (the node's
// identity as it was before inputs counted) when there is none.
func (g *Graph) SetServiceFiles(n *Node, sn *stages.Node, dg digester) error {
	svc, ok := n.Kind.(stages.Service)
	if !ok {
		return nil
	}
	sn.FilesDigest = ""
	paths := map[string]bool{}
	for _, p := range sn.Common.Inputs {
		paths[filepath.ToSlash(p)] = true
	}
	if w := svc.WeightsPath(sn); w != "" {
		delete(paths, filepath.ToSlash(filepath.Clean(g.inWorkspace(w))))
	}
	if len(paths) == 0 {
		return nil
	}
	h := sha256.New()
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		d, err := dg.Tree(filepath.Join(g.Root, p))
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		fmt.Fprintf(h, "%s\x00%s\n", p, d)
	}
	sn.FilesDigest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return nil
}

// contentDigester digests a tree through its symbolic links
// (fsdigest.Cache.ContentTree).
type contentDigester interface {
	ContentTree(path string) (string, error)
}

// serviceDigest is a service node's output digest as its consumers' keys
// hold it: its identity (model and weights), never where it listens.
func serviceDigest(n *Node, sn *stages.Node) (string, bool) {
	svc, ok := n.Kind.(stages.Service)
	if !ok || sn == nil {
		return "", false
	}
	return OutputDigest(nil, svc.Identity(sn), string(OK)), true
}

// ServiceNeeded reports whether a consumer of service node n will run and
// may send it a request: a downstream the plan runs (or may run), unless
// its kind tells it sends none (stages.ServiceConsumer) or apply will
// refuse to start it or an upstream it waits for (refused).
func ServiceNeeded(p *Plan, n *Node, sn *stages.Node, root, cacheDir string) bool {
	if p == nil {
		return true
	}
	svc := n.Kind.(stages.Service)
	id := svc.Identity(sn)
	refused := map[int]bool{}
	for _, d := range n.Downs {
		pn := p.Nodes[d]
		if pn == nil || pn.Skipped || pn.Action == ActCached || pn.Action == ActSkip || pn.Action == ActNotStarted {
			continue
		}
		if _, svc := pn.Node.Kind.(stages.Service); svc {
			// Another service started after this one (to take the GPUs
			// this one leaves free) is no consumer.
			continue
		}
		c, ok := pn.Node.Kind.(stages.ServiceConsumer)
		if pn.Spec != nil && !pn.Replaced {
			// Told before its upstreams run (an out folder that holds the
			// phase, needed = false): it sends nothing, may run or not.
			if sk, ok := pn.Node.Kind.(stages.ServiceSkipper); ok && sk.SkipsService(pn.Spec, root) {
				continue
			}
		}
		if p.refused(d, root, refused) {
			// Apply refuses to start it, or skips it for an upstream it
			// refuses (an interrupted optimization, not replaced): it
			// sends nothing, and a server started for it (a reflection
			// model on four GPUs) would serve no one.
			continue
		}
		if !ok || pn.Spec == nil || pn.Action == ActMayRun {
			return true
		}
		// Replaced, it runs again, and its items come from the store as
		// ever: only what it sends counts.
		if c.NeedsService(pn.Spec, root, cacheDir, id, pn.Replaced) {
			return true
		}
	}
	return false
}

// refused reports whether apply will not start node id: its kind refuses
// it before it starts (stages.PlanRefuser: an interrupted optimization,
// not replaced), or an upstream is refused and its stage does not run on
// an upstream's failure. memo holds the answers found so far.
func (p *Plan) refused(id int, root string, memo map[int]bool) bool {
	if r, ok := memo[id]; ok {
		return r
	}
	memo[id] = false // a graph has no cycle; this only bounds the walk
	pn := p.Nodes[id]
	r := false
	if pn != nil && !pn.Skipped && pn.Action != ActCached && pn.Spec != nil {
		if k, ok := pn.Node.Kind.(stages.PlanRefuser); ok {
			r = k.PlanRefusal(pn.Spec, root, pn.Key, pn.Replaced) != ""
		}
	}
	if pn != nil && !r && pn.Action != ActCached && pn.Node.Stage.OnUpstreamFailure != "run" {
		for _, d := range pn.Node.Deps {
			if p.refused(d, root, memo) {
				r = true
				break
			}
		}
	}
	memo[id] = r
	return r
}

// markIdleServices makes every service node whose consumers will not need
// it ActNotStarted.
func (p *Plan) markIdleServices(root, cacheDir string) {
	for _, pn := range p.Nodes {
		if _, ok := pn.Node.Kind.(stages.Service); !ok || pn.Skipped || pn.Action != ActRun || pn.Spec == nil {
			continue
		}
		if ServiceNeeded(p, pn.Node, pn.Spec, root, cacheDir) {
			continue
		}
		pn.Action = ActNotStarted
		pn.Reasons = []string{NotStartedReason}
		p.ToRun--
		p.NotStarted++
	}
}

// serviceEndpoints is the endpoints instance attribute of a node: a
// service's replicas' base URLs from its result; null for other nodes.
func serviceEndpoints(n *Node, res cty.Value) cty.Value {
	if _, ok := n.Kind.(stages.Service); !ok {
		return cty.NullVal(cty.List(cty.String))
	}
	if res.IsNull() || !res.IsKnown() || !res.Type().IsObjectType() || !res.Type().HasAttribute("endpoints") {
		return cty.NullVal(cty.List(cty.String))
	}
	eps := res.GetAttr("endpoints")
	if eps.IsNull() || !eps.IsKnown() {
		return cty.NullVal(cty.List(cty.String))
	}
	var list []cty.Value
	for it := eps.ElementIterator(); it.Next(); {
		_, v := it.Element()
		if v.Type() == cty.String {
			list = append(list, v)
		}
	}
	if len(list) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	return cty.ListVal(list)
}

// servedModelChecks refuses a consumer of a service (an evaluate stage)
// whose endpoints attribute reads a serve stage none of whose instances
// it depends on serves the consumer's model: cairn starts a serve stage
// only for the evaluations of its own model, so the endpoints would be
// empty and the items sent to TASK_ENDPOINTS, a server the pipeline does
// not name; and one whose endpoints mix a serve stage's with other
// servers' (mixedEndpointsChecks). specs are the nodes' evaluated
// attributes by node ID.
func (g *Graph) servedModelChecks(specs []*stages.Node) hcl.Diagnostics {
	var diags hcl.Diagnostics
	known := func(sn *stages.Node, attr string) (string, bool) {
		if sn == nil {
			return "", false
		}
		s, ok, _ := stages.StringArg(sn, attr) // its own check reports a bad one
		return s, ok
	}
	// The stages each consumer stage's endpoints reads, once a stage.
	reads := map[string][]string{}
	readsOf := func(s string, attr *hcl.Attribute) []string {
		names, done := reads[s]
		if !done {
			for _, tr := range attr.Expr.Variables() {
				if tr.RootName() != "stage" || len(tr) < 2 {
					continue
				}
				if a, ok := tr[1].(hcl.TraverseAttr); ok {
					names = append(names, a.Name)
				}
			}
			reads[s] = names
		}
		return names
	}
	for _, n := range g.Nodes {
		if _, ok := n.Kind.(stages.ServiceConsumer); !ok {
			continue
		}
		attr := n.Stage.Attrs["endpoints"]
		if attr == nil {
			continue
		}
		model, ok := known(specs[n.ID], "model")
		if !ok {
			continue
		}
		for _, name := range readsOf(n.Stage.Name, attr) {
			var served []string
			for _, d := range n.Deps {
				u := g.Nodes[d]
				if u.Stage.Name != name {
					continue
				}
				if _, svc := u.Kind.(stages.Service); !svc {
					continue
				}
				m, ok := known(specs[u.ID], "model")
				if !ok {
					served = nil // not known yet: nothing to say
					break
				}
				served = append(served, m)
			}
			if len(served) == 0 || slices.Contains(served, model) {
				continue
			}
			r := attr.Expr.Range()
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Endpoints of another model",
				Detail:  fmt.Sprintf("endpoints reads stage.%s, which serves %q; this stage evaluates %q. cairn starts a serve stage only for the evaluations of its own model, so these endpoints would be empty and the items sent to TASK_ENDPOINTS, a server this pipeline does not name. Give both stages the same model, or read the endpoints of a stage that serves %q.", name, served[0], model, model),
				Subject: &r})
		}
	}
	return append(diags, g.mixedEndpointsChecks()...)
}

// mixedEndpointsChecks refuses a consumer's endpoints list (an evaluate or
// optimize stage's endpoints, a model_cache's endpoints, an optimize
// stage's reflection_base_url) that reads a serve node and also another
// serve node (another serve stage's, or another instance of a for_each
// serve stage), a plain URL or any other source of URLs: the consumer
// keys every result by the one serve node's identity
// (stages.ServeModelKey; the model cache's weights; an optimize node's
// key, by the reflection model's serve stage), so answers from the other
// servers would be stored as that node's, and taken from the store later
// by a pipeline that reads that node alone. Each node is checked, as the
// instances a list names may differ by node (stage.a[each.key]); an
// instance whose key is not known yet (a variable without a value, at
// validate) is checked when it is.
func (g *Graph) mixedEndpointsChecks() hcl.Diagnostics {
	serves := map[string]bool{}
	for _, n := range g.Nodes {
		if _, ok := n.Kind.(stages.Service); ok {
			serves[n.Stage.Name] = true
		}
	}
	var diags hcl.Diagnostics
	for _, n := range g.Nodes {
		if serves[n.Stage.Name] {
			continue
		}
		m := &endpointsMixer{g: g, n: n, serves: serves, ctx: g.eachContext(n)}
		for _, ee := range endpointsExprs(n.Stage.Attrs) {
			if why := m.mix(ee.expr); why != "" {
				r := ee.expr.Range()
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Endpoints of more than one server",
					Detail:  fmt.Sprintf("%s reads %s. Every result of this stage is keyed by the serve stage it reads (its model, weights and command line), so answers from the other servers would be stored as that stage's, and a pipeline reading it alone would take them from the store. Give each endpoints list one serve stage's endpoints alone, or plain URLs alone, and of a serve stage with for_each, one instance's; to evaluate on several servers, use a stage per server.", ee.attr, why),
					Subject: &r})
			}
		}
	}
	return diags
}

// endpointsExpr is an expression that gives a consumer endpoints, and
// the attribute it is, as messages name it.
type endpointsExpr struct {
	attr string
	expr hcl.Expression
}

// endpointsExprs are the expressions of attrs that give a consumer
// endpoints: the endpoints attribute, the endpoints of model_cache (an
// object constructor), and an optimize stage's reflection_base_url, the
// reflection model's.
func endpointsExprs(attrs hcl.Attributes) []endpointsExpr {
	var out []endpointsExpr
	if a := attrs["endpoints"]; a != nil {
		out = append(out, endpointsExpr{"endpoints", a.Expr})
	}
	if a := attrs["model_cache"]; a != nil {
		if it, ok := dsl.ObjectItem(a.Expr, func(k string) bool { return k == "endpoints" }); ok {
			out = append(out, endpointsExpr{"endpoints", it.ValueExpr})
		}
	}
	if a := attrs["reflection_base_url"]; a != nil {
		out = append(out, endpointsExpr{"reflection_base_url", a.Expr})
	}
	return out
}

// endpointsMixer tells, for node n, whether an endpoints expression of
// its mixes servers. serves names the serve stages; ctx gives n's
// evaluation context before anything runs, for instance keys.
type endpointsMixer struct {
	g      *Graph
	n      *Node
	serves map[string]bool
	ctx    func() *hcl.EvalContext
}

// mix says what mixes in e, an endpoints expression, the endpoints of a
// serve node with those of another server ("stage.a and stage.b",
// "stage.a[\"x\"] and stage.a[\"y\"]", "stage.m and a plain URL"), ""
// when nothing does, or nothing does for sure yet (two instances of one
// serve stage whose keys are not known). The branches of a conditional
// are apart: only one of them is the list.
func (m *endpointsMixer) mix(e hcl.Expression) string {
	switch x := dsl.Syntax(e).(type) {
	case *hclsyntax.ConditionalExpr:
		if why := m.mix(x.TrueResult); why != "" {
			return why
		}
		return m.mix(x.FalseResult)
	case *hclsyntax.ParenthesesExpr:
		return m.mix(x.Expression)
	}
	var served, unsure, others []string
	stagesRead := map[string]bool{} // the serve stages read, instances known or not
	add := func(to *[]string, s string) {
		if !slices.Contains(*to, s) {
			*to = append(*to, s)
		}
	}
	refs := urlSources(e)
	if len(refs) == 1 && refs[0].Root == "stage" && (refs[0].HasKey || refs[0].KeyExpr != nil) {
		// One instance of one stage, whichever its key: nothing to mix,
		// and no key to evaluate (the 3,745 nodes of seed 002's grid
		// each read stage.task_model[each.value.model]).
		return ""
	}
	for _, ref := range refs {
		switch {
		case ref.Root == "":
			add(&others, "a plain URL")
		case ref.Root != "stage" || !m.serves[ref.Name]:
			add(&others, ref.Root+"."+ref.Name)
		default:
			stagesRead[ref.Name] = true
			nodes, known := m.instances(ref)
			if !known {
				add(&unsure, "an instance of "+addrs.Stage(ref.Name).String())
			}
			for _, a := range nodes {
				add(&served, a)
			}
		}
	}
	all := slices.Concat(served, unsure)
	switch {
	case len(served) > 1:
		return "the endpoints of " + strings.Join(served, " and ")
	case len(all) > 0 && len(others) > 0:
		return fmt.Sprintf("the endpoints of %s and %s", all[0], strings.Join(others, " and "))
	case len(stagesRead) > 1:
		return "the endpoints of " + strings.Join(all, " and ")
	}
	// Instances of one stage, some of them not known yet: the same one,
	// perhaps; the plan, which knows them, tells.
	return ""
}

// instances are the addresses of the serve nodes ref, a reference to a
// serve stage in one of n's endpoints lists, names: the stage's one node,
// the instance its key names (stage.a["x"], stage.a[each.key],
// stage.a[var.k]), or every instance (stage.a iterated, in a for
// expression). known is false where which one is not known yet: a key
// made of a variable without a value, a stage whose instances wait for
// one, a node whose own instance does.
func (m *endpointsMixer) instances(ref dsl.Ref) (nodes []string, known bool) {
	g := m.g
	if g.Waiting[ref.Name] != "" || m.n.waiting && ref.KeyExpr != nil {
		return nil, false
	}
	ups := g.StageNodes[ref.Name]
	key, keyed := refKey(ref, m.n.Inst, m.ctx)
	switch {
	case keyed:
		u, ok := g.ByAddr[addrs.Instance(ref.Name, key).String()]
		if !ok {
			return nil, false // no such instance: the graph says so
		}
		return []string{u.Addr}, true
	case ref.KeyExpr != nil:
		return nil, false
	}
	for _, u := range ups {
		nodes = append(nodes, u.Addr)
	}
	return nodes, true
}

// urlSources are what e takes its values from: a reference for each
// (stage.m, stage.a["x"], stage.a[each.key], var.task_endpoints,
// local.eps: its root and name, and a stage instance's key), and one with
// no root for a string written in it (a plain URL). A collection's index,
// a conditional's condition and a for expression's own symbols give no
// values.
func urlSources(e hcl.Expression) []dsl.Ref {
	var out []dsl.Ref
	switch x := dsl.Syntax(e).(type) {
	case *hclsyntax.TemplateExpr, *hclsyntax.TemplateWrapExpr:
		if len(e.Variables()) == 0 {
			return []dsl.Ref{{}}
		}
	case *hclsyntax.LiteralValueExpr:
		if x.Val.Type() == cty.String {
			return []dsl.Ref{{}}
		}
		return nil
	case *hclsyntax.IndexExpr:
		if st, ok := x.Collection.(*hclsyntax.ScopeTraversalExpr); ok && len(st.Traversal) == 2 && st.Traversal.RootName() == "stage" {
			// stage.a[each.key]: one instance, known per node.
			if a, ok := st.Traversal[1].(hcl.TraverseAttr); ok {
				return []dsl.Ref{{Root: "stage", Name: a.Name, KeyExpr: x.Key, Range: x.SrcRange}}
			}
		}
		return urlSources(x.Collection)
	case *hclsyntax.RelativeTraversalExpr:
		return urlSources(x.Source)
	case *hclsyntax.SplatExpr:
		return urlSources(x.Source)
	case *hclsyntax.ConditionalExpr:
		return append(urlSources(x.TrueResult), urlSources(x.FalseResult)...)
	case *hclsyntax.TupleConsExpr:
		for _, it := range x.Exprs {
			out = append(out, urlSources(it)...)
		}
		return out
	case *hclsyntax.FunctionCallExpr:
		for _, a := range x.Args {
			out = append(out, urlSources(a)...)
		}
		return out
	case *hclsyntax.ForExpr:
		return urlSources(x.CollExpr)
	}
	for _, tr := range e.Variables() {
		r := dsl.Ref{Root: tr.RootName(), Range: tr.SourceRange()}
		if a, ok := tr[min(1, len(tr)-1)].(hcl.TraverseAttr); ok {
			r.Name = a.Name
		}
		if ix, ok := tr[min(2, len(tr)-1)].(hcl.TraverseIndex); ok && r.Root == "stage" && ix.Key.Type() == cty.String && ix.Key.IsKnown() && !ix.Key.IsNull() {
			r.HasKey, r.Key = true, ix.Key.AsString()
		}
		out = append(out, r)
	}
	return out
}
