package engine

import (
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
)

// planFixture is a pipeline and the edits a user makes between applies.
type planFixture struct {
	name     string
	variants []string            // pipeline texts
	vars     [][]string          // --var settings to choose from
	files    map[string][]string // workspace files and their contents ("" deletes)
}

// cutoffPipeline: norm writes the same file for words in any order, so
// the readers of its output, which plan says may run, stay cached.
const cutoffPipeline = `
pipeline "cutoff" {}

variable "words" {
  type    = list(string)
  default = ["b", "a"]
}

stage "command" "norm" {
  run     = ["sh", "-c", "printf '%s\\n' ${join(" ", var.words)} | sort -u > norm.txt"]
  outputs = ["norm.txt"]
}

stage "command" "count" {
  run     = ["sh", "-c", "wc -l < norm.txt > count.txt"]
  inputs  = ["norm.txt"]
  outputs = ["count.txt"]
}

stage "command" "both" {
  run     = ["sh", "-c", "cat cfg.txt count.txt > both.txt"]
  inputs  = ["cfg.txt", "count.txt"]
  outputs = ["both.txt"]
}
`

func planFixtures() []planFixture {
	return []planFixture{
		{
			name: "tour",
			variants: []string{
				tourPipeline,
				strings.Replace(tourPipeline, "wc -l > total.txt", "wc -c > total.txt", 1),
				tourPipeline[:strings.Index(tourPipeline, `stage "command" "all"`)],
			},
			vars: [][]string{nil, {"sizes={small=10, large=2000}"}, {"sizes={small=3, large=1000}"}, {"sizes={small=10, large=1000, mid=5}"}},
			files: map[string][]string{
				"data/extra.txt": {"", "x\n", "y\n"},
				"data/large.txt": {"edited by hand\n", ""},
			},
		},
		{
			name: "post",
			variants: []string{
				postPipeline,
				strings.Replace(postPipeline, `{\"v\": 1}`, `{\"v\": 2}`, 1),
				strings.Replace(postPipeline, "echo used", "echo USED", 1),
			},
			vars:  [][]string{nil, {"want=2"}, {"want=1"}},
			files: map[string][]string{"use.txt": {"", "edited\n"}},
		},
		{
			name:     "gated",
			variants: []string{gated, strings.Replace(gated, "echo ${each.key} >", "echo job ${each.key} >", 1)},
			vars:     [][]string{nil, {`vals={a="1", b="2"}`}, {`vals={a="1", b="bad"}`}, {`vals={a="bad", b="1"}`}},
			files:    map[string][]string{"out/a.txt": {"", "edited\n"}},
		},
		{
			name:     "cutoff",
			variants: []string{cutoffPipeline, strings.Replace(cutoffPipeline, "cat cfg.txt count.txt", "cat count.txt cfg.txt", 1)},
			vars:     [][]string{nil, {`words=["a", "b"]`}, {`words=["a", "b", "a"]`}, {`words=["c"]`}},
			files:    map[string][]string{"cfg.txt": {"1\n", "2\n", ""}},
		},
	}
}

// fixtureState is one moment of a workspace's history.
type fixtureState struct {
	variant int
	vars    int
	files   map[string]int
}

func (s fixtureState) String() string {
	var fs []string
	for _, k := range slices.Sorted(maps.Keys(s.files)) {
		fs = append(fs, fmt.Sprintf("%s=%d", k, s.files[k]))
	}
	return fmt.Sprintf("pipeline %d, vars %d, files [%s]", s.variant, s.vars, strings.Join(fs, " "))
}

// TestPlanSaysWhatApplyDoes edits fixtures at random (variables, input
// files, the pipeline, reverts to an earlier state) and checks after each
// edit that apply runs every node plan says runs, and no node plan does
// not list as run or may run; that what plan says is cached is cached and
// what it says is skipped is skipped (a node below one that runs and fails
// is skipped whatever plan said). CAIRN_PLAN_ROUNDS sets the edits per
// fixture (default 10), CAIRN_PLAN_SEED the seed.
func TestPlanSaysWhatApplyDoes(t *testing.T) {
	rounds, seed := 10, int64(1)
	if v, err := strconv.Atoi(os.Getenv("CAIRN_PLAN_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	if v, err := strconv.ParseInt(os.Getenv("CAIRN_PLAN_SEED"), 10, 64); err == nil {
		seed = v
	}
	seen := map[string]int{}
	for i, fx := range planFixtures() {
		t.Run(fx.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed + int64(i)))
			w := newWorkspace(t, fx.variants[0])
			state := fixtureState{files: map[string]int{}}
			history := []fixtureState{}
			for round := 0; round < rounds; round++ {
				history = append(history, state)
				next := fixtureState{variant: state.variant, vars: state.vars, files: map[string]int{}}
				for k, v := range state.files {
					next.files[k] = v
				}
				edit := ""
				switch rng.Intn(4) {
				case 0:
					next.variant = rng.Intn(len(fx.variants))
					edit = "pipeline"
				case 1:
					next.vars = rng.Intn(len(fx.vars))
					edit = "variables"
				case 2:
					names := slices.Sorted(maps.Keys(fx.files))
					f := names[rng.Intn(len(names))]
					next.files[f] = rng.Intn(len(fx.files[f]))
					edit = "file " + f
				case 3:
					next = history[rng.Intn(len(history))]
					edit = "revert"
				}
				state = next
				w.setState(fx, state)
				vars := fx.vars[state.vars]
				p := w.Plan(plan.Options{}, vars...)
				r := w.apply(ApplyOptions{}, vars...)
				what := fmt.Sprintf("seed %d, round %d, after editing the %s (%s)\n%s", seed, round, edit, state, r.out)
				checkPlanMatchesApply(t, p, r, what, seen)
			}
		})
	}
	t.Logf("plan actions checked: %v", seen)
}

// setState writes a fixture state into the workspace.
func (w *workspace) setState(fx planFixture, s fixtureState) {
	w.Write("pipeline.hcl", fx.variants[s.variant])
	for f, i := range s.files {
		content := fx.files[f][i]
		if content == "" {
			require.NoError(w.T, os.RemoveAll(filepath.Join(w.Root, f)))
			continue
		}
		w.Write(f, content)
	}
}

func checkPlanMatchesApply(t *testing.T, p *plan.Plan, r applyRun, what string, seen map[string]int) {
	t.Helper()
	ran := map[string]bool{}
	for _, a := range ranSet(r) {
		ran[a] = true
	}
	// A node below one that runs is skipped when that one fails, which no
	// plan can know: follow a skip to the node that failed.
	byAddr := map[string]*nodeState{}
	for _, ns := range r.res.nodes {
		byAddr[ns.n.Addr] = ns
	}
	failedRunning := func(ns *nodeState) bool {
		for ns != nil && ns.status == plan.Skipped && ns.class == plan.FailUpstream {
			up := strings.TrimPrefix(ns.message, "upstream ")
			up = up[:strings.LastIndexByte(up, ' ')]
			ns = byAddr[up]
		}
		return ns != nil && ns.status == plan.Failed && ran[ns.n.Addr]
	}
	var bad []string
	for _, pn := range p.Nodes {
		ns := r.res.nodes[pn.Node.ID]
		addr := pn.Node.Addr
		if pn.Action != plan.ActSkip && ns.status == plan.Skipped && failedRunning(ns) {
			seen["skipped below a failure"]++
			continue
		}
		switch pn.Action {
		case plan.ActRun:
			if !ran[addr] {
				bad = append(bad, fmt.Sprintf("plan: %s runs (%s); apply: %s", addr, strings.Join(pn.Reasons, "; "), ns.status))
			}
		case plan.ActMayRun:
			seen[plan.ActMayRun+" then "+map[bool]string{true: "ran", false: "not"}[ran[addr]]]++
		case plan.ActCached:
			if ns.status != plan.Cached && !(ns.status == plan.Failed && ns.record != nil && ns.res == nil) {
				bad = append(bad, fmt.Sprintf("plan: %s cached; apply: %s %s", addr, ns.status, ns.message))
			}
		case plan.ActSkip:
			if ns.status != plan.Skipped {
				bad = append(bad, fmt.Sprintf("plan: %s skipped (%s); apply: %s", addr, strings.Join(pn.Reasons, "; "), ns.status))
			}
		}
		if pn.Action != plan.ActRun && pn.Action != plan.ActMayRun && ran[addr] {
			bad = append(bad, fmt.Sprintf("plan: %s %s; apply ran it", addr, pn.Action))
		}
		seen[pn.Action]++
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Fatalf("plan and apply disagree, %s:\n  %s", what, strings.Join(bad, "\n  "))
	}
}
