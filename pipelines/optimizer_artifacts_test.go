package pipelines_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/storage/digest"
)

// A job's artifacts are the truth (#28): what shapes the optimization is
// sealed in job.json, so another method command line or --var method_args
// is refused before anything runs (exit 2), naming the field and both
// values.
func TestOptimizerSealCoversTheMethodsCommandLine(t *testing.T) {
	w := newOptWorkspace(t)
	out, code := w.job("budget=20", "out=runs/j")
	require.Equal(t, 0, code, out)
	var job map[string]any
	w.readJSON("runs/j/job.json", &job)
	assert.Equal(t, []any{"python3", "testdata/optimizer/methods/sim_method.py", "--method", "simgepa", "--seed", "0"}, job["command"])
	assert.Equal(t, []any{"python3", "testdata/workers/chat_worker.py", "--bundle-system-prompt", "system.txt"}, job["worker"])
	assert.Equal(t, "testdata/optimizer/data/sums/train.jsonl", job["splits"].(map[string]any)["train"])
	result, err := os.ReadFile(filepath.Join(w.dir, "runs/j/result.json"))
	require.NoError(t, err)

	out, code = w.job("budget=20", "out=runs/j", `method_args=["--mode","worse"]`)
	assert.Equal(t, 2, code, out)
	assert.Contains(t, strings.Join(strings.Fields(out), " "), `command: the out folder's job is ["python3","testdata/optimizer/methods/sim_method.py","--method","simgepa","--seed","0"], this job is ["python3","testdata/optimizer/methods/sim_method.py","--method","simgepa","--seed","0","--mode","worse"]`)
	after, err := os.ReadFile(filepath.Join(w.dir, "runs/j/result.json"))
	require.NoError(t, err)
	assert.Equal(t, string(result), string(after))
}

// "Done" is the out folder's (#28): under a fresh cache a finished job runs
// no method and sends no request; it prints its saved summary and its
// files stay as they were. An artifact that does not follow from the one
// before it is refused (exit 2, named), nothing rewritten.
func TestOptimizerFinishedJobUnderAnotherCache(t *testing.T) {
	w := newOptWorkspace(t)
	const dir = "runs/simgepa/sums/single/sim/0"
	out, code := w.job("budget=40")
	require.Equal(t, 0, code, out)
	line := summaryRe.FindString(out)
	require.NotEmpty(t, line, out)
	files := map[string]string{}
	for _, f := range []string{"job.json", "optimization.json", "optimization/rollouts.jsonl", "selection.json", "test.json", "result.json"} {
		b, err := os.ReadFile(filepath.Join(w.dir, dir, f))
		require.NoError(t, err)
		files[f] = string(b)
	}
	before := len(w.requests())
	total := w.requestCount()

	w.cache = filepath.Join(t.TempDir(), "fresh")
	out, code = w.job("budget=40")
	require.Equal(t, 0, code, out)
	assert.Equal(t, []string{line}, summaryRe.FindAllString(out, -1), out)
	assert.Contains(t, out, "the method is not run again")
	assert.Equal(t, total, w.requestCount(), "no request reached the model: %d distinct before", before)
	for f, b := range files {
		got, err := os.ReadFile(filepath.Join(w.dir, dir, f))
		require.NoError(t, err)
		assert.Equal(t, b, string(got), f)
	}

	// selection.json no longer follows from optimization.json.
	p := filepath.Join(w.dir, dir, "optimization.json")
	require.NoError(t, os.WriteFile(p, []byte(files["optimization.json"]+"\n"), 0o644))
	w.cache = filepath.Join(t.TempDir(), "third")
	out, code = w.job("budget=40")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, dir+"/selection.json was made from another optimization.json")
	assert.Contains(t, out, "--replace")
	got, err := os.ReadFile(filepath.Join(w.dir, dir, "selection.json"))
	require.NoError(t, err)
	assert.Equal(t, files["selection.json"], string(got))

	// --replace is the explicit way: the validations named run again, and
	// the selection and result after them are rewritten.
	out, code = w.phase([]string{`replace=stage.seed_validation["simgepa/sums/single/sim/0"]`, `replace=stage.incumbent_validation["simgepa/sums/single/sim/0"]`}, "budget=40")
	require.Equal(t, 0, code, out)
	var sel map[string]any
	w.readJSON(dir+"/selection.json", &sel)
	d, err := fileSHA256(p)
	require.NoError(t, err)
	assert.Equal(t, d, sel["optimization_sha256"])
	assert.Equal(t, []string{line}, summaryRe.FindAllString(out, -1), "the same result, written again")
}

func fileSHA256(path string) (string, error) {
	d, err := digest.File(path)
	return "sha256:" + d, err
}

// blipProxy answers 503 for the validation split's requests while down is
// set, and passes the rest to the simulated model.
func blipProxy(t *testing.T, w *optWorkspace, down *atomic.Bool) string {
	t.Helper()
	val := map[string]bool{}
	for _, q := range splitQuestions(t, filepath.Join(w.dir, "testdata/optimizer/data/sums/val.jsonl")) {
		b, _ := json.Marshal(q)
		val[string(b)] = true
	}
	target, err := url.Parse(w.url)
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if down.Load() {
			for q := range val {
				if strings.Contains(string(body), q) {
					http.Error(rw, "blip", http.StatusServiceUnavailable)
					return
				}
			}
		}
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, target.Scheme+"://"+target.Host+r.URL.Path, strings.NewReader(string(body)))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			rw.Header()[k] = v
		}
		rw.WriteHeader(resp.StatusCode)
		io.Copy(rw, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + strings.TrimPrefix(w.url, target.Scheme+"://"+target.Host)
}

// A blip during validation (#28): the endpoint answers 503 for the
// validation items past their retries. The job stops before its selection:
// apply exits 1 and no result.json claims a result. The next apply resumes
// the validation and finishes the job; after that, with the validation
// endpoint down again and a fresh cache, a job whose test.json and
// result.json are gone runs its test phase alone and keeps selection.json.
func TestOptimizerValidationBlip(t *testing.T) {
	w := newOptWorkspace(t)
	var down atomic.Bool
	w.url = blipProxy(t, w, &down)
	const dir = "runs/simgepa/sums/single/sim/0"
	down.Store(true)
	out, code := w.job("budget=20")
	assert.Equal(t, 1, code, out)
	for _, f := range []string{"selection.json", "test.json", "result.json"} {
		_, err := os.Stat(filepath.Join(w.dir, dir, f))
		assert.True(t, os.IsNotExist(err), "%s is not written after a failed validation", f)
	}

	down.Store(false)
	out, code = w.job("budget=20")
	require.Equal(t, 0, code, out)
	var res map[string]any
	w.readJSON(dir+"/result.json", &res)
	assert.Equal(t, "ok", res["status"])
	sel, err := os.ReadFile(filepath.Join(w.dir, dir, "selection.json"))
	require.NoError(t, err)
	assert.NotContains(t, string(sel), "validation_invalid")

	down.Store(true)
	for _, f := range []string{"test.json", "result.json"} {
		require.NoError(t, os.Remove(filepath.Join(w.dir, dir, f)))
	}
	w.cache = filepath.Join(t.TempDir(), "fresh")
	out, code = w.job("budget=20")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "selected earlier")
	got, err := os.ReadFile(filepath.Join(w.dir, dir, "selection.json"))
	require.NoError(t, err)
	assert.Equal(t, string(sel), string(got))
	w.readJSON(dir+"/result.json", &res)
	assert.Equal(t, "ok", res["status"])
}

// Two applies into one out folder, started together (#28): the seal is
// taken under the folder's lock, so exactly one proceeds and the other
// exits 2 naming the folder's owner or the job sealed there; the folder
// never holds one job's job.json beside the other's files.
func TestOptimizerOutFolderRace(t *testing.T) {
	w := newOptWorkspace(t)
	const tries = 12
	for i := range tries {
		out := fmt.Sprintf("runs/race%d", i)
		var wg sync.WaitGroup
		codes, outs := make([]int, 2), make([]string, 2)
		for s := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := w.command(w.applyArgs([]string{"target=stage.optimize"}, "budget=20", "out="+out, fmt.Sprintf("seed=%d", s))...)
				cmd.Args[4] = filepath.Join(t.TempDir(), "cache") // each its own cache
				b, err := cmd.CombinedOutput()
				outs[s] = string(b)
				var ee *exec.ExitError
				if err != nil && assert.ErrorAs(t, err, &ee) {
					codes[s] = ee.ExitCode()
				}
			}()
		}
		wg.Wait()
		require.ElementsMatch(t, []int{0, 2}, codes, "try %d:\n%s\n---\n%s", i, outs[0], outs[1])
		winner := 0
		if codes[1] == 0 {
			winner = 1
		}
		assert.Regexp(t, `is being written by the apply of job simgepa/sums/single/sim/\d \(pid \d+|holds another job`, outs[1-winner])
		var job, opt map[string]any
		w.readJSON(out+"/job.json", &job)
		assert.Equal(t, float64(winner), job["seed"], "try %d", i)
		w.readJSON(out+"/optimization.json", &opt)
		assert.Equal(t, 20.0, opt["charged_rollouts"])
	}
}

// One interrupted optimization in a grid (#28): the grid's other jobs run,
// and the interrupted one is reported with the exact command that starts
// it over.
func TestOptimizerInterruptedJobInAGrid(t *testing.T) {
	w := newOptWorkspace(t)
	marker := filepath.Join(w.dir, "runs/simgepa/sums/single/sim/0/optimization/started.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(marker), 0o755))
	require.NoError(t, os.WriteFile(marker, []byte(`{"cache":"elsewhere","node":"stage.optimize[\"simgepa/sums/single/sim/0\"]","started":"2026-01-01T00:00:00Z"}`+"\n"), 0o644))
	args := []string{"apply", "pipelines/optimizer_grid.hcl", "--cache", w.cache, "--no-color",
		"--var", `methods=["simgepa"]`, "--var", `datasets=["sums"]`, "--var", "seeds=[0,1]", "--var", "budget=20"}
	cmd := w.command(args...)
	b, err := cmd.CombinedOutput()
	out := string(b)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, out)
	assert.Equal(t, 1, ee.ExitCode(), out)
	var res map[string]any
	w.readJSON("runs/simgepa/sums/single/sim/1/result.json", &res)
	assert.Equal(t, "ok", res["status"], "the other job ran")
	assert.Contains(t, out, "was interrupted")
	assert.Contains(t, out, `cairn apply pipelines/optimizer_grid.hcl --cache `+w.cache+` --no-color --var 'methods=["simgepa"]' --var 'datasets=["sums"]' --var 'seeds=[0,1]' --var budget=20 --replace 'stage.optimize["simgepa/sums/single/sim/0"]'`)
}

// Ctrl-C during an optimization (#28): the message says what the next
// apply does (it does not restart the optimization), and the next apply
// does that.
func TestOptimizerCtrlCSaysWhatTheNextApplyDoes(t *testing.T) {
	w := newOptWorkspaceLatency(t, 20*time.Millisecond)
	ledger := filepath.Join(w.dir, "runs/simgepa/sums/single/sim/0/optimization/rollouts.jsonl")
	cmd := w.command(w.applyArgs(nil, "budget=200")...)
	var buf strings.Builder
	cmd.Stdout, cmd.Stderr = &buf, &buf
	require.NoError(t, cmd.Start())
	e2etest.WaitFor(t, "charged rollouts", 60*time.Second, func() bool { return lineCount(ledger) >= 20 })
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, buf.String())
	assert.Equal(t, 130, ee.ExitCode(), buf.String())
	out := buf.String()
	assert.NotContains(t, out, "to resume")
	assert.Contains(t, out, `the next 'cairn apply' resumes the nodes that did not finish, except stage.optimize["simgepa/sums/single/sim/0"]: it does not restart it`)
	assert.Contains(t, out, "the next apply does not restart this optimization")

	out, code := w.job("budget=200")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "was interrupted")
}

// A finished job whose optimization is started over (--replace) on a
// cache without its validations' records: select cannot select again (the
// plan found the validations not needed, selection.json being there) and
// says so, naming the validations to replace, rather than calling
// selection.json missing. (Where the new optimization.json differs,
// cairn aggregate refuses the folder:
// TestAResultOfAnotherSelectionOrOptimizationIsRefused.)
func TestOptimizationStartedOverUnderAnOldSelectionSaysWhatToReplace(t *testing.T) {
	w := newOptWorkspace(t)
	const dir = "runs/simgepa/sums/single/sim/0"
	out, code := w.job("budget=20")
	require.Equal(t, 0, code, out)

	w.cache = filepath.Join(t.TempDir(), "fresh")
	out, code = w.phase([]string{`replace=stage.optimize["simgepa/sums/single/sim/0"]`}, "budget=20")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "the job is to be selected again, but its validations were skipped as not needed ("+dir+"/selection.json was there when the plan was made)")
	assert.Contains(t, out, `--replace 'stage.seed_validation["simgepa/sums/single/sim/0"]' --replace 'stage.incumbent_validation["simgepa/sums/single/sim/0"]'`)
	assert.NotContains(t, out, "selection.json is missing")
}

// A damaged result.json on a cache without the job's test records: the
// refusal says how to make it again there, --replace on the result node
// alone says why it cannot (no "apply again to resume them", which looped),
// and the advice works.
func TestDamagedResultOnAFreshCacheIsMadeAgainAsAdvised(t *testing.T) {
	w := newOptWorkspace(t)
	const dir = "runs/simgepa/sums/single/sim/0"
	out, code := w.job("budget=20")
	require.Equal(t, 0, code, out)
	result := filepath.Join(w.dir, dir, "result.json")
	good, err := os.ReadFile(result)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(result, 200))

	w.cache = filepath.Join(t.TempDir(), "fresh")
	out, code = w.job("budget=20")
	assert.Equal(t, 2, code, out)
	advice := `--replace 'stage.seed_test["simgepa/sums/single/sim/0"]'`
	assert.Contains(t, out, "on a cache without the records of the job's test evaluations, run them again with --replace naming the job's baseline test evaluation (in pipelines/optimizer_grid.hcl: "+advice)

	out, code = w.phase([]string{`replace=stage.result["simgepa/sums/single/sim/0"]`}, "budget=20")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "the job's result is to be written again, but its test evaluations were skipped as not needed ("+dir+"/result.json was there when the plan was made)")
	assert.NotContains(t, out, "apply again to resume them")

	out, code = w.phase([]string{`replace=stage.seed_test["simgepa/sums/single/sim/0"]`}, "budget=20")
	require.Equal(t, 0, code, out)
	got, err := os.ReadFile(result)
	require.NoError(t, err)
	assert.Equal(t, string(good), string(got), "the result made again is the job's")
}

// A charged-rollout record whose last line has no newline (a record cut
// short, or one added by hand) is counted: on a fresh cache a finished
// job whose record holds one rollout more than its optimization.json
// charged is refused (exit 2), not taken with the line left out.
func TestOptimizerUnterminatedRolloutLineIsCounted(t *testing.T) {
	w := newOptWorkspace(t)
	const dir = "runs/simgepa/sums/single/sim/0"
	out, code := w.job("budget=20")
	require.Equal(t, 0, code, out)
	ledger, err := os.OpenFile(filepath.Join(w.dir, dir, "optimization/rollouts.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = ledger.WriteString(`{"n":21,"bundle":"x","ite`)
	require.NoError(t, err)
	require.NoError(t, ledger.Close())

	w.cache = filepath.Join(t.TempDir(), "fresh")
	out, code = w.job("budget=20")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, dir+"/optimization.json: charged_rollouts is 20, optimization/rollouts.jsonl records 21; nothing was run")
}

// An incumbent edited by hand after its optimization.json was written:
// plan shows the optimize node refused, with the reason apply gives, and
// apply refuses it (exit 2), running nothing. The two make one check.
func TestOptimizerEditedIncumbentIsRefusedInPlanAsInApply(t *testing.T) {
	w := newOptWorkspace(t)
	const dir = "runs/simgepa/sums/single/sim/0"
	vars := []string{"budget=60", `method_args=["--batch","10","--warmup","10"]`}
	out, code := w.job(vars...)
	require.Equal(t, 0, code, out)
	var opt map[string]any
	w.readJSON(dir+"/optimization.json", &opt)
	require.Equal(t, true, opt["proposed"], "the method proposed an incumbent")
	system := filepath.Join(w.dir, dir, "optimization/incumbent/system.txt")
	f, err := os.OpenFile(system, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("extra\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	why := dir + "/optimization.json: incumbent_digest is " + opt["incumbent_digest"].(string) + ", the incumbent folder's content is sha256:"
	replace := `start the optimization over with --replace 'stage.optimize["simgepa/sums/single/sim/0"]'`

	args := w.applyArgs(nil, vars...)
	args[0] = "plan"
	b, _ := w.command(args...).CombinedOutput()
	plan := string(b)
	assert.Regexp(t, `! stage\.optimize\["simgepa/sums/single/sim/0"\] +refused: `+regexp.QuoteMeta(why), plan)
	assert.Contains(t, plan, replace)
	assert.NotContains(t, plan, "the node takes it as it is")

	out, code = w.job(vars...)
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, why)
	assert.Contains(t, out, replace)
}

// A finished job whose optimization.json was deleted: on a fresh cache
// the optimization is not run again over what it left (exit 2, no
// request sent, its folder and the later artifacts as they were), and the
// refusal names what is there and the --replace that starts it over,
// which sets the earlier optimization aside with its charged-rollout
// record and names it in job.json.
func TestOptimizerDeletedOptimizationJSONIsRefused(t *testing.T) {
	w := newOptWorkspace(t)
	const dir = "runs/simgepa/sums/single/sim/0"
	const addr = `stage.optimize["simgepa/sums/single/sim/0"]`
	out, code := w.job("budget=20")
	require.Equal(t, 0, code, out)
	opt := filepath.Join(w.dir, dir, "optimization")
	require.NoError(t, os.WriteFile(filepath.Join(opt, "MARK"), []byte("mark\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(w.dir, dir, "optimization.json")))
	ledger, err := os.ReadFile(filepath.Join(opt, "rollouts.jsonl"))
	require.NoError(t, err)
	before := w.requestCount()

	w.cache = filepath.Join(t.TempDir(), "fresh")
	out, code = w.job("budget=20")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "the out folder "+dir+" holds optimization/ (20 charged rollouts recorded in its rollouts.jsonl), selection.json, test.json, result.json but no optimization.json")
	assert.Contains(t, out, "is never restarted silently; nothing was run")
	assert.Contains(t, out, "--var topology=single --replace '"+addr+"'")
	assert.Equal(t, before, w.requestCount(), "no request reached the model")
	assert.FileExists(t, filepath.Join(opt, "MARK"))
	got, err := os.ReadFile(filepath.Join(opt, "rollouts.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, string(ledger), string(got))

	w.phase([]string{"replace=" + addr}, "budget=20")
	assert.FileExists(t, filepath.Join(w.dir, dir, "optimization.json"), "started over")
	assert.FileExists(t, filepath.Join(w.dir, dir, "optimization.attempt-1/MARK"))
	var job struct {
		EarlierAttempts []struct {
			Folder      string `json:"folder"`
			Interrupted bool   `json:"interrupted"`
			Charged     int    `json:"charged_rollouts"`
		} `json:"earlier_attempts"`
	}
	w.readJSON(dir+"/job.json", &job)
	require.Len(t, job.EarlierAttempts, 1)
	assert.Equal(t, dir+"/optimization.attempt-1", job.EarlierAttempts[0].Folder)
	assert.Equal(t, 20, job.EarlierAttempts[0].Charged)
	assert.False(t, job.EarlierAttempts[0].Interrupted)
}

// An out folder an apply is writing now (its lock held, its
// optimization's started marker there) holds a running optimization, not
// an interrupted one: plan does not show it refused, and another apply
// into it stops (exit 2) naming the apply that holds it, its header not
// counting it refused. Once the folder is free, the marker left is an
// interrupted optimization, and plan shows it refused.
func TestOptimizerFolderBeingWrittenIsNotCalledInterrupted(t *testing.T) {
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks: a held folder cannot be told from a free one")
	}
	w := newOptWorkspace(t)
	const dir = "runs/simgepa/sums/single/sim/0"
	require.NoError(t, os.MkdirAll(filepath.Join(w.dir, dir, "optimization"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, dir, "optimization/started.json"), []byte(`{"started":"2026-01-01T00:00:00Z"}`+"\n"), 0o644))
	lock := flock.New(filepath.Join(w.dir, dir, ".cairn-out.lock"))
	ok, err := lock.TryLock()
	require.NoError(t, err)
	require.True(t, ok)
	owner := fmt.Sprintf(`{"pid":%d,"host":"h","job":"simgepa/sums/single/sim/0","started":"2026-01-01T00:00:00Z"}`, os.Getpid())
	require.NoError(t, os.WriteFile(lock.Path(), []byte(owner+"\n"), 0o644))
	plan := func() string {
		args := w.applyArgs(nil, "budget=20")
		args[0] = "plan"
		b, _ := w.command(args...).CombinedOutput()
		return string(b)
	}

	out := plan()
	assert.NotContains(t, out, "refused", out)
	assert.NotContains(t, out, "was interrupted", out)
	out, code := w.job("budget=20")
	assert.Equal(t, 2, code, out)
	header, _, _ := strings.Cut(out, "\n")
	assert.NotContains(t, header, "refused")
	assert.Contains(t, out, fmt.Sprintf("the out folder %s is being written by the apply of job simgepa/sums/single/sim/0 (pid %d on h", dir, os.Getpid()))

	require.NoError(t, lock.Unlock())
	assert.Regexp(t, `! stage\.optimize\["simgepa/sums/single/sim/0"\] +refused: the optimization in `+dir+` was interrupted`, plan())
}
