package docs

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/cairn-run/cairn/"

// moduleImports lists each package of the module (module-relative) with the
// module's packages it imports outside its tests.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").Output()
	require.NoError(t, err)
	imports := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		imports[pkg] = []string{}
		for _, imp := range f[1:] {
			if dep, ours := strings.CutPrefix(imp, module); ours {
				imports[pkg] = append(imports[pkg], dep)
			}
		}
	}
	require.NotEmpty(t, imports)
	return imports
}

// A part is one of cairn's parts: the packages its patterns match (a
// pattern as in importRule), its rank, and why it sits there. A package
// imports only packages of its own part or of parts of a lower rank: two
// parts of one rank know nothing of each other.
type part struct {
	Name string
	Rank int
	Pkgs []string
	Why  string
}

// parts is the intended shape of cairn, bottom up (docs/architecture.md
// draws it). Every package of the module is in exactly one part.
var parts = []part{
	{"primitives", 0, []string{"dsl/addrs", "dsl/failclass", "dsl/gcpace", "dsl/jsonwrite", "dsl/par", "storage/...", "engine/nofollow", "engine/sysproc", "engine/failpoint", "process", "events", "stats", "syncbuf"},
		"names, classes, JSON text, files, locks, logs, processes, the typed events an apply tells, statistics, and a buffer tests read while it is written, that know nothing of pipelines, runs or devices: every part may use them"},
	{"language", 1, []string{"dsl"}, "pipeline files to configuration: it knows nothing of running or graphs"},
	{"devices", 1, []string{"gpu"}, "the GPUs: they know no pipelines, stage kinds or runs"},
	{"cache", 1, []string{"engine/cas", "engine/fsdigest", "engine/store"}, "keys, records, blobs and digests: it knows no pipelines and no runs"},
	{"journal", 1, []string{"engine/runlog"}, "what a run did, record by record: it knows no cache, no plan and no executor"},
	{"executors", 2, []string{"engine/executor/..."}, "run a spec on a machine or a cluster: no graph, no journal, no stage kind"},
	{"stage kinds", 2, []string{"stages/..."}, "what a node of each kind checks and does, through the Runtime it is given: no scheduler, planner or executor"},
	{"simulations", 2, []string{"sim/..."}, "stand-ins for the programs and models cairn runs, for tests and demos: they know cairn only as those programs do (files, environment, GPU memory reports)"},
	{"planner", 3, []string{"engine/plan/..."}, "configuration to graph, keys and plan, with the stage kinds' checks and the cache's index"},
	{"engine", 4, []string{"engine", "engine/memo"}, "apply: the schedule and the applier's loop over the plan, the executors, the cache and the journal"},
	{"edge", 5, []string{"cmd/...", "ui", "runreport/..."}, "what people run and read: the command line drives the engine and hands it its sinks (ui: the terminal, --json, the event log); the run report reads the journal, the events and the cache"},
	{"tools", 5, []string{"bench/...", "scripts/...", "e2e/e2etest"}, "the build's own programs (benchmark generator, test summary) and what the tests that run cairn's binaries share"},
}

// partOf returns the part whose patterns match pkg, and how many parts do.
func partOf(pkg string) (part, int) {
	var found part
	n := 0
	for _, p := range parts {
		if matchesAny(p.Pkgs, pkg) {
			found = p
			n++
		}
	}
	return found, n
}

// partArrows returns one line per package of imports (package to the
// packages it imports) that is in no part or in several, and per import
// that goes to another part of the same or a higher rank.
func partArrows(imports map[string][]string) []string {
	var bad []string
	for pkg, deps := range imports {
		from, n := partOf(pkg)
		if n != 1 {
			bad = append(bad, fmt.Sprintf("%s is in %d parts of arrows_test.go: it belongs in one", pkg, n))
			continue
		}
		for _, dep := range deps {
			to, n := partOf(dep)
			if n != 1 || to.Name == from.Name || to.Rank < from.Rank {
				continue
			}
			bad = append(bad, fmt.Sprintf("%s (%s, rank %d) imports %s (%s, rank %d): a part imports only parts of lower ranks (%s: %s)",
				pkg, from.Name, from.Rank, dep, to.Name, to.Rank, to.Name, to.Why))
		}
	}
	sort.Strings(bad)
	return bad
}

// Every package of the module is in one part, the one architecture.md's
// table names for it, and imports (outside its tests) only packages of its
// part or of lower-ranked parts.
func TestPackageArrows(t *testing.T) {
	doc := readDoc(t, "architecture.md")
	named := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9/_-]+)` \\| ([a-z ]+) \\|").FindAllStringSubmatch(doc, -1) {
		named[m[1]] = m[2]
	}
	require.NotEmpty(t, named)

	testOnly := regexp.MustCompile("Packages with tests only \\(([^)]*)\\)")
	m := testOnly.FindStringSubmatch(strings.ReplaceAll(doc, "\n", " "))
	require.NotNil(t, m, "the page names the packages with tests only")
	imports := moduleImports(t)
	shipped := map[string][]string{}
	for pkg, deps := range imports {
		if _, ok := named[pkg]; !ok {
			assert.Contains(t, m[1], "`"+pkg+"`", "%s is not in the table of docs/architecture.md", pkg)
			continue
		}
		shipped[pkg] = deps
		if p, n := partOf(pkg); n == 1 {
			assert.Equal(t, p.Name, named[pkg], "architecture.md puts %s in the part %q, arrows_test.go in %q", pkg, named[pkg], p.Name)
		}
	}
	for _, line := range partArrows(shipped) {
		t.Error(line)
	}
	for pkg := range named {
		_, listed := imports[pkg]
		assert.True(t, listed, "architecture.md lists %s, which is no package of the module", pkg)
	}
}

// The check of parts fails on an import to a part of the same or a higher
// rank, naming the import and the parts, and on a package in no part.
func TestPartArrowsNameTheImport(t *testing.T) {
	bad := partArrows(map[string][]string{
		"stages":        {"process", "engine/executor"},
		"engine/runlog": {"storage/wal", "engine/store"},
		"engine":        {"stages", "engine/memo"},
		"nowhere":       {},
	})
	require.Len(t, bad, 3, strings.Join(bad, "\n"))
	assert.Equal(t, "engine/runlog (journal, rank 1) imports engine/store (cache, rank 1): a part imports only parts of lower ranks (cache: keys, records, blobs and digests: it knows no pipelines and no runs)", bad[0])
	assert.Contains(t, bad[1], "nowhere is in 0 parts")
	assert.Contains(t, bad[2], "stages (stage kinds, rank 2) imports engine/executor (executors, rank 2)")
}

// architecture.md's table of parts gives each part of arrows_test.go with
// its rank, in order.
func TestPartsAreDocumented(t *testing.T) {
	sec := section(readDoc(t, "architecture.md"), "## The parts")
	rows := regexp.MustCompile("(?m)^\\| ([a-z ]+) \\| ([0-9]+) \\|").FindAllStringSubmatch(sec, -1)
	require.Len(t, rows, len(parts), "one row a part")
	for i, p := range parts {
		assert.Equal(t, p.Name, rows[i][1])
		assert.Equal(t, strconv.Itoa(p.Rank), rows[i][2], "the rank of %s", p.Name)
	}
}

// An importRule forbids the packages From to import the packages To.
// A pattern is a package (`engine`), a folder and every package below it
// (`engine/...` matches engine and engine/plan), or every package (`...`).
type importRule struct {
	From, To []string
	Why      string
}

// forbidden are the imports that must never exist, finer than the parts:
// the intended shape of cairn (docs/architecture.md).
var forbidden = []importRule{
	{
		From: []string{"dsl/..."},
		To:   []string{"engine/...", "gpu/...", "stages/...", "process/..."},
		Why:  "the language knows nothing of running or graphs: it parses, decodes and evaluates pipeline files; the functions the stage kinds add come from the loader's caller",
	},
	{
		From: []string{"gpu/..."},
		To:   []string{"dsl/...", "engine/plan/...", "stages/..."},
		Why:  "devices know no pipelines or stage kinds",
	},
	{
		From: []string{"stages/..."},
		To:   []string{"engine/...", "cmd/..."},
		Why:  "stage kinds never reach into the scheduler, the planner, an executor or the command line: they get a Runtime, and the storage primitives they share with the cache are under storage/",
	},
	{
		From: []string{"storage/..."},
		To:   []string{"engine/...", "dsl/...", "stages/..."},
		Why:  "the storage primitives (whole-file writes, byte-range locks, the record log) know nothing of what they store",
	},
	{
		From: []string{"engine/store/...", "engine/cas/..."},
		To:   []string{"dsl/...", "engine/plan/...", "stages/...", "engine/runlog/..."},
		Why:  "the cache knows no pipelines and no runs: it stores keys, records and blobs (engine.GC removes the old runs beside it)",
	},
	{
		From: []string{"engine/executor/..."},
		To:   []string{"engine", "engine/plan/...", "engine/runlog/...", "stages/..."},
		Why:  "an executor runs a spec, not a graph: it knows no plan, no journal and no stage kind (process holds what it shares with them)",
	},
	{
		From: []string{"engine/memo/..."},
		To:   []string{"engine", "engine/runlog/...", "engine/executor/...", "stages/..."},
		Why:  "the up-to-date memo is a file format and a check over files and the cache's index: it knows no apply loop, no run journal, no executor and no stage kind (engine.BuildMemo hands it each node's result)",
	},
	{
		From: []string{"stats/..."},
		To:   []string{"..."},
		Why:  "the statistics know nothing of files, jobs or stage kinds: they take numbers and give intervals, p-values and corrections",
	},
	{
		From: []string{"engine/...", "stages/...", "dsl/...", "gpu/...", "storage/...", "process/..."},
		To:   []string{"runreport/..."},
		Why:  "the run report reads what a run leaves (its journal, the cache's records); nothing that runs a pipeline writes or knows the page",
	},
	{
		From: []string{"engine/...", "stages/...", "events/..."},
		To:   []string{"ui/..."},
		Why:  "the engine and the stage kinds do not import the terminal consumers: they emit typed events to a sink, and the terminal display, --json and the run's event log are sinks at the edge that the command line wires up",
	},
	{
		From: []string{"..."},
		To:   []string{"cmd/..."},
		Why:  "the engine is a library the command line drives; nothing imports a command",
	},
}

// matches reports whether pkg is pattern, or below it for "X/...".
func matches(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == dir || strings.HasPrefix(pkg, dir+"/")
	}
	return pkg == pattern
}

func matchesAny(patterns []string, pkg string) bool {
	for _, p := range patterns {
		if matches(p, pkg) {
			return true
		}
	}
	return false
}

// forbiddenImports returns one line per import of imports (package to the
// packages it imports) that a rule forbids, naming the import and the rule.
func forbiddenImports(imports map[string][]string, rules []importRule) []string {
	var bad []string
	for pkg, deps := range imports {
		for _, dep := range deps {
			for _, r := range rules {
				if matchesAny(r.From, pkg) && matchesAny(r.To, dep) {
					bad = append(bad, fmt.Sprintf("%s imports %s: %s must not import %s, because %s",
						pkg, dep, strings.Join(r.From, ", "), strings.Join(r.To, ", "), r.Why))
				}
			}
		}
	}
	return bad
}

// No package imports what a rule of forbidden rules out.
func TestForbiddenImports(t *testing.T) {
	for _, line := range forbiddenImports(moduleImports(t), forbidden) {
		t.Error(line)
	}
}

// The check of forbidden imports fails on one, naming the import and the
// rule, and passes what no rule forbids.
func TestForbiddenImportsNamesImportAndRule(t *testing.T) {
	bad := forbiddenImports(map[string][]string{
		"dsl":             {"dsl/addrs", "stages/decision"},
		"engine/executor": {"process", "gpu"},
		"cmd/cairn":       {"engine", "cmd/cairn-sim-model"},
		"engine":          {"cmd/cairn"},
	}, forbidden)
	require.Len(t, bad, 3, strings.Join(bad, "\n"))
	joined := strings.Join(bad, "\n")
	assert.Contains(t, joined, "dsl imports stages/decision: dsl/... must not import engine/..., gpu/..., stages/..., process/..., because the language knows nothing of running or graphs")
	assert.Contains(t, joined, "engine imports cmd/cairn: ... must not import cmd/..., because the engine is a library the command line drives")
	assert.Contains(t, joined, "cmd/cairn imports cmd/cairn-sim-model: ... must not import cmd/...")
	assert.Empty(t, forbiddenImports(map[string][]string{"engine/executor": {"process", "gpu", "dsl/failclass"}}, forbidden))
}

// architecture.md lists one item a rule of forbidden, naming the packages
// the rule forbids.
func TestForbiddenImportsAreDocumented(t *testing.T) {
	sec := section(readDoc(t, "architecture.md"), "## Imports that must never exist")
	require.NotEmpty(t, sec)
	items := regexp.MustCompile(`(?m)^- `).FindAllStringIndex(sec, -1)
	require.Len(t, items, len(forbidden), "one item a rule")
	for i, r := range forbidden {
		end := len(sec)
		if i+1 < len(items) {
			end = items[i+1][0]
		}
		item := sec[items[i][0]:end]
		for _, p := range append(append([]string{}, r.From...), r.To...) {
			if p == "..." {
				continue
			}
			assert.True(t, strings.Contains(item, "`"+p+"`") || strings.Contains(item, "`"+strings.TrimSuffix(p, "/...")+"`"),
				"the item %q does not name %s", strings.TrimSpace(item), p)
		}
	}
}

// Every file architecture.md names by its path exists.
func TestArchitectureNamesFilesThatExist(t *testing.T) {
	doc := readDoc(t, "architecture.md")
	named := regexp.MustCompile("`((?:[a-z0-9_-]+/)+[A-Za-z0-9_.-]+\\.(?:go|md))`").FindAllStringSubmatch(doc, -1)
	require.NotEmpty(t, named)
	for _, m := range named {
		assert.FileExists(t, filepath.Join("..", m[1]), "architecture.md names %s", m[1])
	}
}

// printsOK are the production files outside cmd/ that may print: programs
// of their own, with why.
var printsOK = map[string]string{
	"sim/simlib/main.go":            "the simulated programs' main (simlib.Main): a program, which prints as the program it simulates does",
	"engine/sysproc/guard_linux.go": "a guarded command's start and its guard (cairn run again in a hidden mode): programs of their own, whose standard error is the command's log",
}

var printRe = regexp.MustCompile(`\bos\.Stdout\b|\bos\.Stderr\b|\bfmt\.Print(f|ln)?\(`)

// printers returns file:line: text for each line of the files (path to
// content) that writes to standard output or standard error, outside
// cmd/, tests, testdata, main packages and printsOK.
func printers(files map[string]string) []string {
	var bad []string
	for _, path := range slices.Sorted(maps.Keys(files)) {
		src := files[path]
		if strings.HasPrefix(path, "cmd/") || strings.HasSuffix(path, "_test.go") || strings.Contains("/"+path, "/testdata/") || printsOK[path] != "" {
			continue
		}
		if regexp.MustCompile(`(?m)^package main$`).MatchString(src) {
			continue
		}
		for i, line := range strings.Split(src, "\n") {
			code, _, _ := strings.Cut(line, "//")
			if printRe.MatchString(code) {
				bad = append(bad, fmt.Sprintf("%s:%d: %s", path, i+1, strings.TrimSpace(line)))
			}
		}
	}
	return bad
}

// goFiles reads every .go file of the module, by module-relative path.
func goFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || otherModule(p, "..")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// No package below the command line writes to standard output or
// standard error: the engine, the stage kinds and the executors emit
// events, and the sinks at the edge print (architecture.md).
func TestNothingPrintsBelowTheCommandLine(t *testing.T) {
	for _, line := range printers(goFiles(t)) {
		t.Errorf("%s: only the command line prints; emit an event (package events) instead", line)
	}
}

// The check names the file and line of a print below the command line,
// and passes the command line, tests, main packages and comments.
func TestNothingPrintsCheckNamesFileAndLine(t *testing.T) {
	bad := printers(map[string]string{
		"engine/x.go":          "package engine\n\nfunc f() {\n\tfmt.Fprintf(os.Stderr, \"x\")\n}\n",
		"stages/y.go":          "package stages\n\n// fmt.Println in a comment\nfunc g() { fmt.Println(1) }\n",
		"cmd/cairn/z.go":       "package main\n\nfunc h() { fmt.Println(1) }\n",
		"engine/x_test.go":     "package engine\n\nfunc i() { fmt.Println(1) }\n",
		"bench/gen/main.go":    "package main\n\nfunc j() { fmt.Println(1) }\n",
		"engine/w.go":          "package engine\n\nfunc k() { fmt.Sprintf(\"\") }\n",
		"stages/testdata/a.go": "package a\n\nfunc l() { fmt.Print(1) }\n",
	})
	assert.Equal(t, []string{
		`engine/x.go:4: fmt.Fprintf(os.Stderr, "x")`,
		`stages/y.go:4: func g() { fmt.Println(1) }`,
	}, bad)
}
