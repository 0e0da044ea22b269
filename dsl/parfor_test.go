package dsl

import (
	"math"
	"runtime"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

// A for expression over hundreds of elements is evaluated in chunks on
// every core, and gives what one evaluation over the whole collection
// gives: the same value, element order, grouping and keys, and the same
// diagnostics where there are any (a duplicate key across chunks, errors
// in elements, the iteration budget).
func TestParallelForSameAsSerial(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core: for expressions are not chunked")
	}
	exprs := map[string]string{
		"tuple from a list":         `[for i in range(1000) : i * 2]`,
		"tuple with a condition":    `[for i in range(1000) : "n${i}" if i % 7 != 3]`,
		"tuple from an object":      `[for k, v in {for i in range(600) : "k${i}" => i} : "${k}=${v}"]`,
		"tuple from a map":          `[for k, v in tomap({for i in range(600) : "k${i}" => i}) : "${k}=${v}"]`,
		"tuple from a set":          `[for s in toset([for i in range(500) : tostring(i % 400)]) : "s${s}"]`,
		"list index, not chunked":   `[for i, v in range(1000) : i + v]`,
		"object from a list":        `{for i in range(1000) : tostring(i) => i * i}`,
		"object from an object":     `{for k, v in {for i in range(600) : "k${i}" => i} : v => k if v > 10}`,
		"grouped":                   `{for i in range(900) : tostring(i % 7) => i...}`,
		"grouped with a condition":  `{for i in range(900) : tostring(i % 13) => [i] ... if i % 2 == 0}`,
		"nested":                    `[for a in range(300) : [for b in range(3) : a * 3 + b]]`,
		"setproduct grid":           `toset([for p in setproduct(range(40), range(40)) : tostring(p[0] * 40 + p[1])])`,
		"key made twice":            `{for i in range(900) : tostring(i % 500) => i}`,
		"error in some elements":    `[for i in range(600) : [1, 2, 3][i % 5]]`,
		"null key":                  `{for i in range(600) : (i == 450 ? null : tostring(i)) => i}`,
		"null condition":            `[for i in range(600) : i if (i == 450 ? null : true)]`,
		"empty result":              `[for i in range(600) : i if false]`,
		"empty object result":       `{for i in range(600) : tostring(i) => i if false}`,
		"elements of many types":    `[for i in range(600) : i % 2 == 0 ? tostring(i) : [i]]`,
		"loop over a loop's result": `length([for x in [for i in range(2000) : i] : x if x > 1000])`,
	}
	evalBoth := func(t *testing.T, expr string) (par, serial cty.Value, pd, sd hcl.Diagnostics) {
		before := parallelFors.Load()
		par, pd = evalLocal(t, expr)
		chunked := parallelFors.Load() > before
		old := parallelForMin
		parallelForMin = math.MaxInt
		defer func() { parallelForMin = old }()
		serial, sd = evalLocal(t, expr)
		if !pd.HasErrors() && expr != exprs["list index, not chunked"] {
			assert.True(t, chunked, "the loop was not chunked: the test proves nothing")
		}
		return
	}
	for name, expr := range exprs {
		t.Run(name, func(t *testing.T) {
			par, serial, pd, sd := evalBoth(t, expr)
			require.Equal(t, len(sd), len(pd), "serial: %s\nchunked: %s", sd.Error(), pd.Error())
			for i := range sd {
				assert.Equal(t, sd[i].Summary, pd[i].Summary)
				assert.Equal(t, sd[i].Detail, pd[i].Detail)
				if assert.Equal(t, sd[i].Subject != nil, pd[i].Subject != nil) && sd[i].Subject != nil {
					assert.Equal(t, sd[i].Subject.Start, pd[i].Subject.Start)
					assert.Equal(t, sd[i].Subject.End, pd[i].Subject.End)
				}
			}
			assert.True(t, serial.RawEquals(par), "serial:  %s\nchunked: %s", serial.GoString(), par.GoString())
		})
	}
}

// Chunks charge the evaluation's budget what the loop would: a chunked
// loop within the budget passes, one over it is reported once, as
// without chunks.
func TestParallelForBudget(t *testing.T) {
	lowBudget(t)
	v, diags := evalLocal(t, "length(flatten([for a in range(300) : [for b in range(51) : b]]))")
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.True(t, v.RawEquals(cty.NumberIntVal(15300)))
	// 300 + 300 x 51 + 1,000 = 16,600 elements > 16,384: the chunks
	// charged the budget what they visited.
	_, diags = evalLocal(t, "[length(flatten([for a in range(300) : [for b in range(51) : b]])), length([for c in range(1000) : c])]")
	require.Len(t, diags, 1, "%s", diags.Error())
	assert.Equal(t, "Too many iterations", diags[0].Summary)
}
