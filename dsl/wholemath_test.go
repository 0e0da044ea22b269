package dsl

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A math function whose result has no real value (NaN) is refused in
// words, at the call, without the Go text of the panic the expression
// library makes of it ("Float.SetFloat64(NaN)"). An infinite result is out
// of range, as 1/0 is.
func TestMathWithoutRealValueIsPlain(t *testing.T) {
	for expr, want := range map[string]string{
		"log(-1, 2)":     `Call to function "log" failed: the log of a negative number (-1) has no real value.`,
		"log(2, -2)":     `Call to function "log" failed: a log in a negative base (-2) has no real value.`,
		"log(1, 1)":      `Call to function "log" failed: a log in base 1 has no value.`,
		"log(0, 0)":      `Call to function "log" failed: the result is not a number (NaN).`,
		"pow(-8, 0.5)":   `Call to function "pow" failed: a negative number (-8) to a fractional power (0.5) has no real value.`,
		"pow(-8, 1/3)":   `Call to function "pow" failed: a negative number (-8) to a fractional power (0.3333333333333333) has no real value.`,
		"log(0, 2)":      "This expression yields a number beyond what cairn handles",
		"pow(0, -1)":     "This expression yields a number beyond what cairn handles",
		"1 + log(-1, 2)": `Call to function "log" failed: the log of a negative number (-1) has no real value.`,
	} {
		t.Run(expr, func(t *testing.T) {
			_, diags := evalLocal(t, expr)
			require.True(t, diags.HasErrors(), expr)
			diags = TidyDiagnostics(diags)
			d := diags[0]
			assert.Contains(t, d.Detail, want)
			assert.NotContains(t, d.Detail, "Float")
			assert.NotContains(t, d.Detail, "outside what this operation handles")
			require.NotNil(t, d.Subject)
			// The local is "  x = EXPR" on line 2: the call starts at column 7
			// (the sum's call at column 11).
			assert.Equal(t, 2, d.Subject.Start.Line)
			assert.Contains(t, []int{7, 11}, d.Subject.Start.Column)
		})
	}
	for expr, want := range map[string]float64{"log(8, 2)": 3, "pow(2, 10)": 1024, "pow(-8, 2)": 64, "pow(9, 0.5)": 3} {
		v, diags := evalLocal(t, expr)
		require.False(t, diags.HasErrors(), "%s: %s", expr, diags.Error())
		f, _ := v.AsBigFloat().Float64()
		assert.InDelta(t, want, f, 1e-12, expr)
	}
}

// A panic of the expression library on a NaN, wherever it comes from, is
// said as a result that is not a number, not in Go's words.
func TestTidyDiagnosticsNaN(t *testing.T) {
	diags := TidyDiagnostics(hcl.Diagnostics{{
		Severity: hcl.DiagError, Summary: "Error in function call",
		Detail: "Call to function \"x\" failed: panic in function implementation: Float.SetFloat64(NaN)\ngoroutine 1 [running]:\nmain.main()",
	}})
	assert.Equal(t, `Call to function "x" failed: the result is not a number (NaN).`, diags[0].Detail)
}

// NaN and the infinities, which a float parser takes, are not durations:
// neither "too large" nor "negative".
func TestParseGoDurationNonFinite(t *testing.T) {
	for _, s := range []string{"NaN", "nan", "Inf", "+Inf", "-Inf", "infinity", "-Infinity"} {
		_, ok, err := ParseGoDuration(s)
		assert.True(t, ok, s)
		require.Error(t, err, s)
		assert.Equal(t, `"`+s+`" is not a duration: write a number of seconds, or one like "90s", "60m" or "1h30m"`, err.Error())
	}
	// A finite number is the caller's to read as seconds; Go's syntax is
	// read as ever.
	for _, s := range []string{"90", "1.5", "1e400", "-3"} {
		_, ok, _ := ParseGoDuration(s)
		assert.False(t, ok, s)
	}
	d, ok, err := ParseGoDuration("1h30m")
	assert.True(t, ok)
	assert.NoError(t, err)
	assert.Equal(t, "1h30m0s", d.String())
}

// max_submitted, a whole number, takes a string that is one (as every
// whole number does) and refuses anything else in words, at the
// attribute, not in the decoder's (an int64 range, "Unsuitable value").
func TestExecutorMaxSubmittedWholeNumber(t *testing.T) {
	parse := func(val string) (*Config, hcl.Diagnostics) {
		src := "pipeline \"p\" {\n  executor \"slurm\" {\n    max_submitted = " + val + "\n  }\n}\n"
		return NewLoader(nil).ParseSource([]byte(src), filepath.Join(t.TempDir(), "p.hcl"))
	}
	cfg, diags := parse(`"50"`)
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.Equal(t, 50, cfg.Executor.MaxSubmitted)
	for val, shown := range map[string]string{`"abc"`: `"abc"`, `"1.5"`: `"1.5"`, "1.5": "1.5", "0": "0", `"0"`: `"0"`, "1e30": "1e+30"} {
		_, diags := parse(val)
		require.True(t, diags.HasErrors(), val)
		require.Len(t, diags, 1, "%s: %s", val, diags.Error())
		assert.Equal(t, "Invalid max_submitted", diags[0].Summary, val)
		assert.Equal(t, "max_submitted is how many jobs may be in Slurm at once: a whole number, at least 1, not "+shown+".", diags[0].Detail, val)
		assert.Equal(t, 3, diags[0].Subject.Start.Line, val)
		assert.Equal(t, 21, diags[0].Subject.Start.Column, val)
	}
}
