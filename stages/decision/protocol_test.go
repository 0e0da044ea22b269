package decision

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
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

// A null is no value: in a field the protocol requires it is refused as
// a missing field is, never read as 0 or "" (a guard of 0 approves other
// donors; a screen_seed of 0 runs every screen with --seed 0), and in an
// optional field too (leave the field out instead). Only where null is
// documented as meaningful (a donor's peak: none) is it read.
func TestProtocolNullIsRefused(t *testing.T) {
	seed, err := os.ReadFile("testdata/seed_protocol.json")
	require.NoError(t, err)
	text := string(seed)
	for _, tc := range []struct{ from, to, want string }{
		{`"additional_donor_guard_mib": 2048`, `"additional_donor_guard_mib": null`, `p.json:387:33: additional_donor_guard_mib: is null: give a number: the field is required`},
		{`"screen_seed": 141`, `"screen_seed": null`, `p.json:376:18: screen_seed: is null: give a whole number: the field is required`},
		{`"collection_order_seed": 20260916`, `"collection_order_seed": null`, `p.json:414:28: collection_order_seed: is null: give a whole number, 0 or more: the field is required`},
		{`"max_repair_allocations": 8`, `"max_repair_allocations": null`, `p.json:410:31: resource_cap.max_repair_allocations: is null: give a whole number: the field is required`},
		{"    142,\n    143,\n", "    142,\n    null,\n", `p.json:379:5: evaluation_seeds[1]: is null: give a whole number`},
		{`"model_family": "qwen25_3b"`, `"model_family": null`, `p.json:9:23: cases[0].model_family: is null: give a string: the field is required`},
		{`"dataset": "gsm8k"`, `"dataset": null`, `p.json:10:18: cases[0].dataset: is null: give a string: the field is required`},
		{`"configuration_level": "c2"`, `"configuration_level": null`, `p.json:14:34: cases[0].candidates[0].configuration_level: is null: give a string, or leave the field out`},
		{`"configuration_id": "cfg-338d9224eb9d2f3a"`, `"configuration_id": null`, `p.json:63:31: cases[0].donors["qwen25_3b-gsm8k-shape1024-n4-steps5-c2"].configuration_id: is null: give a string, or leave the field out`},
		{`"observed_state": "within_margin"`, `"observed_state": null`, `p.json:64:29: cases[0].donors["qwen25_3b-gsm8k-shape1024-n4-steps5-c2"].observed_state: is null: give a string: the field is required`},
		{`"protocol_version": "decision-1.0"`, `"protocol_version": null`, `p.json:2:23: protocol_version: is null: give a string: the field is required`},
		{`"actor_micro_batch": 8`, `"actor_micro_batch": null`, `p.json:15:32: cases[0].candidates[0].actor_micro_batch: is null: give a whole number: the field is required`},
		{`"reservation": 0.6`, `"reservation": null`, `p.json:16:26: cases[0].candidates[0].reservation: is null: give a number: the field is required`},
		{`"decision-qwen25_3b-gsm8k-shape1024-n4-steps5-c2-s141"`, `null`, `p.json:19:15: cases[0].candidates[0].slot_ids.screen[0]: is null: give a string`},
		{"    0,\n    1,", "    null,\n    1,", `p.json:389:5: budgets_per_case[0]: is null: give a whole number`},
		{`"source_copy",`, `null,`, `p.json:395:5: rules[0]: is null: give a string`},
		{`"benchmark/attempts.csv": "397c8caaf0d3abe06587fd649c181fe71d5b8b5f5e24e0591cc7e56d38e275c1"`, `"benchmark/attempts.csv": null`, `p.json:420:31: source_files_sha256["benchmark/attempts.csv"]: is null: give a string`},
		{`"matrix_sha256": "0c14400d24b03d89225b1f03bcdc68339f5080abb6168c1db1543db5a522bae6"`, `"matrix_sha256": null`, `p.json:429:20: matrix_sha256: is null: give a string, or leave the field out`},
		{`"frozen_at_utc": "2026-09-15T10:29:45.559138+00:00"`, `"frozen_at_utc": null`, `p.json:3:20: frozen_at_utc: is null: give a string, or leave the field out`},
		{`"planned_processes": 48`, `"planned_processes": null`, `p.json:382:24: planned_processes: is null: give a whole number, or leave the field out`},
	} {
		require.Contains(t, text, tc.from)
		_, err := ParseProtocol("p.json", []byte(strings.Replace(text, tc.from, tc.to, 1)))
		if assert.Error(t, err, tc.to) {
			assert.Equal(t, tc.want, err.Error())
		}
	}
	// A case's model family and dataset go into every slot's command
	// (--model-family, --dataset): left out or empty, they are refused
	// as a null is, not run as "".
	for _, tc := range []struct{ from, to, want string }{
		{`"model_family": "qwen25_3b",`, ``, `p.json:7:5: cases[0]: model_family is missing`},
		{`"dataset": "gsm8k",`, ``, `p.json:7:5: cases[0]: dataset is missing`},
		{`"model_family": "qwen25_3b"`, `"model_family": ""`, `p.json:9:23: cases[0].model_family: must not be empty`},
		{`"dataset": "gsm8k"`, `"dataset": ""`, `p.json:10:18: cases[0].dataset: must not be empty`},
	} {
		_, err := ParseProtocol("p.json", []byte(strings.Replace(text, tc.from, tc.to, 1)))
		if assert.Error(t, err, tc.from) {
			assert.Equal(t, tc.want, err.Error())
		}
	}
	// A donor's peak may be null: no peak, as docs/decision.md says.
	p, err := ParseProtocol("p.json", []byte(strings.Replace(text, `"max_completed_run_peak_mib": "33108.0"`, `"max_completed_run_peak_mib": null`, 1)))
	require.NoError(t, err)
	assert.False(t, p.Cases[0].Donors["qwen25_3b-gsm8k-shape1024-n4-steps5-c2"].MaxCompletedPeak.Known)
}

// Every problem of a file is reported, in file order, each at its value
// with its full path (array indices, object keys): two values of the
// wrong type, a version cairn does not know, an unknown field, numbers
// out of range; and no problem is made up from a value that could not be
// read (a string read as 0 is not also "must be more than 0").
func TestProtocolReportsEveryProblemAtItsPath(t *testing.T) {
	seed, err := os.ReadFile("testdata/seed_protocol.json")
	require.NoError(t, err)
	lines := strings.Split(string(seed), "\n")
	edit := func(line int, from, to string) {
		require.Contains(t, lines[line-1], from, "line %d", line)
		lines[line-1] = strings.Replace(lines[line-1], from, to, 1)
	}
	edit(2, `"decision-1.0"`, `"decision-2.0"`)
	edit(73, `"cfg-7a9a974958c57abc"`, `7`)
	edit(139, `16`, `"16"`)
	edit(376, `141,`, `141, "screen_sed": 1,`)
	edit(379, `143`, `"143"`)
	edit(386, `38912`, `1e400`)
	edit(391, `2`, `"2"`)
	edit(411, `40`, `99999999999999999999`)
	_, err = ParseProtocol("p.json", []byte(strings.Join(lines, "\n")))
	require.Error(t, err)
	assert.Equal(t, `p.json:2:23: protocol_version: "decision-2.0" is not a version cairn knows: it replays "decision-1.0"
p.json:73:31: cases[0].donors["qwen25_3b-gsm8k-shape1024-n4-steps5-c3"].configuration_id: the number 7 where a string is expected
p.json:139:32: cases[1].candidates[2].actor_micro_batch: a string where a whole number is expected
p.json:376:23: screen_sed: unknown field; the known fields are listed in docs/decision.md
p.json:379:5: evaluation_seeds[1]: a string where a whole number is expected
p.json:386:23: memory_limit_mib: the number 1e400 is too large to be held: a number is at most about 1.8e308 in size
p.json:391:5: budgets_per_case[2]: a string where a whole number is expected
p.json:411:36: resource_cap.wall_minutes_per_allocation: the number 99999999999999999999 is out of range: a whole number is from -9223372036854775808 to 9223372036854775807`, err.Error())
	var es Errors
	require.ErrorAs(t, err, &es)
	assert.Len(t, es, 8)

	// A value that cannot be read hides nothing else of its case: the
	// case's missing dataset is said too.
	one := strings.Replace(strings.Replace(string(seed), `"actor_micro_batch": 8,`, `"actor_micro_batch": "8",`, 1), `"dataset": "gsm8k",`, ``, 1)
	_, err = ParseProtocol("p.json", []byte(one))
	assert.EqualError(t, err, `p.json:7:5: cases[0]: dataset is missing
p.json:15:32: cases[0].candidates[0].actor_micro_batch: a string where a whole number is expected`)

	// A whole number written with an exponent or a fraction is refused
	// (JSON readers differ on it), saying how to write it; one beyond what
	// its field holds is out of range, however it is written.
	for _, tc := range []struct{ from, to, want string }{
		{`"collection_order_seed": 20260916`, `"collection_order_seed": 1e400`, `p.json:414:28: collection_order_seed: the number 1e400 is out of range: a whole number here is from 0 to 18446744073709551615`},
		{`"collection_order_seed": 20260916`, `"collection_order_seed": 18446744073709551616`, `p.json:414:28: collection_order_seed: the number 18446744073709551616 is out of range: a whole number here is from 0 to 18446744073709551615`},
		{`"screen_seed": 141`, `"screen_seed": 1.41e2`, `p.json:376:18: screen_seed: the number 1.41e2 where a whole number is expected: write it as 141`},
		{`"actor_micro_batch": 8`, `"actor_micro_batch": 8.0`, `p.json:15:32: cases[0].candidates[0].actor_micro_batch: the number 8.0 where a whole number is expected: write it as 8`},
		{`"actor_micro_batch": 8`, `"actor_micro_batch": -1e30`, `p.json:15:32: cases[0].candidates[0].actor_micro_batch: the number -1e30 is out of range: a whole number is from -9223372036854775808 to 9223372036854775807`},
		{`"actor_micro_batch": 8`, `"actor_micro_batch": 1e-999999999`, `p.json:15:32: cases[0].candidates[0].actor_micro_batch: the number 1e-999999999 where a whole number is expected`},
		{`"actor_micro_batch": 8`, `"actor_micro_batch": 1e999999999`, `p.json:15:32: cases[0].candidates[0].actor_micro_batch: the number 1e999999999 is out of range: a whole number is from -9223372036854775808 to 9223372036854775807`},
	} {
		_, err = ParseProtocol("p.json", []byte(strings.Replace(string(seed), tc.from, tc.to, 1)))
		assert.EqualError(t, err, tc.want)
	}

	// A number too near 0 to be held is not read as 0.
	_, err = ParseProtocol("p.json", []byte(strings.Replace(string(seed), `"additional_donor_guard_mib": 2048`, `"additional_donor_guard_mib": 1e-400`, 1)))
	assert.EqualError(t, err, `p.json:387:33: additional_donor_guard_mib: the number 1e-400 is too near 0 to be held (a number other than 0 is at least about 4.9e-324 in size), and would be read as 0: write 0, or the number meant`)
}

// A donor's peak that a float64 cannot hold is refused as every other
// number is: 1e-400 (a number, or a string of one, of either sign) is not
// 0, no peak, which would make headroom_guard abstain on its donor; and
// 1e400 is too large, not a peak "of at least 0".
func TestPeakTooNearZeroOrTooLargeIsRefused(t *testing.T) {
	seed, err := os.ReadFile("testdata/seed_protocol.json")
	require.NoError(t, err)
	const at = `p.json:75:41: cases[0].donors["qwen25_3b-gsm8k-shape1024-n4-steps5-c3"].max_completed_run_peak_mib: `
	from := `"max_completed_run_peak_mib": "37140.0"`
	require.Contains(t, string(seed), from)
	for _, tc := range []struct{ value, want string }{
		{`1e-400`, `the number 1e-400 is too near 0 to be held (a number other than 0 is at least about 4.9e-324 in size), and would be read as 0: write 0, or the number meant`},
		{`-1e-400`, `the number -1e-400 is too near 0 to be held`},
		{`"1e-400"`, `the number 1e-400 is too near 0 to be held`},
		{`"-1e-400"`, `the number -1e-400 is too near 0 to be held`},
		{`1e400`, `the number 1e400 is too large to be held: a number is at most about 1.8e308 in size`},
		{`"1e400"`, `the number 1e400 is too large to be held`},
		{`-5`, `a peak in MiB must be a number of at least 0`},
	} {
		_, err := ParseProtocol("p.json", []byte(strings.Replace(string(seed), from, `"max_completed_run_peak_mib": `+tc.value, 1)))
		assert.ErrorContains(t, err, at+tc.want, tc.value)
	}
	// 0, "0" and "-0" are no measurement: no peak, as documented.
	for _, zero := range []string{`0`, `"0"`, `"-0"`, `0e-400`} {
		p, err := ParseProtocol("p.json", []byte(strings.Replace(string(seed), from, `"max_completed_run_peak_mib": `+zero, 1)))
		require.NoError(t, err, zero)
		assert.False(t, p.Cases[0].Donors["qwen25_3b-gsm8k-shape1024-n4-steps5-c3"].MaxCompletedPeak.Known, zero)
	}
}

// A value that cannot be read is reported once, at its place: the checks
// of the decoded protocol, which sees it as 0, "" or none, add nothing of
// their own (no "says 48, but the cases list 47 slots" for a screen
// list written as a string, no query order "leaving out" a candidate
// whose id is a number).
func TestProtocolUnreadableValueIsOneProblem(t *testing.T) {
	seed, err := os.ReadFile("testdata/seed_protocol.json")
	require.NoError(t, err)
	text := string(seed)
	for _, tc := range []struct{ from, to, want string }{
		{"\"evaluation_seeds\": [\n    142,\n    143,\n    144\n  ]", `"evaluation_seeds": "142"`, `p.json:377:23: evaluation_seeds: a string where a list is expected`},
		{`"screen_seed": 141`, `"screen_seed": "141"`, `p.json:376:18: screen_seed: a string where a whole number is expected`},
		{"\"screen\": [\n              \"decision-qwen25_3b-gsm8k-shape1024-n4-steps5-c2-s141\"\n            ]", `"screen": "decision-qwen25_3b-gsm8k-shape1024-n4-steps5-c2-s141"`, `p.json:18:23: cases[0].candidates[0].slot_ids.screen: a string where a list is expected`},
		{`"candidate_id": "qwen25_3b-gsm8k-shape1024-n4-steps5-c2"`, `"candidate_id": 2`, `p.json:13:27: cases[0].candidates[0].candidate_id: the number 2 where a string is expected`},
		{"    0,\n    1,\n    2,\n    3\n", "    \"0\",\n    1,\n    2,\n    0\n", `p.json:389:5: budgets_per_case[0]: a string where a whole number is expected`},
		{"    142,\n    143,\n", "    \"143\",\n    143,\n", `p.json:378:5: evaluation_seeds[0]: a string where a whole number is expected`},
		{`"observed_state": "within_margin"`, `"observed_state": ["within_margin"]`, `p.json:64:29: cases[0].donors["qwen25_3b-gsm8k-shape1024-n4-steps5-c2"].observed_state: a list where a string is expected`},
		{"\"recorded_attempt_ids\": [\n            \"attempt-02cd07da6caa1a64\",\n            \"attempt-a1aa42155011745d\",\n            \"attempt-c41a226bcf33a96f\"\n          ]", `"recorded_attempt_ids": {"a": 1}`, `p.json:66:35: cases[0].donors["qwen25_3b-gsm8k-shape1024-n4-steps5-c2"].recorded_attempt_ids: an object where a list is expected`},
		{`"gpus_per_allocation": 2`, `"gpus_per_allocation": 2.5`, `p.json:407:28: resource_cap.gpus_per_allocation: the number 2.5 where a whole number is expected`},
		{"\"query_order\": [\n        \"qwen25_3b-gsm8k-shape1024-n4-steps5-c3\",", "\"query_order\": [\n        3,", `p.json:94:9: cases[0].query_order[0]: the number 3 where a string is expected`},
		{`"protocol_version": "decision-1.0"`, `"protocol_version": true`, `p.json:2:23: protocol_version: the value true where a string is expected`},
		{`"benchmark/attempts.csv": "397c8caaf0d3abe06587fd649c181fe71d5b8b5f5e24e0591cc7e56d38e275c1"`, `"benchmark/attempts.csv": 1, "benchmark/./attempts.csv": "397c8caaf0d3abe06587fd649c181fe71d5b8b5f5e24e0591cc7e56d38e275c1"`, `p.json:420:31: source_files_sha256["benchmark/attempts.csv"]: the number 1 where a string is expected`},
	} {
		require.Contains(t, text, tc.from)
		_, err := ParseProtocol("p.json", []byte(strings.Replace(text, tc.from, tc.to, 1)))
		if assert.Error(t, err, tc.to) {
			assert.Equal(t, tc.want, err.Error())
		}
	}
	// A whole part that cannot be read: nothing said of what it holds.
	for _, tc := range []struct{ from, to, want string }{
		{`"resource_cap": {`, `"resource_cap": 5, "x": {`, `resource_cap: the number 5 where an object is expected`},
	} {
		_, err := ParseProtocol("p.json", []byte(strings.Replace(text, tc.from, tc.to, 1)))
		if assert.Error(t, err, tc.to) {
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "is missing")
		}
	}
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
		{`{"alpha-c1-s141": {"state": "unresolved", "attempts": 1.5}}`, `o.json:1:55: ["alpha-c1-s141"].attempts: the number 1.5 where a whole number is expected`},
		{"{\n \"alpha-c1-s141\": \"unresolved\",\n \"alpha-c1-s141\": \"within_margin\"\n}", `o.json:3:2: ["alpha-c1-s141"] is given twice`},
		{`["alpha-c1-s141"]`, "JSON object mapping slot ids"},
	} {
		_, err := ParseOutcomes("o.json", []byte(tc.text), p)
		if assert.Error(t, err, tc.text) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
}

// A null in an outcome object is no value: "attempts": null is not 0
// attempts (a not_started slot's), "simulated": null is not a measured
// outcome, "state": null is no state. Every problem is reported, each at
// its value with its path: two in one slot, and those of other slots.
func TestOutcomesNullIsRefused(t *testing.T) {
	p, _ := readSmall(t)
	for _, tc := range []struct{ text, want string }{
		{`{"alpha-c1-s141": {"state": "not_started", "attempts": null}}`, `o.json:1:56: ["alpha-c1-s141"].attempts: is null: give a whole number, or leave the field out`},
		{`{"alpha-c1-s141": {"state": "within_margin", "simulated": null}}`, `o.json:1:59: ["alpha-c1-s141"].simulated: is null: give true or false, or leave the field out`},
		{`{"alpha-c1-s141": {"state": null}}`, `o.json:1:29: ["alpha-c1-s141"].state: is null: give a string: the field is required`},
		{"{\n \"alpha-c1-s141\": {\"state\": 5, \"attempts\": \"2\", \"tries\": 1},\n \"alpha-c1-s142\": {\"state\": \"within_margin\", \"simulated\": \"yes\"},\n \"alpha-c1-s143\": \"within\"\n}",
			`o.json:2:29: ["alpha-c1-s141"].state: the number 5 where a string is expected
o.json:2:44: ["alpha-c1-s141"].attempts: a string where a whole number is expected
o.json:2:49: ["alpha-c1-s141"].tries: unknown field; the known fields are listed in docs/decision.md
o.json:3:59: ["alpha-c1-s142"].simulated: a string where true or false is expected
o.json:4:19: slot "alpha-c1-s143": "within" is not an outcome (within_margin, above_margin, memory_failure, unresolved, not_started)`},
	} {
		_, err := ParseOutcomes("o.json", []byte(tc.text), p)
		if assert.Error(t, err, tc.text) {
			assert.Equal(t, tc.want, err.Error())
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

// A protocol or outcomes file nested deeper than MaxDepth is refused at
// the bracket that passes it, before it is walked: a walk keeps every
// value's path, so 40 KB nested 20,000 deep took 644 MB, and 4 MB nested
// 2,000,000 deep was killed. What parsing allocates is measured, not how
// long it takes.
func TestDeeplyNestedFilesAreRefusedCheaply(t *testing.T) {
	p, _ := readSmall(t)
	for _, n := range []int{MaxDepth, 20000, 2000000} {
		nested := strings.Repeat("[", n) + strings.Repeat("]", n)
		outcomes := []byte("{\n  \"alpha-c1-s141\": " + nested + "\n}\n")
		var err error
		alloc := allocated(func() { _, err = ParseOutcomes("o.json", outcomes, p) })
		assert.EqualError(t, err, fmt.Sprintf("o.json:2:%d: a value nested more than %d levels deep: a protocol or outcomes file nests a few levels (docs/decision.md), and one nested this deep is not read (the file is checked no further)", 20+MaxDepth-1, MaxDepth), "depth %d", n)
		assert.Less(t, alloc, uint64(1<<20), "depth %d: bytes allocated", n)

		protocol := []byte(`{"protocol_version": "decision-1.0", "cases": ` + nested + `}`)
		alloc = allocated(func() { _, err = ParseProtocol("p.json", protocol) })
		assert.ErrorContains(t, err, fmt.Sprintf("p.json:1:%d: a value nested more than %d levels deep", 47+MaxDepth-1, MaxDepth), "depth %d", n)
		assert.Less(t, alloc, uint64(1<<20), "depth %d: bytes allocated", n)
	}
	// The deepest a file may be is read as usual.
	ok := []byte("{\"alpha-c1-s141\": " + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + "}")
	_, err := ParseOutcomes("o.json", ok, p)
	assert.ErrorContains(t, err, "an outcome is a state string or")
}

// allocated is how many bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A case or candidate id is a field of replay.tsv: a tab, a newline or
// another control character in it would split its row, and a ";" or "="
// in a candidate id would make the decisions column (ID=DECISION;…)
// ambiguous. Each is refused at its place; the same characters elsewhere
// in an id, and the ids of the seed's protocol, are not.
func TestIDsThatWouldCorruptTheTSVAreRefused(t *testing.T) {
	seed, err := os.ReadFile("testdata/seed_protocol.json")
	require.NoError(t, err)
	caseID, candID := `"case_id": "qwen25_3b-gsm8k-shape1024-n4-steps5"`, `"candidate_id": "qwen25_3b-gsm8k-shape1024-n4-steps5-c2"`
	for _, tc := range []struct{ from, to, want string }{
		{caseID, `"case_id": "qwen\tgsm8k"`, `p.json:8:18: cases[0].case_id: "qwen\tgsm8k" must be an id without tabs, newlines or other control characters: it is a field of replay.tsv`},
		{caseID, `"case_id": "qwen\ngsm8k"`, `p.json:8:18: cases[0].case_id: "qwen\ngsm8k" must be an id without tabs`},
		{caseID, `"case_id": "qwen\u0085gsm8k"`, `cases[0].case_id: "qwen\u0085gsm8k" must be an id without tabs`},
		{candID, `"candidate_id": "x=approve;y"`, `p.json:13:27: cases[0].candidates[0].candidate_id: "x=approve;y" must be an id without tabs, newlines, other control characters, "=" or ";": replay.tsv's decisions column writes ID=DECISION;ID=DECISION`},
		{candID, `"candidate_id": "c;2"`, `cases[0].candidates[0].candidate_id: "c;2" must be an id without`},
		{candID, `"candidate_id": "c\t2"`, `cases[0].candidates[0].candidate_id: "c\t2" must be an id without`},
	} {
		require.Contains(t, string(seed), tc.from)
		_, err := ParseProtocol("p.json", []byte(strings.Replace(string(seed), tc.from, tc.to, 1)))
		assert.ErrorContains(t, err, tc.want, tc.to)
	}
	// A case id may hold "=" or ";": it is a field of its own.
	_, err = ParseProtocol("p.json", []byte(strings.Replace(string(seed), caseID, `"case_id": "qwen;a=b"`, 1)))
	assert.NoError(t, err)
}
