package pipelines_test

import (
	"encoding/json"
	"fmt"
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

	"github.com/cairn-run/cairn/engine/plan"
)

// The experiment grid (pipelines/grids/experiment.json) is only planned
// here: its methods, data and task models are the user's, not in this
// repository. validate and plan must take it as it is, run nothing, and
// plan one node of each per-job stage for every method × cell × seed.

const experimentGrid = "pipelines/grids/experiment.json"

type gridFile struct {
	Models  map[string]string `json:"models"`
	Seeds   []int             `json:"seeds"`
	Methods map[string]struct {
		Command []string `json:"command"`
		Code    []string `json:"code"`
		Cells   []string `json:"cells"`
	} `json:"methods"`
}

func readExperimentGrid(t *testing.T) gridFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", experimentGrid))
	require.NoError(t, err)
	var g gridFile
	require.NoError(t, json.Unmarshal(b, &g))
	return g
}

// experimentGridJobs are the keys the grid's jobs should have:
// METHOD/DATASET/RUNTIME/MODEL/SEED.
func experimentGridJobs(g gridFile) []string {
	var keys []string
	for m, spec := range g.Methods {
		for _, c := range spec.Cells {
			for _, s := range g.Seeds {
				keys = append(keys, fmt.Sprintf("%s/%s/%d", m, c, s))
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// gridWorkspace is a folder with the pipeline and the experiment grid,
// and a cache of its own.
func gridWorkspace(t *testing.T) (dir, cache string) {
	t.Helper()
	if bins == "" {
		t.Skip("end to end (cairn is built by TestMain)")
	}
	dir = t.TempDir()
	for _, f := range []string{"pipelines/optimizer_grid.hcl", experimentGrid} {
		b, err := os.ReadFile(filepath.Join("..", f))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	copyTree(t, "../testdata/optimizer", filepath.Join(dir, "testdata/optimizer"))
	copyTree(t, "../testdata/workers", filepath.Join(dir, "testdata/workers"))
	return dir, filepath.Join(t.TempDir(), "cache")
}

func gridCairn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(bins, "cairn"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "cairn %s:\n%s%s", strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.String()
}

func gridPlan(t *testing.T, dir, cache string, vars ...string) plan.JSON {
	t.Helper()
	args := append([]string{"plan", "pipelines/optimizer_grid.hcl", "--cache", cache, "--json", "--var", "grid=" + experimentGrid}, vars...)
	out := gridCairn(t, dir, args...)
	var p plan.JSON
	require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &p))
	return p
}

var jobAddress = regexp.MustCompile(`^stage\.([a-z_]+)\["([^"]+)"\]$`)

// byJob groups a plan's node addresses by job key, each job's stages
// sorted; the aggregate node, keyed "grid", is left out.
func byJob(t *testing.T, p plan.JSON) (map[string][]string, []string) {
	t.Helper()
	jobs := map[string][]string{}
	var addrs []string
	for _, n := range p.Nodes {
		if n.Kind == "serve" {
			continue // the model servers, shared by the jobs
		}
		addrs = append(addrs, n.Address)
		m := jobAddress.FindStringSubmatch(n.Address)
		require.NotNil(t, m, "node address %s", n.Address)
		if m[2] == "grid" {
			continue
		}
		jobs[m[2]] = append(jobs[m[2]], m[1])
	}
	for _, st := range jobs {
		sort.Strings(st)
	}
	return jobs, addrs
}

func TestOptimizerExperimentGridPlans(t *testing.T) {
	g := readExperimentGrid(t)
	assert.Equal(t, []int{0, 1, 2}, g.Seeds, "the seeds of a reported cell (the pipeline's default seeds)")
	want := experimentGridJobs(g)
	require.NotEmpty(t, want)
	for m, spec := range g.Methods {
		assert.NotEmpty(t, spec.Command, m)
		assert.NotEmpty(t, spec.Code, m)
		for _, c := range spec.Cells {
			parts := strings.Split(c, "/")
			if assert.Len(t, parts, 3, "%s: cell %s is DATASET/RUNTIME/MODEL", m, c) {
				assert.Contains(t, g.Models, parts[2], "%s: cell %s's model", m, c)
			}
		}
	}

	dir, cache := gridWorkspace(t)
	p := gridPlan(t, dir, cache)
	jobs, addrs := byJob(t, p)
	assert.Equal(t, want, slices.Sorted(maps.Keys(jobs)), "one job per method, cell and seed")
	stages := jobs[want[0]]
	require.NotEmpty(t, stages)
	for k, st := range jobs {
		assert.Equal(t, stages, st, "job %s has a node of every per-job stage", k)
	}
	servers := 0
	for _, n := range p.Nodes {
		if n.Kind == "serve" {
			servers++
		}
	}
	assert.Equal(t, 1+len(g.Models), servers, "the reflection model's server and one per task model")
	total := len(want)*len(stages) + 1 + servers // and the aggregate
	assert.Len(t, p.Nodes, total)
	assert.Equal(t, total, p.ToRun+p.MayRun, "every node to run, none cached or skipped")
	seen := map[string]bool{}
	for _, a := range addrs {
		assert.False(t, seen[a], "node address %s is unique", a)
		seen[a] = true
	}

	out := gridCairn(t, dir, "validate", "pipelines/optimizer_grid.hcl", "--var", "grid="+experimentGrid)
	assert.Contains(t, out, " "+strconv.Itoa(total)+" nodes")
	_, err := os.Stat(filepath.Join(dir, "runs"))
	assert.True(t, os.IsNotExist(err), "validate and plan write no job folder")
}

// One job picked with the seed's flags (--var method= ... seed=) plans that
// job's nodes and no other: a cell with a refined runtime (its team size
// or communication format), from the grid file.
func TestOptimizerExperimentGridOneJob(t *testing.T) {
	g := readExperimentGrid(t)
	var key string
	var vars []string
	for _, k := range experimentGridJobs(g) {
		parts := strings.Split(k, "/") // METHOD DATASET RUNTIME MODEL SEED
		rt := strings.Split(parts[2], "+")
		if !strings.Contains(parts[2], "+team") || parts[4] != "2" {
			continue
		}
		key = k
		vars = []string{"method=" + parts[0], "dataset=" + parts[1], "topology=" + rt[0], "model=" + parts[3], "seed=" + parts[4]}
		for _, r := range rt[1:] {
			if n, ok := strings.CutPrefix(r, "team"); ok {
				vars = append(vars, "team_size="+n)
			} else {
				vars = append(vars, "communication="+r)
			}
		}
		break
	}
	require.NotEmpty(t, key, "the grid has a cell with a team-size or communication runtime")

	dir, cache := gridWorkspace(t)
	all, _ := byJob(t, gridPlan(t, dir, cache))
	require.Contains(t, all, key)
	var args []string
	for _, v := range vars {
		args = append(args, "--var", v)
	}
	p := gridPlan(t, dir, cache, args...)
	var got, want []string
	for _, n := range p.Nodes {
		got = append(got, n.Address)
	}
	for _, st := range all[key] {
		want = append(want, fmt.Sprintf("stage.%s[%q]", st, key))
	}
	// And the servers of its models: the reflection model's and its task
	// model's only.
	want = append(want, "stage.reflection_model", fmt.Sprintf("stage.task_model[%q]", strings.Split(key, "/")[3]))
	sort.Strings(got)
	sort.Strings(want)
	assert.Equal(t, want, got, "%v plans job %s's nodes and no other", vars, key)
	gridCairn(t, dir, append([]string{"validate", "pipelines/optimizer_grid.hcl", "--var", "grid=" + experimentGrid}, args...)...)
}

// A grid file with a mistake in what the pipeline reads of it is refused
// (exit 2) by the grid variable's validations: one error, naming the grid
// file and the field, not the pipeline's expressions that read it.
func TestOptimizerGridMistakesAreNamedByFileAndField(t *testing.T) {
	dir, _ := gridWorkspace(t)
	var g map[string]any
	b, err := os.ReadFile(filepath.Join(dir, experimentGrid))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &g))
	methods := g["methods"].(map[string]any)
	gepa := methods["gepa"].(map[string]any)
	cells := gepa["cells"].([]any)
	edited := func(name string, edit func(g map[string]any)) string {
		c := map[string]any{}
		for k, v := range g {
			c[k] = v
		}
		edit(c)
		out, err := json.Marshal(c)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), out, 0o644))
		return name
	}
	withGepa := func(k string, v any) func(g map[string]any) {
		return func(g map[string]any) {
			m := map[string]any{}
			for n, s := range methods {
				m[n] = s
			}
			e := map[string]any{}
			for n, s := range gepa {
				e[n] = s
			}
			e[k] = v
			m["gepa"] = e
			g["methods"] = m
		}
	}
	for _, c := range []struct{ file, want string }{
		{edited("nomethods.json", func(g map[string]any) { delete(g, "methods") }), `nomethods.json must hold a "methods" object`},
		{edited("nomodels.json", func(g map[string]any) { g["models"] = map[string]any{} }), `nomodels.json must hold a "methods" object (each method's command, code and cells) and a "models" object, not empty`},
		{edited("command.json", withGepa("command", "python x.py")), `command.json: methods.gepa.command must be a list of strings`},
		{edited("cell.json", withGepa("cells", append([]any{"sums"}, cells[1:]...))), `cell.json: methods.gepa.cells[0] is "sums", not DATASET/RUNTIME/MODEL`},
		{edited("model.json", withGepa("cells", []any{"hotpotqa/single/mistral"})), `model.json: methods.gepa.cells[0] is "hotpotqa/single/mistral", whose model "mistral" is not in models`},
		{edited("cells.json", withGepa("cells", "hotpotqa/single/qwen")), `cells.json: methods.gepa.cells is not a list of cells`},
	} {
		cmd := exec.Command(filepath.Join(bins, "cairn"), "validate", "pipelines/optimizer_grid.hcl", "--var", "grid="+c.file)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, c.file)
		assert.Equal(t, 2, ee.ExitCode(), c.file)
		flat := strings.Join(strings.Fields(string(out)), " ")
		assert.Contains(t, flat, c.want, c.file)
		assert.Equal(t, 1, strings.Count(flat, "Error: Invalid value for variable \"grid\""), "%s: %s", c.file, flat)
		assert.Contains(t, flat, "1 error(s) in the pipeline", c.file)
	}
}
