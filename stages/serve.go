package stages

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/stages/items"
)

// Serve starts model servers (vLLM, SGLang, llama.cpp or anything with an
// OpenAI-compatible API) on leased GPUs, proves each replica ready, shares
// their endpoints with the stages that consume them and stops them once
// none still needs them (docs/serve.md).
//
//	stage "serve" "task_model" {
//	  run      = ["vllm", "serve", "Qwen/Qwen3.5-9B", "--port", "{port}"]
//	  model    = "Qwen/Qwen3.5-9B"
//	  weights  = "/models/qwen3.5-9b"   # a folder or file, or "sha256:..."
//	  gpus     = 1                      # per replica
//	  replicas = 2                      # default: one per free GPU set
//	  port     = 8000                   # replicas on consecutive free ports
//	}
//
// Consumers take endpoints = stage.task_model.endpoints.
type Serve struct{}

func init() { Register(Serve{}) }

// Name implements Kind.
func (Serve) Name() string { return "serve" }

// Version implements Kind.
func (Serve) Version() int { return 1 }

// PathAttrs implements PathLinker: weights a stage writes (a fine-tuned
// checkpoint) are served once it has written them.
func (Serve) PathAttrs() []PathAttr { return servePaths }

var servePaths = []PathAttr{{Attr: "weights"}}

// Schema implements Kind.
func (Serve) Schema() *hcl.BodySchema {
	return &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "run", Required: true},
		{Name: "model", Required: true},
		{Name: "weights"},
		{Name: "replicas"},
		{Name: "max_replicas"},
		{Name: "port"},
		{Name: "host"},
		{Name: "ready"},
		{Name: "start_timeout"},
		{Name: "restarts"},
		{Name: "endpoints"},
		{Name: "gpu_free_wait"},
	}}
}

// KeyExcluded implements KeyExcluder: a serve node is never cached; what
// its consumers' keys hold of it is its Identity.
func (Serve) KeyExcluded() []string {
	return []string{"replicas", "max_replicas", "port", "host", "ready", "start_timeout", "restarts", "endpoints", "gpu_free_wait"}
}

// Defaults of the serve kind.
const (
	DefaultServePort         = 8000
	DefaultServeStartTimeout = 10 * time.Minute
	DefaultServeRestarts     = 1
	DefaultServeMaxReplicas  = 8
	DefaultHealthPath        = "/health"
	// DefaultGPUFreeWait bounds the wait, after the servers stopped, for
	// their GPUs' memory to show freed before they go back to the pool.
	DefaultGPUFreeWait = 60 * time.Second
	// ServeHealthInterval is how often a ready replica's health is checked.
	ServeHealthInterval = time.Second
	// ServeHealthTimeout is how long a health check waits for its answer:
	// a replica that is alive but hung fails it then.
	ServeHealthTimeout = 5 * time.Second
	// ServeHungRestart caps how long a replica that fails its health
	// checks stays out of the rotation before it is restarted
	// (start_timeout when shorter).
	ServeHungRestart = 30 * time.Second
)

// readyCheck says how a replica proves it is ready.
type readyCheck struct {
	Health     string `json:"health"`     // path answered 200 ("" to skip)
	Models     *bool  `json:"models"`     // GET /v1/models lists the model
	Completion *bool  `json:"completion"` // one chat completion returns
	// OwnPort: the listener on the port is the replica's process tree's
	// (false for a server whose port another process forwards, such as
	// a container runtime's proxy).
	OwnPort *bool `json:"own_port"`
}

type serveSpec struct {
	argv         []string
	model        string
	weights      string // a path
	digest       string // a digest the user gives
	replicas     int    // 0: one per free GPU set
	maxReplicas  int
	gpus         int // per replica
	port         int
	host         string
	ready        readyCheck
	startTimeout time.Duration
	restarts     int
	gpuFreeWait  time.Duration
	known        bool
	// external: servers someone else runs (the endpoints attribute): none
	// is started, and these base URLs are published as they are.
	external    []string
	externalSet bool
}

func decodeServe(n *Node) (serveSpec, hcl.Diagnostics) {
	s := serveSpec{port: DefaultServePort, host: "127.0.0.1", startTimeout: DefaultServeStartTimeout, gpuFreeWait: DefaultGPUFreeWait, restarts: DefaultServeRestarts, maxReplicas: DefaultServeMaxReplicas, gpus: n.Common.GPUs}
	s.ready.Health = DefaultHealthPath
	var diags hcl.Diagnostics
	bad := func(attr, detail string) {
		diags = append(diags, Diag("Invalid "+attr, detail, n.Range(attr))...)
	}
	s.known = true
	for _, a := range []string{"run", "model", "weights", "replicas", "port"} {
		if v, ok := n.Args[a]; ok && !whollyKnown(v) {
			s.known = false
		}
	}
	if v, ok := n.Args["run"]; ok && whollyKnown(v) && !v.IsNull() {
		argv, err := StringList(v)
		switch {
		case err != nil || v.Type() == cty.String:
			bad("run", "run is the server's argument list, like [\"vllm\", \"serve\", \"MODEL\", \"--port\", \"{port}\"]; {port}, {replica}, {model} and {gpus} are replaced for each replica.")
		case len(argv) == 0:
			bad("run", "run must name the server's program: it is empty.")
		default:
			s.argv = argv
			for i, a := range argv {
				diags = append(diags, checkArg(i, a, n.Range("run"))...)
			}
		}
	}
	if m, ok, d := StringArg(n, "model"); ok {
		s.model = m
	} else {
		diags = append(diags, d...)
	}
	if w, ok, d := StringArg(n, "weights"); ok {
		if digest, path, err := weightsRef(w); err != nil {
			bad("weights", "weights "+err.Error()+".")
		} else {
			s.digest, s.weights = digest, path
		}
	} else {
		diags = append(diags, d...)
	}
	if h, ok, d := StringArg(n, "host"); ok {
		s.host = h
	} else {
		diags = append(diags, d...)
	}
	whole := func(attr string, min, max int) (int, bool) {
		v, ok := n.Args[attr]
		if !ok || !whollyKnown(v) || v.IsNull() {
			return 0, false
		}
		i, ok := wholeNumber(v)
		if !ok || i < min || i > max {
			bad(attr, fmt.Sprintf("%s must be a whole number from %d to %d.", attr, min, max))
			return 0, false
		}
		return i, true
	}
	if r, ok := whole("replicas", 1, 1024); ok {
		s.replicas = r
	}
	if r, ok := whole("max_replicas", 1, 1024); ok {
		s.maxReplicas = r
	}
	if p, ok := whole("port", 1, 65535); ok {
		s.port = p
	}
	if r, ok := whole("restarts", 0, 100); ok {
		s.restarts = r
	}
	if _, set := n.Args["port"]; set && s.port > 0 {
		// The replicas take consecutive ports: the last must exist.
		count, what := s.replicas, "replicas"
		if count == 0 {
			count, what = s.maxReplicas, "max_replicas"
			if s.gpus == 0 {
				count, what = 1, ""
			}
		}
		if last := s.port + count - 1; last > 65535 {
			bad("port", fmt.Sprintf("port %d and %s = %d need ports up to %d; the last port is 65535: take a lower port (at most %d), or fewer replicas.", s.port, what, count, last, 65535-count+1))
		}
	}
	positive := func(attr string, into *time.Duration) {
		v, ok := n.Args[attr]
		if !ok || !whollyKnown(v) || v.IsNull() {
			return
		}
		v, _ = v.UnmarkDeep()
		d, err := durationValue(v)
		if err == nil && d <= 0 {
			err = errors.New(attr + " must be positive")
		}
		if err != nil {
			bad(attr, strings.Replace(err.Error(), "item_timeout", attr, 1)+".")
		} else {
			*into = d
		}
	}
	positive("start_timeout", &s.startTimeout)
	positive("gpu_free_wait", &s.gpuFreeWait)
	if v, ok := n.Args["endpoints"]; ok && whollyKnown(v) && !v.IsNull() {
		v, _ = v.UnmarkDeep()
		var list []string
		var err error
		if v.Type() == cty.String {
			list = strings.Split(v.AsString(), ",")
		} else {
			list, err = StringList(v)
		}
		if _, perr := items.ParseEndpoints(list, func(string) string { return "" }); err == nil && perr != nil && !errors.Is(perr, items.ErrNoEndpoints) {
			err = perr // an endpoint that is no URL, refused now
		}
		if err != nil {
			bad("endpoints", fmt.Sprintf("endpoints is a list of base URLs of servers you run (or one comma-separated string): %s.", err))
		} else {
			s.externalSet = true
			for _, e := range list {
				if e = strings.TrimSpace(e); e != "" {
					s.external = append(s.external, e)
				}
			}
		}
	}
	jsonAttr(n, "ready", &s.ready, &diags, `an object like { health = "/health", models = true, completion = true, own_port = true }`)
	if s.ready.Health != "" && !strings.HasPrefix(s.ready.Health, "/") {
		bad("ready", fmt.Sprintf("ready.health is a path on the server, starting with \"/\" (like \"/health\"), not %q.", s.ready.Health))
	}
	return s, diags
}

// weightsRef reads w, the weights a model is served with (a serve
// stage's weights, a model_cache's): a digest, as given, or the path of
// the weights' folder or file, cleaned, which is digested by content. A
// value that looks like a digest and is not one ("sha256:XYZ", hex in
// upper case) is neither, as is "": err says what each is.
func weightsRef(w string) (digest, path string, err error) {
	alg, _, _ := strings.Cut(w, ":")
	switch {
	case isDigest(w):
		return w, "", nil
	case alg == "sha256" || alg == "sha512" || alg == "blake3":
		return "", "", fmt.Errorf("%q is neither a digest nor a path: a digest is %s: and its lowercase hex digits, 16 or more (\"sha256:3f1c...\"); a path names the weights' folder or file", w, alg)
	case w == "":
		return "", "", errors.New(`"" is neither a digest nor a path: give the weights' digest ("sha256:3f1c...") or the path of their folder or file`)
	}
	return "", filepath.Clean(w), nil
}

func isDigest(w string) bool {
	alg, hexPart, ok := strings.Cut(w, ":")
	if !ok || (alg != "sha256" && alg != "sha512" && alg != "blake3") || len(hexPart) < 16 {
		return false
	}
	for _, c := range hexPart {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// Check implements Kind.
func (Serve) Check(n *Node) hcl.Diagnostics {
	_, diags := decodeServe(n)
	return diags
}

// WeightsPath implements Service.
func (Serve) WeightsPath(n *Node) string {
	s, _ := decodeServe(n)
	return s.weights
}

// ServeIdentity is what a serve node's consumers' keys hold of it, and the
// fields of its result that say what it serves.
type ServeIdentity struct {
	Model string `json:"model"`
	// Weights is the weights' digest: of the files the weights attribute
	// names, or the digest it gives; "" when it names none.
	Weights string `json:"weights"`
	// Server is the digest of the server's command line as the stage
	// writes it, its {port}, {replica}, {model}, {gpus} and {host} as
	// placeholders, not their values: a flag that changes answers
	// (--dtype, --quantization, --max-model-len) changes it. "" for
	// servers someone else runs.
	Server string `json:"server,omitempty"`
	// Files is the digest of the stage's inputs (Node.FilesDigest): the
	// files the server reads besides its weights, a launcher script, a
	// chat template or an adapter folder, by content. "" when there are
	// none, and for servers someone else runs.
	Files string `json:"files,omitempty"`
	// ModelKey is the item key's model field of the evaluations the node
	// serves: the model id, the weights' digest after "@" when known, the
	// server's after ";server=", and the files' after ";files=" when
	// there are any.
	ModelKey string `json:"model_key"`
}

// ServeResult is a serve node's result: stage.NAME.result, and
// stage.NAME.endpoints is its endpoints.
type ServeResult struct {
	ServeIdentity
	Endpoints []string `json:"endpoints"`
	Ports     []int    `json:"ports"`
	GPUs      [][]int  `json:"gpus"`
	// Started is false when no consumer needed the service.
	Started bool `json:"started"`
}

func serveIdentity(n *Node) ServeIdentity {
	s, _ := decodeServe(n)
	id := ServeIdentity{Model: s.model, Weights: s.digest}
	if n.WeightsDigest != "" {
		id.Weights = n.WeightsDigest
	}
	if !s.externalSet && len(s.argv) > 0 {
		h := sha256.New()
		for _, a := range s.argv {
			h.Write([]byte(a))
			h.Write([]byte{0})
		}
		id.Server = "sha256:" + hex.EncodeToString(h.Sum(nil))
		id.Files = n.FilesDigest
	}
	id.ModelKey = id.Model
	if id.Weights != "" {
		id.ModelKey += "@" + id.Weights
	}
	if id.Server != "" {
		id.ModelKey += ";server=" + id.Server
	}
	if id.Files != "" {
		id.ModelKey += ";files=" + id.Files
	}
	return id
}

// Identity implements Service.
func (Serve) Identity(n *Node) json.RawMessage {
	b, _ := json.Marshal(ServeResult{ServeIdentity: serveIdentity(n), Endpoints: []string{}, Ports: []int{}, GPUs: [][]int{}})
	return b
}

// GPUFreeWait implements Service.
func (Serve) GPUFreeWait(n *Node) time.Duration {
	s, _ := decodeServe(n)
	return s.gpuFreeWait
}

// ServesElsewhere implements ElsewhereServer: a node given endpoints
// (not null) publishes servers run elsewhere and starts nothing.
func (Serve) ServesElsewhere(n *Node) bool {
	v, ok := n.Args["endpoints"]
	return ok && whollyKnown(v) && !v.IsNull()
}

// LeaseGPUs implements Service.
func (Serve) LeaseGPUs(n *Node, free int) int {
	s, _ := decodeServe(n)
	if s.gpus == 0 || s.externalSet {
		return 0
	}
	r := s.replicas
	if r == 0 {
		r = max(1, min(free/s.gpus, s.maxReplicas))
	}
	return r * s.gpus
}

// ServeModelKey returns the item key's model field for a consumer of model
// whose upstreams include a serve node serving it (found by its result):
// the model id and the weights' digest. It is model itself when no serve
// upstream serves model, or when endpoints, the consumer's list, are
// plain URLs. Endpoints that mix a serve upstream's with other servers'
// are an error: no one identity would be true of every answer.
func ServeModelKey(n *Node, model string, endpoints []string) (key string, served bool, err error) {
	if len(nonBlankEndpoints(endpoints)) > 0 {
		r, err := endpointsServer(n, endpoints)
		if err != nil || r == nil || r.Model != model || r.ModelKey == "" {
			return model, false, err
		}
		return r.ModelKey, true, nil
	}
	for _, r := range serveUpstreams(n) {
		if r.Model != model || r.ModelKey == "" || r.Endpoints == nil {
			continue
		}
		return r.ModelKey, true, nil
	}
	return model, false, nil
}

// servedUpstream is a serve upstream's result, with its address.
type servedUpstream struct {
	ServeResult
	addr string
}

// serveUpstreams are the results of n's serve upstreams, in order.
func serveUpstreams(n *Node) []servedUpstream {
	var out []servedUpstream
	for _, u := range n.Upstreams {
		var r ServeResult
		if len(u.Result) == 0 || json.Unmarshal(u.Result, &r) != nil || r.Model == "" {
			continue
		}
		out = append(out, servedUpstream{r, u.Address})
	}
	return out
}

// nonBlankEndpoints are endpoints without blanks, each without its
// trailing slash, as a serve result lists them.
func nonBlankEndpoints(endpoints []string) []string {
	var out []string
	for _, e := range endpoints {
		if e = strings.TrimRight(strings.TrimSpace(e), "/"); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// endpointsServer is the serve upstream of n whose endpoints endpoints (a
// consumer's list) are, nil when they are plain URLs. Endpoints that mix
// one serve upstream's with another's, or with plain URLs, are an error:
// the consumer keys every result by one serve stage's identity, so the
// other servers' answers would be stored as that stage's
// (docs/serve.md). validate refuses the lists it can see mixing; this
// holds for the rest (a list made in a local).
func endpointsServer(n *Node, endpoints []string) (*ServeResult, error) {
	ups := serveUpstreams(n)
	// Each upstream's endpoints, as the consumer's are compared: made
	// once, not again for every endpoint of the consumer's.
	served := make([][]string, len(ups))
	for i := range ups {
		served[i] = nonBlankEndpoints(ups[i].Endpoints)
	}
	var from *servedUpstream
	plain := ""
	for _, e := range nonBlankEndpoints(endpoints) {
		var owner *servedUpstream
		if i := slices.IndexFunc(served, func(s []string) bool { return slices.Contains(s, e) }); i >= 0 {
			owner = &ups[i]
		}
		switch {
		case owner == nil:
			plain = cmp.Or(plain, e)
		case from == nil:
			from = owner
		case from != owner:
			return nil, fmt.Errorf("endpoints mix %s's servers with %s's: every result is keyed by one serve stage's model, weights and command line, so the other's answers would be stored as its own; give each endpoints list one serve stage's endpoints alone, or plain URLs alone (a stage per server)", from.addr, owner.addr)
		}
	}
	if from == nil {
		return nil, nil
	}
	if plain != "" {
		return nil, fmt.Errorf("endpoints mix %s's servers with %s, which it does not run: every result is keyed by %s's model, weights and command line, so that server's answers would be stored as its own; give each endpoints list one serve stage's endpoints alone, or plain URLs alone (a stage per server)", from.addr, plain, from.addr)
	}
	return &from.ServeResult, nil
}

// replica is one server process of a serve node.
type replica struct {
	i       int // from 1
	port    int
	gpus    []int
	url     string // base URL, ending in /v1
	out     string // log files
	err     string
	restart int
	// deathSeen: the death of its current process was handled
	// (supervise's goroutine only).
	deathSeen bool
	cancel    context.CancelFunc
	exited    chan struct{}
	// started is closed once its current process runs and its pid is
	// known (a local process; Proc.Started).
	started chan struct{}
	res     *process.Result
	resErr  error
	pid     int
	// endpoint is the file a cluster job writes its host and port to
	// (under a cluster executor; see serve_remote.go), job the job's id
	// and queue what says whether it waits in the cluster's queue.
	endpoint string
	job      string
	queue    func() (string, bool)
	// hungFor is how long its current process had failed its health
	// checks when cairn stopped it (nanoseconds; 0: not stopped so).
	hungFor atomic.Int64
}

// KeepsTimeout implements TimeoutKeeper: each server process is killed at
// the stage's timeout (Runtime.Exec).
func (Serve) KeepsTimeout() {}

// Run implements Kind.
func (k Serve) Run(ctx context.Context, n *Node, rt Runtime) (*Outcome, error) {
	s, diags := decodeServe(n)
	if diags.HasErrors() {
		return nil, diags
	}
	host, ok := rt.(ServiceHost)
	if !ok {
		return &Outcome{Class: failclass.Setup, Message: "a serve stage runs only under cairn apply's engine"}, nil
	}
	id := serveIdentity(n)
	if s.externalSet {
		return serveExternal(ctx, s, id, host)
	}
	devs := host.Devices()
	count := s.replicas
	if count == 0 {
		count = 1
		if s.gpus > 0 {
			count = max(1, len(devs)/s.gpus)
		}
	}
	if s.gpus > 0 && len(devs) < count*s.gpus {
		return &Outcome{Class: failclass.Setup, Message: fmt.Sprintf("%d replicas of %d GPUs each need %d GPUs; %d were leased", count, s.gpus, count*s.gpus, len(devs))}, nil
	}
	// Under a cluster executor each replica's job takes its port on the
	// machine it runs on, and says which (serve_remote.go).
	remote := remoteExecutor(rt)
	ports := make([]int, count)
	if !remote {
		var release func()
		var err error
		ports, release, err = reservePorts(n.Address, s.host, s.port, count, func(p int, holder string) {
			msg := fmt.Sprintf("port %d is in use: skipped", p)
			if holder != "" {
				msg = fmt.Sprintf("port %d is in use (given to %s of this apply): skipped", p, holder)
			}
			host.ServeEvent(ServeEvent{Status: "port_skipped", Port: p, Message: msg})
		})
		if err != nil {
			return &Outcome{Class: failclass.Setup, Message: err.Error()}, nil
		}
		defer release()
	}
	sv := &server{k: k, n: n, rt: rt, host: host, s: s, id: id, remote: remote, count: count}
	for i := range count {
		r := &replica{i: i + 1, port: ports[i]}
		if s.gpus > 0 {
			r.gpus = devs[i*s.gpus : (i+1)*s.gpus]
		}
		if !remote {
			r.url = fmt.Sprintf("http://%s/v1", net.JoinHostPort(s.host, strconv.Itoa(r.port)))
		}
		stem := filepath.Join(rt.OutDir(), fmt.Sprintf("replica%d", r.i))
		r.out, r.err = stem+".out", stem+".err"
		sv.reps = append(sv.reps, r)
	}
	defer sv.stopAll()
	// Every replica starts at once and must be ready within start_timeout.
	errs := make([]error, count)
	var wg sync.WaitGroup
	for i, r := range sv.reps {
		wg.Go(func() {
			sv.start(ctx, r)
			errs[i] = sv.waitReady(ctx, r)
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return &Outcome{Class: failclass.Interrupted, Message: "interrupted while the servers started"}, nil
	}
	for i, err := range errs {
		if err != nil && sv.timedOut(sv.reps[i]) {
			return &Outcome{Class: failclass.Timeout, Message: fmt.Sprintf("ended at its timeout of %s: replica %d (port %d) was not ready yet%s", n.Common.Timeout, i+1, sv.reps[i].port, sv.tail(sv.reps[i]))}, nil
		}
	}
	for i, err := range errs {
		if err != nil {
			return &Outcome{Class: failclass.Setup, Message: fmt.Sprintf("replica %d (port %d) did not get ready: %s%s", i+1, sv.reps[i].port, err, sv.tail(sv.reps[i]))}, nil
		}
	}
	res := ServeResult{ServeIdentity: id, Started: true}
	for _, r := range sv.reps {
		res.Endpoints = append(res.Endpoints, r.url)
		res.Ports = append(res.Ports, r.port)
		res.GPUs = append(res.GPUs, append([]int{}, r.gpus...))
	}
	b, _ := json.Marshal(res)
	done := host.Serving(b)
	failed := sv.supervise(ctx, done)
	sv.stopAll()
	if sv.timeout != "" {
		return &Outcome{Result: b, Class: failclass.Timeout, Message: sv.timeout}, nil
	}
	if failed != "" {
		return &Outcome{Result: b, Class: failclass.Infra, Message: failed}, nil
	}
	if ctx.Err() != nil {
		return &Outcome{Result: b, Class: failclass.Interrupted, Message: "interrupted: the servers were stopped"}, nil
	}
	return &Outcome{Result: b}, nil
}

// server is a running serve node.
type server struct {
	k    Serve
	n    *Node
	rt   Runtime
	host ServiceHost
	s    serveSpec
	id   ServeIdentity
	reps []*replica
	mu   sync.Mutex
	// remote: the replicas are cluster jobs (count of them).
	remote bool
	count  int
	// timeout says a replica reached the stage's timeout, which ends
	// the node (class timeout): it is not restarted (supervise's
	// goroutine only).
	timeout string
}

// timedOut reports whether r's process was killed at the stage's
// timeout.
func (sv *server) timedOut(r *replica) bool {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return r.res != nil && r.res.Class == failclass.Timeout
}

// argv is the replica's command line, placeholders replaced.
func (sv *server) argv(r *replica) []string {
	rep := strings.NewReplacer("{port}", strconv.Itoa(r.port), "{replica}", strconv.Itoa(r.i),
		"{model}", sv.s.model, "{gpus}", strconv.Itoa(max(len(r.gpus), 1)), "{host}", sv.s.host)
	out := make([]string, len(sv.s.argv))
	for i, a := range sv.s.argv {
		out[i] = rep.Replace(a)
	}
	return out
}

// start starts r's process; r.exited is closed when it ends.
func (sv *server) start(ctx context.Context, r *replica) {
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	r.exited = make(chan struct{})
	sv.mu.Lock()
	// The process before it (a restart's) is gone: its pid and result
	// are no longer the replica's.
	r.pid, r.res, r.resErr = 0, nil, nil
	sv.mu.Unlock()
	p := Proc{
		Argv: sv.argv(r), Replica: r.i, Stdout: r.out, Stderr: r.err, AppendLogs: r.restart > 0,
		Env: map[string]string{
			"CAIRN_SERVE_PORT": strconv.Itoa(r.port), "CAIRN_SERVE_REPLICA": strconv.Itoa(r.i),
			"CAIRN_SERVE_MODEL": sv.s.model,
		},
	}
	if sv.remote {
		sv.remoteProc(r, &p)
	} else {
		started := make(chan struct{})
		r.started = started
		p.Started = func(ref process.JobRef) {
			if pid, err := strconv.Atoi(ref.ID); err == nil {
				sv.mu.Lock()
				r.pid = pid
				sv.mu.Unlock()
			}
			close(started)
		}
	}
	exited := r.exited
	go func() {
		defer close(exited)
		res, err := sv.rt.Exec(pctx, p)
		sv.mu.Lock()
		r.res, r.resErr = res, err
		sv.mu.Unlock()
	}()
	go func() {
		// The caller's ctx ending stops the replica (Ctrl-C).
		select {
		case <-ctx.Done():
			cancel()
		case <-exited:
		}
	}()
}

// alive reports whether r's process runs.
func alive(r *replica) bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

var serveClient = &http.Client{Timeout: 30 * time.Second}

// ReadinessUserAgent is the User-Agent of cairn's readiness and health
// checks, so that a server's log tells them from its consumers' requests.
const ReadinessUserAgent = "cairn-serve-check"

// waitReady polls r until it answers as ready, it dies, start_timeout
// passes or ctx ends.
func (sv *server) waitReady(ctx context.Context, r *replica) error {
	if sv.remote {
		// A cluster job's start_timeout counts from its start.
		if err := sv.awaitEndpoint(ctx, r); err != nil {
			return err
		}
	}
	deadline := time.NewTimer(sv.s.startTimeout)
	defer deadline.Stop()
	if r.started != nil {
		// Its records name its process: ready only once it is known.
		select {
		case <-r.started:
		case <-r.exited:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("its process did not start within start_timeout %s", sv.s.startTimeout)
		}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := errors.New("it has not answered yet")
	for {
		if !alive(r) {
			return fmt.Errorf("its process ended during start-up (%s)", sv.exitText(r))
		}
		err := sv.probe(ctx, r, true)
		if err == nil {
			if other := sv.foreignListener(r); other != "" {
				return fmt.Errorf("port %d is held by another program, %s, not by this replica's process (pid %d): what answers there is not this replica; stop that program, or give the stage another port", r.port, other, sv.pid(r))
			}
			sv.host.ServeEvent(ServeEvent{Status: "ready", Replica: r.i, PID: sv.pid(r), Port: r.port, GPUs: r.gpus, Endpoint: r.url,
				Message: fmt.Sprintf("replica %d ready at %s", r.i, r.url)})
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.exited:
		case <-deadline.C:
			return fmt.Errorf("not ready within start_timeout %s (last check: %s)", sv.s.startTimeout, last)
		case <-tick.C:
		}
	}
}

// foreignListener names another program listening on r's port, "" when
// none is known (a cluster job's port is on another machine; see
// process.ForeignListener): r's process leads its own process group.
func (sv *server) foreignListener(r *replica) string {
	pid := sv.pid(r)
	if sv.remote || pid <= 0 || sv.s.ready.OwnPort != nil && !*sv.s.ready.OwnPort {
		return ""
	}
	return process.ForeignListener(r.port, pid)
}

func (sv *server) pid(r *replica) int {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if r.res != nil {
		return r.res.PID
	}
	return r.pid
}

func (sv *server) exitText(r *replica) string {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	switch {
	case r.resErr != nil:
		return r.resErr.Error()
	case r.res != nil && r.res.Message != "":
		return r.res.Message
	case r.res != nil:
		return fmt.Sprintf("exit status %d", r.res.ExitCode)
	}
	return "ended"
}

// probe checks r as readiness is defined: health path 200, the model
// listed, and (full) one chat completion answered.
func (sv *server) probe(ctx context.Context, r *replica, full bool) error {
	timeout := 30 * time.Second
	if !full {
		timeout = ServeHealthTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	root := strings.TrimSuffix(r.url, "/v1")
	get := func(url string) ([]byte, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("User-Agent", ReadinessUserAgent)
		resp, err := serveClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("GET %s: %s", url, shortNetErr(err))
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s answered HTTP %d", url, resp.StatusCode)
		}
		return b, nil
	}
	if sv.s.ready.Health != "" {
		if _, err := get(root + sv.s.ready.Health); err != nil {
			return err
		}
	}
	if !full {
		return nil
	}
	if sv.s.ready.Models == nil || *sv.s.ready.Models {
		b, err := get(r.url + "/models")
		if err != nil {
			return err
		}
		var list struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &list); err != nil {
			return fmt.Errorf("GET %s/models is not an OpenAI model list: %s", r.url, err)
		}
		found := false
		var ids []string
		for _, m := range list.Data {
			found = found || m.ID == sv.s.model
			ids = append(ids, m.ID)
		}
		if !found {
			return fmt.Errorf("GET %s/models does not list %q (it lists %s)", r.url, sv.s.model, strings.Join(ids, ", "))
		}
	}
	if sv.s.ready.Completion == nil || *sv.s.ready.Completion {
		body, _ := json.Marshal(map[string]any{
			"model":      sv.s.model,
			"messages":   []map[string]string{{"role": "user", "content": "Reply with OK."}},
			"max_tokens": 4,
		})
		url := r.url + "/chat/completions"
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", ReadinessUserAgent)
		resp, err := serveClient.Do(req)
		if err != nil {
			return fmt.Errorf("POST %s: %s", url, shortNetErr(err))
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("POST %s answered HTTP %d: %s", url, resp.StatusCode, evalOneLine(string(b)))
		}
		var c struct {
			Choices []json.RawMessage `json:"choices"`
		}
		if json.Unmarshal(b, &c) != nil || len(c.Choices) == 0 {
			return fmt.Errorf("POST %s answered no choice: %s", url, evalOneLine(string(b)))
		}
	}
	return nil
}

func shortNetErr(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	return err.Error()
}

// lastDeath is the message of a replica's death past its restarts: how
// many times it died (once, when it had none), why the last time, and
// the last lines of its logs.
func (sv *server) lastDeath(r *replica, why string) string {
	if r.restart == 0 {
		return fmt.Sprintf("replica %d (port %d) died once: %s%s", r.i, r.port, why, sv.tail(r))
	}
	return fmt.Sprintf("replica %d (port %d) died %d times, the last: %s%s", r.i, r.port, r.restart+1, why, sv.tail(r))
}

// finalDeath is the message of a replica's death that ends it, "" when
// it is restarted (or, restart false, its consumers ended): a death past
// its restarts, or one while another program holds its port, which a
// restart would fail to bind (or answer as that program) and its
// consumers were given.
func (sv *server) finalDeath(r *replica, why string, restart bool) string {
	if r.restart >= sv.s.restarts {
		return sv.lastDeath(r, why)
	}
	other := ""
	if restart {
		other = sv.foreignListener(r)
	}
	if other == "" {
		return ""
	}
	return fmt.Sprintf("replica %d (port %d) died (%s), and port %d is held by another program, %s: not restarted on it, since its consumers were given that port; stop that program, or give the stage another port%s", r.i, r.port, why, r.port, other, sv.tail(r))
}

// supervise watches the replicas until done is closed or ctx ends: a
// replica that dies or fails its health check is taken out of the rotation
// at once and restarted (up to restarts times); it returns why the node
// fails, "" when it does not.
func (sv *server) supervise(ctx context.Context, done <-chan struct{}) string {
	type event struct {
		r    *replica
		died bool
	}
	evs := make(chan event, len(sv.reps))
	watch := func(r *replica, exited chan struct{}) {
		go func() {
			tick := time.NewTicker(ServeHealthInterval)
			defer tick.Stop()
			bad := 0
			var since time.Time // the first failed check in a row
			for {
				select {
				case <-exited:
					evs <- event{r: r, died: true}
					return
				case <-done:
					return
				case <-ctx.Done():
					return
				case <-tick.C:
					at := time.Now()
					if err := sv.probe(ctx, r, false); err != nil {
						if bad == 0 && items.EndpointAnsweredSince(r.url, at) {
							// Consumers had answers while the check
							// waited: busy (its health path queued
							// behind completions), not hung.
							continue
						}
						bad++
						items.SetEndpointDown(r.url, true)
						if bad == 1 {
							since = at
							sv.host.ServeEvent(ServeEvent{Status: "down", Replica: r.i, PID: sv.pid(r), Port: r.port, Endpoint: r.url,
								Message: fmt.Sprintf("replica %d failed its health check (%s): out of the rotation", r.i, err)})
						}
						if time.Since(since) >= min(sv.s.startTimeout, ServeHungRestart) {
							r.hungFor.Store(int64(time.Since(since)))
							r.cancel() // it answers no more: restarted below
						}
					} else if bad > 0 {
						bad = 0
						sv.backInRotation(r)
					}
				}
			}
		}()
	}
	for _, r := range sv.reps {
		watch(r, r.exited)
	}
	failedFor := ""
	dead := 0
	var restarting sync.WaitGroup
	// died handles a replica's death: out of the rotation, restarted
	// while it has restarts left (and restart says so), else the node's
	// failure. It reports whether no replica is left.
	died := func(r *replica, restart bool) bool {
		r.deathSeen = true
		items.SetEndpointDown(r.url, true)
		why := sv.exitText(r)
		if hung := time.Duration(r.hungFor.Swap(0)); hung > 0 {
			// cairn stopped it, not an interrupt of cairn.
			why = fmt.Sprintf("stopped by cairn: it had failed its health checks for %s", hung.Round(time.Second))
		}
		if sv.endsAtTimeout(r) {
			return true
		}
		if final := sv.finalDeath(r, why, restart); final != "" {
			dead++
			sv.host.ServeEvent(ServeEvent{Status: "failed", Replica: r.i, Port: r.port, Endpoint: r.url, Message: final})
			failedFor = cmp.Or(failedFor, final)
			return dead == len(sv.reps)
		}
		if !restart {
			sv.host.ServeEvent(ServeEvent{Status: "down", Replica: r.i, Port: r.port, Endpoint: r.url,
				Message: fmt.Sprintf("replica %d died (%s) as its consumers ended: not restarted", r.i, why)})
			return false
		}
		r.restart++
		sv.host.ServeEvent(ServeEvent{Status: "restarting", Replica: r.i, Port: r.port, Endpoint: r.url,
			Message: fmt.Sprintf("replica %d died (%s): out of the rotation, restart %d of %d", r.i, why, r.restart, sv.s.restarts)})
		sv.markRestart(r, why)
		sv.start(ctx, r)
		r.deathSeen = false
		restarting.Add(1)
		go func() {
			defer restarting.Done()
			if err := sv.waitReady(ctx, r); err != nil {
				if alive(r) {
					r.cancel()
				}
				<-r.exited
				evs <- event{r: r, died: true}
				return
			}
			items.SetEndpointDown(r.url, false)
			watch(r, r.exited)
		}()
		return false
	}
	// settle is the end, once no consumer needs the servers: a restart
	// under way ends, and a death not handled yet still counts.
	settle := func() string {
		restarting.Wait()
		for {
			select {
			case ev := <-evs:
				if !ev.r.deathSeen {
					died(ev.r, false)
				}
				continue
			default:
			}
			break
		}
		for _, r := range sv.reps {
			if !alive(r) && !r.deathSeen {
				died(r, false)
			}
		}
		return failedFor
	}
	for {
		select {
		case <-done:
			return settle()
		case <-ctx.Done():
			return failedFor
		case ev := <-evs:
			if ev.r.deathSeen {
				continue
			}
			if died(ev.r, true) {
				// None is left: requests fail fast, as
				// infrastructure failures, rather than wait.
				for _, x := range sv.reps {
					items.SetEndpointDown(x.url, false)
				}
				return failedFor
			}
		}
	}
}

// endsAtTimeout reports whether r's process was killed at the stage's
// timeout, which ends the node (class timeout), not a fault of the
// replica: it is not restarted (supervise's goroutine).
func (sv *server) endsAtTimeout(r *replica) bool {
	if !sv.timedOut(r) {
		return false
	}
	sv.timeout = fmt.Sprintf("ended at its timeout of %s: replica %d (port %d) was killed then, and its servers stopped", sv.n.Common.Timeout, r.i, r.port)
	sv.host.ServeEvent(ServeEvent{Status: "down", Replica: r.i, Port: r.port, Endpoint: r.url,
		Message: fmt.Sprintf("replica %d reached the stage's timeout of %s: not restarted, the node ends", r.i, sv.n.Common.Timeout)})
	return true
}

// backInRotation puts r, which answers its health check again, back in
// the rotation.
func (sv *server) backInRotation(r *replica) {
	items.SetEndpointDown(r.url, false)
	sv.host.ServeEvent(ServeEvent{Status: "ready", Replica: r.i, PID: sv.pid(r), Port: r.port, Endpoint: r.url,
		Message: fmt.Sprintf("replica %d answers its health check again: back in the rotation", r.i)})
}

// markRestart ends each of r's logs with a line naming the restart about
// to begin and why the process before it ended: the restarted process's
// output follows it (Proc.AppendLogs), after the dead one's.
func (sv *server) markRestart(r *replica, why string) {
	before := "the process before it"
	if pid := sv.pid(r); pid > 0 {
		before += fmt.Sprintf(" (pid %d)", pid)
	}
	line := fmt.Sprintf("--- cairn: replica %d restart %d of %d: %s died: %s ---\n", r.i, r.restart, sv.s.restarts, before, why)
	for _, f := range []string{r.out, r.err} {
		w, err := os.OpenFile(f, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
		if err != nil {
			continue // the restart's own log says what it can
		}
		_, _ = w.WriteString(line)
		_ = w.Close()
	}
}

// stopAll stops every replica (SIGTERM, then SIGKILL after kill_grace) and
// waits for them; it journals each stop once.
func (sv *server) stopAll() {
	for _, r := range sv.reps {
		if r.cancel != nil {
			r.cancel()
		}
	}
	for _, r := range sv.reps {
		if r.exited == nil {
			continue
		}
		<-r.exited
		items.SetEndpointDown(r.url, false)
		if r.cancel != nil {
			sv.host.ServeEvent(ServeEvent{Status: "stopped", Replica: r.i, PID: sv.pid(r), Port: r.port, GPUs: r.gpus, Endpoint: r.url,
				Message: fmt.Sprintf("replica %d stopped", r.i)})
			r.cancel = nil
		}
	}
}

// tail is the end of r's logs, for a failure's message.
func (sv *server) tail(r *replica) string {
	var parts []string
	for _, f := range []string{r.err, r.out} {
		b, err := os.ReadFile(f)
		if err != nil || len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 10 {
			lines = lines[len(lines)-10:]
		}
		parts = append(parts, fmt.Sprintf("\n  last lines of %s:\n    %s", f, strings.Join(lines, "\n    ")))
	}
	if len(parts) == 0 {
		return fmt.Sprintf(" (its logs %s and %s are empty)", r.out, r.err)
	}
	return strings.Join(parts, "")
}

// ports holds the ports this cairn gave to servers it started, with the
// node each went to: another serve stage skips them even before their
// server binds them.
var ports struct {
	mu    sync.Mutex
	taken map[int]string
}

// reservePorts takes count free ports from first on for node, skipping
// (and saying through skipped) those in use by another program (holder "")
// or given to another server of this apply (holder its node).
func reservePorts(node, host string, first, count int, skipped func(port int, holder string)) ([]int, func(), error) {
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if ports.taken == nil {
		ports.taken = map[int]string{}
	}
	var out []int
	for p := first; len(out) < count; p++ {
		if p > 65535 {
			return nil, nil, errors.New(noFreePorts(count, first, p-1, p-first-len(out)) + ", and the ports end at 65535 (pick a lower port)")
		}
		if p-first > 1024 {
			return nil, nil, errors.New(noFreePorts(count, first, p-1, p-first-len(out)) + " (port collisions are a setup failure; pick another port)")
		}
		if holder, ok := ports.taken[p]; ok {
			skipped(p, holder)
			continue
		}
		if !portFree(host, p) {
			skipped(p, "")
			continue
		}
		out = append(out, p)
	}
	for _, p := range out {
		ports.taken[p] = node
	}
	return out, func() {
		ports.mu.Lock()
		defer ports.mu.Unlock()
		for _, p := range out {
			delete(ports.taken, p)
		}
	}, nil
}

// noFreePorts says that count free ports were not found among the ports
// from first to last, inUse of which are in use, in words that read well
// for one port as for many ("no free port at 65535: it is in use").
func noFreePorts(count, first, last, inUse int) string {
	want := "no free port"
	if count > 1 {
		want = fmt.Sprintf("no %d free ports", count)
	}
	switch {
	case inUse == 0:
		return fmt.Sprintf("%s from %d on", want, first)
	case first == last && count == 1:
		return fmt.Sprintf("no free port at %d: it is in use", first)
	case first == last:
		return fmt.Sprintf("%s from %d on: %d is in use", want, first, first)
	}
	span := last - first + 1
	if inUse == span {
		return fmt.Sprintf("%s from %d to %d: all %d are in use", want, first, last, span)
	}
	verb := "are"
	if inUse == 1 {
		verb = "is"
	}
	return fmt.Sprintf("%s from %d to %d: %d of the %d %s in use", want, first, last, inUse, span, verb)
}

// portFree reports whether nothing listens on port, on host nor on any
// address.
func portFree(host string, port int) bool {
	for _, h := range []string{host, "0.0.0.0", ""} {
		ln, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(port)))
		if err != nil {
			return false
		}
		ln.Close()
	}
	// Something may listen on another address only: connecting finds it.
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(port)), 200*time.Millisecond)
	if err == nil {
		c.Close()
		return false
	}
	return true
}

// serveExternal publishes the endpoints of servers someone else runs (the
// endpoints attribute; TASK_ENDPOINTS, then VLLM_BASE_URL, when it is
// empty): nothing is started or stopped.
func serveExternal(ctx context.Context, s serveSpec, id ServeIdentity, host ServiceHost) (*Outcome, error) {
	eps, err := items.ParseEndpoints(s.external, os.Getenv)
	if err != nil && !errors.Is(err, items.ErrNoEndpoints) {
		// An endpoint that is no URL: the stage cannot start.
		return &Outcome{Class: failclass.Setup, Message: err.Error()}, nil
	}
	res := ServeResult{ServeIdentity: id, Endpoints: append([]string{}, eps...), Ports: []int{}, GPUs: [][]int{}}
	b, _ := json.Marshal(res)
	msg := fmt.Sprintf("servers run elsewhere: %s", strings.Join(eps, ", "))
	if len(eps) == 0 {
		// Consumers whose items are all stored need none; one that sends
		// a request fails, saying so.
		msg = "servers run elsewhere: none given (endpoints is empty, and TASK_ENDPOINTS and VLLM_BASE_URL are unset); a consumer that sends a request will fail"
	}
	host.ServeEvent(ServeEvent{Status: "external", Message: msg})
	select {
	case <-host.Serving(b):
	case <-ctx.Done():
	}
	return &Outcome{Result: b}, nil
}
