package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan/plantest"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/process"
)

// memoPipeline depends on everything the up-to-date check must watch: a
// variable, a file read by file(), a path tested by fileexists(), a
// declared input, and an upstream result.
const memoPipeline = `pipeline "memo" {}

variable "x" {
  type    = string
  default = "1"
}

stage "command" "a" {
  run     = ["sh", "-c", "mkdir -p out && echo a-${var.x} > out/a"]
  outputs = ["out/a"]
}

stage "command" "msg" {
  run     = ["sh", "-c", "mkdir -p out && echo '${trimspace(file("msg.txt"))}' > out/msg"]
  outputs = ["out/msg"]
}

stage "command" "flag" {
  run     = ["sh", "-c", "mkdir -p out && echo ${fileexists("flag") ? "on" : "off"} > out/flag"]
  outputs = ["out/flag"]
}

stage "command" "data" {
  inputs  = ["data.txt"]
  run     = ["sh", "-c", "mkdir -p out && cp data.txt out/data"]
  outputs = ["out/data"]
}

stage "command" "rand" {
  run     = ["sh", "-c", "mkdir -p out && od -An -N8 -tx8 /dev/urandom | tr -d ' \\n' > out/rand && printf '{\"v\":\"%s\"}' $(cat out/rand) > out/rand.json"]
  outputs = ["out/rand"]
  result  = "out/rand.json"
}

stage "command" "use" {
  run     = ["sh", "-c", "mkdir -p out && echo ${stage.rand.result.v} > out/use"]
  outputs = ["out/use"]
}
`

// memoSpace is a workspace whose memo the test watches.
type memoSpace struct {
	t     *testing.T
	root  string
	cache string
	args  []string // given to every apply
}

func newMemoSpace(t *testing.T, cache string) *memoSpace {
	root := t.TempDir()
	for name, content := range map[string]string{"pipeline.hcl": memoPipeline, "msg.txt": "hello\n", "data.txt": "d1\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(content), 0o644))
	}
	if cache == "" {
		cache = filepath.Join(root, ".cairn")
	}
	return &memoSpace{t: t, root: root, cache: cache}
}

func (s *memoSpace) apply(args ...string) cliResult {
	s.t.Helper()
	all := append([]string{"--chdir", s.root, "--cache", s.cache, "apply"}, s.args...)
	r := runCLI(s.t, append(all, args...)...)
	require.Equal(s.t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	return r
}

func (s *memoSpace) read(rel string) string {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.root, rel))
	require.NoError(s.t, err)
	return string(b)
}

func (s *memoSpace) write(rel, content string) {
	s.t.Helper()
	require.NoError(s.t, os.WriteFile(filepath.Join(s.root, rel), []byte(content), 0o644))
}

// memos returns the memo files of the cache by name, with their inodes: a
// full apply replaces (or removes) its memo, the up-to-date check leaves
// it alone.
func (s *memoSpace) memos() map[string]uint64 {
	s.t.Helper()
	out := map[string]uint64{}
	ents, _ := os.ReadDir(filepath.Join(s.cache, "memo"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		fi, err := os.Stat(filepath.Join(s.cache, "memo", e.Name()))
		require.NoError(s.t, err)
		out[e.Name()] = fi.Sys().(*syscall.Stat_t).Ino
	}
	return out
}

// upToDate applies and reports whether the up-to-date check answered.
func (s *memoSpace) upToDate(args ...string) (cliResult, bool) {
	s.t.Helper()
	before := s.memos()
	r := s.apply(args...)
	after := s.memos()
	return r, len(before) > 0 && assert.ObjectsAreEqual(before, after)
}

// settle waits out the window in which a file's times cannot vouch for
// its content, then applies so that the memo is made.
func settle(t *testing.T, spaces ...*memoSpace) {
	time.Sleep(2100 * time.Millisecond)
	for _, s := range spaces {
		r := s.apply()
		require.Contains(t, r.stdout, "0 ran, 6 cached")
		require.NotEmpty(t, s.memos(), "a settled apply leaves a memo")
		_, fast := s.upToDate()
		require.True(t, fast, "nothing changed: the memo answers")
	}
}

var summaryTimes = regexp.MustCompile(`\[[^]]*\]`)

func TestUpToDateCheck(t *testing.T) {
	cliWorkspace(t, nil) // clears CAIRN_* for this test
	shared := filepath.Join(t.TempDir(), "shared-cache")
	sp := map[string]*memoSpace{}
	for _, name := range []string{"edit", "file", "exists", "input", "output", "deleted", "var", "gc", "damaged", "link"} {
		sp[name] = newMemoSpace(t, "")
	}
	sp["sharedA"], sp["sharedB"] = newMemoSpace(t, shared), newMemoSpace(t, shared)
	// A variable file, and a pipeline folder.
	sp["varfile"] = newMemoSpace(t, "")
	sp["varfile"].write("my.tfvars", "x = \"f1\"\n")
	sp["varfile"].args = []string{"--var-file", "my.tfvars"}
	sp["dir"] = newMemoSpace(t, "")
	require.NoError(t, os.Mkdir(filepath.Join(sp["dir"].root, "p"), 0o755))
	require.NoError(t, os.Rename(filepath.Join(sp["dir"].root, "pipeline.hcl"), filepath.Join(sp["dir"].root, "p", "main.hcl")))
	sp["dir"].args = []string{"p"}
	for _, name := range []string{"edit", "file", "exists", "input", "output", "deleted", "var", "gc", "damaged", "link", "sharedA", "sharedB", "varfile", "dir"} {
		r := sp[name].apply()
		require.Contains(t, r.stdout, "cached")
	}
	var all []*memoSpace
	for _, s := range sp {
		all = append(all, s)
	}
	settle(t, all...)

	t.Run("same output as a full apply and plan", func(t *testing.T) {
		s := sp["edit"]
		fast, ok := s.upToDate()
		require.True(t, ok)
		// The run is journaled as a line of the up-to-date log, not in a
		// folder of its own: status lists it, show tells it.
		folders := func() int {
			ents, err := os.ReadDir(filepath.Join(s.cache, "runs"))
			require.NoError(t, err)
			n := 0
			for _, e := range ents {
				if e.IsDir() {
					n++
				}
			}
			return n
		}
		before := folders()
		again, ok := s.upToDate()
		require.True(t, ok)
		assert.Equal(t, before, folders(), "an apply the up-to-date check answers makes no run folder")
		id := regexp.MustCompile(`run (\S+)\]`).FindStringSubmatch(again.stdout)
		require.Len(t, id, 2, again.stdout)
		st := runCLI(t, "--cache", s.cache, "status")
		assert.Regexp(t, regexp.QuoteMeta(id[1])+`\s+\S+ \S+\s+memo\s+ok\s+0\s+6\s+0\s+0\s+0`, st.stdout)
		show := runCLI(t, "--cache", s.cache, "show", id[1])
		require.Equal(t, 0, show.code, show.stderr)
		assert.Contains(t, show.stdout, "up to date, every node taken from the cache (6 nodes)")
		// --json: the report's header and counts, as for any run.
		js := runCLI(t, "--cache", s.cache, "show", id[1], "--json")
		require.Equal(t, 0, js.code, js.stderr)
		var rep struct {
			Run struct {
				ID, Pipeline, State string
				Counts              struct{ Cached, Ran int }
			}
			Nodes []any
		}
		require.NoError(t, json.Unmarshal([]byte(js.stdout), &rep), js.stdout)
		assert.Equal(t, id[1], rep.Run.ID)
		assert.Equal(t, "ok", rep.Run.State)
		assert.Equal(t, 6, rep.Run.Counts.Cached)
		assert.Zero(t, rep.Run.Counts.Ran)
		assert.NotNil(t, rep.Nodes)
		t.Setenv("CAIRN_NO_MEMO", "1")
		full := s.apply()
		assert.Equal(t, summaryTimes.ReplaceAllString(full.stdout, "[]"), summaryTimes.ReplaceAllString(fast.stdout, "[]"))
		fullPlan := runCLI(t, "--chdir", s.root, "--cache", s.cache, "plan")
		t.Setenv("CAIRN_NO_MEMO", "")
		fastPlan := runCLI(t, "--chdir", s.root, "--cache", s.cache, "plan")
		assert.Equal(t, fullPlan, fastPlan)
		assert.Contains(t, fastPlan.stdout, "Plan: 0 to run, 6 cached.")
	})

	check := func(name string, change func(t *testing.T, s *memoSpace), want func(t *testing.T, s *memoSpace, r cliResult)) {
		t.Run(name, func(t *testing.T) {
			s := sp[name]
			s.t = t
			change(t, s)
			r, fast := s.upToDate()
			assert.False(t, fast, "the change must send cairn down the full path:\n%s", r.stdout)
			want(t, s, r)
		})
	}
	check("edit", func(t *testing.T, s *memoSpace) {
		s.write("pipeline.hcl", strings.Replace(memoPipeline, "echo a-", "echo A-", 1))
	}, func(t *testing.T, s *memoSpace, r cliResult) {
		assert.Contains(t, r.stdout, "1 ran, 5 cached")
		assert.Equal(t, "A-1\n", s.read("out/a"))
	})
	check("file", func(t *testing.T, s *memoSpace) { s.write("msg.txt", "bye\n") }, func(t *testing.T, s *memoSpace, r cliResult) {
		assert.Contains(t, r.stdout, "1 ran, 5 cached")
		assert.Equal(t, "bye\n", s.read("out/msg"))
	})
	check("exists", func(t *testing.T, s *memoSpace) { s.write("flag", "") }, func(t *testing.T, s *memoSpace, r cliResult) {
		assert.Contains(t, r.stdout, "1 ran, 5 cached")
		assert.Equal(t, "on\n", s.read("out/flag"))
	})
	check("input", func(t *testing.T, s *memoSpace) { s.write("data.txt", "d2\n") }, func(t *testing.T, s *memoSpace, r cliResult) {
		assert.Contains(t, r.stdout, "1 ran, 5 cached")
		assert.Equal(t, "d2\n", s.read("out/data"))
	})
	check("output", func(t *testing.T, s *memoSpace) { s.write("out/a", "tampered\n") }, func(t *testing.T, s *memoSpace, r cliResult) {
		assert.Contains(t, r.stdout, "0 ran, 6 cached")
		assert.Equal(t, "a-1\n", s.read("out/a"), "restored from the cache")
	})
	check("deleted", func(t *testing.T, s *memoSpace) { require.NoError(t, os.Remove(filepath.Join(s.root, "out/use"))) }, func(t *testing.T, s *memoSpace, r cliResult) {
		assert.Contains(t, r.stdout, "0 ran, 6 cached")
		assert.Equal(t, strings.TrimSpace(s.read("out/rand"))+"\n", s.read("out/use"))
	})
	check("gc", func(t *testing.T, s *memoSpace) {
		r := runCLI(t, "--chdir", s.root, "--cache", s.cache, "gc")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Empty(t, s.memos(), "gc removes the memos: the index is a new file")
	}, func(t *testing.T, s *memoSpace, r cliResult) {
		assert.Contains(t, r.stdout, "0 ran, 6 cached")
	})
	check("damaged", func(t *testing.T, s *memoSpace) {
		for name := range s.memos() {
			p := filepath.Join(s.cache, "memo", name)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, b[:len(b)/2], 0o644))
		}
	}, func(t *testing.T, s *memoSpace, r cliResult) { assert.Contains(t, r.stdout, "0 ran, 6 cached") })
	check("link", func(t *testing.T, s *memoSpace) {
		// out/ becomes a link to a copy holding the same files.
		out := filepath.Join(s.root, "out")
		require.NoError(t, os.Rename(out, filepath.Join(s.root, "real")))
		require.NoError(t, os.Symlink("real", out))
	}, func(t *testing.T, s *memoSpace, r cliResult) { assert.Contains(t, r.stdout, "0 ran, 6 cached") })

	check("varfile", func(t *testing.T, s *memoSpace) { s.write("my.tfvars", "x = \"f2\"\n") }, func(t *testing.T, s *memoSpace, r cliResult) {
		assert.Contains(t, r.stdout, "1 ran, 5 cached")
		assert.Equal(t, "a-f2\n", s.read("out/a"))
	})
	check("dir", func(t *testing.T, s *memoSpace) {
		s.write("p/more.hcl", `stage "command" "more" {
  run     = ["sh", "-c", "echo more > out/more"]
  outputs = ["out/more"]
}
`)
	}, func(t *testing.T, s *memoSpace, r cliResult) {
		assert.Contains(t, r.stdout, "1 ran, 6 cached")
		assert.Equal(t, "more\n", s.read("out/more"))
	})

	t.Run("var", func(t *testing.T) {
		s := sp["var"]
		s.t = t
		r := s.apply("--var", "x=2")
		assert.Contains(t, r.stdout, "1 ran, 5 cached")
		assert.Equal(t, "a-2\n", s.read("out/a"))
		t.Setenv("CAIRN_VAR_x", "3")
		r = s.apply()
		assert.Contains(t, r.stdout, "1 ran, 5 cached")
		assert.Equal(t, "a-3\n", s.read("out/a"))
	})

	t.Run("record replaced by another workspace", func(t *testing.T) {
		a, b := sp["sharedA"], sp["sharedB"]
		a.t, b.t = t, t
		require.Equal(t, a.read("out/rand"), b.read("out/rand"), "one key, one record")
		r := b.apply("--replace", "stage.rand")
		require.Contains(t, r.stdout, "2 ran")
		require.NotEqual(t, a.read("out/rand"), b.read("out/rand"))
		r, fast := a.upToDate()
		assert.False(t, fast, "the index holds a new record for one of the memo's keys")
		assert.Contains(t, r.stdout, "0 ran, 6 cached", "both were run by the other workspace: taken from the cache")
		assert.Equal(t, b.read("out/rand"), a.read("out/rand"))
		assert.Equal(t, b.read("out/use"), a.read("out/use"))
	})
}

// apply -v says why the up-to-date check did not answer, and why a run
// leaves no memo: a full evaluation of an unchanged pipeline never goes
// without its reason (#34).
func TestApplyVerboseShowsWhyTheMemoIsNotUsed(t *testing.T) {
	cliWorkspace(t, nil)
	s := newMemoSpace(t, "")
	r := s.apply("-v")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "up-to-date check: not used: no memo of this pipeline")
	// Files written just now cannot be vouched for by their times: the
	// next apply evaluates the pipeline again, and says so.
	assert.Regexp(t, `up-to-date check: this run leaves no memo: (output )?\S+ (was written|changed) moments (ago|before it was read)`, r.stderr)
	// The next apply -v says what the last one said, not a guess.
	r = s.apply("-v")
	assert.Regexp(t, `up-to-date check: not used: the last apply of this pipeline with these variables, workspace, cache and CAIRN_ environment left no memo: (output )?\S+ (was written|changed) moments (ago|before it was read)\n`, r.stderr)
	assert.NotContains(t, r.stderr, "every node done and settled")

	settle(t, s)
	r = s.apply("-v")
	assert.Contains(t, r.stderr, "up-to-date check: not used: the memo holds, but -v lists every node")
	assert.NotContains(t, r.stderr, "leaves no memo")

	s.write("msg.txt", "bye\n")
	r = s.apply("-v")
	assert.Regexp(t, `up-to-date check: not used: \S*msg.txt changed\n`, r.stderr)

	r = s.apply("-v", "--replace", "stage.a")
	assert.Contains(t, r.stderr, "up-to-date check: not used: a saved plan, --target, --replace")

	t.Setenv("CAIRN_NO_MEMO", "1")
	r = s.apply("-v")
	assert.Contains(t, r.stderr, "up-to-date check: not used: off (CAIRN_NO_MEMO=1")

	t.Setenv("CAIRN_NO_MEMO", "")
	r = s.apply()
	assert.NotContains(t, r.stderr, "up-to-date check", "without -v nothing is said")
}

// answered counts the applies the up-to-date check answered (the lines of
// the up-to-date log).
func (s *memoSpace) answered() int {
	b, _ := os.ReadFile(filepath.Join(s.cache, "runs", "up-to-date.log"))
	return strings.Count(string(b), "\n")
}

// A cold apply, then no-op applies in a row: the up-to-date check answers
// every one of them, from the first on. The outputs the run wrote moments
// before it made its memo are read once and compared with their digests,
// until their times can vouch for them. An apply -v evaluates in full, says
// why, and leaves the memo for the next apply (#34).
func TestUpToDateFromTheFirstNoOp(t *testing.T) {
	cliWorkspace(t, nil)
	s := newMemoSpace(t, "")
	// The pipeline file itself (not its folder, whose listing changes as
	// the run makes its cache and outputs), once the files it reads are
	// older than the window in which their times cannot vouch for them.
	s.args = []string{"pipeline.hcl"}
	plantest.WaitSettled(t, filepath.Join(s.root, "pipeline.hcl"), filepath.Join(s.root, "msg.txt"), filepath.Join(s.root, "data.txt"))
	r := s.apply("-v")
	require.Contains(t, r.stdout, "6 ran")
	assert.NotContains(t, r.stderr, "leaves no memo", "outputs written moments ago are kept with their digests")
	for i := range 5 {
		r := s.apply()
		assert.Contains(t, r.stdout, "0 ran, 6 cached")
		assert.Equal(t, i+1, s.answered(), "no-op apply %d was answered by the up-to-date check", i+1)
	}
	r = s.apply("-v")
	assert.Contains(t, r.stderr, "up-to-date check: not used: the memo holds, but -v lists every node")
	assert.NotContains(t, r.stderr, "leaves no memo")
	require.NoError(t, os.RemoveAll(filepath.Join(s.cache, "memo")))
	r = s.apply("-v")
	assert.Contains(t, r.stderr, "up-to-date check: not used: no memo of this pipeline")
	assert.NotContains(t, r.stderr, "leaves no memo")
	s.apply()
	assert.Equal(t, 6, s.answered(), "the memo apply -v left answers the next apply")

	// The workspace folder as the pipeline: the run makes its cache and
	// output folders in it, which leaves the pipeline files it lists as
	// they were; the memo lists it again until its times can vouch for it.
	d := newMemoSpace(t, "")
	plantest.WaitSettled(t, filepath.Join(d.root, "pipeline.hcl"), filepath.Join(d.root, "msg.txt"), filepath.Join(d.root, "data.txt"))
	r = d.apply("-v")
	require.Contains(t, r.stdout, "6 ran")
	assert.NotContains(t, r.stderr, "leaves no memo", "the folder the run changed is kept with its listing")
	for i := range 3 {
		d.apply()
		assert.Equal(t, i+1, d.answered(), "no-op apply %d of the folder was answered by the up-to-date check", i+1)
	}
}

// answeredSpace is a memo space of its pipeline file (in a workspace with
// cairn's environment cleared) whose no-op apply the up-to-date check has
// answered once: applied with -v, which leaves the memo, then again.
func answeredSpace(t *testing.T) *memoSpace {
	t.Helper()
	cliWorkspace(t, nil)
	s := newMemoSpace(t, "")
	s.args = []string{"pipeline.hcl"}
	plantest.WaitSettled(t, filepath.Join(s.root, "pipeline.hcl"), filepath.Join(s.root, "msg.txt"), filepath.Join(s.root, "data.txt"))
	require.Contains(t, s.apply("-v").stdout, "6 ran")
	s.apply()
	require.Equal(t, 1, s.answered(), "the memo answers a plain apply")
	return s
}

// A dead run that left jobs on a cluster executor (a Slurm array) is for
// the full path, whose executor re-attaches to them: the up-to-date
// check leaves such an apply alone instead of failing on an executor it
// does not have (it panicked). Until an apply on that executor takes the
// jobs over, each apply takes the full path and says so again: the run is
// not marked reaped by an apply that could not reap it.
func TestUpToDateLeavesClusterJobsToTheFullPath(t *testing.T) {
	s := answeredSpace(t)

	id := runlog.NewRunID()
	j, err := runlog.Open(s.cache, id, true)
	require.NoError(t, err)
	require.NoError(t, j.Write(runlog.Entry{T: runlog.RunStart, RunID: id, Pipeline: "memo", PID: 1}))
	require.NoError(t, j.Write(runlog.Entry{T: runlog.Started, Node: "stage.x", Key: "k", Job: &process.JobRef{Executor: "slurm", ID: "4242"}}))
	require.NoError(t, j.Close()) // no run_end: as if killed

	r := s.apply()
	assert.Equal(t, 1, s.answered(), "the full path took it")
	assert.Contains(t, r.stdout, "0 ran, 6 cached")
	assert.NotContains(t, r.stderr, "panic")
	assert.Contains(t, r.stdout+r.stderr, `cannot end the jobs of executor "slurm" left by interrupted run `+id+` (stage.x)`)
	r = s.apply()
	assert.Equal(t, 1, s.answered(), "the jobs are not taken over: the full path again")
	assert.Contains(t, r.stdout+r.stderr, `cannot end the jobs of executor "slurm" left by interrupted run `+id)
}

// The up-to-date check answers only what the full path would: apply's and
// plan's flags are checked before it (a bad one is exit 2 whatever the
// cache holds), and --report, which needs a run folder, takes the full
// path and writes the report.
func TestUpToDateKeepsTheFlagsChecks(t *testing.T) {
	s := answeredSpace(t)

	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"apply", "--executor", "bogus"}, "--executor bogus: there is no such executor; use local or slurm"},
		{[]string{"apply", "--only"}, "--only without --target"},
		{[]string{"plan", "--only"}, "--only without --target"},
		{[]string{"apply", "--parallelism", "0"}, "--parallelism 0: give 1 or more"},
		{[]string{"apply", "--parallelism", "-7"}, "--parallelism -7: give 1 or more"},
		{[]string{"apply", "--wait-gpus", "-1h"}, "--wait-gpus -1h0m0s: a time to wait cannot be negative"},
		{[]string{"apply", "--wait-batch", "-1s"}, "--wait-batch -1s"},
		{[]string{"apply", "--lock-timeout", "-1s"}, "--lock-timeout -1s"},
	} {
		args := append([]string{"--chdir", s.root, "--cache", s.cache}, c.args...)
		r := runCLI(t, append(args, "pipeline.hcl")...)
		assert.Equal(t, 2, r.code, "%v: %s%s", c.args, r.stdout, r.stderr)
		assert.Contains(t, r.stderr, c.says, "%v", c.args)
		assert.NotContains(t, r.stdout, "Apply complete", "%v", c.args)
	}
	assert.Equal(t, 1, s.answered(), "a refused command line is not answered by the check")

	r := s.apply("--report")
	assert.Contains(t, r.stdout, "0 ran, 6 cached")
	line := regexp.MustCompile(`(?m)^Report: (.+)$`).FindStringSubmatch(r.stdout)
	require.Len(t, line, 2, "apply --report names its report:\n%s", r.stdout)
	assert.FileExists(t, line[1])
	assert.FileExists(t, filepath.Join(filepath.Dir(line[1]), "trace.tsv"))
	assert.Equal(t, 1, s.answered(), "--report takes the full path")
}

// linkedPipeline reads its inputs through symlinks: fl, a link to a file,
// and dl, a link to a folder. A variable other than 1 has the file stage
// point fl at g (which holds what f holds) while it runs.
const linkedPipeline = `pipeline "linked" {}

variable "n" {
  type    = string
  default = "1"
}

stage "command" "file" {
  run     = ["sh", "-c", "cat fl > file.txt && { [ ${var.n} = 1 ] || ln -sfn g fl; }"]
  inputs  = ["fl"]
  outputs = ["file.txt"]
}

stage "command" "dir" {
  run     = ["sh", "-c", "cat dl/* > dir.txt"]
  inputs  = ["dl"]
  outputs = ["dir.txt"]
}
`

// An input that is itself a symlink is followed by its key, and so by the
// up-to-date check: an unchanged one is vouched for (the check used to
// say it changed, every time), and the check notices where it leads as
// well as what it leads to: a link pointed elsewhere, even at the same
// content (which could be outside the workspace, which the full path
// refuses), or its target edited, sends cairn down the full path. A link
// pointed elsewhere while the run read it leaves no memo.
func TestUpToDateFollowsALinkedInput(t *testing.T) {
	cliWorkspace(t, nil)
	outside := filepath.Join(t.TempDir(), "x")
	require.NoError(t, os.WriteFile(outside, []byte("x\n"), 0o644))
	cases := []struct {
		name   string
		change func(s *memoSpace)
		says   string // what apply -v then says of the check
		ran    string
	}{
		{"unchanged", func(s *memoSpace) {}, "", ""},
		{"file link pointed at the same content", func(s *memoSpace) { s.link("g", "fl") }, "input fl changed", "0 ran, 2 cached"},
		{"file link's target edited", func(s *memoSpace) { s.write("f", "y\n") }, "input fl changed", "1 ran, 1 cached"},
		{"folder link pointed at the same content", func(s *memoSpace) { s.link("d2", "dl") }, "input dl changed", "0 ran, 2 cached"},
		{"folder link's target edited", func(s *memoSpace) { s.write("d1/a", "b\n") }, "input dl changed", "1 ran, 1 cached"},
		{"file link pointed out of the workspace", func(s *memoSpace) { s.link(outside, "fl") }, "input fl changed", ""},
	}
	spaces := make([]*memoSpace, len(cases))
	var settled []string
	for i := range cases {
		root := t.TempDir()
		s := &memoSpace{t: t, root: root, cache: filepath.Join(root, ".cairn"), args: []string{"pipeline.hcl"}}
		require.NoError(t, os.Mkdir(filepath.Join(root, "d1"), 0o755))
		require.NoError(t, os.Mkdir(filepath.Join(root, "d2"), 0o755))
		for name, content := range map[string]string{"pipeline.hcl": linkedPipeline, "f": "x\n", "g": "x\n", "d1/a": "a\n", "d2/a": "a\n"} {
			s.write(name, content)
			settled = append(settled, filepath.Join(root, name))
		}
		s.link("f", "fl")
		s.link("d1", "dl")
		spaces[i] = s
	}
	plantest.WaitSettled(t, settled...)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := spaces[i]
			s.t = t
			r := s.apply("-v")
			require.Contains(t, r.stdout, "2 ran")
			require.NotContains(t, r.stderr, "leaves no memo")
			s.apply()
			require.Equal(t, 1, s.answered(), "nothing changed: the memo answers")
			c.change(s)
			if c.says == "" {
				s.apply()
				assert.Equal(t, 2, s.answered(), "nothing changed: the memo answers")
				return
			}
			r = runCLI(t, "--chdir", s.root, "--cache", s.cache, "apply", "-v", "pipeline.hcl")
			assert.Contains(t, r.stderr, "up-to-date check: not used: "+c.says+"\n")
			if c.ran == "" {
				assert.Equal(t, 2, r.code, "the full path refuses the link: %s", r.stderr)
				assert.Contains(t, r.stderr, "resolves through a symlink to "+outside)
				return
			}
			assert.Contains(t, r.stdout, c.ran)
			s.apply()
			assert.Equal(t, 2, s.answered(), "the memo of the full path answers")
		})
	}

	t.Run("file link pointed elsewhere during the run", func(t *testing.T) {
		s := spaces[0]
		s.t = t
		r := s.apply("-v", "--var", "n=2")
		require.Contains(t, r.stdout, "1 ran, 1 cached")
		assert.Contains(t, r.stderr, "up-to-date check: this run leaves no memo: input fl changed during the run\n")
	})
}

// link makes rel a symlink to target, replacing what is there.
func (s *memoSpace) link(target, rel string) {
	s.t.Helper()
	full := filepath.Join(s.root, rel)
	require.NoError(s.t, os.RemoveAll(full))
	require.NoError(s.t, os.Symlink(target, full))
}
