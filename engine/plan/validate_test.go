package plan_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
)

const waitingPipeline = `variable "names" {
  type = list(string)
}

variable "tag" {
  type = string
}

locals {
  paths = { for n in var.names : n => "out/${var.tag}/${n}.txt" }
}

stage "command" "gen" {
  for_each = toset(var.names)
  run      = ["sh", "-c", "echo ${each.key} > ${local.paths[each.key]}"]
  outputs  = [local.paths[each.key]]
  GPUS
}

stage "command" "use" {
  for_each = stage.gen
  run      = ["cat", each.value.key]
}

stage "command" "one" {
  run = ["echo", stage.gen["a"].result, var.tag]
}

stage "command" "fixed" {
  for_each = toset(["x", "y"])
  after    = [stage.use]
  run      = ["echo", each.key]
}
`

func loadWaiting(t *testing.T, gpus string, validate bool) (*plan.Loaded, hcl.Diagnostics) {
	t.Helper()
	root := t.TempDir()
	src := []byte(replaceOnce(waitingPipeline, "GPUS", gpus))
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), src, 0o644))
	if validate {
		return validateLike(plan.LoadOptions{Path: "p.hcl", Root: root})
	}
	return planLike(plan.LoadOptions{Path: "p.hcl", Root: root})
}

// Validate checks a pipeline without values for its required variables,
// as terraform validate does: a for_each over them waits for values, and
// every other check still runs, inside the waiting stages too.
func TestValidateWithoutValues(t *testing.T) {
	l, diags := loadWaiting(t, "gpus = 1", true)
	require.False(t, diags.HasErrors(), "%s", diags.Error())
	assert.Equal(t, map[string]string{"gen": "var.names", "use": "stage.gen"}, l.Graph.Waiting)
	assert.Equal(t, []string{"var.names", "var.tag"}, l.Graph.Unset())
	assert.Contains(t, l.Graph.Summary(), "2 stages wait for values")
	ws := l.Graph.WaitingStages()
	require.Len(t, ws, 2)
	assert.Equal(t, "stage.gen", ws[0].Stage)
	assert.Equal(t, 14, ws[0].Range.Start.Line, "the for_each's position")
	// stage.fixed expands as usual.
	assert.NotNil(t, l.Graph.ByAddr[`stage.fixed["x"]`])

	// A mistake inside a waiting stage is still found.
	_, diags = loadWaiting(t, `gpus = "two"`, true)
	require.True(t, diags.HasErrors())
	assert.Equal(t, "Invalid gpus", diags[0].Summary)
	assert.Equal(t, 17, diags[0].Subject.Start.Line)

	// plan and apply still require the values.
	_, diags = loadWaiting(t, "gpus = 1", false)
	require.True(t, diags.HasErrors())
	var summaries []string
	for _, d := range diags {
		summaries = append(summaries, d.Summary)
	}
	assert.Contains(t, summaries, `No value for required variable "names"`)
	assert.Contains(t, summaries, `No value for required variable "tag"`)
}

// A for_each that is unknown for another reason than a missing value is
// still refused at validate.
func TestValidateWithoutValuesStillRefusesResultsInForEach(t *testing.T) {
	root := t.TempDir()
	src := "variable \"n\" {\n  type = string\n}\n\nstage \"command\" \"a\" {\n  run    = [\"echo\", var.n]\n  result = \"a.json\"\n}\n\nstage \"command\" \"b\" {\n  for_each = toset(stage.a.result.keys)\n  run      = [\"echo\", each.key]\n}\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "p.hcl"), []byte(src), 0o644))
	_, diags := validateLike(plan.LoadOptions{Path: "p.hcl", Root: root})
	require.True(t, diags.HasErrors())
	assert.Equal(t, "Invalid for_each", diags[0].Summary)
}

func replaceOnce(s, old, new string) string { return strings.Replace(s, old, new, 1) }
