package decision

import "slices"

// Decision is what a rule decides for a candidate.
type Decision string

// The decisions.
const (
	Approve Decision = "approve"
	Reject  Decision = "reject"
	Abstain Decision = "abstain"
)

// Truth is a candidate's label from its evaluation slots.
type Truth struct {
	// Resolved: every evaluation slot has an eligible outcome
	// (within_margin, above_margin or memory_failure).
	Resolved bool
	// Within: resolved, and every evaluation slot is within_margin.
	Within bool
	// CanBeWithin: the candidate is within margin under some admissible
	// assignment of its unresolved evaluation slots — true for a resolved
	// within-margin candidate, and for an unresolved one none of whose
	// eligible evaluation outcomes is above_margin or memory_failure.
	CanBeWithin bool
	// MemoryFailure: one of its evaluation slots is a memory_failure.
	MemoryFailure bool
}

// TruthOf labels candidate k from the outcomes of its evaluation slots.
func TruthOf(k *Candidate, o Outcomes) Truth {
	t := Truth{Resolved: true, Within: true, CanBeWithin: true}
	for _, id := range k.SlotIDs.Evaluation {
		s := o.Of(id).State
		if !s.eligible() {
			t.Resolved = false
			t.Within = false
			continue
		}
		if s != WithinMargin {
			t.Within = false
			t.CanBeWithin = false
		}
		if s == MemoryFailure {
			t.MemoryFailure = true
		}
	}
	return t
}

// Prior is the decision rule makes for a candidate from its donor alone
// (with no donor, every rule abstains).
func (p *Protocol) Prior(rule string, d Donor, hasDonor bool) Decision {
	if !hasDonor || rule == DirectScreen {
		return Abstain
	}
	switch d.ObservedState {
	case AboveMargin, MemoryFailure:
		return Reject
	case WithinMargin:
		if rule == HeadroomGuard && (!d.MaxCompletedPeak.Known || d.MaxCompletedPeak.Above(p.GuardMiB())) {
			return Abstain
		}
		return Approve
	}
	return Abstain
}

// screenDecision is what a charged designated screen's outcome decides.
func screenDecision(s State) Decision {
	switch s {
	case WithinMargin:
		return Approve
	case AboveMargin, MemoryFailure:
		return Reject
	}
	return Abstain
}

// counts are what the bounds are computed from: candidates by decision
// (approved or not) and by what their truth can be.
type counts struct {
	approvedWithin    int // approved, known within margin
	approvedNotWithin int // approved, admissibly only not within margin
	within            int // known within margin
	approvedOpen      int // approved, truth open (either way admissible)
	otherOpen         int // not approved, truth open
}

func (c *counts) add(o counts) {
	c.approvedWithin += o.approvedWithin
	c.approvedNotWithin += o.approvedNotWithin
	c.within += o.within
	c.approvedOpen += o.approvedOpen
	c.otherOpen += o.otherOpen
}

// Bounds is a [min, max] pair of counts.
type Bounds [2]int

// Range is a [min, max] pair of fractions; Defined is false when no
// admissible assignment makes it a number.
type Range struct {
	Min, Max float64
	Defined  bool
}

// Metrics are a replay's figures for one case (or the total over the
// cases) under one rule and one budget.
type Metrics struct {
	// Decisions by candidate id (per case only).
	Decisions map[string]Decision
	// Order is the case's candidates in query order (per case only).
	Order []string

	Approvals      int
	TrueApprovals  Bounds // approved and within margin
	ApprovalErrors Bounds // approved and not within margin
	Within         Bounds // candidates within margin
	Coverage       Range  // true approvals / candidates within margin
	// Charged counts every started attempt of each queried designated
	// screen, permitted replacements included.
	Charged int
	// ColdStartCharged adds the donors' recorded attempts the rule used.
	ColdStartCharged int
	// Unavailable counts designated screens that never started.
	Unavailable int
	// UnresolvedTruths counts candidates whose truth is unresolved, and
	// UnresolvedMemoryFailures those of them with a known memory failure.
	UnresolvedTruths         int
	UnresolvedMemoryFailures int
	// EvaluationAttempts is the research cost: the evaluation slots'
	// started attempts. No rule uses them.
	EvaluationAttempts int

	counts counts
}

// finish computes the bounds from the counts. With a of the approved
// known within margin, w known within, and x ≤ ua (approved) and y ≤ un
// (not approved) of the open truths assigned within margin, coverage is
// (a+x)/(w+x+y): it falls with y and does not fall with x (its derivative
// in x is (w+y−a)/(w+x+y)², and a ≤ w), so its maximum is at x=ua, y=0 and
// its minimum at x=0, y=un, among the assignments with a candidate within
// margin. replay_test.go checks this against enumeration.
func (m *Metrics) finish() {
	c := m.counts
	a, w, ua, un := c.approvedWithin, c.within, c.approvedOpen, c.otherOpen
	m.TrueApprovals = Bounds{a, a + ua}
	m.ApprovalErrors = Bounds{c.approvedNotWithin, c.approvedNotWithin + ua}
	m.Within = Bounds{w, w + ua + un}
	m.Coverage = Range{}
	if w+ua+un == 0 {
		return
	}
	m.Coverage.Defined = true
	if w+ua > 0 {
		m.Coverage.Max = float64(a+ua) / float64(w+ua)
	} // else only open truths of unapproved candidates can be within: 0
	if w+un > 0 {
		m.Coverage.Min = float64(a) / float64(w+un)
	} else {
		m.Coverage.Min = 1 // only approved open truths can be within
	}
}

// CaseResult is the replay of one case.
type CaseResult struct {
	Case   *Case
	Truths map[string]Truth
	// Simulated counts the case's slots whose outcome was judged on
	// simulated GPUs, Absent those the outcomes leave out.
	Simulated, Absent int
	// Metrics[rule][budget]
	Metrics map[string]map[int]*Metrics
}

// Result is a whole replay: per case and in total (the bounds of the
// total are over the joint assignment of every case's open truths).
type Result struct {
	Protocol *Protocol
	Cases    []*CaseResult
	Total    map[string]map[int]*Metrics
	// Inputs name the files replayed: the protocol's (set by Replay), the
	// outcomes' and the frozen files' check (set by the caller).
	Inputs Inputs
}

// Replay replays every rule and budget of p over the outcomes. It never
// drops a case: a case with unresolved truths or unavailable screens is
// reported with its bounds.
func Replay(p *Protocol, o Outcomes) *Result {
	r := &Result{Protocol: p, Total: map[string]map[int]*Metrics{},
		Inputs: Inputs{Protocol: Input{File: p.File, SHA256: p.SHA256}, Frozen: FrozenCheck{Matched: []string{}, Absent: []string{}},
			NotMeasured: notMeasured(p, o)}}
	for _, rule := range p.Rules {
		r.Total[rule] = map[int]*Metrics{}
		for _, b := range p.BudgetsPerCase {
			r.Total[rule][b] = &Metrics{}
		}
	}
	for ci := range p.Cases {
		c := &p.Cases[ci]
		cr := &CaseResult{Case: c, Truths: map[string]Truth{}, Metrics: map[string]map[int]*Metrics{}}
		evalAttempts := 0
		for ki := range c.Candidates {
			k := &c.Candidates[ki]
			cr.Truths[k.ID] = TruthOf(k, o)
			for _, id := range k.SlotIDs.Evaluation {
				evalAttempts += o.Of(id).Attempts
			}
			for _, id := range append(slices.Clone(k.SlotIDs.Screen), k.SlotIDs.Evaluation...) {
				if o.Of(id).Simulated {
					cr.Simulated++
				}
				if _, given := o[id]; !given {
					cr.Absent++
				}
			}
		}
		for _, rule := range p.Rules {
			cr.Metrics[rule] = map[int]*Metrics{}
			for _, b := range p.BudgetsPerCase {
				m := p.replayCase(c, cr.Truths, rule, b, o)
				m.EvaluationAttempts = evalAttempts
				cr.Metrics[rule][b] = m
				t := r.Total[rule][b]
				t.Approvals += m.Approvals
				t.Charged += m.Charged
				t.ColdStartCharged += m.ColdStartCharged
				t.Unavailable += m.Unavailable
				t.UnresolvedTruths += m.UnresolvedTruths
				t.UnresolvedMemoryFailures += m.UnresolvedMemoryFailures
				t.EvaluationAttempts += m.EvaluationAttempts
				t.counts.add(m.counts)
			}
		}
		r.Cases = append(r.Cases, cr)
	}
	for _, byBudget := range r.Total {
		for _, m := range byBudget {
			m.finish()
		}
	}
	return r
}

func (p *Protocol) replayCase(c *Case, truths map[string]Truth, rule string, budget int, o Outcomes) *Metrics {
	m := &Metrics{Decisions: map[string]Decision{}, Order: slices.Clone(c.QueryOrder)}
	for _, k := range c.Candidates {
		d, ok := c.Donors[k.ID]
		m.Decisions[k.ID] = p.Prior(rule, d, ok)
		if ok && rule != DirectScreen {
			m.ColdStartCharged += len(d.RecordedAttemptIDs)
		}
	}
	for i := 0; i < budget && i < len(c.QueryOrder); i++ {
		id := c.QueryOrder[i]
		_, k, _ := p.Candidate(id)
		out := o.Of(k.SlotIDs.Screen[0])
		if out.State == NotStarted {
			// Unavailable: abstain, charge nothing, stop acquiring.
			m.Decisions[id] = Abstain
			m.Unavailable++
			break
		}
		m.Charged += out.Attempts
		m.Decisions[id] = screenDecision(out.State)
	}
	m.ColdStartCharged += m.Charged
	for _, k := range c.Candidates {
		t := truths[k.ID]
		approved := m.Decisions[k.ID] == Approve
		if approved {
			m.Approvals++
		}
		if !t.Resolved {
			m.UnresolvedTruths++
			if t.MemoryFailure {
				m.UnresolvedMemoryFailures++
			}
		}
		switch {
		case t.Within:
			m.counts.within++
			if approved {
				m.counts.approvedWithin++
			}
		case !t.Resolved && t.CanBeWithin:
			if approved {
				m.counts.approvedOpen++
			} else {
				m.counts.otherOpen++
			}
		default: // not within margin, known or the only admissible truth
			if approved {
				m.counts.approvedNotWithin++
			}
		}
	}
	m.finish()
	return m
}
