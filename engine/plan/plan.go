package plan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/dsl/addrs"
	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/fsdigest"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/stages"
)

// Plan actions.
const (
	ActRun    = "run"
	ActCached = "cached"
	// ActMayRun: the node's key depends on the output of an upstream that
	// runs first; apply computes it then and runs the node only if it is
	// not cached.
	ActMayRun = "may_run"
	// ActSkip: an upstream fails (a cached result whose postcondition
	// fails) and the node does not run on upstream failure.
	ActSkip = "skip"
)

// PlannedNode is one node of a plan.
type PlannedNode struct {
	Node   *Node
	Action string // ActRun, ActMayRun, ActCached or ActSkip
	// Changed is true for "~ run": an earlier key exists for the address.
	Changed bool
	// Key is "" when it is known only after apply.
	Key      string
	Reasons  []string
	Envelope *Envelope
	Record   *store.Record
	Spec     *stages.Node
	// Skipped is set for nodes outside --target's closure: not run.
	Skipped bool
	// Replaced: --replace named it, so it runs whatever its out folder
	// or the cache holds.
	Replaced bool
	// Refusal says why apply would refuse to start the node (an
	// interrupted node that must not be restarted silently); "" when it
	// would not. Set by engine.NoteRefusals, for showing the plan.
	Refusal string
	// fails is the message of a cached node's failing postcondition:
	// apply restores it, then fails it.
	fails string
	// postUnknown: a cached node's postcondition reads a value known only
	// once an upstream that is to run has run, so whether apply fails it
	// is not known: what its downstreams see of it (its status, its
	// output digest) is not known either.
	postUnknown bool
	// refusedClass is the failure class apply fails the node with, without
	// running or restoring it, when it is sure to (Refusal, else Reasons,
	// says why): its kind refuses it, or it fails the check before it
	// starts (setup), or something of the user's stands where its cached
	// output goes (result). "" otherwise.
	refusedClass string
	// svcDigest is a service node's output digest as its consumers' keys
	// hold it (svcOK), once svcDone.
	svcDigest      string
	svcOK, svcDone bool
}

// Plan is what apply would do.
type Plan struct {
	Pipeline string
	Graph    *Graph
	Nodes    []*PlannedNode
	ToRun    int
	MayRun   int
	Cached   int
	Skip     int // skipped because an upstream fails
	// NotStarted counts service nodes no consumer needs (ActNotStarted).
	NotStarted int
	Excluded   int
	// SameWork counts the nodes to run whose key another node to run has
	// (noteSameWork).
	SameWork int
	// Options are the --target and --replace the plan was made with.
	Options Options
	// sensitive: the pipeline has sensitive variables, whose values its
	// nodes' reasons must not show.
	sensitive bool
	// held is each node's key the workspace holds (store.HeldKeys), by
	// node ID; "" for a node not planned or never run.
	held []string
	// removes holds, by node id, what restoring a cached node removes
	// from its declared folders (restoreRemoves).
	removes map[int][]string
	// byOutput maps an output digest to the addresses of the pipeline
	// whose last record holds it, made when a reason first needs it
	// (heldBy).
	byOutput map[string][]string
	// stat is the cache's stat cache the plan digested inputs with, for
	// the definitions a saved plan holds (definitions).
	stat *fsdigest.Cache
}

// Options narrow or force a plan.
type Options struct {
	// Targets limits the plan to these addresses (a stage address means
	// all its instances) and what they need.
	Targets []string
	// Replace forces these addresses to run even if cached.
	Replace []string
	// Only runs the targets alone: every other node they need must be
	// cached, or the plan is refused (a phase run from saved artifacts).
	Only bool
}

// plannedIDs is include (the nodes a plan narrowed by --target plans) by
// node ID; nil for a whole plan.
func plannedIDs(include map[int]bool, n int) []bool {
	if include == nil {
		return nil
	}
	planned := make([]bool, n)
	for id := range include {
		planned[id] = true
	}
	return planned
}

// SingleVariantTargets returns the addresses among targets that name one
// variant of a batch stage: a run of it alone is for debugging, and its
// result is marked so (and not taken for the batch's).
func (g *Graph) SingleVariantTargets(targets []string) map[string]bool {
	out := map[string]bool{}
	for _, t := range targets {
		a, err := addrs.Parse(strings.TrimSpace(t))
		if err != nil {
			continue
		}
		n, ok := g.ByAddr[a.String()]
		if !ok || !n.Inst.Keyed {
			continue
		}
		if _, batch := n.Kind.(stages.Batcher); batch {
			out[n.Addr] = true
		}
	}
	return out
}

// resolveAddrs turns --target/--replace addresses into node IDs.
// An address may leave out the "stage." in front; one of a stage (without a
// key) names all of its nodes.
func (g *Graph) resolveAddrs(given []string, flag string) (map[int]bool, hcl.Diagnostics) {
	out := map[int]bool{}
	var diags hcl.Diagnostics
	for _, a := range given {
		a = strings.TrimSpace(a)
		if addr, err := addrs.Parse(a); err == nil {
			if n, ok := g.ByAddr[addr.String()]; ok {
				out[n.ID] = true
				continue
			}
			if ns, ok := g.StageNodes[addr.Name]; ok && addr == addr.Stage() {
				for _, n := range ns {
					out[n.ID] = true
				}
				continue
			}
		}
		a = addrs.WithPrefix(a)
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

// Make decides, for every node, whether it runs or comes from the
// cache, and why.
func Make(g *Graph, cache *store.Cache, opts Options) (*Plan, hcl.Diagnostics) {
	if g.stat == nil && cache != nil && cache.Stat != nil {
		g.stat = cache.Stat
	}
	p, diags := makePlan(g, cache, opts, nil)
	if diags.HasErrors() {
		return p, diags
	}
	// A strict batch with a variant to run runs them all: plan again with
	// its cached variants forced.
	if forced := strictBatches(p); len(forced) > 0 {
		return makePlan(g, cache, opts, forced)
	}
	return p, diags
}

// MixedLaunches reports whether the cached records of a batch's variants
// (nil: not cached) were measured in more than one launch, or one was
// measured in none known: a strict batch taken from them would not be
// measured together (a variant that failed in the last launch keeps its
// record of an earlier one).
func MixedLaunches(recs []*store.Record) bool {
	batch := ""
	for _, r := range recs {
		if r == nil {
			continue
		}
		if r.Launch == nil || r.Launch.Batch == "" {
			return true
		}
		if batch == "" {
			batch = r.Launch.Batch
		} else if r.Launch.Batch != batch {
			return true
		}
	}
	return false
}

// forcedRun makes a cached node of a strict batch run (or may run).
type forcedRun struct {
	action, reason string
}

// strictBatches finds the strict batches (waves stages with strict_batch)
// that have both a variant to run and cached ones, and says for each
// cached one why it runs again: with a variant that runs it runs too; with
// one that may run (its key known after apply) it may run too.
func strictBatches(p *Plan) map[int]forcedRun {
	out := map[int]forcedRun{}
	for _, st := range p.Graph.StageOrder {
		nodes := p.Graph.StageNodes[st.Name]
		if len(nodes) == 0 {
			continue
		}
		if _, ok := nodes[0].Kind.(stages.Batcher); !ok {
			continue // a stage's nodes are of its kind: none batches
		}
		var members []*PlannedNode
		strict := false
		for _, n := range nodes {
			pn := p.Nodes[n.ID]
			if pn.Skipped || pn.Action == ActSkip {
				continue
			}
			if b, ok := n.Kind.(stages.Batcher); ok && pn.Spec != nil && b.BatchPolicy(pn.Spec).Strict {
				strict = true
			}
			members = append(members, pn)
		}
		if !strict {
			continue
		}
		var runs, mayRun *PlannedNode
		var recs []*store.Record
		for _, pn := range members {
			switch {
			case pn.Action == ActRun && runs == nil:
				runs = pn
			case pn.Action == ActMayRun && mayRun == nil:
				mayRun = pn
			}
			recs = append(recs, pn.Record)
		}
		mixed := runs == nil && mayRun == nil && MixedLaunches(recs)
		for _, pn := range members {
			if pn.Action != ActCached {
				continue
			}
			switch {
			case runs != nil:
				out[pn.Node.ID] = forcedRun{ActRun, fmt.Sprintf("strict_batch: %s runs, so the whole batch runs again", runs.Node.Addr)}
			case mayRun != nil:
				out[pn.Node.ID] = forcedRun{ActMayRun, fmt.Sprintf("strict_batch: the whole batch runs again if %s must run", mayRun.Node.Addr)}
			case mixed:
				out[pn.Node.ID] = forcedRun{ActRun, "strict_batch: the cached variants were measured in different launches, so the whole batch runs again together"}
			}
		}
	}
	return out
}

func makePlan(g *Graph, cache *store.Cache, opts Options, forced map[int]forcedRun) (*Plan, hcl.Diagnostics) {
	p := &Plan{Pipeline: g.Config.Name, Graph: g, Nodes: make([]*PlannedNode, len(g.Nodes)), Options: opts}
	for _, v := range g.Config.Variables {
		p.sensitive = p.sensitive || v.Sensitive
	}
	var diags hcl.Diagnostics
	var include, targets map[int]bool
	if len(opts.Targets) > 0 {
		var d hcl.Diagnostics
		targets, d = g.resolveAddrs(opts.Targets, "--target")
		diags = append(diags, d...)
		include = g.Ancestors(targets)
	} else if opts.Only {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "--only without --target",
			Detail: "--only runs just the nodes --target names, from what their prerequisites saved: name them with --target."})
	}
	replace, d := g.resolveAddrs(opts.Replace, "--replace")
	diags = append(diags, d...)
	if diags.HasErrors() {
		return nil, diags
	}
	if cache != nil {
		g.SetCacheDir(cache.Dir)
		p.stat = cache.Stat
	}
	// The plan looks at the workspace at one moment: paths are checked
	// against folder listings.
	g.setPathSnapshot(true)
	defer g.setPathSnapshot(false)
	inst := func(u *Node) cty.Value { return p.instance(u) }
	upstream := func(u *Node) (string, bool) { return p.upstreamDigest(u) }
	var written *outputIndex
	if g.pipelineReadsInputs() {
		written = &outputIndex{}
	}
	// In a plan with everything cached, each node's key is the one its
	// address had last: decode those records while the nodes evaluate.
	ranBefore := p.readHeld(cache, include)
	// A node reading its upstreams' instances goes ahead too when none of
	// them ran before: they are most likely unknown to it when its turn
	// comes (planNode checks, and evaluates it again when one is not).
	guess := func(n *Node) bool {
		if !guessAhead {
			return false
		}
		for _, d := range n.Deps {
			if ranBefore[d] {
				return false
			}
		}
		return n.eachFrom == nil || !ranBefore[n.eachFrom.ID]
	}
	// A node with a keyed upstream that did not run before most likely
	// waits for that upstream's output (a service's digest is known
	// without running): its key is unknown, and its base is built only
	// if it turns out not to wait (planNode).
	waits := func(n *Node) bool {
		if !guessAhead {
			return false
		}
		for _, d := range n.Deps {
			u := g.Nodes[d]
			if _, svc := u.Kind.(stages.Service); !ranBefore[d] && !svc && n.KeyedDep(d) {
				return true
			}
		}
		return false
	}
	ahead := g.evalAhead(func(n *Node) bool { return include == nil || include[n.ID] }, guess, waits, lookDigests{g.look, cache.Stat})
	debug := g.SingleVariantTargets(opts.Targets)
	planned := make([]PlannedNode, len(g.Nodes)) // every node's, in one allocation
	for _, n := range g.Nodes {
		pn := &planned[n.ID]
		*pn = PlannedNode{Node: n, Action: ActRun}
		p.Nodes[n.ID] = pn
		if include != nil && !include[n.ID] {
			pn.Skipped = true
			p.Excluded++
			continue
		}
		var force *forcedRun
		if f, ok := forced[n.ID]; ok {
			force = &f
		}
		d := p.planNode(pn, ahead[n.ID], inst, upstream, written, cache, replace[n.ID], debug[n.Addr], force)
		diags = append(diags, d...)
		p.noteKindRefusal(pn, replace[n.ID])
		if p.sensitive && pn.Spec != nil {
			// A reason may name a path or value made of a sensitive
			// variable ("input s3cr3t.in does not exist yet").
			secrets := SensitiveStrings(pn.Spec.Args)
			for i, r := range pn.Reasons {
				pn.Reasons[i] = process.RedactSecrets(r, secrets)
			}
		}
		if written != nil {
			written.add(pn)
		}
		switch pn.Action {
		case ActRun:
			p.ToRun++
		case ActMayRun:
			p.MayRun++
		case ActCached:
			p.Cached++
		case ActSkip:
			p.Skip++
		}
	}
	p.noteSameWork()
	if cache != nil {
		p.markIdleServices(g.Root, cache.Dir)
	}
	if opts.Only && targets != nil && !diags.HasErrors() {
		diags = append(diags, p.onlyRefusals(targets)...)
	}
	if !diags.HasErrors() {
		byID := make([]*stages.Node, len(g.Nodes))
		for _, pn := range p.Nodes {
			byID[pn.Node.ID] = pn.Spec
		}
		diags = append(diags, g.stageChecks(byID)...)
		diags = append(diags, g.writeClashes(byID, plannedIDs(include, len(g.Nodes)))...)
		diags = append(diags, g.servedModelChecks(byID)...)
	} else if !opts.Only {
		// A node that failed to evaluate has no spec here, and its
		// stage's checks need every instance: validate's check, which
		// evaluates them all, reports what is left, so that plan and
		// apply refuse with every error validate gives. (--only's
		// refusals are not errors of the pipeline.)
		diags = append(diags, g.CheckStages()...)
	}
	return p, uniqueDiags(diags)
}

// readHeld reads the key the workspace holds of each node planned (those
// include holds; nil: all) into p.held, has the cache decode their
// records while the nodes evaluate, and says which nodes ran before.
func (p *Plan) readHeld(cache *store.Cache, include map[int]bool) (ranBefore []bool) {
	g := p.Graph
	ranBefore = make([]bool, len(g.Nodes))
	addrs := make([]string, len(g.Nodes))
	for _, n := range g.Nodes {
		if include == nil || include[n.ID] {
			addrs[n.ID] = n.Addr
		}
	}
	p.held = cache.HeldKeys(g.Config.Name, addrs)
	var last []string
	for id, k := range p.held {
		switch {
		case addrs[id] == "": // not planned
			p.held[id] = ""
		case k != "":
			last = append(last, k)
			ranBefore[id] = true
		}
	}
	cache.Prefetch(last)
	return ranBefore
}

// onlyRefusals refuses a plan made with --only whose targets need a node
// that is not cached: --only never runs a missing prerequisite.
func (p *Plan) onlyRefusals(targets map[int]bool) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, pn := range p.Nodes {
		if pn.Skipped || targets[pn.Node.ID] || pn.Action == ActCached || pn.Action == ActNotStarted {
			continue
		}
		if _, svc := pn.Node.Kind.(stages.Service); svc {
			continue // a model server starts for the targets that need it
		}
		// No record: it has not run, or no run of it succeeded (a failure
		// leaves none).
		why := "is not in the cache (it has not run, or it failed)"
		if len(pn.Reasons) > 0 && !(len(pn.Reasons) == 1 && pn.Reasons[0] == "new") {
			why = "would run (" + strings.Join(pn.Reasons, "; ") + ")"
		}
		var writes []string
		if sn := pn.Spec; sn != nil {
			if sn.Common.Result != "" {
				writes = append(writes, sn.Common.Result)
			}
			writes = append(writes, sn.Common.Outputs...)
			if d, ok := pn.Node.Kind.(stages.OutputDeclarer); ok {
				for _, o := range d.DeclaredOutputs(sn) {
					writes = append(writes, o.Path)
				}
			}
		}
		what := ""
		if len(writes) > 0 {
			what = " (it writes " + strings.Join(writes, ", ") + ")"
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing prerequisite",
			Detail: fmt.Sprintf("--only runs just the targets, and they need %s%s, which %s: nothing was run. Run it first (apply without --only, or --target %s), or leave out --only to run whatever is missing.",
				pn.Node.Addr, what, why, pn.Node.Addr)})
	}
	return diags
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

// planNode decides what apply will do with one node, as apply will: a
// node whose upstream fails is skipped (or, with on_upstream_failure =
// "run", sees it failed); its inputs are digested as they will be once its
// ancestors are restored; a key that waits for an upstream's output makes
// it "may run".
func (p *Plan) planNode(pn *PlannedNode, ahead evalResult, inst instanceFunc, upstream func(*Node) (string, bool), written *outputIndex, cache *store.Cache, replace, debug bool, force *forcedRun) hcl.Diagnostics {
	g, n := p.Graph, pn.Node
	if ahead.guess && !p.upstreamsUnknown(n) {
		ahead = evalResult{}
	}
	if up, how := p.failedUpstream(n); up != nil && n.Stage.OnUpstreamFailure != "run" {
		pn.Action = ActSkip
		pn.Reasons = []string{fmt.Sprintf("upstream %s %s", up.Addr, how)}
		return ahead.diagsOfSkipped()
	} else if _, cmp := n.Kind.(stages.Comparer); cmp && up != nil && p.noUpstreamOK(n) {
		pn.Action = ActSkip
		pn.Reasons = []string{fmt.Sprintf("nothing to compare: no upstream finished (%s %s)", up.Addr, how)}
		return ahead.diagsOfSkipped()
	}
	sn, diags := ahead.sn, ahead.diags
	if !ahead.done {
		sn, diags = g.EvalNode(n, inst)
	}
	if diags.HasErrors() {
		return diags
	}
	pn.Spec = sn
	if msg := g.LateCheck(n, sn); msg != "" {
		// Apply fails it before it starts (prepare): said now, and the
		// nodes planned after it see it failed, as apply's do.
		pn.Reasons = []string{"fails before it starts (class setup): " + msg}
		pn.refusedClass = failclass.Setup
		return diags
	}
	// While an upstream's output is unknown the key is too (envelopeFrom
	// says which upstream before it looks at the rest): the node's
	// arguments, inputs and weights are not digested for it.
	waits := unknownUpstream(g, n, upstream)
	if err := g.SetServiceWeights(n, sn, cache.Stat); err != nil && !waits {
		return append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read the weights", Detail: fmt.Sprintf("%s: %s. Set weights to the folder or file of the model's weights, or to their digest (\"sha256:...\").", n.Addr, err), Subject: sn.Range("weights").Ptr()})
	}
	// An input not there yet leaves the node's key, and its consumers',
	// known after apply (envelopeBase says why).
	if err := g.SetServiceFiles(n, sn, cache.Stat); err != nil && !waits && !errors.Is(err, fs.ErrNotExist) {
		return append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read the server's inputs", Detail: fmt.Sprintf("%s: %s. A serve stage's inputs identify its server to its consumers.", n.Addr, err), Subject: inputsRange(n, sn)})
	}
	base, keyed := ahead.base, ahead.env != nil && !waits
	if !ahead.based && !waits {
		base = g.envelopeBase(n, sn, lookDigests{g.look, cache.Stat})
	}
	var runs *Node
	if written != nil && len(sn.Common.Inputs) > 0 {
		var pending map[string]map[string]fsdigest.Pending
		pending, runs = p.inputWrites(written, n, sn, cache)
		if pending != nil && runs == nil && !waits {
			base, keyed = g.envelopeBase(n, sn, pendingDigester{stat: cache.Stat, pending: pending}), false
		}
	}
	var env *Envelope
	var why *UnknownReason
	var err error
	if keyed {
		env = ahead.env // evalAhead's, of the same base
	} else if env, why, err = g.envelopeFrom(base, n, upstream); err != nil {
		return append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read input", Detail: fmt.Sprintf("%s: %s", n.Addr, err), Subject: inputsRange(n, sn)})
	}
	if env != nil && runs == nil {
		pn.Envelope = env
		if keyed {
			pn.Key = ahead.key // evalAhead's, of the same envelope
		} else {
			pn.Key = env.Key()
		}
		sn.InputDigests = env.Inputs
	}
	if _, svc := n.Kind.(stages.Service); svc && env != nil {
		// Never cached: it runs whenever a consumer needs it
		// (markIdleServices).
		pn.Reasons = []string{"never cached: serves its consumers while they run"}
		return diags
	}
	switch {
	case replace:
		pn.Reasons = []string{"replace requested (--replace)"}
		pn.Replaced = true
		pn.Changed = p.held[n.ID] != "" // ran before: "~", as a rerun
		return diags
	case force != nil && env != nil && runs == nil:
		pn.Action = force.action
		pn.Reasons = []string{force.reason}
		pn.Changed = p.held[n.ID] != "" // a variant of a batch that ran before
		return diags
	case runs != nil:
		why = &UnknownReason{Upstream: runs.Addr}
		fallthrough
	case env == nil:
		pn.Action = ActMayRun
		pn.Reasons = []string{why.String()}
		return diags
	}
	rec, ok := cache.Lookup(pn.Key)
	// A result cached under the key that the node does not take runs
	// it again: "~", as a rerun.
	if ok && rec.Debug && !debug {
		pn.Reasons = []string{"the cached result is a single-variant debug run's: the batch runs it again"}
		pn.Changed = true
		return diags
	}
	if why, known := NotNeededStale(n, sn, rec); ok && why != "" {
		if !known {
			pn.Action = ActMayRun
		}
		pn.Reasons = []string{why}
		pn.Changed = true
		return diags
	}
	if ok {
		if held, differs := OutFolderDiffers(g.Root, n, rec, cache.Stat); differs {
			pn.Reasons = []string{outFolderReason(n, sn, held)}
			return diags
		}
		pn.Action = ActCached
		pn.Record = rec
		if why := RestoreInTheWay(g.Root, g.Config.Name, n.Addr, rec, cache).Refusal(g.Root); why != "" {
			// Something of the user's stands where an output goes.
			pn.Refusal, pn.refusedClass = why, failclass.Result
		}
		msg, unknown := g.postconditionFails(n, rec, inst)
		if msg != "" {
			pn.fails = process.RedactSecrets(msg, SensitiveStrings(sn.Args))
			pn.Reasons = []string{"postcondition fails: " + msg}
		}
		pn.postUnknown = unknown
		if w := p.waitsFor(n); w != "" {
			pn.Reasons = append(pn.Reasons, w)
		}
		return diags
	}
	p.rerunReasons(pn, sn, env, upstream, cache)
	return diags
}

// rerunReasons says why a node whose key is not cached runs: new, or what
// changed since the key its address last ran with here, or that a record
// is gone.
func (p *Plan) rerunReasons(pn *PlannedNode, sn *stages.Node, env *Envelope, upstream func(*Node) (string, bool), cache *store.Cache) {
	n := pn.Node
	prev := p.held[n.ID]
	if prev == "" {
		pn.Reasons = []string{"new"}
		return
	}
	pn.Changed = true
	rec, had := cache.Lookup(prev)
	if had {
		var old Envelope
		if json.Unmarshal(rec.Envelope, &old) == nil {
			own := append(slices.Clip(sn.Common.Outputs), sn.Common.Result)
			pn.Reasons = diffEnvelopes(&old, env, own, p.sensitive && len(SensitiveStrings(map[string]cty.Value{"inputs": sn.Args["inputs"]})) > 0, changeNote(n))
			if !slices.Equal(old.Upstreams, env.Upstreams) {
				pn.Reasons = append(pn.Reasons, p.upstreamReasons(old.Upstreams, env.Upstreams, n, upstream, cache)...)
			}
		}
	}
	switch {
	case len(pn.Reasons) > 0:
	case !had && prev != pn.Key:
		// Another key's record is gone, not this one's: this key may
		// never have been run.
		pn.Reasons = []string{"its key is not the one it last ran with here, whose record is gone (evicted, collected or damaged): what changed cannot be told"}
	default:
		pn.Reasons = []string{"the cached result is gone (evicted, collected or damaged)"}
	}
}

// changeNote is what n's kind adds to the reason of a changed attribute
// (stages.ChangeNoter).
func changeNote(n *Node) func(attr string) string {
	if c, ok := n.Kind.(stages.ChangeNoter); ok {
		return c.ChangeNote
	}
	return func(string) string { return "" }
}

// inputChanged is the reason "input in changed", saying why where in
// holds one of own, the node's own declared outputs: a run that changes
// that output changes the node's input, and the next apply runs it again
// with nothing edited (docs/language.md, Inputs another stage writes).
func inputChanged(in string, own []string) string {
	for _, o := range own {
		if rel, under := relUnder(in, o); under && rel != "" {
			return fmt.Sprintf("input %s changed: it holds the node's own output %s, so a run that changes that output changes the node's input, and the next apply runs it again (where nothing else in %s changed, its last run did); list the files it reads in inputs, or write the output outside %s", in, o, in, in)
		}
	}
	return fmt.Sprintf("input %s changed", in)
}

// refusedWhy is why apply is sure to fail pn without running it (its
// refusedClass): its refusal, or the reason plan gives.
func (pn *PlannedNode) refusedWhy() string {
	if pn.Refusal != "" || len(pn.Reasons) == 0 {
		return pn.Refusal
	}
	return pn.Reasons[0]
}

// noteKindRefusal marks a node that is to run (or may run) whose kind
// finds in the workspace that it will refuse to run (stages.PlanRefuser:
// an optimizer job's interrupted out folder, a job's out folder without
// its seal, a decision slot its ledger holds under another key; asked
// with the key planned, "" while it is known only after apply). Apply
// fails it (class setup), and the nodes planned after it see it failed,
// as apply's do: skipped, unless they run on upstream failure. (One that
// may run escapes only if its key, known after apply, turns out cached:
// docs/language.md, "Plan".)
func (p *Plan) noteKindRefusal(pn *PlannedNode, replaced bool) {
	r, ok := pn.Node.Kind.(stages.PlanRefuser)
	if !ok || pn.Spec == nil || pn.Action != ActRun && pn.Action != ActMayRun {
		return
	}
	if why := r.PlanRefusal(pn.Spec, p.Graph.Root, pn.Key, replaced); why != "" {
		pn.Refusal, pn.refusedClass = why, failclass.Setup
	}
}

// unknownUpstream reports whether the output digest of an upstream that
// keys n is known only after apply.
func unknownUpstream(g *Graph, n *Node, upstream func(*Node) (string, bool)) bool {
	for _, id := range n.Deps {
		if n.KeyedDep(id) {
			if _, ok := upstream(g.Nodes[id]); !ok {
				return true
			}
		}
	}
	return false
}

// failedUpstream is the first dependency of n that apply will find failed
// or skipped, and which; nil when none is known to fail.
func (p *Plan) failedUpstream(n *Node) (*Node, Status) {
	for _, d := range n.Deps {
		switch u := p.Nodes[d]; {
		case u.Skipped:
		case u.fails != "" || u.refusedClass != "":
			return u.Node, Failed
		case u.Action == ActSkip:
			return u.Node, Skipped
		}
	}
	return nil, ""
}

// noUpstreamOK reports whether every upstream of n is known to fail or be
// skipped (apply then skips a node that compares them).
func (p *Plan) noUpstreamOK(n *Node) bool {
	for _, d := range n.Deps {
		if u := p.Nodes[d]; !u.Skipped && u.fails == "" && u.refusedClass == "" && u.Action != ActSkip {
			return false
		}
	}
	return true
}

// guessAhead lets makePlan evaluate ahead the nodes reading stage
// objects whose upstreams did not run before, and leave out of that
// evaluation the key bases of nodes whose keyed upstreams did not run
// before (off in tests only, to compare with the plan made in turn).
var guessAhead = true

// diagsOfSkipped are the diagnostics a node skipped for its upstreams
// reports: those of its evaluation ahead, when it read no stage object
// (one reading them is not evaluated once it is skipped).
func (r evalResult) diagsOfSkipped() hcl.Diagnostics {
	if r.guess {
		return nil
	}
	return r.diags
}

// upstreamsUnknown reports whether every upstream instance n reads is
// unknown to it (p.instance gives UnknownInstance): n then evaluates as
// evalAhead evaluated it.
func (p *Plan) upstreamsUnknown(n *Node) bool {
	for _, d := range n.Deps {
		if !p.instanceUnknown(p.Graph.Nodes[d]) {
			return false
		}
	}
	return n.eachFrom == nil || p.instanceUnknown(n.eachFrom)
}

// instanceUnknown reports whether instance gives u's UnknownInstance.
func (p *Plan) instanceUnknown(u *Node) bool {
	pn := p.Nodes[u.ID]
	return pn == nil || !(pn.Action == ActSkip || pn.refusedClass != "" || pn.Action == ActCached && pn.Record != nil && !pn.postUnknown)
}

// instance is the instance object apply will give an upstream: its
// record's when cached (failed when its postcondition fails), skipped
// when skipped, failed when apply refuses it, unknown when it runs.
func (p *Plan) instance(u *Node) cty.Value {
	pn := p.Nodes[u.ID]
	switch {
	case p.instanceUnknown(u):
	case pn.refusedClass != "":
		return InstanceObject(u, nil, Failed, pn.refusedClass, pn.refusedWhy(), pn.Key)
	case pn.Action == ActSkip:
		return InstanceObject(u, nil, Skipped, FailUpstream, pn.Reasons[0], "")
	case pn.Action == ActCached && pn.Record != nil:
		if pn.fails != "" {
			return InstanceObject(u, pn.Record, Failed, failclass.Postcondition, pn.fails, pn.Record.Key)
		}
		return recordInstance(u, pn.Record)
	}
	return UnknownInstance(u)
}

// upstreamDigest is an upstream's output digest as apply will see it; false
// when it is known only after the upstream runs.
func (p *Plan) upstreamDigest(u *Node) (string, bool) {
	pn := p.Nodes[u.ID]
	switch {
	case pn == nil:
	case pn.refusedClass != "":
		return FailedOutputDigest(Failed, pn.refusedClass), true
	case pn.Action == ActSkip:
		return FailedOutputDigest(Skipped, FailUpstream), true
	case pn.Action == ActRun || pn.Action == ActNotStarted:
		// A service's identity is its consumers' upstream digest: made
		// once, however many consumers it has.
		if !pn.svcDone {
			pn.svcDigest, pn.svcOK = serviceDigest(u, pn.Spec)
			pn.svcDone = true
		}
		if pn.svcOK {
			return pn.svcDigest, true
		}
	case pn.Action == ActCached && pn.Record != nil && !pn.postUnknown:
		if pn.fails != "" {
			return FailedOutputDigest(Failed, failclass.Postcondition), true
		}
		return pn.Record.OutputDigest, true
	}
	return "", false
}

// postconditionFails evaluates a cached node's postconditions on its
// record, so plan can say that apply will refuse it; "" when they hold or
// cannot be evaluated yet (they read an upstream that is to run: unknown
// is then set). One that cannot be evaluated at all (an attribute the
// result lacks) or is not true or false fails, as it fails at apply.
func (g *Graph) postconditionFails(n *Node, rec *store.Record, inst instanceFunc) (msg string, unknown bool) {
	self := func() cty.Value { return recordInstance(n, rec) }
	if msg, unknown := g.EvalPostconditions(n, self, inst); !unknown {
		return msg, false
	}
	return "", true
}

// EvalPostconditions evaluates n's postconditions with self bound to its
// instance object (built only when there are postconditions). It returns
// "" when all hold, else what failed: the first false condition's
// error_message, or why a condition could not be evaluated to true or
// false (an error, a value of another type or null: the condition's file,
// line and column named). unknown is set, with such a message, when a
// condition is unknown: it reads a value not known yet (at plan, an
// upstream that is to run).
func (g *Graph) EvalPostconditions(n *Node, self func() cty.Value, inst instanceFunc) (msg string, unknown bool) {
	if len(n.Stage.Postconditions) == 0 {
		return "", false
	}
	ctx := g.evalContext(n, inst)
	ctx.Variables["self"] = self()
	for _, chk := range n.Stage.Postconditions {
		v, diags := chk.Condition.Value(ctx)
		if diags.HasErrors() {
			return "the postcondition could not be evaluated: " + DiagsLine(diags), false
		}
		v, _ = v.Unmark()
		at := dsl.Pos(chk.Condition.Range())
		switch {
		case !v.IsKnown():
			return fmt.Sprintf("%s: the postcondition could not be evaluated: it reads values not known", at), true
		case v.IsNull():
			return fmt.Sprintf("%s: the postcondition is null, not true or false", at), false
		case !v.Type().Equals(cty.Bool):
			return fmt.Sprintf("%s: the postcondition is %s, not true or false", at, withArticle(v.Type().FriendlyName())), false
		}
		if v.False() {
			return dsl.CheckMessage(chk, ctx), false
		}
	}
	return "", false
}

// withArticle puts "a" or "an" before a type's name: "a number".
func withArticle(name string) string {
	if name != "" && strings.ContainsRune("aeiou", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

// recordInstance is the instance object of a cached or finished node.
func recordInstance(n *Node, r *store.Record) cty.Value {
	return InstanceObject(n, r, OK, "", "", r.Key)
}

// InstanceObject is the instance object of a node that ended with status,
// class and message; r is its record (nil when it has none). A failed
// node's result is null, also where its record holds one (a result its
// postcondition refused): downstream nodes that run on upstream failure
// see no figure of it.
func InstanceObject(n *Node, r *store.Record, status Status, class, message, key string) cty.Value {
	res := cty.NullVal(cty.DynamicPseudoType)
	exit := cty.NullVal(cty.Number)
	dur := cty.NumberFloatVal(0)
	rss, gpuMiB := cty.NumberFloatVal(0), cty.NumberFloatVal(0)
	launch := cty.NullVal(cty.DynamicPseudoType)
	if r != nil {
		if v, err := jsonToCty(r.Result); err == nil && status != Failed {
			res = v
		}
		exit = cty.NumberIntVal(int64(r.ExitCode))
		dur = cty.NumberFloatVal(r.Ended.Sub(r.Started).Seconds())
		rss, gpuMiB = cty.NumberFloatVal(r.PeakRSSMiB), cty.NumberFloatVal(r.PeakGPUMiB)
		launch = LaunchValue(r.RunID, r.Started, r.Launch)
	}
	return NodeInstance(n, res, exit, dur, rss, gpuMiB, launch, status, class, message, key)
}

// NodeInstance assembles an instance object.
func NodeInstance(n *Node, res, exit, dur, rss, gpuMiB, launch cty.Value, status Status, class, message, key string) cty.Value {
	val := cty.NullVal(cty.DynamicPseudoType)
	if n.Inst.Value != cty.NilVal {
		val = n.Inst.Value
	}
	return cty.ObjectVal(map[string]cty.Value{
		"key": cty.StringVal(n.Inst.Key), "value": val, "result": res, "endpoints": serviceEndpoints(n, res),
		"status": cty.StringVal(string(status)), "class": cty.StringVal(class),
		"message": cty.StringVal(message), "exit_code": exit, "duration_s": dur,
		"peak_rss_mib": rss, "peak_gpu_mib": gpuMiB, "key_digest": cty.StringVal(key),
		"launch": launch,
	})
}

// LaunchValue is the launch instance attribute: for a variant of a batch,
// which launch ran it (the run, when it and its batch started, its GPU,
// how many of the batch ran with it and whether the batch was partial);
// null for other nodes.
func LaunchValue(runID string, started time.Time, l *store.Launch) cty.Value {
	if l == nil {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	utc := func(t time.Time) cty.Value { return cty.StringVal(t.UTC().Format(time.RFC3339)) }
	return cty.ObjectVal(map[string]cty.Value{
		"run_id":        cty.StringVal(runID),
		"batch":         cty.StringVal(l.Batch),
		"started":       utc(started),
		"batch_started": utc(l.BatchStarted),
		"gpu":           cty.NumberIntVal(int64(l.GPU)),
		"wave":          cty.NumberIntVal(int64(l.Wave)),
		"in_flight":     cty.NumberIntVal(int64(l.InFlight)),
		"launched":      cty.NumberIntVal(int64(l.Launched)),
		"batch_size":    cty.NumberIntVal(int64(l.BatchSize)),
		"partial":       cty.BoolVal(l.Partial()),
	})
}

// diffEnvelopes explains why a node's key changed, but for its upstreams
// (upstreamReasons). own are the paths it declares in outputs and result.
// hideInputs: the node's input paths are made of sensitive values, this
// run's or an earlier one's: the reasons do not name them.
//
// note gives what to add to the reason of a changed attribute
// (stages.ChangeNoter); "" adds nothing.
func diffEnvelopes(old, cur *Envelope, own []string, hideInputs bool, note func(attr string) string) []string {
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
		var why string
		switch {
		case o == nil:
			s, _ := showChange(c, nil, 60)
			why = fmt.Sprintf("%s added: %s", k, showSensitive(c, s))
		case c == nil:
			why = fmt.Sprintf("%s removed", k)
		case string(o) != string(c):
			so, sc := showChange(o, c, 60)
			why = fmt.Sprintf("%s: %s -> %s", k, showSensitive(o, so), showSensitive(c, sc))
		default:
			continue
		}
		if n := note(k); n != "" {
			why += " (" + n + ")"
		}
		out = append(out, why)
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
		if hideInputs {
			k = "(sensitive)"
		}
		switch {
		case o == "":
			out = append(out, fmt.Sprintf("input %s added", k))
		case c == "":
			out = append(out, fmt.Sprintf("input %s removed", k))
		case o != c && hideInputs:
			out = append(out, fmt.Sprintf("input %s changed", k))
		case o != c:
			out = append(out, inputChanged(k, own))
		}
	}
	for _, k := range sortedKeys(unionKeys(old.Seal, cur.Seal)) {
		if o, c := old.Seal[k], cur.Seal[k]; o != c {
			out = append(out, fmt.Sprintf("sealed file %s: sha256 %s -> %s", k, orNone(o), orNone(c)))
		}
	}
	return out
}

func unionKeys(a, b map[string]string) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func orNone(digest string) string {
	if digest == "" {
		return "(not sealed)"
	}
	return digest
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
	width = min(width, WidthMax)
	for _, pn := range p.Nodes {
		if pn.Skipped {
			continue
		}
		sym, what := "+", "run"
		switch {
		case pn.Action == ActCached:
			sym, what = "=", "cached"
		case pn.Action == ActMayRun:
			sym, what = "?", "may run"
		case pn.Action == ActSkip:
			sym, what = "-", "skipped"
		case pn.Action == ActNotStarted:
			sym, what = "=", "not started"
		case pn.Changed:
			sym = "~"
		}
		reasons := pn.Reasons
		if pn.Refusal != "" {
			sym, what, reasons = "!", "refused", []string{pn.Refusal}
		}
		WriteLine(bw, sym, width, pn.Node.Addr, what, reasons)
	}
	WriteFooter(bw, p.Counts(), p.Excluded)
	if p.SameWork > 0 {
		verb := "are"
		if p.SameWork == 1 {
			verb = "is"
		}
		fmt.Fprintf(bw, "%d of the nodes to run %s the same work as another: that work runs once, and they take its result.\n", p.SameWork, verb)
	}
	return bw.Flush()
}

// noteSameWork says, of each node to run whose key an earlier node to run
// has, that it is the same work: an apply runs it once, and the others
// take that result from the cache (docs/keys.md) — a for_each stage whose
// command does not use each, say. Listed as "run" with no word, three
// such nodes read as three runs.
func (p *Plan) noteSameWork() {
	first := map[string]*PlannedNode{}
	for _, pn := range p.Nodes {
		if pn.Skipped || pn.Action != ActRun || pn.Key == "" {
			continue
		}
		f, ok := first[pn.Key]
		if !ok {
			first[pn.Key] = pn
			continue
		}
		p.SameWork++
		pn.Reasons = append(pn.Reasons, fmt.Sprintf("the same work as %s (one key): it runs once, and this node takes its result", f.Node.Addr))
	}
}

// plural is n with the noun for one or for many.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// WidthMax caps the address column of a rendered plan.
const WidthMax = 60

// WriteLine writes one node's line of a rendered plan.
func WriteLine(bw *bufio.Writer, sym string, width int, addr, what string, reasons []string) {
	// "  %s %-*s  %s" written piece by piece: the address padded with
	// spaces to width characters.
	bw.WriteString("  ")
	bw.WriteString(sym)
	bw.WriteByte(' ')
	bw.WriteString(addr)
	for pad := width - utf8.RuneCountInString(addr); pad > 0; pad-- {
		bw.WriteByte(' ')
	}
	bw.WriteString("  ")
	bw.WriteString(what)
	for i, r := range reasons {
		if i == 0 {
			bw.WriteString(": ")
		} else {
			bw.WriteString("; ")
		}
		bw.WriteString(r)
	}
	bw.WriteByte('\n')
}

// Counts are a plan's totals by action.
type Counts struct {
	ToRun, MayRun, Cached, Skip int
	// Refused are the nodes apply would refuse to start (PlannedNode.
	// Refusal), counted here and not as to run or may run.
	Refused int
}

// String reads "N to run, M cached", with "K may run", "R refused" and
// "S skipped" when there are any.
func (c Counts) String() string {
	s := fmt.Sprintf("%d to run, ", c.ToRun)
	if c.MayRun > 0 {
		s += fmt.Sprintf("%d may run, ", c.MayRun)
	}
	if c.Refused > 0 {
		s += fmt.Sprintf("%d refused, ", c.Refused)
	}
	s += fmt.Sprintf("%d cached", c.Cached)
	if c.Skip > 0 {
		s += fmt.Sprintf(", %d skipped", c.Skip)
	}
	return s
}

// Counts are the plan's totals.
func (p *Plan) Counts() Counts {
	c := Counts{ToRun: p.ToRun, MayRun: p.MayRun, Cached: p.Cached, Skip: p.Skip}
	for _, pn := range p.Nodes {
		if pn.Refusal == "" || pn.Skipped {
			continue
		}
		switch pn.Action {
		case ActRun:
			c.ToRun--
			c.Refused++
		case ActMayRun:
			c.MayRun--
			c.Refused++
		case ActCached:
			c.Cached--
			c.Refused++
		}
	}
	return c
}

// WriteFooter writes a rendered plan's totals.
func WriteFooter(bw *bufio.Writer, c Counts, excluded int) {
	fmt.Fprintf(bw, "\nPlan: %s.", c)
	if excluded > 0 {
		fmt.Fprintf(bw, " (%s outside --target not shown.)", plural(excluded, "node", "nodes"))
	}
	bw.WriteByte('\n')
}

// JSON is the machine-readable plan (`cairn plan --json`, --out).
type JSON struct {
	Format   int    `json:"format"`
	Pipeline string `json:"pipeline"`
	ToRun    int    `json:"to_run"`
	MayRun   int    `json:"may_run"`
	Cached   int    `json:"cached"`
	Skipped  int    `json:"skipped"`
	// Refused counts the nodes with a refused member, which to_run and
	// may_run do not count.
	Refused int        `json:"refused,omitempty"`
	Nodes   []NodeJSON `json:"nodes"`
}

// NodeJSON is one node of JSON.
type NodeJSON struct {
	Address string   `json:"address"`
	Stage   string   `json:"stage"`
	Kind    string   `json:"kind"`
	Action  string   `json:"action"`
	Changed bool     `json:"changed,omitempty"`
	Key     string   `json:"key,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
	// Refused says why apply would refuse to start the node.
	Refused string   `json:"refused,omitempty"`
	Deps    []string `json:"deps,omitempty"`
}

// JSON returns the machine-readable plan.
func (p *Plan) JSON() *JSON {
	c := p.Counts()
	out := &JSON{Format: 1, Pipeline: p.Pipeline, ToRun: c.ToRun, MayRun: c.MayRun, Cached: c.Cached, Skipped: c.Skip, Refused: c.Refused}
	for _, pn := range p.Nodes {
		if pn.Skipped {
			continue
		}
		j := NodeJSON{
			Address: pn.Node.Addr, Stage: pn.Node.Stage.Name, Kind: pn.Node.Stage.Kind,
			Action: pn.Action, Changed: pn.Changed, Key: pn.Key, Reasons: pn.Reasons, Refused: pn.Refusal,
		}
		for _, d := range pn.Node.Deps {
			j.Deps = append(j.Deps, p.Graph.Nodes[d].Addr)
		}
		out.Nodes = append(out.Nodes, j)
	}
	return out
}

// NotNeededStale says why rec, a cached record of n, does not answer for
// it: rec was made while n was not needed (it did nothing, and its result
// is null; stages.NeedDeclarer), and n is needed now (known) or may be
// once its upstreams run (!known). It is "" when rec answers: a record
// made while n was needed answers whether n is needed or not.
func NotNeededStale(n *Node, sn *stages.Node, rec *store.Record) (why string, known bool) {
	d, ok := n.Kind.(stages.NeedDeclarer)
	if rec == nil || !rec.NotNeeded || !ok {
		return "", true
	}
	switch needed, known := d.Needed(sn); {
	case !known:
		return "its cached result was recorded when it was not needed: it runs if it is needed, which is known once its upstreams run", false
	case needed:
		return "its cached result was recorded when it was not needed (nothing was done then): it runs now that it is needed", true
	}
	return "", true
}

// outFolderReason is why n, whose out folder holds the file held other
// than its cached record's (OutFolderDiffers), runs, and what it does
// with the file, as apply will. A job's artifact is the job's: its node
// takes it as it is, or refuses it. An evaluation's scores file is not
// taken as it is: the evaluation that is needed evaluates its items again
// and writes it anew (the figures made from it never come from a file
// edited by hand); one whose phase is done evaluates nothing and leaves
// it beside the artifacts made from it.
func outFolderReason(n *Node, sn *stages.Node, held string) string {
	why := fmt.Sprintf("its out folder holds %s, and not the cached record's (written by another apply or on another cache, or edited)", held)
	if _, keeps := n.Kind.(stages.OutFolderKeeper); keeps {
		return why + ": the out folder is the truth, and the node takes it as it is"
	}
	if d, ok := n.Kind.(stages.NeedDeclarer); ok {
		if needed, known := d.Needed(sn); known && !needed {
			return why + ": it is not needed (needed = false), so it evaluates nothing and leaves the file as it is"
		}
	}
	return why + ": it evaluates its items again (those in the item store are taken from it) and writes the file anew"
}

// OutFolderDiffers reports the first output of rec, a cached record of
// n, that n's out folder holds with other content, when n's kind keeps
// its out folder (stages.OutFolderKeeper), or writes into a job's out
// folder (stages.OutFolderWriter: its outputs there): the record must not
// be restored over it. A file the folder lacks does not count (restoring
// it writes the record's).
func OutFolderDiffers(root string, n *Node, rec *store.Record, stat *fsdigest.Cache) (string, bool) {
	_, keeps := n.Kind.(stages.OutFolderKeeper)
	_, writes := n.Kind.(stages.OutFolderWriter)
	if !keeps && !writes {
		return "", false
	}
	paths := make([]string, 0, len(rec.Outputs))
	for p := range rec.Outputs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if !keeps && !stages.InJobOutFolder(root, p) {
			continue
		}
		if present, same := OutputState(root, p, rec.Outputs[p], stat); present && !same {
			return p, true
		}
	}
	return "", false
}

// OutputState says whether the workspace (root) holds something at the
// output p, and whether that is a regular file whose content has the
// digest want (read through the stat cache): what a record's restore
// leaves alone.
func OutputState(root, p, want string, stat *fsdigest.Cache) (present, same bool) {
	full := filepath.Join(root, p)
	fi, err := os.Lstat(full)
	if err != nil {
		return false, false
	}
	if !fi.Mode().IsRegular() {
		return true, false
	}
	got, err := stat.File(full)
	return true, err == nil && got == want
}

// inputsRange is where a node's files that cannot be read are named, for
// a diagnostic: its inputs, else another attribute that names files its
// kind digests (items, worker, bundle, weights), else its stage block.
func inputsRange(n *Node, sn *stages.Node) *hcl.Range {
	for _, attr := range []string{"inputs", "items", "worker", "bundle", "weights"} {
		if r, ok := sn.LookupRange(attr); ok {
			return r.Ptr()
		}
	}
	return n.Stage.DeclRange.Ptr()
}
