package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A result file with NaN (Python's json.dump writes it) fails the node
// with where and why, and what JSON has instead; a config file read with
// jsondecode(file(...)) that starts with a byte-order mark is named so.
func TestJSONMessagesSayWhereAndWhy(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"p.hcl": `stage "command" "train" {
  run    = ["sh", "-c", "printf '{\"loss\": NaN, \"acc\": 0.5}' > metrics.json"]
  result = "metrics.json"
}
`,
		"cfg.json": "\xef\xbb\xbf{\"lr\": 0.1}\n",
		"q.hcl": `locals {
  cfg = jsondecode(file("cfg.json"))
}

stage "command" "s" {
  run = ["echo", local.cfg.lr]
}
`,
	})
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	r := runCLI(t, "--chdir", root, "apply", "p.hcl", "--no-color")
	assert.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	assert.Contains(t, flat(r.stdout+r.stderr), `the result file metrics.json is not valid JSON at line 1, column 10: invalid character 'N' looking for beginning of value. JSON has no NaN or Infinity (Python's json.dump writes them unless allow_nan=False): write null for a number that is not one, or a string ("NaN")`)

	r = runCLI(t, "--chdir", root, "validate", "q.hcl", "--no-color")
	assert.Equal(t, exitBadInput, r.code, r.stdout+r.stderr)
	assert.Contains(t, flat(r.stderr), "the JSON text starts with a UTF-8 byte-order mark (bytes EF BB BF), which JSON does not have: save the file without it (UTF-8 without BOM)")
	assert.Regexp(t, `on \S*q\.hcl:2:`, r.stderr)
}
