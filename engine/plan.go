package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/stages"
)

// Plan actions.
const (
	ActRun    = "run"
	ActCached = "cached"
)

// PlannedNode is one node of a plan.
type PlannedNode struct {
	Node   *Node
	Action string // ActRun or ActCached
	// Changed is true for "~ run": an earlier key exists for the address.
	Changed bool
	// Key is "" when it is known only after apply.
	Key      string
	Reasons  []string
	Envelope *Envelope
	Record   *Record
	Spec     *stages.Node
	// Targeted is false for nodes outside --target's closure: not run.
	Skipped bool
}

// Plan is what apply would do.
type Plan struct {
	Pipeline string
	Graph    *Graph
	Nodes    []*PlannedNode
	ToRun    int
	Cached   int
	Excluded int
}

// PlanOptions narrow or force a plan.
type PlanOptions struct {
	// Targets limits the plan to these addresses (a stage address means
	// all its instances) and what they need.
	Targets []string
	// Replace forces these addresses to run even if cached.
	Replace []string
}

// SingleVariantTargets returns the addresses among targets that name one
// variant of a batch stage: a run of it alone is for debugging, and its
// result is marked so (and not taken for the batch's).
func (g *Graph) SingleVariantTargets(targets []string) map[string]bool {
	out := map[string]bool{}
	for _, t := range targets {
		n, ok := g.ByAddr[normAddr(t)]
		if !ok || !n.Inst.Keyed {
			continue
		}
		if _, batch := n.Kind.(stages.Batcher); batch {
			out[n.Addr] = true
		}
	}
	return out
}

// normAddr is an address as given on the command line, with "stage."
// added when it was left out.
func normAddr(a string) string {
	a = strings.TrimSpace(a)
	if !strings.HasPrefix(a, "stage.") {
		a = "stage." + a
	}
	return a
}

// resolveAddrs turns --target/--replace addresses into node IDs.
func (g *Graph) resolveAddrs(addrs []string, flag string) (map[int]bool, hcl.Diagnostics) {
	out := map[int]bool{}
	var diags hcl.Diagnostics
	for _, a := range addrs {
		a = normAddr(a)
		if n, ok := g.ByAddr[a]; ok {
			out[n.ID] = true
			continue
		}
		name := strings.TrimPrefix(a, "stage.")
		if ns, ok := g.StageNodes[name]; ok {
			for _, n := range ns {
				out[n.ID] = true
			}
			continue
		}
		var all []string
		for addr := range g.ByAddr {
			all = append(all, addr)
		}
		detail := fmt.Sprintf("%s %s names no node of this pipeline.", flag, a)
		if s := suggestAddr(a, all); s != "" {
			detail += fmt.Sprintf(" Did you mean %s?", s)
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown address", Detail: detail + " Addresses look like stage.NAME or stage.NAME[\"KEY\"]; `cairn plan` lists them."})
	}
	return out, diags
}

func suggestAddr(a string, all []string) string {
	sort.Strings(all)
	best := ""
	for _, x := range all {
		if strings.HasPrefix(x, a) || strings.HasPrefix(a, x) {
			return x
		}
		if best == "" && strings.EqualFold(x, a) {
			best = x
		}
	}
	return best
}

// Ancestors returns ids plus every node they transitively depend on.
func (g *Graph) Ancestors(ids map[int]bool) map[int]bool {
	out := map[int]bool{}
	stack := make([]int, 0, len(ids))
	for id := range ids {
		stack = append(stack, id)
	}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if out[id] {
			continue
		}
		out[id] = true
		stack = append(stack, g.Nodes[id].Deps...)
	}
	return out
}

// MakePlan decides, for every node, whether it runs or comes from the
// cache, and why.
func MakePlan(g *Graph, cache *Cache, opts PlanOptions) (*Plan, hcl.Diagnostics) {
	p := &Plan{Pipeline: g.Config.Name, Graph: g, Nodes: make([]*PlannedNode, len(g.Nodes))}
	var diags hcl.Diagnostics
	var include map[int]bool
	if len(opts.Targets) > 0 {
		t, d := g.resolveAddrs(opts.Targets, "--target")
		diags = append(diags, d...)
		include = g.Ancestors(t)
	}
	replace, d := g.resolveAddrs(opts.Replace, "--replace")
	diags = append(diags, d...)
	if diags.HasErrors() {
		return nil, diags
	}
	if cache != nil {
		g.SetCacheDir(cache.Dir)
	}
	// The plan looks at the workspace at one moment: paths are checked
	// against folder listings.
	g.setPathSnapshot(true)
	defer g.setPathSnapshot(false)
	inst := func(u *Node) cty.Value {
		pn := p.Nodes[u.ID]
		if pn != nil && pn.Action == ActCached && pn.Record != nil {
			return recordInstance(u, pn.Record)
		}
		return unknownInstance(u)
	}
	upstream := func(u *Node) (string, bool) {
		pn := p.Nodes[u.ID]
		if pn != nil && pn.Action == ActCached && pn.Record != nil {
			return pn.Record.OutputDigest, true
		}
		return "", false
	}
	// In a plan with everything cached, each node's key is the one its
	// address had last: decode those records while the nodes evaluate.
	var last []string
	for _, n := range g.Nodes {
		if include == nil || include[n.ID] {
			if k := cache.LastKey(g.Config.Name, n.Addr); k != "" {
				last = append(last, k)
			}
		}
	}
	cache.Prefetch(last)
	ahead := g.evalAhead(func(n *Node) bool { return include == nil || include[n.ID] }, cache.Stat)
	debug := g.SingleVariantTargets(opts.Targets)
	for _, n := range g.Nodes {
		pn := &PlannedNode{Node: n, Action: ActRun}
		p.Nodes[n.ID] = pn
		if include != nil && !include[n.ID] {
			pn.Skipped = true
			p.Excluded++
			continue
		}
		sn, d := ahead[n.ID].sn, ahead[n.ID].diags
		if !ahead[n.ID].done {
			sn, d = g.EvalNode(n, inst)
		}
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		pn.Spec = sn
		base := ahead[n.ID].base
		if !ahead[n.ID].based {
			base = g.envelopeBase(n, sn, cache.Stat)
		}
		env, why, err := g.envelopeFrom(base, n, upstream)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read input", Detail: fmt.Sprintf("%s: %s", n.Addr, err), Subject: n.Stage.DeclRange.Ptr()})
			continue
		}
		if env == nil {
			pn.Reasons = []string{why.String()}
			p.ToRun++
			continue
		}
		pn.Envelope = env
		pn.Key = env.Key()
		if replace[n.ID] {
			pn.Reasons = []string{"replace requested (--replace)"}
			p.ToRun++
			continue
		}
		rec, ok := cache.Lookup(pn.Key)
		if ok && rec.Debug && !debug[n.Addr] {
			pn.Reasons = []string{"the cached result is a single-variant debug run's: the batch runs it again"}
			p.ToRun++
			continue
		}
		if ok {
			pn.Action = ActCached
			pn.Record = rec
			p.Cached++
			if msg := g.postconditionFails(n, rec, inst); msg != "" {
				pn.Reasons = []string{"postcondition fails: " + msg}
			}
			if w := p.waitsFor(n); w != "" {
				pn.Reasons = append(pn.Reasons, w)
			}
			continue
		}
		p.ToRun++
		prev := cache.LastKey(g.Config.Name, n.Addr)
		if prev == "" {
			pn.Reasons = []string{"new"}
			continue
		}
		pn.Changed = true
		if rec, ok := cache.Lookup(prev); ok {
			var old Envelope
			if json.Unmarshal(rec.Envelope, &old) == nil {
				pn.Reasons = diffEnvelopes(&old, env, g, n, p)
			}
		}
		if len(pn.Reasons) == 0 {
			pn.Reasons = []string{"the cached result is gone (evicted or collected)"}
		}
	}
	if !diags.HasErrors() {
		specs := map[string][]*stages.Node{}
		for _, pn := range p.Nodes {
			if pn.Spec != nil {
				specs[pn.Node.Stage.Name] = append(specs[pn.Node.Stage.Name], pn.Spec)
			}
		}
		diags = append(diags, g.stageChecks(specs)...)
	}
	return p, uniqueDiags(diags)
}

// waitsFor says which of a cached node's wait_for upstreams will run: it
// is taken from the cache only once they succeeded. "" when none will.
func (p *Plan) waitsFor(n *Node) string {
	var running []string
	for _, id := range n.OrderOnly {
		if u := p.Nodes[id]; u != nil && !u.Skipped && u.Action == ActRun {
			running = append(running, u.Node.Addr)
		}
	}
	switch len(running) {
	case 0:
		return ""
	case 1:
		return "waits for " + running[0] + ", which will run"
	}
	return fmt.Sprintf("waits for %s and %d more, which will run", running[0], len(running)-1)
}

// postconditionFails evaluates a cached node's postconditions on its
// record, so plan can say that apply will refuse it; "" when they hold or
// cannot be evaluated yet.
func (g *Graph) postconditionFails(n *Node, rec *Record, inst instanceFunc) string {
	self := func() cty.Value { return recordInstance(n, rec) }
	if msg, invalid := g.evalPostconditions(n, self, inst); !invalid {
		return msg
	}
	return ""
}

// evalPostconditions evaluates n's postconditions with self bound to its
// instance object (built only when there are postconditions). It returns
// "" when all hold, else what failed: the first false condition's
// error_message (invalid false), or why a condition could not be evaluated
// to true or false (invalid true).
func (g *Graph) evalPostconditions(n *Node, self func() cty.Value, inst instanceFunc) (msg string, invalid bool) {
	if len(n.Stage.Postconditions) == 0 {
		return "", false
	}
	ctx := g.evalContext(n, inst)
	ctx.Variables["self"] = self()
	for _, chk := range n.Stage.Postconditions {
		v, diags := chk.Condition.Value(ctx)
		if diags.HasErrors() {
			return "the postcondition could not be evaluated: " + oneLine(diags.Error()), true
		}
		v, _ = v.Unmark()
		if !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.Bool) {
			return "the postcondition did not evaluate to true or false", true
		}
		if v.False() {
			return dsl.CheckMessage(chk, ctx), false
		}
	}
	return "", false
}

// recordInstance is the instance object of a cached or finished node.
func recordInstance(n *Node, r *Record) cty.Value {
	res, err := jsonToCty(r.Result)
	if err != nil {
		res = cty.NullVal(cty.DynamicPseudoType)
	}
	val := cty.NullVal(cty.DynamicPseudoType)
	if n.Inst.Value != cty.NilVal {
		val = n.Inst.Value
	}
	return cty.ObjectVal(map[string]cty.Value{
		"key":          cty.StringVal(n.Inst.Key),
		"value":        val,
		"result":       res,
		"status":       cty.StringVal("ok"),
		"class":        cty.StringVal(""),
		"message":      cty.StringVal(""),
		"exit_code":    cty.NumberIntVal(int64(r.ExitCode)),
		"duration_s":   cty.NumberFloatVal(r.Ended.Sub(r.Started).Seconds()),
		"peak_rss_mib": cty.NumberFloatVal(r.PeakRSSMiB),
		"peak_gpu_mib": cty.NumberFloatVal(r.PeakGPUMiB),
		"key_digest":   cty.StringVal(r.Key),
	})
}

// diffEnvelopes explains why a node's key changed.
func diffEnvelopes(old, cur *Envelope, g *Graph, n *Node, p *Plan) []string {
	var out []string
	if old.Kind != cur.Kind || old.KindVersion != cur.KindVersion {
		out = append(out, fmt.Sprintf("kind %s v%d -> %s v%d", old.Kind, old.KindVersion, cur.Kind, cur.KindVersion))
	}
	names := map[string]bool{}
	for k := range old.Args {
		names[k] = true
	}
	for k := range cur.Args {
		names[k] = true
	}
	for _, k := range sortedKeys(names) {
		o, c := old.Args[k], cur.Args[k]
		switch {
		case o == nil:
			s, _ := showChange(c, nil, 60)
			out = append(out, fmt.Sprintf("%s added: %s", k, showSensitive(c, s)))
		case c == nil:
			out = append(out, fmt.Sprintf("%s removed", k))
		case string(o) != string(c):
			so, sc := showChange(o, c, 60)
			out = append(out, fmt.Sprintf("%s: %s -> %s", k, showSensitive(o, so), showSensitive(c, sc)))
		}
	}
	ins := map[string]bool{}
	for k := range old.Inputs {
		ins[k] = true
	}
	for k := range cur.Inputs {
		ins[k] = true
	}
	for _, k := range sortedKeys(ins) {
		o, c := old.Inputs[k], cur.Inputs[k]
		switch {
		case o == "":
			out = append(out, fmt.Sprintf("input %s added", k))
		case c == "":
			out = append(out, fmt.Sprintf("input %s removed", k))
		case o != c:
			out = append(out, fmt.Sprintf("input %s changed", k))
		}
	}
	if strings.Join(old.Upstreams, ",") != strings.Join(cur.Upstreams, ",") {
		had := map[string]bool{}
		for _, d := range old.Upstreams {
			had[d] = true
		}
		named := false
		for _, id := range n.Deps {
			u := p.Nodes[id]
			if u != nil && u.Record != nil && n.keyedDep(id) && !had[u.Record.OutputDigest] {
				out = append(out, fmt.Sprintf("upstream %s changed", u.Node.Addr))
				named = true
			}
		}
		if !named {
			out = append(out, "upstream outputs changed")
		}
	}
	return out
}

// showSensitive is s, what a plan reason shows of the value b, unless b
// holds a sensitive value.
func showSensitive(b []byte, s string) string {
	if bytes.Contains(b, []byte("sensitive_sha256")) {
		return "(sensitive)"
	}
	return s
}

// Render prints the plan for people.
func (p *Plan) Render(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	width := 0
	for _, pn := range p.Nodes {
		if !pn.Skipped {
			width = max(width, len(pn.Node.Addr))
		}
	}
	width = min(width, planWidthMax)
	for _, pn := range p.Nodes {
		if pn.Skipped {
			continue
		}
		sym, what := "+", "run"
		switch {
		case pn.Action == ActCached:
			sym, what = "=", "cached"
		case pn.Changed:
			sym = "~"
		}
		writePlanLine(bw, sym, width, pn.Node.Addr, what, pn.Reasons)
	}
	writePlanFooter(bw, p.ToRun, p.Cached, p.Excluded)
	return bw.Flush()
}

// planWidthMax caps the address column of a rendered plan.
const planWidthMax = 60

// writePlanLine writes one node's line of a rendered plan.
func writePlanLine(bw *bufio.Writer, sym string, width int, addr, what string, reasons []string) {
	fmt.Fprintf(bw, "  %s %-*s  %s", sym, width, addr, what)
	if len(reasons) > 0 {
		fmt.Fprintf(bw, ": %s", strings.Join(reasons, "; "))
	}
	bw.WriteByte('\n')
}

// writePlanFooter writes a rendered plan's totals.
func writePlanFooter(bw *bufio.Writer, toRun, cached, excluded int) {
	fmt.Fprintf(bw, "\nPlan: %d to run, %d cached.", toRun, cached)
	if excluded > 0 {
		fmt.Fprintf(bw, " (%d nodes outside --target not shown.)", excluded)
	}
	bw.WriteByte('\n')
}

// PlanJSON is the machine-readable plan (`cairn plan --json`, --out).
type PlanJSON struct {
	Format   int            `json:"format"`
	Pipeline string         `json:"pipeline"`
	ToRun    int            `json:"to_run"`
	Cached   int            `json:"cached"`
	Nodes    []PlanNodeJSON `json:"nodes"`
}

// PlanNodeJSON is one node of PlanJSON.
type PlanNodeJSON struct {
	Address string   `json:"address"`
	Stage   string   `json:"stage"`
	Kind    string   `json:"kind"`
	Action  string   `json:"action"`
	Changed bool     `json:"changed,omitempty"`
	Key     string   `json:"key,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
	Deps    []string `json:"deps,omitempty"`
}

// JSON returns the machine-readable plan.
func (p *Plan) JSON() *PlanJSON {
	out := &PlanJSON{Format: 1, Pipeline: p.Pipeline, ToRun: p.ToRun, Cached: p.Cached}
	for _, pn := range p.Nodes {
		if pn.Skipped {
			continue
		}
		j := PlanNodeJSON{
			Address: pn.Node.Addr, Stage: pn.Node.Stage.Name, Kind: pn.Node.Stage.Kind,
			Action: pn.Action, Changed: pn.Changed, Key: pn.Key, Reasons: pn.Reasons,
		}
		for _, d := range pn.Node.Deps {
			j.Deps = append(j.Deps, p.Graph.Nodes[d].Addr)
		}
		out.Nodes = append(out.Nodes, j)
	}
	return out
}
