package docs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/stages"
	"github.com/cairn-run/cairn/stages/rollout"
)

// The tests in this file check claims the documents make in prose: each
// runs what a reader would run and compares it with what the text says.

// prose is a document with its whitespace collapsed, so that a sentence
// can be looked for whatever its line breaks.
func prose(t *testing.T, name string) string {
	return strings.Join(strings.Fields(readDoc(t, name)), " ")
}

// write creates files (path -> content) under dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(body), 0o644))
	}
}

// ok runs cairn and requires exit 0.
func ok(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	r := cairn(t, dir, env, args...)
	require.Equal(t, 0, r.code, "cairn %s:\n%s%s", strings.Join(args, " "), r.stdout, r.stderr)
	return r
}

// runDirs lists a cache's run folders, oldest first.
func runDirs(t *testing.T, cache string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(cache, "runs"))
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join(cache, "runs", e.Name()))
		}
	}
	sort.Strings(out)
	return out
}

// A directory pipeline without a pipeline block is named after the
// directory, also when cairn is given no argument or ".".
func TestDirectoryPipelineIsNamedAfterIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tour")
	write(t, dir, map[string]string{"a.hcl": "stage \"command\" \"a\" {\n  run = [\"true\"]\n}\n"})
	for _, args := range [][]string{{"plan"}, {"plan", "."}} {
		r := ok(t, dir, nil, args...)
		assert.Contains(t, r.stdout, `pipeline "tour"`, "cairn %v", args)
	}
	lang := prose(t, "language.md")
	assert.NotContains(t, lang, "which is `.` when you run")
	assert.Contains(t, lang, "`cairn plan` with no argument in `~/work/tour` names the pipeline `tour`")
}

// A PATH in a stage's env is where its program is looked up.
func TestEnvPathFindsTheProgram(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"pipeline.hcl": `stage "command" "a" {
  run     = ["mytool"]
  env     = { PATH = "${path.root}/tools:/usr/bin:/bin" }
  outputs = ["out.txt"]
}
`,
		"tools/mytool": "#!/bin/sh\necho found > out.txt\n",
	})
	require.NoError(t, os.Chmod(filepath.Join(dir, "tools/mytool"), 0o755))
	ok(t, dir, nil, "apply")
	b, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "found\n", string(b))
	lang := prose(t, "language.md")
	assert.NotContains(t, lang, "not this lookup")
	assert.Contains(t, lang, "is looked up in the stage's `PATH` — the one in its `env` when it sets one")
}

// The GPU check counts only nodes that will run: a GPU node taken from
// the cache applies on a machine without GPUs.
func TestGPUCheckSkipsCachedNodes(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"pipeline.hcl": `stage "command" "g" {
  run     = ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES > g.txt"]
  gpus    = 2
  outputs = ["g.txt"]
}
`})
	ok(t, dir, []string{"CAIRN_GPUS=sim:2"}, "apply")
	r := ok(t, dir, []string{"CAIRN_GPUS=none"}, "apply", "--verbose")
	assert.Contains(t, r.stdout, "Apply complete: 0 ran, 1 cached")
	lang := prose(t, "language.md")
	assert.NotContains(t, lang, "counts cached nodes too")
	assert.Contains(t, lang, "nodes taken from the cache need no GPU and are not counted")
}

// Every journal record type an apply writes has its row in the journal
// table, and every file it leaves in its run folder is in the layout.
func TestJournalAndRunFolderAsDocumented(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"pipeline.hcl": `stage "command" "a" {
  run     = ["sh", "-c", "echo a > a.txt; echo log >&2"]
  outputs = ["a.txt"]
}
stage "command" "b" {
  run   = ["sh", "-c", "exit 1"]
  after = [stage.a]
}
stage "command" "c" {
  run   = ["true"]
  after = [stage.b]
}
`})
	r := cairn(t, dir, nil, "apply")
	require.Equal(t, 1, r.code, r.stdout+r.stderr)
	r = cairn(t, dir, nil, "apply") // a from the cache
	require.Equal(t, 1, r.code, r.stdout+r.stderr)
	dur := readDoc(t, "durability.md")
	types := map[string]bool{}
	runs := runDirs(t, filepath.Join(dir, ".cairn"))
	require.Len(t, runs, 2)
	for _, run := range runs {
		entries, err := runlog.Read(run)
		require.NoError(t, err)
		for _, e := range entries {
			types[e.T] = true
		}
	}
	for _, want := range []string{runlog.RunStart, runlog.Planned, runlog.Started, runlog.Finished, runlog.Failed, runlog.Cached, runlog.Skipped, runlog.RunEnd} {
		assert.True(t, types[want], "no %s record in the journals", want)
	}
	// A cluster executor's waits (pipelines/slurm_test.go journals them).
	types[runlog.Waiting] = true
	for ty := range types {
		assert.Regexp(t, "(?m)^\\| `"+regexp.QuoteMeta(ty)+"` \\|", dur, "journal record %s has no row in docs/durability.md", ty)
	}
	assert.NotContains(t, prose(t, "durability.md"), "does not write")

	// The run folder's layout: what the documentation lists under
	// runs/<run-id>/.
	layout := section(dur, "## The cache folder")
	require.NotEmpty(t, layout)
	documented := map[string]bool{}
	in := false
	for _, l := range strings.Split(layout, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "runs/<run-id>/":
			in = true
		case in && (len(f) == 0 || !strings.HasPrefix(l, "    ")):
			in = false
		case in:
			documented[strings.TrimSuffix(strings.SplitN(f[0], "/", 2)[0], "/")] = true
		}
	}
	require.Contains(t, documented, "journal")
	for _, run := range runs {
		ents, err := os.ReadDir(run)
		require.NoError(t, err)
		for _, e := range ents {
			assert.True(t, documented[e.Name()], "%s in a run folder is not in docs/durability.md's layout", e.Name())
		}
		b, err := os.ReadFile(filepath.Join(run, "lock"))
		if assert.NoError(t, err, "the documented end marker in the lock file") {
			var m struct{ Pipeline, Status string }
			require.NoError(t, json.Unmarshal(b, &m), string(b))
			assert.Equal(t, "failed", m.Status)
			assert.Equal(t, filepath.Base(dir), m.Pipeline)
		}
	}
	assert.True(t, documented["ended"])
	assert.True(t, documented["lock"])
}

// After gc removed a node's record, plan says its cached result is gone,
// as the list of plan reasons promises.
func TestPlanAfterGCSaysGone(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"pipeline.hcl": `stage "command" "a" {
  run     = ["sh", "-c", "echo a > a.txt"]
  outputs = ["a.txt"]
}
`})
	ok(t, dir, nil, "apply")
	r := ok(t, dir, nil, "gc", "--older-than", "1ns")
	assert.Contains(t, r.stdout, "Removed 1 record(s)")
	const gone = "the cached result is gone (evicted, collected or damaged)"
	r = ok(t, dir, nil, "plan")
	assert.Contains(t, r.stdout, "~ stage.a  run: "+gone)
	r = cairn(t, dir, nil, "show", "stage.a")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "the last result of stage.a is gone (evicted, collected or damaged)")
	assert.Contains(t, readDoc(t, "language.md"), "`"+gone+"`")

	// Another key, never run: its result is not "gone", the record of
	// the key before it is.
	write(t, dir, map[string]string{"pipeline.hcl": `stage "command" "a" {
  run     = ["sh", "-c", "echo never-run > a.txt"]
  outputs = ["a.txt"]
}
`})
	const other = "its key is not the one it last ran with here, whose record is gone (evicted, collected or damaged): what changed cannot be told"
	r = ok(t, dir, nil, "plan")
	assert.Contains(t, r.stdout, "~ stage.a  run: "+other)
	assert.NotContains(t, r.stdout, gone)
	assert.Contains(t, prose(t, "language.md"), other)
}

// A workspace that cannot take a cached output fails its node with the
// path and what to do, and the record stays for the other workspaces, as
// durability.md says.
func TestWorkspaceRestoreFailureDoesNotEvict(t *testing.T) {
	cache := t.TempDir()
	a, b := t.TempDir(), t.TempDir()
	p := map[string]string{"pipeline.hcl": `stage "command" "a" {
  run     = ["sh", "-c", "mkdir -p d && echo a > d/small.txt"]
  outputs = ["d/small.txt"]
}
`}
	write(t, a, p)
	write(t, b, p)
	ok(t, a, nil, "--cache", cache, "apply")
	require.NoError(t, os.MkdirAll(filepath.Join(b, "d", "small.txt", "x"), 0o755))
	r := cairn(t, b, nil, "--cache", cache, "apply")
	assert.Equal(t, 1, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "stage.a failed (result)")
	const said = "d/small.txt is a folder: remove it, or move it aside, and apply again"
	assert.Contains(t, r.stdout, filepath.Join(b, said))
	r = ok(t, a, []string{"CAIRN_NO_MEMO=1"}, "--cache", cache, "plan")
	assert.Contains(t, r.stdout, "= stage.a  cached")
	doc := prose(t, "durability.md")
	assert.Contains(t, doc, "the record is not evicted and other workspaces keep their hit")
	assert.Contains(t, doc, said)
}

// A run whose journal is cut before its run_start record is still listed
// by cairn status, as durability.md says.
func TestStatusListsRunWithCutJournal(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"pipeline.hcl": "stage \"command\" \"a\" {\n  run = [\"true\"]\n}\n"})
	ok(t, dir, nil, "apply")
	runs, err := filepath.Glob(filepath.Join(dir, ".cairn", "runs", "2*"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.NoError(t, os.Truncate(filepath.Join(runs[0], "journal"), 5))
	r := ok(t, dir, nil, "status")
	row := strings.Join(strings.Fields(r.stdout), " ")
	assert.Contains(t, row, filepath.Base(runs[0])+" unknown ? interrupted (journal damaged)")
	assert.Contains(t, prose(t, "durability.md"), "its state is marked `(journal damaged)`, its start shows as `unknown`")
}

// A damaged index record is skipped with a warning by plan and by an apply
// that takes everything from the cache, not only by the next commit.
func TestDamagedIndexRecordWarns(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"a.hcl": "stage \"command\" \"a\" {\n  run     = [\"sh\", \"-c\", \"echo a > a.txt\"]\n  outputs = [\"a.txt\"]\n}\n",
		"b.hcl": "stage \"command\" \"b\" {\n  run     = [\"sh\", \"-c\", \"echo b > b.txt\"]\n  outputs = [\"b.txt\"]\n}\n",
	})
	ok(t, dir, nil, "apply", "a.hcl")
	ok(t, dir, nil, "apply", "b.hcl")
	// Flip a byte inside b's record.
	index := filepath.Join(dir, ".cairn", "index.log")
	b, err := os.ReadFile(index)
	require.NoError(t, err)
	i := bytes.Index(b, []byte(`"address":"stage.b"`))
	require.Positive(t, i)
	b[i+12] ^= 0x20
	require.NoError(t, os.WriteFile(index, b, 0o644))
	const warning = "warning: cache: the index record at byte "
	// --json and --verbose: the up-to-date memo, which does not read the
	// index, is not asked.
	r := ok(t, dir, nil, "plan", "--json", "b.hcl")
	assert.Contains(t, r.stderr, warning)
	r = ok(t, dir, nil, "apply", "--verbose", "a.hcl")
	assert.Contains(t, r.stdout, "Apply complete: 0 ran, 1 cached")
	assert.Contains(t, r.stderr, warning)
	assert.Contains(t, prose(t, "durability.md"), "a damaged record is skipped with a warning")
}

// cairn status counts nodes, each once, and failed attempts apart; cairn
// show RUN lists every attempt's logs, and a setup failure's attempt and
// log.
func TestStatusAndShowRun(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"pipeline.hcl": `stage "command" "flaky" {
  run = ["sh", "-c", "echo try $CAIRN_ATTEMPT >&2; exit 3"]
  retry {
    max = 2
    on  = ["exit"]
  }
}
stage "command" "missing" {
  run = ["./no-such-program"]
}
stage "command" "fine" {
  run = ["true"]
}
`})
	r := cairn(t, dir, nil, "apply")
	require.Equal(t, 1, r.code, r.stdout+r.stderr)
	st := ok(t, dir, nil, "status")
	lines := strings.Split(strings.TrimSpace(st.stdout), "\n")
	require.GreaterOrEqual(t, len(lines), 2, st.stdout)
	header := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(lines[0]), -1)
	row := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(lines[1]), -1)
	require.Equal(t, len(header), len(row), st.stdout)
	col := map[string]string{}
	for i, h := range header {
		col[h] = row[i]
	}
	assert.Equal(t, "1", col["OK"], st.stdout)
	assert.Equal(t, "2", col["FAILED"], st.stdout)
	assert.Equal(t, "4", col["FAILED ATTEMPTS"], st.stdout)
	assert.Contains(t, readDoc(t, "language.md"), "`FAILED ATTEMPTS` counts every failed attempt")

	run := filepath.Base(runDirs(t, filepath.Join(dir, ".cairn"))[0])
	show := ok(t, dir, nil, "show", run)
	var flaky, missing string
	for _, l := range strings.Split(show.stdout, "\n") {
		switch {
		case strings.HasPrefix(l, "stage.flaky "):
			flaky = l
		case strings.HasPrefix(l, "stage.missing "):
			missing = l
		}
	}
	for _, log := range []string{"flaky.err", "flaky.attempt2.err", "flaky.attempt3.err"} {
		assert.Contains(t, flaky, "/"+log, "every attempt's log")
	}
	assert.Regexp(t, `failed \(exit\)\s+3\s`, flaky)
	assert.Regexp(t, `failed \(setup\)\s+1\s`, missing)
	assert.Contains(t, missing, "/missing.err")
}

// Record fields: every field of a real record is in the documented
// example, and those the example leaves out are said to be left out when
// empty (the fields Go omits when empty).
func TestRecordExampleFields(t *testing.T) {
	omitted := map[string]bool{}
	all := map[string]bool{}
	rt := reflect.TypeOf(store.Record{})
	for i := 0; i < rt.NumField(); i++ {
		tag := rt.Field(i).Tag.Get("json")
		if tag == "" || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		all[name] = true
		if strings.Contains(opts, "omitempty") {
			omitted[name] = true
		}
	}
	require.NotEmpty(t, omitted)
	dur := readDoc(t, "durability.md")
	start := strings.Index(dur, "A record:\n\n```json\n")
	require.Positive(t, start)
	recDoc := dur[start:]
	end := strings.Index(recDoc, "\n```\n")
	after := strings.Join(strings.Fields(recDoc[end:min(len(recDoc), end+600)]), " ")
	recDoc = recDoc[:end]
	docFields := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  "([a-z_]+)":`).FindAllStringSubmatch(recDoc, -1) {
		docFields[m[1]] = true
		assert.True(t, all[m[1]], "the record example shows %s, which records do not have", m[1])
	}
	for f := range all {
		if !docFields[f] {
			assert.True(t, omitted[f], "%s is in every record but not in the example", f)
		}
	}
	for f := range omitted {
		assert.Contains(t, after, "`"+f+"`", "the text after the example does not say %s is left out when empty", f)
	}
	assert.Contains(t, after, "Fields with nothing to say are left out of a record")

	// A real record, through cairn show.
	var worked example
	for _, ex := range examples(t, parseDoc(t, "keys.md")) {
		if ex.pipeline.attr("name") == "worked" {
			worked = ex
		}
	}
	require.NotEmpty(t, worked.pipeline.body)
	dir := worked.workspace(t)
	ok(t, dir, nil, "apply")
	r := ok(t, dir, nil, "show", "stage.hello")
	assert.Contains(t, r.stderr, "# pipeline worked, stage.hello")
	var rec map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rec), r.stdout)
	for f := range rec {
		assert.True(t, docFields[f], "cairn show prints %s, which the example does not show", f)
	}
	for f := range docFields {
		if _, ok := rec[f]; !ok {
			assert.True(t, omitted[f], "the example shows %s, which this record lacks", f)
		}
	}
	assert.JSONEq(t, `{"hello.json": "0644"}`, string(rec["modes"]), "modes in octal")
}

// cairn show and plan reasons print &, < and > as written, and a changed
// long run shows where it changed.
func TestShowAndReasonsReadable(t *testing.T) {
	dir := t.TempDir()
	pipeline := `variable "n" {
  type    = string
  default = "1"
}
stage "command" "a" {
  run     = ["sh", "-c", "echo a long preamble that is the same before and after the change && echo ${var.n} > a.txt && test 1 -lt 2 && echo '<done>'"]
  outputs = ["a.txt"]
}
`
	write(t, dir, map[string]string{"pipeline.hcl": pipeline})
	ok(t, dir, nil, "apply")
	r := ok(t, dir, nil, "show", "stage.a")
	assert.Contains(t, r.stdout, "&& echo 1 > a.txt")
	assert.Contains(t, r.stdout, "'<done>'")
	assert.NotContains(t, r.stdout, `\u00`)
	assert.Regexp(t, `"a.txt": "0644"`, r.stdout)
	r = ok(t, dir, nil, "plan", "--var", "n=2")
	m := regexp.MustCompile(`run: run: (.*) -> (.*)`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	assert.NotEqual(t, m[1], m[2], "the two sides of the change look the same")
	assert.Contains(t, m[1], "echo 1 > a.txt")
	assert.Contains(t, m[2], "echo 2 > a.txt")
	assert.NotContains(t, r.stdout, `\u00`)
	assert.Contains(t, prose(t, "durability.md"), "`&`, `<` and `>` as they are")
}

// The CLI: a misspelled flag gets the closest one and the verb's help;
// -v has one meaning.
func TestFlagErrors(t *testing.T) {
	dir := t.TempDir()
	r := cairn(t, dir, nil, "plan", "--tagret", "x")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "Error: unknown flag: --tagret\nDid you mean --target?\nRun 'cairn plan --help' for usage.\n")
	assert.Contains(t, readDoc(t, "language.md"), "Error: unknown flag: --tagret\nDid you mean --target?\nRun 'cairn plan --help' for usage.\n")

	r = cairn(t, dir, nil, "-v")
	assert.Equal(t, 2, r.code, "-v is not --version")
	assert.NotContains(t, r.stdout, "node key envelope")
	assert.Contains(t, r.stderr, "Did you mean --version?")
	r = ok(t, dir, nil, "--version")
	assert.Contains(t, r.stdout, "node key envelope", "--version prints what cairn version does")
	r = ok(t, dir, nil, "apply", "--help")
	assert.Contains(t, r.stdout, "-v, --verbose")
	assert.Contains(t, prose(t, "language.md"), "the one-letter `-v` means only `--verbose`")
}

// Claims left for the user to guess before: range's limit and what to use
// instead, --var over a saved plan, refused applies in cairn status,
// fmt's message on a syntax error, graph's --var.
func TestSmallClaims(t *testing.T) {
	lang := readDoc(t, "language.md")
	t.Run("range", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, map[string]string{"pipeline.hcl": "locals {\n  n = length(range(1025))\n}\nstage \"command\" \"a\" {\n  run = [\"echo\", local.n]\n}\n"})
		r := cairn(t, dir, nil, "validate")
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, "more than 1024 values")
		m := regexp.MustCompile("for more, join ranges: `([^`]+)` is 0 … 3999").FindStringSubmatch(lang)
		require.NotNil(t, m, "the documented way around range's limit")
		write(t, dir, map[string]string{"pipeline.hcl": "stage \"command\" \"a\" {\n  run = [\"echo\", length(" + m[1] + "), max(" + m[1] + "...)]\n}\n"})
		r = ok(t, dir, nil, "plan", "--json")
		var plan struct{ Nodes []struct{ Key string } }
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &plan))
		require.Len(t, plan.Nodes, 1)
		s := ok(t, dir, nil, "apply")
		assert.Contains(t, s.stdout, "Apply complete: 1 ran")
		out := ok(t, dir, nil, "show", "stage.a")
		assert.Regexp(t, `"echo",\s+4000,\s+3999\s`, out.stdout)
	})
	t.Run("var over a saved plan", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, map[string]string{"pipeline.hcl": "variable \"x\" {\n  type    = string\n  default = \"a\"\n}\nstage \"command\" \"a\" {\n  run     = [\"sh\", \"-c\", \"echo ${var.x} > x.txt\"]\n  outputs = [\"x.txt\"]\n}\n"})
		ok(t, dir, nil, "plan", "--var", "x=b", "--out", "p.plan")
		r := cairn(t, dir, nil, "apply", "p.plan", "--var", "x=c")
		assert.Equal(t, 2, r.code, "the --var changed the key: the plan is stale")
		ok(t, dir, nil, "apply", "p.plan", "--var", "x=b")
		b, err := os.ReadFile(filepath.Join(dir, "x.txt"))
		require.NoError(t, err)
		assert.Equal(t, "b\n", string(b))
		assert.Contains(t, prose(t, "language.md"), "`--var` / `--var-file` given with it override them")
	})
	t.Run("refused run", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, map[string]string{"pipeline.hcl": "stage \"command\" \"g\" {\n  run  = [\"true\"]\n  gpus = 2\n}\n"})
		r := cairn(t, dir, nil, "apply")
		assert.Equal(t, 1, r.code)
		st := ok(t, dir, nil, "status")
		assert.Regexp(t, `\srefused\s`, st.stdout)
		run := filepath.Base(runDirs(t, filepath.Join(dir, ".cairn"))[0])
		show := ok(t, dir, nil, "show", run)
		assert.Contains(t, show.stdout, "stage.g asks for 2 GPU(s)")
		assert.Contains(t, prose(t, "language.md"), "`cairn status` lists it with the state `refused`")
	})
	t.Run("fmt on a syntax error", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, map[string]string{"bad.hcl": "stage \"command\" \"a\" {\n  run = [\"echo\" \"x\"]\n}\n"})
		r := cairn(t, dir, nil, "fmt", "bad.hcl")
		assert.Equal(t, 2, r.code)
		assert.NotContains(t, r.stderr, "source code not available")
		assert.Contains(t, r.stderr, `run = ["echo" "x"]`)
		assert.Contains(t, r.stderr, "bad.hcl cannot be parsed")
	})
	t.Run("graph takes --var", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, map[string]string{"pipeline.hcl": "variable \"ks\" {\n  type    = set(string)\n  default = [\"a\"]\n}\nstage \"command\" \"s\" {\n  for_each = var.ks\n  run      = [\"true\"]\n}\n"})
		r := ok(t, dir, nil, "graph", "--var", `ks=["a","b"]`)
		assert.Contains(t, r.stdout, `stage.s[\"b\"]`)
		assert.Contains(t, lang, "`cairn graph [PATH] [--var ...] [--var-file ...]")
	})
}

// The README's rules and tour hold: length takes strings and objects, and
// the tour's SVG does not need a pipe that leaves an empty file.
func TestReadmeRulesAndTour(t *testing.T) {
	readme := prose(t, "../README.md")
	assert.NotContains(t, readme, "`length` does not take")
	assert.Contains(t, readme, "`length(stage.X)` is the number of its instances")
	dir := t.TempDir()
	write(t, dir, map[string]string{"pipeline.hcl": `stage "command" "x" {
  for_each = toset(["a", "b"])
  run      = ["true"]
}
stage "command" "n" {
  run = ["echo", length(stage.x), length("abc"), length({ a = 1 })]
}
`})
	ok(t, dir, nil, "validate")

	assert.NotContains(t, readme, "| dot -Tsvg")
	assert.Contains(t, readme, "cairn graph --format svg --out dag.svg")
	// Without graphviz, cairn says what is missing and writes nothing.
	r := cairn(t, dir, []string{"PATH=" + t.TempDir()}, "graph", "--format", "svg", "--out", "dag.svg")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "graphviz")
	assert.NoFileExists(t, filepath.Join(dir, "dag.svg"))
}

// The README's tour: after the run with large=2000 and the revert to the
// defaults, `cairn show` shows the record of the configuration the
// workspace holds (1000 lines), says so, and points at --all for the
// 2000-line one, which --all shows too.
func TestTourShowMatchesTheCurrentConfiguration(t *testing.T) {
	readme := readDoc(t, "../README.md")
	m := regexp.MustCompile(`(?s)cat > pipeline.hcl <<'EOF'\n(.*?)\nEOF\n`).FindStringSubmatch(readme)
	require.NotNil(t, m, "the README's tour pipeline")
	assert.Contains(t, prose(t, "../README.md"), "cairn show 'stage.stats[\"large\"]' # the record of the current configuration (1000 lines); --all shows the 2000-line one too")
	dir := t.TempDir()
	write(t, dir, map[string]string{"pipeline.hcl": m[1] + "\n"})
	ok(t, dir, nil, "apply")
	ok(t, dir, nil, "apply", "--var", "sizes={small=10, large=2000}")
	ok(t, dir, nil, "apply")
	linesOf := regexp.MustCompile(`"lines": (\d+)`)
	r := ok(t, dir, nil, "show", `stage.stats["large"]`)
	assert.Equal(t, [][]string{{`"lines": 1000`, "1000"}}, linesOf.FindAllStringSubmatch(r.stdout, -1), r.stdout)
	assert.Contains(t, r.stderr, `# pipeline tour, stage.stats["large"]: the record that matches the current configuration (pipeline tour in this workspace)`)
	assert.Contains(t, r.stderr, `# 1 other record(s) of stage.stats["large"] in this cache: cairn show --all 'stage.stats["large"]'`)

	r = ok(t, dir, nil, "show", "--all", `stage.stats["large"]`)
	var got []string
	for _, l := range linesOf.FindAllStringSubmatch(r.stdout, -1) {
		got = append(got, l[1])
	}
	assert.Equal(t, []string{"2000", "1000"}, got, "newest first:\n%s", r.stdout)
	assert.Contains(t, r.stderr, `# pipeline tour, stage.stats["large"]: the last committed`)

	// With the other configuration's --var, its record is the one shown.
	r = ok(t, dir, nil, "show", "--var", "sizes={small=10, large=2000}", `stage.stats["large"]`)
	assert.Equal(t, [][]string{{`"lines": 2000`, "2000"}}, linesOf.FindAllStringSubmatch(r.stdout, -1), r.stdout)

	// Away from the workspace there is no configuration to match: the last
	// record committed, said to be that.
	away := t.TempDir()
	r = ok(t, away, []string{"CAIRN_CACHE=" + filepath.Join(dir, ".cairn")}, "show", `stage.stats["large"]`)
	assert.Contains(t, r.stderr, "# no record matches the current configuration: no pipeline in this workspace to match it against (name one with --pipeline FILE); the last record committed follows")
	assert.Equal(t, [][]string{{`"lines": 2000`, "2000"}}, linesOf.FindAllStringSubmatch(r.stdout, -1), r.stdout)

	// --pipeline names the pipeline to match: from elsewhere too (its
	// paths are the workspace's, as plan's are).
	r = ok(t, dir, nil, "show", "--pipeline", "pipeline.hcl", `stage.stats["large"]`)
	assert.Contains(t, r.stderr, "the record that matches the current configuration")
	assert.Equal(t, [][]string{{`"lines": 1000`, "1000"}}, linesOf.FindAllStringSubmatch(r.stdout, -1), r.stdout)

	// A pipeline or variables the command line gives that do not load
	// are refused as plan refuses them (exit 2), not matched to nothing.
	for _, args := range [][]string{{"--pipeline", "nope.hcl"}, {"--var", "bogus=1"}, {"--var", "sizes=notamap"}} {
		r = cairn(t, dir, nil, append([]string{"show", `stage.stats["large"]`}, args...)...)
		assert.Equal(t, 2, r.code, "%v:\n%s%s", args, r.stdout, r.stderr)
		assert.Empty(t, r.stdout, args)
	}
	// The workspace's own pipeline broken: the last record, said to be
	// that, and why.
	broken := t.TempDir()
	write(t, broken, map[string]string{"pipeline.hcl": "stage \"command\" {\n"})
	r = ok(t, broken, []string{"CAIRN_CACHE=" + filepath.Join(dir, ".cairn")}, "show", `stage.stats["large"]`)
	assert.Contains(t, r.stderr, "# no record matches the current configuration: the workspace's pipeline does not load ('cairn validate' says why)")
}

// Every repository file the README names in backquotes exists, and the
// aggregation's random stream is the one the code uses.
func TestReadmeNamesFilesThatExist(t *testing.T) {
	readme := readDoc(t, "../README.md")
	named := regexp.MustCompile("`((?:pipelines|docs|scripts|testdata|bench|cmd|stages|engine)/[A-Za-z0-9_./-]+\\.(?:hcl|md|sh|py|go))`").FindAllStringSubmatch(readme, -1)
	require.NotEmpty(t, named)
	for _, m := range named {
		if strings.Contains(m[1], "/out/") {
			continue // what a command writes
		}
		assert.FileExists(t, filepath.Join("..", m[1]), "README names %s", m[1])
	}
	code, err := os.ReadFile("../stats/stats.go")
	require.NoError(t, err)
	require.Contains(t, string(code), "Xoshiro is xoshiro256++")
	text := prose(t, "../README.md")
	assert.Contains(t, text, "its random stream is xoshiro256++")
	assert.NotContains(t, text, "PCG")
}

// job-artifacts.md lists the summary line's fields in the order a job
// prints them: the seed's seven, then method, seed and out; the line
// job_result makes has exactly those keys, in that order.
func TestSummaryLineFieldsAreDocumented(t *testing.T) {
	doc := prose(t, "job-artifacts.md")
	m := regexp.MustCompile("The summary line a job prints in the apply output is this object restricted to (.*?) \\(the seed's fields\\), then (.*?) \\(the job's out folder\\)").FindStringSubmatch(doc)
	require.NotNil(t, m, "job-artifacts.md describes the summary line")
	var documented []string
	for _, n := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(m[1]+" "+m[2], -1) {
		documented = append(documented, n[1])
	}
	line := stages.ResultFile{Format: stages.ResultFormat, Status: "ok", Method: "gepa", CellID: "hotpotqa/centralized/qwen", Seed: 2}.SummaryLine("runs/gepa/hotpotqa/centralized/qwen/2")
	dec := json.NewDecoder(strings.NewReader(line))
	var keys []string
	_, err := dec.Token() // {
	require.NoError(t, err)
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var v json.RawMessage
		require.NoError(t, dec.Decode(&v))
	}
	assert.Equal(t, documented, keys, "the summary line: %s", line)
	assert.Contains(t, doc, "cairn apply pipelines/optimizer_grid.hcl --summaries | jq")
}

// The rollout service's counts are each defined, apart from an evaluate
// stage's of the same names; a ledger line leaves out `cached` when it is
// false, as the documents say; the worker's `charged` is not said to be the
// optimization's budget accounting; result.json's rounding is said.
func TestRolloutCountsAndLedgerAsDocumented(t *testing.T) {
	proto := readDoc(t, "rollout-protocol.md")
	counts := section(proto, "### Counts")
	require.NotEmpty(t, counts, "rollout-protocol.md has a Counts section")
	ct := reflect.TypeOf(rollout.Counts{})
	for i := range ct.NumField() {
		name, _, _ := strings.Cut(ct.Field(i).Tag.Get("json"), ",")
		assert.Contains(t, counts, "`"+name+"`", "the count %s is not defined", name)
	}
	assert.Contains(t, counts, "worker-protocol.md#progress", "the evaluate stage's counts are pointed at")

	b, err := json.Marshal(rollout.LedgerLine{N: 1, Bundle: "b", Item: "i", Key: "k"})
	require.NoError(t, err)
	assert.NotContains(t, string(b), "cached")
	b, err = json.Marshal(rollout.LedgerLine{N: 1, Cached: true})
	require.NoError(t, err)
	assert.Contains(t, string(b), `"cached":true`)
	for _, doc := range []string{"rollout-protocol.md", "job-artifacts.md"} {
		assert.Contains(t, prose(t, doc), "`cached`: true for a rollout answered from the item store, left out otherwise", doc)
	}

	worker := prose(t, "worker-protocol.md")
	assert.NotContains(t, worker, "(budget accounting)")
	assert.Contains(t, worker, "an `optimize` stage's budget does not read it")
	assert.Contains(t, prose(t, "job-artifacts.md"), "The three are rounded to 6 decimal places")
	assert.Contains(t, prose(t, "rollout-protocol.md"), "`cairn show RUN` lists it")
}
