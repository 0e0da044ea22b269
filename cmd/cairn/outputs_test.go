package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An --out never writes over what cairn or the command reads: a harness
// log import reads, a pipeline file or var file graph and plan read (or
// any .hcl, a new one too: the pipeline folder would load it), the
// cache's own files (its index, a run's journal). Each is refused with
// exit 2, and the file is as it was; a folder is refused as not a file.
func TestOutNeverWritesOverWhatCairnReads(t *testing.T) {
	src, err := os.ReadFile("../../stages/modelcache/testdata/arith.eval")
	require.NoError(t, err)
	root := cliWorkspace(t, map[string]string{
		"logs/arith.eval": string(src),
		"pipeline.hcl":    "stage \"command\" \"a\" {\n  run = [\"true\"]\n}\n",
		"vars/v.json":     "{}\n",
	})
	r := runCLI(t, "--chdir", root, "apply")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, os.Link(filepath.Join(root, "logs/arith.eval"), filepath.Join(root, "same.eval")))
	unchanged := func(rel, want string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, rel))
		require.NoError(t, err)
		assert.Equal(t, want, string(b), rel)
	}
	index, err := os.ReadFile(filepath.Join(root, ".cairn", "index.log"))
	require.NoError(t, err)
	pipeline := "stage \"command\" \"a\" {\n  run = [\"true\"]\n}\n"

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"import", "inspect", "logs/arith.eval", "--out", "logs/arith.eval"}, "import: --out logs/arith.eval is " + filepath.Join(root, "logs/arith.eval") + ", which it reads: writing it would destroy its input; name another file"},
		{[]string{"import", "inspect", "logs/arith.eval", "--out", "same.eval"}, "which it reads"},
		{[]string{"import", "inspect", "logs/arith.eval", "--out", "logs"}, "import: --out logs is not a regular file (a folder): name a file to write"},
		{[]string{"import", "inspect", "logs/arith.eval", "--out", ".cairn/index.log"}, "import: --out .cairn/index.log is inside the cache folder"},
		{[]string{"report", "--out", ".cairn/index.log"}, "report: --out .cairn/index.log is inside the cache folder"},
		{[]string{"report", "--out", "pipeline.hcl"}, "report: --out pipeline.hcl is a pipeline file (.hcl), which it would write over; name another file"},
		{[]string{"graph", "--out", "pipeline.hcl"}, "graph: --out pipeline.hcl is " + filepath.Join(root, "pipeline.hcl") + ", which it reads"},
		{[]string{"graph", "--out", ".cairn/x.dot"}, "graph: --out .cairn/x.dot is inside the cache folder"},
		{[]string{"plan", "--out", "pipeline.hcl"}, "plan: --out pipeline.hcl is " + filepath.Join(root, "pipeline.hcl") + ", which it reads: writing it would destroy its input; name another file"},
		{[]string{"plan", "--var-file", "vars/v.json", "--out", "vars/v.json"}, "plan: --out vars/v.json is " + filepath.Join(root, "vars/v.json") + ", which it reads"},
		{[]string{"plan", "--out", ".cairn/x.plan"}, "plan: --out .cairn/x.plan is inside the cache folder"},
		{[]string{"plan", "--out", "other.hcl"}, "plan: --out other.hcl names a pipeline file (.hcl): a pipeline folder loads every .hcl file in it"},
		{[]string{"report", "--out", "page.hcl"}, "report: --out page.hcl names a pipeline file (.hcl)"},
	} {
		r := runCLI(t, append([]string{"--chdir", root}, c.args...)...)
		assert.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.msg, c.args)
	}
	unchanged("logs/arith.eval", string(src))
	unchanged("pipeline.hcl", pipeline)
	unchanged(".cairn/index.log", string(index))
	unchanged("vars/v.json", "{}\n")
	assert.NoFileExists(t, filepath.Join(root, ".cairn", "x.dot"))
	assert.NoFileExists(t, filepath.Join(root, ".cairn", "x.plan"))
	assert.NoFileExists(t, filepath.Join(root, "other.hcl"))
	assert.NoFileExists(t, filepath.Join(root, "page.hcl"))
	r = runCLI(t, "--chdir", root, "plan")
	require.Equal(t, 0, r.code, "the pipeline folder still loads: %s", r.stderr)

	// Elsewhere, they write.
	r = runCLI(t, "--chdir", root, "graph", "--out", "graph.dot")
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "--chdir", root, "report", "--out", "page/report.html")
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "--chdir", root, "plan", "--out", "saved.plan")
	require.Equal(t, 0, r.code, r.stderr)
	assert.FileExists(t, filepath.Join(root, "saved.plan"))
	assert.FileExists(t, filepath.Join(root, "page", "trace.tsv"))
}

// A cached result its postcondition fails has no attempt: `cairn show
// RUN` and its --json (what the report page is drawn from) agree on it.
func TestCachedResultFailingItsPostconditionHasNoAttempt(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"pipeline.hcl": `stage "command" "gate" {
  run    = ["sh", "-c", "echo '{\"acc\": 0.1}' > r.json"]
  result = "r.json"
  postcondition {
    condition     = self.result.acc >= 0.5
    error_message = "accuracy too low"
  }
}
`,
	})
	r := runCLI(t, "--chdir", root, "apply")
	require.Equal(t, 1, r.code, r.stderr)
	r = runCLI(t, "--chdir", root, "apply")
	require.Equal(t, 1, r.code, r.stderr)
	run := regexp.MustCompile(`run (\d{8}T[0-9.]+Z-[0-9a-f]+)\]`).FindStringSubmatch(r.stdout + r.stderr)
	require.NotNil(t, run, r.stdout+r.stderr)
	show := runCLI(t, "--chdir", root, "show", run[1], "--json")
	require.Equal(t, 0, show.code, show.stderr)
	var page struct {
		Counts struct {
			FailedAttempts int `json:"failed_attempts"`
		} `json:"counts"`
		Nodes []struct {
			Addr     string `json:"addr"`
			State    string `json:"state"`
			Attempts int    `json:"attempts"`
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &page), show.stdout)
	require.Len(t, page.Nodes, 1)
	assert.Equal(t, "failed", page.Nodes[0].State)
	assert.Equal(t, 0, page.Nodes[0].Attempts, "a cached result ran no attempt")
	assert.Equal(t, 0, page.Counts.FailedAttempts)
}

// A run reported after gc collected its nodes' records says so, on the
// page and on the terminal, rather than showing it had no results.
func TestReportSaysWhatGcCollected(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"pipeline.hcl": "stage \"command\" \"a\" {\n  run     = [\"sh\", \"-c\", \"head -c 100000 /dev/zero > out.bin\"]\n  outputs = [\"out.bin\"]\n}\n",
	})
	r := runCLI(t, "--chdir", root, "apply")
	require.Equal(t, 0, r.code, r.stderr)
	run := regexp.MustCompile(`run (\d{8}T[0-9.]+Z-[0-9a-f]+)\]`).FindStringSubmatch(r.stdout + r.stderr)
	require.NotNil(t, run, r.stdout+r.stderr)
	r = runCLI(t, "--chdir", root, "report", run[1], "--out", "before.html")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "no longer holds")

	r = runCLI(t, "--chdir", root, "gc", "--max-size", "0")
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "--chdir", root, "report", run[1], "--out", "after.html")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "warning: run "+run[1]+": the cache no longer holds the records of 1 node(s) that finished in this run (stage.a)")
	show := runCLI(t, "--chdir", root, "show", run[1], "--json")
	require.Equal(t, 0, show.code, show.stderr)
	var page struct {
		Run struct {
			Notes []string `json:"notes"`
			Gone  []string `json:"gone"`
		} `json:"run"`
	}
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &page), show.stdout)
	assert.Equal(t, []string{"stage.a"}, page.Run.Gone)
	require.NotEmpty(t, page.Run.Notes)
	assert.Contains(t, page.Run.Notes[len(page.Run.Notes)-1], "collected by cairn gc")
}

// A run whose node's record a later run replaced (gc collected it and a
// later apply ran the key again, or apply --replace ran it again) shows
// none of that run's figures as its own: the node is gone, replaced by
// that run, on the page, in show --json and on the terminal.
func TestReportOfRunWhoseRecordALaterRunReplaced(t *testing.T) {
	for _, how := range []string{"gc", "replace"} {
		t.Run(how, func(t *testing.T) {
			// A table of a number each run draws, over the size a record
			// holds inline (gc collects the blob's record).
			root := cliWorkspace(t, map[string]string{
				"pipeline.hcl": "stage \"command\" \"t\" {\n  run     = [\"sh\", \"-c\", \"printf '| run | value |\\\\n| --- | ---: |\\\\n| this | %s |\\\\n' $(date +%s%N) > table.md; seq 1 500 >> table.md\"]\n  outputs = [\"table.md\"]\n}\n",
			})
			runID := regexp.MustCompile(`run (\d{8}T[0-9.]+Z-[0-9a-f]+)\]`)
			r := runCLI(t, "--chdir", root, "apply")
			require.Equal(t, 0, r.code, r.stderr)
			first := runID.FindStringSubmatch(r.stdout + r.stderr)
			require.NotNil(t, first, r.stdout+r.stderr)
			again := []string{"--chdir", root, "apply", "--replace", "stage.t"}
			if how == "gc" {
				r = runCLI(t, "--chdir", root, "gc", "--max-size", "0")
				require.Equal(t, 0, r.code, r.stderr)
				again = again[:3]
			}
			r = runCLI(t, again...)
			require.Equal(t, 0, r.code, r.stderr)
			second := runID.FindStringSubmatch(r.stdout + r.stderr)
			require.NotNil(t, second, r.stdout+r.stderr)
			table, err := os.ReadFile(filepath.Join(root, "table.md"))
			require.NoError(t, err)
			value := regexp.MustCompile(`\| this \| (\d+) \|`).FindSubmatch(table)
			require.NotNil(t, value, string(table))
			later := string(value[1])

			r = runCLI(t, "--chdir", root, "report", first[1], "--out", "first.html")
			require.Equal(t, 0, r.code, r.stderr)
			assert.Contains(t, r.stderr, "warning: run "+first[1]+": the cache's records of 1 node(s) that finished in this run were replaced since by records other runs made (stage.t by run "+second[1]+")")
			show := runCLI(t, "--chdir", root, "show", first[1], "--json")
			require.Equal(t, 0, show.code, show.stderr)
			var page struct {
				Run struct {
					Gone     []string          `json:"gone"`
					Replaced map[string]string `json:"replaced"`
				} `json:"run"`
				Artifacts []any `json:"artifacts"`
			}
			require.NoError(t, json.Unmarshal([]byte(show.stdout), &page), show.stdout)
			assert.Equal(t, []string{"stage.t"}, page.Run.Gone)
			assert.Equal(t, map[string]string{"stage.t": second[1]}, page.Run.Replaced)
			assert.Empty(t, page.Artifacts, "the later run's table is not this run's")
			assert.NotContains(t, show.stdout, "| "+later+" |")

			// The later run's report shows its own table.
			show = runCLI(t, "--chdir", root, "show", second[1], "--json")
			require.Equal(t, 0, show.code, show.stderr)
			assert.NotContains(t, show.stdout, `"gone"`)
			assert.Contains(t, show.stdout, `"`+later+`"`)
		})
	}
}

// A run that planned no node (its pipeline has none): show --json gives
// "nodes": [], as for any run, not null.
func TestRunThatPlannedNoNodeHasAnEmptyListOfNodes(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"pipeline.hcl": "pipeline \"e\" {}\n",
	})
	r := runCLI(t, "--chdir", root, "apply")
	require.Equal(t, 0, r.code, r.stderr)
	runs, err := os.ReadDir(filepath.Join(root, ".cairn", "runs"))
	require.NoError(t, err)
	var id string
	for _, e := range runs {
		if e.IsDir() {
			id = e.Name()
		}
	}
	require.NotEmpty(t, id, "the apply's run folder")
	show := runCLI(t, "--chdir", root, "show", id, "--json")
	require.Equal(t, 0, show.code, show.stderr)
	assert.Contains(t, show.stdout, `"nodes": []`)
}

// Neither report --out nor plan --out writes over a file the pipeline's
// stages read or write, or a var-file the run read; report does not
// replace a trace.tsv it did not write (one it wrote, it does). Each is
// refused with exit 2 naming the file, and the file is as it was.
func TestOutNeverWritesOverTheStagesFiles(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"pipeline.hcl": `variable "n" {
  default = 1
}
stage "command" "plot" {
  run     = ["sh", "-c", "mkdir -p data && sh mk.sh > data/small.txt"]
  inputs  = ["mk.sh"]
  outputs = ["data/small.txt"]
}
`,
		"mk.sh":          "echo hi\n",
		"my.vars":        "n = 2\n",
		"mine/trace.tsv": "data\n",
	})
	r := runCLI(t, "--chdir", root, "apply", "--var-file", "my.vars")
	require.Equal(t, 0, r.code, r.stderr)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"report", "--out", "mk.sh"}, "report: --out mk.sh is " + filepath.Join(root, "mk.sh") + ", a file run "},
		{[]string{"report", "--out", "data/small.txt"}, "report: --out data/small.txt is " + filepath.Join(root, "data/small.txt") + ", a file run "},
		{[]string{"report", "--out", "my.vars"}, "report: --out my.vars is " + filepath.Join(root, "my.vars")},
		{[]string{"report", "--out", "mine/rep.html"}, "report: mine/trace.tsv is there and is not a trace cairn wrote"},
		{[]string{"plan", "--out", "mk.sh"}, "plan: --out mk.sh is " + filepath.Join(root, "mk.sh") + ", a file the pipeline's stages read or write"},
		{[]string{"plan", "--out", "data/small.txt"}, "a file the pipeline's stages read or write"},
	} {
		r := runCLI(t, append([]string{"--chdir", root}, c.args...)...)
		assert.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.msg, c.args)
	}
	for name, want := range map[string]string{"mk.sh": "echo hi\n", "my.vars": "n = 2\n", "mine/trace.tsv": "data\n", "data/small.txt": "hi\n"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		assert.Equal(t, want, string(b), name)
	}
	assert.NoFileExists(t, filepath.Join(root, "mine", "rep.html"))

	// A trace cairn wrote is replaced.
	r = runCLI(t, "--chdir", root, "report", "--out", "page/rep.html")
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "--chdir", root, "report", "--out", "page/rep.html")
	require.Equal(t, 0, r.code, r.stderr)
}

// plan, graph and report --out share one protection: none writes over a
// var file an earlier run of the cache was given (the next run given it
// would read a page or a plan), nor graph over a stage's input or output.
// Each is refused with exit 2 naming the file, and the file is as it was.
func TestOutNeverWritesOverAnotherRunsFiles(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"pipeline.hcl": `variable "n" {
  default = 1
}
stage "command" "plot" {
  run     = ["sh", "-c", "mkdir -p data && sh mk.sh ${var.n} > data/small.txt"]
  inputs  = ["mk.sh"]
  outputs = ["data/small.txt"]
}
`,
		"mk.sh":    "echo hi $1\n",
		"one.vars": "n = 2\n",
		"two.vars": "n = 3\n",
	})
	for _, f := range []string{"one.vars", "two.vars"} {
		r := runCLI(t, "--chdir", root, "apply", "--var-file", f)
		require.Equal(t, 0, r.code, r.stderr)
	}
	const another = "a var file a run of this cache was given (--var-file)"
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"report", "--out", "one.vars"}, "report: --out one.vars is " + filepath.Join(root, "one.vars") + ", " + another},
		{[]string{"plan", "--out", "one.vars"}, "plan: --out one.vars is " + filepath.Join(root, "one.vars") + ", " + another},
		{[]string{"graph", "--out", "one.vars"}, "graph: --out one.vars is " + filepath.Join(root, "one.vars") + ", " + another},
		{[]string{"graph", "--out", "mk.sh"}, "graph: --out mk.sh is " + filepath.Join(root, "mk.sh") + ", a file the pipeline's stages read or write"},
		{[]string{"graph", "--out", "data/small.txt"}, "graph: --out data/small.txt is " + filepath.Join(root, "data/small.txt") + ", a file the pipeline's stages read or write"},
	} {
		r := runCLI(t, append([]string{"--chdir", root}, c.args...)...)
		assert.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.msg, c.args)
	}
	for name, want := range map[string]string{"mk.sh": "echo hi $1\n", "one.vars": "n = 2\n", "data/small.txt": "hi 3\n"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		assert.Equal(t, want, string(b), name)
	}
}

// show of a run id whose run folder is gone (gc removes old ones) says
// there is no such run in the cache's runs folder, why there may be none,
// and that the records the run made are still there where they are,
// rather than that the id is not a run id.
func TestShowOfRunWhoseFolderIsGone(t *testing.T) {
	root := cliWorkspace(t, map[string]string{
		"pipeline.hcl": "stage \"command\" \"a\" {\n  run     = [\"sh\", \"-c\", \"seq 1 500 > out.txt\"]\n  outputs = [\"out.txt\"]\n}\n",
	})
	runs := filepath.Join(root, ".cairn", "runs")
	const never = "20261208T015746.816Z-4923c6"
	r := runCLI(t, "--chdir", root, "show", never)
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "no run "+never+" in "+runs+": there is no cache at")

	r = runCLI(t, "--chdir", root, "apply")
	require.Equal(t, 0, r.code, r.stderr)
	run := regexp.MustCompile(`run (\d{8}T[0-9.]+Z-[0-9a-f]+)\]`).FindStringSubmatch(r.stdout + r.stderr)
	require.NotNil(t, run, r.stdout+r.stderr)
	// The run's folder gone, its record kept: the record names the run.
	require.NoError(t, os.RemoveAll(filepath.Join(runs, run[1])))
	r = runCLI(t, "--chdir", root, "show", run[1])
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "no run "+run[1]+" in "+runs+": cairn gc removes old run folders")
	assert.Contains(t, r.stderr, "the records it made are still in the cache (of stage.a: 'cairn show ADDRESS' shows them)")
	assert.Contains(t, r.stderr, "'cairn status' lists the runs")
	assert.NotContains(t, r.stderr, "not a run id")
	// cairn report of it says the same.
	rep := runCLI(t, "--chdir", root, "report", run[1])
	assert.Equal(t, exitBadInput, rep.code)
	assert.Equal(t, r.stderr, rep.stderr)

	// gc removes the record too: nothing names the run.
	r = runCLI(t, "--chdir", root, "gc", "--older-than", "0s")
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "--chdir", root, "show", run[1])
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "no run "+run[1]+" in "+runs+": cairn gc removes old run folders")
	assert.NotContains(t, r.stderr, "records it made")
	assert.Contains(t, r.stderr, "'cairn status' lists the runs")

	// An argument that is no run id is still said to be none.
	r = runCLI(t, "--chdir", root, "show", "20261208T015746.816Z-XYZ")
	assert.Equal(t, exitBadInput, r.code)
	assert.Contains(t, r.stderr, "not a run id, a key, or an address")
}
