package stages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/stages/decision"
)

// Slot runs one planned process of a decision protocol (seed 003) under
// the protocol's failure policy, and records every attempt in the
// collection's attempt ledger.
//
//	stage "slot" "collect" {
//	  for_each         = [for s in decisionslots(var.protocol) : s.slot_id]  # collection order
//	  slot             = each.key
//	  run              = concat(var.train_command, [...])
//	  gpus             = 2                  # one allocation: a lease of 2 GPUs
//	  concurrency      = 4                  # at most 4 allocations at once
//	  timeout          = 1800               # per process
//	  allocation_time  = "40m"              # the whole allocation, replacement included
//	  memory_limit_mib = 38912
//	  ledger           = "decision/ledger"
//	  max_replacements = 8                  # in the whole ledger
//	  replace_on = {                        # the documented setup classes
//	    missing_dependency = ["ModuleNotFoundError"]
//	    port_collision     = ["Address already in use"]
//	  }
//	}
//
// The node succeeds once the slot has an outcome (within_margin,
// above_margin, memory_failure or unresolved), whatever the process did:
// a slot's outcome is data, and a failed slot is never run again. Its
// result is {"slot", "state", "attempts", "peak_gpu_mib", "class",
// "setup_class", "message"}, with "simulated": true when it ran on
// simulated GPUs (its peak made up). A process that completed without
// any GPU memory seen (peak 0 MiB: it used no GPU, or its executor does
// not sample) is unresolved: there is no measurement to judge.
type Slot struct{}

func init() { Register(Slot{}) }

// Name implements Kind.
func (Slot) Name() string { return "slot" }

// Version implements Kind.
func (Slot) Version() int { return 1 }

// Schema implements Kind.
func (Slot) Schema() *hcl.BodySchema {
	return &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "run", Required: true},
		{Name: "slot", Required: true},
		{Name: "memory_limit_mib", Required: true},
		{Name: "ledger", Required: true},
		{Name: "replace_on"},
		{Name: "max_replacements"},
		{Name: "allocation_time"},
	}}
}

// KeyExcluded implements KeyExcluder: where the ledger is and how long an
// allocation may last do not change what a completed slot measured.
func (Slot) KeyExcluded() []string { return []string{"ledger", "allocation_time", "max_replacements"} }

// PathAttrs implements PathLinker.
func (Slot) PathAttrs() []PathAttr { return slotPaths }

var slotPaths = []PathAttr{{Attr: "ledger", Write: true}}

// DeclaredOutputs implements OutputDeclarer: the ledger folder is checked
// as outputs are (inside the workspace, out of the cache).
func (Slot) DeclaredOutputs(n *Node) []DeclaredPath {
	if v := n.Args["ledger"]; v.IsKnown() && !v.IsNull() && v.Type().Equals(cty.String) {
		return []DeclaredPath{{Attr: "ledger", Path: filepath.Clean(v.AsString())}}
	}
	return nil
}

// slotSpec is a slot node's decoded attributes.
type slotSpec struct {
	proc           Proc
	slot           string
	limit          float64
	ledger         string
	replaceOn      []namedPattern
	maxReplace     int
	allocationTime time.Duration
}

type namedPattern struct {
	class string
	re    *regexp.Regexp
}

// Check implements Kind.
func (Slot) Check(n *Node) hcl.Diagnostics {
	_, diags := slotArgs(n)
	return diags
}

func slotArgs(n *Node) (*slotSpec, hcl.Diagnostics) {
	s := &slotSpec{}
	p, diags := commandArgv(n)
	s.proc = p
	known := func(name string) (cty.Value, bool) {
		v, ok := n.Args[name]
		if !ok || !v.IsWhollyKnown() || v.IsNull() {
			return v, false
		}
		v, _ = v.UnmarkDeep()
		return v, true
	}
	if v, ok := known("slot"); ok {
		if !v.Type().Equals(cty.String) || v.AsString() == "" {
			diags = append(diags, Diag("Invalid slot", "slot is the slot id the protocol gives this process, a non-empty string.", n.Range("slot"))...)
		} else {
			s.slot = v.AsString()
		}
	}
	if v, ok := known("memory_limit_mib"); ok {
		f, err := numberOf(v)
		if err != nil || f <= 0 {
			diags = append(diags, Diag("Invalid memory_limit_mib", "memory_limit_mib is the margin in MiB, a number more than 0 (the protocol's memory_limit_mib).", n.Range("memory_limit_mib"))...)
		}
		s.limit = f
	}
	if v, ok := known("ledger"); ok {
		if !v.Type().Equals(cty.String) || v.AsString() == "" {
			diags = append(diags, Diag("Invalid ledger", "ledger is a workspace-relative folder for the attempt ledger, shared by every slot of the collection.", n.Range("ledger"))...)
		} else {
			s.ledger = filepath.Clean(v.AsString())
		}
	}
	if v, ok := known("max_replacements"); ok {
		i, ok := wholeNumber(v)
		if !ok || i < 0 || i > 1<<20 {
			diags = append(diags, Diag("Invalid max_replacements", "max_replacements is a whole number ≥ 0: the replacements allowed in the whole ledger.", n.Range("max_replacements"))...)
		}
		s.maxReplace = i
	}
	if v, ok := known("allocation_time"); ok {
		d, err := durationValue(v) // seconds, "40m", or "2400", as serve and evaluate read theirs
		if err != nil || d <= 0 {
			diags = append(diags, Diag("Invalid allocation_time", "allocation_time is a duration more than 0 (\"40m\", or seconds): how long the slot's allocation may last, every attempt included.", n.Range("allocation_time"))...)
		}
		s.allocationTime = d
	}
	if v, ok := known("replace_on"); ok {
		ty := v.Type()
		if !(ty.IsObjectType() || ty.IsMapType()) {
			diags = append(diags, Diag("Invalid replace_on", "replace_on maps each documented setup class to regular expressions of its stderr: { port_collision = [\"Address already in use\"] }.", n.Range("replace_on"))...)
		} else {
			var names []string
			pats := map[string][]string{}
			for it := v.ElementIterator(); it.Next(); {
				k, e := it.Element()
				list, err := StringList(e)
				if err != nil {
					diags = append(diags, Diag("Invalid replace_on", fmt.Sprintf("replace_on.%s must be a list of regular expressions: %s.", k.AsString(), err), n.Range("replace_on"))...)
					continue
				}
				names = append(names, k.AsString())
				pats[k.AsString()] = list
			}
			sort.Strings(names)
			for _, name := range names {
				for _, p := range pats[name] {
					re, err := regexp.Compile(p)
					if err != nil {
						diags = append(diags, Diag("Invalid replace_on", fmt.Sprintf("replace_on.%s: %q is not a regular expression (RE2): %s.", name, p, err), n.Range("replace_on"))...)
						continue
					}
					s.replaceOn = append(s.replaceOn, namedPattern{class: name, re: re})
				}
			}
		}
	}
	return s, diags
}

// numberOf is a number, or what converts to one as HCL converts for a
// number type (the string "512", as --var gives an untyped variable).
func numberOf(v cty.Value) (float64, error) {
	v, _ = v.Unmark()
	nv, err := convert.Convert(v, cty.Number)
	if err != nil || !nv.IsKnown() || nv.IsNull() {
		return 0, errors.New("not a number")
	}
	f, _ := nv.AsBigFloat().Float64()
	return f, nil
}

// slotResult is a slot node's result.
type slotResult struct {
	Slot       string         `json:"slot"`
	State      decision.State `json:"state"`
	Attempts   int            `json:"attempts"`
	PeakGPUMiB float64        `json:"peak_gpu_mib"`
	Class      string         `json:"class"`
	SetupClass string         `json:"setup_class"`
	Message    string         `json:"message"`
	// Simulated: an attempt ran on simulated GPUs, its peak made up.
	Simulated bool `json:"simulated,omitempty"`
	// Ledger is the slot's attempts as the attempt ledger holds them, in
	// order: the run report's attempt ledger.
	Ledger []slotAttempt `json:"ledger,omitempty"`
}

// slotAttempt is one attempt of a slot in its node's result: how it
// ended, whether it was charged (every started attempt is) and whether it
// was a replacement, counted under the ledger's cap (max_replacements,
// the protocol's max_repair_allocations).
type slotAttempt struct {
	Attempt     int            `json:"attempt"`
	State       decision.State `json:"state"`
	Class       string         `json:"class"`
	SetupClass  string         `json:"setup_class"`
	Charged     bool           `json:"charged"`
	Replacement bool           `json:"replacement"`
	Started     time.Time      `json:"started"`
	Ended       *time.Time     `json:"ended"`
	EndUnseen   bool           `json:"end_unseen,omitempty"`
	PeakGPUMiB  float64        `json:"peak_gpu_mib"`
	Simulated   bool           `json:"simulated,omitempty"`
}

// KeepsTimeout implements TimeoutKeeper: each process is killed at the
// stage's timeout (Runtime.Exec).
func (Slot) KeepsTimeout() {}

// Run implements Kind.
func (Slot) Run(ctx context.Context, n *Node, rt Runtime) (*Outcome, error) {
	s, diags := slotArgs(n)
	if diags.HasErrors() {
		return nil, diags
	}
	led := &decision.Ledger{Dir: filepath.Join(rt.Root(), s.ledger), Sync: !rt.NoSync()}
	if s.allocationTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.allocationTime)
		defer cancel()
	}
	runID := rt.RunID()
	for {
		h, err := led.History(s.slot)
		if err != nil {
			return nil, err
		}
		if why := s.otherKey(h, n.Key); why != "" {
			return &Outcome{Class: "setup", Message: why}, nil
		}
		last := h.Last()
		next := 1
		switch {
		case last != nil && last.Open():
			// Started by a cairn that stopped before it ended: charged,
			// unresolved, never started again. When it ended is not
			// known: it gets no end time, and so no duration.
			e := decision.Event{Slot: s.slot, Attempt: last.Attempt, State: decision.Unresolved, Class: "interrupted", EndUnseen: true,
				Message: fmt.Sprintf("cairn stopped while attempt %d ran (run %s): its end was not seen, so it has no end time; a slot is never started again", last.Attempt, last.RunID)}
			if err := led.End(e); err != nil {
				return nil, err
			}
			continue
		case last != nil && h.Replacing > last.Attempt:
			next = h.Replacing // decided before cairn stopped: start it now
		case last != nil:
			if last.SetupClass != "" && last.State == decision.Unresolved {
				granted, total, err := led.DecideReplacement(s.slot, last.Attempt, last.SetupClass, s.maxReplace)
				if err != nil {
					return nil, err
				}
				if granted {
					rt.Emit(&events.NodeOutput{Node: n.Address, Text: fmt.Sprintf("%s: slot %s: attempt %d failed setup (%s): one unchanged replacement, %d of %d in the ledger, recorded before it starts\n",
						n.Address, s.slot, last.Attempt, last.SetupClass, total, s.maxReplace)})
					continue
				}
			}
			return slotOutcome(s.slot, h)
		}
		if err := ctx.Err(); err != nil {
			if errors.Is(err, context.DeadlineExceeded) && last != nil {
				// The allocation's time is up: no replacement starts.
				return slotOutcome(s.slot, h)
			}
			// Interrupted before attempt next started: nothing is charged,
			// and the next apply starts it (a decided replacement too).
			return &Outcome{Class: "interrupted", Message: fmt.Sprintf("interrupted before attempt %d of slot %s started", next, s.slot)}, nil
		}
		if err := led.Start(decision.Event{Slot: s.slot, Attempt: next, RunID: runID, Node: n.Address, Key: n.Key, Simulated: simulatedGPUs(rt)}); err != nil {
			return nil, err
		}
		p := s.proc
		if next > 1 {
			stem := filepath.Join(rt.OutDir(), fmt.Sprintf("attempt%d", next))
			p.Stdout, p.Stderr = stem+".out", stem+".err"
		}
		// ran: the executor started the process (a cluster: submitted
		// its job). One it could not start at all is no attempt.
		ran := false
		p.Started = func(process.JobRef) { ran = true }
		res, err := rt.Exec(ctx, p)
		if err != nil {
			_ = led.End(decision.Event{Slot: s.slot, Attempt: next, State: decision.Unresolved, Class: "setup", Message: err.Error()})
			return nil, err
		}
		if !ran {
			return notStarted(led, s, next, res)
		}
		// The sampler gives the allocation's peak summed over its GPUs;
		// the margin is per GPU, so the peak compared is the mean per GPU.
		peak := res.PeakGPUMiB / float64(max(1, len(res.GPUs)))
		e := decision.Event{Slot: s.slot, Attempt: next, Class: res.Class, PeakGPUMiB: peak, PeakRSSMiB: res.PeakRSSMiB, GPUs: res.GPUs, Message: res.Message}
		if res.ExitCode >= 0 && res.Signal == "" {
			code := res.ExitCode
			e.ExitCode = &code
		}
		switch {
		case res.Class == "" && !(peak > 0):
			// No GPU memory seen at all: not a measurement of the job's
			// peak, so nothing to judge against the margin.
			e.State = decision.Unresolved
			e.Message = noPeakMessage(res.GPUs, s.limit)
		case res.Class == "":
			e.State = decision.WithinMargin
			if peak > s.limit {
				e.State = decision.AboveMargin
			}
			e.Message = fmt.Sprintf("completed: peak %.0f MiB per GPU, limit %.0f MiB", peak, s.limit)
		case res.Class == "memory_failure":
			e.State = decision.MemoryFailure
		default:
			e.State = decision.Unresolved
			if res.Class != "interrupted" && res.Class != "timeout" {
				e.SetupClass = setupClass(s.replaceOn, res)
			}
		}
		if ctx.Err() != nil && res.Class != "" && s.allocationTime > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			e.State, e.Class, e.SetupClass = decision.Unresolved, "timeout", ""
			e.Message = fmt.Sprintf("the allocation's time (%s) ran out", s.allocationTime)
		}
		if err := led.End(e); err != nil {
			return nil, err
		}
		if e.Class == "interrupted" {
			// Charged and recorded; the next apply records it unresolved
			// without starting it again.
			return &Outcome{Class: res.Class, Message: res.Message, Proc: res}, nil
		}
	}
}

// otherKey says why a node of key may not collect the slot whose history
// the ledger holds: its last attempt was started by a node with another
// key, another configuration, whose outcome is not this node's, and a slot
// never starts twice. "" when it may (no attempt, the same key, or a key
// not known).
func (s *slotSpec) otherKey(h *decision.SlotHistory, key string) string {
	last := h.Last()
	if last == nil || last.Key == "" || key == "" || last.Key == key {
		return ""
	}
	return fmt.Sprintf("slot %s was collected in ledger %s by a node with another key (%.12s, run %s): a slot is never started twice, and its outcome is not this configuration's; to collect again, give another ledger folder", s.slot, s.ledger, last.Key, last.RunID)
}

// PlanRefusal implements PlanRefuser: a slot the ledger holds as a node
// with another key collected it is refused, as Run refuses it (otherKey),
// replaced or not. A key known only after apply is not asked.
func (Slot) PlanRefusal(n *Node, root, key string, _ bool) string {
	s, diags := decodedOnce(n, slotArgs)
	if diags.HasErrors() || s.slot == "" || s.ledger == "" || key == "" {
		return ""
	}
	h, err := (&decision.Ledger{Dir: filepath.Join(root, s.ledger)}).Peek(s.slot)
	if err != nil {
		return "" // apply reports a damaged ledger, naming it
	}
	return s.otherKey(h, key)
}

// notStarted ends a slot's attempt that the executor never started (its
// program not found, the start refused, cairn interrupted before it):
// the ledger records it as no attempt, uncharged, and the node fails,
// naming the command, so that the slot is collected once it can start
// (a corrected command is not refused for another key: the ledger holds
// no attempt of the slot).
func notStarted(led *decision.Ledger, s *slotSpec, attempt int, res *process.Result) (*Outcome, error) {
	why := res.Message
	if why == "" {
		why = "the executor did not start it"
	}
	if err := led.Unstarted(decision.Event{Slot: s.slot, Attempt: attempt, Class: res.Class, Message: why}); err != nil {
		return nil, err
	}
	class := res.Class
	if class == "" {
		class = "setup"
	}
	return &Outcome{Class: class, Message: fmt.Sprintf("slot %s: attempt %d did not start (%s): nothing ran, so nothing was charged, and ledger %s holds no attempt of it; fix the command and apply again",
		s.slot, attempt, why, s.ledger), Proc: res}, nil
}

// noPeakMessage says why a completed attempt whose sampler saw no GPU
// memory is unresolved.
func noPeakMessage(gpus []int, limit float64) string {
	on := "it leased no GPU"
	if len(gpus) > 0 {
		on = fmt.Sprintf("on GPUs %v", gpus)
	}
	return fmt.Sprintf("completed, but no GPU memory was measured (peak 0 MiB; %s): no measurement to judge against the %.0f MiB limit", on, limit)
}

// OutcomeLabel implements OutcomeLabeler: a slot whose process completed
// at its first attempt shows "ok"; any other shows its outcome, what
// ended its last attempt, and its charged attempts after a replacement:
// "memory_failure", "unresolved: timeout", "unresolved: crashed (exited with status 3)",
// "within_margin after a replacement (2 attempts charged)".
func (Slot) OutcomeLabel(result json.RawMessage) string {
	var r slotResult
	if json.Unmarshal(result, &r) != nil || r.State == "" || (r.Class == "" && r.Attempts <= 1 && r.State != decision.Unresolved) {
		return ""
	}
	label := string(r.State)
	switch {
	case r.Class == "" && r.State == decision.Unresolved:
		label += ": no GPU memory measured"
	case r.Class == "" || r.Class == "memory_failure":
	case r.SetupClass != "":
		label += ": setup failure (" + r.SetupClass + ")"
	case r.Class == "interrupted" && r.endUnseen():
		label += ": interrupted (cairn stopped while it ran: its end was not seen, so it has no duration)"
	case r.Class == "timeout" || r.Class == "interrupted":
		label += ": " + r.Class
	default:
		why, _, _ := strings.Cut(r.Message, "\n")
		if why == "" {
			why = r.Class
		}
		label += ": crashed (" + why + ")"
	}
	if r.Attempts > 1 {
		label += fmt.Sprintf(" after a replacement (%d attempts charged)", r.Attempts)
	}
	return label
}

// OutcomeUntimed implements OutcomeUntimer: a slot whose last attempt
// ended unseen (cairn stopped while it ran) has no run time to show.
func (Slot) OutcomeUntimed(result json.RawMessage) bool {
	var r slotResult
	return json.Unmarshal(result, &r) == nil && r.endUnseen()
}

// endUnseen reports whether the slot's last attempt ended unseen.
func (r *slotResult) endUnseen() bool {
	return len(r.Ledger) > 0 && r.Ledger[len(r.Ledger)-1].EndUnseen
}

// setupClass is the declared setup class a failed attempt's stderr (or
// its diagnosis) matches, or "".
func setupClass(pats []namedPattern, res *process.Result) string {
	text := append(append([]byte{}, res.StderrTail...), "\n"+res.Message...)
	for _, p := range pats {
		if p.re.Match(text) {
			return p.class
		}
	}
	return ""
}

// slotOutcome is the node's success: the slot's outcome is its last
// attempt's.
func slotOutcome(slot string, h *decision.SlotHistory) (*Outcome, error) {
	last := h.Last()
	r := slotResult{Slot: slot, State: last.State, Attempts: len(h.Attempts), PeakGPUMiB: last.PeakGPUMiB,
		Class: last.Class, SetupClass: last.SetupClass, Message: last.Message}
	for _, a := range h.Attempts {
		r.Ledger = append(r.Ledger, slotAttempt{Attempt: a.Attempt, State: a.State, Class: a.Class, SetupClass: a.SetupClass,
			Charged: a.Charged, Replacement: a.Replacement, Started: a.Started, Ended: a.Ended, EndUnseen: a.EndUnseen, PeakGPUMiB: a.PeakGPUMiB,
			Simulated: a.Simulated})
		r.Simulated = r.Simulated || a.Simulated
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return &Outcome{Result: b}, nil
}
