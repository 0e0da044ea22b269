// Package decision is the frozen GPU-memory decision protocol of seed 003:
// its protocol file, the 48 planned processes (one screen and three
// evaluation slots per case and candidate) in their collection order, the
// outcomes of those processes, and the replay of the protocol's decision
// rules (source_copy, headroom_guard, direct_screen) over its budgets, with
// exact bounds where truths are unresolved. docs/decision.md describes it
// for users.
package decision

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/cairn-run/cairn/stages/jsonpos"
)

// ProtocolVersion is the protocol version this package implements.
const ProtocolVersion = "decision-1.0"

// Rule names.
const (
	SourceCopy    = "source_copy"
	HeadroomGuard = "headroom_guard"
	DirectScreen  = "direct_screen"
)

// KnownRules are the decision rules the replay implements, in the order
// docs/decision.md describes them.
var KnownRules = []string{SourceCopy, HeadroomGuard, DirectScreen}

// Protocol is a frozen decision protocol (decision_protocol.json). A
// field tagged decision:"required" here and in the types below is one
// the file must give; a null is refused in it, as in every other field
// but a donor's peak.
type Protocol struct {
	Version                 string            `json:"protocol_version" decision:"required"`
	FrozenAtUTC             string            `json:"frozen_at_utc"`
	Status                  string            `json:"status"`
	Objective               string            `json:"objective"`
	Cases                   []Case            `json:"cases" decision:"required"`
	ScreenSeed              int               `json:"screen_seed" decision:"required"`
	EvaluationSeeds         []int             `json:"evaluation_seeds" decision:"required"`
	PlannedProcesses        int               `json:"planned_processes"`
	TargetConfigurations    int               `json:"target_configurations"`
	ScreenProcesses         int               `json:"screen_processes"`
	HiddenEvalProcesses     int               `json:"hidden_evaluation_processes"`
	MemoryLimitMiB          float64           `json:"memory_limit_mib" decision:"required"`
	AdditionalDonorGuardMiB float64           `json:"additional_donor_guard_mib" decision:"required"`
	BudgetsPerCase          []int             `json:"budgets_per_case" decision:"required"`
	Rules                   []string          `json:"rules" decision:"required"`
	DecisionRule            string            `json:"decision_rule"`
	TargetTruth             string            `json:"target_truth"`
	CostScope               string            `json:"cost_scope"`
	Interpretation          string            `json:"interpretation"`
	MissingOutcomes         string            `json:"missing_outcomes"`
	FailurePolicy           string            `json:"failure_policy"`
	StoppingRule            string            `json:"stopping_rule"`
	ResourceCap             ResourceCap       `json:"resource_cap" decision:"required"`
	CollectionOrderSeed     uint64            `json:"collection_order_seed" decision:"required"`
	QueryOrderSeed          uint64            `json:"query_order_seed"`
	Instrumentation         string            `json:"instrumentation"`
	DataSelection           string            `json:"data_selection"`
	SourceFilesSHA256       map[string]string `json:"source_files_sha256"`
	DataFilesSHA256         map[string]string `json:"data_files_sha256"`
	MatrixSHA256            string            `json:"matrix_sha256"`
	ImplementationSHA256    map[string]string `json:"implementation_sha256"`

	// File is where the protocol was read from, and SHA256 the hex sha256
	// of its bytes.
	File   string `json:"-"`
	SHA256 string `json:"-"`
}

// ResourceCap is the protocol's limit on what its processes may use.
type ResourceCap struct {
	GPUsPerAllocation        int `json:"gpus_per_allocation" decision:"required"`
	ConcurrentAllocations    int `json:"concurrent_allocations" decision:"required"`
	InitialAllocations       int `json:"initial_allocations"`
	MaxRepairAllocations     int `json:"max_repair_allocations" decision:"required"`
	WallMinutesPerAllocation int `json:"wall_minutes_per_allocation" decision:"required"`
	ProcessTimeoutSeconds    int `json:"process_timeout_seconds" decision:"required"`
}

// Case is one changed configured case: a model family on a dataset, with
// its candidate configurations, the donor evidence for each, and the
// frozen order in which their screens may be queried.
type Case struct {
	ID          string           `json:"case_id" decision:"required"`
	ModelFamily string           `json:"model_family" decision:"required"`
	Dataset     string           `json:"dataset" decision:"required"`
	Candidates  []Candidate      `json:"candidates" decision:"required"`
	Donors      map[string]Donor `json:"donors" decision:"required"`
	QueryOrder  []string         `json:"query_order" decision:"required"`
}

// Candidate is one target configuration.
type Candidate struct {
	ID                 string  `json:"candidate_id" decision:"required"`
	ConfigurationLevel string  `json:"configuration_level"`
	ActorMicroBatch    int     `json:"actor_micro_batch" decision:"required"`
	Reservation        float64 `json:"reservation" decision:"required"`
	SlotIDs            SlotIDs `json:"slot_ids" decision:"required"`
}

// SlotIDs are a candidate's planned processes: its designated screen and
// its evaluation slots, one per evaluation seed, in seed order.
type SlotIDs struct {
	Screen     []string `json:"screen" decision:"required"`
	Evaluation []string `json:"evaluation" decision:"required"`
}

// Donor is the existing evidence for a candidate: the observed state of
// its donor configuration and the largest peak of its completed runs.
type Donor struct {
	ConfigurationID    string   `json:"configuration_id"`
	ObservedState      State    `json:"observed_state" decision:"required"`
	MaxCompletedPeak   Peak     `json:"max_completed_run_peak_mib"`
	RecordedAttemptIDs []string `json:"recorded_attempt_ids" decision:"required"`
}

// Peak is a peak memory in MiB, or none. The protocol writes it as a
// string ("33108.0", or "" when the donor has no completed run); a number
// or null is read too. A string holds a JSON number, nothing around it
// (" 36864", "+36864", "36864.", ".5" and "36_864" are refused). A peak
// of 0 ("0", "-0", "0.0") is no measurement, as a slot's peak of 0 MiB is
// (docs/decision.md): no peak. A number too near 0 for a float64
// ("1e-400") is not 0, and is refused, as one too large is.
type Peak struct {
	MiB   float64
	Known bool
	bad   string // what the file held, when it is not a peak
	// why says why a number bad holds cannot be held ("" for any other
	// bad value): 1e-400 is not 0, no peak, but a number too near 0.
	why string
	// exact is the value as written, when it is a decimal: the guard's
	// boundary is compared exactly, not after rounding to MiB's float64
	// ("36864.000000000000000001" is above 36864).
	exact *big.Rat
}

// Above says whether the peak is known and more than limit, compared
// exactly as the file writes it.
func (p Peak) Above(limit float64) bool {
	if !p.Known {
		return false
	}
	if p.exact != nil && !math.IsInf(limit, 0) && !math.IsNaN(limit) {
		return p.exact.Cmp(new(big.Rat).SetFloat64(limit)) > 0
	}
	return p.MiB > limit
}

// UnmarshalJSON implements json.Unmarshaler.
func (p *Peak) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*p = Peak{}
		return nil
	}
	text := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &text); err != nil {
			return err
		}
		if text == "" {
			*p = Peak{}
			return nil
		}
	}
	if !jsonpos.IsNumber(text) { // a peak written as a string holds a JSON number
		*p = Peak{bad: string(b)} // reported, at its place, by check
		return nil
	}
	if why, _ := floatProblem(text, 64); why != "" {
		*p = Peak{bad: string(b), why: why}
		return nil
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		*p = Peak{bad: string(b)} // reported, at its place, by check
		return nil
	}
	if v == 0 {
		*p = Peak{} // 0 MiB: no measurement
		return nil
	}
	*p = Peak{MiB: v, Known: true}
	if r, ok := new(big.Rat).SetString(text); ok {
		p.exact = r
	}
	return nil
}

// MarshalJSON implements json.Marshaler: a number, or null.
func (p Peak) MarshalJSON() ([]byte, error) {
	if !p.Known {
		return []byte("null"), nil
	}
	return json.Marshal(p.MiB)
}

// GuardMiB is headroom_guard's threshold: a within-margin donor is
// trusted only when its peak is at most this (memory_limit_mib −
// additional_donor_guard_mib: 36864 in the seed's protocol).
func (p *Protocol) GuardMiB() float64 { return p.MemoryLimitMiB - p.AdditionalDonorGuardMiB }

// Candidate returns the candidate with id, and its case.
func (p *Protocol) Candidate(id string) (*Case, *Candidate, bool) {
	for i := range p.Cases {
		c := &p.Cases[i]
		for j := range c.Candidates {
			if c.Candidates[j].ID == id {
				return c, &c.Candidates[j], true
			}
		}
	}
	return nil, nil, false
}

// ReadProtocol reads and checks a protocol file.
func ReadProtocol(file string) (*Protocol, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("cannot read the protocol: %w", err)
	}
	return ParseProtocol(file, data)
}

// ParseProtocol reads a protocol from data, named file in errors. Every
// problem is reported, each at its position with its path; the result is
// nil when there is any. A file that is not JSON is reported at the one
// place where it stops being JSON.
func ParseProtocol(file string, data []byte) (*Protocol, error) {
	src := readSource(file, data)
	if src.fatal {
		return nil, src.errs
	}
	if off, ok := src.val[""]; !ok || data[off] != '{' {
		src.errorf(0, "a protocol is a JSON object")
		return nil, src.errs
	}
	var p Protocol
	src.checkValues(src.document(), reflect.TypeOf(p), "", requiredField, protocolNull)
	src.decode(&p)
	p.File = file
	p.SHA256 = InputOf(file, data).SHA256
	p.check(src)
	if len(src.errs) > 0 {
		return nil, src.sorted()
	}
	return &p, nil
}

// protocolNull says what to give instead of a null where the general
// words would not say it ("" for them).
func protocolNull(path string) string {
	switch {
	case donorsPath.MatchString(path):
		return "give the case's donors, {} for none"
	case attemptsPath.MatchString(path):
		return "give the donor's recorded attempt ids, [] for none"
	}
	return ""
}

var (
	donorsPath   = regexp.MustCompile(`^cases\[\d+\]\.donors$`)
	attemptsPath = regexp.MustCompile(`^cases\[\d+\]\.donors(\.[A-Za-z_][A-Za-z0-9_]*|\[".*"\])\.recorded_attempt_ids$`)
)

// check reports what makes the protocol unusable: missing fields, ids
// given twice, a query order that is not a permutation of the case's
// candidates, counts that contradict the slots.
func (p *Protocol) check(src *source) {
	p.checkTop(src)
	p.checkBudgets(src)
	p.checkRules(src)
	p.checkResourceCap(src)
	t := &caseTally{caseIDs: map[string]bool{}, candIDs: map[string]string{}, slotIDs: map[string]string{}, attemptIDs: map[string]string{}}
	for ci := range p.Cases {
		p.checkCase(src, ci, t)
	}
	p.checkCounts(src, t)
	p.checkPins(src)
}

// checkPins checks the paths of the files the protocol pins: each a path
// inside the protocol's folder, relative to it (CheckFrozen reads them
// there, and nowhere else).
// A file is pinned to one digest: the same file (its path cleaned) pinned
// again to another, in one field or two, is refused naming both.
func (p *Protocol) checkPins(src *source) {
	type pin struct{ path, digest string }
	seen := map[string]pin{} // cleaned path -> the first pin of it
	for _, set := range p.pinSets() {
		for _, f := range sortedKeys(set.pins) {
			path := jsonpos.Member(set.field, f)
			if why := notInFolder(f); why != "" {
				src.atKey(path, "%s: a pinned file is named by its path inside the protocol's folder, relative to it", why)
				continue
			}
			d, clean := set.pins[f], filepath.Clean(f)
			if src.unread(path) {
				continue
			}
			if first, ok := seen[clean]; !ok {
				seen[clean] = pin{path, d}
			} else if !strings.EqualFold(first.digest, d) {
				src.atKey(path, "pins %s to sha256 %s, but %s pins it to sha256 %s: a file has one digest", clean, d, first.path, first.digest)
			}
		}
	}
}

// checkTop checks the protocol's own fields: present, of a version cairn
// knows, and not empty or negative where that makes no protocol.
func (p *Protocol) checkTop(src *source) {
	for _, f := range []string{"protocol_version", "cases", "screen_seed", "evaluation_seeds", "memory_limit_mib", "additional_donor_guard_mib", "budgets_per_case", "rules", "resource_cap", "collection_order_seed"} {
		if !src.has(f) {
			src.errorf(0, "%s is missing: a decision protocol must give it", f)
		}
	}
	if src.has("protocol_version") && p.Version != ProtocolVersion {
		src.at("protocol_version", "%q is not a version cairn knows: it replays %q", p.Version, ProtocolVersion)
	}
	if len(p.Cases) == 0 && src.has("cases") {
		src.at("cases", "a protocol needs at least one case")
	}
	if len(p.EvaluationSeeds) == 0 && src.has("evaluation_seeds") {
		src.at("evaluation_seeds", "a candidate's truth needs at least one evaluation seed")
	}
	p.checkSeeds(src)
	if src.has("memory_limit_mib") && p.MemoryLimitMiB <= 0 {
		src.at("memory_limit_mib", "must be more than 0")
	}
	if p.AdditionalDonorGuardMiB < 0 {
		src.at("additional_donor_guard_mib", "must be at least 0")
	}
}

// checkSeeds checks that each evaluation seed names a distinct run of
// every candidate: none given twice, and none the screen's seed (the
// truth is formed by the evaluation seeds only, never by a rerun of the
// screen).
func (p *Protocol) checkSeeds(src *source) {
	seen := map[int]int{} // seed -> its first index
	for i, seed := range p.EvaluationSeeds {
		path := fmt.Sprintf("evaluation_seeds[%d]", i)
		if src.unread(path) {
			continue
		}
		if first, dup := seen[seed]; dup {
			src.at(path, "seed %d is also evaluation_seeds[%d]: each evaluation seed names a distinct run of every candidate; give distinct seeds", seed, first)
			continue
		}
		seen[seed] = i
		if seed == p.ScreenSeed && src.has("screen_seed") && !src.unread("screen_seed") {
			src.at(path, "seed %d is the screen_seed: an evaluation slot with it would rerun the candidate's screen, and the truth, which only the evaluation seeds form, would rest on the screen's run; give a seed other than screen_seed", seed)
		}
	}
}

// checkBudgets checks budgets_per_case: at least one, none negative, none
// twice.
func (p *Protocol) checkBudgets(src *source) {
	seenBudget := map[int]bool{}
	for i, b := range p.BudgetsPerCase {
		path := fmt.Sprintf("budgets_per_case[%d]", i)
		if src.unread(path) {
			continue
		}
		if b < 0 {
			src.at(path, "a budget is a number of screens, at least 0")
		}
		if seenBudget[b] {
			src.at(path, "budget %d is listed twice", b)
		}
		seenBudget[b] = true
	}
	if len(p.BudgetsPerCase) == 0 && src.has("budgets_per_case") {
		src.at("budgets_per_case", "list at least one budget")
	}
}

// checkRules checks rules: at least one, each known, none twice.
func (p *Protocol) checkRules(src *source) {
	seenRule := map[string]bool{}
	for i, r := range p.Rules {
		path := fmt.Sprintf("rules[%d]", i)
		if src.unread(path) {
			continue
		}
		known := false
		for _, k := range KnownRules {
			known = known || k == r
		}
		if !known {
			src.at(path, "%q is not a decision rule cairn knows (%s)", r, strings.Join(KnownRules, ", "))
		}
		if seenRule[r] {
			src.at(path, "rule %q is listed twice", r)
		}
		seenRule[r] = true
	}
	if len(p.Rules) == 0 && src.has("rules") {
		src.at("rules", "list at least one rule")
	}
}

// checkResourceCap checks that resource_cap gives every limit, each more
// than 0 (the cap on replacements at least 0).
func (p *Protocol) checkResourceCap(src *source) {
	rc := p.ResourceCap
	for _, f := range []struct {
		name string
		v    int
	}{{"gpus_per_allocation", rc.GPUsPerAllocation}, {"concurrent_allocations", rc.ConcurrentAllocations}, {"wall_minutes_per_allocation", rc.WallMinutesPerAllocation}, {"process_timeout_seconds", rc.ProcessTimeoutSeconds}} {
		path := "resource_cap." + f.name
		if !src.has(path) {
			if src.has("resource_cap") {
				src.at("resource_cap", "%s is missing", f.name)
			}
		} else if f.v <= 0 {
			src.at(path, "must be more than 0")
		}
	}
	if !src.has("resource_cap.max_repair_allocations") {
		if src.has("resource_cap") {
			src.at("resource_cap", "max_repair_allocations is missing: the failure policy's cap on replacements in all")
		}
	} else if rc.MaxRepairAllocations < 0 {
		src.at("resource_cap.max_repair_allocations", "must be at least 0")
	}
}

// caseTally is what check gathers over the cases: the ids seen (for a
// candidate or slot, the path where it was, to name it when it comes
// again), and the counts of slots and candidates the totals must match.
type caseTally struct {
	caseIDs               map[string]bool
	candIDs               map[string]string // candidate id -> path
	slotIDs               map[string]string // slot id -> path
	attemptIDs            map[string]string // donor attempt id -> path
	screens, evals, cands int
}

// checkCase checks case ci: its fields and id, its candidates, its donors
// and its query order.
func (p *Protocol) checkCase(src *source, ci int, t *caseTally) {
	c := &p.Cases[ci]
	cp := fmt.Sprintf("cases[%d]", ci)
	for _, f := range []string{"case_id", "model_family", "dataset", "candidates", "donors", "query_order"} {
		if !src.has(cp + "." + f) {
			src.at(cp, "%s is missing", f)
		}
	}
	// The model family and dataset go into every slot's command.
	for _, f := range []struct{ name, v string }{{"case_id", c.ID}, {"model_family", c.ModelFamily}, {"dataset", c.Dataset}} {
		if f.v == "" && src.has(cp+"."+f.name) {
			src.at(cp+"."+f.name, "must not be empty")
		}
	}
	if hasAny(c.ID, "") {
		src.at(cp+".case_id", "%q must be an id without tabs, newlines or other control characters: it is a field of replay.tsv, whose fields and rows they separate", c.ID)
	}
	if t.caseIDs[c.ID] && c.ID != "" {
		src.at(cp+".case_id", "case %q is given twice", c.ID)
	}
	if c.ID == TotalKey || c.ID == InputsKey {
		src.at(cp+".case_id", "%q names a part of the replay's output (its totals, or the files it read): give the case another id", c.ID)
	}
	t.caseIDs[c.ID] = true
	inCase := map[string]bool{}
	// Whether every candidate id of the case is known: one that could
	// not be read makes no donor or query order "not a candidate".
	idsKnown := !src.unread(cp + ".candidates")
	for ki := range c.Candidates {
		k := &c.Candidates[ki]
		kp := fmt.Sprintf("%s.candidates[%d]", cp, ki)
		p.checkCandidate(src, k, kp, t)
		inCase[k.ID] = true
		idsKnown = idsKnown && !src.unread(kp) && !src.unread(kp+".candidate_id")
	}
	if !idsKnown {
		inCase = nil
	}
	checkDonors(src, c, cp, inCase, t)
	checkQueryOrder(src, c, cp, inCase)
}

// checkCandidate checks candidate k (at path kp): its fields, its id, and
// one screen slot and one evaluation slot per evaluation seed, each slot
// id given once in the whole protocol.
func (p *Protocol) checkCandidate(src *source, k *Candidate, kp string, t *caseTally) {
	t.cands++
	for _, f := range []string{"candidate_id", "actor_micro_batch", "reservation", "slot_ids"} {
		if !src.has(kp + "." + f) {
			src.at(kp, "%s is missing", f)
		}
	}
	if k.ID == "" && src.has(kp+".candidate_id") {
		src.at(kp+".candidate_id", "must not be empty")
	}
	if hasAny(k.ID, decisionSeparators) {
		src.at(kp+".candidate_id", "%q must be an id without tabs, newlines, other control characters, %q or %q: replay.tsv's decisions column writes ID=DECISION;ID=DECISION, and its fields and rows are separated by tabs and newlines", k.ID, decisionSeparators[:1], decisionSeparators[1:])
	}
	if prev, dup := t.candIDs[k.ID]; dup && k.ID != "" {
		src.at(kp+".candidate_id", "candidate %q is also %s", k.ID, prev)
	} else {
		t.candIDs[k.ID] = kp
	}
	if k.ActorMicroBatch <= 0 && src.has(kp+".actor_micro_batch") {
		src.at(kp+".actor_micro_batch", "must be a whole number more than 0")
	}
	if (k.Reservation <= 0 || k.Reservation > 1) && src.has(kp+".reservation") {
		src.at(kp+".reservation", "a reservation is a fraction of a GPU's memory, more than 0 and at most 1")
	}
	if len(k.SlotIDs.Screen) != 1 && src.has(kp+".slot_ids") {
		seed := ""
		if !src.unread("screen_seed") {
			seed = fmt.Sprintf(" (seed %d)", p.ScreenSeed)
		}
		src.at(kp+".slot_ids.screen", "a candidate has exactly one designated screen slot%s; got %d", seed, len(k.SlotIDs.Screen))
	}
	// (Not when the evaluation seeds could not be read: how many there
	// are is not known.)
	if len(k.SlotIDs.Evaluation) != len(p.EvaluationSeeds) && src.has(kp+".slot_ids") && !src.unread("evaluation_seeds") {
		src.at(kp+".slot_ids.evaluation", "a candidate has one evaluation slot per evaluation seed (%d); got %d", len(p.EvaluationSeeds), len(k.SlotIDs.Evaluation))
	}
	t.screens += len(k.SlotIDs.Screen)
	t.evals += len(k.SlotIDs.Evaluation)
	for _, r := range []struct {
		role string
		ids  []string
	}{{"screen", k.SlotIDs.Screen}, {"evaluation", k.SlotIDs.Evaluation}} {
		role := r.role
		for si, id := range r.ids {
			sp := fmt.Sprintf("%s.slot_ids.%s[%d]", kp, role, si)
			if id == "" {
				src.at(sp, "a slot id must not be empty")
			} else if prev, dup := t.slotIDs[id]; dup {
				src.at(sp, "slot %q is also %s", id, prev)
			} else {
				t.slotIDs[id] = sp
			}
		}
	}
}

// decisionSeparators are the characters replay.tsv's decisions column
// separates candidates and their decisions with (ID=DECISION;…).
const decisionSeparators = "=;"

// hasAny says whether id holds a control character (a tab or a newline,
// which separate replay.tsv's fields and rows) or one of also.
func hasAny(id, also string) bool {
	return strings.IndexFunc(id, func(r rune) bool { return unicode.IsControl(r) || strings.ContainsRune(also, r) }) >= 0
}

// checkDonors checks case c's donors (at path cp), in file order: each a
// candidate of the case (inCase; nil when not all are known), with a peak
// and an observed state that are valid, and recorded attempts given once
// in the whole protocol.
func checkDonors(src *source, c *Case, cp string, inCase map[string]bool, t *caseTally) {
	ids := sortedKeys(c.Donors)
	sort.SliceStable(ids, func(i, j int) bool {
		return src.key[jsonpos.Member(cp+".donors", ids[i])] < src.key[jsonpos.Member(cp+".donors", ids[j])]
	})
	for _, id := range ids {
		d := c.Donors[id]
		dp := jsonpos.Member(cp+".donors", id)
		if inCase != nil && !inCase[id] {
			src.at(dp, "%q is not a candidate of case %q", id, c.ID)
		}
		if d.MaxCompletedPeak.why != "" {
			src.at(dp+".max_completed_run_peak_mib", "%s", d.MaxCompletedPeak.why)
		} else if d.MaxCompletedPeak.bad != "" {
			src.at(dp+".max_completed_run_peak_mib", "a peak in MiB must be a number of at least 0 (a string holds one as JSON writes it, like \"33108.0\"), or \"\" for none; got %s", d.MaxCompletedPeak.bad)
		}
		if !src.has(dp + ".observed_state") {
			src.at(dp, "observed_state is missing")
		} else if !d.ObservedState.valid() || d.ObservedState == NotStarted {
			src.at(dp+".observed_state", "%q is not a donor state (within_margin, above_margin, memory_failure, unresolved)", d.ObservedState)
		}
		// The recorded attempts are counted into cold_start_charged: a
		// missing or null list (checkValues refuses a null), or an id
		// given twice (in one donor's list, or under two donors), would
		// change it.
		switch rp := dp + ".recorded_attempt_ids"; {
		case !src.has(rp):
			src.at(dp, "recorded_attempt_ids is missing (give [] for a donor with none)")
		default: // a null is refused by checkValues
			seen := map[string]bool{}
			for ai, a := range d.RecordedAttemptIDs {
				ap := fmt.Sprintf("%s[%d]", rp, ai)
				if a == "" {
					src.at(ap, "an attempt id must not be empty")
				} else if seen[a] {
					src.at(ap, "attempt %q is given twice", a)
				} else if other, dup := t.attemptIDs[a]; dup {
					src.at(ap, "attempt %q is also %s: an attempt is recorded under one donor, and counts once in cold_start_charged", a, other)
				} else {
					t.attemptIDs[a] = ap
				}
				seen[a] = true
			}
		}
	}
}

// checkQueryOrder checks that case c's query order (at path cp) lists
// every candidate of the case once, and nothing else (inCase, the ids of
// the case's candidates, is nil when one could not be read: then only
// that none is queried twice).
func checkQueryOrder(src *source, c *Case, cp string, inCase map[string]bool) {
	seen := map[string]bool{}
	for qi, id := range c.QueryOrder {
		qp := fmt.Sprintf("%s.query_order[%d]", cp, qi)
		if src.unread(qp) {
			continue
		}
		if inCase != nil && !inCase[id] {
			src.at(qp, "%q is not a candidate of case %q", id, c.ID)
		}
		if seen[id] {
			src.at(qp, "%q is queried twice", id)
		}
		seen[id] = true
	}
	if src.has(cp+".query_order") && inCase != nil && !src.badUnder(cp+".query_order") {
		var missing []string
		for _, k := range c.Candidates {
			if !seen[k.ID] {
				missing = append(missing, k.ID)
			}
		}
		if len(missing) > 0 {
			src.at(cp+".query_order", "the query order must list every candidate of the case once; it leaves out %s", strings.Join(missing, ", "))
		}
	}
}

// checkCounts checks the protocol's stated totals against what its cases
// list.
func (p *Protocol) checkCounts(src *source, t *caseTally) {
	if src.badUnder("cases") {
		return // the slots the cases list are not all known
	}
	for _, f := range []struct {
		name      string
		got, want int
		what      string
	}{
		{"planned_processes", p.PlannedProcesses, t.screens + t.evals, "slots (screen and evaluation)"},
		{"target_configurations", p.TargetConfigurations, t.cands, "candidates"},
		{"screen_processes", p.ScreenProcesses, t.screens, "screen slots"},
		{"hidden_evaluation_processes", p.HiddenEvalProcesses, t.evals, "evaluation slots"},
		{"resource_cap.initial_allocations", p.ResourceCap.InitialAllocations, t.screens + t.evals, "slots (one allocation each)"},
	} {
		if src.has(f.name) && f.got != f.want {
			src.at(f.name, "says %d, but the cases list %d %s", f.got, f.want, f.what)
		}
	}
}
