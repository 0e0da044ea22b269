package plan

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/dsl/par"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/stages"
)

// instanceFunc returns the instance object of an upstream node: its result
// when known, unknown values otherwise.
type instanceFunc func(n *Node) cty.Value

// selfInAttrs is self as a stage's attributes see it: self.model_cache.url
// only, a stand-in the command kind replaces with its model cache's URL
// when the process starts (docs/model-cache.md).
var selfInAttrs = cty.ObjectVal(map[string]cty.Value{
	"model_cache": cty.ObjectVal(map[string]cty.Value{"url": cty.StringVal(stages.ModelCacheURL)}),
})

// evalContext builds the context a node's expressions see: var, local,
// path, each, and stage objects holding the node's upstream instances.
func (g *Graph) evalContext(n *Node, inst instanceFunc) *hcl.EvalContext {
	return g.nodeContext(n, inst, true)
}

// nodeContext is evalContext, with the stage objects only when withStage
// is set: a node whose expressions never mention stage does not pay for
// building its upstreams' instance objects.
func (g *Graph) nodeContext(n *Node, inst instanceFunc, withStage bool) *hcl.EvalContext {
	extra := make(map[string]cty.Value, 4) // and the iteration budget
	extra["self"] = selfInAttrs
	if n.Inst.Keyed {
		each := n.each
		if each == cty.NilVal {
			each = dsl.EachValue(n.Inst)
		}
		if n.eachFrom != nil {
			each = cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(n.Inst.Key), "value": inst(n.eachFrom)})
		}
		extra["each"] = each
	}
	var empty []string
	if withStage {
		empty = emptyStages(g, n)
	}
	if withStage && (len(n.Deps) > 0 || len(empty) > 0) {
		// The maps the stage objects are made of are lent (cty.ObjectVal
		// keeps none of them) and given back once the objects are made.
		// A stage's instances, in a map only from its second: most
		// nodes read one instance of each stage (stage.job[each.key]).
		type instances struct {
			stage string
			first *Node
			m     map[string]cty.Value
		}
		var byStage []instances
		single := lendValues()
		defer giveValues(single)
		var waiting []string // stages whose instances wait for values
		for _, id := range n.Deps {
			u := g.Nodes[id]
			if u.waiting {
				waiting = append(waiting, u.Stage.Name)
				continue
			}
			if !u.Inst.Keyed {
				single[u.Stage.Name] = inst(u)
				continue
			}
			i := slices.IndexFunc(byStage, func(s instances) bool { return s.stage == u.Stage.Name })
			if i < 0 {
				byStage = append(byStage, instances{stage: u.Stage.Name, first: u})
				continue
			}
			m := byStage[i].m
			if m == nil {
				m = lendValues()
				defer giveValues(m)
				m[byStage[i].first.Inst.Key] = inst(byStage[i].first)
				byStage[i].m = m
			}
			m[u.Inst.Key] = inst(u)
		}
		objs := lendValues()
		defer giveValues(objs)
		for s, v := range single {
			objs[s] = v
		}
		unknown := isUnknownInstance(inst)
		for _, s := range byStage {
			switch {
			case s.m != nil:
				objs[s.stage] = cty.ObjectVal(s.m)
			case unknown:
				objs[s.stage] = unknownOne(s.first)
			default:
				m := lendValues()
				m[s.first.Inst.Key] = inst(s.first)
				objs[s.stage] = cty.ObjectVal(m)
				giveValues(m)
			}
		}
		for _, s := range waiting {
			objs[s] = cty.DynamicVal
		}
		for _, s := range empty {
			objs[s] = cty.EmptyObjectVal // a for_each of nothing: no instance
		}
		extra["stage"] = cty.ObjectVal(objs)
	}
	return g.Scope.ContextOf(extra)
}

// emptyStages lists the stages n's stage refers to that have no node: a
// for_each over an empty collection, whose stage.NAME is an object of no
// instances (length 0), as it is with one.
func emptyStages(g *Graph, n *Node) []string {
	var out []string
	for _, s := range g.StageDeps[n.Stage.Name] {
		if len(g.StageNodes[s]) == 0 && !g.broken[s] {
			out = append(out, s)
		}
	}
	return out
}

// values are the maps a stage object or an instance object is made from,
// given back for lending again: cty.ObjectVal copies what they hold, and
// the maps were most of what a grid's nodes allocate for their contexts.
var values = freeList[map[string]cty.Value]{make: func() map[string]cty.Value { return map[string]cty.Value{} }}

// maxLentValues is the most entries a lent map may have had to be lent
// again: clearing a map costs as much as its room.
const maxLentValues = 64

// lendValues lends an empty map; giveValues gives it back, emptied.
func lendValues() map[string]cty.Value { return values.get() }

func giveValues(m map[string]cty.Value) {
	if len(m) > maxLentValues {
		return
	}
	clear(m)
	values.put(m)
}

// stageRefs are the references of n's stage; nil when it has none.
func (g *Graph) stageRefs(n *Node) *stageRefs {
	if n.refs != nil {
		return n.refs
	}
	return g.refs[n.Stage.Name]
}

// EvalsStage reports whether a node's attributes or kind blocks read
// stage objects (upstream instances and results).
func (g *Graph) EvalsStage(n *Node) bool {
	if r := g.stageRefs(n); r != nil {
		return r.evalStage
	}
	return true
}

// evalResult is one node's evaluation, done ahead of a pass over the graph.
type evalResult struct {
	sn    *stages.Node
	diags hcl.Diagnostics
	done  bool
	// base is the node's key NodeEnvelope without its upstreams, when the
	// caller asked for it (and the evaluation had no error).
	base  envBase
	based bool
	// env and key are the node's envelope and key, made with its base
	// when the node has no upstream that enters its key and nothing can
	// change the base before its turn (no input another node may write):
	// the roots of a grid are keyed on every core, not one after another.
	env *Envelope
	key string
	// guess marks a node that reads stage objects, evaluated with its
	// upstreams' instances unknown (UnknownInstance): it holds only if
	// they are unknown to it when its turn comes.
	guess bool
}

// evalAhead evaluates, on every core, the nodes for which want is true and
// whose expressions read no stage object: their evaluation depends on
// nothing another node decides, so it can run in any order. A node that
// reads stage objects is evaluated too when guess says so, its upstreams'
// instances unknown (the result is marked guess). The others are left for
// the caller (done is false). With dg, the NodeEnvelope of each node
// evaluated without error, and not guessed, is built too, all but its
// upstreams, unless waits says that an upstream's output will most likely
// be unknown to it (its key then is too, and no base is needed).
func (g *Graph) evalAhead(want, guess, waits func(*Node) bool, dg digester) []evalResult {
	out := make([]evalResult, len(g.Nodes))
	defer func() {
		for _, n := range g.Nodes {
			n.ahead = nil // what no evaluation took
		}
	}()
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 || len(g.Nodes) < 64 {
		return out
	}
	// Shared state the workers read is built before they start; the path
	// checker locks its own.
	g.Scope.Context(nil)
	g.PathCheck()
	readsInputs := g.pipelineReadsInputs()
	par.Chunks(len(g.Nodes), 32, 64, func(i int) {
		n := g.Nodes[i]
		if !want(n) {
			return
		}
		stage := g.EvalsStage(n)
		if stage && (guess == nil || !guess(n)) {
			return
		}
		taken := n.ahead
		n.ahead = nil
		sn, d := g.evalNodeTaking(n, UnknownInstance, taken)
		r := evalResult{sn: sn, diags: d, done: true, guess: stage}
		if dg != nil && !stage && !d.HasErrors() && (waits == nil || !waits(n)) {
			r.base, r.based = g.envelopeBase(n, sn, dg), true
			if r.base.e != nil && !n.keyedDeps() && !(readsInputs && len(sn.Common.Inputs) > 0) {
				r.env, _, _ = g.envelopeFrom(r.base, n, nil)
				r.key = r.env.Key()
			}
		}
		out[n.ID] = r
	})
	return out
}

// EvalNode evaluates a node's attributes and decodes the generic ones.
// Values that depend on upstream results not yet known stay unknown.
func (g *Graph) EvalNode(n *Node, inst instanceFunc) (*stages.Node, hcl.Diagnostics) {
	return g.evalNodeTaking(n, inst, nil)
}

// evalNodeTaking is EvalNode taking what linking evaluated of n with its
// upstreams unknown (ahead, nil for nothing; inst is then
// UnknownInstance).
func (g *Graph) evalNodeTaking(n *Node, inst instanceFunc, ahead *aheadEval) (*stages.Node, hcl.Diagnostics) {
	sn, diags := g.evalNode(n, inst, ahead)
	if n.Inst.Keyed && diags.HasErrors() {
		g.withInstance(n, inst, diags)
	}
	return sn, diags
}

// aheadEval is what linking paths evaluated of a node with its upstreams
// unknown (UnknownInstance), for the node's evaluation so: the path
// attributes' values that had nothing to say, and the context, where it
// is the one that evaluation makes (ctx; nil where linking made one
// without the stage objects its path attributes do not read). Seed 002's
// grid: each node's context and 2 to 5 of its attributes made once, not
// twice.
type aheadEval struct {
	ctx   *hcl.EvalContext
	names []string
	vals  []cty.Value
}

func (a *aheadEval) keep(name string, v cty.Value) {
	a.names = append(a.names, name)
	a.vals = append(a.vals, v)
}

// value is the value kept of the attribute name.
func (a *aheadEval) value(name string) (cty.Value, bool) {
	if a != nil {
		for i, n := range a.names {
			if n == name {
				return a.vals[i], true
			}
		}
	}
	return cty.NilVal, false
}

// source is stages.Node.Source for a node of st.
func (g *Graph) source(st *dsl.Stage) *stages.Source {
	s := &stages.Source{Attrs: st.Attrs}
	if g.Config != nil {
		s.Files = g.Config.Files
	}
	return s
}

// withInstance gives each error of an instance that points into one of
// its stage's attributes that attribute's expression and the instance's
// context, so that the message shows the values it was evaluated with
// ("each.value is "abc""): the instances of a stage share their
// attributes' positions, and would otherwise read alike.
func (g *Graph) withInstance(n *Node, inst instanceFunc, diags hcl.Diagnostics) {
	var ctx *hcl.EvalContext
	for _, d := range diags {
		if d.Severity != hcl.DiagError || d.Subject == nil || d.Expression != nil {
			continue
		}
		for _, a := range n.Stage.Attrs {
			r := a.Expr.Range()
			if r.Filename != d.Subject.Filename || !r.ContainsOffset(d.Subject.Start.Byte) {
				continue
			}
			if ctx == nil {
				ctx = g.nodeContext(n, inst, g.EvalsStage(n))
			}
			d.Expression, d.EvalContext = a.Expr, ctx
			break
		}
	}
}

func (g *Graph) evalNode(n *Node, inst instanceFunc, ahead *aheadEval) (*stages.Node, hcl.Diagnostics) {
	r := g.stageRefs(n)
	// A node whose attributes are all constant, and that has no kind
	// blocks, needs no evaluation context: none is made unless an
	// attribute's evaluation has something to say (its diagnostics carry
	// the context).
	var ctx *hcl.EvalContext
	if ahead != nil {
		ctx = ahead.ctx
	}
	context := func() *hcl.EvalContext {
		if ctx == nil {
			ctx = g.nodeContext(n, inst, g.EvalsStage(n))
		}
		return ctx
	}
	if r == nil || !r.constant || len(n.Stage.KindBlocks) > 0 || !constantsAlone {
		context()
	}
	sn := &stages.Node{
		Address: n.Addr, Stage: n.Stage.Name, EachKey: n.Inst.Key,
		Args:   make(map[string]cty.Value, len(n.Stage.Attrs)),
		Source: g.source(n.Stage),
		Blocks: n.Stage.KindBlocks,
		Stat:   g.stat,
		Look:   g.look,
	}
	var diags hcl.Diagnostics
	var bad bool // some attribute holds a reference reported as wrong
	if r != nil {
		bad = len(r.bad) > 0
	}
	shared := r != nil && !bad
	if shared {
		// Every attribute is evaluated, and the node is returned only
		// when none failed: its attributes locate themselves, the
		// stage's map shared by its instances (read only).
		sn.Attributes = n.Stage.Attrs
	} else {
		sn.Ranges = make(map[string]hcl.Range, len(n.Stage.Attrs))
	}
	for name, a := range n.Stage.Attrs {
		if bad && g.badAttr(n.Stage, a) {
			continue
		}
		v, kept := ahead.value(name)
		var d hcl.Diagnostics
		if !kept {
			v, d = attrValue(r, name, a, ctx, context)
		}
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		sn.Args[name] = v
		if !shared {
			sn.Ranges[name] = a.Expr.Range()
		}
	}
	sn.EvalContext = ctx
	if diags.HasErrors() {
		return nil, dsl.TidyDiagnostics(diags)
	}
	diags = append(diags, g.decodeCommon(sn)...)
	if es, ok := n.Kind.(stages.ElsewhereServer); ok && es.ServesElsewhere(sn) {
		sn.Common.GPUs = 0 // it starts nothing (servers run elsewhere)
	}
	if n.Kind != nil && hasRequired(g.required[n.Stage.Kind], sn) {
		diags = append(diags, n.Kind.Check(sn)...)
	}
	if !diags.HasErrors() {
		diags = append(diags, argSizeCheck(sn, g.room)...)
	}
	if !diags.HasErrors() {
		diags = append(diags, g.kindPaths(n, sn)...)
	}
	if !diags.HasErrors() {
		g.argInputs(n, sn)
	}
	return sn, diags
}

// attrValue evaluates a node's attribute name, a: in ctx, or in the
// context context makes where ctx is nil and the attribute needs one. An
// attribute whose value is the same in every instance of the stage (r's
// same) is evaluated once, for the first instance that asks, and every
// other takes that value; where that evaluation had something to say,
// each instance evaluates it as its own, for its own diagnostics. Seed
// 002's grid: 8 of its 15 evaluate attributes (worker, bundle, ...) in
// each of 3,744 nodes.
func attrValue(r *stageRefs, name string, a *hcl.Attribute, ctx *hcl.EvalContext, context func() *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if r != nil && r.same[name] != nil {
		s := r.same[name]
		s.once.Do(func() {
			v, d := dsl.ExprValue(a.Expr, context())
			s.v, s.ok = v, len(d) == 0
		})
		if s.ok {
			return s.v, nil
		}
	}
	if ctx == nil && !dsl.Constant(a.Expr) {
		ctx = context()
	}
	v, d := dsl.ExprValue(a.Expr, ctx)
	if len(d) > 0 && ctx == nil {
		v, d = a.Expr.Value(context())
	}
	return v, d
}

// constantsAlone lets EvalNode evaluate constant attributes without a
// context (off in tests only, to compare with their evaluation in one).
var constantsAlone = true

// itemRange locates the item keyed key of a stage attribute written as an
// object ({ KEY = value, ... }); otherwise it returns the attribute's range.
func (g *Graph) itemRange(sn *stages.Node, attr, key string) hcl.Range {
	if st := g.Config.StageMap[sn.Stage]; st != nil && st.Attrs[attr] != nil {
		if it, ok := dsl.ObjectItem(st.Attrs[attr].Expr, func(k string) bool { return k == key }); ok {
			return hcl.RangeBetween(it.KeyExpr.Range(), it.ValueExpr.Range())
		}
	}
	return sn.Range(attr)
}

// elemRange locates element i of a stage attribute written as a list of n
// elements; otherwise it returns the attribute's range.
func (g *Graph) elemRange(sn *stages.Node, attr string, i, n int) hcl.Range {
	if st := g.Config.StageMap[sn.Stage]; st != nil && st.Attrs[attr] != nil {
		if tc, ok := dsl.TupleConsOf(st.Attrs[attr].Expr); ok && len(tc.Exprs) == n {
			return tc.Exprs[i].Range()
		}
	}
	return sn.Range(attr)
}

// hasRequired reports whether every attribute the kind requires (see
// requiredAttrs) is present. Without one (already reported when the file
// was decoded), the kind's Check is not asked to cope with it.
func hasRequired(required []string, sn *stages.Node) bool {
	for _, name := range required {
		if _, ok := sn.Args[name]; !ok {
			return false
		}
	}
	return true
}

// requiredAttrs are the attributes kind k's schema requires.
func requiredAttrs(k stages.Kind) []string {
	var out []string
	if s := k.Schema(); s != nil {
		for _, a := range s.Attributes {
			if a.Required {
				out = append(out, a.Name)
			}
		}
	}
	return out
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// envNameProblem says what is wrong with an env name, "" when nothing is.
func envNameProblem(name string) string {
	if !envName.MatchString(name) {
		return fmt.Sprintf("%q is not a valid environment variable name.", name)
	}
	switch {
	case gpuEnv(name):
		return fmt.Sprintf("%s is set by cairn itself (GPU pinning); a stage cannot set it. Ask for GPUs with gpus = N.", name)
	case strings.HasPrefix(name, "CAIRN_"):
		return fmt.Sprintf("%s is set by cairn itself (names starting with CAIRN_ carry the node's context); a stage cannot set it. Give the variable another name.", name)
	}
	return ""
}

// gpuEnv names the variables cairn sets to pin a node's GPUs.
func gpuEnv(name string) bool {
	return name == "CUDA_VISIBLE_DEVICES" || name == "CUDA_DEVICE_ORDER"
}

func (g *Graph) decodeCommon(sn *stages.Node) hcl.Diagnostics {
	var diags hcl.Diagnostics
	c := &sn.Common
	bad := func(attr, detail string) {
		diags = append(diags, stages.Diag("Invalid "+attr, detail, sn.Range(attr))...)
	}
	// badAt points at one element or map item of the attribute.
	badAt := func(attr string, r hcl.Range, detail string) {
		diags = append(diags, stages.Diag("Invalid "+attr, detail, r)...)
	}
	known := func(attr string) (cty.Value, bool) {
		v, ok := sn.Args[attr]
		if !ok || !stages.WhollyKnown(v) || v.IsNull() {
			return v, false
		}
		return v, true
	}
	paths := func(attr string) []string {
		v, ok := known(attr)
		if !ok {
			return nil
		}
		list, err := stages.StringList(v)
		if err != nil {
			bad(attr, fmt.Sprintf("%s must be a list of workspace-relative paths: %s.", attr, err))
			return nil
		}
		out := make([]string, 0, len(list))
		for i, p := range list {
			clean, err := g.CheckPath(p)
			if err != nil {
				badAt(attr, g.elemRange(sn, attr, i, len(list)), err.Error()+".")
				continue
			}
			out = append(out, clean)
		}
		return out
	}
	c.Inputs = paths("inputs")
	c.Outputs = paths("outputs")
	if v, ok := known("result"); ok {
		if !v.Type().Equals(cty.String) {
			bad("result", "result is the path of a JSON file the stage writes, a string.")
		} else if v.IsMarked() {
			bad("result", "result must not be sensitive: paths appear in plans and logs.")
		} else if clean, err := g.CheckPath(v.AsString()); err != nil {
			bad("result", err.Error()+".")
		} else {
			c.Result = clean
		}
	}
	if v, ok := sn.Args["env"]; ok && v.IsKnown() && !v.IsNull() && v.Type().IsObjectType() && !stages.WhollyKnown(v) {
		// Names written in the file are checked while values wait
		// (validate without variable values).
		for name := range v.Type().AttributeTypes() {
			if msg := envNameProblem(name); msg != "" {
				badAt("env", g.itemRange(sn, "env", name), msg)
			}
		}
	}
	if v, ok := known("env"); ok {
		ty := v.Type()
		if !(ty.IsMapType() || ty.IsObjectType()) {
			bad("env", "env is a map of environment variable names to string values.")
		} else {
			c.Env = map[string]string{}
			c.SensitiveEnv = map[string]bool{}
			for it := v.ElementIterator(); it.Next(); {
				k, ev := it.Element()
				name := k.AsString()
				if msg := envNameProblem(name); msg != "" {
					badAt("env", g.itemRange(sn, "env", name), msg)
					continue
				}
				if ev.IsMarked() {
					c.SensitiveEnv[name] = true
					ev, _ = ev.UnmarkDeep()
				}
				s, err := convert.Convert(ev, cty.String)
				if err != nil || s.IsNull() {
					badAt("env", g.itemRange(sn, "env", name), fmt.Sprintf("env.%s must be a string.", name))
					continue
				}
				if i := strings.IndexByte(s.AsString(), 0); i >= 0 {
					badAt("env", g.itemRange(sn, "env", name), fmt.Sprintf("env.%s holds a NUL byte (at byte %d): an environment variable cannot hold one, so the program could not start. Remove it.", name, i))
					continue
				}
				c.Env[name] = s.AsString()
			}
		}
	}
	c.CPUs = intAttr(sn, "cpus", 1, &diags)
	c.MemMiB = memoryAttr(sn, "memory", &diags)
	c.GPUs = intAttr(sn, "gpus", 0, &diags)
	c.Concurrency = intAttr(sn, "concurrency", 0, &diags)
	c.Timeout = durationAttr(sn, "timeout", 0, &diags)
	c.KillGrace = durationAttr(sn, "kill_grace", 10*time.Second, &diags)
	if v, ok := known("classify"); ok {
		ty := v.Type()
		if !(ty.IsMapType() || ty.IsObjectType()) {
			bad("classify", "classify maps failure classes to lists of stderr patterns (regular expressions).")
		} else {
			byClass := map[string][]*regexp.Regexp{}
			for it := v.ElementIterator(); it.Next(); {
				k, ev := it.Element()
				cl := k.AsString()
				if !failclass.Valid(cl) {
					d := fmt.Sprintf("%q is not a failure class. The classes are: %s.", cl, strings.Join(failclass.All, ", "))
					if s := dsl.Suggest(cl, failclass.All); s != "" {
						d = fmt.Sprintf("%q is not a failure class. Did you mean %q? The classes are: %s.", cl, s, strings.Join(failclass.All, ", "))
					}
					badAt("classify", g.itemRange(sn, "classify", cl), d)
					continue
				}
				pats, err := stages.StringList(ev)
				if err != nil {
					badAt("classify", g.itemRange(sn, "classify", cl), fmt.Sprintf("classify.%s must be a list of patterns: %s.", cl, err))
					continue
				}
				for _, p := range pats {
					re, err := regexp.Compile(p)
					if err != nil {
						badAt("classify", g.itemRange(sn, "classify", cl), fmt.Sprintf("classify.%s: %q is not a valid regular expression: %s.", cl, p, err))
						continue
					}
					byClass[cl] = append(byClass[cl], re)
				}
			}
			for _, cl := range failclass.All {
				for _, re := range byClass[cl] {
					c.Classify = append(c.Classify, process.ClassPattern{Class: cl, Pattern: re})
				}
			}
		}
	}
	return diags
}

func intAttr(sn *stages.Node, attr string, def int, diags *hcl.Diagnostics) int {
	v, ok := sn.Args[attr]
	if ok && !v.IsKnown() && !stages.TypeFits(v.Type(), cty.Number) {
		// Known later, but of a type that is no number (validate).
		*diags = append(*diags, stages.Diag("Invalid "+attr, fmt.Sprintf("%s must be a whole number, not %s.", attr, v.Type().FriendlyName()), sn.Range(attr))...)
		return def
	}
	if !ok || !v.IsKnown() || v.IsNull() {
		return def
	}
	v, _ = v.Unmark()
	nv, err := convert.Convert(v, cty.Number)
	if err != nil {
		*diags = append(*diags, stages.Diag("Invalid "+attr, fmt.Sprintf("%s must be a whole number.", attr), sn.Range(attr))...)
		return def
	}
	bf := nv.AsBigFloat()
	i, acc := bf.Int64()
	if acc != big.Exact || i < 0 || i > 1<<20 {
		*diags = append(*diags, stages.Diag("Invalid "+attr, fmt.Sprintf("%s must be a whole number from 0 to %d.", attr, 1<<20), sn.Range(attr))...)
		return def
	}
	return int(i)
}

// memoryAttr reads a memory size ("512M", "16G", "1T": binary units, MiB
// and up, as Slurm's --mem takes them) as MiB; 0 when the attribute is
// absent.
func memoryAttr(sn *stages.Node, attr string, diags *hcl.Diagnostics) int {
	v, ok := sn.Args[attr]
	if ok && !v.IsKnown() && !stages.TypeFits(v.Type(), cty.String) {
		*diags = append(*diags, stages.Diag("Invalid "+attr, fmt.Sprintf("%s must be a memory size like \"16G\", not %s.", attr, v.Type().FriendlyName()), sn.Range(attr))...)
		return 0
	}
	if !ok || !v.IsKnown() || v.IsNull() {
		return 0
	}
	v, _ = v.Unmark()
	sv, err := convert.Convert(v, cty.String)
	mib := 0
	if err == nil {
		mib, err = ParseMemory(sv.AsString())
	}
	if err != nil {
		*diags = append(*diags, stages.Diag("Invalid "+attr, fmt.Sprintf("%s: %v.", attr, err), sn.Range(attr))...)
		return 0
	}
	return mib
}

// ParseMemory reads a memory size: a whole number and a unit, M, G or T
// (MiB, GiB, TiB; "MiB", "GiB", "TiB" and "MB", "GB", "TB" mean the same,
// as they do to Slurm), at least 1 MiB and at most 1 PiB, as MiB.
func ParseMemory(s string) (int, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	unit := strings.ToUpper(strings.TrimSpace(t[i:]))
	scale := map[string]int64{"M": 1, "MB": 1, "MIB": 1, "G": 1 << 10, "GB": 1 << 10, "GIB": 1 << 10, "T": 1 << 20, "TB": 1 << 20, "TIB": 1 << 20}[unit]
	if err != nil || scale == 0 {
		return 0, fmt.Errorf("%q is not a memory size: write a whole number and a unit, like \"512M\", \"16G\" or \"1T\"", s)
	}
	if n <= 0 || n > (1<<30)/scale {
		return 0, fmt.Errorf("%q is out of range: at least 1M, at most 1024T", s)
	}
	return int(n * scale), nil
}

// ParseDuration reads "90s", "60m", "1h30m", or a number of seconds.
// One longer than dsl.MaxDuration is refused as too large.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if d, ok, err := dsl.ParseGoDuration(s); ok {
		return d, err
	}
	var secs float64
	if _, err := fmt.Sscanf(s, "%g", &secs); err == nil && (fmt.Sprint(secs) == s || allDigits(s)) {
		if d, ok := dsl.SecondsDuration(secs); ok {
			return d, nil
		}
		return 0, dsl.DurationTooLarge(fmt.Sprintf("%q (seconds)", s))
	}
	return 0, fmt.Errorf("%q is not a duration: write it like \"90s\", \"60m\" or \"1h30m\"", s)
}

// allDigits reports whether s is a non-empty string of decimal digits.
func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

func durationAttr(sn *stages.Node, attr string, def time.Duration, diags *hcl.Diagnostics) time.Duration {
	v, ok := sn.Args[attr]
	if ok && !v.IsKnown() && !stages.TypeFits(v.Type(), cty.String, cty.Number) {
		*diags = append(*diags, stages.Diag("Invalid "+attr, fmt.Sprintf("%s must be a duration string like \"60m\", not %s.", attr, v.Type().FriendlyName()), sn.Range(attr))...)
		return def
	}
	if !ok || !v.IsKnown() || v.IsNull() {
		return def
	}
	v, _ = v.Unmark()
	var d time.Duration
	var err error
	switch v.Type() {
	case cty.Number:
		f, _ := v.AsBigFloat().Float64()
		var ok bool
		if d, ok = dsl.SecondsDuration(f); !ok {
			err = dsl.DurationTooLarge(fmt.Sprintf("%s = %s (seconds)", attr, v.AsBigFloat().Text('g', 6)))
		}
	case cty.String:
		d, err = ParseDuration(v.AsString())
	default:
		err = fmt.Errorf("%s must be a duration string like \"60m\"", attr)
	}
	if err == nil && d < 0 {
		err = fmt.Errorf("%s must not be negative", attr)
	}
	if err == nil && d == 0 && attr == "timeout" {
		err = fmt.Errorf("timeout must be longer than 0s; for no time limit, leave timeout out")
	}
	if err != nil {
		*diags = append(*diags, stages.Diag("Invalid "+attr, err.Error()+".", sn.Range(attr))...)
		return def
	}
	return d
}

// CheckPath validates a workspace-relative path: not absolute, not
// escaping the workspace with "..", not resolving outside it through a
// symlink, not the workspace root itself, and neither holding nor inside
// the cache folder (see SetCacheDir). It returns the cleaned path.
func (g *Graph) CheckPath(p string) (string, error) {
	return g.PathCheck().check(p)
}

// SetCacheDir names the cache folder the graph's nodes will use (the
// default is .cairn in the workspace root): no declared path may hold it
// or lie inside it, or a restore could overwrite the cache's own files.
// Make sets it from its cache.
func (g *Graph) SetCacheDir(dir string) {
	if dir == "" {
		dir = filepath.Join(g.Root, ".cairn")
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if g.paths != nil && g.paths.cacheDir == dir {
		return
	}
	g.cacheDir = dir
	g.paths = nil
}

// PathCheck returns the graph's path checker, making it on first use.
func (g *Graph) PathCheck() *PathChecker {
	g.pathsMu.Lock()
	defer g.pathsMu.Unlock()
	if g.paths == nil {
		if g.cacheDir == "" {
			g.SetCacheDir("")
		}
		g.paths = newPathChecker(g.Root, g.cacheDir)
	}
	return g.paths
}

// PathChecker validates paths, remembering the verdict for every prefix so
// that many paths under one folder cost one lstat each.
type PathChecker struct {
	mu       sync.Mutex
	root     string
	rootReal string
	// cacheDir is the cache folder (absolute), cacheReal the same with
	// symlinks resolved, and cacheRel the folder relative to rootReal
	// ("" when it is not in the workspace).
	cacheDir, cacheReal, cacheRel string
	seen                          map[string]error
	// links maps the prefixes checked that are symlinks to where they
	// led when last checked, their symlinks resolved ("" when nowhere).
	links map[string]string
	// snapshot is set while a plan checks every node's paths at one
	// moment: a folder holding many checked paths is then listed once
	// instead of one lstat per path.
	snapshot bool
	dirs     map[string]*dirListing
	// absent names the prefixes a snapshot found missing: nothing
	// below them exists either, and is not looked up.
	absent map[string]bool
	// lstats counts the paths checked one by one (checkOne).
	lstats int
	// checked holds each path's verdict while a snapshot lasts; gen
	// counts the snapshots turned on or off, so that a check begun in
	// one is not kept in the next.
	checked map[string]checkedPath
	gen     int
}

// dirListing is what a snapshot knows of one folder.
type dirListing struct {
	checks int
	listed bool
	links  map[string]bool // names of the symlinks in it
}

// listAfter is how many paths of one folder are checked one by one before
// the folder is listed instead.
const listAfter = 16

// setPathSnapshot turns snapshot checking on or off; off forgets
// listings and ends the kinds' memo of the workspace (stages.Look), which
// the nodes evaluated meanwhile hold.
func (g *Graph) setPathSnapshot(on bool) {
	pc := g.PathCheck()
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.snapshot = on
	pc.dirs, pc.absent, pc.checked = nil, nil, nil
	pc.gen++
	if g.look != nil {
		g.look.End()
		g.look = nil
	}
	if on {
		g.look = &stages.Look{}
	}
}

func newPathChecker(root, cacheDir string) *PathChecker {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		real = root
	}
	pc := &PathChecker{root: root, rootReal: real, seen: map[string]error{}, cacheDir: cacheDir}
	if cacheDir != "" {
		pc.cacheReal = ResolveExisting(cacheDir)
		if rel, ok := Below(real, pc.cacheReal); ok {
			pc.cacheRel = rel
		}
	}
	return pc
}

// ResolveExisting resolves the symlinks of the longest part of p that
// exists, keeping the rest as it is: the cache folder may not exist yet.
func ResolveExisting(p string) string {
	p = filepath.Clean(p)
	var rest []string
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			for i := len(rest) - 1; i >= 0; i-- {
				real = filepath.Join(real, rest[i])
			}
			return real
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, rest...)...)
		}
		rest = append(rest, filepath.Base(p))
		p = parent
	}
}

func (pc *PathChecker) check(p string) (string, error) {
	// In a snapshot a path's verdict holds for the whole check: the nodes
	// of a grid name the same few files (a worker, a bundle, a split)
	// thousands of times.
	pc.mu.Lock()
	gen, snap := pc.gen, pc.snapshot
	if r, ok := pc.checked[p]; ok && snap {
		pc.mu.Unlock()
		return r.clean, r.err
	}
	pc.mu.Unlock()
	clean, err := pc.checkFresh(p)
	if snap {
		pc.mu.Lock()
		if pc.gen == gen {
			if pc.checked == nil {
				pc.checked = map[string]checkedPath{}
			}
			pc.checked[p] = checkedPath{clean, err}
		}
		pc.mu.Unlock()
	}
	return clean, err
}

// checkedPath is a path's verdict in a snapshot.
type checkedPath struct {
	clean string
	err   error
}

// checkFresh is check without the snapshot's verdicts.
func (pc *PathChecker) checkFresh(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("the path is empty")
	}
	if filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is absolute; paths are relative to the workspace root (%s)", p, pc.root)
	}
	clean := filepath.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%q leaves the workspace root (%s); paths must stay inside it", p, pc.root)
	}
	if clean == "." {
		return "", fmt.Errorf("%q is the workspace root itself (%s); name the files or folders inside it", p, pc.root)
	}
	if err := pc.checkCache(p, filepath.Join(pc.rootReal, clean)); err != nil {
		return "", err
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	linked := false
	for i := 0; i <= len(clean); i++ {
		if i < len(clean) && clean[i] != '/' {
			continue
		}
		prefix := clean[:i]
		err, ok := pc.seen[prefix]
		if !ok {
			switch {
			case i == len(clean) && pc.snapshot && !pc.mayBeLink(clean):
			default:
				err = pc.checkOne(prefix)
			}
			if i < len(clean) {
				pc.seen[prefix] = err
			}
		}
		if err != nil {
			return "", fmt.Errorf("%q: %w", p, err)
		}
		if pc.absent[prefix] {
			// A snapshot found this folder missing: nothing below it
			// exists, no link, no verdict to keep (a grid's run
			// folders, not made yet).
			break
		}
		_, isLink := pc.links[prefix]
		linked = linked || (prefix != "" && isLink)
	}
	if linked {
		// A folder on the way is a symlink that stays in the workspace:
		// where it leads must not be the root or the cache either.
		real := ResolveExisting(filepath.Join(pc.root, clean))
		if real == pc.rootReal {
			return "", fmt.Errorf("%q resolves through a symlink to the workspace root itself (%s): name the files or folders inside it instead, or point the link at one of them", p, pc.root)
		}
		if err := pc.checkCache(p, real); err != nil {
			return "", err
		}
	}
	return clean, nil
}

// checkCache refuses the path p, whose location is real, when it is the
// cache folder, holds it or lies inside it.
func (pc *PathChecker) checkCache(p, real string) error {
	if pc.cacheReal == "" {
		return nil
	}
	if pc.InCache(real) {
		return fmt.Errorf("%q is inside the cache folder (%s); the cache's files are cairn's own: declare paths outside it, or give the cache another place with --cache", p, pc.cacheDir)
	}
	if _, ok := Below(real, pc.cacheReal); ok {
		return fmt.Errorf("%q holds the cache folder (%s); a restore would overwrite the cache's own files: name the files or folders the stage writes, or give the cache another place with --cache", p, pc.cacheDir)
	}
	return nil
}

// mayBeLink is false when a snapshot listing of rel's folder shows that
// rel is not a symlink (or does not exist). pc.mu is held.
func (pc *PathChecker) mayBeLink(rel string) bool {
	dir, name := filepath.Split(rel)
	if pc.dirs == nil {
		pc.dirs = map[string]*dirListing{}
	}
	dl := pc.dirs[dir]
	if dl == nil {
		dl = &dirListing{}
		pc.dirs[dir] = dl
	}
	if !dl.listed {
		dl.checks++
		if dl.checks <= listAfter {
			return true
		}
		links, ok := listLinks(filepath.Join(pc.root, dir))
		if !ok {
			// Unreadable: keep checking its paths one by one.
			dl.checks = math.MinInt
			return true
		}
		dl.links, dl.listed = links, true
	}
	return dl.links[name]
}

// listLinks returns the names of the symlinks in a folder; a missing folder
// holds none. ok is false when the folder could not be read whole.
func listLinks(dir string) (links map[string]bool, ok bool) {
	links = map[string]bool{}
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return links, true
	}
	if err != nil {
		return nil, false
	}
	defer f.Close()
	for {
		ents, err := f.ReadDir(1024)
		for _, e := range ents {
			if e.Type()&os.ModeSymlink != 0 {
				links[e.Name()] = true
			}
		}
		if errors.Is(err, io.EOF) {
			return links, true
		}
		if err != nil {
			return nil, false
		}
	}
}

// checkOne checks one prefix of a path; pc.mu is held. A symlink is
// noted in pc.links, with where it leads.
func (pc *PathChecker) checkOne(rel string) error {
	pc.lstats++
	full := filepath.Join(pc.root, rel)
	st, err := os.Lstat(full)
	if pc.snapshot && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) {
		if pc.absent == nil {
			pc.absent = map[string]bool{}
		}
		pc.absent[rel] = true
	}
	if err != nil || st.Mode()&os.ModeSymlink == 0 {
		delete(pc.links, rel)
		return nil
	}
	if pc.links == nil {
		pc.links = map[string]string{}
	}
	real, err := filepath.EvalSymlinks(full)
	pc.links[rel] = real
	if err != nil {
		return nil
	}
	if real != pc.rootReal && !strings.HasPrefix(real, pc.rootReal+string(filepath.Separator)) {
		return fmt.Errorf("resolves through a symlink to %s, outside the workspace root (%s); paths must stay in the workspace: point the link at a place inside it, or copy what it points to into the workspace and name that", real, pc.root)
	}
	return nil
}

// Leads is where clean, a path check has accepted, leads in the workspace:
// its links resolved, workspace-relative. It is clean itself when no
// folder on its way, nor the path, is a symlink (as check found them), or
// when it leads outside the workspace or to its root.
func (pc *PathChecker) Leads(clean string) string {
	pc.mu.Lock()
	linked := false
	for i := 1; i <= len(clean) && !linked && len(pc.links) > 0; i++ {
		if i == len(clean) || clean[i] == '/' {
			_, linked = pc.links[clean[:i]]
		}
	}
	pc.mu.Unlock()
	if !linked {
		return clean
	}
	rel, ok := Below(pc.rootReal, ResolveExisting(filepath.Join(pc.root, clean)))
	if !ok || rel == "." {
		return clean
	}
	return filepath.ToSlash(rel)
}

// LinkLeads is where the path clean, a symlink, led when check last
// looked at it: its symlinks resolved, absolute. ok is false when check
// found no link there then, or one that led nowhere.
func (pc *PathChecker) LinkLeads(clean string) (real string, ok bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	real = pc.links[clean]
	return real, real != ""
}

// sortedKeys returns a map's keys sorted.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// RootReal is the workspace root with symlinks resolved.
func (pc *PathChecker) RootReal() string { return pc.rootReal }

// CacheReal is the cache folder with symlinks resolved ("" when it is
// not known).
func (pc *PathChecker) CacheReal() string { return pc.cacheReal }

// InCache reports whether real, a path with symlinks resolved, is the
// cache folder or inside it (false when the cache folder is not known).
func (pc *PathChecker) InCache(real string) bool {
	if pc.cacheReal == "" {
		return false
	}
	_, ok := Below(pc.cacheReal, real)
	return ok
}

// envReserve is room kept for the variables cairn sets for a node
// (CAIRN_*, CUDA_VISIBLE_DEVICES) on top of its own environment.
const envReserve = 4 << 10

// argSizeCheck refuses a run list whose arguments, with the stage's env
// and the environment cairn passes on, are over what the system lets a
// program start with (ARG_MAX): the program would fail to start, at apply
// time, with "argument list too long". The inherited environment and the
// limit are read once a graph (see startRoom).
func argSizeCheck(sn *stages.Node, room *startRoom) hcl.Diagnostics {
	run, ok := sn.Args["run"]
	if !ok {
		return nil
	}
	args, ok := plainArgBytes(run)
	if !ok {
		if !run.IsWhollyKnown() || run.IsNull() {
			return nil
		}
		run, _ = run.UnmarkDeep()
		var argv []string
		if run.Type().Equals(cty.String) {
			argv = []string{"/bin/sh", "-c", run.AsString()}
		} else if l, err := stages.StringList(run); err == nil {
			argv = l
		} else {
			return nil
		}
		for _, a := range argv {
			args += argBytes(a)
		}
	}
	size := envReserve + args
	for k, v := range sn.Common.Env {
		size += len(k) + len(v) + 2 + 8
	}
	size += room.inherited(sn)
	limit := room.limit()
	if size <= limit {
		return nil
	}
	return stages.Diag("Invalid run", fmt.Sprintf("The arguments (%d bytes) and environment of this command take %d bytes, over the %d bytes this system lets a program start with (ARG_MAX): it would fail to start with \"argument list too long\". Pass the data in a file instead (and name it in inputs).", args, size, limit), sn.Range("run"))
}

// argBytes is what execve counts for one argument or environment entry:
// the string with its NUL and its pointer.
func argBytes(s string) int { return len(s) + 1 + 8 }

// plainArgBytes is the bytes of the arguments of a run given as a known,
// unmarked string (run by /bin/sh -c) or a list or tuple of them, without
// copying them out; ok is false for any other run.
func plainArgBytes(run cty.Value) (int, bool) {
	if run.IsMarked() || !run.IsKnown() || run.IsNull() {
		return 0, false
	}
	ty := run.Type()
	if ty == cty.String {
		return argBytes("/bin/sh") + argBytes("-c") + argBytes(run.AsString()), true
	}
	if !(ty.IsListType() || ty.IsTupleType()) {
		return 0, false
	}
	n := 0
	for e := range dsl.Elements(run) {
		if e.IsMarked() || !e.IsKnown() || e.IsNull() || e.Type() != cty.String {
			return 0, false
		}
		n += argBytes(e.AsString())
	}
	return n, true
}

// startRoom is what argSizeCheck counts for every node alike: the
// environment cairn passes on and the system's limit, read once (the
// nodes of a graph are checked in parallel).
type startRoom struct {
	once  sync.Once
	total int            // every inherited entry, with its NUL and pointer
	byKey map[string]int // the entries of each variable name
	max   int            // argLimit
}

func (r *startRoom) read() {
	r.once.Do(func() {
		r.byKey = map[string]int{}
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			r.total += argBytes(kv)
			r.byKey[k] += argBytes(kv)
		}
		r.max = argLimit()
	})
}

// inherited is the size of the environment a node inherits: every
// variable but those its stage's env sets.
func (r *startRoom) inherited(sn *stages.Node) int {
	r.read()
	size := r.total
	for k := range sn.Common.Env {
		size -= r.byKey[k]
	}
	return size
}

func (r *startRoom) limit() int {
	r.read()
	return r.max
}
