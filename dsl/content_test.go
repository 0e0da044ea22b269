package dsl

import (
	"fmt"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The index's content is the body's own Content wherever it answers, and
// it declines every body that Content reports a problem in.
func TestSchemaIndexContentIsContent(t *testing.T) {
	schema := &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "run", Required: true}, {Name: "outputs"}, {Name: "after"}, {Name: "retry_on"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "retry"}, {Type: "slot", LabelNames: []string{"name"}}},
	}
	x := indexSchema(schema)
	for i, src := range []string{
		`run = ["a"]`,
		`run = ["a"]
outputs = ["x", "y"]
after = [stage.b]`,
		`run = "x"
retry { attempts = 2 }
slot "a" { v = 1 }
slot "b" {}
retry {}`,
		// Content reports each of these.
		``,
		`outputs = ["x"]`,
		`run = 1
bogus = 2`,
		`run = 1
retry = 2`,
		`run = 1
slot {}`,
		`run = 1
retry "x" {}`,
		`run = 1
slot "a" "b" {}`,
		`run = 1
other {}`,
	} {
		f, diags := hclsyntax.ParseConfig([]byte(src), "t.hcl", hcl.InitialPos)
		require.False(t, diags.HasErrors(), "%d: %s", i, diags)
		want, wantDiags := f.Body.Content(schema)
		got, ok := x.content(f.Body)
		if wantDiags.HasErrors() {
			assert.False(t, ok, "%d: Content reports %s", i, wantDiags)
			continue
		}
		require.True(t, ok, "%d: declined a body Content takes", i)
		assert.Equal(t, fmt.Sprint(want.MissingItemRange), fmt.Sprint(got.MissingItemRange), i)
		assert.Equal(t, want.Attributes, got.Attributes, i)
		assert.Equal(t, want.Blocks, got.Blocks, i)
	}
}

// The index's content of a stage body costs a few allocations, not one
// for each attribute and block besides.
func TestSchemaIndexContentAllocs(t *testing.T) {
	schema := &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "run", Required: true}, {Name: "outputs"}, {Name: "after"}, {Name: "env"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "retry"}},
	}
	x := indexSchema(schema)
	f, diags := hclsyntax.ParseConfig([]byte("run = [\"a\"]\noutputs = [\"x\"]\nafter = [stage.b]\nenv = {}\nretry {}\nretry {}\n"), "t.hcl", hcl.InitialPos)
	require.False(t, diags.HasErrors(), "%s", diags)
	_, ok := x.content(f.Body)
	require.True(t, ok)
	n := testing.AllocsPerRun(100, func() { x.content(f.Body) })
	assert.LessOrEqual(t, n, 6.0, "allocations of the content of 4 attributes and 2 blocks")
}

// A stage decoded from the index's items is the stage decoded from the
// body's Content, diagnostics included.
func TestDecodeStageFromItemsIsFromContent(t *testing.T) {
	kindSchema := &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "run", Required: true}, {Name: "shell"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "slot", LabelNames: []string{"name"}}},
	}
	schema := stageSchema(kindSchema)
	for i, src := range []string{
		`run = ["a"]`,
		`run     = ["sh", "-c", "echo c1 > out/c1"]
outputs = ["out/c1"]
after   = [stage.c0]`,
		`run = "x"
for_each = toset(["a"])
wait_for = [stage.b]
description = "d"
on_interrupt = "fail"
on_upstream_failure = "run"
retry {
  max = 2
}
postcondition {
  condition = true
  error_message = "m"
}
slot "a" {
  v = 1
}`,
		// Diagnostics of the decoding itself.
		`run = "x"
after = stage.b
on_interrupt = "later"
description = 3
retry {
  max = -1
}
retry {}`,
	} {
		f, diags := hclsyntax.ParseConfig([]byte("stage \"k\" \"s\" {\n"+src+"\n}\n"), "t.hcl", hcl.InitialPos)
		require.False(t, diags.HasErrors(), "%d: %s", i, diags)
		blk := f.Body.(*hclsyntax.Body).Blocks[0].AsHCLBlock()
		fast := &stageKind{schema: schema, index: indexSchema(schema)}
		_, _, ok := fast.index.items(blk.Body)
		require.True(t, ok, "%d: the index declined the body", i)
		general := &stageKind{schema: schema, index: &schemaIndex{required: -1}} // declines every body
		want, wantDiags := decodeStage(blk, general)
		got, gotDiags := decodeStage(blk, fast)
		assert.Equal(t, want, got, i)
		assert.ElementsMatch(t, wantDiags, gotDiags, i)
		if i == 3 {
			assert.Len(t, gotDiags, 5, "%s", gotDiags) // after, on_interrupt, description, max, a second retry
		}
	}
}
