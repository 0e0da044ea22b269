package stages

import (
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

// Every kind's whole-number attribute takes what converts to a whole
// number, as the generic cpus and concurrency do: the string "2" (an
// untyped variable given --var n=2 holds one) is 2. A string that is not a
// whole number ("abc", "1.5") is refused, at the attribute.
func TestWholeNumberAttributesTakeNumericStrings(t *testing.T) {
	at := hcl.Range{Filename: "pipeline.hcl", Start: hcl.Pos{Line: 17, Column: 14, Byte: 300}, End: hcl.Pos{Line: 17, Column: 17, Byte: 303}}
	cases := []struct {
		kind, attr string
		args       map[string]cty.Value // the node's other arguments
		detail     string               // the refusal of a string that is not a whole number (its start)
	}{
		{"job", "seed", seedJobNode().Args, "seed must be a whole number."},
		{"job", "budget", seedJobNode().Args, "budget must be a whole number of rollouts, 0 or more."},
		{"serve", "replicas", nil, "replicas must be a whole number from 1 to 1024."},
		{"serve", "max_replicas", nil, "max_replicas must be a whole number from 1 to 1024."},
		{"serve", "port", nil, "port must be a whole number from 1 to 65535."},
		{"serve", "restarts", nil, "restarts must be a whole number from 0 to 100."},
		{"waves", "batch_size", map[string]cty.Value{"run": cty.ListVal([]cty.Value{cty.StringVal("true")})}, "batch_size must be a whole number of variants, from 1 to 1048576."},
		{"aggregate", "bootstrap", nil, "bootstrap is a whole number of replicates from 1 to 1000000 (the protocol uses 10000)."},
		{"slot", "max_replacements", nil, "max_replacements is a whole number ≥ 0: the replacements allowed in the whole ledger."},
		// Already taken so: the same rule for every kind.
		{"evaluate", "replicas", nil, "replicas must be a whole number"},
		{"optimize", "budget", nil, "budget is the number of rollouts the method may charge: a whole number, 0 or more."},
	}
	check := func(kind, attr string, args map[string]cty.Value, v cty.Value) hcl.Diagnostics {
		k, ok := Lookup(kind)
		require.True(t, ok, kind)
		a := map[string]cty.Value{}
		for name, x := range args {
			a[name] = x
		}
		a[attr] = v
		n := &Node{Address: "stage." + kind, Stage: kind, Args: a, Ranges: map[string]hcl.Range{attr: at}}
		var mine hcl.Diagnostics
		for _, d := range k.Check(n) {
			if d.Summary == "Invalid "+attr {
				mine = append(mine, d)
			}
		}
		return mine
	}
	for _, c := range cases {
		t.Run(c.kind+"."+c.attr, func(t *testing.T) {
			for _, v := range []cty.Value{cty.NumberIntVal(2), cty.StringVal("2"), cty.StringVal("2.0")} {
				assert.Empty(t, check(c.kind, c.attr, c.args, v), "%s = %s", c.attr, v.GoString())
			}
			for _, v := range []cty.Value{cty.StringVal("abc"), cty.StringVal("1.5"), cty.NumberFloatVal(1.5), cty.True} {
				d := check(c.kind, c.attr, c.args, v)
				require.Len(t, d, 1, "%s = %s", c.attr, v.GoString())
				assert.Contains(t, d[0].Detail, c.detail)
				assert.Equal(t, at, *d[0].Subject)
			}
		})
	}

	// The job seals the numbers, not the strings.
	n := seedJobNode()
	n.Args["seed"], n.Args["budget"] = cty.StringVal("1"), cty.StringVal("10")
	s, diags := decodeJob(n)
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.True(t, s.known)
	assert.Equal(t, 1, s.id.Seed)
	assert.Equal(t, 10, s.id.Budget)
	n = seedJobNode()
	n.Args["budget"] = cty.StringVal("-3")
	_, diags = decodeJob(n)
	require.Len(t, diags, 1)
	assert.Equal(t, "budget must be a whole number of rollouts, 0 or more.", diags[0].Detail)

	// A slot's numbers and duration are read as everywhere else.
	sn := &Node{Stage: "slot", Args: map[string]cty.Value{
		"max_replacements": cty.StringVal("3"), "memory_limit_mib": cty.StringVal("512"), "allocation_time": cty.StringVal("2400"),
	}, Ranges: map[string]hcl.Range{}}
	spec, diags := slotArgs(sn)
	for _, d := range diags {
		assert.NotContains(t, []string{"Invalid max_replacements", "Invalid memory_limit_mib", "Invalid allocation_time"}, d.Summary, d.Detail)
	}
	assert.Equal(t, 3, spec.maxReplace)
	assert.Equal(t, 512.0, spec.limit)
	assert.Equal(t, 40*time.Minute, spec.allocationTime)
}

// A duration of NaN or an infinity is not a duration, in the words of
// every other string that is not one: neither "too large" nor "must be
// positive".
func TestDurationNonFiniteIsNotADuration(t *testing.T) {
	for _, s := range []string{"NaN", "-Inf", "Inf", "+Inf", "infinity"} {
		_, err := durationValue(cty.StringVal(s))
		require.Error(t, err, s)
		assert.Equal(t, `"`+s+`" is not a duration: write a number of seconds, or one like "90s", "60m" or "1h30m"`, err.Error())
	}
	at := hcl.Range{Filename: "pipeline.hcl", Start: hcl.Pos{Line: 4, Column: 19, Byte: 60}, End: hcl.Pos{Line: 4, Column: 24, Byte: 65}}
	n := &Node{Stage: "serve", Args: map[string]cty.Value{"start_timeout": cty.StringVal("-Inf")}, Ranges: map[string]hcl.Range{"start_timeout": at}}
	_, diags := decodeServe(n)
	var found bool
	for _, d := range diags {
		if d.Summary == "Invalid start_timeout" {
			found = true
			assert.Equal(t, `"-Inf" is not a duration: write a number of seconds, or one like "90s", "60m" or "1h30m".`, d.Detail)
			assert.Equal(t, at, *d.Subject)
		}
	}
	assert.True(t, found, "%s", diags.Error())
}
