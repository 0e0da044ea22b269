package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

const sizesPipeline = `variable "sizes" {
  type    = map(number)
  default = { small = 10 }
}

stage "command" "s" {
  for_each = var.sizes
  run      = ["echo", "${each.value}"]
}
`

// A bad --var value names the key that is wrong and says the error is in
// the value given, not in the pipeline.
func TestBadVarValueNamesKeyAndSource(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": sizesPipeline})
	r := runCLI(t, "--chdir", root, "plan", "p.hcl", "--var", `sizes={small="ten"}`)
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, `at sizes["small"], a number is`)
	assert.Contains(t, r.stderr, "1 error(s) in the variable values from --var sizes; nothing was run")
	assert.NotContains(t, r.stderr, "in the pipeline")

	r = runCLI(t, "--chdir", root, "plan", "p.hcl", "--var", "sizez={}")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "error(s) in the variable values from --var sizez")

	// A mistake in the pipeline is still one.
	root = cliWorkspace(t, map[string]string{"p.hcl": sizesPipeline + "stage \"command\" \"t\" {\n  run = [local.nope]\n}\n"})
	r = runCLI(t, "--chdir", root, "plan", "p.hcl", "--var", `sizes={small="ten"}`)
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "2 error(s) in the pipeline")
}

// cairn show with a key prefix shorter than the minimum says the minimum.
func TestShowShortKeyPrefix(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"p.hcl": sizesPipeline})
	r := runCLI(t, "--chdir", root, "show", "3fa9c1")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, `"3fa9c1" is too short to name a key: a key prefix needs at least 8 hex digits`)
}
