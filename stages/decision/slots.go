package decision

// Slot roles.
const (
	RoleScreen     = "screen"
	RoleEvaluation = "evaluation"
)

// Slot is one planned process: a run of the instrumented training job for
// one candidate with one seed.
type Slot struct {
	ID              string  `json:"slot_id"`
	CaseID          string  `json:"case_id"`
	CandidateID     string  `json:"candidate_id"`
	Role            string  `json:"role"` // RoleScreen or RoleEvaluation
	Seed            int     `json:"seed"`
	ModelFamily     string  `json:"model_family"`
	Dataset         string  `json:"dataset"`
	ActorMicroBatch int     `json:"actor_micro_batch"`
	Reservation     float64 `json:"reservation"`
	// Collection is the slot's place in the collection order, from 0.
	Collection int `json:"collection"`
}

// Slots returns every planned process in protocol order: cases as listed,
// their candidates as listed, each candidate's screen slot (screen_seed)
// and then its evaluation slots (evaluation_seeds, in order). Collection
// gives each its place in CollectionOrder.
func (p *Protocol) Slots() []Slot {
	var out []Slot
	for _, c := range p.Cases {
		for _, k := range c.Candidates {
			add := func(id, role string, seed int) {
				out = append(out, Slot{ID: id, CaseID: c.ID, CandidateID: k.ID, Role: role, Seed: seed,
					ModelFamily: c.ModelFamily, Dataset: c.Dataset, ActorMicroBatch: k.ActorMicroBatch, Reservation: k.Reservation})
			}
			for _, id := range k.SlotIDs.Screen {
				add(id, RoleScreen, p.ScreenSeed)
			}
			for i, id := range k.SlotIDs.Evaluation {
				seed := 0
				if i < len(p.EvaluationSeeds) {
					seed = p.EvaluationSeeds[i]
				}
				add(id, RoleEvaluation, seed)
			}
		}
	}
	perm := Permutation(len(out), p.CollectionOrderSeed)
	for pos, i := range perm {
		out[i].Collection = pos
	}
	return out
}

// CollectionOrder returns the planned processes in the order they are
// collected (started): the protocol order of Slots permuted by
// Permutation(len, collection_order_seed).
func (p *Protocol) CollectionOrder() []Slot {
	slots := p.Slots()
	out := make([]Slot, len(slots))
	for _, s := range slots {
		out[s.Collection] = s
	}
	return out
}

// Permutation returns a permutation of 0..n-1 determined by seed: a
// Fisher–Yates shuffle of the identity driven by SplitMix64 seeded with
// seed. For i from n-1 down to 1 it draws j uniformly from 0..i — draw
// x = next(); while x < 2^64 mod (i+1) draw again; j = x mod (i+1) — and
// swaps positions i and j. docs/decision.md spells it out in Python, so
// another implementation reproduces the order.
func Permutation(n int, seed uint64) []int {
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	rng := splitMix64{state: seed}
	for i := n - 1; i > 0; i-- {
		m := uint64(i + 1)
		reject := -m % m // 2^64 mod m
		x := rng.next()
		for x < reject {
			x = rng.next()
		}
		j := int(x % m)
		perm[i], perm[j] = perm[j], perm[i]
	}
	return perm
}

// splitMix64 is Steele, Lea and Flood's SplitMix64 generator (the seeding
// generator of xoshiro): small, fast, and easy to write again anywhere.
type splitMix64 struct{ state uint64 }

func (s *splitMix64) next() uint64 {
	s.state += 0x9e3779b97f4a7c15
	z := s.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
