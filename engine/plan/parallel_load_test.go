package plan_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/plan/plantest"
)

// A pipeline of many stages is decoded and its references collected on
// every core: the configuration, the graph and every diagnostic, in its
// order, are those of the same load on one core.
func TestLoadOnEveryCoreIsLoadOnOne(t *testing.T) {
	var b strings.Builder
	b.WriteString("pipeline \"p\" {}\n")
	for i := 0; i < 600; i++ {
		fmt.Fprintf(&b, "stage \"command\" \"s%d\" {\n  run = [\"true\"]\n  outputs = [\"out/s%d\"]\n", i, i)
		if i > 0 {
			fmt.Fprintf(&b, "  after = [stage.s%d]\n", i-1)
		}
		switch i % 97 {
		case 5:
			b.WriteString("  bogus = 1\n") // an unknown attribute
		case 17:
			fmt.Fprintf(&b, "  inputs = [stage.nope%d.outputs[0]]\n", i) // an undeclared stage
		case 40:
			b.WriteString("  on_interrupt = \"never\"\n")
		case 61:
			b.WriteString("  env = { A = local.missing }\n")
		}
		b.WriteString("}\n")
		if i%211 == 100 {
			fmt.Fprintf(&b, "stage \"comand\" \"k%d\" {\n  run = [\"true\"]\n}\n", i) // an unknown kind
		}
	}
	w := plantest.New(t, b.String())
	load := func() (*plan.Loaded, string) {
		l, diags := plan.Load(plan.LoadOptions{Path: filepath.Join(w.Root, "pipeline.hcl"), Root: w.Root})
		var out []string
		for _, d := range diags {
			out = append(out, fmt.Sprintf("%s: %s: %s", d.Subject, d.Summary, d.Detail))
		}
		return l, strings.Join(out, "\n")
	}
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	many, manyDiags := load()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	one, oneDiags := load()
	require.NotEmpty(t, oneDiags)
	for _, want := range []string{"Unsupported argument", "Reference to undeclared stage", "Invalid on_interrupt", "Reference to undeclared local value", "Unknown stage kind"} {
		assert.Contains(t, oneDiags, want)
	}
	assert.Equal(t, oneDiags, manyDiags)
	require.NotNil(t, one.Config)
	require.NotNil(t, many.Config)
	var oneNames, manyNames []string
	for i := range one.Config.Stages {
		oneNames = append(oneNames, one.Config.Stages[i].Name)
	}
	for i := range many.Config.Stages {
		manyNames = append(manyNames, many.Config.Stages[i].Name)
	}
	assert.Equal(t, oneNames, manyNames)
	assert.Len(t, oneNames, 603)
}
