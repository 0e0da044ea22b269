package docs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/stages/decision"
)

// The claims of docs/decision.md about what `cairn replay` refuses and
// what it names (#28), run against the demo's fixture protocol.

// fenced returns the body of the first fenced block of lang after marker.
func fenced(t *testing.T, doc, marker, lang string) string {
	t.Helper()
	i := strings.Index(doc, marker)
	require.GreaterOrEqual(t, i, 0, "the document says %q", marker)
	rest := doc[i:]
	open := "```" + lang + "\n"
	j := strings.Index(rest, open)
	require.GreaterOrEqual(t, j, 0)
	body := rest[j+len(open):]
	return body[:strings.Index(body, "```")]
}

// fixtureCopy copies testdata/decision into a new folder.
func fixtureCopy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("../testdata/decision")))
	return dir
}

func hexSHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// The table's header, as the document shows it, for the fixture and an
// outcomes file holding {}; the --json example has the keys the output has.
func TestDecisionDocReplayNamesItsInputs(t *testing.T) {
	doc := readDoc(t, "decision.md")
	dir := fixtureCopy(t)
	write(t, dir, map[string]string{"outcomes.json": "{}\n"})
	r := ok(t, dir, nil, "replay", "decision_protocol.json", "outcomes.json", "--out", "")
	want := fenced(t, doc, "The table opens with", "text")
	assert.Equal(t, want, strings.SplitN(r.stdout, "\n\n", 2)[0]+"\n")

	var example, got map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(fenced(t, doc, "`--json` prints", "json")), &example))
	r = ok(t, dir, nil, "replay", "decision_protocol.json", "outcomes.json", "--out", "", "--json")
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	keys := func(raw json.RawMessage) map[string][]string {
		var in map[string]map[string]any
		require.NoError(t, json.Unmarshal(raw, &in))
		out := map[string][]string{}
		for k, v := range in {
			for kk := range v {
				out[k] = append(out[k], kk)
			}
		}
		return out
	}
	want2, got2 := keys(example[decision.InputsKey]), keys(got[decision.InputsKey])
	for k := range got2 {
		assert.ElementsMatch(t, got2[k], want2[k], "inputs.%s", k)
	}
	assert.Len(t, want2, len(got2))
}

// Outcomes that break the failure policy are refused, with the messages
// the document shows ("…" standing for the rest).
func TestDecisionDocFailurePolicyRefusal(t *testing.T) {
	doc := readDoc(t, "decision.md")
	lines := strings.Split(strings.TrimSpace(fenced(t, doc, "Outcomes that break the protocol's **failure policy are refused**", "text")), "\n")
	require.Len(t, lines, 2)
	dir := fixtureCopy(t)
	p, err := decision.ReadProtocol(filepath.Join(dir, "decision_protocol.json"))
	require.NoError(t, err)
	slots := p.Slots()
	file := func(n, attempts int) string {
		var parts []string
		for _, s := range slots[:n] {
			parts = append(parts, fmt.Sprintf("\n  %q: {\"state\": \"within_margin\", \"attempts\": %d}", s.ID, attempts))
		}
		return "{" + strings.Join(parts, ",") + "\n}\n"
	}
	for i, body := range []string{file(1, 5), file(14, 2)} {
		sub := filepath.Join(dir, fmt.Sprint(i))
		write(t, sub, map[string]string{"outcomes.json": body})
		r := cairn(t, sub, nil, "replay", "../decision_protocol.json", "outcomes.json", "--out", "")
		assert.Equal(t, 2, r.code, r.stderr)
		assert.Empty(t, r.stdout, "nothing replayed")
		pat := regexp.QuoteMeta(lines[i])
		pat = strings.ReplaceAll(pat, "…", ".*")
		assert.Regexp(t, "(?m)^"+pat+"$", r.stderr)
	}
}

// What is checked, as the table of "What is checked" says: the protocol
// against --expect-sha256, a present frozen file, the matrix file.
func TestDecisionDocWhatIsChecked(t *testing.T) {
	doc := prose(t, "decision.md")
	assert.Contains(t, doc, "exit 2: `the protocol's sha256 is NEW, but OLD is expected`")
	dir := fixtureCopy(t)
	write(t, dir, map[string]string{"outcomes.json": "{}\n"})
	pf := filepath.Join(dir, "decision_protocol.json")
	old, err := os.ReadFile(pf)
	require.NoError(t, err)
	edited := strings.Replace(string(old), `"33108.0"`, `"33109.0"`, 1)
	require.NotEqual(t, string(old), edited)
	require.NoError(t, os.WriteFile(pf, []byte(edited), 0o644))
	r := cairn(t, dir, nil, "replay", "decision_protocol.json", "outcomes.json", "--out", "", "--expect-sha256", hexSHA256(old))
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "the protocol's sha256 is "+hexSHA256([]byte(edited))+", but "+hexSHA256(old)+" is expected")
	require.NoError(t, os.WriteFile(pf, old, 0o644))

	// A present frozen file that differs: named with both digests; an
	// absent one: counted as absent.
	data := filepath.Join(dir, "data", "gsm8k", "test.parquet")
	db, err := os.ReadFile(data)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(data, append(db, 0), 0o644))
	r = cairn(t, dir, nil, "replay", "decision_protocol.json", "outcomes.json", "--out", "")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "data/gsm8k/test.parquet: the protocol's data_files_sha256 pins it to sha256 "+hexSHA256(db)+", but the file's sha256 is "+hexSHA256(append(db, 0)))
	require.NoError(t, os.Remove(data))
	r = ok(t, dir, nil, "replay", "decision_protocol.json", "outcomes.json", "--out", "")
	assert.Contains(t, r.stdout, "frozen files: 11 match the protocol's sha256, 1 absent (not checked)")

	// The matrix file, given with --matrix.
	write(t, dir, map[string]string{"matrix.csv": "m\n"})
	r = cairn(t, dir, nil, "replay", "decision_protocol.json", "outcomes.json", "--out", "", "--matrix", "matrix.csv")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "matrix.csv: the protocol's matrix_sha256 is ")
}
