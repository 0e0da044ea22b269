package simlib

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name      string
		json      string
		parseErr  string // ParseConfig fails with this
		invalid   string // Validate fails with this
		wantVal   int64
		wantRatio float64
	}{
		{name: "valid", json: `{"vortex_topk_val": 2048, "vortex_topk_ratio": 0.1}`, wantVal: 2048, wantRatio: 0.1},
		{name: "ratio one", json: `{"vortex_topk_val": 1, "vortex_topk_ratio": 1}`, wantVal: 1, wantRatio: 1},
		{name: "extra fields kept", json: `{"vortex_topk_val": 8, "vortex_topk_ratio": 0.5, "indexer": "block"}`, wantVal: 8, wantRatio: 0.5},
		{name: "not json", json: `{"vortex_topk_val": `, parseErr: "not valid JSON"},
		{name: "array", json: `[1, 2]`, parseErr: "want a JSON object, got an array"},
		{name: "trailing", json: `{"vortex_topk_val": 1, "vortex_topk_ratio": 1} {}`, parseErr: "trailing data"},
		{name: "val missing", json: `{"vortex_topk_ratio": 0.1}`, invalid: "vortex_topk_val is required"},
		{name: "val zero", json: `{"vortex_topk_val": 0, "vortex_topk_ratio": 0.1}`, invalid: "vortex_topk_val must be > 0, got 0"},
		{name: "val negative", json: `{"vortex_topk_val": -4, "vortex_topk_ratio": 0.1}`, invalid: "must be > 0, got -4"},
		{name: "val fraction", json: `{"vortex_topk_val": 1.5, "vortex_topk_ratio": 0.1}`, invalid: "vortex_topk_val must be an integer, got 1.5"},
		{name: "val string", json: `{"vortex_topk_val": "12", "vortex_topk_ratio": 0.1}`, invalid: "vortex_topk_val must be an integer, got a string"},
		{name: "ratio zero", json: `{"vortex_topk_val": 1, "vortex_topk_ratio": 0}`, invalid: "vortex_topk_ratio must be in (0, 1], got 0"},
		{name: "ratio above one", json: `{"vortex_topk_val": 1, "vortex_topk_ratio": 1.01}`, invalid: "got 1.01"},
		{name: "ratio null", json: `{"vortex_topk_val": 1, "vortex_topk_ratio": null}`, invalid: "vortex_topk_ratio is required"},
		{name: "both wrong", json: `{"vortex_topk_val": 0, "vortex_topk_ratio": 2}`, invalid: "vortex_topk_val must be > 0, got 0; vortex_topk_ratio must be in (0, 1], got 2"},
		{name: "sim unknown field", json: `{"vortex_topk_val": 1, "vortex_topk_ratio": 1, "sim": {"crahs": true}}`, parseErr: `sim: json: unknown field "crahs"`},
		{name: "sim unknown stage", json: `{"vortex_topk_val": 1, "vortex_topk_ratio": 1, "sim": {"stages": ["train"]}}`, parseErr: `unknown program "train"`},
		{name: "sim duration unknown program", json: `{"vortex_topk_val": 1, "vortex_topk_ratio": 1, "sim": {"duration_ms": {"eval": 3}}}`, parseErr: `duration_ms: unknown program "eval"`},
		{name: "sim duration negative", json: `{"vortex_topk_val": 1, "vortex_topk_ratio": 1, "sim": {"duration_ms": -1}}`, parseErr: "negative duration"},
		{name: "sim duration string", json: `{"vortex_topk_val": 1, "vortex_topk_ratio": 1, "sim": {"duration_ms": "5s"}}`, parseErr: "want milliseconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tt.json))
			if tt.parseErr != "" {
				require.ErrorIs(t, err, ErrInvalidConfig)
				assert.ErrorContains(t, err, tt.parseErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, c.ContentHash, 64)
			if tt.invalid != "" {
				err := c.Validate()
				require.ErrorIs(t, err, ErrInvalidConfig)
				assert.ErrorContains(t, err, tt.invalid)
				return
			}
			require.NoError(t, c.Validate())
			assert.Equal(t, tt.wantVal, c.TopkVal)
			assert.Equal(t, tt.wantRatio, c.TopkRatio)
		})
	}
}

func TestSimFields(t *testing.T) {
	c, err := ParseConfig([]byte(`{"vortex_topk_val": 1, "vortex_topk_ratio": 1, "sim": {
		"duration_ms": {"preflight": 5, "aime24": 7000},
		"exit_code": 4, "crash": true, "hang": true, "oom": true, "ignore_sigterm": true,
		"stages": ["ruler", "aime24"], "preflight_error": "bad indexer",
		"ruler_accuracy": 0.5, "metrics": {"mean@16": 0.25, "throughput": 100}}}`))
	require.NoError(t, err)
	s := c.Sim
	assert.Equal(t, 4, s.ExitCode)
	assert.True(t, s.Crash && s.Hang && s.OOM && s.IgnoreSIGTERM)
	assert.Equal(t, "bad indexer", s.PreflightError)
	assert.False(t, s.AppliesTo(Preflight))
	assert.True(t, s.AppliesTo(Ruler))
	assert.True(t, s.AppliesTo(AIME24))
	assert.Equal(t, 5*time.Millisecond, Duration(c, Preflight))
	assert.Equal(t, 7*time.Second, Duration(c, AIME24))
	// No entry for ruler: the derived default.
	d := Duration(c, Ruler)
	assert.True(t, d >= 200*time.Millisecond && d <= 800*time.Millisecond, "ruler default %v", d)

	c, err = ParseConfig([]byte(`{"vortex_topk_val": 1, "vortex_topk_ratio": 1, "sim": {"duration_ms": 0}}`))
	require.NoError(t, err)
	for _, p := range Programs {
		assert.Zero(t, Duration(c, p), p)
		assert.True(t, c.Sim.AppliesTo(p), "no stages means every program")
	}

	c, err = ParseConfig([]byte(`{"vortex_topk_val": 1, "vortex_topk_ratio": 1}`))
	require.NoError(t, err)
	d = Duration(c, Preflight)
	assert.True(t, d >= 20*time.Millisecond && d <= 100*time.Millisecond, "preflight default %v", d)
}

func TestContentHash(t *testing.T) {
	parse := func(s string) *Config {
		t.Helper()
		c, err := ParseConfig([]byte(s))
		require.NoError(t, err)
		return c
	}
	base := parse(`{"vortex_topk_val": 2048, "vortex_topk_ratio": 0.1, "indexer": {"kind": "block", "size": 16}}`)
	reformatted := parse("{\n  \"indexer\": {\"size\": 16, \"kind\": \"block\"},\n  \"vortex_topk_ratio\": 0.1,\n\t\"vortex_topk_val\": 2048\n}\n")
	changed := parse(`{"vortex_topk_val": 2048, "vortex_topk_ratio": 0.1, "indexer": {"kind": "block", "size": 32}}`)
	withSim := parse(`{"vortex_topk_val": 2048, "vortex_topk_ratio": 0.1, "indexer": {"kind": "block", "size": 16}, "sim": {"duration_ms": 1}}`)
	// Numbers are hashed as written: 0.10 is another file than 0.1.
	spelled := parse(`{"vortex_topk_val": 2048, "vortex_topk_ratio": 0.10, "indexer": {"kind": "block", "size": 16}}`)

	assert.Equal(t, base.ContentHash, reformatted.ContentHash, "key order and whitespace do not matter")
	assert.Equal(t, base.ModelHash, reformatted.ModelHash)
	assert.NotEqual(t, base.ContentHash, changed.ContentHash)
	assert.NotEqual(t, base.ModelHash, changed.ModelHash)
	assert.NotEqual(t, base.ContentHash, withSim.ContentHash, "the sim object is part of the file")
	assert.Equal(t, base.ModelHash, withSim.ModelHash, "but not of the simulated model")
	assert.NotEqual(t, base.ContentHash, spelled.ContentHash)
	assert.Equal(t, AIME24Metrics(base), AIME24Metrics(withSim))
	assert.Equal(t, RulerAccuracy(base), RulerAccuracy(withSim))
}

func mustConfig(t *testing.T, val int64, ratio float64, extra string) *Config {
	t.Helper()
	c, err := ParseConfig([]byte(`{"vortex_topk_val": ` + strconv.FormatInt(val, 10) + `, "vortex_topk_ratio": ` + strconv.FormatFloat(ratio, 'g', -1, 64) + extra + `}`))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	return c
}

func TestRulerAccuracy(t *testing.T) {
	// The seed's gate is 0.85: narrow top-k fails it, wide top-k passes.
	assert.Less(t, RulerAccuracy(mustConfig(t, 2048, 0.05, "")), 0.85)
	assert.Less(t, RulerAccuracy(mustConfig(t, 32, 0.5, "")), 0.85, "a tiny topk_val fails whatever the ratio")
	assert.GreaterOrEqual(t, RulerAccuracy(mustConfig(t, 2048, 0.15, "")), 0.85)
	assert.GreaterOrEqual(t, RulerAccuracy(mustConfig(t, 4096, 0.3, "")), 0.85)

	for _, ratio := range []float64{0.01, 0.05, 0.1, 0.2, 0.5, 1} {
		c := mustConfig(t, 1024, ratio, "")
		a := RulerAccuracy(c)
		assert.Equal(t, a, RulerAccuracy(mustConfig(t, 1024, ratio, "")), "deterministic")
		assert.True(t, a >= 0 && a <= 1, "accuracy %v in [0,1]", a)
		assert.InDelta(t, 0, a*RulerExamples-math.Round(a*RulerExamples), 1e-9, "a multiple of 1/%d", RulerExamples)
	}
	// Far-apart ratios are ordered despite the jitter.
	assert.Less(t, RulerAccuracy(mustConfig(t, 1024, 0.02, "")), RulerAccuracy(mustConfig(t, 1024, 0.1, "")))
	assert.Less(t, RulerAccuracy(mustConfig(t, 1024, 0.1, "")), RulerAccuracy(mustConfig(t, 1024, 0.4, "")))

	assert.Equal(t, 0.42, RulerAccuracy(mustConfig(t, 4096, 0.5, `, "sim": {"ruler_accuracy": 0.42}`)))
}

func TestAIME24Metrics(t *testing.T) {
	var prev Metrics
	for i, ratio := range []float64{0.02, 0.08, 0.3, 0.9} {
		m := AIME24Metrics(mustConfig(t, 2048, ratio, ""))
		assert.Equal(t, m, AIME24Metrics(mustConfig(t, 2048, ratio, "")), "deterministic")
		assert.True(t, m.Mean16 > 0 && m.Mean16 <= 1, "mean@16 %v", m.Mean16)
		assert.GreaterOrEqual(t, m.Pass16, m.Mean16, "pass@16 >= mean@16")
		assert.LessOrEqual(t, m.Pass16, 1.0)
		assert.InDelta(t, 0, m.Mean16*AIMEProblems*AIMESamples-math.Round(m.Mean16*AIMEProblems*AIMESamples), 1e-9)
		assert.InDelta(t, 0, m.Pass16*AIMEProblems-math.Round(m.Pass16*AIMEProblems), 1e-9)
		assert.Positive(t, m.Throughput)
		assert.Positive(t, m.E2ETime)
		if i > 0 {
			// The trade-off the Pareto front is about.
			assert.Greater(t, m.Mean16, prev.Mean16, "ratio %v: more kept, more accurate", ratio)
			assert.Less(t, m.Throughput, prev.Throughput, "ratio %v: more kept, slower", ratio)
			assert.Greater(t, m.E2ETime, prev.E2ETime)
		}
		prev = m
	}

	a := AIME24Metrics(mustConfig(t, 2048, 0.1, ""))
	b := AIME24Metrics(mustConfig(t, 2048, 0.1, `, "indexer": "other"`))
	assert.NotEqual(t, a, b, "any change to the config changes the jitter")

	m := AIME24Metrics(mustConfig(t, 2048, 0.1, `, "sim": {"metrics": {"mean@16": 0.5, "e2e_time": 12}}`))
	assert.Equal(t, 0.5, m.Mean16)
	assert.Equal(t, 12.0, m.E2ETime)
	assert.Equal(t, a.Throughput, m.Throughput, "fields not overridden keep their derived value")
	assert.Equal(t, a.Pass16, m.Pass16)
}

func TestMirrorDir(t *testing.T) {
	tests := []struct{ in, root, want, err string }{
		{in: "submissions/me/batch_a_id0.json", root: "summary_submissions", want: "summary_submissions/me/batch_a_id0"},
		{in: "./submissions/me/x.json", root: "summary_ruler_submissions", want: "summary_ruler_submissions/me/x"},
		{in: "/repo/submissions/me/x.json", root: "summary_submissions", want: "/repo/summary_submissions/me/x"},
		{in: "work/submissions/a/b/c.json", root: "summary_submissions", want: "work/summary_submissions/a/b/c"},
		{in: "submissions/x.json", root: "summary_submissions", want: "summary_submissions/x"},
		{in: "submissions/old/submissions/x.json", root: "s", want: "submissions/old/s/x"},
		{in: "configs/me/x.json", root: "summary_submissions", err: "not a submissions/<tag>/<name>.json file"},
		{in: "submissions/me/x.yaml", root: "summary_submissions", err: "not a submissions"},
		{in: "submissions/me/.json", root: "summary_submissions", err: "not a submissions"},
		{in: "submissions.json", root: "summary_submissions", err: "not a submissions"},
	}
	for _, tt := range tests {
		got, err := MirrorDir(tt.in, tt.root)
		if tt.err != "" {
			assert.ErrorContains(t, err, tt.err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}
