package process

import (
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Env is the environment of a process cairn starts for a node (a node's
// command, an evaluation's or an optimization's workers): what it
// inherits, what cairn tells it of its node, the GPUs it may see, the
// stage's env and the kind's own variables. List puts it together; every
// process cairn starts for a node gets its environment from it.
type Env struct {
	// Inherit is the environment the process inherits; nil: cairn's own
	// (os.Environ).
	Inherit []string
	// What cairn tells the process, each only where set: CAIRN_RUN_ID,
	// CAIRN_NODE, CAIRN_NODE_KEY, CAIRN_OUT_DIR, CAIRN_ATTEMPT (where
	// more than 0) and CAIRN_WORKSPACE.
	RunID, Node, Key, OutDir string
	Attempt                  int
	Workspace                string
	// GPUs are the variables that show the process the GPUs it leased
	// (gpu.Pool.ChildEnv). NoGPUs: it sees none (CUDA_VISIBLE_DEVICES
	// empty).
	GPUs   []string
	NoGPUs bool
	// Stage is the stage's env attribute; Set the kind's own variables.
	Stage, Set map[string]string
}

// List is the environment in os/exec's NAME=value form: Inherit, then
// CAIRN_RUN_ID, CAIRN_NODE, CAIRN_NODE_KEY, CAIRN_OUT_DIR, CAIRN_ATTEMPT,
// CAIRN_WORKSPACE, the GPU variables, Stage's and then Set's variables by
// name. A variable set later replaces one of the same name set earlier,
// as a process sees it: each name is in the list once, in the place of
// its last setting.
func (e Env) List() []string {
	inherit := e.Inherit
	if inherit == nil {
		inherit = os.Environ()
	}
	env := make([]string, 0, len(inherit)+8+len(e.GPUs)+len(e.Stage)+len(e.Set))
	env = append(env, inherit...)
	add := func(name, value string) {
		if value != "" {
			env = append(env, name+"="+value)
		}
	}
	add("CAIRN_RUN_ID", e.RunID)
	add("CAIRN_NODE", e.Node)
	add("CAIRN_NODE_KEY", e.Key)
	add("CAIRN_OUT_DIR", e.OutDir)
	if e.Attempt > 0 {
		add("CAIRN_ATTEMPT", strconv.Itoa(e.Attempt))
	}
	add("CAIRN_WORKSPACE", e.Workspace)
	env = append(env, e.GPUs...)
	if e.NoGPUs {
		env = append(env, "CUDA_VISIBLE_DEVICES=")
	}
	for _, vars := range []map[string]string{e.Stage, e.Set} {
		for _, k := range slices.Sorted(maps.Keys(vars)) {
			env = append(env, k+"="+vars[k])
		}
	}
	return lastWins(env)
}

// lastWins keeps, of each name of env, its last setting, in its place.
func lastWins(env []string) []string {
	seen := make(map[string]bool, len(env))
	keep := make([]bool, len(env))
	n := 0
	for i := len(env) - 1; i >= 0; i-- {
		name, _, _ := strings.Cut(env[i], "=")
		if !seen[name] {
			seen[name] = true
			keep[i] = true
			n++
		}
	}
	if n == len(env) {
		return env
	}
	out := make([]string, 0, n)
	for i, kv := range env {
		if keep[i] {
			out = append(out, kv)
		}
	}
	return out
}
