package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Array is nodes submitted as one Slurm job array: task i runs Jobs[i]'s
// wrapper, writes Jobs[i]'s log files and exit file, and is job BASE_i.
type Array struct {
	Jobs []*Job
	// Comment is the array's --comment: it names the submission, so that
	// an sbatch whose answer was lost, or an array a killed cairn
	// submitted, is found again by it.
	Comment string
	// Dir holds the array's batch script and, per task, the links to its
	// node's log files that Slurm writes through (--output DIR/%a.out).
	Dir    string
	script string
	env    []string
}

// arrayComment is the --comment of an array of tasks of stage.
func arrayComment(stage string, tasks int, token string) string {
	return fmt.Sprintf("cairn array %s tasks %d sub %s", stage, tasks, token)
}

// envName says whether bash can set a variable of that name.
func envName(k string) bool {
	if k == "" || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for _, r := range k {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// prelude is what a task running in env must run to have the environment
// want: unset what want lacks, export what it has otherwise. ok is false
// where a variable that differs has a name bash cannot set.
func prelude(env, want []string, gpus int) (string, bool) {
	have := map[string]string{}
	for _, kv := range jobEnv(env, gpus) {
		k, v, _ := strings.Cut(kv, "=")
		have[k] = v
	}
	mine := map[string]string{}
	var b strings.Builder
	for _, kv := range jobEnv(want, gpus) {
		k, v, _ := strings.Cut(kv, "=")
		mine[k] = v
		if old, ok := have[k]; ok && old == v {
			continue
		}
		if !envName(k) {
			return "", false
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, quote(v))
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range have {
			if !yield(k) {
				return
			}
		}
	}) {
		if _, ok := mine[k]; ok {
			continue
		}
		if !envName(k) {
			return "", false
		}
		fmt.Fprintf(&b, "unset %s\n", k)
	}
	return b.String(), true
}

// NewArray prepares jobs, which share their resources and folder, as one
// job array of stage: each task's wrapper (setting its node's own
// environment first), the links to it and to its logs, and the array's
// batch script, which runs the wrapper of task SLURM_ARRAY_TASK_ID through
// its link: a few lines whatever the tasks, as Slurm copies the batch
// script for each task it starts. ok is false (and nothing is written)
// where a task's environment cannot be set from the array's.
func NewArray(stage string, jobs []*Job) (*Array, bool, error) {
	first := jobs[0]
	token := newToken()
	a := &Array{Jobs: jobs, Comment: arrayComment(stage, len(jobs), token),
		Dir: filepath.Join(filepath.Dir(first.Script), "array-"+token), env: first.Env}
	a.script = filepath.Join(a.Dir, "array.sbatch")
	preludes := make([]string, len(jobs))
	for i, j := range jobs {
		p, ok := prelude(first.Env, j.Env, first.GPUs)
		if !ok {
			return nil, false, nil
		}
		preludes[i] = p
	}
	if err := os.MkdirAll(a.Dir, 0o777); err != nil {
		return nil, true, err
	}
	// The folder is new: the links are made without a look first. The
	// files are written side by side, as a loaded shared filesystem
	// answers each one late.
	errs := make([]error, len(jobs))
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(len(jobs), 16) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(jobs); i = int(next.Add(1) - 1) {
				j := jobs[i]
				j.prelude = preludes[i]
				if err := writeScript(j); err != nil {
					errs[i] = fmt.Errorf("writing the batch script of %s: %w", j.Node, err)
					continue
				}
				n := strconv.Itoa(i)
				for _, l := range [][2]string{{j.Script, n + ".sh"}, {j.Stdout, n + ".out"}, {j.Stderr, n + ".err"}} {
					if err := os.Symlink(l[0], filepath.Join(a.Dir, l[1])); err != nil {
						errs[i] = err
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, true, err
	}
	script := fmt.Sprintf(`#!/bin/bash
# cairn's job array of %s: task N runs its node's batch script, linked as
# N.sh here.
task="${SLURM_ARRAY_TASK_ID:-?}"
case "$task" in
*[!0-9]*|"") ;;
*) [ -e %s/"$task".sh ] && exec /bin/bash %s/"$task".sh ;;
esac
echo "cairn: no node for array task $task" >&2
exit 1
`, stage, quote(a.Dir), quote(a.Dir))
	if err := os.WriteFile(a.script, []byte(script), 0o755); err != nil {
		return nil, true, err
	}
	return a, true, nil
}

// SubmitArray submits a with one sbatch (--array=0-N) and follows its
// tasks; it returns each task's reference, Refs[i] for a.Jobs[i]. The
// caller took a slot per task (takeSlot): each is its task's until Wait
// has seen it end; they are the caller's to free when it fails. The
// tasks share the first job's resources and folder, and each runs in the
// environment of the first job's, made its own by its wrapper.
func (c *Client) SubmitArray(ctx context.Context, a *Array) ([]Ref, error) {
	first := a.Jobs[0]
	if len(a.Jobs) > c.maxArray {
		return nil, fmt.Errorf("slurm: an array of %d tasks, more than the cluster's MaxArraySize of %d", len(a.Jobs), c.maxArray)
	}
	args := c.sbatchArgsAs(first, a.Comment, filepath.Join(a.Dir, "%a.out"), filepath.Join(a.Dir, "%a.err"), a.script,
		"0-"+strconv.Itoa(len(a.Jobs)-1))
	what := fmt.Sprintf("a job array of %d tasks (%s, ...)", len(a.Jobs), first.Node)
	base, err := c.sbatch(ctx, what, args, jobEnv(a.env, first.GPUs), a.Comment)
	if err != nil {
		return nil, err
	}
	refs := make([]Ref, len(a.Jobs))
	for i, j := range a.Jobs {
		refs[i] = Ref{JobID: base + "_" + strconv.Itoa(i), Run: c.run, ExitFile: j.ExitFile}
		c.follow(refs[i], true)
	}
	return refs, nil
}
