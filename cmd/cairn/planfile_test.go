package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const savedPipeline = `
pipeline "saved" {}

stage "command" "a" {
  run     = ["sh", "-c", "echo a > a.txt"]
  outputs = ["a.txt"]
}

stage "command" "b" {
  run     = ["sh", "-c", "cat a.txt > b.txt"]
  inputs  = ["a.txt"]
  outputs = ["b.txt"]
}
`

const extraStage = `
stage "command" "extra" {
  run     = ["sh", "-c", "echo extra > extra.txt"]
  outputs = ["extra.txt"]
}
`

// A saved plan is applied exactly as it was saved, or refused (exit 2)
// naming what changed since; nothing runs then.
func TestSavedPlanIsAppliedExactlyOrRefused(t *testing.T) {
	edits := map[string]struct {
		edit func(t *testing.T, root string)
		want string
	}{
		"a stage added": {func(t *testing.T, root string) {
			appendFile(t, filepath.Join(root, "pipeline.hcl"), extraStage)
		}, "stage.extra is new: it was not in the pipeline when the plan was saved"},
		"a stage removed": {func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "pipeline.hcl"), savedPipeline[:strings.Index(savedPipeline, `stage "command" "b"`)])
		}, "stage.b is no longer in the pipeline"},
		"the pipeline renamed": {func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "pipeline.hcl"), strings.Replace(savedPipeline, `pipeline "saved"`, `pipeline "renamed"`, 1))
		}, `the pipeline is named "renamed" now, "saved" when the plan was saved`},
		"a command changed": {func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "pipeline.hcl"), strings.Replace(savedPipeline, "echo a >", "echo A >", 1))
		}, "stage.a: key "},
		// b's key waits for a's output: what the plan knew of it holds
		// it to the plan.
		"a may-run node's command changed": {func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "pipeline.hcl"), strings.Replace(savedPipeline, "cat a.txt >", "cat a.txt a.txt >", 1))
		}, "stage.b: its definition changed since the plan was saved: its key is known only after apply"},
	}
	for name, tc := range edits {
		t.Run(name, func(t *testing.T) {
			root := cliWorkspace(t, map[string]string{"pipeline.hcl": savedPipeline})
			r := runCLI(t, "--chdir", root, "plan", "--out", "p.plan")
			require.Equal(t, exitOK, r.code, r.stderr)
			tc.edit(t, root)
			r = runCLI(t, "--chdir", root, "apply", "p.plan")
			assert.Equal(t, exitBadInput, r.code, r.stdout+r.stderr)
			assert.Contains(t, r.stderr, "the saved plan is stale; nothing was run")
			assert.Contains(t, r.stderr, tc.want)
			for _, f := range []string{"a.txt", "b.txt", "extra.txt"} {
				assert.NoFileExists(t, filepath.Join(root, f), "nothing ran")
			}
		})
	}

	// The reasons a changed key gives compare the node with its last run,
	// and say so: the plan's own text is not what they show.
	t.Run("a command changed after a run", func(t *testing.T) {
		root := cliWorkspace(t, map[string]string{"pipeline.hcl": savedPipeline})
		require.Equal(t, exitOK, runCLI(t, "--chdir", root, "apply").code)
		writeFile(t, filepath.Join(root, "pipeline.hcl"), strings.Replace(savedPipeline, "echo a >", "echo hey >", 1))
		require.Equal(t, exitOK, runCLI(t, "--chdir", root, "plan", "--out", "p.plan").code)
		writeFile(t, filepath.Join(root, "pipeline.hcl"), strings.Replace(savedPipeline, "echo a >", "echo yo >", 1))
		r := runCLI(t, "--chdir", root, "apply", "p.plan")
		assert.Equal(t, exitBadInput, r.code, r.stdout+r.stderr)
		assert.Regexp(t, `stage\.a: key [0-9a-f]+ at plan time, [0-9a-f]+ now \(against its last run: run: .*echo a .* -> .*echo yo `, r.stderr)
	})

	t.Run("unchanged", func(t *testing.T) {
		root := cliWorkspace(t, map[string]string{"pipeline.hcl": savedPipeline})
		require.Equal(t, exitOK, runCLI(t, "--chdir", root, "plan", "--out", "p.plan").code)
		r := runCLI(t, "--chdir", root, "apply", "p.plan")
		require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stdout, "Apply complete: 2 ran, 0 cached")
	})

	t.Run("a cached result gone", func(t *testing.T) {
		root := cliWorkspace(t, map[string]string{"pipeline.hcl": savedPipeline})
		require.Equal(t, exitOK, runCLI(t, "--chdir", root, "apply").code)
		require.Equal(t, exitOK, runCLI(t, "--chdir", root, "plan", "--out", "p.plan").code)
		require.NoError(t, os.RemoveAll(filepath.Join(root, ".cairn")))
		r := runCLI(t, "--chdir", root, "apply", "p.plan")
		assert.Equal(t, exitBadInput, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stderr, "stage.a: planned as cached, now it would run (new)")
	})

	// A plan made on a --cache is applied on that cache: following the
	// hint plan prints runs it as planned, and another cache folder is
	// refused, naming the plan's, before anything is read or made there.
	t.Run("made on a --cache", func(t *testing.T) {
		root := cliWorkspace(t, map[string]string{"pipeline.hcl": savedPipeline})
		require.Equal(t, exitOK, runCLI(t, "--chdir", root, "--cache", "c", "apply").code)
		r := runCLI(t, "--chdir", root, "--cache", "c", "plan", "--out", "p.plan")
		require.Equal(t, exitOK, r.code, r.stderr)
		_, hint, ok := strings.Cut(r.stdout, "run it with: cairn ")
		require.True(t, ok, r.stdout)
		hint, _, _ = strings.Cut(hint, "\n")

		r = runCLI(t, "--chdir", root, "--cache", "other", "apply", "p.plan")
		assert.Equal(t, exitBadInput, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stderr, "p.plan was planned on the cache folder "+filepath.Join(root, "c")+", and --cache "+filepath.Join(root, "other")+" is another")
		assert.NoDirExists(t, filepath.Join(root, "other"))

		r = runCLI(t, strings.Fields(hint)...)
		require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stdout, "Apply complete: 0 ran, 2 cached")
		assertNoDefaultCache(t, root, "the plan's cache, not the workspace's default")
		require.Equal(t, exitOK, runCLI(t, "--chdir", root, "--cache", filepath.Join(root, "c"), "apply", "p.plan").code, "the same folder named again")
	})

	t.Run("with --target", func(t *testing.T) {
		root := cliWorkspace(t, map[string]string{"pipeline.hcl": savedPipeline + extraStage})
		require.Equal(t, exitOK, runCLI(t, "--chdir", root, "plan", "--target", "stage.extra", "--out", "p.plan").code)
		r := runCLI(t, "--chdir", root, "apply", "p.plan")
		require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stdout, "Apply complete: 1 ran")
		assert.FileExists(t, filepath.Join(root, "extra.txt"))
		assert.NoFileExists(t, filepath.Join(root, "a.txt"), "outside the saved plan's --target")

		r = runCLI(t, "--chdir", root, "apply", "p.plan", "--target", "stage.a")
		assert.Equal(t, exitBadInput, r.code)
		assert.Contains(t, r.stderr, "a saved plan is applied as it was planned")
	})

	t.Run("a key that changes during the apply", func(t *testing.T) {
		// a rewrites b's input without declaring it; b only waits for a,
		// so its key is known, and saved, before a runs.
		root := cliWorkspace(t, map[string]string{"in.txt": "1\n", "pipeline.hcl": `
stage "command" "a" {
  run = ["sh", "-c", "echo 2 > in.txt"]
}
stage "command" "b" {
  wait_for = [stage.a]
  run      = ["sh", "-c", "cat in.txt > b.txt"]
  inputs   = ["in.txt"]
  outputs  = ["b.txt"]
}
`})
		require.Equal(t, exitOK, runCLI(t, "--chdir", root, "plan", "--out", "p.plan").code)
		r := runCLI(t, "--chdir", root, "apply", "p.plan")
		assert.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stdout, "stage.b failed (setup): its key changed since the plan was saved")
		assert.NoFileExists(t, filepath.Join(root, "b.txt"), "b did not run under a key the plan did not have")
	})

	// A node whose key waits for an upstream's output is held to what
	// the plan knew of it: an input no upstream writes, and the text and
	// references of an argument that reads an upstream's result. Spaces
	// and comments are not part of it.
	t.Run("a may-run node", func(t *testing.T) {
		const pipeline = `
pipeline "saved" {}

stage "command" "a" {
  run    = ["sh", "-c", "echo '{\"n\": 3}' > a.json"]
  result = "a.json"
}

locals {
  word = "planned"
}

stage "command" "b" {
  run     = ["sh", "-c", "cat cfg.txt > b.txt; echo ${local.word} ${stage.a.result.n} >> b.txt"]
  inputs  = ["cfg.txt"]
  outputs = ["b.txt"]
}
`
		edits := map[string]struct {
			edit    func(t *testing.T, root string)
			applies bool
		}{
			"unchanged":          {func(*testing.T, string) {}, true},
			"an input rewritten": {func(t *testing.T, root string) { writeFile(t, filepath.Join(root, "cfg.txt"), "edited\n") }, false},
			"a template edited": {func(t *testing.T, root string) {
				writeFile(t, filepath.Join(root, "pipeline.hcl"), strings.Replace(pipeline, "echo ${local.word}", "echo EDITED ${local.word}", 1))
			}, false},
			"a local it reads edited": {func(t *testing.T, root string) {
				writeFile(t, filepath.Join(root, "pipeline.hcl"), strings.Replace(pipeline, `word = "planned"`, `word = "edited"`, 1))
			}, false},
			"spaces and a comment added": {func(t *testing.T, root string) {
				writeFile(t, filepath.Join(root, "pipeline.hcl"), strings.Replace(pipeline, `run     = ["sh", "-c",`, "run     = [\"sh\",   \"-c\", # the shell\n   ", 1))
			}, true},
		}
		for name, tc := range edits {
			t.Run(name, func(t *testing.T) {
				root := cliWorkspace(t, map[string]string{"pipeline.hcl": pipeline, "cfg.txt": "cfg\n"})
				r := runCLI(t, "--chdir", root, "plan", "--out", "p.plan")
				require.Equal(t, exitOK, r.code, r.stderr)
				require.Contains(t, r.stdout, "stage.b  may run")
				tc.edit(t, root)
				r = runCLI(t, "--chdir", root, "apply", "p.plan")
				if tc.applies {
					require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
					assert.Contains(t, r.stdout, "Apply complete: 2 ran, 0 cached")
					return
				}
				assert.Equal(t, exitBadInput, r.code, r.stdout+r.stderr)
				assert.Contains(t, r.stderr, "the saved plan is stale; nothing was run")
				assert.Contains(t, r.stderr, "stage.b: its definition changed since the plan was saved")
				assert.NoFileExists(t, filepath.Join(root, "b.txt"), "nothing ran")
			})
		}
	})

	t.Run("an older format", func(t *testing.T) {
		root := cliWorkspace(t, map[string]string{"pipeline.hcl": savedPipeline,
			"old.plan": `{"format": 1, "pipeline": "saved", "path": ".", "keys": {}, "to_run": []}`})
		r := runCLI(t, "--chdir", root, "apply", "old.plan")
		assert.Equal(t, exitBadInput, r.code)
		assert.Contains(t, r.stderr, "make a new plan")

		// Format 2 did not hold what a may-run node's key is made of.
		require.Equal(t, exitOK, runCLI(t, "--chdir", root, "plan", "--out", "p.plan").code)
		b, err := os.ReadFile(filepath.Join(root, "p.plan"))
		require.NoError(t, err)
		writeFile(t, filepath.Join(root, "p.plan"), strings.Replace(string(b), `"format": 3`, `"format": 2`, 1))
		r = runCLI(t, "--chdir", root, "apply", "p.plan")
		assert.Equal(t, exitBadInput, r.code)
		assert.Contains(t, r.stderr, "p.plan is a plan file of format 2, which this cairn does not apply (it reads format 3): make a new plan")
		assert.NoFileExists(t, filepath.Join(root, "a.txt"), "nothing ran")
	})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func appendFile(t *testing.T, path, content string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	writeFile(t, path, string(b)+content)
}

// A --var or --var-file given to 'cairn apply PLANFILE' that changes a
// value the plan was made with is refused (exit 2) naming the flag, the
// variable and both values, not blamed on a stale plan; the saved value
// given again, or a sensitive variable's (which the plan file leaves out),
// is accepted. A CAIRN_VAR_ set since the plan was made is named in the
// stale plan's message.
func TestSavedPlanVarsGivenAgain(t *testing.T) {
	pipeline := `pipeline "v" {}

variable "n" {
  type    = number
  default = 1
}

variable "token" {
  type      = string
  sensitive = true
}

stage "command" "a" {
  run = ["sh", "-c", "echo ${var.n} > a.txt"]
  env = { TOKEN = var.token }
  outputs = ["a.txt"]
}
`
	root := cliWorkspace(t, map[string]string{"pipeline.hcl": pipeline, "four.tfvars": "n = 4\n"})
	r := runCLI(t, "--chdir", root, "plan", "--out", "my.plan", "--var", "n=3", "--var", "token=s")
	require.Equal(t, exitOK, r.code, r.stderr)

	for _, flag := range [][]string{{"--var", "n=4"}, {"--var-file", "four.tfvars"}} {
		r = runCLI(t, append([]string{"--chdir", root, "apply", "my.plan", "--var", "token=s"}, flag...)...)
		assert.Equal(t, exitBadInput, r.code, r.stdout)
		assert.Contains(t, r.stderr, flag[0]+" ")
		assert.Contains(t, r.stderr, "gives var.n another value (4) than the saved plan was made with (3)")
		assert.Contains(t, r.stderr, "give --var to 'cairn plan --out FILE'")
		assert.NotContains(t, r.stderr, "stale")
		assert.NoFileExists(t, filepath.Join(root, "a.txt"), "nothing ran")
	}

	t.Setenv("CAIRN_VAR_n", "5")
	r = runCLI(t, "--chdir", root, "plan", "--out", "env.plan", "--var", "token=s")
	require.Equal(t, exitOK, r.code, r.stderr)
	t.Setenv("CAIRN_VAR_n", "6")
	r = runCLI(t, "--chdir", root, "apply", "env.plan", "--var", "token=s")
	assert.Equal(t, exitBadInput, r.code, r.stdout)
	assert.Contains(t, r.stderr, "the saved plan is stale")
	assert.Contains(t, r.stderr, "The environment sets CAIRN_VAR_n, which apply reads again")
	os.Unsetenv("CAIRN_VAR_n")

	r = runCLI(t, "--chdir", root, "apply", "my.plan", "--var", "n=3", "--var", "token=s")
	require.Equal(t, exitOK, r.code, r.stderr)
	b, err := os.ReadFile(filepath.Join(root, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "3\n", string(b))
}

// A saved plan made with a sensitive variable's --var says to give it
// again, and apply without it is refused saying so, not as a stale plan;
// a --var-file edited since the plan was saved is refused naming it; a
// value that differs from the saved one in type only ("2" for 2) says
// both types.
func TestSavedPlanInputsThatCannotBeHadAgain(t *testing.T) {
	pipeline := `pipeline "v" {}

variable "n" {
  default = 2
}

variable "token" {
  type      = string
  sensitive = true
  default   = "none"
}

stage "command" "a" {
  run     = ["sh", "-c", "echo ${var.n} > a.txt"]
  env     = { TOKEN = var.token }
  outputs = ["a.txt"]
}
`
	root := cliWorkspace(t, map[string]string{"pipeline.hcl": pipeline, "n.tfvars": "n = 12\n"})
	r := runCLI(t, "--chdir", root, "plan", "--out", "my.plan", "--var", "token=s", "--var-file", "n.tfvars")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "my.plan --var token=VALUE (the plan file leaves out the value of the sensitive variable token: give it again)")
	r = runCLI(t, "--chdir", root, "apply", "my.plan")
	assert.Equal(t, exitBadInput, r.code, r.stdout)
	assert.Contains(t, r.stderr, "the plan was made with --var token=..., a sensitive variable whose value the plan file does not keep; nothing was run. Give it again")
	assert.NotContains(t, r.stderr, "stale")

	writeFile(t, filepath.Join(root, "n.tfvars"), "n = 14\n")
	r = runCLI(t, "--chdir", root, "apply", "my.plan", "--var", "token=s")
	assert.Equal(t, exitBadInput, r.code, r.stdout)
	assert.Contains(t, r.stderr, "n.tfvars changed since the plan was saved")
	assert.NoFileExists(t, filepath.Join(root, "a.txt"), "nothing ran")

	r = runCLI(t, "--chdir", root, "plan", "--out", "two.plan")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runCLI(t, "--chdir", root, "apply", "two.plan", "--var", "n=2")
	assert.Equal(t, exitBadInput, r.code, r.stdout)
	assert.Contains(t, r.stderr, `gives var.n another value ("2", string) than the saved plan was made with (2, number)`)
}

// A plan file cut short, emptied or edited is refused (exit 2), saying
// so, rather than read as a pipeline (an empty one would apply nothing
// and exit 0) or explained in Go's types; nothing runs.
func TestDamagedPlanFileIsRefused(t *testing.T) {
	root := cliWorkspace(t, map[string]string{"pipeline.hcl": savedPipeline})
	r := runCLI(t, "--chdir", root, "plan", "--out", "good.plan")
	require.Equal(t, 0, r.code, r.stderr)
	good, err := os.ReadFile(filepath.Join(root, "good.plan"))
	require.NoError(t, err)
	require.Contains(t, string(good), `"vars": null`)
	files := map[string]string{
		"cut.plan":   string(good[:len(good)/2]),
		"zero.plan":  "",
		"blank.plan": "\n  \n",
		"vars.plan":  strings.Replace(string(good), `"vars": null`, `"vars": {"x": 1}`, 1),
	}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(body), 0o644))
	}
	for name, want := range map[string]string{
		"cut.plan":   "cut.plan is not a plan file: it is not valid JSON at line ",
		"zero.plan":  "zero.plan is empty: give a plan saved by 'cairn plan --out FILE', or a pipeline (.hcl)",
		"blank.plan": "blank.plan is empty",
		"vars.plan":  "vars.plan is a damaged plan file (its field vars holds object, not what cairn plan writes there): make a new plan with 'cairn plan --out FILE'",
	} {
		r := runCLI(t, "--chdir", root, "apply", name)
		assert.Equal(t, exitBadInput, r.code, name)
		assert.Contains(t, strings.Join(strings.Fields(r.stderr), " "), want, name)
		assert.NotContains(t, r.stderr, "Go struct", name)
		assert.NotContains(t, r.stdout, "Apply complete", name)
	}
	assert.NoFileExists(t, filepath.Join(root, "a.txt"), "nothing ran")
}
