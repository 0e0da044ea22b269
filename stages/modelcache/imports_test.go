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
