package items

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/sim/simmodel"
)

// evaluator is an evaluation running in a child process (this test binary
// as the "evaluate" helper), as cairn apply would run it.
type evaluator struct {
	cmd    *exec.Cmd
	stderr io.ReadCloser
	stdout bytes.Buffer
}

func startEvaluator(t *testing.T, spec evalSpec) *evaluator {
	t.Helper()
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "spec.json")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	e := &evaluator{cmd: exec.Command(self(t)[0])}
	e.cmd.Env = helperEnvFor("evaluate", "CAIRN_ITEMS_EVAL="+path)
	e.cmd.Stdout = &e.stdout
	e.stderr, err = e.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, e.cmd.Start())
	return e
}

// finish reads the rest of the child's stderr, waits for it and returns its
// summary.
func (e *evaluator) finish(t *testing.T) Summary {
	t.Helper()
	rest, _ := io.ReadAll(e.stderr)
	err := e.cmd.Wait()
	require.NoError(t, err, "evaluator failed:\n%s", rest)
	var sum Summary
	require.NoError(t, json.Unmarshal(e.stdout.Bytes(), &sum), "summary: %s", e.stdout.String())
	return sum
}

func (f *fixture) spec(items []Item, userAgent string) evalSpec {
	return evalSpec{
		CacheDir:    f.dir,
		Items:       items,
		Endpoints:   []string{f.sim.URL},
		ModelID:     testModel,
		Bundle:      "sha256:seed-bundle",
		Worker:      self(f.t),
		Env:         helperEnvFor("chat", "WORKER_USER_AGENT="+userAgent),
		Replicas:    2,
		MaxInFlight: 4,
	}
}

var progressLine = regexp.MustCompile(`; items (\d+)/(\d+): `)

// TestResumeAfterKill9 kills the evaluating process with SIGKILL about half
// way through 2,000 items, evaluates again, and counts the requests the
// simulated model received: the second run asks for exactly the items the
// first left without a stored result, each once.
func TestResumeAfterKill9(t *testing.T) {
	const n = 2000
	f := newFixture(t, simmodel.Config{Latency: 2 * time.Millisecond})
	items := makeItems(n)

	first := startEvaluator(t, f.spec(items, "run-1"))
	sc := bufio.NewScanner(first.stderr)
	killed := false
	for sc.Scan() {
		m := progressLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if done, _ := strconv.Atoi(m[1]); done >= n/2 {
			require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
			killed = true
			break
		}
	}
	require.True(t, killed, "the first run ended before reaching half way")
	_ = first.cmd.Wait()

	require.NoError(t, f.store.Refresh())
	storedBefore := f.store.Len()
	require.Positive(t, storedBefore)
	require.Less(t, storedBefore, n, "the kill left items to do")
	missing := map[string]bool{}
	for _, it := range items {
		key, err := ItemKey("sha256:seed-bundle", it.Data, testModel, nil, "test-worker")
		require.NoError(t, err)
		if !f.store.Has(key) {
			missing[itemDigest(t, "", it)] = true
		}
	}
	require.Len(t, missing, n-storedBefore)

	second := startEvaluator(t, f.spec(items, "run-2"))
	sum := second.finish(t)
	assert.Equal(t, n, sum.Done)
	assert.Equal(t, storedBefore, sum.FromCache)
	assert.Equal(t, n-storedBefore, sum.Evaluated)
	assert.Zero(t, sum.Failed)

	resent := requestsPerItem(f.requests(), "run-2")
	assert.Len(t, resent, len(missing), "the second run asked for exactly the missing items")
	for digest, count := range resent {
		assert.True(t, missing[digest], "item %s had a result and was asked for again", digest)
		assert.Equal(t, 1, count, "item %s asked for %d times", digest, count)
	}
	stored := storedPerKey(t, f.dir)
	assert.Len(t, stored, n)
	for key, count := range stored {
		assert.Equal(t, 1, count, key)
	}
	t.Logf("killed with %d of %d stored; the second run sent %d requests", storedBefore, n, len(resent))
}

// TestConcurrentEvaluatorsShareItems runs two evaluating processes over the
// same items on one cache at once: the model is asked once per item.
func TestConcurrentEvaluatorsShareItems(t *testing.T) {
	const n = 1000
	f := newFixture(t, simmodel.Config{Latency: time.Millisecond})
	items := makeItems(n)
	a := startEvaluator(t, f.spec(items, "apply-a"))
	b := startEvaluator(t, f.spec(items, "apply-b"))
	sa, sb := a.finish(t), b.finish(t)

	for _, s := range []Summary{sa, sb} {
		assert.Equal(t, n, s.Done)
		assert.Equal(t, n, s.Evaluated+s.FromCache)
		assert.Zero(t, s.Failed)
	}
	assert.Equal(t, n, sa.Evaluated+sb.Evaluated, "each item evaluated by exactly one of them")

	reqs := f.requests()
	assert.Len(t, reqs, n)
	perItem := requestsPerItem(reqs, "")
	assert.Len(t, perItem, n)
	for digest, count := range perItem {
		assert.Equal(t, 1, count, digest)
	}
	stored := storedPerKey(t, f.dir)
	assert.Len(t, stored, n)
	for key, count := range stored {
		assert.Equal(t, 1, count, key)
	}
	t.Logf("apply a evaluated %d, apply b %d", sa.Evaluated, sb.Evaluated)
}

// TestSurvivorTakesOverClaimsOfKilledEvaluator kills one of two concurrent
// evaluators: the kernel drops its claims and the other finishes every item,
// still storing exactly one result per item.
func TestSurvivorTakesOverClaimsOfKilledEvaluator(t *testing.T) {
	const n = 1000
	f := newFixture(t, simmodel.Config{Latency: 2 * time.Millisecond})
	items := makeItems(n)
	a := startEvaluator(t, f.spec(items, "apply-a"))
	b := startEvaluator(t, f.spec(items, "apply-b"))
	sc := bufio.NewScanner(a.stderr)
	killed := false
	for sc.Scan() {
		if m := progressLine.FindStringSubmatch(sc.Text()); m != nil {
			if done, _ := strconv.Atoi(m[1]); done >= n/4 {
				require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
				killed = true
				break
			}
		}
	}
	require.True(t, killed, "apply a ended before it was killed")
	_ = a.cmd.Wait()
	sb := b.finish(t)
	assert.Equal(t, n, sb.Done)
	assert.Equal(t, n, sb.Evaluated+sb.FromCache)
	assert.Zero(t, sb.Failed)

	for digest, count := range requestsPerItem(f.requests(), "apply-b") {
		assert.Equal(t, 1, count, digest)
	}
	stored := storedPerKey(t, f.dir)
	assert.Len(t, stored, n)
	for key, count := range stored {
		assert.Equal(t, 1, count, key)
	}
	t.Logf("apply b evaluated %d and found %d stored by apply a", sb.Evaluated, sb.FromCache)
}

// A worker that starts a process in a session of its own, which keeps its
// stdout open (as Python's subprocess.Popen does), does not hold the
// evaluation until that process ends: its stdout is read stdoutDelay more
// once the worker exited, at the end of the items as when the evaluation
// stops (the stage's timeout, an interrupt).
func TestWorkerStdoutHeldByAHelper(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	for _, stop := range []bool{false, true} {
		name := map[bool]string{false: "items done", true: "evaluation stopped"}[stop]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, simmodel.Config{})
			pids := filepath.Join(t.TempDir(), "helpers")
			var env []string
			if stop {
				env = append(env, "HELPER_GATE="+filepath.Join(t.TempDir(), "never"))
			}
			cfg := f.config(makeItems(10), env...)
			cfg.Replicas = 1
			cfg.Worker = append([]string{"sh", "-c", `setsid sleep 20 2>/dev/null </dev/null & echo $! >> "$HELPER_PIDS"; exec "$@"`, "sh"}, cfg.Worker...)
			cfg.Env = append(cfg.Env, "HELPER_PIDS="+pids)
			t.Cleanup(func() {
				b, _ := os.ReadFile(pids)
				for _, l := range bytes.Fields(b) {
					if pid, err := strconv.Atoi(string(l)); err == nil {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if stop {
				time.AfterFunc(300*time.Millisecond, cancel)
			}
			start := time.Now()
			sum, err := Evaluate(ctx, cfg)
			took := time.Since(start)
			if stop {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
				assert.Equal(t, 10, sum.Evaluated)
			}
			assert.Less(t, took, 10*time.Second, "the evaluation waited for the worker's helper")
			assert.Contains(t, f.diag.String(), "a process it started holds its stdout open")
		})
	}
}
