package slurm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/engine/executor"
	"github.com/cairn-run/cairn/process"
)

func TestJobIDsOfPendingArrays(t *testing.T) {
	for in, want := range map[string][]string{
		"1234":             {"1234"},
		"1234_7":           {"1234_7"},
		"1234_[0-3]":       {"1234_0", "1234_1", "1234_2", "1234_3"},
		"1234_[1,4-5,9]":   {"1234_1", "1234_4", "1234_5", "1234_9"},
		"1234_[5-6%2]":     {"1234_5", "1234_6"},
		"1234_[x]":         {"1234_[x]"},
		"1234_[3-1]":       {"1234_[3-1]"},
		"1234+0":           {"1234+0"},
		"1234_[0-4000002]": {"1234_[0-4000002]"},
	} {
		assert.Equal(t, want, jobIDs(in), in)
	}
}

// instance is instance i of stage.x: it prints its NODE_ID and exits with
// its CODE.
func (f *fake) instance(i, code int) *executor.Spec {
	n := strconv.Itoa(i)
	return &executor.Spec{
		Node: `stage.x["` + n + `"]`, RunID: "run-1", Key: "k" + n, Attempt: 1,
		Argv: []string{"sh", "-c", `printf '%s' "$NODE_ID"; exit "$CODE"`}, Env: append(os.Environ(), "NODE_ID=node"+n, "CODE="+strconv.Itoa(code)),
		Dir: f.dir, Stdout: filepath.Join(f.dir, n+".out"), Stderr: filepath.Join(f.dir, n+".err"),
	}
}

// submitAll submits specs at once, as the engine's workers do with a
// stage's ready instances.
func submitAll(t *testing.T, e *Executor, specs []*executor.Spec) []executor.Job {
	t.Helper()
	jobs := make([]executor.Job, len(specs))
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, err := e.Submit(context.Background(), s)
			assert.NoError(t, err)
			jobs[i] = j
		}()
	}
	wg.Wait()
	return jobs
}

// runTask runs task of the array sbatch call n submitted, as Slurm does:
// its batch script in sbatch's environment with SLURM_ARRAY_TASK_ID set,
// its output and error to --output and --error with %a the task.
func (f *fake) runTask(n int, task string) {
	var args []string
	for i, line := range strings.Split(strings.TrimSpace(f.read("sbatch.log")), "\n") {
		if i == n-1 {
			args = strings.Fields(line)
		}
	}
	require.NotEmpty(f.t, args, "sbatch call %d", n)
	var out, errPath string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--output="); ok {
			out = strings.ReplaceAll(v, "%a", task)
		}
		if v, ok := strings.CutPrefix(a, "--error="); ok {
			errPath = strings.ReplaceAll(v, "%a", task)
		}
	}
	var env []string
	for _, kv := range strings.Split(f.read("sbatch.env."+strconv.Itoa(n)), "\n") {
		if strings.Contains(kv, "=") {
			env = append(env, kv)
		}
	}
	stdout, err := os.Create(out)
	require.NoError(f.t, err)
	defer stdout.Close()
	stderr, err := os.Create(errPath)
	require.NoError(f.t, err)
	defer stderr.Close()
	cmd := exec.Command("bash", args[len(args)-1])
	cmd.Env = append(env, "SLURM_ARRAY_TASK_ID="+task, "SLURM_JOB_ID=5"+task)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	_ = cmd.Run()
}

func taskOf(t *testing.T, j executor.Job) string {
	base, task, ok := strings.Cut(j.Ref().ID, "_")
	require.True(t, ok, "job id %q is an array task's", j.Ref().ID)
	assert.Equal(t, "1001", base)
	return task
}

func waitExec(t *testing.T, j executor.Job) *process.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := j.Wait(ctx)
	require.NoError(t, err)
	return res
}

// A stage's instances submitted at once are one sbatch --array; each task
// runs its own node's command in its node's environment, writes that
// node's log and exit files, and is decided by its own status line.
func TestArrayTasksMapBackToTheirNodes(t *testing.T) {
	f, e := newFakeExecutor(t)
	specs := make([]*executor.Spec, 5)
	for i := range specs {
		specs[i] = f.instance(i, map[bool]int{true: 3}[i == 2])
	}
	jobs := submitAll(t, e, specs)
	require.Equal(t, 1, f.calls("sbatch"), "one submission for the five instances")
	assert.Contains(t, f.read("sbatch.log"), "--array=0-4 ")
	tasks := map[string]bool{}
	var status strings.Builder
	for i, j := range jobs {
		task := taskOf(t, j)
		tasks[task] = true
		f.runTask(1, task)
		got, _ := os.ReadFile(specs[i].Stdout)
		assert.Equal(t, "node"+strconv.Itoa(i), string(got), "task %s runs node %d's command, its output in the node's log", task, i)
		state := "COMPLETED"
		if i == 2 {
			state = "FAILED"
		}
		fmt.Fprintf(&status, "1001_%s|%s|None\n", task, state)
	}
	assert.Len(t, tasks, 5)
	f.write("squeue.out", status.String())
	for i, j := range jobs {
		res := waitExec(t, j)
		if i == 2 {
			assert.Equal(t, failclass.Exit, res.Class, res.Message)
			assert.Equal(t, 3, res.ExitCode)
			assert.Contains(t, res.Message, "Slurm job "+j.Ref().ID+": exited with status 3")
		} else {
			assert.Equal(t, "", res.Class, res.Message)
		}
	}
}

// Slurm keeps an array's batch script and copies it for each task it
// starts: the script is the same few lines for 3 tasks as for 40, and
// each task still runs its own node (the first, a middle and the last
// checked; a task number with no node fails).
func TestArrayBatchScriptDoesNotGrowWithItsTasks(t *testing.T) {
	sizes := map[int]int{}
	for _, n := range []int{3, 40} {
		f, e := newFakeExecutor(t)
		specs := make([]*executor.Spec, n)
		for i := range specs {
			specs[i] = f.instance(i, 0)
		}
		jobs := submitAll(t, e, specs)
		require.Equal(t, 1, f.calls("sbatch"))
		node := map[string]int{} // by task
		for i, j := range jobs {
			node[taskOf(t, j)] = i
		}
		args := strings.Fields(strings.TrimSpace(f.read("sbatch.log")))
		st, err := os.Stat(args[len(args)-1])
		require.NoError(t, err)
		sizes[n] = int(st.Size())
		for _, task := range []string{"0", strconv.Itoa(n / 2), strconv.Itoa(n - 1)} {
			f.runTask(1, task)
			i := node[task]
			got, _ := os.ReadFile(specs[i].Stdout)
			assert.Equal(t, "node"+strconv.Itoa(i), string(got), "task %s runs node %d", task, i)
		}
		f.runTask(1, strconv.Itoa(n))
		got, _ := os.ReadFile(filepath.Join(filepath.Dir(args[len(args)-1]), strconv.Itoa(n)+".err"))
		assert.Contains(t, string(got), "cairn: no node for array task "+strconv.Itoa(n))
	}
	assert.Equal(t, sizes[3], sizes[40], "the batch script of 40 tasks (%d bytes) is that of 3", sizes[40])
}

// Each task is followed on its own: pending tasks shown as one range,
// a requeued task said at once, a cancelled one cancelled by its id.
func TestArrayTaskRequeuedAndCancelled(t *testing.T) {
	f, e := newFakeExecutor(t)
	specs := []*executor.Spec{f.instance(0, 0), f.instance(1, 0), f.instance(2, 0)}
	var notes notices
	specs[0].Notice = notes.add
	jobs := submitAll(t, e, specs)
	require.Equal(t, 1, f.calls("sbatch"))
	requeued, cancelled, other := jobs[0], jobs[1], jobs[2]
	f.write("squeue.out", "1001_[0-2]|PENDING|Priority\n")
	for _, j := range jobs {
		for e.client.State(j.Ref().ID) != "PENDING" {
			time.Sleep(5 * time.Millisecond)
		}
	}
	pending := map[string]string{requeued.Ref().ID: "RUNNING", cancelled.Ref().ID: "PENDING|Priority", other.Ref().ID: "RUNNING"}
	show := func() {
		var b strings.Builder
		for id, st := range pending {
			if !strings.Contains(st, "|") {
				st += "|None"
			}
			fmt.Fprintf(&b, "%s|%s\n", id, st)
		}
		f.write("squeue.out", b.String())
	}
	show()
	for e.client.State(requeued.Ref().ID) != "RUNNING" {
		time.Sleep(5 * time.Millisecond)
	}
	pending[requeued.Ref().ID] = "PENDING|BeginTime"
	show()
	n := notes.wait(t, 1)
	assert.Equal(t, "Slurm to run job "+requeued.Ref().ID+" again", n[0].What)

	require.NoError(t, cancelled.Cancel(false))
	for !strings.Contains(f.read("scancel.log"), cancelled.Ref().ID) {
		time.Sleep(5 * time.Millisecond)
	}
	assert.Equal(t, cancelled.Ref().ID+"\n", f.read("scancel.log"), "the task alone is cancelled")
	pending[cancelled.Ref().ID] = "CANCELLED by 1000"
	for _, j := range []executor.Job{requeued, other} {
		f.runTask(1, taskOf(t, j))
		pending[j.Ref().ID] = "COMPLETED"
	}
	show()
	res := waitExec(t, cancelled)
	assert.Equal(t, failclass.Interrupted, res.Class, res.Message)
	for _, j := range []executor.Job{requeued, other} {
		res := waitExec(t, j)
		assert.Equal(t, "", res.Class, res.Message)
	}
	assert.Len(t, notes.wait(t, 2), 2, "the requeued task said when it ran again")
}

// Arrays hold at most the cluster's MaxArraySize tasks; a gathering of
// one instance is a single job.
func TestArraysAreChunkedToMaxArraySize(t *testing.T) {
	f, e := newFakeExecutor(t)
	// Read when the first job is submitted.
	f.write("config", noAccounting+"MaxArraySize            = 3\n")
	specs := make([]*executor.Spec, 7)
	for i := range specs {
		specs[i] = f.instance(i, 0)
	}
	submitAll(t, e, specs)
	var arrays []string
	for _, line := range strings.Split(strings.TrimSpace(f.read("sbatch.log")), "\n") {
		a := "single"
		for _, w := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(w, "--array="); ok {
				a = v
			}
		}
		arrays = append(arrays, a)
	}
	assert.ElementsMatch(t, []string{"0-2", "0-2", "single"}, arrays)
}

// A cairn killed after its array's sbatch and before it journaled the
// tasks' ids left references that name the array by its comment: the next
// executor re-attaches each task's node to its task, with no sbatch.
func TestTasksJournaledBeforeTheirIDsAreReattached(t *testing.T) {
	f, e := newFakeExecutor(t)
	specs := []*executor.Spec{f.instance(0, 0), f.instance(1, 0)}
	var mu sync.Mutex
	var journaled []process.JobRef
	for _, s := range specs {
		s.Submitting = func(ref process.JobRef) {
			mu.Lock()
			defer mu.Unlock()
			assert.Empty(t, f.read("sbatch.log"), "journaled before the sbatch")
			journaled = append(journaled, ref)
		}
	}
	jobs := submitAll(t, e, specs)
	require.Len(t, journaled, 2)
	e.Close()
	// A lookup that finds no job waits out the dead run's sbatch calls
	// (see findPending): short ones here.
	e.opts.CallTimeout = 100 * time.Millisecond

	// The next apply: the journal holds the references without ids.
	e2, err := NewExecutor(context.Background(), e.opts)
	require.NoError(t, err)
	t.Cleanup(e2.Close)
	assert.Empty(t, e2.Recover(context.Background(), journaled))
	again := submitAll(t, e2, []*executor.Spec{f.instance(0, 0), f.instance(1, 0)})
	assert.Equal(t, 1, f.calls("sbatch"), "no task submitted twice")
	for i := range again {
		assert.Equal(t, jobs[i].Ref().ID, again[i].Ref().ID, "node %d re-attached to its task", i)
	}
	var status strings.Builder
	for _, j := range again {
		f.runTask(1, taskOf(t, j))
		fmt.Fprintf(&status, "%s|COMPLETED|None\n", j.Ref().ID)
	}
	f.write("squeue.out", status.String())
	for _, j := range again {
		res := waitExec(t, j)
		assert.Equal(t, "", res.Class, res.Message)
	}

	// An array Slurm never took (killed before its sbatch): submitted.
	f.write("comments", "")
	e3, err := NewExecutor(context.Background(), e.opts)
	require.NoError(t, err)
	t.Cleanup(e3.Close)
	for _, s := range []*executor.Spec{f.instance(0, 0), f.instance(1, 0)} {
		require.NoError(t, os.Remove(strings.TrimSuffix(s.Stdout, ".out")+".exit"))
	}
	e3.Recover(context.Background(), journaled)
	submitAll(t, e3, []*executor.Spec{f.instance(0, 0), f.instance(1, 0)})
	assert.Equal(t, 2, f.calls("sbatch"))
}

// On a cluster with accounting, the one status query per cycle is sacct
// (-X, by the run's name), and its lines for an array's tasks decide each
// task on its own: the pending tasks as one range (1001_[0-3%2], with a
// limit on tasks at once), each other task as 1001_N, a cancel as
// "CANCELLED by UID". The lines are in sacct's --parsable2 format as
// Slurm documents it, given by a stand-in sacct: the local test cluster
// keeps no accounting (no slurmdbd), so no run there takes this path.
func TestArrayTasksFollowedThroughSacct(t *testing.T) {
	f, e := newFakeExecutor(t)
	f.write("config", "AccountingStorageType   = accounting_storage/slurmdbd\nMinJobAge               = 300 sec\n")
	specs := make([]*executor.Spec, 4)
	for i := range specs {
		specs[i] = f.instance(i, 0)
	}
	jobs := submitAll(t, e, specs)
	require.Equal(t, 1, f.calls("sbatch"), "one submission for the four instances")
	f.write("sacct.out", "1001_[0-3%2]|PENDING|JobArrayTaskLimit\n")
	for _, j := range jobs {
		for e.client.State(j.Ref().ID) != "PENDING" {
			time.Sleep(5 * time.Millisecond)
		}
		st, waiting := j.(executor.QueuedJob).Queue()
		assert.True(t, waiting)
		assert.Equal(t, "PENDING (JobArrayTaskLimit)", st)
	}
	want := map[string]string{"0": "", "1": failclass.Exit, "2": failclass.Killed, "3": ""}
	for _, task := range []string{"0", "1", "3"} {
		f.runTask(1, task)
	}
	f.write("sacct.out", "1001_0|COMPLETED|None\n1001_1|FAILED|NonZeroExitCode\n1001_2|CANCELLED by 0|None\n1001_3|COMPLETED|None\n")
	for i, j := range jobs {
		task := taskOf(t, j)
		res := waitExec(t, j)
		assert.Equal(t, want[task], res.Class, "task %s (node %d): %s", task, i, res.Message)
	}
	log := f.read("sacct.log")
	assert.Contains(t, log, "-X --parsable2 --noheader --name=run-1 --starttime=")
	assert.NotContains(t, f.read("squeue.log"), "%T", "no status query by squeue")
}
