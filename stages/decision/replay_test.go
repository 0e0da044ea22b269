package decision

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readSmall(t *testing.T) (*Protocol, Outcomes) {
	t.Helper()
	p, err := ReadProtocol("testdata/small_protocol.json")
	require.NoError(t, err)
	o, _, err := ReadOutcomes("testdata/small_outcomes.json", p)
	require.NoError(t, err)
	return p, o
}

// want is one hand-computed row of the small fixture's replay.
type want struct {
	decisions       string // letters in query order: A approve, R reject, - abstain
	approvals       int
	true_, err, wit Bounds
	cov             []float64 // nil: undefined
	charged, cold   int
	unavailable     int
	unresolved      int
}

// The small fixture, computed by hand.
//
// alpha (query order c2, c1, c3; guard 38912 − 2048 = 36864):
//   - c1: donor within at exactly 36864 MiB (the guard approves), screen
//     within, evaluations within ×3: truth within.
//   - c2: donor within without a peak (the guard abstains), screen a
//     memory failure, evaluations within, within, unresolved: truth open.
//   - c3: donor above margin, screen within after a replacement (2
//     attempts), evaluations above (2 attempts), within, within: truth not
//     within. Donor attempts 3 + 2 + 1 = 6.
//
// beta (query order c1, c2):
//   - c1: donor within at 36865 MiB (one above the guard: abstains),
//     screen never started (unavailable: acquisition stops, so c2's
//     within-margin screen is never used), evaluations within, memory
//     failure, not started: unresolved, but only "not within" is admissible.
//   - c2: donor memory failure, evaluations within, within, and the third
//     missing from the file (unresolved): truth open. Donor attempts 3.
//
// gamma: c1 has no donor (every rule abstains), its screen unresolved
// (abstain, charged 1), evaluations above ×3: truth not within; no
// candidate can be within margin, so coverage is undefined.
var smallWant = map[string]map[string][4]want{
	"alpha": {
		SourceCopy: {
			{"A A R", 2, Bounds{1, 2}, Bounds{0, 1}, Bounds{1, 2}, []float64{1, 1}, 0, 6, 0, 1},
			{"R A R", 1, Bounds{1, 1}, Bounds{0, 0}, Bounds{1, 2}, []float64{0.5, 1}, 1, 7, 0, 1},
			{"R A R", 1, Bounds{1, 1}, Bounds{0, 0}, Bounds{1, 2}, []float64{0.5, 1}, 2, 8, 0, 1},
			{"R A A", 2, Bounds{1, 1}, Bounds{1, 1}, Bounds{1, 2}, []float64{0.5, 1}, 4, 10, 0, 1},
		},
		HeadroomGuard: {
			{"- A R", 1, Bounds{1, 1}, Bounds{0, 0}, Bounds{1, 2}, []float64{0.5, 1}, 0, 6, 0, 1},
			{"R A R", 1, Bounds{1, 1}, Bounds{0, 0}, Bounds{1, 2}, []float64{0.5, 1}, 1, 7, 0, 1},
			{"R A R", 1, Bounds{1, 1}, Bounds{0, 0}, Bounds{1, 2}, []float64{0.5, 1}, 2, 8, 0, 1},
			{"R A A", 2, Bounds{1, 1}, Bounds{1, 1}, Bounds{1, 2}, []float64{0.5, 1}, 4, 10, 0, 1},
		},
		DirectScreen: {
			{"- - -", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{1, 2}, []float64{0, 0}, 0, 0, 0, 1},
			{"R - -", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{1, 2}, []float64{0, 0}, 1, 1, 0, 1},
			{"R A -", 1, Bounds{1, 1}, Bounds{0, 0}, Bounds{1, 2}, []float64{0.5, 1}, 2, 2, 0, 1},
			{"R A A", 2, Bounds{1, 1}, Bounds{1, 1}, Bounds{1, 2}, []float64{0.5, 1}, 4, 4, 0, 1},
		},
	},
	"beta": {
		SourceCopy: {
			{"A R", 1, Bounds{0, 0}, Bounds{1, 1}, Bounds{0, 1}, []float64{0, 0}, 0, 3, 0, 2},
			{"- R", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 1}, []float64{0, 0}, 0, 3, 1, 2},
			{"- R", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 1}, []float64{0, 0}, 0, 3, 1, 2},
			{"- R", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 1}, []float64{0, 0}, 0, 3, 1, 2},
		},
		HeadroomGuard: {
			{"- R", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 1}, []float64{0, 0}, 0, 3, 0, 2},
			{"- R", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 1}, []float64{0, 0}, 0, 3, 1, 2},
			{"- R", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 1}, []float64{0, 0}, 0, 3, 1, 2},
			{"- R", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 1}, []float64{0, 0}, 0, 3, 1, 2},
		},
		DirectScreen: {
			{"- -", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 1}, []float64{0, 0}, 0, 0, 0, 2},
			{"- -", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 1}, []float64{0, 0}, 0, 0, 1, 2},
			{"- -", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 1}, []float64{0, 0}, 0, 0, 1, 2},
			{"- -", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 1}, []float64{0, 0}, 0, 0, 1, 2},
		},
	},
	"gamma": {
		SourceCopy: {
			{"-", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 0}, nil, 0, 0, 0, 0},
			{"-", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 0}, nil, 1, 1, 0, 0},
			{"-", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 0}, nil, 1, 1, 0, 0},
			{"-", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 0}, nil, 1, 1, 0, 0},
		},
		HeadroomGuard: {
			{"-", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 0}, nil, 0, 0, 0, 0},
			{"-", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 0}, nil, 1, 1, 0, 0},
			{"-", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 0}, nil, 1, 1, 0, 0},
			{"-", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 0}, nil, 1, 1, 0, 0},
		},
		DirectScreen: {
			{"-", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 0}, nil, 0, 0, 0, 0},
			{"-", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 0}, nil, 1, 1, 0, 0},
			{"-", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 0}, nil, 1, 1, 0, 0},
			{"-", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{0, 0}, nil, 1, 1, 0, 0},
		},
	},
	// The totals pool the candidates of every case: alpha's open c2 (approved
	// by source_copy at budget 0) and beta's open c2 (never approved) are
	// assigned jointly, so source_copy's coverage at budget 0 is
	// [1/(1+1), (1+1)/(1+1)] = [0.5, 1], not a sum of alpha's [1, 1] and
	// beta's [0, 0].
	TotalKey: {
		SourceCopy: {
			{"", 3, Bounds{1, 2}, Bounds{1, 2}, Bounds{1, 3}, []float64{0.5, 1}, 0, 9, 0, 3},
			{"", 1, Bounds{1, 1}, Bounds{0, 0}, Bounds{1, 3}, []float64{1.0 / 3, 1}, 2, 11, 1, 3},
			{"", 1, Bounds{1, 1}, Bounds{0, 0}, Bounds{1, 3}, []float64{1.0 / 3, 1}, 3, 12, 1, 3},
			{"", 2, Bounds{1, 1}, Bounds{1, 1}, Bounds{1, 3}, []float64{1.0 / 3, 1}, 5, 14, 1, 3},
		},
		HeadroomGuard: {
			{"", 1, Bounds{1, 1}, Bounds{0, 0}, Bounds{1, 3}, []float64{1.0 / 3, 1}, 0, 9, 0, 3},
			{"", 1, Bounds{1, 1}, Bounds{0, 0}, Bounds{1, 3}, []float64{1.0 / 3, 1}, 2, 11, 1, 3},
			{"", 1, Bounds{1, 1}, Bounds{0, 0}, Bounds{1, 3}, []float64{1.0 / 3, 1}, 3, 12, 1, 3},
			{"", 2, Bounds{1, 1}, Bounds{1, 1}, Bounds{1, 3}, []float64{1.0 / 3, 1}, 5, 14, 1, 3},
		},
		DirectScreen: {
			{"", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{1, 3}, []float64{0, 0}, 0, 0, 0, 3},
			{"", 0, Bounds{0, 0}, Bounds{0, 0}, Bounds{1, 3}, []float64{0, 0}, 2, 2, 1, 3},
			{"", 1, Bounds{1, 1}, Bounds{0, 0}, Bounds{1, 3}, []float64{1.0 / 3, 1}, 3, 3, 1, 3},
			{"", 2, Bounds{1, 1}, Bounds{1, 1}, Bounds{1, 3}, []float64{1.0 / 3, 1}, 5, 5, 1, 3},
		},
	},
}

func letters(m *Metrics) string {
	var out []string
	for _, id := range m.Order {
		out = append(out, decisionLetter[m.Decisions[id]])
	}
	return strings.Join(out, " ")
}

func TestReplayOfTheHandComputedFixture(t *testing.T) {
	p, o := readSmall(t)
	r := Replay(p, o)
	require.Len(t, r.Cases, 3, "no case is dropped")
	check := func(name string, byRule map[string]map[int]*Metrics) {
		for rule, rows := range smallWant[name] {
			for b, w := range rows {
				m := byRule[rule][b]
				where := name + " " + rule + " budget " + string(rune('0'+b))
				if name != TotalKey {
					assert.Equal(t, w.decisions, letters(m), "%s: decisions", where)
				}
				assert.Equal(t, w.approvals, m.Approvals, "%s: approvals", where)
				assert.Equal(t, w.true_, m.TrueApprovals, "%s: true approvals", where)
				assert.Equal(t, w.err, m.ApprovalErrors, "%s: approval errors", where)
				assert.Equal(t, w.wit, m.Within, "%s: within", where)
				if w.cov == nil {
					assert.False(t, m.Coverage.Defined, "%s: coverage is undefined", where)
				} else if assert.True(t, m.Coverage.Defined, "%s: coverage is defined", where) {
					assert.InDelta(t, w.cov[0], m.Coverage.Min, 1e-12, "%s: coverage min", where)
					assert.InDelta(t, w.cov[1], m.Coverage.Max, 1e-12, "%s: coverage max", where)
				}
				assert.Equal(t, w.charged, m.Charged, "%s: charged", where)
				assert.Equal(t, w.cold, m.ColdStartCharged, "%s: cold-start charged", where)
				assert.Equal(t, w.unavailable, m.Unavailable, "%s: unavailable", where)
				assert.Equal(t, w.unresolved, m.UnresolvedTruths, "%s: unresolved truths", where)
			}
		}
	}
	for _, c := range r.Cases {
		check(c.Case.ID, c.Metrics)
	}
	check(TotalKey, r.Total)

	// Research cost: every started evaluation attempt (alpha 9 + one
	// replacement, beta 5: one never started, one missing from the file and
	// so unresolved, gamma 3), never used by a rule.
	assert.Equal(t, 10, r.Cases[0].Metrics[SourceCopy][0].EvaluationAttempts)
	assert.Equal(t, 5, r.Cases[1].Metrics[SourceCopy][0].EvaluationAttempts)
	assert.Equal(t, 18, r.Total[DirectScreen][3].EvaluationAttempts)
	// beta's c1 is unresolved with a known memory failure.
	assert.Equal(t, 1, r.Cases[1].Metrics[HeadroomGuard][2].UnresolvedMemoryFailures)
}

func TestHeadroomGuardThreshold(t *testing.T) {
	p := &Protocol{MemoryLimitMiB: 38912, AdditionalDonorGuardMiB: 2048}
	require.Equal(t, 36864.0, p.GuardMiB())
	for _, tc := range []struct {
		donor      Donor
		copy_, grd Decision
	}{
		{Donor{ObservedState: WithinMargin, MaxCompletedPeak: Peak{MiB: 36864, Known: true}}, Approve, Approve},
		{Donor{ObservedState: WithinMargin, MaxCompletedPeak: Peak{MiB: 36864.5, Known: true}}, Approve, Abstain},
		{Donor{ObservedState: WithinMargin}, Approve, Abstain}, // no peak
		{Donor{ObservedState: AboveMargin, MaxCompletedPeak: Peak{MiB: 39570, Known: true}}, Reject, Reject},
		{Donor{ObservedState: MemoryFailure}, Reject, Reject},
		{Donor{ObservedState: Unresolved}, Abstain, Abstain},
	} {
		assert.Equal(t, tc.copy_, p.Prior(SourceCopy, tc.donor, true), "source_copy, %+v", tc.donor)
		assert.Equal(t, tc.grd, p.Prior(HeadroomGuard, tc.donor, true), "headroom_guard, %+v", tc.donor)
		assert.Equal(t, Abstain, p.Prior(DirectScreen, tc.donor, true), "direct_screen, %+v", tc.donor)
	}
	assert.Equal(t, Abstain, p.Prior(SourceCopy, Donor{}, false), "no donor")

	// The boundary is compared as the protocol writes the peak, not
	// after rounding it to a float64.
	for text, want := range map[string]Decision{
		`"36864"`: Approve, `"36864.0"`: Approve, `36864`: Approve, `"3.6864e4"`: Approve,
		`"36864.000000000000000001"`: Abstain, `"36864.0000001"`: Abstain, `"36863.999999999999999999"`: Approve,
	} {
		var peak Peak
		require.NoError(t, json.Unmarshal([]byte(text), &peak))
		require.True(t, peak.Known, text)
		assert.Equal(t, want, p.Prior(HeadroomGuard, Donor{ObservedState: WithinMargin, MaxCompletedPeak: peak}, true), "headroom_guard, peak %s", text)
	}

	// A peak of 0 is no measurement, as a slot's is: the guard abstains.
	for _, text := range []string{`"0"`, `"-0"`, `"0.0"`, `0`, `-0`, `"0e5"`, `""`, `null`} {
		var peak Peak
		require.NoError(t, json.Unmarshal([]byte(text), &peak))
		assert.False(t, peak.Known, text)
		assert.Empty(t, peak.bad, text)
		assert.Equal(t, Abstain, p.Prior(HeadroomGuard, Donor{ObservedState: WithinMargin, MaxCompletedPeak: peak}, true), "headroom_guard, peak %s", text)
	}
	// A string holds a JSON number and nothing else; a number too near 0
	// to be held is not 0, and one too large is no peak either.
	for _, text := range []string{`"1e-999"`, `1e-400`, `"-1e-400"`, `1e400`, `" 36864"`, `"36864 "`, `"+36864"`, `"36864."`, `".5"`, `"36_864"`, `"00036864"`, `"0x9000"`, `"NaN"`, `"Infinity"`, `"1e999"`, `"-5"`, `" "`, `-1`} {
		var peak Peak
		require.NoError(t, json.Unmarshal([]byte(text), &peak))
		assert.False(t, peak.Known, text)
		assert.Equal(t, text, peak.bad, text)
	}
}

// The closed form of the bounds equals the minimum and maximum over every
// joint assignment of the open truths, enumerated, on random replays of
// several cases.
func TestBoundsMatchEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		type cand struct {
			approved bool
			truth    int // 0 not within, 1 within, 2 open
		}
		var cands []cand
		var total counts
		for c := 0; c < 1+rng.IntN(3); c++ {
			var one counts
			for k := 0; k < rng.IntN(4); k++ {
				x := cand{approved: rng.IntN(2) == 0, truth: rng.IntN(3)}
				cands = append(cands, x)
				switch {
				case x.truth == 1:
					one.within++
					if x.approved {
						one.approvedWithin++
					}
				case x.truth == 2 && x.approved:
					one.approvedOpen++
				case x.truth == 2:
					one.otherOpen++
				case x.approved:
					one.approvedNotWithin++
				}
			}
			total.add(one)
		}
		m := &Metrics{counts: total}
		m.finish()

		var open []int
		for i, c := range cands {
			if c.truth == 2 {
				open = append(open, i)
			}
		}
		lo := [3]int{1 << 30, 1 << 30, 1 << 30}
		hi := [3]int{-1, -1, -1}
		covLo, covHi, covDefined := 2.0, -1.0, false
		for mask := 0; mask < 1<<len(open); mask++ {
			within := map[int]bool{}
			for i, c := range cands {
				within[i] = c.truth == 1
			}
			for bit, i := range open {
				within[i] = mask&(1<<bit) != 0
			}
			var ta, ae, w int
			for i, c := range cands {
				if within[i] {
					w++
				}
				if c.approved && within[i] {
					ta++
				}
				if c.approved && !within[i] {
					ae++
				}
			}
			for j, v := range []int{ta, ae, w} {
				lo[j], hi[j] = min(lo[j], v), max(hi[j], v)
			}
			if w > 0 {
				cov := float64(ta) / float64(w)
				covLo, covHi, covDefined = min(covLo, cov), max(covHi, cov), true
			}
		}
		assert.Equal(t, Bounds{lo[0], hi[0]}, m.TrueApprovals, "trial %d: true approvals", trial)
		assert.Equal(t, Bounds{lo[1], hi[1]}, m.ApprovalErrors, "trial %d: approval errors", trial)
		assert.Equal(t, Bounds{lo[2], hi[2]}, m.Within, "trial %d: within", trial)
		require.Equal(t, covDefined, m.Coverage.Defined, "trial %d: coverage defined", trial)
		if covDefined {
			assert.InDelta(t, covLo, m.Coverage.Min, 1e-12, "trial %d: coverage min", trial)
			assert.InDelta(t, covHi, m.Coverage.Max, 1e-12, "trial %d: coverage max", trial)
		}
	}
}

func TestReplayJSONShape(t *testing.T) {
	p, o := readSmall(t)
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(Replay(p, o).JSON(), &top))
	assert.ElementsMatch(t, []string{"inputs", "alpha", "beta", "gamma", "total"}, keysOf(top))
	got := map[string]map[string]map[string]map[string]any{}
	for k, v := range top {
		if k != InputsKey {
			var c map[string]map[string]map[string]any
			require.NoError(t, json.Unmarshal(v, &c), k)
			got[k] = c
		}
	}
	assert.ElementsMatch(t, []string{"0", "1", "2", "3"}, keysOf(got["alpha"][SourceCopy]))

	m := got["alpha"][SourceCopy]["1"]
	assert.Equal(t, map[string]any{"alpha-c1": "approve", "alpha-c2": "reject", "alpha-c3": "reject"}, m["decisions"])
	assert.Equal(t, 1.0, m["approvals"])
	assert.Equal(t, []any{1.0, 1.0}, m["true_approvals"], "a pair even when min = max")
	assert.Equal(t, []any{0.0, 0.0}, m["approval_errors"])
	assert.Equal(t, []any{1.0, 2.0}, m["within"])
	assert.Equal(t, []any{0.5, 1.0}, m["coverage"])
	assert.Equal(t, 1.0, m["charged"])
	assert.Equal(t, 0.0, m["unavailable"])
	assert.Equal(t, 1.0, m["unresolved_truths"])

	g := got["gamma"][DirectScreen]["0"]
	assert.Contains(t, g, "coverage")
	assert.Nil(t, g["coverage"], "no assignment has a candidate within margin")
	assert.NotContains(t, got[TotalKey][SourceCopy]["0"], "decisions", "decisions are per case")
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestReplayTSVAndTable(t *testing.T) {
	p, o := readSmall(t)
	r := Replay(p, o)
	lines := strings.Split(strings.TrimSpace(string(r.TSV())), "\n")
	require.Len(t, lines, 1+4*3*4, "a header, then cases and total × rules × budgets")
	header := strings.Split(lines[0], "\t")
	row := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if f[0] == "beta" && f[1] == SourceCopy && f[2] == "2" {
			for i, h := range header {
				row[h] = f[i]
			}
		}
	}
	assert.Equal(t, "1", row["unavailable"])
	assert.Equal(t, "beta-c1=abstain;beta-c2=reject", row["decisions"])
	assert.Equal(t, "0", row["within_min"])
	assert.Equal(t, "1", row["within_max"])

	var b strings.Builder
	require.NoError(t, r.WriteTable(&b))
	assert.Contains(t, b.String(), "alpha  source_copy     0       A A R")
	assert.Contains(t, b.String(), "0.333–1.000")
	assert.Contains(t, b.String(), "n/a")
}

// The replay names what it replayed: the protocol and outcomes files with
// the sha256 of their bytes, in replay.json and in the table's header, and
// what was checked of the files the protocol froze.
func TestReplayNamesItsInputs(t *testing.T) {
	p, o := readSmall(t)
	pb, err := os.ReadFile("testdata/small_protocol.json")
	require.NoError(t, err)
	ob, err := os.ReadFile("testdata/small_outcomes.json")
	require.NoError(t, err)
	psum, osum := sha256.Sum256(pb), sha256.Sum256(ob)
	_, in, err := ReadOutcomes("testdata/small_outcomes.json", p)
	require.NoError(t, err)
	assert.Equal(t, hex.EncodeToString(osum[:]), in.SHA256)

	r := Replay(p, o)
	r.Inputs.Outcomes = in
	var got struct {
		Inputs struct {
			Protocol, Outcomes struct{ File, SHA256 string }
			Frozen             struct {
				Matched, Absent []string
				Matrix          string
			} `json:"frozen_files"`
		}
	}
	require.NoError(t, json.Unmarshal(r.JSON(), &got))
	assert.Equal(t, "testdata/small_protocol.json", got.Inputs.Protocol.File)
	assert.Equal(t, hex.EncodeToString(psum[:]), got.Inputs.Protocol.SHA256)
	assert.Equal(t, "testdata/small_outcomes.json", got.Inputs.Outcomes.File)
	assert.Equal(t, hex.EncodeToString(osum[:]), got.Inputs.Outcomes.SHA256)
	assert.Equal(t, []string{}, got.Inputs.Frozen.Matched)

	var b strings.Builder
	require.NoError(t, r.WriteTable(&b))
	head := strings.SplitN(b.String(), "CASE", 2)[0]
	assert.Contains(t, head, "protocol  testdata/small_protocol.json  sha256 "+hex.EncodeToString(psum[:]))
	assert.Contains(t, head, "outcomes  testdata/small_outcomes.json  sha256 "+hex.EncodeToString(osum[:]))
	assert.Contains(t, head, "frozen files: 0 match the protocol's sha256; matrix_sha256 not checked (no matrix file given)")

	// One byte of a donor's peak changes the protocol's digest (and the
	// figures): a protocol expected at the frozen digest is refused.
	edited := strings.Replace(string(pb), `"36864.0"`, `"36865.0"`, 1)
	require.NotEqual(t, string(pb), edited, "the fixture has a donor at the guard")
	q, err := ParseProtocol("edited.json", []byte(edited))
	require.NoError(t, err)
	assert.NotEqual(t, r.Total[HeadroomGuard][0].Approvals, Replay(q, o).Total[HeadroomGuard][0].Approvals, "the edit changes a figure")
	require.NoError(t, p.CheckSHA256(strings.ToUpper(p.SHA256)), "either case")
	err = q.CheckSHA256(p.SHA256)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "edited.json: the protocol's sha256 is "+q.SHA256+", but "+p.SHA256+" is expected")
	assert.ErrorContains(t, p.CheckSHA256("abc"), "not 64 hex digits")
}

// The files the protocol froze are checked where they are present; an
// absent one is listed as not checked; the matrix file only when given.
func TestCheckFrozenFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"a.csv": "a\n", "data/b.parquet": "b\n", "run.py": "print(1)\n", "matrix.csv": "m\n"}
	sum := map[string]string{}
	for f, body := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644))
		s := sha256.Sum256([]byte(body))
		sum[f] = hex.EncodeToString(s[:])
	}
	p := &Protocol{
		SourceFilesSHA256:    map[string]string{"a.csv": strings.ToUpper(sum["a.csv"]), "gone.csv": sum["a.csv"]},
		DataFilesSHA256:      map[string]string{"data/b.parquet": sum["data/b.parquet"]},
		ImplementationSHA256: map[string]string{"run.py": sum["run.py"]},
		MatrixSHA256:         sum["matrix.csv"],
	}
	c, err := p.CheckFrozen(dir, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"a.csv", "data/b.parquet", "run.py"}, c.Matched)
	assert.Equal(t, []string{"gone.csv"}, c.Absent)
	assert.Equal(t, "", c.Matrix, "no matrix file given: not checked")

	c, err = p.CheckFrozen(dir, filepath.Join(dir, "matrix.csv"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "matrix.csv"), c.Matrix)

	// A changed byte in a present file, and a matrix file that differs,
	// are refused, each named with both digests.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.py"), []byte("print(2)\n"), 0o644))
	_, err = p.CheckFrozen(dir, filepath.Join(dir, "a.csv"))
	require.Error(t, err)
	changed := sha256.Sum256([]byte("print(2)\n"))
	assert.Contains(t, err.Error(), filepath.Join(dir, "run.py")+": the protocol's implementation_sha256 pins it to sha256 "+sum["run.py"]+", but the file's sha256 is "+hex.EncodeToString(changed[:]))
	assert.Contains(t, err.Error(), filepath.Join(dir, "a.csv")+": the protocol's matrix_sha256 is "+sum["matrix.csv"]+", but the file's sha256 is "+sum["a.csv"])
	_, err = p.CheckFrozen(dir, filepath.Join(dir, "nope.csv"))
	assert.ErrorContains(t, err, "nope.csv: the matrix file cannot be checked")
}

// The files the protocol pins are read only inside its folder: a path
// that is absolute or leaves the folder (which ParseProtocol refuses), and
// one that resolves through a symlink to a place outside it, is refused,
// never read and hashed. A symlink that stays inside the folder is
// followed.
func TestCheckFrozenStaysInTheProtocolsFolder(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.csv")
	require.NoError(t, os.WriteFile(secret, []byte("s\n"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "benchmark")))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "real"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "real", "b.csv"), []byte("b\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join("real", "b.csv"), filepath.Join(dir, "b.csv")))
	ss, bs := sha256.Sum256([]byte("s\n")), sha256.Sum256([]byte("b\n"))
	s, b := hex.EncodeToString(ss[:]), hex.EncodeToString(bs[:])
	rootReal, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	outsideReal, err := filepath.EvalSymlinks(outside)
	require.NoError(t, err)

	p := &Protocol{
		SourceFilesSHA256: map[string]string{"benchmark/secret.csv": s, "b.csv": b},
		DataFilesSHA256:   map[string]string{secret: s, "../" + filepath.Base(outside) + "/secret.csv": s},
	}
	c, err := p.CheckFrozen(dir, "")
	require.Error(t, err)
	assert.Equal(t, []string{"b.csv"}, c.Matched, "a symlink inside the folder is followed")
	assert.Equal(t, strings.Join([]string{
		"../" + filepath.Base(outside) + "/secret.csv: the protocol's data_files_sha256 pins it, but it is not a path inside the protocol's folder " + dir + " (it leaves the protocol's folder): not read; name a file by its path inside the protocol's folder",
		secret + ": the protocol's data_files_sha256 pins it, but it is not a path inside the protocol's folder " + dir + " (it is an absolute path): not read; name a file by its path inside the protocol's folder",
		filepath.Join(dir, "benchmark", "secret.csv") + ": the protocol's source_files_sha256 pins it, but it resolves through a symlink to " + filepath.Join(outsideReal, "secret.csv") + ", outside the protocol's folder " + rootReal + ": not read; point the link at a file inside the folder, or copy the file into it",
	}, "\n"), err.Error())
}

// Outcomes judged on simulated GPUs ("simulated": true) are marked
// wherever the replay's figures are shown: a line of the table's header,
// inputs.not_measured in the JSON, a last simulated column in the TSV
// (counting the row's case's simulated outcomes). Measured outcomes are
// not marked, and a slot that never started cannot be simulated.
func TestReplayMarksSimulatedOutcomes(t *testing.T) {
	p, o := readSmall(t)
	plain := Replay(p, o)
	assert.Zero(t, plain.Inputs.NotMeasured.Simulated)
	assert.Contains(t, string(plain.JSON()), `"simulated":0`)
	assert.NotContains(t, strings.SplitN(string(plain.TSV()), "\n", 2)[0], "simulated")
	var b strings.Builder
	require.NoError(t, plain.WriteTable(&b))
	assert.NotContains(t, b.String(), "SIMULATED")

	// Two of alpha's slots and gamma's screen, judged on simulated GPUs.
	text := `{"alpha-c1-s141": {"state": "within_margin", "simulated": true},
	 "alpha-c2-s141": {"state": "memory_failure", "attempts": 1, "simulated": true},
	 "gamma-c1-s141": {"state": "unresolved", "simulated": true}}`
	sim, err := ParseOutcomes("o.json", []byte(text), p)
	require.NoError(t, err)
	assert.Equal(t, Outcome{State: WithinMargin, Attempts: 1, Simulated: true}, sim["alpha-c1-s141"])
	for id, out := range sim {
		o[id] = out
	}
	r := Replay(p, o)
	require.NotNil(t, r.Inputs.NotMeasured)
	assert.Equal(t, 24, r.Inputs.NotMeasured.Planned)
	assert.Equal(t, 3, r.Inputs.NotMeasured.Simulated)

	assert.JSONEq(t, `{"planned": 24, "simulated": 3, "absent": ["beta-c2-s144"]}`, notMeasuredJSON(t, r))
	col, per := lastTSVColumn(t, r)
	assert.Equal(t, "simulated", col, "a last column, as in seed 000's table.tsv")
	assert.Equal(t, map[string]string{"alpha": "2", "beta": "0", "gamma": "1", TotalKey: "3"}, per)

	b.Reset()
	require.NoError(t, r.WriteTable(&b))
	head := strings.SplitN(b.String(), "CASE", 2)[0]
	assert.Contains(t, head, "SIMULATED: the outcomes of 3 of the 24 planned slots were judged on simulated GPUs (made-up peak memory): no figure resting on them is a measurement\n")

	// Every outcome of a slot that started simulated.
	for _, s := range p.Slots() {
		out := o.Of(s.ID)
		out.Simulated = out.State != NotStarted
		o[s.ID] = out
	}
	b.Reset()
	require.NoError(t, Replay(p, o).WriteTable(&b))
	assert.Contains(t, b.String(), "SIMULATED: the outcomes of 22 of the 24 planned slots were judged on simulated GPUs (made-up peak memory): no figure resting on them is a measurement\n", "the other 2 never started")

	_, err = ParseOutcomes("o.json", []byte(`{"alpha-c1-s141": {"state": "not_started", "attempts": 0, "simulated": true}}`), p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `o.json:1:19: slot "alpha-c1-s141": a slot that never started was judged on no GPU`)
}

// A planned slot the outcomes file leaves out is counted unresolved with
// one started attempt (docs/decision.md), which the file cannot give: the
// replay says so wherever its figures are shown — a line of the table's
// header naming the slots, inputs.not_measured.absent in the JSON, an
// absent column in the TSV (per case). A file that gives every slot has
// none of it.
func TestReplayMarksAbsentSlots(t *testing.T) {
	p, o := readSmall(t)
	r := Replay(p, o)
	assert.JSONEq(t, `{"planned": 24, "simulated": 0, "absent": ["beta-c2-s144"]}`, notMeasuredJSON(t, r))

	var b strings.Builder
	require.NoError(t, r.WriteTable(&b))
	head := strings.SplitN(b.String(), "CASE", 2)[0]
	assert.Contains(t, head, "absent: 1 of the 24 planned slots is not in the outcomes file, each counted unresolved with 1 started attempt (the file cannot say whether it started, or at what cost): beta-c2-s144\n")

	col, per := lastTSVColumn(t, r)
	assert.Equal(t, "absent", col)
	assert.Equal(t, map[string]string{"alpha": "0", "beta": "1", "gamma": "0", TotalKey: "1"}, per)

	// Many absent: the header names three and counts the rest.
	none := Replay(p, Outcomes{})
	b.Reset()
	require.NoError(t, none.WriteTable(&b))
	assert.Contains(t, b.String(), "absent: 24 of the 24 planned slots are not in the outcomes file, each counted unresolved with 1 started attempt (the file cannot say whether it started, or at what cost): alpha-c1-s141, alpha-c1-s142, alpha-c1-s143 and 21 more\n")
	assert.Len(t, none.Inputs.NotMeasured.Absent, 24, "the JSON names every one")

	// Every slot given: nothing to mark.
	o["beta-c2-s144"] = Outcome{State: Unresolved, Attempts: 1}
	full := Replay(p, o)
	assert.Nil(t, full.Inputs.NotMeasured)
	assert.NotContains(t, string(full.JSON()), NotMeasuredKey)
	assert.NotContains(t, string(full.TSV()), "absent")
	b.Reset()
	require.NoError(t, full.WriteTable(&b))
	assert.NotContains(t, b.String(), "absent:")
	assert.Equal(t, r.Total, full.Total, "the figures are those of the slot given as unresolved")
}

// notMeasuredJSON is inputs.not_measured of r's JSON.
func notMeasuredJSON(t *testing.T, r *Result) string {
	t.Helper()
	var got struct {
		Inputs map[string]json.RawMessage `json:"inputs"`
	}
	require.NoError(t, json.Unmarshal(r.JSON(), &got))
	return string(got.Inputs[NotMeasuredKey])
}

// lastTSVColumn is the name of r's TSV's last column and its value on
// each case's rows (and the total's).
func lastTSVColumn(t *testing.T, r *Result) (string, map[string]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(r.TSV())), "\n")
	header := strings.Split(lines[0], "\t")
	per := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		require.Len(t, f, len(header))
		per[f[0]] = f[len(f)-1]
	}
	return header[len(header)-1], per
}
