package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/cairn-run/cairn/stages/decision"
	"github.com/cairn-run/cairn/storage/atomicfile"
)

// Decision replays a decision protocol's rules over the outcomes of its
// slots (docs/decision.md): from this pipeline's slot stage, or from a
// recorded outcomes file.
//
//	stage "decision" "replay" {
//	  on_upstream_failure = "run"            # slots that failed to start are not_started
//	  protocol = "decision_protocol.json"
//	  slots    = stage.collect               # or: outcomes = "recorded/outcomes.json"
//	  out_dir  = "reports/decision"          # default reports/<stage name>
//	  matrix   = "matrix.csv"                # optional: checked against matrix_sha256
//	}
//
// It prints the replay's table and writes replay.json, replay.tsv and
// outcomes.json (every planned slot's outcome, which `cairn replay` reads)
// into out_dir. Its result is the replay's JSON object. Outcomes that break
// the protocol's failure policy, and frozen files present with another
// digest, fail the node (class setup).
type Decision struct{}

func init() { Register(Decision{}) }

// Name implements Kind.
func (Decision) Name() string { return "decision" }

// Version implements Kind.
func (Decision) Version() int { return 1 }

// Compares implements Comparer: with no slot finished there is nothing to
// replay from this pipeline's runs.
func (Decision) Compares() {}

// Schema implements Kind.
func (Decision) Schema() *hcl.BodySchema {
	return &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "protocol", Required: true},
		{Name: "slots"},
		{Name: "outcomes"},
		{Name: "out_dir"},
		{Name: "matrix"},
	}}
}

// KeyValue implements KeyTransformer: of each slot instance only its
// result and status enter the key.
func (Decision) KeyValue(attr string, v cty.Value) cty.Value {
	if attr != "slots" {
		return v
	}
	return Pareto{}.KeyValue("rows", v)
}

type decisionArgs struct {
	protocol, outcomes, outDir, matrix string
}

func decisionDecode(n *Node) (decisionArgs, hcl.Diagnostics) {
	a := decisionArgs{outDir: "reports/" + n.Stage}
	var diags hcl.Diagnostics
	path := func(attr string, dst *string) {
		v, ok, d := StringArg(n, attr)
		diags = append(diags, d...)
		if !ok {
			return
		}
		clean, err := relPath(v)
		if err != nil {
			diags = append(diags, Diag("Invalid "+attr, attr+" "+err.Error(), n.Range(attr))...)
			return
		}
		*dst = clean
	}
	path("protocol", &a.protocol)
	path("outcomes", &a.outcomes)
	path("out_dir", &a.outDir)
	path("matrix", &a.matrix)
	_, hasSlots := n.Args["slots"]
	_, hasOutcomes := n.Args["outcomes"]
	if hasSlots == hasOutcomes {
		diags = append(diags, Diag("Invalid decision stage", "Give the outcomes one way: slots = stage.NAME (this pipeline's slot stage) or outcomes = \"FILE\" (a recorded outcomes file), not both or neither.", n.Range("protocol"))...)
	}
	return a, diags
}

// Check implements Kind.
func (Decision) Check(n *Node) hcl.Diagnostics {
	_, diags := decisionDecode(n)
	return diags
}

// PathAttrs implements PathLinker.
func (Decision) PathAttrs() []PathAttr { return decisionPaths }

var decisionPaths = []PathAttr{{Attr: "protocol"}, {Attr: "outcomes"}, {Attr: "matrix"}, {Attr: "out_dir", Write: true, Default: reportsDefault}}

// DeclaredInputs implements InputDeclarer: the protocol, the outcomes file
// and the matrix file key the node by content, and so do the files the
// protocol pins (frozenPresent): the replay reports each as matched or
// absent, which a cached result must not say of files changed since.
func (Decision) DeclaredInputs(n *Node, root string) []DeclaredPath {
	a, _ := decisionDecode(n)
	var out []DeclaredPath
	for _, d := range []DeclaredPath{{"protocol", a.protocol}, {"outcomes", a.outcomes}, {"matrix", a.matrix}} {
		if d.Path != "" {
			out = append(out, d)
		}
	}
	if a.protocol != "" {
		for _, f := range frozenPresent(root, a.protocol) {
			out = append(out, DeclaredPath{Attr: "protocol", Path: f})
		}
	}
	return out
}

// frozenPresent are the files the protocol (a workspace path) pins that
// are in the workspace now, workspace-relative and sorted: its frozen
// files are relative to its folder. One that is absent is reported absent
// by the replay; it keys the node by its absence (the list), and by its
// content once there. A protocol that cannot be read pins nothing here
// (the node's run says why).
func frozenPresent(root, protocol string) []string {
	p, err := decision.ReadProtocol(filepath.Join(root, protocol))
	if err != nil {
		return nil
	}
	var out []string
	for _, f := range p.FrozenFiles() {
		rel := filepath.Join(filepath.Dir(protocol), f)
		if filepath.IsAbs(f) {
			r, err := filepath.Rel(root, f)
			if err != nil {
				continue
			}
			rel = r
		}
		if !filepath.IsLocal(rel) || slices.Contains(out, rel) {
			continue
		}
		if st, err := os.Stat(filepath.Join(root, rel)); err == nil && st.Mode().IsRegular() {
			out = append(out, rel)
		}
	}
	sort.Strings(out)
	return out
}

// DeclaredOutputs implements OutputDeclarer: the report folder.
func (Decision) DeclaredOutputs(n *Node) []DeclaredPath {
	a, diags := decisionDecode(n)
	if diags.HasErrors() {
		return nil
	}
	return []DeclaredPath{{Attr: "out_dir", Path: a.outDir}}
}

// The files a decision node writes into its out_dir.
const DecisionOutcomes = "outcomes.json"

// Run implements Kind.
func (Decision) Run(ctx context.Context, n *Node, rt Runtime) (*Outcome, error) {
	a, diags := decisionDecode(n)
	if diags.HasErrors() {
		return nil, diags
	}
	protocol := filepath.Join(rt.Root(), a.protocol)
	p, err := decision.ReadProtocol(protocol)
	if err != nil {
		return &Outcome{Class: "setup", Message: err.Error()}, nil
	}
	matrix := ""
	if a.matrix != "" {
		matrix = filepath.Join(rt.Root(), a.matrix)
	}
	frozen, err := p.CheckFrozen(filepath.Dir(protocol), matrix)
	if err != nil {
		return &Outcome{Class: "setup", Message: err.Error()}, nil
	}
	frozen.Matrix = a.matrix
	var o decision.Outcomes
	var in decision.Input
	if a.outcomes != "" {
		if o, in, err = decision.ReadOutcomes(filepath.Join(rt.Root(), a.outcomes), p); err != nil {
			return &Outcome{Class: "setup", Message: err.Error()}, nil
		}
		in.File = a.outcomes
	} else if o, err = slotOutcomes(n.Args["slots"], p); err != nil {
		return &Outcome{Class: "setup", Message: err.Error()}, nil
	} else if msg, err := collectedElsewhere(n, rt, o); err != nil || msg != "" {
		if err != nil {
			return nil, err
		}
		return &Outcome{Class: "setup", Message: msg}, nil
	}
	var order []string
	for _, s := range p.Slots() {
		order = append(order, s.ID)
	}
	if bs := p.PolicyBreaches(o, order); len(bs) > 0 {
		var lines []string
		for _, b := range bs {
			lines = append(lines, fmt.Sprintf("slot %q: %s", b.Slot, b.Msg))
		}
		return &Outcome{Class: "setup", Message: strings.Join(lines, "\n")}, nil
	}
	r := decision.Replay(p, o)
	dir := filepath.Join(rt.Root(), a.outDir)
	sync := !rt.NoSync()
	oj, _ := json.MarshalIndent(o, "", "  ")
	oj = append(oj, '\n')
	if a.outcomes == "" {
		in = decision.InputOf(filepath.Join(a.outDir, DecisionOutcomes), oj)
	}
	r.Inputs.Protocol.File = a.protocol
	r.Inputs.Outcomes, r.Inputs.Frozen = in, frozen
	if err := r.WriteFiles(dir, sync); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(dir, DecisionOutcomes), oj, sync); err != nil {
		return nil, err
	}
	w := &bytes.Buffer{}
	defer emitOutput(rt, n.Address, w)
	sim := ""
	if m := r.Inputs.NotMeasured; m != nil && m.Simulated > 0 {
		// Outcomes judged on simulated GPUs say so wherever they are shown.
		sim = fmt.Sprintf(" (SIMULATED: %d judged on simulated GPUs)", m.Simulated)
	}
	fmt.Fprintf(w, "\n%s: replay of %s over %d slot outcomes%s\n", n.Address, a.protocol, len(o), sim)
	if err := r.WriteTable(w); err != nil {
		return nil, err
	}
	var files []string
	for _, f := range append(append([]string{}, decision.Files...), DecisionOutcomes) {
		files = append(files, filepath.Join(a.outDir, f))
	}
	return &Outcome{Result: r.JSON(), Files: files}, nil
}

// collectedElsewhere refuses a replay that would count a slot not_started
// although its ledger holds attempts of it: another apply collected the
// slot, or is collecting it now (its GPUs were that apply's, or another
// cache ran it), and the replay here would contradict the ledger and
// replace a truer one. It also refuses while another apply has an attempt
// of the collection running. The ledgers are those the slot nodes this
// apply evaluated name. It returns "" when the replay may go on.
func collectedElsewhere(n *Node, rt Runtime, o decision.Outcomes) (string, error) {
	var missing []string
	for id, oc := range o {
		if oc.State == decision.NotStarted {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return "", nil
	}
	sort.Strings(missing)
	ledgers := map[string]bool{}
	for _, u := range n.Upstreams {
		if v, ok := u.Args["ledger"]; ok && v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
			ledgers[v.AsString()] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ledgers)) {
		led := &decision.Ledger{Dir: filepath.Join(rt.Root(), name)}
		hs, err := led.Read()
		if err != nil {
			return "", err
		}
		var seen []string
		for _, id := range missing {
			if h := hs[id]; h != nil && h.Last() != nil {
				a := h.Last()
				state := "still running"
				if !a.Open() {
					state = "ended " + string(a.State)
				}
				seen = append(seen, fmt.Sprintf("%s (attempt %d, started by run %s, %s)", id, a.Attempt, a.RunID, state))
			}
		}
		if total := len(seen); total > 0 {
			more := ""
			if total > 3 {
				more = fmt.Sprintf(" and %d more", total-3)
				seen = seen[:3]
			}
			return fmt.Sprintf("%d slot(s) have no outcome in this apply but attempts in ledger %s: %s%s. Another apply collected them or is collecting them (with its GPUs, another cache or another configuration: each slot's own failure says which), and a replay here would count them not_started against the ledger; nothing was written. Apply again once no other apply of this collection runs: their outcomes then come from the cache or the ledger",
				total, name, strings.Join(seen, "; "), more), nil
		}
		var running []string
		for id, h := range hs {
			if a := h.Last(); a != nil && a.Open() && a.RunID != rt.RunID() {
				running = append(running, fmt.Sprintf("%s (run %s)", id, a.RunID))
			}
		}
		if len(running) > 0 {
			sort.Strings(running)
			return fmt.Sprintf("%d planned slot(s) have no outcome in this apply (%s first), and another apply is collecting ledger %s now: %s running. A replay here would count them not_started; nothing was written. Apply again once that apply has ended",
				len(missing), missing[0], name, strings.Join(running, ", ")), nil
		}
	}
	return "", nil
}

// slotOutcomes reads the outcomes of a slot stage's instances: a finished
// slot's result, and not_started for every planned slot that has none (it
// never started: skipped, refused, or failed before its process began).
func slotOutcomes(v cty.Value, p *decision.Protocol) (decision.Outcomes, error) {
	o := decision.Outcomes{}
	for _, s := range p.Slots() {
		o[s.ID] = decision.Outcome{State: decision.NotStarted}
	}
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
		return o, nil
	}
	v, _ = v.UnmarkDeep()
	ty := v.Type()
	if !(ty.IsObjectType() || ty.IsMapType()) {
		return nil, fmt.Errorf("slots must be the instances of a slot stage (slots = stage.collect), not %s", ty.FriendlyName())
	}
	var keys []string
	rows := map[string]cty.Value{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		keys = append(keys, k.AsString())
		rows[k.AsString()] = e
	}
	sort.Strings(keys)
	for _, k := range keys {
		e := rows[k]
		if e.IsNull() || !e.Type().IsObjectType() || !e.Type().HasAttribute("result") {
			return nil, fmt.Errorf("slots[%q] is not a stage instance: slots must be the instances of a slot stage", k)
		}
		res := e.GetAttr("result")
		if res.IsNull() {
			continue
		}
		b, err := ctyjson.Marshal(res, res.Type())
		if err != nil {
			return nil, err
		}
		var r slotResult
		if err := json.Unmarshal(b, &r); err != nil || r.Slot == "" {
			return nil, fmt.Errorf("slots[%q] has no slot result: slots must be the instances of a slot stage", k)
		}
		if _, planned := o[r.Slot]; !planned {
			return nil, fmt.Errorf("slots[%q] ran slot %q, which the protocol does not plan", k, r.Slot)
		}
		o[r.Slot] = decision.Outcome{State: r.State, Attempts: r.Attempts, Simulated: r.Simulated}
	}
	return o, nil
}
