package crashtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPathsEscapingWorkspaceRefused: outputs and result paths that leave
// the workspace — "..", absolute, through a symlink to outside — are
// refused when the pipeline is planned (exit 2), and apply runs nothing.
// A path known only after an upstream ran is refused before its node runs.
func TestPathsEscapingWorkspaceRefused(t *testing.T) {
	outside := t.TempDir()
	cases := []struct {
		name, attr string
	}{
		{"dotdot output", `outputs = ["../escape.txt"]`},
		{"dotdot inside output", `outputs = ["out/../../escape.txt"]`},
		{"absolute output", `outputs = ["` + filepath.Join(outside, "escape.txt") + `"]`},
		{"symlinked output", `outputs = ["link/escape.txt"]`},
		{"dotdot result", `result = "../escape.json"`},
		{"symlinked result", `result = "link/escape.json"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWS(t, `
pipeline "escape" {}
stage "command" "bad" {
  run = ["sh", "-c", "echo ran > ran.txt"]
  `+tc.attr+`
}
`)
			require.NoError(t, os.Symlink(outside, w.path("link")))
			for _, cmd := range []string{"plan", "apply"} {
				res := w.run(nil, cmd)
				assert.Equal(t, 2, res.code, "%s: %s", cmd, res)
				assert.Regexp(t, `workspace|absolute|symlink|outside`, res.stderr, cmd)
			}
			assert.False(t, w.exists("ran.txt"), "the node ran")
			ents, err := os.ReadDir(outside)
			require.NoError(t, err)
			assert.Empty(t, ents)
		})
	}
	t.Run("known after apply", func(t *testing.T) {
		w := newWS(t, `
pipeline "escape" {}
stage "command" "where" {
  run    = ["sh", "-c", "echo '{\"path\": \"../escape.txt\"}' > where.json"]
  result = "where.json"
}
stage "command" "bad" {
  run     = ["sh", "-c", "echo ran > ran.txt"]
  outputs = [stage.where.result.path]
}
`)
		res := w.apply()
		assert.Equal(t, 1, res.code, res.String())
		assert.Contains(t, res.stdout, "stage.bad failed (setup)")
		assert.False(t, w.exists("ran.txt"), "the node ran")
	})
}

const secretPipeline = `
pipeline "secret" {}
variable "token" {
  type      = string
  sensitive = true
}
stage "command" "use" {
  run     = ["sh", "-c", "test -n \"$TOKEN\" && test \"$1\" = \"$TOKEN\" && echo used > used.txt", "sh", var.token]
  env     = { TOKEN = var.token }
  outputs = ["used.txt"]
}
stage "command" "after" {
  after   = [stage.use]
  run     = ["sh", "-c", "cat used.txt > after.txt"]
  outputs = ["after.txt"]
}
`

// grepTree returns the files under dir that contain s.
func grepTree(t *testing.T, dir, s string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		if strings.Contains(string(b), s) {
			hits = append(hits, p)
		}
		return nil
	})
	require.NoError(t, err)
	return hits
}

// TestSensitiveValueNeverWritten passes a sensitive variable on the command
// line and through CAIRN_VAR_token, uses it in a node's arguments and
// environment, and looks for its value everywhere cairn writes: its own
// output of plan (text, JSON, saved plan file), apply, show and status, and
// every file of the cache — index (node keys and envelopes), journals, stat
// cache, locks. The node still gets the value, and a new value changes the
// key.
func TestSensitiveValueNeverWritten(t *testing.T) {
	const secret = "s3cret-Value-9f1e77"
	const secret2 = "other-Secret-2b4410"
	w := newWS(t, secretPipeline)
	var outputs []string
	check := func(what string, r result) {
		t.Helper()
		outputs = append(outputs, what+": "+r.stdout+r.stderr)
	}
	r := w.run(nil, "plan", "--var", "token="+secret)
	require.Equal(t, 0, r.code, r.String())
	check("plan", r)
	r = w.run(nil, "plan", "-json", "-var=token="+secret)
	require.Equal(t, 0, r.code, r.String())
	check("plan --json", r)
	r = w.run(nil, "plan", "--var", "token="+secret, "--out", "saved.plan")
	require.Equal(t, 0, r.code, r.String())
	check("plan --out", r)
	r = w.run(nil, "apply", "--var", "token="+secret)
	require.Equal(t, 0, r.code, r.String())
	check("apply", r)
	assert.Equal(t, "used\n", w.read("after.txt"), "the node received the value")
	r = w.run([]string{"CAIRN_VAR_token=" + secret}, "apply", "-v")
	require.Equal(t, 0, r.code, r.String())
	assert.Contains(t, r.stdout, "0 ran, 2 cached")
	check("apply (env)", r)
	// A different secret is a different key: the plan says why without
	// showing either value.
	r = w.run(nil, "plan", "--var=token="+secret2)
	require.Equal(t, 0, r.code, r.String())
	assert.Contains(t, r.stdout, "~ stage.use")
	check("plan (new value)", r)
	r = w.run(nil, "apply", "--var", "token="+secret2)
	require.Equal(t, 0, r.code, r.String())
	check("apply (new value)", r)
	r = w.run(nil, "show", w.lastRun().ID)
	require.Equal(t, 0, r.code, r.String())
	check("show run", r)
	r = w.run(nil, "show", "stage.use")
	require.Equal(t, 0, r.code, r.String())
	check("show address", r)
	r = w.run(nil, "status")
	require.Equal(t, 0, r.code, r.String())
	check("status", r)

	for _, s := range []string{secret, secret2} {
		for _, o := range outputs {
			assert.NotContains(t, o, s)
		}
		assert.Empty(t, grepTree(t, w.cache, s), "files of the cache holding the value")
		assert.NotContains(t, w.read("saved.plan"), s)
	}
}

// TestSymlinkedOutputsAtRunTime: a workload that makes a declared output or
// its result a symlink to a file outside the workspace does not get that
// file into the cache: the node fails (class "result") and nothing of the
// outside file is stored.
func TestSymlinkedOutputsAtRunTime(t *testing.T) {
	outside := t.TempDir()
	const content = "outside-content-4c1d9a\n"
	require.NoError(t, os.WriteFile(filepath.Join(outside, "private.txt"), []byte(content), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "private.json"), []byte(`{"v": "`+strings.TrimSpace(content)+`"}`), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "dir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "dir", "f.txt"), []byte(content), 0o644))
	cases := map[string]string{
		"output file": `run = ["ln", "-s", "` + filepath.Join(outside, "private.txt") + `", "out.txt"]
  outputs = ["out.txt"]`,
		"output dir": `run = ["sh", "-c", "mkdir -p res && ln -s ` + filepath.Join(outside, "private.txt") + ` res/f.txt"]
  outputs = ["res/"]`,
		"dir in output dir": `run = ["sh", "-c", "mkdir -p res && ln -s ` + filepath.Join(outside, "dir") + ` res/sub"]
  outputs = ["res/"]`,
		"result": `run = ["ln", "-s", "` + filepath.Join(outside, "private.json") + `", "r.json"]
  result = "r.json"`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWS(t, `
pipeline "links" {}
stage "command" "link" {
  `+body+`
}
`)
			res := w.apply()
			assert.Equal(t, 1, res.code, res.String())
			assert.Contains(t, res.stdout, "stage.link failed (result)")
			assert.Empty(t, grepTree(t, w.cache, strings.TrimSpace(content)), "files of the cache holding the outside content")
		})
	}
}

// TestSensitiveValueInMessages: error messages that would show a sensitive
// value — a variable's validation message, a postcondition's message, a
// failing command given it as an argument — are hidden, in cairn's output
// and in the journal.
func TestSensitiveValueInMessages(t *testing.T) {
	const secret = "hidden-Value-77aa01"
	w := newWS(t, `
pipeline "messages" {}
variable "token" {
  type      = string
  sensitive = true
  validation {
    condition     = var.token != "rejected-`+secret+`"
    error_message = "token ${var.token} is not accepted"
  }
}
stage "command" "gate" {
  run    = ["sh", "-c", "echo '{\"ok\": false}' > r.json"]
  result = "r.json"
  postcondition {
    condition     = self.result.ok
    error_message = "refused with token ${var.token}"
  }
}
stage "command" "missing" {
  run = [var.token]
}
stage "command" "leaky" {
  run = ["sh", "-c", "echo \"the token is $1\" >&2; exit 1", "sh", var.token]
}
`)
	r := w.run(nil, "apply", "--var", "token=rejected-"+secret)
	require.Equal(t, 2, r.code, r.String())
	assert.Contains(t, r.stderr, "hidden")
	assert.NotContains(t, r.stdout+r.stderr, "is not accepted")
	assert.NotContains(t, r.stdout+r.stderr, `"rejected-`+secret+`" is`)

	r = w.run(nil, "apply", "--var", "token="+secret)
	require.Equal(t, 1, r.code, r.String())
	assert.Contains(t, r.stdout, "stage.gate failed (postcondition)")
	assert.Contains(t, r.stdout, "stage.missing failed (setup)")
	// The failing node's stderr tail, which cairn repeats, is redacted.
	assert.Contains(t, r.stdout, "the token is (sensitive)")
	assert.NotContains(t, r.stdout+r.stderr, secret)
	// The leaky workload's own log holds what it wrote; nothing else does.
	var hits []string
	for _, h := range grepTree(t, w.cache, secret) {
		if !strings.HasPrefix(filepath.Base(h), "leaky.") {
			hits = append(hits, h)
		}
	}
	assert.Empty(t, hits, "files of the cache holding the value")
}
