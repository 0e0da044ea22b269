package docs

import (
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// environReaders are the files outside cmd/ (and outside tests) that may
// read cairn's environment (os.Getenv, os.LookupEnv, os.Environ), each
// with its reason. cairn's own settings (CAIRN_NO_FSYNC, CAIRN_CACHE,
// NO_COLOR, the profiles) are read by the command line and passed down
// as options; what is read below it is the environment a process
// inherits or hands on, a device's visibility, or a test's switch.
var environReaders = map[string]string{
	"process/env.go":                               "a process cairn starts for a node inherits cairn's environment (os.Environ), where its caller gives none: the one place a child's environment is built",
	"stages/evaluatekind.go":                       "the endpoints are named by environment variables the pipeline gives (TASK_ENDPOINTS), read when the node runs",
	"stages/serve.go":                              "a serve stage of servers someone else runs publishes the endpoints environment variables name (TASK_ENDPOINTS, VLLM_BASE_URL), read when the node runs",
	"stages/optimize.go":                           "the task and reflection endpoints are named by environment variables the pipeline gives, read when the node runs",
	"engine/plan/node.go":                          "the check that a command fits ARG_MAX counts the environment the command will inherit",
	"engine/executor/local.go":                     "a program named without a folder is looked up on the PATH the node inherits where its own env sets none",
	"engine/executor/slurm/slurm.go":               "the Slurm client commands (sbatch, squeue, ...) run with the cluster's SLURM_CONF and PATH",
	"engine/executor/slurm/executor.go":            "a SLURM_CONF that names no file is refused at once, before every Slurm command retries reading it",
	"engine/executor/slurm/slurmtest/slurmtest.go": "the tests on a local Slurm cluster: whether one runs (CAIRN_SLURM_TEST, CAIRN_REQUIRE_SLURM, CAIRN_SLURM_DIR)",
	"runreport/browsertest/browser.go":             "the tests of the report page in a browser: which Chromium (CAIRN_CHROMIUM), and whether one is required (CAIRN_REQUIRE_BROWSER)",
	"engine/failpoint/on.go":                       "the crash tests' crash points (CAIRN_TEST_*), compiled in only with the build tag cairn_failpoints",
	"gpu/inventory.go":                             "which GPUs a process sees (CAIRN_GPUS, CUDA_VISIBLE_DEVICES), where the caller passes no lookup",
	"gpu/lease.go":                                 "the machine-wide lease folder (CAIRN_LEASE_DIR), where the caller passes no lookup",
	"sim/simlib/main.go":                           "a simulated workload is a program a node runs: it reads its environment as a real one does",
	"sim/work/train/main.go":                       "a simulated workload is a program a node runs: it reads its environment as a real one does",
	"e2e/e2etest/e2etest.go":                       "the tests that drive cairn's binaries run them in this process's environment less what would steer them from outside (e2etest.Env)",
	"bench/evalpace/main.go":                       "the benchmark's worker and method are programs a node runs: they read the environment cairn gives them (CAIRN_MAX_IN_FLIGHT, CAIRN_ROLLOUT_SOCKET, ...) as a user's would",
}

var environRead = regexp.MustCompile(`\bos\.(Getenv|LookupEnv|Environ)\b`)

// childEnvVar is a variable cairn tells a node's process, set by hand.
var childEnvVar = regexp.MustCompile(`"CAIRN_(RUN_ID|NODE|NODE_KEY|OUT_DIR|ATTEMPT|WORKSPACE)=`)

// goSources are the module's Go files, tests left out (git ls-files).
func goSources(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "*.go")
	cmd.Dir = ".."
	out, err := cmd.Output()
	require.NoError(t, err)
	var files []string
	for f := range strings.Lines(string(out)) {
		if f = strings.TrimSpace(f); !strings.HasSuffix(f, "_test.go") {
			files = append(files, f)
		}
	}
	require.NotEmpty(t, files)
	return files
}

// Below cmd/, only the files of environReaders read the environment, and
// each still does (the list is kept exact); CAIRN_NO_FSYNC is read in one
// place, cmd/cairn/settings.go, and reaches the packages as an option; a
// child's environment is built in one place, process.Env.List.
func TestEnvironmentIsReadWhereListed(t *testing.T) {
	readers := map[string]bool{}
	for _, f := range goSources(t) {
		b, err := os.ReadFile("../" + f)
		require.NoError(t, err)
		for line := range strings.Lines(string(b)) {
			code, _, _ := strings.Cut(line, "//")
			if strings.Contains(code, "CAIRN_NO_FSYNC") && f != "cmd/cairn/settings.go" {
				t.Errorf("%s reads CAIRN_NO_FSYNC: only cmd/cairn/settings.go reads it; pass it down as an option (engine.ApplyOptions.NoSync, stages.Runtime.NoSync)", f)
			}
			if childEnvVar.MatchString(code) && f != "process/env.go" {
				t.Errorf("%s builds a child's environment (%s): process.Env.List builds every one", f, childEnvVar.FindString(code))
			}
			if environRead.MatchString(code) && !strings.HasPrefix(f, "cmd/") {
				readers[f] = true
			}
		}
	}
	var unlisted []string
	for f := range readers {
		if _, ok := environReaders[f]; !ok {
			unlisted = append(unlisted, f)
		}
	}
	sort.Strings(unlisted)
	for _, f := range unlisted {
		t.Errorf("%s reads the environment (os.Getenv, os.LookupEnv or os.Environ): read settings in cmd/ and pass them down as options, or add the file with its reason to environReaders", f)
	}
	for f := range environReaders {
		assert.True(t, readers[f], "%s is in environReaders but reads no environment: take it off the list", f)
	}
}
