package engine

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/engine/runlog"
	"github.com/cairn-run/cairn/engine/store"
	"github.com/cairn-run/cairn/events"
)

// serveEvents records an apply's events, and calls on (if set) with each,
// in order.
type serveEvents struct {
	mu  sync.Mutex
	all []events.Event
	on  func(events.Event)
}

func (s *serveEvents) Emit(e events.Event) {
	s.mu.Lock()
	s.all = append(s.all, e)
	s.mu.Unlock()
	if s.on != nil {
		s.on(e)
	}
}

func (s *serveEvents) ended(node string) *events.NodeEnded {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.all {
		if x, ok := e.(*events.NodeEnded); ok && x.Node == node {
			return x
		}
	}
	return nil
}

func (s *serveEvents) serve(status string) []*events.ServeEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*events.ServeEvent
	for _, e := range s.all {
		if x, ok := e.(*events.ServeEvent); ok && x.Status == status {
			out = append(out, x)
		}
	}
	return out
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// servePipeline is a CPU serve stage "m" running server (a shell
// script), ready once its process runs (no check), and a command stage
// "use" of its endpoints running consumer; extra goes in the serve stage.
func servePipeline(t *testing.T, server, consumer, extra string) string {
	return fmt.Sprintf(`
pipeline "t" {}
stage "serve" "m" {
  run   = ["sh", "-c", %q]
  model = "m"
  port  = %d
  ready = { health = "", models = false, completion = false }
  kill_grace = "1s"
%s}
stage "command" "use" {
  run     = ["sh", "-c", %q]
  env     = { EP = stage.m.endpoints[0] }
  outputs = ["used.txt"]
}
`, server, freePort(t), extra, consumer)
}

// A serve node's duration is its whole run, from its start until its
// servers stopped, in node_ended (and apply's line) as in the journal's
// finished record that cairn show and trace.tsv read; not the time it
// took to get ready (docs/events.md: its command's own run time).
func TestServeDurationIsItsWholeRun(t *testing.T) {
	w := newWorkspace(t, servePipeline(t, "exec sleep 600", "sleep 0.3; echo ok > used.txt", ""))
	ev := &serveEvents{}
	r := w.apply(ApplyOptions{Events: ev})
	require.Equal(t, 0, r.res.Failed, r.out)
	m, use := ev.ended("stage.m"), ev.ended("stage.use")
	require.NotNil(t, m, r.out)
	require.NotNil(t, use, r.out)
	assert.GreaterOrEqual(t, m.DurationS, use.DurationS, "the servers ran all the while their consumer did")
	es, err := runlog.Read(filepath.Join(w.Cache, "runs", r.res.RunID))
	require.NoError(t, err)
	var finished *runlog.Entry
	for i, e := range es {
		if e.T == runlog.Finished && e.Node == "stage.m" {
			finished = &es[i]
		}
	}
	require.NotNil(t, finished)
	assert.InDelta(t, finished.Duration, m.DurationS, 0.001, "node_ended says what the journal (cairn show, trace.tsv) says")
}

// A replica restarted after a death is journaled ready with its new
// process's pid, not the dead one's (docs/serve.md: serve records carry
// the pid).
func TestServeRestartedReplicaIsReadyWithItsNewPid(t *testing.T) {
	// The first process dies once the consumer says so; the restarted one
	// serves. The consumer ends once the replica is back (the test says
	// so on its second ready).
	server := `if [ -f died ]; then exec sleep 600; fi; while [ ! -f kill ]; do sleep 0.02; done; touch died; exit 3`
	consumer := `touch kill; while [ ! -f back ]; do sleep 0.02; done; echo ok > used.txt`
	w := newWorkspace(t, servePipeline(t, server, consumer, ""))
	ev := &serveEvents{}
	readies := 0
	ev.on = func(e events.Event) {
		if x, ok := e.(*events.ServeEvent); ok && x.Status == "ready" {
			if readies++; readies == 2 {
				w.Write("back", "")
			}
		}
	}
	r := w.apply(ApplyOptions{Events: ev})
	require.Equal(t, 0, r.res.Failed, r.out)
	var pids []int
	for _, e := range ev.all {
		if x, ok := e.(*events.ProcessStarted); ok && x.Node == "stage.m" && x.JobID != "" {
			pid, err := strconv.Atoi(x.JobID)
			require.NoError(t, err)
			pids = append(pids, pid)
		}
	}
	ready := ev.serve("ready")
	require.Len(t, pids, 2, r.out)
	require.Len(t, ready, 2, r.out)
	assert.Equal(t, pids[0], ready[0].PID)
	assert.Equal(t, pids[1], ready[1].PID, "the restarted replica's ready names its own process")
	es, err := runlog.Read(filepath.Join(w.Cache, "runs", r.res.RunID))
	require.NoError(t, err)
	var journaled []int
	for _, e := range es {
		if e.T == runlog.Serve && e.Status == "ready" {
			journaled = append(journaled, e.PID)
		}
	}
	assert.Equal(t, pids, journaled)
}

// A serve stage's timeout ends its node with class timeout: the replica
// killed then is not restarted as after a death (docs/language.md:
// timeout, class timeout); the failed node's node_ended names its
// replicas' logs.
func TestServeTimeoutEndsTheNodeWithClassTimeout(t *testing.T) {
	server := `echo serving >&2; exec sleep 600`
	consumer := `while [ ! -f over ]; do sleep 0.02; done; echo ok > used.txt`
	w := newWorkspace(t, servePipeline(t, server, consumer, `  timeout = "1s"
`))
	ev := &serveEvents{}
	ev.on = func(e events.Event) {
		if x, ok := e.(*events.NodeEnded); ok && x.Node == "stage.m" {
			w.Write("over", "")
		}
	}
	r := w.apply(ApplyOptions{Events: ev})
	m := ev.ended("stage.m")
	require.NotNil(t, m, r.out)
	assert.Equal(t, "failed", m.Status)
	assert.Equal(t, "timeout", m.Class, r.out)
	assert.Contains(t, m.Message, "ended at its timeout of 1s")
	assert.Empty(t, ev.serve("restarting"), "a replica is not restarted at the stage's timeout")
	assert.Contains(t, r.out, "stage.m  failed (timeout): ended at its timeout of 1s")
}

// A serve node that failed names its replicas' logs that hold something in its
// node_ended event and in apply's failure (docs/events.md: logs).
func TestServeFailedNodeNamesItsReplicasLogs(t *testing.T) {
	// It never gets ready: its port stays closed.
	pipeline := strings.Replace(servePipeline(t, "echo no model here >&2; exec sleep 600", "echo ok > used.txt", `  start_timeout = "1s"
`), `health = ""`, `health = "/health"`, 1)
	w := newWorkspace(t, pipeline)
	ev := &serveEvents{}
	r := w.apply(ApplyOptions{Events: ev})
	m := ev.ended("stage.m")
	require.NotNil(t, m, r.out)
	assert.Equal(t, "failed", m.Status)
	// Its stdout, which it wrote nothing to, is not named.
	require.Len(t, m.Logs, 1, r.out)
	assert.Equal(t, "replica1.err", filepath.Base(m.Logs[0]))
	b, err := os.ReadFile(m.Logs[0])
	require.NoError(t, err)
	assert.Equal(t, "no model here\n", string(b))
	require.Len(t, r.res.Failures, 1)
	assert.Equal(t, m.Logs, r.res.Failures[0].Logs)
}

// A serve stage given an endpoint that is no URL is refused when the
// pipeline is loaded, at the attribute, in its own words, without the
// evaluation package's name.
func TestServeBadEndpointMessage(t *testing.T) {
	w := newWorkspace(t, strings.Replace(modelCacheOfAServeStage, `"http://127.0.0.1:9/v1"`, `"notaurl"`, 1))
	l := w.Load()
	diags := l.Graph.CheckStages()
	require.True(t, diags.HasErrors())
	d := diags.Errs()[0].(*hcl.Diagnostic)
	assert.Equal(t, "Invalid endpoints", d.Summary)
	assert.Contains(t, d.Detail, `endpoint "notaurl" from the endpoints attribute is not an http(s) base URL`)
	assert.NotContains(t, d.Detail, "items:")
	require.NotNil(t, d.Subject)
	assert.Equal(t, "pipeline.hcl", filepath.Base(d.Subject.Filename))
}

// mixedEndpointsPipeline is serve stages "a" and "b" (servers someone
// else runs, two weights of one model), an evaluate stage "ev" and a
// command stage "ask" whose model cache reads endpoints, both given
// endpoints (one expression).
func mixedEndpointsPipeline(endpoints string) string {
	return fmt.Sprintf(`
pipeline "t" {}
variable "serve" { default = true }
stage "serve" "a" {
  run       = ["srv", "--port", "{port}"]
  model     = "sim"
  weights   = "sha256:aaaaaaaaaaaaaaaaaaaa"
  endpoints = ["http://127.0.0.1:19500/v1"]
}
stage "serve" "b" {
  run       = ["srv", "--port", "{port}", "--wrong-rate", "1"]
  model     = "sim"
  weights   = "sha256:bbbbbbbbbbbbbbbbbbbb"
  endpoints = ["http://127.0.0.1:19600/v1"]
}
stage "evaluate" "ev" {
  worker    = ["python3", "w.py"]
  items     = "items.jsonl"
  model     = "sim"
  endpoints = %[1]s
  scores    = "out/ev.jsonl"
}
stage "command" "ask" {
  run         = ["true"]
  model_cache = { endpoints = %[1]s }
}
`, endpoints)
}

// An endpoints list that mixes a serve stage's endpoints with another
// server's (another serve stage's, a plain URL, a variable's) is refused
// when the pipeline is loaded, at the expression, for evaluate stages and
// model caches alike: every result would be keyed by the one serve
// stage, and a pipeline reading it alone would take the other servers'
// answers from the store. One stage's endpoints, plain URLs alone, or a
// conditional choosing between them, are fine.
func TestServeMixedEndpointsRefused(t *testing.T) {
	for expr, why := range map[string]string{
		`concat(stage.a.endpoints, stage.b.endpoints)`:             "endpoints reads the endpoints of stage.a and stage.b.",
		`concat(stage.a.endpoints, ["http://127.0.0.1:18600/v1"])`: "endpoints reads the endpoints of stage.a and a plain URL.",
		`[stage.a.endpoints[0], "http://127.0.0.1:18600/v1"]`:      "endpoints reads the endpoints of stage.a and a plain URL.",
		`concat(stage.b.endpoints, var.eps)`:                       "endpoints reads the endpoints of stage.b and var.eps.",
	} {
		src := strings.Replace(mixedEndpointsPipeline(expr), `pipeline "t" {}`, "pipeline \"t\" {}\nvariable \"eps\" { default = [] }", 1)
		w := newWorkspace(t, src)
		diags := w.Load().Graph.CheckStages()
		var mixed []*hcl.Diagnostic
		for _, d := range diags {
			if d.Summary == "Endpoints of more than one server" {
				mixed = append(mixed, d)
			}
		}
		require.Len(t, mixed, 2, "%s: %s", expr, diags)
		var at []string
		for _, d := range mixed {
			assert.True(t, strings.HasPrefix(d.Detail, why), d.Detail)
			assert.Contains(t, d.Detail, "one serve stage's endpoints alone, or plain URLs alone")
			require.NotNil(t, d.Subject)
			at = append(at, fmt.Sprintf("%s:%d:%d", filepath.Base(d.Subject.Filename), d.Subject.Start.Line, d.Subject.Start.Column))
		}
		// The evaluate stage's endpoints, and the model cache's.
		assert.ElementsMatch(t, []string{"pipeline.hcl:21:15", "pipeline.hcl:26:31"}, at, expr)
	}
	for _, expr := range []string{`stage.a.endpoints`, `["http://h1:8000/v1", "http://h2:8000/v1"]`, `var.serve ? stage.a.endpoints : ["http://h1:8000/v1"]`, `[stage.b.endpoints[0]]`} {
		w := newWorkspace(t, mixedEndpointsPipeline(expr))
		for _, d := range w.Load().Graph.CheckStages() {
			assert.NotEqual(t, "Endpoints of more than one server", d.Summary, "%s: %s", expr, d.Detail)
		}
	}
}

// servePort is the port servePipeline gave its serve stage.
func servePort(t *testing.T, pipeline string) int {
	t.Helper()
	m := regexp.MustCompile(`port  = (\d+)`).FindStringSubmatch(pipeline)
	require.NotNil(t, m)
	port, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return port
}

// A replica is ready only when the server answering on its port is its
// own: another program that took the port after it was checked (here
// the test's HTTP server, started once the replica's process has) fails
// the replica with class setup, naming that program and the port, and
// its consumers do not run (Linux: /proc tells who listens).
func TestServeNotReadyOnAnotherProgramsPort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc tells who listens on a port on Linux only")
	}
	pipeline := func(ready string) string {
		return strings.Replace(servePipeline(t, "exec sleep 600", "echo ok > used.txt", `  start_timeout = "60s"
`), `ready = { health = "", models = false, completion = false }`, ready, 1)
	}
	w, port, r, ev := applyWithAnotherProgramOnThePort(t, pipeline(`ready = { health = "/health", models = false, completion = false }`))
	m := ev.ended("stage.m")
	require.NotNil(t, m, r.out)
	assert.Equal(t, "failed", m.Status)
	assert.Equal(t, "setup", m.Class, r.out)
	assert.Contains(t, m.Message, fmt.Sprintf("replica 1 (port %d) did not get ready: port %d is held by another program, pid %d (", port, port, os.Getpid()))
	assert.Empty(t, ev.serve("ready"), "never ready against another program's server")
	assert.NoFileExists(t, filepath.Join(w.Root, "used.txt"))

	// own_port = false: a port another process forwards (a container
	// runtime's proxy) is the server's all the same.
	w, _, r, ev = applyWithAnotherProgramOnThePort(t, pipeline(`ready = { health = "/health", models = false, completion = false, own_port = false }`))
	require.Equal(t, 0, r.res.Failed, r.out)
	assert.Len(t, ev.serve("ready"), 1, r.out)
	assert.FileExists(t, filepath.Join(w.Root, "used.txt"))
}

// applyWithAnotherProgramOnThePort applies pipeline (servePipeline's)
// while the test's HTTP server, started once the replica's process has,
// holds the serve stage's port.
func applyWithAnotherProgramOnThePort(t *testing.T, pipeline string) (*workspace, int, applyRun, *serveEvents) {
	port := servePort(t, pipeline)
	w := newWorkspace(t, pipeline)
	ev := &serveEvents{}
	var once sync.Once
	ev.on = func(e events.Event) {
		if x, ok := e.(*events.ProcessStarted); ok && x.Node == "stage.m" {
			once.Do(func() {
				ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
				if !assert.NoError(t, err) {
					return
				}
				srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
				srv.Listener = ln
				srv.Start()
				t.Cleanup(srv.Close)
			})
		}
	}
	return w, port, w.apply(ApplyOptions{Events: ev}), ev
}

// A replica that dies while another program holds its port is not
// restarted onto it (it would fail to bind, or answer as that program):
// the node fails, naming the program and the port.
func TestServeNotRestartedOntoATakenPort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc tells who listens on a port on Linux only")
	}
	server := `while [ ! -f kill ]; do sleep 0.02; done; exit 3`
	consumer := `while [ ! -f gone ]; do sleep 0.02; done; echo ok > used.txt`
	pipeline := servePipeline(t, server, consumer, "")
	port := servePort(t, pipeline)
	w := newWorkspace(t, pipeline)
	ev := &serveEvents{}
	ev.on = func(e events.Event) {
		x, ok := e.(*events.ServeEvent)
		switch {
		case ok && x.Status == "ready":
			// The replica listens on nothing: another program takes its
			// port, then the replica dies.
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if assert.NoError(t, err) {
				t.Cleanup(func() { ln.Close() })
			}
			w.Write("kill", "")
		case ok && x.Status == "failed":
			w.Write("gone", "")
		}
	}
	r := w.apply(ApplyOptions{Events: ev})
	assert.Empty(t, ev.serve("restarting"), r.out)
	failed := ev.serve("failed")
	require.Len(t, failed, 1, r.out)
	want := fmt.Sprintf("replica 1 (port %d) died (exited with status 3), and port %d is held by another program, pid %d (", port, port, os.Getpid())
	assert.Contains(t, failed[0].Message, want)
	m := ev.ended("stage.m")
	require.NotNil(t, m, r.out)
	assert.Equal(t, "failed", m.Status)
	assert.Contains(t, m.Message, want)
}

// instanceEndpointsPipeline is a serve stage "a" with two instances, x and
// y (servers someone else runs, two weights of one model), and a command
// stage "ask" whose model cache reads endpoints; var.k has no value.
func instanceEndpointsPipeline(endpoints string) string {
	return fmt.Sprintf(`
pipeline "t" {}
variable "k" { type = string }
stage "serve" "a" {
  for_each  = { x = "aaaaaaaaaaaaaaaaaaaa", y = "bbbbbbbbbbbbbbbbbbbb" }
  run       = ["srv", "--port", "{port}"]
  model     = "sim"
  weights   = "sha256:${each.value}"
  endpoints = [each.key == "x" ? "http://127.0.0.1:19500/v1" : "http://127.0.0.1:19600/v1"]
}
stage "command" "ask" {
  for_each    = toset(["x", "y"])
  run         = ["true"]
  model_cache = { endpoints = %s }
}
`, endpoints)
}

// mixedEndpoints are the "Endpoints of more than one server" errors of
// diags, as "FILE:LINE:COL: DETAIL'S FIRST SENTENCE".
func mixedEndpoints(diags hcl.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		if d.Summary == "Endpoints of more than one server" && d.Subject != nil {
			first, _, _ := strings.Cut(d.Detail, ". ")
			out = append(out, fmt.Sprintf("%s:%d:%d: %s", filepath.Base(d.Subject.Filename), d.Subject.Start.Line, d.Subject.Start.Column, first))
		}
	}
	return out
}

// Two instances of one serve stage are two servers, as two serve stages
// are: an endpoints list that mixes their endpoints is refused at the
// list, by validate where the instances are known, by plan (and so
// apply) where a key waits for a variable's value; one instance's
// endpoints, its own instance's (stage.a[each.key]) among them, are fine.
func TestServeMixedInstanceEndpointsRefused(t *testing.T) {
	const at = "pipeline.hcl:14:31: "
	for expr, want := range map[string][]string{
		`concat(stage.a["x"].endpoints, stage.a["y"].endpoints)`:      {at + `endpoints reads the endpoints of stage.a["x"] and stage.a["y"]`},
		`flatten([for s in stage.a : s.endpoints])`:                   {at + `endpoints reads the endpoints of stage.a["x"] and stage.a["y"]`},
		`concat(stage.a[each.key].endpoints, stage.a["x"].endpoints)`: {at + `endpoints reads the endpoints of stage.a["y"] and stage.a["x"]`},
		`concat(stage.a[var.k].endpoints, ["http://h1:8000/v1"])`:     {at + `endpoints reads the endpoints of an instance of stage.a and a plain URL`},
		`stage.a[each.key].endpoints`:                                 nil,
		`stage.a["y"].endpoints`:                                      nil,
		`concat(stage.a["x"].endpoints, stage.a[var.k].endpoints)`:    nil, // which k: told at plan
	} {
		w := newWorkspace(t, instanceEndpointsPipeline(expr))
		l, diags := plan.Load(plan.LoadOptions{Path: filepath.Join(w.Root, "pipeline.hcl"), Root: w.Root, Validate: true})
		require.False(t, diags.HasErrors(), "%s: %s", expr, diags)
		assert.Equal(t, want, mixedEndpoints(l.Graph.CheckStages()), "validate: %s", expr)
	}

	// A key known only once var.k has a value: plan refuses the list that
	// mixes, and takes the one that does not.
	w := newWorkspace(t, instanceEndpointsPipeline(`concat(stage.a["x"].endpoints, stage.a[var.k].endpoints)`))
	c, err := store.Open(w.Cache, store.Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	_, diags := plan.Make(w.Load("k=y").Graph, c, plan.Options{})
	assert.Equal(t, []string{`pipeline.hcl:14:31: endpoints reads the endpoints of stage.a["x"] and stage.a["y"]`}, mixedEndpoints(diags))
	_, diags = plan.Make(w.Load("k=x").Graph, c, plan.Options{})
	assert.False(t, diags.HasErrors(), "%s", diags)
}

// The reflection model's endpoints are one server's too: an optimize
// stage's key holds the serve stage its reflection_base_url reads, so a
// list that mixes it with another serve stage's, or with a plain URL, is
// refused at the attribute, as an endpoints list is.
func TestServeMixedReflectionEndpointsRefused(t *testing.T) {
	optimize := func(refl string) string {
		return mixedEndpointsPipeline(`stage.a.endpoints`) + fmt.Sprintf(`
stage "optimize" "opt" {
  run                 = ["python3", "m.py"]
  out                 = "out/opt"
  budget              = 10
  bundle              = ["bundle/"]
  worker              = ["python3", "w.py", "{bundle}/system.txt"]
  items               = "train.jsonl"
  model               = "sim"
  endpoints           = stage.a.endpoints
  reflection_model    = "sim"
  reflection_base_url = %s
}
`, refl)
	}
	const at = "pipeline.hcl:38:25: "
	for expr, want := range map[string][]string{
		`concat(stage.a.endpoints, stage.b.endpoints)`:             {at + "reflection_base_url reads the endpoints of stage.a and stage.b"},
		`concat(["http://127.0.0.1:18200/v1"], stage.b.endpoints)`: {at + "reflection_base_url reads the endpoints of stage.b and a plain URL"},
		`stage.b.endpoints`:           nil,
		`"http://127.0.0.1:18200/v1"`: nil,
		`var.serve ? stage.b.endpoints : ["http://127.0.0.1:18200/v1"]`: nil,
	} {
		w := newWorkspace(t, optimize(expr))
		assert.Equal(t, want, mixedEndpoints(w.Load().Graph.CheckStages()), expr)
	}
}
