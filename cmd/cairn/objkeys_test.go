package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A grid written as an object with a key given twice (copied, and not
// edited) is refused (exit 2), naming the key and both places: it planned
// two nodes, the first value's run silently gone. The same in a local,
// in a --var and in an HCL --var-file; keys in NFC ("caf\u00e9" and
// "cafe\u0301" are one).
func TestDuplicateObjectKeyRefused(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"p.hcl": `stage "command" "train" {
  for_each = {
    lr_1e3 = 0.001
    lr_1e4 = 0.0001
    lr_1e3 = 0.01
  }
  run = ["echo", each.value]
}
`,
		"nfc.hcl": `locals {
  names = { "caf\u00e9" = "nfc", "cafe\u0301" = "nfd" }
}

stage "command" "s" {
  for_each = local.names
  run      = ["echo", each.value]
}
`,
		"v.hcl": `variable "grid" {
  type = map(number)
}

stage "command" "t" {
  for_each = var.grid
  run      = ["echo", each.value]
}
`,
		"g.tfvars": "grid = {\n  lr_1e3 = 0.001\n  lr_1e3 = 0.01\n}\n",
	})
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, cmd := range []string{"validate", "plan"} {
		r := runCLI(t, "--chdir", root, cmd, "p.hcl", "--no-color")
		assert.Equal(t, exitBadInput, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stderr, "Error: Duplicate object key")
		assert.Regexp(t, `on \S*p\.hcl:5:5`, r.stderr)
		assert.Regexp(t, `The key "lr_1e3" is given twice in this object: at \S*p\.hcl:3:5, and again at \S*p\.hcl:5:5\.`, flat(r.stderr))
	}
	r := runCLI(t, "--chdir", root, "validate", "nfc.hcl", "--no-color")
	assert.Equal(t, exitBadInput, r.code, r.stdout+r.stderr)
	assert.Regexp(t, "The key \"caf\u00e9\" is given twice in this object: at \\S*nfc\\.hcl:2:13, and again at \\S*nfc\\.hcl:2:34\\.", flat(r.stderr))
	assert.Contains(t, flat(r.stderr), "Unicode's composed form (NFC)")

	r = runCLI(t, "--chdir", root, "validate", "v.hcl", "--var-file", "g.tfvars", "--no-color")
	assert.Equal(t, exitBadInput, r.code, r.stdout+r.stderr)
	assert.Regexp(t, `The key "lr_1e3" is given twice in this object: at \S*g\.tfvars:2:3, and again at \S*g\.tfvars:3:3\.`, flat(r.stderr))

	r = runCLI(t, "--chdir", root, "validate", "v.hcl", "--var", "grid={ a = 1, a = 2 }", "--no-color")
	assert.Equal(t, exitBadInput, r.code, r.stdout+r.stderr)
	assert.Contains(t, flat(r.stderr), `The value from --var grid gives the key "a" twice, at columns 3 and 10 of "{ a = 1, a = 2 }"`)

	r = runCLI(t, "--chdir", root, "validate", "v.hcl", "--var", "grid={ a = 1, b = 2 }", "--no-color")
	assert.Equal(t, exitOK, r.code, r.stdout+r.stderr)
}
