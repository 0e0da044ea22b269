package decision

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/cairn-run/cairn/stages/jsonpos"
)

// State is the outcome of one planned process (a slot), or a donor's
// observed state.
type State string

// The outcomes of a slot.
const (
	// WithinMargin: completed, peak GPU memory at most memory_limit_mib.
	WithinMargin State = "within_margin"
	// AboveMargin: completed, peak above memory_limit_mib.
	AboveMargin State = "above_margin"
	// MemoryFailure: a diagnosed out-of-memory failure.
	MemoryFailure State = "memory_failure"
	// Unresolved: a timeout, a crash, anything else that started.
	Unresolved State = "unresolved"
	// NotStarted: planned, never started.
	NotStarted State = "not_started"
)

// States lists the outcomes in the order docs/decision.md gives them.
var States = []State{WithinMargin, AboveMargin, MemoryFailure, Unresolved, NotStarted}

func (s State) valid() bool {
	for _, k := range States {
		if s == k {
			return true
		}
	}
	return false
}

// eligible says whether the outcome can form a truth label.
func (s State) eligible() bool {
	return s == WithinMargin || s == AboveMargin || s == MemoryFailure
}

// Outcome is what became of one slot: its state and how many attempts of
// it started (a permitted replacement is a second attempt). Simulated
// marks a state judged on simulated GPUs: its peak memory was made up, so
// the state is not a measurement, and every figure resting on it says so.
type Outcome struct {
	State     State `json:"state" decision:"required"`
	Attempts  int   `json:"attempts"`
	Simulated bool  `json:"simulated,omitempty"`
}

// Outcomes maps slot ids to what became of them. A slot it does not hold
// is unresolved, with one started attempt charged (see Of).
type Outcomes map[string]Outcome

// Of returns the outcome of slot: a slot without one is unresolved.
func (o Outcomes) Of(slot string) Outcome {
	if out, ok := o[slot]; ok {
		return out
	}
	return Outcome{State: Unresolved, Attempts: 1}
}

// ReadOutcomes reads an outcomes file for protocol p; in is the file as
// the replay's output names it (its path and sha256).
func ReadOutcomes(file string, p *Protocol) (o Outcomes, in Input, err error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, Input{}, fmt.Errorf("cannot read the outcomes: %w", err)
	}
	o, err = ParseOutcomes(file, data, p)
	return o, InputOf(file, data), err
}

// ParseOutcomes reads an outcomes file: one JSON object mapping slot ids
// to a state ("within_margin", "above_margin", "memory_failure",
// "unresolved", "not_started") or to {"state": STATE, "attempts": N} for a
// slot that took more than one started attempt (with "simulated": true
// for a state judged on simulated GPUs). A plain state counts one
// started attempt (none for not_started). A slot the protocol does not
// plan is an error, as is an attempt count that contradicts the state, and
// attempts that break the protocol's failure policy (PolicyBreaches).
func ParseOutcomes(file string, data []byte, p *Protocol) (Outcomes, error) {
	src := readSource(file, data)
	if src.fatal {
		return nil, src.errs
	}
	if off := src.val[""]; data[off] != '{' {
		src.errorf(off, "an outcomes file is a JSON object mapping slot ids to outcomes")
		return nil, src.errs
	}
	doc, _ := src.document().(map[string]any)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		src.errorf(-1, "%s", strings.TrimPrefix(err.Error(), "json: "))
		return nil, src.errs
	}
	planned := map[string]bool{}
	for _, s := range p.Slots() {
		planned[s.ID] = true
	}
	out := Outcomes{}
	bad := func(path, id, format string, args ...any) {
		src.errorf(src.val[path], "slot %q: %s", id, fmt.Sprintf(format, args...))
	}
	for _, id := range sortedKeys(raw) {
		path := jsonpos.Member("", id)
		if !planned[id] {
			src.errorf(src.key[path], "slot %q: the protocol plans no slot of that id (its slot ids look like %q)", id, p.Slots()[0].ID)
			continue
		}
		v := bytes.TrimSpace(raw[id])
		var o Outcome
		if len(v) > 0 && v[0] == '{' {
			// Every field of the object that cannot be read as its
			// field is, each at its place: a null is no value (no
			// attempt count, not "not simulated").
			before := len(src.errs)
			src.checkValues(doc[id], reflect.TypeFor[Outcome](), path, element, nil)
			if len(src.errs) > before {
				continue
			}
			if err := json.Unmarshal(v, &o); err != nil {
				bad(path, id, "an outcome object is {\"state\": STATE, \"attempts\": N}: %s", strings.TrimPrefix(err.Error(), "json: "))
				continue
			}
			if !src.has(path + ".state") {
				bad(path, id, "an outcome object is {\"state\": STATE, \"attempts\": N}: its \"state\" is missing (%s)", stateList())
				continue
			}
			if !src.has(path + ".attempts") {
				o.Attempts = o.State.defaultAttempts()
			}
		} else if err := json.Unmarshal(v, &o.State); err != nil || string(v) == "null" {
			bad(path, id, "an outcome is a state string or {\"state\": STATE, \"attempts\": N}")
			continue
		} else {
			o.Attempts = o.State.defaultAttempts()
		}
		switch {
		case !o.State.valid():
			bad(path, id, "%q is not an outcome (%s)", o.State, stateList())
		case o.State == NotStarted && o.Simulated:
			bad(path, id, "a slot that never started was judged on no GPU, simulated or not: drop \"simulated\"")
		case o.State == NotStarted && o.Attempts != 0:
			bad(path, id, "a slot that never started has no started attempts; got %d", o.Attempts)
		case o.State != NotStarted && o.Attempts < 1:
			bad(path, id, "a %s slot started at least once; got %d attempts", o.State, o.Attempts)
		default:
			out[id] = o
		}
	}
	if len(src.errs) > 0 {
		return nil, src.sorted()
	}
	// The failure policy, each breach at its slot's key, counted in file
	// order.
	ids := sortedKeys(out)
	sort.SliceStable(ids, func(i, j int) bool { return src.key[jsonpos.Member("", ids[i])] < src.key[jsonpos.Member("", ids[j])] })
	for _, b := range p.PolicyBreaches(out, ids) {
		src.errorf(src.key[jsonpos.Member("", b.Slot)], "slot %q: %s", b.Slot, b.Msg)
	}
	if len(src.errs) > 0 {
		return nil, src.sorted()
	}
	return out, nil
}

// MaxReplacementsPerSlot is the failure policy's limit per slot: at most
// one unchanged replacement, so at most two started attempts.
const MaxReplacementsPerSlot = 1

// Breach is an outcome the protocol's failure policy forbids, at its slot.
type Breach struct {
	Slot string
	Msg  string
}

// PolicyBreaches lists what in o the protocol's failure policy forbids,
// counting the slots in order (the outcomes file's order, or the
// protocol's): a slot with more started attempts than one unchanged
// replacement allows, and every replacement past
// resource_cap.max_repair_allocations in all. Every attempt of such
// outcomes would be charged, so they are refused rather than replayed.
func (p *Protocol) PolicyBreaches(o Outcomes, order []string) []Breach {
	var out []Breach
	var replaced []string
	total := 0
	for _, id := range order {
		n := o[id].Attempts - 1 // replacements of the slot
		if n > MaxReplacementsPerSlot {
			out = append(out, Breach{id, fmt.Sprintf("%d started attempts, but the protocol's failure policy allows at most %d (one unchanged replacement per slot); outcomes that break the failure policy are not replayed", o[id].Attempts, 1+MaxReplacementsPerSlot)})
		}
		if n > 0 {
			replaced = append(replaced, id)
			total += n
		}
	}
	if max := p.ResourceCap.MaxRepairAllocations; total > max {
		// At the slot whose replacements pass the cap.
		seen := 0
		for _, id := range replaced {
			seen += o[id].Attempts - 1
			if seen > max {
				out = append(out, Breach{id, fmt.Sprintf("its replacement passes the cap: the outcomes hold %d replacements (slots %s), but the protocol's failure policy allows at most %d in all (resource_cap.max_repair_allocations); outcomes that break the failure policy are not replayed",
					total, strings.Join(replaced, ", "), max)})
				break
			}
		}
	}
	return out
}

func (s State) defaultAttempts() int {
	if s == NotStarted {
		return 0
	}
	return 1
}

func stateList() string {
	names := make([]string, len(States))
	for i, s := range States {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}
