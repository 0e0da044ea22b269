package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReplayCommand(t *testing.T) {
	root := cliWorkspace(t, nil)
	protocol, err := filepath.Abs("../../stages/decision/testdata/small_protocol.json")
	require.NoError(t, err)
	outcomes, err := filepath.Abs("../../stages/decision/testdata/small_outcomes.json")
	require.NoError(t, err)

	r := runCLI(t, "--chdir", root, "replay", protocol, outcomes, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var got map[string]map[string]map[string]map[string]any
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &top), r.stdout)
	delete(top, "inputs")
	b, _ := json.Marshal(top)
	require.NoError(t, json.Unmarshal(b, &got), r.stdout)
	assert.Equal(t, []any{0.5, 1.0}, got["total"]["source_copy"]["0"]["coverage"])
	assert.Equal(t, 1.0, got["beta"]["direct_screen"]["3"]["unavailable"])

	// The files, in --out under the workspace root.
	js, err := os.ReadFile(filepath.Join(root, "replay", "replay.json"))
	require.NoError(t, err)
	assert.JSONEq(t, r.stdout, string(js))
	_, err = os.Stat(filepath.Join(root, "replay", "replay.tsv"))
	require.NoError(t, err)

	// The same replay again is written again; another one is not written
	// over it (exit 2, nothing printed or written).
	again := runCLI(t, "--chdir", root, "replay", protocol, outcomes, "--json")
	require.Equal(t, 0, again.code, again.stderr)
	ob, err := os.ReadFile(outcomes)
	require.NoError(t, err)
	require.Contains(t, string(ob), `"alpha-c2-s141": "memory_failure"`)
	other := filepath.Join(root, "other.json")
	require.NoError(t, os.WriteFile(other, []byte(strings.Replace(string(ob), `"alpha-c2-s141": "memory_failure"`, `"alpha-c2-s141": "within_margin"`, 1)), 0o644))
	kept := runCLI(t, "--chdir", root, "replay", protocol, other)
	assert.Equal(t, 2, kept.code, kept.stderr)
	assert.Contains(t, kept.stderr, "replay/replay.json holds the replay of "+protocol)
	assert.Contains(t, kept.stderr, "a replay is not written over another")
	assert.Empty(t, kept.stdout)
	js2, err := os.ReadFile(filepath.Join(root, "replay", "replay.json"))
	require.NoError(t, err)
	assert.Equal(t, string(js), string(js2), "the first replay is kept")
	elsewhere := runCLI(t, "--chdir", root, "replay", protocol, other, "--out", "replay-other")
	require.Equal(t, 0, elsewhere.code, elsewhere.stderr)

	table := runCLI(t, "--chdir", root, "replay", protocol, outcomes, "--out", "")
	require.Equal(t, 0, table.code, table.stderr)
	assert.Contains(t, table.stdout, "CASE   RULE            BUDGET  DECISIONS")
	assert.NotContains(t, table.stderr, "written")

	// A bad outcomes file: exit 2, the problem at its position.
	require.NoError(t, os.WriteFile(filepath.Join(root, "bad.json"), []byte("{\n  \"alpha-c1-s141\": \"ok\"\n}\n"), 0o644))
	bad := runCLI(t, "--chdir", root, "replay", protocol, "bad.json")
	assert.Equal(t, 2, bad.code)
	assert.Contains(t, bad.stderr, filepath.Join(root, "bad.json")+`:2:20: slot "alpha-c1-s141": "ok" is not an outcome`)
	assert.Contains(t, bad.stderr, "nothing was replayed")

	missing := runCLI(t, "--chdir", root, "replay", "nope.json", outcomes)
	assert.Equal(t, 2, missing.code)
	assert.Contains(t, missing.stderr, "cannot read the protocol")

	// An --out that cannot take the files is bad input, as for report,
	// graph and plan.
	require.NoError(t, os.WriteFile(filepath.Join(root, "afile"), nil, 0o644))
	unwritable := runCLI(t, "--chdir", root, "replay", protocol, outcomes, "--out", "afile/sub")
	assert.Equal(t, 2, unwritable.code)
	assert.Contains(t, unwritable.stderr, "--out afile/sub: cannot write the replay")
}

// A replay never writes over its own inputs: a protocol or outcomes file
// that is replay.tsv or replay.json in --out, directly or through a link,
// is refused (exit 2, naming it), and left as it was.
func TestReplayRefusesToWriteOverItsInputs(t *testing.T) {
	root := cliWorkspace(t, nil)
	pb, err := os.ReadFile("../../stages/decision/testdata/small_protocol.json")
	require.NoError(t, err)
	ob, err := os.ReadFile("../../stages/decision/testdata/small_outcomes.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "protocol.json"), pb, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "outcomes.json"), ob, 0o644))
	require.NoError(t, os.Symlink(filepath.Join("ov", "replay.tsv"), filepath.Join(root, "link.json")))
	for _, tc := range []struct {
		args       []string
		name       string // the input's copy in ov
		data, want string
	}{
		{[]string{"ov/replay.tsv", "outcomes.json"}, "replay.tsv", string(pb), "the protocol file ov/replay.tsv is one of the files the replay writes (--out ov)"},
		{[]string{"link.json", "outcomes.json"}, "replay.tsv", string(pb), "the protocol file link.json is ov/replay.tsv, one of the files the replay writes (--out ov)"},
		{[]string{"protocol.json", "ov/replay.json"}, "replay.json", string(ob), "the outcomes file ov/replay.json is one of the files the replay writes (--out ov)"},
	} {
		ov := filepath.Join(root, "ov")
		require.NoError(t, os.RemoveAll(ov))
		require.NoError(t, os.MkdirAll(ov, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ov, tc.name), []byte(tc.data), 0o644))
		r := runCLI(t, append([]string{"--chdir", root, "replay"}, append(tc.args, "--out", "ov")...)...)
		assert.Equal(t, 2, r.code, "%v: %s", tc.args, r.stderr)
		assert.Contains(t, r.stderr, tc.want)
		assert.Contains(t, r.stderr, "a replay never writes over what it reads")
		assert.Empty(t, r.stdout)
		kept, err := os.ReadFile(filepath.Join(ov, tc.name))
		require.NoError(t, err)
		assert.Equal(t, tc.data, string(kept), "%v: the input is kept", tc.args)
		entries, err := os.ReadDir(ov)
		require.NoError(t, err)
		assert.Len(t, entries, 1, "%v: nothing written", tc.args)
	}
}

// Outcomes that break the protocol's failure policy are refused (exit 2),
// each breach named with its slot and position, and nothing is replayed
// or written (#28).
func TestReplayRefusesOutcomesThatBreakTheFailurePolicy(t *testing.T) {
	root := cliWorkspace(t, nil)
	protocol, err := filepath.Abs("../../stages/decision/testdata/small_protocol.json")
	require.NoError(t, err)
	slots := []string{"alpha-c1-s141", "alpha-c1-s142", "alpha-c1-s143", "alpha-c1-s144", "alpha-c2-s141", "alpha-c2-s142",
		"alpha-c2-s143", "alpha-c2-s144", "alpha-c3-s141", "alpha-c3-s142", "alpha-c3-s143", "alpha-c3-s144", "beta-c1-s141", "beta-c1-s142"}
	write := func(name string, attempts map[string]int) string {
		var parts []string
		for _, id := range slots {
			if n, ok := attempts[id]; ok {
				parts = append(parts, fmt.Sprintf("\n  %q: {\"state\": \"within_margin\", \"attempts\": %d}", id, n))
			}
		}
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte("{"+strings.Join(parts, ",")+"\n}\n"), 0o644))
		return name
	}
	for _, tc := range []struct {
		name     string
		attempts map[string]int
		want     []string
	}{
		{"five.json", map[string]int{"alpha-c2-s141": 5}, []string{`five.json:2:3: slot "alpha-c2-s141": 5 started attempts, but the protocol's failure policy allows at most 2 (one unchanged replacement per slot)`}},
		{"million.json", map[string]int{"alpha-c1-s142": 1000000}, []string{`million.json:2:3: slot "alpha-c1-s142": 1000000 started attempts`}},
		{"fourteen.json", func() map[string]int {
			m := map[string]int{}
			for _, id := range slots {
				m[id] = 2
			}
			return m
		}(), []string{`fourteen.json:10:3: slot "alpha-c3-s141": its replacement passes the cap: the outcomes hold 14 replacements (slots ` + strings.Join(slots, ", ") + `), but the protocol's failure policy allows at most 8 in all (resource_cap.max_repair_allocations)`}},
	} {
		r := runCLI(t, "--chdir", root, "replay", protocol, write(tc.name, tc.attempts), "--out", "out")
		assert.Equal(t, 2, r.code, tc.name)
		for _, w := range tc.want {
			assert.Contains(t, r.stderr, w, tc.name)
		}
		assert.Contains(t, r.stderr, "nothing was replayed")
		assert.Empty(t, r.stdout, "no figures")
		_, err := os.Stat(filepath.Join(root, "out"))
		assert.True(t, os.IsNotExist(err), "%s: nothing written", tc.name)
	}
}

// The replay names the protocol and outcomes files with their sha256 in
// replay.json and the table's header; --expect-sha256 refuses an edited
// protocol; the files the protocol froze are checked where present, the
// matrix with --matrix (#28).
func TestReplayNamesAndChecksItsInputs(t *testing.T) {
	root := cliWorkspace(t, nil)
	require.NoError(t, os.CopyFS(root, os.DirFS("../../testdata/decision")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "outcomes.json"), []byte("{}\n"), 0o644))
	pb, err := os.ReadFile(filepath.Join(root, "decision_protocol.json"))
	require.NoError(t, err)
	psum, osum := sha256Hex(pb), sha256Hex([]byte("{}\n"))

	r := runCLI(t, "--chdir", root, "replay", "decision_protocol.json", "outcomes.json", "--expect-sha256", psum)
	require.Equal(t, 0, r.code, r.stderr)
	head := strings.SplitN(r.stdout, "CASE", 2)[0]
	assert.Contains(t, head, "protocol  decision_protocol.json  sha256 "+psum)
	assert.Contains(t, head, "outcomes  outcomes.json  sha256 "+osum)
	assert.Contains(t, head, "frozen files: 12 match the protocol's sha256; matrix_sha256 not checked (no matrix file given)")
	var got struct {
		Inputs struct {
			Protocol, Outcomes struct{ File, SHA256 string }
			Frozen             struct{ Matched, Absent []string } `json:"frozen_files"`
		}
	}
	js, err := os.ReadFile(filepath.Join(root, "replay", "replay.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &got))
	assert.Equal(t, psum, got.Inputs.Protocol.SHA256)
	assert.Equal(t, "decision_protocol.json", got.Inputs.Protocol.File)
	assert.Equal(t, osum, got.Inputs.Outcomes.SHA256)
	assert.Len(t, got.Inputs.Frozen.Matched, 12)

	// One byte of a donor's peak: refused against the frozen digest,
	// naming both digests.
	edited := strings.Replace(string(pb), `"max_completed_run_peak_mib": "33108.0"`, `"max_completed_run_peak_mib": "33109.0"`, 1)
	require.NotEqual(t, string(pb), edited)
	require.NoError(t, os.WriteFile(filepath.Join(root, "decision_protocol.json"), []byte(edited), 0o644))
	bad := runCLI(t, "--chdir", root, "replay", "decision_protocol.json", "outcomes.json", "--expect-sha256", psum, "--out", "")
	assert.Equal(t, 2, bad.code)
	assert.Contains(t, bad.stderr, "the protocol's sha256 is "+sha256Hex([]byte(edited))+", but "+psum+" is expected")
	assert.Contains(t, bad.stderr, "nothing was replayed")
	assert.Empty(t, bad.stdout)
	require.NoError(t, os.WriteFile(filepath.Join(root, "decision_protocol.json"), pb, 0o644))

	// A frozen file that is present and differs is refused, named with
	// both digests; an absent one is reported as not checked.
	impl := filepath.Join(root, "memory_tuner", "benchmark_v2_env.py")
	ib, err := os.ReadFile(impl)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(impl, append(ib, '#'), 0o644))
	bad = runCLI(t, "--chdir", root, "replay", "decision_protocol.json", "outcomes.json", "--out", "")
	assert.Equal(t, 2, bad.code)
	assert.Contains(t, bad.stderr, impl+": the protocol's implementation_sha256 pins it to sha256 "+sha256Hex(ib)+", but the file's sha256 is "+sha256Hex(append(ib, '#')))
	require.NoError(t, os.Remove(impl))
	r = runCLI(t, "--chdir", root, "replay", "decision_protocol.json", "outcomes.json", "--out", "")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "frozen files: 11 match the protocol's sha256, 1 absent (not checked)")

	// The matrix: refused when it differs from matrix_sha256.
	require.NoError(t, os.WriteFile(filepath.Join(root, "matrix.csv"), []byte("not the matrix\n"), 0o644))
	bad = runCLI(t, "--chdir", root, "replay", "decision_protocol.json", "outcomes.json", "--matrix", "matrix.csv", "--out", "")
	assert.Equal(t, 2, bad.code)
	assert.Contains(t, bad.stderr, "matrix.csv: the protocol's matrix_sha256 is 0c14400d24b03d89225b1f03bcdc68339f5080abb6168c1db1543db5a522bae6, but the file's sha256 is "+sha256Hex([]byte("not the matrix\n")))
}

// A folder that holds another replay keeps it, and the refusal says what
// differs: a byte-identical copy of the outcomes file under another name
// gives the same figures, and is not said to give others.
func TestReplayRefusalSaysWhatDiffers(t *testing.T) {
	root := cliWorkspace(t, nil)
	protocol, err := filepath.Abs("../../stages/decision/testdata/small_protocol.json")
	require.NoError(t, err)
	ob, err := os.ReadFile("../../stages/decision/testdata/small_outcomes.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "o.json"), ob, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "o_copy.json"), ob, 0o644))
	other := strings.Replace(string(ob), `"alpha-c2-s141": "memory_failure"`, `"alpha-c2-s141": "within_margin"`, 1)
	require.NotEqual(t, string(ob), other)
	require.NoError(t, os.WriteFile(filepath.Join(root, "other.json"), []byte(other), 0o644))
	first := runCLI(t, "--chdir", root, "replay", protocol, "o.json", "--out", "od")
	require.Equal(t, 0, first.code, first.stderr)

	copied := runCLI(t, "--chdir", root, "replay", protocol, "o_copy.json", "--out", "od")
	assert.Equal(t, 2, copied.code, copied.stderr)
	assert.Contains(t, copied.stderr, "this one differs in the outcomes file's path (o.json there, o_copy.json here), not in its figures: a replay is not written over another")
	assert.NotContains(t, copied.stderr, "sha256 (")

	changed := runCLI(t, "--chdir", root, "replay", protocol, "other.json", "--out", "od")
	assert.Equal(t, 2, changed.code, changed.stderr)
	assert.Contains(t, changed.stderr, fmt.Sprintf("the outcomes file's path (o.json there, other.json here), the outcomes file's sha256 (%.12s there, %.12s here)", sha256Hex(ob), sha256Hex([]byte(other))))
	assert.Contains(t, changed.stderr, ", and in its figures: a replay is not written over another")
}

// An --expect-sha256 that is empty (a digest read from a missing file:
// "$(cat protocol.sha256)") or not 64 hex digits is refused (exit 2),
// never taken for no check.
func TestReplayRefusesAnEmptyExpectedDigest(t *testing.T) {
	root := cliWorkspace(t, nil)
	protocol, err := filepath.Abs("../../stages/decision/testdata/small_protocol.json")
	require.NoError(t, err)
	outcomes, err := filepath.Abs("../../stages/decision/testdata/small_outcomes.json")
	require.NoError(t, err)
	for _, tc := range []struct{ value, want string }{
		{"", "--expect-sha256 is empty: give the protocol's sha256"},
		{"  ", "--expect-sha256 is empty"},
		{"0123", `the expected sha256 "0123" is not 64 hex digits`},
	} {
		r := runCLI(t, "--chdir", root, "replay", protocol, outcomes, "--out", "out", "--expect-sha256", tc.value)
		assert.Equal(t, 2, r.code, "%q: %s", tc.value, r.stderr)
		assert.Contains(t, r.stderr, tc.want)
		assert.Empty(t, r.stdout, "%q: nothing replayed", tc.value)
		_, err := os.Stat(filepath.Join(root, "out"))
		assert.True(t, os.IsNotExist(err), "%q: nothing written", tc.value)
	}
}

// An id that would corrupt replay.tsv (a tab in a case id, a ";" in a
// candidate id) is refused: exit 2, the field and the protocol file
// named, nothing written.
func TestReplayRefusesIDsThatWouldCorruptTheTSV(t *testing.T) {
	root := cliWorkspace(t, nil)
	pb, err := os.ReadFile("../../stages/decision/testdata/small_protocol.json")
	require.NoError(t, err)
	outcomes, err := filepath.Abs("../../stages/decision/testdata/small_outcomes.json")
	require.NoError(t, err)
	for _, tc := range []struct{ from, to, want string }{
		{`"case_id": "alpha"`, `"case_id": "al\tpha"`, `p.json:8:18: cases[0].case_id: "al\tpha" must be an id without tabs, newlines or other control characters`},
		{`"candidate_id": "alpha-c1"`, `"candidate_id": "alpha=approve;c1"`, `p.json:13:27: cases[0].candidates[0].candidate_id: "alpha=approve;c1" must be an id without tabs, newlines, other control characters, "=" or ";"`},
	} {
		require.Contains(t, string(pb), tc.from)
		require.NoError(t, os.WriteFile(filepath.Join(root, "p.json"), []byte(strings.Replace(string(pb), tc.from, tc.to, 1)), 0o644))
		r := runCLI(t, "--chdir", root, "replay", "p.json", outcomes, "--out", "out")
		assert.Equal(t, 2, r.code, r.stderr)
		assert.Contains(t, r.stderr, tc.want)
		assert.Contains(t, r.stderr, "in the protocol file p.json; nothing was replayed")
		_, err := os.Stat(filepath.Join(root, "out"))
		assert.True(t, os.IsNotExist(err), "%s: nothing written", tc.to)
	}
}

// A decision stage's replay says which frozen files matched and which
// were absent: a pinned file removed, or put back, since its last run
// reruns the node, whose result says so, and one put back changed is
// refused; a cached result never reports files as they were.
func TestDecisionStageKeysItsFrozenFiles(t *testing.T) {
	root := cliWorkspace(t, nil)
	require.NoError(t, os.CopyFS(root, os.DirFS("../../testdata/decision")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "outcomes.json"), []byte("{}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(`stage "decision" "replay" {
  protocol = "decision_protocol.json"
  outcomes = "outcomes.json"
}
`), 0o644))
	frozen := func() (matched, absent int) {
		t.Helper()
		var got struct {
			Inputs struct {
				Frozen struct{ Matched, Absent []string } `json:"frozen_files"`
			}
		}
		js, err := os.ReadFile(filepath.Join(root, "reports", "replay", "replay.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(js, &got))
		return len(got.Inputs.Frozen.Matched), len(got.Inputs.Frozen.Absent)
	}
	r := runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, 0, r.code, r.stderr)
	m, a := frozen()
	assert.Equal(t, [2]int{12, 0}, [2]int{m, a})

	impl := filepath.Join(root, "memory_tuner", "benchmark_v2_env.py")
	ib, err := os.ReadFile(impl)
	require.NoError(t, err)
	require.NoError(t, os.Remove(impl))
	r = runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "1 ran", "a pinned file removed: the node runs again")
	m, a = frozen()
	assert.Equal(t, [2]int{11, 1}, [2]int{m, a})

	require.NoError(t, os.WriteFile(impl, append(ib, '#'), 0o644))
	r = runCLI(t, "--chdir", root, "apply", "p.hcl")
	assert.Equal(t, 1, r.code, "a pinned file back, another than the frozen one: %s", r.stdout)
	assert.Contains(t, strings.Join(strings.Fields(r.stdout), " "), "implementation_sha256 pins it to sha256 "+sha256Hex(ib))

	require.NoError(t, os.WriteFile(impl, ib, 0o644))
	r = runCLI(t, "--chdir", root, "apply", "p.hcl")
	require.Equal(t, 0, r.code, r.stderr)
	m, a = frozen()
	assert.Equal(t, [2]int{12, 0}, [2]int{m, a}, "the frozen file back as it was")
}

// cairn replay P O | head -5: the reader of standard output goes away
// before the table is written. The replay still writes its files and
// exits 0, with nothing said of the pipe, as plan does (it said "Error:
// write |1: broken pipe" and exited 1), and the closed reader changes no
// exit code (docs/language.md, Exit codes).
func TestReplayIntoAClosedPipeIsQuiet(t *testing.T) {
	root := cliWorkspace(t, nil)
	protocol, err := filepath.Abs("../../stages/decision/testdata/small_protocol.json")
	require.NoError(t, err)
	outcomes, err := filepath.Abs("../../stages/decision/testdata/small_outcomes.json")
	require.NoError(t, err)
	for _, flags := range [][]string{nil, {"--json"}} {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		require.NoError(t, r.Close()) // the reader is gone: a write is EPIPE
		var stderr strings.Builder
		out := "out" + strings.Join(flags, "")
		code := run(append([]string{"--chdir", root, "replay", protocol, outcomes, "--out", out}, flags...), w, &stderr)
		require.NoError(t, w.Close())
		assert.Equal(t, exitOK, code, stderr.String())
		assert.NotContains(t, stderr.String(), "broken pipe")
		assert.NotContains(t, stderr.String(), "Error")
		assert.Contains(t, stderr.String(), "Replay written to "+filepath.Join(out, "replay.json"), "its files are still written, and said so on standard error")
		assert.FileExists(t, filepath.Join(root, out, "replay.json"))
		assert.FileExists(t, filepath.Join(root, out, "replay.tsv"))
	}
}

// A protocol with several problems is refused with every one of them,
// each at its place with its full path, and their number (it said "1
// problem(s)", the first wrong type, without its indices).
func TestReplayReportsEveryProblemOfTheProtocol(t *testing.T) {
	root := cliWorkspace(t, nil)
	require.NoError(t, os.CopyFS(root, os.DirFS("../../testdata/decision")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "outcomes.json"), []byte("{}\n"), 0o644))
	pb, err := os.ReadFile(filepath.Join(root, "decision_protocol.json"))
	require.NoError(t, err)
	text := string(pb)
	for _, e := range [][2]string{
		{`"decision-1.0"`, `"decision-2.0"`},
		{`"screen_seed": 141,`, `"screen_seed": null, "screen_sed": 141,`},
		{`"additional_donor_guard_mib": 2048`, `"additional_donor_guard_mib": "2048"`},
		{`"memory_limit_mib": 38912`, `"memory_limit_mib": 1e400`},
	} {
		require.Contains(t, text, e[0])
		text = strings.Replace(text, e[0], e[1], 1)
	}
	// The last candidate's actor_micro_batch, and the second evaluation seed.
	i := strings.LastIndex(text, `"actor_micro_batch": 16`)
	require.GreaterOrEqual(t, i, 0)
	text = text[:i] + `"actor_micro_batch": "16"` + text[i+len(`"actor_micro_batch": 16`):]
	seeds := regexp.MustCompile(`("evaluation_seeds": \[\s*142,\s*)143`)
	require.True(t, seeds.MatchString(text))
	text = seeds.ReplaceAllString(text, `${1}"143"`)
	require.NoError(t, os.WriteFile(filepath.Join(root, "decision_protocol.json"), []byte(text), 0o644))

	r := runCLI(t, "--chdir", root, "replay", "decision_protocol.json", "outcomes.json", "--out", "")
	assert.Equal(t, 2, r.code)
	for _, w := range []string{
		`protocol_version: "decision-2.0" is not a version cairn knows`,
		`cases[3].candidates[2].actor_micro_batch: a string where a whole number is expected`,
		`screen_seed: is null: give a whole number: the field is required`,
		`screen_sed: unknown field`,
		`evaluation_seeds[1]: a string where a whole number is expected`,
		`memory_limit_mib: the number 1e400 is too large to be held`,
		`additional_donor_guard_mib: a string where a number is expected`,
		"7 problem(s) in the protocol file decision_protocol.json; nothing was replayed",
	} {
		assert.Contains(t, r.stderr, w)
	}
	assert.Empty(t, r.stdout)
}
