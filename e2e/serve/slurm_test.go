package serve_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine/executor/slurm/slurmtest"
	"github.com/cairn-run/cairn/engine/runlog"
)

// The serve kind under the Slurm executor, on the local one-node cluster
// (scripts/slurm-up.sh): each replica is a job whose script takes a free
// port on the node it runs on and writes its host and port to an endpoint
// file in the run's folder; cairn proves the replica ready there and hands
// that endpoint to the consumers, which run on this machine.

// slurmServeStage is a serve stage of the simulated model listening on
// {host}:{port}, as the job's script gives them.
func slurmServeStage(port, replicas int) string {
	args := []string{simBin, "--addr", "{host}:{port}", "--model", "{model}", "--request-log", "requests.jsonl"}
	q, _ := json.Marshal(args)
	return fmt.Sprintf(`
stage "serve" "tm" {
  run           = %s
  model         = %q
  replicas      = %d
  port          = %d
  kill_grace    = "5s"
  start_timeout = "3m"
}
`, q, model, replicas, port)
}

// heldEvalStage is evalStage whose worker waits for the file release first.
func heldEvalStage(name string, seed int) string {
	return fmt.Sprintf(`
stage "evaluate" %q {
  worker        = ["sh", "-c", "while [ ! -f release ]; do sleep 0.1; done; exec python3 workers/chat_worker.py --system-prompt-file bundles/seed/system.txt"]
  items         = "data/items.jsonl"
  bundle        = ["bundles/seed/"]
  model         = %q
  runtime       = { topology = "single", temperature = 0, eval_seed = %d }
  endpoints     = stage.tm.endpoints
  max_in_flight = 4
  scores        = "out/%s.jsonl"
}
`, name, model, seed, name)
}

// runsOldestFirst are the workspace's runs.
func (w *workspace) runsOldestFirst() []*runlog.RunInfo {
	w.t.Helper()
	rs, err := runlog.List(w.cache)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(w.t, err)
	sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
	return rs
}

// serveJobs are the Slurm job ids of stage.tm's started records in es.
func serveJobs(es []runlog.Entry) []string {
	var ids []string
	for _, e := range es {
		// A job is journaled by its comment before its sbatch (no id
		// yet), then by its id once Slurm gave one: only the latter names
		// a job.
		if e.T == runlog.Started && e.Node == "stage.tm" && e.Job != nil && e.Job.ID != "" {
			ids = append(ids, e.Job.ID)
		}
	}
	sort.Strings(ids)
	return ids
}

// readyEndpoints are the endpoints of stage.tm's ready records in es.
func readyEndpoints(es []runlog.Entry) []string {
	var eps []string
	for _, e := range es {
		if e.T == runlog.Serve && e.Node == "stage.tm" && e.Status == "ready" {
			eps = append(eps, e.Endpoint)
		}
	}
	sort.Strings(eps)
	return eps
}

// jobState is a job's state as squeue (which keeps ended jobs a while)
// says.
func jobState(t *testing.T, id string) string {
	return strings.TrimSpace(slurmtest.Call(t, "squeue", "--noheader", "--states=all", "--jobs="+id, "--format=%T"))
}

// assertStopped checks that cairn ended job id: its batch script, which
// has cairn's SIGTERM first, ended the server and exited with the
// server's status (COMPLETED for a server that stops cleanly on SIGTERM,
// FAILED otherwise), or Slurm cancelled a script that lingered
// (CANCELLED).
func assertStopped(t *testing.T, id string) {
	t.Helper()
	assert.Contains(t, []string{"COMPLETED", "FAILED", "CANCELLED"}, jobState(t, id), "job %s", id)
}

// answers reports whether something accepts connections at an endpoint's
// host and port.
func answers(endpoint string) bool {
	hostport := strings.TrimSuffix(strings.TrimPrefix(endpoint, "http://"), "/v1")
	c, err := net.DialTimeout("tcp", hostport, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Two replicas as two Slurm jobs, each reporting its host and port in an
// endpoint file of the run's folder; two evaluations share them; the jobs
// are cancelled once the second evaluation ends, not before, and nothing
// answers at their endpoints afterwards.
func TestSlurmServeReportsItsEndpoint(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, 8)
	f := w.pipeline(slurmServeStage(e2etest.FreePorts(t, 4), 2), evalStage("a", "tm"), evalStageWith("b", "tm", 4, 1))
	code, out := w.run("apply", f, "--executor", "slurm")
	require.Equal(t, 0, code, out)
	es := w.journal(out)

	jobs := serveJobs(es)
	require.Len(t, jobs, 2, "one job a replica:\n%s", out)
	eps := readyEndpoints(es)
	require.Len(t, eps, 2)
	host, err := os.Hostname()
	require.NoError(t, err)

	// The endpoint files in the run's folder name the node and the ports
	// the consumers were given.
	var files []string
	require.NoError(t, filepath.WalkDir(w.cache, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".endpoint") {
			files = append(files, p)
		}
		return err
	}))
	require.Len(t, files, 2, "an endpoint file a replica")
	var fromFiles []string
	for _, p := range files {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		var e struct {
			Host string `json:"host"`
			Port int    `json:"port"`
			Job  string `json:"job"`
		}
		require.NoError(t, json.Unmarshal(b, &e), "%s", b)
		assert.Equal(t, host, e.Host, "the node's name (the local cluster's node is this machine)")
		assert.Contains(t, jobs, e.Job)
		fromFiles = append(fromFiles, fmt.Sprintf("http://%s:%d/v1", e.Host, e.Port))
	}
	sort.Strings(fromFiles)
	assert.Equal(t, eps, fromFiles)

	// Both evaluations were answered through them, and the jobs were
	// cancelled after the second ended.
	assert.Len(t, w.workerRequests(), 16)
	fin := func(node string) int {
		return index(es, func(e runlog.Entry) bool { return e.T == runlog.Finished && e.Node == node })
	}
	stopped := index(es, serveRec("stage.tm", "stopped"))
	require.True(t, fin("stage.a") >= 0 && fin("stage.b") >= 0, "the evaluations did not finish:\n%s", out)
	assert.Greater(t, stopped, fin("stage.a"))
	assert.Greater(t, stopped, fin("stage.b"))
	for _, id := range jobs {
		assertStopped(t, id)
	}
	for _, ep := range eps {
		assert.False(t, answers(ep), "a server still answers at %s", ep)
	}
}

// kill -9 of cairn while its serve jobs run: the jobs go on, and the next
// apply finds them through the dead run's journal, re-attaches to them
// (no new job), reads their endpoint files, and its consumers use them;
// the jobs are cancelled when the last consumer ends.
func TestSlurmServeReattachesAfterCrash(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, 6)
	f := w.pipeline(slurmServeStage(e2etest.FreePorts(t, 4), 2), heldEvalStage("a", 0))
	first := w.cmd("apply", f, "--executor", "slurm")
	var out1 strings.Builder
	first.Stdout, first.Stderr = &out1, &out1
	require.NoError(t, first.Start())
	var es1 []runlog.Entry
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if rs := w.runsOldestFirst(); len(rs) == 1 {
			es1 = rs[0].Entries
			if len(readyEndpoints(es1)) == 2 && index(es1, func(e runlog.Entry) bool { return e.T == runlog.Started && e.Node == "stage.a" }) >= 0 {
				break
			}
		}
		if !time.Now().Before(deadline) {
			// Its output is read once the apply has ended (the copy
			// into out1 runs until then).
			_ = first.Process.Kill()
			_ = first.Wait()
			t.Fatalf("the servers did not get ready:\n%s", out1.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	jobs, eps := serveJobs(es1), readyEndpoints(es1)
	// Should the test fail before the second apply ends them, the jobs
	// must not hold the node for the tests after this one.
	t.Cleanup(func() {
		for _, id := range jobs {
			slurmtest.Call(t, "scancel", id)
		}
	})
	require.Len(t, jobs, 2)
	for _, id := range jobs {
		assert.Equal(t, "RUNNING", jobState(t, id), "job %s goes on after cairn died", id)
	}

	w.write("release", "")
	code, out := w.run("apply", f, "--executor", "slurm")
	require.Equal(t, 0, code, "%s\n(first apply:\n%s)", out, out1.String())
	es2 := w.journal(out)
	assert.Equal(t, jobs, serveJobs(es2), "the second apply re-attached to the jobs, submitting none:\n%s", out)
	assert.Equal(t, eps, readyEndpoints(es2), "at the endpoints the jobs wrote")
	assert.Len(t, w.workerRequests(), 6)
	for _, id := range jobs {
		assertStopped(t, id)
	}
}

// A serve job that waits in Slurm's queue (the node taken whole by another
// job) does not fail its start_timeout there: start_timeout counts from
// the job's start. Meanwhile the journal, the progress and `cairn show RUN`
// say it is queued, and its consumers wait; once the other job ends, it
// runs, gets ready within start_timeout and serves them.
func TestSlurmServeWaitsInTheQueue(t *testing.T) {
	slurmtest.Need(t)
	w := newWorkspace(t, 6)
	// Another user's job holds the only node until the file unblock
	// exists.
	unblock := filepath.Join(w.dir, "unblock")
	blocker := strings.TrimSpace(slurmtest.Call(t, "sbatch", "--parsable", "--exclusive", "--job-name=cairn-test-blocker",
		"--output=/dev/null", "--chdir="+w.dir, "--wrap", "while [ ! -f "+unblock+" ]; do sleep 0.2; done"))
	t.Cleanup(func() { slurmtest.Call(t, "scancel", blocker) })
	e2etest.WaitFor(t, "the blocking job to run", 2*time.Minute, func() bool { return jobState(t, blocker) == "RUNNING" })

	const startTimeout = 10 * time.Second
	srv := strings.Replace(slurmServeStage(e2etest.FreePorts(t, 4), 1), `start_timeout = "3m"`, fmt.Sprintf("start_timeout = %q", startTimeout), 1)
	f := w.pipeline(srv, evalStage("a", "tm"))
	apply := w.start("apply", f, "--executor", "slurm")
	entries := func() []runlog.Entry {
		if rs := w.runsOldestFirst(); len(rs) == 1 {
			return rs[0].Entries
		}
		return nil
	}

	// The replica's job is queued, and the journal says so.
	var queuedAt time.Time
	e2etest.WaitFor(t, "a queued record (or the apply's end)", 2*time.Minute, func() bool {
		es := entries()
		if i := index(es, serveRec("stage.tm", "queued")); i >= 0 {
			queuedAt = es[i].Time
			return true
		}
		return apply.ended()
	})
	require.False(t, apply.ended(), "the apply ended:\n%s", apply.output())
	es := entries()
	jobs := serveJobs(es)
	require.Len(t, jobs, 1)
	assert.Contains(t, es[index(es, serveRec("stage.tm", "queued"))].Message, "slurm job "+jobs[0]+" is queued, PENDING")

	// Twice start_timeout later it still waits, queued, with no failure,
	// and its consumer has not started.
	e2etest.WaitFor(t, "twice start_timeout after the queued record (or the apply's end)", 5*time.Minute, func() bool {
		return time.Since(queuedAt) > 2*startTimeout || apply.ended()
	})
	require.False(t, apply.ended(), "the apply ended while the serve job was queued:\n%s", apply.output())
	assert.Equal(t, "PENDING", jobState(t, jobs[0]))
	es = entries()
	assert.Equal(t, -1, index(es, func(e runlog.Entry) bool { return e.T == runlog.Failed }), "a node failed while queued")
	assert.Equal(t, -1, index(es, func(e runlog.Entry) bool { return e.T == runlog.Started && e.Node == "stage.a" }), "the consumer started before its server")
	runs := w.runsOldestFirst()
	require.Len(t, runs, 1)
	code, show := w.run("show", runs[0].ID)
	require.Equal(t, 0, code, show)
	assert.Regexp(t, `stage\.tm\s+queued\s`, show)

	// The other job ends: the replica runs, gets ready and serves.
	w.write("unblock", "")
	apply.wait()
	require.Equal(t, 0, apply.cmd.ProcessState.ExitCode(), apply.output())
	es = w.journal(apply.output())
	queued, running := index(es, serveRec("stage.tm", "queued")), index(es, serveRec("stage.tm", "running"))
	ready := index(es, serveRec("stage.tm", "ready"))
	consumer := index(es, func(e runlog.Entry) bool { return e.T == runlog.Started && e.Node == "stage.a" })
	require.True(t, queued >= 0 && running > queued && ready > running && consumer > ready, "queued %d, running %d, ready %d, consumer %d:\n%s", queued, running, ready, consumer, apply.output())
	assert.Contains(t, es[running].Message, "in the queue")
	assert.Regexp(t, `stage\.tm  replica 1: slurm job `+jobs[0]+` is queued, PENDING \(Resources\); its consumers wait`, apply.output())
	assert.Len(t, w.workerRequests(), 6)
	assertStopped(t, jobs[0])
}
