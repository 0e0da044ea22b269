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

// A result file that JSON readers take differently — a key given twice,
// a number beyond float64, text that is not Unicode (read as U+FFFD) —
// fails its node (class result) at the line and
// column, rather than letting a gate pass on the value one reader keeps.
func TestResultThatReadersTakeDifferentlyFailsItsNode(t *testing.T) {
	for name, c := range map[string]struct{ json, want string }{
		"key twice":    {`{"accuracy": 0.42,\n "accuracy": 0.91}`, `the result file r.json, at line 2, column 2: the key "accuracy" is given twice in one object`},
		"huge":         {`{"accuracy": 1e400}`, `the result file r.json, at line 1, column 14: the number 1e400 is beyond what a float64 holds`},
		"tiny":         {`{"accuracy": 0.9, "eps": [1e-400]}`, `the result file r.json, at line 1, column 27: the number 1e-400 is beyond`},
		"nested twice": {`{"accuracy": 0.9, "per_task": {"a": 1, "a": 0}}`, `the key "a" is given twice in one object`},
		"not UTF-8":    {"{\"accuracy\": 0.9, \"model\": \"caf\xe9\"}", `the result file r.json holds a byte that is not UTF-8 at line 1, column 32`},
		"surrogate":    {`{"accuracy": 0.9, "model": "a\ud800b"}`, `the result file r.json holds at line 1, column 30 an escape of half a UTF-16 surrogate pair`},
	} {
		t.Run(name, func(t *testing.T) {
			root := cliWorkspace(t, map[string]string{
				"r.src": strings.ReplaceAll(c.json, `\n`, "\n"),
				"p.hcl": `stage "command" "ruler" {
  run    = ["cp", "r.src", "r.json"]
  inputs = ["r.src"]
  result = "r.json"
  postcondition {
    condition     = self.result.accuracy >= 0.85
    error_message = "accuracy below 0.85"
  }
}
`,
			})
			r := runCLI(t, "--chdir", root, "apply", "p.hcl", "--no-color")
			assert.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
			out := strings.Join(strings.Fields(r.stdout+r.stderr), " ")
			assert.Contains(t, out, "failed (result)")
			assert.Contains(t, out, c.want)
		})
	}
}

// A result path that is a folder, whether it was there before the node
// ran or the node made it, fails the node saying so: not as a file an
// earlier run left, nor with the reader's "is a directory".
func TestResultThatIsAFolderSaysSo(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"rd/keep": "x",
		"p.hcl": `stage "command" "a" {
  run    = ["true"]
  result = "rd"
}

stage "command" "b" {
  run    = ["sh", "-c", "rm -rf rd2; mkdir rd2"]
  result = "rd2"
}
`,
	})
	r := runCLI(t, "--chdir", root, "apply", "p.hcl", "--no-color")
	assert.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	out := strings.Join(strings.Fields(r.stdout+r.stderr), " ")
	for _, p := range []string{"rd", "rd2"} {
		assert.Contains(t, out, "failed (result): the result file "+p+" is a folder: result names the JSON file the node writes")
	}
	assert.NotContains(t, out, "earlier run left")
	assert.NotContains(t, out, "is a directory")
}

// A result file over the limit a result may hold (its record keeps it
// whole, each <, > and & escaped in six bytes) fails its node with class
// result, saying the limit and where bulk data goes, on every apply: not
// as the cache's storage error of an infrastructure failure.
func TestResultOverTheLimitFailsItsNode(t *testing.T) {
	for name, fill := range map[string]string{
		"32 MiB and a byte":      `head -c 33554433 /dev/zero | tr '\\000' a`,
		"12 MiB escaped 6 times": `head -c 12582912 /dev/zero | tr '\\000' '<'`,
	} {
		t.Run(name, func(t *testing.T) {
			root := cliWorkspace(t, map[string]string{
				"p.hcl": `stage "command" "r" {
  run    = ["sh", "-c", "{ printf '{\"x\": \"'; ` + fill + `; printf '\"}'; } > r.json"]
  result = "r.json"
}
`,
			})
			for range 2 {
				r := runCLI(t, "--chdir", root, "apply", "p.hcl", "--no-color")
				assert.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
				out := strings.Join(strings.Fields(r.stdout+r.stderr), " ")
				assert.Contains(t, out, "stage.r failed (result): the result file r.json holds more than 32 MiB, the most a result may hold")
				assert.Contains(t, out, "write bulk data to a file in outputs")
				assert.NotContains(t, out, "record too large")
			}
		})
	}
}
