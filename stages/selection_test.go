package stages

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/stages/aggregate"
)

// The aggregation accepts the fallback reasons a job writes, and no
// other.
func TestAggregateKnowsTheFallbackReasons(t *testing.T) {
	assert.Equal(t, []string{FallbackNotBetter, FallbackNoIncumbent, FallbackValidationInvalid}, aggregate.FallbackReasons)
}

func evalRun(mean float64, scored, items int, status string) evalInstance {
	r := &EvaluateResult{Scored: scored, ItemCount: items}
	if scored > 0 {
		r.MeanScore = &mean
	}
	return evalInstance{Status: status, Result: r}
}

// The selection rule: the incumbent iff strictly better on validation,
// else the seed bundle with the reason.
func TestDecide(t *testing.T) {
	seedB, inc := []string{"bundles/seed/"}, []string{"out/optimization/incumbent/"}
	proposed := Optimization{Proposed: true, SeedBundle: seedB, Candidate: inc}
	reason := func(s Selection) string {
		if s.FallbackReason == nil {
			return ""
		}
		return *s.FallbackReason
	}
	s := Decide(proposed, evalRun(0.5, 10, 10, "ok"), evalRun(0.6, 10, 10, "ok"))
	assert.Equal(t, "incumbent", s.Deployed)
	assert.Equal(t, inc, s.DeployedBundle)
	assert.Equal(t, "", reason(s))

	s = Decide(proposed, evalRun(0.5, 10, 10, "ok"), evalRun(0.5, 10, 10, "ok"))
	assert.Equal(t, "seed", s.Deployed, "equal is not better")
	assert.Equal(t, seedB, s.DeployedBundle)
	assert.Equal(t, FallbackNotBetter, reason(s))

	s = Decide(Optimization{SeedBundle: seedB, Candidate: seedB}, evalRun(0.5, 10, 10, "ok"), evalRun(0.5, 10, 10, "ok"))
	assert.Equal(t, FallbackNoIncumbent, reason(s))
	assert.Nil(t, s.IncumbentMean)

	s = Decide(proposed, evalRun(0.5, 10, 10, "ok"), evalInstance{Status: "failed"})
	assert.Equal(t, FallbackValidationInvalid, reason(s))
	s = Decide(proposed, evalRun(0.5, 10, 10, "ok"), evalRun(0.9, 9, 10, "ok"))
	assert.Equal(t, FallbackValidationInvalid, reason(s), "an item without a score")
	assert.Equal(t, "seed", s.Deployed)
	// Empty validation splits: no mean on either side, so no comparison.
	s = Decide(proposed, evalRun(0, 0, 0, "ok"), evalRun(0, 0, 0, "ok"))
	assert.Equal(t, FallbackValidationInvalid, reason(s), "a mean over no item")
	assert.Nil(t, s.SeedMean)
	assert.Nil(t, s.IncumbentMean)
}

// Of an evaluation's instance, only its status, class and result key a
// select or job_result node.
func TestInstanceKeyValue(t *testing.T) {
	inst := func(d float64) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{
			"status": cty.StringVal("ok"), "class": cty.StringVal(""), "duration_s": cty.NumberFloatVal(d),
			"result": cty.ObjectVal(map[string]cty.Value{"mean_score": cty.NumberFloatVal(0.5)}),
		})
	}
	a, b := Select{}.KeyValue("seed", inst(1.5)), Select{}.KeyValue("seed", inst(9))
	assert.True(t, a.RawEquals(b))
	assert.False(t, a.Type().HasAttribute("duration_s"))
	assert.True(t, JobResult{}.KeyValue("deployed", inst(1)).RawEquals(JobResult{}.KeyValue("deployed", inst(2))))
	assert.False(t, JobResult{}.KeyValue("job", inst(1)).RawEquals(JobResult{}.KeyValue("job", inst(2))), "other attributes whole")
}

// A saved selection follows the rule by its own figures: every selection
// Decide makes does, and one edited to deploy another bundle than its
// means give, or with a reason its figures contradict, does not.
func TestSelectionContradiction(t *testing.T) {
	seedB, inc := []string{"bundles/seed/"}, []string{"out/optimization/incumbent/"}
	proposed := Optimization{Proposed: true, SeedBundle: seedB, Candidate: inc}
	none := Optimization{SeedBundle: seedB, Candidate: seedB}
	for _, c := range []struct {
		opt       Optimization
		seed, inc evalInstance
	}{
		{proposed, evalRun(0.5, 10, 10, "ok"), evalRun(0.6, 10, 10, "ok")},
		{proposed, evalRun(0.5, 10, 10, "ok"), evalRun(0.5, 10, 10, "ok")},
		{none, evalRun(0.5, 10, 10, "ok"), evalRun(0.5, 10, 10, "ok")},
		{proposed, evalRun(0.5, 10, 10, "ok"), evalInstance{Status: "failed"}},
		{proposed, evalRun(0.5, 10, 10, "ok"), evalRun(0.9, 9, 10, "ok")},
		{proposed, evalRun(0, 0, 0, "ok"), evalRun(0, 0, 0, "ok")},
	} {
		assert.Empty(t, Decide(c.opt, c.seed, c.inc).contradiction(c.opt))
	}

	better := Decide(proposed, evalRun(0.733, 10, 10, "ok"), evalRun(1, 10, 10, "ok"))
	require.Equal(t, "incumbent", better.Deployed)
	// Edited to deploy the seed bundle "as not better".
	edited := better
	r := FallbackNotBetter
	edited.Deployed, edited.DeployedBundle, edited.FallbackReason = "seed", seedB, &r
	assert.Equal(t, "fallback_reason incumbent_not_better, but the incumbent's validation mean (1) is greater than the seed bundle's (0.733), or one is missing", edited.contradiction(proposed))

	worse := Decide(proposed, evalRun(0.8, 10, 10, "ok"), evalRun(0.7, 10, 10, "ok"))
	edited = worse
	edited.Deployed, edited.DeployedBundle, edited.FallbackReason = "incumbent", inc, nil
	assert.Equal(t, "it deploys the incumbent, whose validation mean (0.7) is not strictly greater than the seed bundle's (0.8)", edited.contradiction(proposed))

	edited = better
	edited.DeployedBundle = []string{"elsewhere/"}
	assert.Contains(t, edited.contradiction(proposed), `it deploys ["elsewhere/"], not the incumbent`)
	assert.Equal(t, "proposed is true, optimization.json's is false", better.contradiction(none))
	r2 := "because"
	edited = worse
	edited.FallbackReason = &r2
	assert.Contains(t, edited.contradiction(proposed), `fallback_reason "because", not one of`)
}

// A job none of whose test items is valid has no means: result.json and
// the summary line give null, not a mean of 0 that reads as a score. One
// valid item gives them.
func TestJobFilesGiveNoMeansWithoutAValidItem(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tf := &TestFile{Format: "cairn.job-test/1", Items: []TestItem{{ID: "q1"}, {ID: "q0"}}}
	res := &ResultFile{Status: "ok", CellID: "d/r/m"}
	_, result, err := JobFiles(tf, res)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(result, &doc))
	for _, field := range []string{"baseline_mean", "deployed_mean", "delta_pp"} {
		v, ok := doc[field]
		assert.True(t, ok, field)
		assert.Nil(t, v, field)
	}
	assert.Equal(t, false, doc["valid_for_aggregation"])
	assert.Equal(t, float64(2), doc["test_invalid_items"])
	assert.Contains(t, res.SummaryLine("runs/x"), `"baseline_mean":null,"deployed_mean":null,"delta_pp":null`)

	tf.Items[0] = TestItem{ID: "q1", Baseline: f(0.25), Deployed: f(0.75), Valid: true}
	_, result, err = JobFiles(tf, res)
	require.NoError(t, err)
	doc = nil
	require.NoError(t, json.Unmarshal(result, &doc))
	assert.Equal(t, 0.25, doc["baseline_mean"])
	assert.Equal(t, 0.75, doc["deployed_mean"])
	assert.Equal(t, float64(50), doc["delta_pp"])
	assert.Contains(t, res.SummaryLine("runs/x"), `"baseline_mean":0.25,"deployed_mean":0.75,"delta_pp":50,`)
}

// Scores whose means would overflow give no job files, rather than a
// result.json without its means: each is refused, naming the item and
// the score, and scores within the limit still give means.
func TestJobFilesRefuseScoresWhoseMeansOverflow(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		baseline, deployed float64
		msg                string
	}{
		{-1e305, 1e305, `item "q0": the deployed − baseline 2e+305 is beyond ±1.1e+305`},
		{0, 1e308, `item "q0": the deployed score 1e+308 is beyond`},
		{-1e308, 0, `item "q0": the baseline score -1e+308 is beyond`},
	} {
		tf := &TestFile{Format: "cairn.job-test/1", Items: []TestItem{{ID: "q0", Baseline: f(c.baseline), Deployed: f(c.deployed), Valid: true}}}
		test, result, err := JobFiles(tf, &ResultFile{Status: "ok", CellID: "d/r/m"})
		require.Error(t, err, c.msg)
		assert.Contains(t, err.Error(), c.msg)
		assert.Contains(t, err.Error(), "nothing can be computed from it")
		assert.Nil(t, test)
		assert.Nil(t, result)
	}
	tf := &TestFile{Format: "cairn.job-test/1", Items: []TestItem{{ID: "q0", Baseline: f(1e300), Deployed: f(-1e300), Valid: true}, {ID: "q1"}}}
	_, result, err := JobFiles(tf, &ResultFile{Status: "ok", CellID: "d/r/m"})
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(result, &doc))
	assert.Equal(t, 1e300, doc["baseline_mean"])
}
