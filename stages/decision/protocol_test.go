package decision

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSeedProtocolPlansFortyEightSlots(t *testing.T) {
	p, err := ReadProtocol("testdata/seed_protocol.json")
	require.NoError(t, err)
	assert.Equal(t, 36864.0, p.GuardMiB())
	assert.Equal(t, ResourceCap{GPUsPerAllocation: 2, ConcurrentAllocations: 4, InitialAllocations: 48, MaxRepairAllocations: 8, WallMinutesPerAllocation: 40, ProcessTimeoutSeconds: 1800}, p.ResourceCap)

	slots := p.Slots()
	require.Len(t, slots, 48)
	roles := map[string]int{}
	seen := map[string]bool{}
	for _, s := range slots {
		roles[s.Role]++
		seen[s.ID] = true
		// The protocol's slot ids name the seed each runs with.
		assert.True(t, strings.HasSuffix(s.ID, "-s"+strconv.Itoa(s.Seed)), "%s runs seed %d", s.ID, s.Seed)
		assert.True(t, strings.HasPrefix(s.ID, "decision-"+s.CandidateID+"-"), s.ID)
	}
	assert.Equal(t, map[string]int{RoleScreen: 12, RoleEvaluation: 36}, roles)
	assert.Len(t, seen, 48)

	first := slots[0]
	assert.Equal(t, Slot{ID: "decision-qwen25_3b-gsm8k-shape1024-n4-steps5-c2-s141", CaseID: "qwen25_3b-gsm8k-shape1024-n4-steps5",
		CandidateID: "qwen25_3b-gsm8k-shape1024-n4-steps5-c2", Role: RoleScreen, Seed: 141, ModelFamily: "qwen25_3b", Dataset: "gsm8k",
		ActorMicroBatch: 8, Reservation: 0.6, Collection: first.Collection}, first)
}

// The collection order is the one the Python of docs/decision.md computes
// (testdata/seed_collection_order.txt was written by it).
func TestCollectionOrderMatchesTheDocumentedAlgorithm(t *testing.T) {
	p, err := ReadProtocol("testdata/seed_protocol.json")
	require.NoError(t, err)
	data, err := os.ReadFile("testdata/seed_collection_order.txt")
	require.NoError(t, err)
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if !strings.HasPrefix(l, "#") {
			want = append(want, l)
		}
	}
	var got []string
	for i, s := range p.CollectionOrder() {
		got = append(got, s.ID)
		assert.Equal(t, i, s.Collection)
	}
	assert.Equal(t, want, got)

	// Another seed, another order; the same seed, the same order.
	assert.NotEqual(t, Permutation(48, 1), Permutation(48, 2))
	assert.Equal(t, Permutation(48, 7), Permutation(48, 7))
	assert.ElementsMatch(t, Permutation(48, 1), Permutation(48, 2))
}

func TestProtocolErrorsSayWhere(t *testing.T) {
	seed, err := os.ReadFile("testdata/seed_protocol.json")
	require.NoError(t, err)
	text := string(seed)
	for _, tc := range []struct {
		name, from, to string
		want           []string
	}{
		{"syntax", `"screen_seed": 141,`, `"screen_seed": 141,,`, []string{"p.json:", "not valid JSON"}},
		{"a string for a number", `"actor_micro_batch": 8,`, `"actor_micro_batch": "8",`, []string{"p.json:15:", "a string where a whole number is expected"}},
		{"unknown field", `"screen_seed": 141,`, `"screen_seed": 141, "screen_sed": 1,`, []string{"screen_sed: unknown field"}},
		{"query order", `"query_order": [
        "qwen25_3b-gsm8k-shape1024-n4-steps5-c3",`, `"query_order": [
        "qwen25_3b-gsm8k-shape1024-n4-steps5-c9",`, []string{"cases[0].query_order[0]: \"qwen25_3b-gsm8k-shape1024-n4-steps5-c9\" is not a candidate", "leaves out qwen25_3b-gsm8k-shape1024-n4-steps5-c3"}},
		{"duplicate key", `"screen_seed": 141,`, `"screen_seed": 141, "screen_seed": 142,`, []string{"screen_seed is given twice"}},
		// encoding/json would take a field named in another letter case
		// for the field (the later of two); other readers would not.
		{"field in another case", `"screen_seed": 141,`, `"Screen_Seed": 141,`, []string{"p.json:", "Screen_Seed: unknown field: field names are matched exactly"}},
		{"field in two cases", `"screen_seed": 141,`, `"screen_seed": 141, "SCREEN_SEED": 142,`, []string{"SCREEN_SEED: unknown field"}},
		{"nested field in another case", `"observed_state": "within_margin"`, `"Observed_State": "above_margin"`, []string{".Observed_State: unknown field"}},
		{"unknown rule", `"direct_screen"`, `"direct_scren"`, []string{"rules[2]: \"direct_scren\" is not a decision rule"}},
		{"negative seed", `"collection_order_seed": 20260916`, `"collection_order_seed": -1`, []string{"collection_order_seed: the number -1 where a whole number, 0 or more is expected"}},
		{"planned count", `"planned_processes": 48,`, `"planned_processes": 47,`, []string{"planned_processes: says 47, but the cases list 48 slots"}},
		{"slot twice", `"decision-qwen25_3b-gsm8k-shape1024-n4-steps5-c2-s142"`, `"decision-qwen25_3b-gsm8k-shape1024-n4-steps5-c2-s141"`, []string{"cases[0].candidates[0].slot_ids.evaluation[0]: slot \"decision-qwen25_3b-gsm8k-shape1024-n4-steps5-c2-s141\" is also cases[0].candidates[0].slot_ids.screen[0]"}},
		{"bad peak", `"max_completed_run_peak_mib": "33108.0"`, `"max_completed_run_peak_mib": "lots"`, []string{"a peak in MiB must be a number"}},
		{"peak with a sign", `"max_completed_run_peak_mib": "33108.0"`, `"max_completed_run_peak_mib": "+33108"`, []string{"p.json:65:", "donors[\"qwen25_3b-gsm8k-shape1024-n4-steps5-c2\"].max_completed_run_peak_mib: a peak in MiB must be a number", `got "+33108"`}},
		{"peak with a blank", `"max_completed_run_peak_mib": "33108.0"`, `"max_completed_run_peak_mib": " 33108"`, []string{"max_completed_run_peak_mib: a peak in MiB must be a number"}},
		{"version", `"decision-1.0"`, `"decision-2.0"`, []string{"p.json:2:", "\"decision-2.0\" is not a version cairn knows"}},
		{"attempt twice", `"attempt-02cd07da6caa1a64",
            "attempt-a1aa42155011745d",`, `"attempt-02cd07da6caa1a64",
            "attempt-02cd07da6caa1a64",`, []string{".recorded_attempt_ids[1]: attempt \"attempt-02cd07da6caa1a64\" is given twice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, text, tc.from)
			_, err := ParseProtocol("p.json", []byte(strings.Replace(text, tc.from, tc.to, 1)))
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			var es Errors
			if assert.ErrorAs(t, err, &es) {
				assert.NotZero(t, es[0].Line, "%s has a position", es[0])
			}
		})
	}
	_, err = ParseProtocol("p.json", append([]byte("\ufeff"), seed...))
	assert.ErrorContains(t, err, "p.json:1:1: starts with a UTF-8 byte-order mark")
	_, err = ParseProtocol("p.json", []byte("{\"protocol_version\": \"decision-1.0\xff\"}"))
	assert.ErrorContains(t, err, "p.json:1:35: a byte that is not UTF-8")
	_, err = ParseProtocol("p.json", []byte(`[1]`))
	assert.ErrorContains(t, err, "p.json:1:1: a protocol is a JSON object")
	_, err = ParseProtocol("p.json", []byte(`{"protocol_version": "decision-1.0"`))
	assert.ErrorContains(t, err, "ends in the middle")
}

// The donors and their recorded attempts are counted into the replay's
// cold_start_charged: a case without donors, a donor without its list of
// attempts or with a null one is refused, not read as none.
func TestProtocolDonorFieldsAreRequired(t *testing.T) {
	seed, err := os.ReadFile("testdata/seed_protocol.json")
	require.NoError(t, err)
	edit := func(f func(c0 map[string]any, donor map[string]any)) error {
		var doc map[string]any
		require.NoError(t, json.Unmarshal(seed, &doc))
		c0 := doc["cases"].([]any)[0].(map[string]any)
		var donor map[string]any
		for _, d := range c0["donors"].(map[string]any) {
			donor = d.(map[string]any)
			break
		}
		f(c0, donor)
		b, err := json.MarshalIndent(doc, "", "  ")
		require.NoError(t, err)
		_, err = ParseProtocol("p.json", b)
		return err
	}
	require.NoError(t, edit(func(map[string]any, map[string]any) {}))
	assert.ErrorContains(t, edit(func(c0, _ map[string]any) { delete(c0, "donors") }), "cases[0]: donors is missing")
	assert.ErrorContains(t, edit(func(c0, _ map[string]any) { c0["donors"] = nil }), "cases[0].donors: is null")
	assert.ErrorContains(t, edit(func(_, d map[string]any) { delete(d, "recorded_attempt_ids") }), "recorded_attempt_ids is missing (give [] for a donor with none)")
	assert.ErrorContains(t, edit(func(_, d map[string]any) { d["recorded_attempt_ids"] = nil }), ".recorded_attempt_ids: is null")
	assert.ErrorContains(t, edit(func(_, d map[string]any) { d["recorded_attempt_ids"] = []any{""} }), ".recorded_attempt_ids[0]: an attempt id must not be empty")
	require.NoError(t, edit(func(c0, d map[string]any) { d["recorded_attempt_ids"] = []any{} }), "[] is a donor with no recorded attempt")
	require.NoError(t, edit(func(c0, _ map[string]any) { c0["donors"] = map[string]any{} }), "{} is a case with no donor")
}

// The files a protocol pins are named by their paths inside its folder:
// an absolute path, or one that leaves the folder, is refused at its key
// (it would read and hash a file the protocol's folder does not hold).
func TestProtocolPinsOnlyFilesInItsFolder(t *testing.T) {
	seed, err := os.ReadFile("testdata/seed_protocol.json")
	require.NoError(t, err)
	text := strings.NewReplacer(
		`"benchmark/configuration_results.csv":`, `"/etc/passwd":`,
		`"benchmark/attempts.csv":`, `"../x":`,
		`"data/gsm8k/train.parquet":`, `"data/../../gsm8k/train.parquet":`,
	).Replace(string(seed))
	_, err = ParseProtocol("p.json", []byte(text))
	require.Error(t, err)
	assert.Equal(t, `p.json:419:5: source_files_sha256["/etc/passwd"]: is an absolute path: a pinned file is named by its path inside the protocol's folder, relative to it
p.json:420:5: source_files_sha256["../x"]: leaves the protocol's folder: a pinned file is named by its path inside the protocol's folder, relative to it
p.json:424:5: data_files_sha256["data/../../gsm8k/train.parquet"]: leaves the protocol's folder: a pinned file is named by its path inside the protocol's folder, relative to it`, err.Error())

	// Inside the folder, after cleaning: accepted.
	_, err = ParseProtocol("p.json", []byte(strings.Replace(string(seed), `"benchmark/attempts.csv":`, `"benchmark/../benchmark/attempts.csv":`, 1)))
	require.NoError(t, err)
}

// An attempt is recorded under one donor: the same attempt id under two
// donors, of one case or of two, would be counted twice in
// cold_start_charged, so it is refused naming both places, as an id
// given twice in one donor's list is.
func TestProtocolAttemptIsOneDonors(t *testing.T) {
	seed, err := os.ReadFile("testdata/seed_protocol.json")
	require.NoError(t, err)
	// Line 77: the first attempt of case 0's c3 donor; line 159: that of
	// case 1's c2 donor. Both become case 0's c2 donor's first attempt.
	text := strings.NewReplacer(
		`"attempt-76d15668ac349594"`, `"attempt-02cd07da6caa1a64"`,
		`"attempt-09c61cb7b6e86735"`, `"attempt-02cd07da6caa1a64"`,
	).Replace(string(seed))
	_, err = ParseProtocol("p.json", []byte(text))
	require.Error(t, err)
	also := `attempt "attempt-02cd07da6caa1a64" is also cases[0].donors["qwen25_3b-gsm8k-shape1024-n4-steps5-c2"].recorded_attempt_ids[0]: an attempt is recorded under one donor, and counts once in cold_start_charged`
	assert.Equal(t, `p.json:77:13: cases[0].donors["qwen25_3b-gsm8k-shape1024-n4-steps5-c3"].recorded_attempt_ids[0]: `+also+`
p.json:159:13: cases[1].donors["qwen25_3b-math-shape1024-n4-steps5-c2"].recorded_attempt_ids[0]: `+also, err.Error())
}

// Each evaluation seed names a distinct run of every candidate, and the
// truth is formed by the evaluation seeds only: a seed listed twice, or
// the screen's seed among them (an evaluation slot that reruns the
// screen's process), is refused. A guard larger than the memory limit
// is odd, but the protocol allows it.
func TestProtocolEvaluationSeedsAreDistinctRuns(t *testing.T) {
	seed, err := os.ReadFile("testdata/seed_protocol.json")
	require.NoError(t, err)
	const seeds = "\"evaluation_seeds\": [\n    142,\n    143,\n    144\n  ]"
	require.Contains(t, string(seed), seeds)
	for _, tc := range []struct{ to, want string }{
		{"\"evaluation_seeds\": [\n    142,\n    142,\n    144\n  ]", `p.json:379:5: evaluation_seeds[1]: seed 142 is also evaluation_seeds[0]: each evaluation seed names a distinct run of every candidate; give distinct seeds`},
		{"\"evaluation_seeds\": [\n    142,\n    143,\n    141\n  ]", `p.json:380:5: evaluation_seeds[2]: seed 141 is the screen_seed: an evaluation slot with it would rerun the candidate's screen, and the truth, which only the evaluation seeds form, would rest on the screen's run; give a seed other than screen_seed`},
	} {
		_, err = ParseProtocol("p.json", []byte(strings.Replace(string(seed), seeds, tc.to, 1)))
		if assert.Error(t, err, tc.to) {
			assert.Equal(t, tc.want, err.Error())
		}
	}
	_, err = ParseProtocol("p.json", []byte(strings.Replace(string(seed), `"additional_donor_guard_mib": 2048`, `"additional_donor_guard_mib": 40000`, 1)))
	assert.NoError(t, err, "a guard above the limit approves no within-margin donor: odd, not contradictory")
}

// A file is pinned to one digest: the same file (after cleaning its path)
// pinned to two digests, in one field or two, is refused naming both
// (the later pin silently replaced the earlier one).
func TestProtocolPinsAFileToOneDigest(t *testing.T) {
	seed, err := os.ReadFile("testdata/seed_protocol.json")
	require.NoError(t, err)
	const data = "\"data_files_sha256\": {\n"
	require.Contains(t, string(seed), data)
	other := strings.Repeat("ab", 32)
	_, err = ParseProtocol("p.json", []byte(strings.Replace(string(seed), data, data+"    \"benchmark/./attempts.csv\": \""+other+"\",\n", 1)))
	require.Error(t, err)
	assert.Equal(t, `p.json:424:5: data_files_sha256["benchmark/./attempts.csv"]: pins benchmark/attempts.csv to sha256 `+other+`, but source_files_sha256["benchmark/attempts.csv"] pins it to sha256 397c8caaf0d3abe06587fd649c181fe71d5b8b5f5e24e0591cc7e56d38e275c1: a file has one digest`, err.Error())

	// Pinned twice to one digest: no contradiction, and one file.
	p, err := ParseProtocol("p.json", []byte(strings.Replace(string(seed), data, data+"    \"benchmark/./attempts.csv\": \"397C8CAAF0D3ABE06587FD649C181FE71D5B8B5F5E24E0591CC7E56D38E275C1\",\n", 1)))
	require.NoError(t, err)
	assert.Len(t, p.FrozenFiles(), 12)
}

func TestOutcomesFile(t *testing.T) {
	p, o := readSmall(t)
	assert.Equal(t, Outcome{State: WithinMargin, Attempts: 2}, o["alpha-c3-s141"])
	assert.Equal(t, Outcome{State: NotStarted}, o["beta-c1-s141"])
	assert.Equal(t, Outcome{State: Unresolved, Attempts: 1}, o.Of("beta-c2-s144"), "a slot missing from the file is unresolved")

	for _, tc := range []struct{ text, want string }{
		{`{"alpha-c1-s141": "within"}`, `o.json:1:19: slot "alpha-c1-s141": "within" is not an outcome (within_margin, above_margin, memory_failure, unresolved, not_started)`},
		{`{"alpha-c9-s141": "within_margin"}`, `o.json:1:2: slot "alpha-c9-s141": the protocol plans no slot`},
		{`{"alpha-c1-s141": {"state": "not_started", "attempts": 1}}`, "never started has no started attempts"},
		{`{"alpha-c1-s141": {"state": "unresolved", "attempts": 0}}`, "started at least once"},
		{`{"alpha-c1-s141": {"state": "unresolved", "tries": 2}}`, "unknown field"},
		// A field in another letter case is unknown, not the field:
		// encoding/json would take "State" for "state" (the later of
		// the two) and "ATTEMPTS" past the failure policy's count.
		{`{"alpha-c1-s141": {"state": "within_margin", "State": "above_margin"}}`, `o.json:1:46: ["alpha-c1-s141"].State: unknown field: field names are matched exactly`},
		{`{"alpha-c1-s141": {"state": "within_margin", "Attempts": 2}}`, `["alpha-c1-s141"].Attempts: unknown field`},
		{`{"alpha-c1-s141": {"state": "within_margin", "ATTEMPTS": 5}}`, `["alpha-c1-s141"].ATTEMPTS: unknown field`},
		{`{"alpha-c1-s141": {"STATE": "within_margin"}}`, `["alpha-c1-s141"].STATE: unknown field`},
		{`{"alpha-c1-s141": {"attempts": 2}}`, `o.json:1:19: slot "alpha-c1-s141": an outcome object is {"state": STATE, "attempts": N}: its "state" is missing (within_margin, above_margin, memory_failure, unresolved, not_started)`},
		{`{"alpha-c1-s141": 3}`, "a state string or"},
		{`{"alpha-c1-s141": null}`, `slot "alpha-c1-s141": an outcome is a state string or`},
		{`{"alpha-c1-s141": {"state": "unresolved", "attempts": 1.5}}`, `attempts is the number 1.5 where a whole number is expected`},
		{"{\n \"alpha-c1-s141\": \"unresolved\",\n \"alpha-c1-s141\": \"within_margin\"\n}", `o.json:3:2: ["alpha-c1-s141"] is given twice`},
		{`["alpha-c1-s141"]`, "JSON object mapping slot ids"},
	} {
		_, err := ParseOutcomes("o.json", []byte(tc.text), p)
		if assert.Error(t, err, tc.text) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
}

// Outcomes that break the failure policy are refused, each breach at its
// slot: more than one replacement in a slot, more replacements in all than
// resource_cap.max_repair_allocations (8 in the small protocol).
func TestOutcomesBreakingTheFailurePolicy(t *testing.T) {
	p, _ := readSmall(t)
	slots := p.Slots()
	ids := make([]string, len(slots))
	for i, s := range slots {
		ids[i] = s.ID
	}
	with := func(attempts map[string]int) string {
		var parts []string
		for _, id := range ids {
			if n, ok := attempts[id]; ok {
				parts = append(parts, fmt.Sprintf("\n  %q: {\"state\": \"within_margin\", \"attempts\": %d}", id, n))
			}
		}
		return "{" + strings.Join(parts, ",") + "\n}\n"
	}

	// Five attempts in one slot; a million in another.
	_, err := ParseOutcomes("o.json", []byte(with(map[string]int{ids[0]: 5, ids[1]: 1000000})), p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("o.json:2:3: slot %q: 5 started attempts, but the protocol's failure policy allows at most 2 (one unchanged replacement per slot)", ids[0]))
	assert.Contains(t, err.Error(), fmt.Sprintf("o.json:3:3: slot %q: 1000000 started attempts", ids[1]))

	// Eight replacements are the cap; the ninth, and all past it, are
	// refused at the slot that passes it, naming every replaced slot.
	eight, fourteen := map[string]int{}, map[string]int{}
	for i := 0; i < 14; i++ {
		if i < 8 {
			eight[ids[i]] = 2
		}
		fourteen[ids[i]] = 2
	}
	o, err := ParseOutcomes("o.json", []byte(with(eight)), p)
	require.NoError(t, err)
	assert.Len(t, o, 8)
	_, err = ParseOutcomes("o.json", []byte(with(fourteen)), p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("o.json:10:3: slot %q: its replacement passes the cap: the outcomes hold 14 replacements (slots %s), but the protocol's failure policy allows at most 8 in all (resource_cap.max_repair_allocations)", ids[8], strings.Join(ids[:14], ", ")))

	// The same check, over the outcomes a pipeline collected.
	bs := p.PolicyBreaches(Outcomes{ids[2]: {State: Unresolved, Attempts: 3}}, ids)
	require.Len(t, bs, 1)
	assert.Equal(t, ids[2], bs[0].Slot)
}
