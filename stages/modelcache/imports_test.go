package modelcache

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The files in testdata were written by the real tools: lm-eval 0.4.13
// (--log_samples, local-completions, the multiple-choice task of
// pipelines/model_cache/lm_eval) and Inspect 0.3.285 (the task of
// pipelines/model_cache/inspect; its .eval log, and the same log
// converted with `inspect log convert --to json`).

func TestImportLMEvalSamples(t *testing.T) {
	rs, err := ImportLMEval("testdata/samples_cairn_arith_mc_2026-12-05T06-04-20.jsonl", ImportOptions{})
	require.NoError(t, err)
	require.Len(t, rs, 12)
	require.Equal(t, "0", rs[0].ID)
	require.Equal(t, "11", rs[11].ID)
	for _, r := range rs {
		require.NotNil(t, r.Score)
		require.Equal(t, 1.0, *r.Score, "the simulated model picks every right sum")
	}
	var out struct {
		Metric string          `json:"metric"`
		Doc    json.RawMessage `json:"doc"`
		Target string          `json:"target"`
	}
	require.NoError(t, json.Unmarshal(rs[0].Outputs, &out))
	require.Equal(t, "acc", out.Metric)
	require.Contains(t, string(out.Doc), `"arith-00"`)
	_, err = ImportLMEval("testdata/samples_cairn_arith_mc_2026-12-05T06-04-20.jsonl", ImportOptions{Metric: "f1"})
	require.True(t, errors.Is(err, ErrBadImport))
	require.ErrorContains(t, err, `no metric "f1"`)
}

// A samples file whose lines JSON readers take differently, or whose
// doc_ids two readers would count differently, is refused, naming the
// line; one saved with a byte-order mark is named so.
func TestImportLMEvalRefusesWhatReadersTakeDifferently(t *testing.T) {
	line := func(id, score string) string {
		return `{"doc_id": ` + id + `, "filter": "none", "metrics": ["acc"], "acc": ` + score + "}\n"
	}
	for name, c := range map[string]struct{ file, want string }{
		"doc_id twice":     {line("0", "1") + `{"doc_id": 1, "doc_id": 7, "filter": "none", "metrics": ["acc"], "acc": 1}` + "\n", `line 2, column 15: the key "doc_id" is given twice`},
		"metric twice":     {line("0", "1") + line("1", `0, "acc": 1`), `line 2, column 63: the key "acc" is given twice`},
		"score beyond":     {line("0", "1e400"), `line 1, column 60: the number 1e400 is beyond what a float64 holds`},
		"fractional doc":   {line("0", "1") + line("0.0", "1"), `line 2: doc_id 0.0 is not a whole number`},
		"exponent doc":     {line("1e0", "1"), `line 1: doc_id 1e0 is not a whole number`},
		"byte-order mark":  {"\ufeff" + line("0", "1"), `starts with a UTF-8 byte-order mark`},
		"not a JSON value": {line("0", "1") + "{\"doc_id\": 1,\n", `line 2 is not a JSON object: unexpected end of JSON input`},
	} {
		p := filepath.Join(t.TempDir(), "samples.jsonl")
		require.NoError(t, os.WriteFile(p, []byte(c.file), 0o644))
		_, err := ImportLMEval(p, ImportOptions{})
		require.True(t, errors.Is(err, ErrBadImport), "%s: %v", name, err)
		require.ErrorContains(t, err, c.want, name)
	}
	p := filepath.Join(t.TempDir(), "samples.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(line("0", "1")+line("-3", "0.5")+line("2", `"0.25"`)), 0o644))
	rs, err := ImportLMEval(p, ImportOptions{})
	require.NoError(t, err)
	require.Len(t, rs, 3)
	require.Equal(t, 0.25, *rs[2].Score, "a number in a string")
}

func TestImportInspectLogs(t *testing.T) {
	eval, err := ImportInspect("testdata/arith.eval", ImportOptions{})
	require.NoError(t, err)
	js, err := ImportInspect("testdata/arith.json", ImportOptions{})
	require.NoError(t, err)
	require.Equal(t, eval, js, "the .eval log and its .json conversion import alike")
	require.Len(t, eval, 12)
	require.Equal(t, "arith-00", eval[0].ID)
	sum := 0.0
	for _, r := range eval {
		require.NotNil(t, r.Score)
		sum += *r.Score
	}
	require.Equal(t, 10.0, sum, "Inspect scored 10 of 12 correct (accuracy 0.833)")
	var out struct {
		Scorer     string `json:"scorer"`
		Value      string `json:"value"`
		Completion string `json:"completion"`
	}
	require.NoError(t, json.Unmarshal(eval[0].Outputs, &out))
	require.Equal(t, "match", out.Scorer)
	require.Contains(t, []string{"C", "I"}, out.Value)
	require.NotEmpty(t, out.Completion)

	bad := filepath.Join(t.TempDir(), "x.eval")
	require.NoError(t, os.WriteFile(bad, []byte("not a zip"), 0o644))
	_, err = ImportInspect(bad, ImportOptions{})
	require.True(t, errors.Is(err, ErrBadImport))
}
