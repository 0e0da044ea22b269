package plan_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/process"
)

// Every sensitive value inside a node's attributes — alone, in a list, in
// an object, a number — is found, and only those; messages lose them,
// longest first, so that a secret containing another is hidden whole.
func TestSensitiveStrings(t *testing.T) {
	args := map[string]cty.Value{
		"run": cty.TupleVal([]cty.Value{cty.StringVal("python"), cty.StringVal("tok-123").Mark(dsl.SensitiveMark)}),
		"env": cty.ObjectVal(map[string]cty.Value{
			"A": cty.StringVal("plain"),
			"B": cty.StringVal("tok-123-long").Mark(dsl.SensitiveMark),
		}),
		"all":     cty.ListVal([]cty.Value{cty.StringVal("x"), cty.StringVal("")}).Mark(dsl.SensitiveMark),
		"port":    cty.NumberIntVal(8443).Mark(dsl.SensitiveMark),
		"unknown": cty.UnknownVal(cty.String).Mark(dsl.SensitiveMark),
	}
	got := plan.SensitiveStrings(args)
	assert.Equal(t, []string{"tok-123-long", "tok-123", "8443", "x"}, got)
	assert.Equal(t, "cannot start (sensitive) with (sensitive) on port (sensitive)",
		process.RedactSecrets("cannot start tok-123-long with tok-123 on port 8443", got[:3]))
	assert.Empty(t, plan.SensitiveStrings(map[string]cty.Value{"run": cty.StringVal("plain")}))
}
