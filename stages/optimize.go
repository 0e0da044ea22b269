package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/stages/items"
	"github.com/cairn-run/cairn/stages/rollout"
	"github.com/cairn-run/cairn/storage/atomicfile"
)

// Optimize runs an optimizer method (the user's command) against a metered
// rollout budget: while the method runs, cairn serves it the rollout
// service of docs/rollout-protocol.md on a Unix socket, runs each rollout
// (a candidate bundle on a training item) through the evaluate machinery
// and charges it. The method leaves its incumbent bundle in
// $CAIRN_INCUMBENT_DIR (nothing there: it proposed none) and its own record
// in $CAIRN_OPTIMIZATION_DIR/optimizer_result.json; cairn writes
// optimization.json in the job's out folder.
//
//	stage "optimize" "optimize" {
//	  run          = ["python3", "methods/gepa.py"]
//	  out          = "runs/gepa/hotpotqa/centralized/qwen/0"
//	  budget       = 600
//	  bundle       = ["bundles/seed/"]          # the seed bundle the method starts from
//	  worker       = ["python3", "workers/chat_worker.py", "--system-prompt-file", "{bundle}/system.txt"]
//	  items        = "data/hotpotqa_train.jsonl"
//	  model        = "Qwen/Qwen3.5-9B"
//	  runtime      = local.runtime
//	  on_interrupt = "fail"
//	}
type Optimize struct{}

func init() { Register(Optimize{}) }

// Name implements Kind.
func (Optimize) Name() string { return "optimize" }

// Version implements Kind.
func (Optimize) Version() int { return 1 }

// BundlePlaceholder in a worker argument is replaced, for each rollout, by
// the path of the candidate bundle being run.
const BundlePlaceholder = "{bundle}"

// ProtocolBudget is the rollout budget of the seed's protocol; a smaller
// one makes a smoke run, which is not part of the experiment.
const ProtocolBudget = 600

// ReflectionModel is the reflection model of the protocol.
const ReflectionModel = "Qwen/Qwen3.5-122B-A10B-FP8"

// Schema implements Kind.
func (Optimize) Schema() *hcl.BodySchema {
	return &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "run", Required: true},
		{Name: "out", Required: true},
		{Name: "budget", Required: true},
		{Name: "bundle", Required: true},
		{Name: "worker", Required: true},
		{Name: "items", Required: true},
		{Name: "item_id"},
		{Name: "model", Required: true},
		{Name: "runtime"},
		{Name: "reflection_model"},
		{Name: "reflection_base_url"},
		{Name: "endpoints"},
		{Name: "replicas"},
		{Name: "max_in_flight"},
		{Name: "item_timeout"},
		{Name: "retry_infra"},
		{Name: "endpoint_concurrency"},
		{Name: "bundle_in_request"},
	}}
}

// KeyExcluded implements KeyExcluder: where rollouts go and how many run at
// once do not change a result.
func (Optimize) KeyExcluded() []string {
	return []string{"endpoints", "replicas", "max_in_flight", "item_timeout", "retry_infra", "endpoint_concurrency", "reflection_base_url", "bundle_in_request"}
}

// optSpec is an optimize node's decoded attributes.
type optSpec struct {
	eval               evalSpec // worker, items, bundle (the seed bundle), model, runtime, endpoints...
	run                []string
	out                string
	budget             int
	budgetOK           bool
	reflModel, reflURL string
	// reflURLs is reflection_base_url as given: one URL, or a list (a
	// serve stage's endpoints), whose first one is reflURL.
	reflURLs []string
	// bundleInRequest: the worker reads each rollout's bundle from its
	// requests, so the same workers serve every bundle.
	bundleInRequest bool
}

func decodeOptimize(n *Node) (optSpec, hcl.Diagnostics) {
	es, diags := decodeEvaluate(n)
	s := optSpec{eval: es}
	bad := func(attr, detail string) {
		diags = append(diags, Diag("Invalid "+attr, detail, n.Range(attr))...)
	}
	if v, ok := n.Args["run"]; ok && whollyKnown(v) && !v.IsNull() {
		argv, err := StringList(unmarkDeep(v))
		switch {
		case err != nil:
			bad("run", fmt.Sprintf("run is the method's argument list, like [\"python3\", \"methods/gepa.py\"]: %s.", err))
		case len(argv) == 0:
			bad("run", "run must name the method's program: it is empty.")
		default:
			s.run = argv
		}
	}
	if p, ok := knownString(n, "out"); ok {
		clean := filepath.Clean(p)
		if p == "" || !filepath.IsLocal(clean) {
			bad("out", fmt.Sprintf("%q is not a workspace-relative folder: the job's out folder must not be empty or absolute, nor leave the workspace with \"..\".", p))
		} else {
			s.out = clean
		}
	}
	if v, ok := n.Args["budget"]; ok && v.IsKnown() && !v.IsNull() {
		v, _ = v.Unmark()
		nv, err := convert.Convert(v, cty.Number)
		i, acc := int64(0), big.Below
		if err == nil {
			i, acc = nv.AsBigFloat().Int64()
		}
		if err != nil || acc != big.Exact || i < 0 || i > 1<<30 {
			bad("budget", "budget is the number of rollouts the method may charge: a whole number, 0 or more.")
		} else {
			s.budget, s.budgetOK = int(i), true
		}
	}
	s.reflModel = ReflectionModel
	if m, ok := knownString(n, "reflection_model"); ok && m != "" {
		s.reflModel = m
	}
	if v, ok := n.Args["bundle_in_request"]; ok && v.IsKnown() && !v.IsNull() {
		v, _ = v.Unmark()
		if v.Type() != cty.Bool {
			bad("bundle_in_request", "bundle_in_request is true or false.")
		} else {
			s.bundleInRequest = v.True()
		}
	}
	s.reflURL = items.ReflectionBaseURL(os.Getenv)
	if u, ok := knownString(n, "reflection_base_url"); ok && u != "" {
		s.reflURL, s.reflURLs = u, []string{u}
	} else if v, ok := n.Args["reflection_base_url"]; ok && whollyKnown(v) && !v.IsNull() && v.Type() != cty.String {
		// A list: a serve stage's endpoints (reflection_base_url =
		// stage.reflection_model.endpoints); its first non-empty one, else
		// the default.
		list, err := StringList(v)
		if err != nil {
			bad("reflection_base_url", fmt.Sprintf("reflection_base_url is a base URL, or a list of them (a serve stage's endpoints): %s.", err))
		}
		s.reflURLs = list
		for _, u := range list {
			if u != "" {
				s.reflURL = u
				break
			}
		}
	}
	return s, diags
}

// knownString is a known string attribute's value.
func knownString(n *Node, attr string) (string, bool) {
	v, ok := n.Args[attr]
	if !ok || !v.IsKnown() || v.IsNull() {
		return "", false
	}
	v, _ = v.Unmark()
	if v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

// Check implements Kind.
func (Optimize) Check(n *Node) hcl.Diagnostics {
	s, diags := decodedOnce(n, decodeOptimize)
	if n.Common.GPUs > 0 {
		diags = append(diags, Diag("Invalid gpus",
			"An optimize stage leases no GPU: its rollouts go to the task model's endpoints.", n.Range("gpus"))...)
	}
	if s.eval.itemsInline {
		diags = append(diags, Diag("Invalid items", "items of an optimize stage is the training split's file.", n.Range("items"))...)
	}
	placeholder := strings.Contains(strings.Join(s.eval.worker, "\x00"), BundlePlaceholder)
	switch {
	case len(s.eval.worker) == 0:
	case s.bundleInRequest && placeholder:
		diags = append(diags, Diag("Invalid worker",
			fmt.Sprintf("With bundle_in_request = true the worker reads each rollout's bundle from its requests' \"bundle\", and the same worker serves every bundle: remove %s from its arguments.", BundlePlaceholder), n.Range("worker"))...)
	case !s.bundleInRequest && !placeholder:
		diags = append(diags, Diag("Invalid worker",
			fmt.Sprintf("The rollout worker must be told which candidate bundle to run: write %s in one of its arguments (like \"%s/system.txt\"); cairn replaces it with each rollout's bundle folder. Or, for a worker that reads the bundle of each request, set bundle_in_request = true.", BundlePlaceholder, BundlePlaceholder), n.Range("worker"))...)
	}
	return diags
}

// DeclaredInputs implements InputDeclarer: the training split, the seed
// bundle and the worker's files.
func (Optimize) DeclaredInputs(n *Node, root string) []DeclaredPath {
	s, diags := decodedOnce(n, decodeOptimize)
	if diags.HasErrors() {
		return nil
	}
	return s.eval.inputs(n.Look, root)
}

// ChangeNote implements ChangeNoter: env reruns the node, but its
// rollouts come from the store (env does not key them).
func (Optimize) ChangeNote(attr string) string { return envChangeNote(attr) }

// FollowedInputs implements LinkFollower: the seed bundle's files are
// read through their links.
func (Optimize) FollowedInputs(n *Node) []string {
	s, diags := decodedOnce(n, decodeOptimize)
	if diags.HasErrors() {
		return nil
	}
	return s.eval.bundle
}

// CheckWorkspace implements WorkspaceChecker: a seed bundle holding a link
// that leads outside the workspace is refused (exit 2).
func (Optimize) CheckWorkspace(n *Node, root string) hcl.Diagnostics {
	s, diags := decodedOnce(n, decodeOptimize)
	if diags.HasErrors() {
		return nil
	}
	return s.eval.checkBundle(n, root)
}

// KeepsOutFolder implements OutFolderKeeper.
func (Optimize) KeepsOutFolder() {}

// PathAttrs implements PathLinker.
func (Optimize) PathAttrs() []PathAttr { return optimizePaths }

var optimizePaths = []PathAttr{{Attr: "items"}, {Attr: "bundle"}, {Attr: "worker", Args: true}, {Attr: "out", Write: true, Files: []string{"optimization.json", "optimization"}}}

// DeclaredOutputs implements OutputDeclarer: optimization.json and the
// optimization folder.
func (Optimize) DeclaredOutputs(n *Node) []DeclaredPath {
	s, diags := decodedOnce(n, decodeOptimize)
	if diags.HasErrors() || s.out == "" {
		return nil
	}
	return []DeclaredPath{{Attr: "out", Path: filepath.Join(s.out, "optimization.json")}, {Attr: "out", Path: filepath.Join(s.out, "optimization")}}
}

// Optimization is optimization.json, and the optimize node's result.
type Optimization struct {
	Format string `json:"format"`
	// Proposed is false when the method left no incumbent.
	Proposed bool `json:"proposed"`
	// Incumbent is the proposed bundle's folder (workspace-relative), or
	// null.
	Incumbent       *string `json:"incumbent"`
	IncumbentDigest *string `json:"incumbent_digest"`
	// Candidate is what validation evaluates as the incumbent: the
	// incumbent, or the seed bundle when none was proposed (its items then
	// all come from the seed bundle's evaluation).
	Candidate     []string `json:"candidate"`
	SeedBundle    []string `json:"seed_bundle"`
	Budget        int      `json:"budget"`
	Charged       int      `json:"charged_rollouts"`
	Attempted     int      `json:"attempted_rollouts"`
	InfraFailures int      `json:"infra_failures"`
	FromStore     int      `json:"rollouts_from_store"`
	Refused       int      `json:"refused_rollouts"`
}

// OptimizationFormat names optimization.json's format.
const OptimizationFormat = "cairn.optimization/1"

// SkipsService implements ServiceSkipper: an optimization whose out
// folder holds its optimization.json, and no started marker, is taken as
// it is and sends no request (a finished job applied on a fresh cache).
func (Optimize) SkipsService(n *Node, root string) bool {
	s, diags := decodeOptimize(n)
	if diags.HasErrors() || s.out == "" {
		return false
	}
	out := filepath.Join(root, s.out)
	if _, err := os.Stat(filepath.Join(out, "optimization", startedMarker)); err == nil {
		return false // interrupted: refused, or started over with --replace
	}
	_, err := os.Stat(filepath.Join(out, "optimization.json"))
	return err == nil
}

// startedMarker is written in the optimization folder before the method
// starts and removed once optimization.json is written: one left behind
// is an interrupted optimization.
const startedMarker = "started.json"

type startedMark struct {
	Cache   string `json:"cache"`
	Node    string `json:"node"`
	Started string `json:"started"`
}

// interruptedOptimization says, for people, that the optimization in the
// out folder out (workspace-relative) was interrupted: when, by which
// node, and where its charged rollouts are recorded.
func interruptedOptimization(root, out string) string {
	optDir := filepath.Join(root, out, "optimization")
	var m startedMark
	b, _ := os.ReadFile(filepath.Join(optDir, startedMarker))
	_ = json.Unmarshal(b, &m)
	msg := fmt.Sprintf("the optimization in %s was interrupted (started %s by %s) and is never restarted silently; its %d charged rollouts are recorded in %s",
		out, m.Started, m.Node, lineCount(filepath.Join(optDir, "rollouts.jsonl")), filepath.Join(out, "optimization", "rollouts.jsonl"))
	if _, err := os.Stat(filepath.Join(optDir, "optimizer_result.json")); err == nil {
		// Killed between the method's end and optimization.json: the
		// method's record is there, and a start over takes every rollout
		// it charged from the item store.
		msg += fmt.Sprintf(" (the method had finished: its record %s was written before cairn stopped; started over, its rollouts come from the item store)", filepath.Join(out, "optimization", "optimizer_result.json"))
	}
	return msg
}

// PlanRefusal implements PlanRefuser: unless replaced, an out folder
// whose optimization was interrupted (its started marker left, and no
// apply writing the folder now) is refused, and so is one whose
// optimization.json is not the record of the folder's optimization
// (savedRefusal), or one that holds what an optimization left but no
// optimization.json (unrecordedRefusal), as Run refuses them.
func (Optimize) PlanRefusal(n *Node, root, _ string, replaced bool) string {
	s, diags := decodedOnce(n, decodeOptimize)
	if diags.HasErrors() || replaced || s.out == "" {
		return ""
	}
	if _, err := os.Stat(filepath.Join(root, s.out)); err != nil {
		return "" // a fresh out folder (a grid's plan asks each job's)
	}
	if _, err := os.Stat(filepath.Join(root, s.out, "optimization", startedMarker)); err == nil {
		if outFolderHeld(root, s.out) {
			// Another apply is writing the folder: its marker is an
			// optimization running, not one interrupted. Apply waits
			// for it on the same cache (the node's key lock) and takes
			// it cached, or refuses the held folder (holdOut), naming
			// that apply.
			return ""
		}
		return fmt.Sprintf("%s (--replace '%s' starts it over in this folder, or give the job a fresh out folder)", interruptedOptimization(root, s.out), n.Address)
	}
	if _, err := os.Stat(filepath.Join(root, s.out, "optimization.json")); err == nil {
		_, why := savedRefusal(root, s, n.Address)
		return why
	}
	return unrecordedRefusal(root, s.out, fmt.Sprintf("--replace '%s'", n.Address))
}

// KeepsTimeout implements TimeoutKeeper: each process is killed at the
// stage's timeout (Runtime.Exec).
func (Optimize) KeepsTimeout() {}

// Run implements Kind.
func (Optimize) Run(ctx context.Context, n *Node, rt Runtime) (*Outcome, error) {
	s, diags := decodeOptimize(n)
	if diags.HasErrors() {
		return nil, diags
	}
	root := rt.Root()
	o := &optRun{s: s, n: n, rt: rt, root: root, out: filepath.Join(root, s.out)}
	o.optDir = filepath.Join(o.out, "optimization")
	o.marker = filepath.Join(o.optDir, startedMarker)
	o.incDir = filepath.Join(o.optDir, "incumbent")
	if out, err, done := o.outFolder(); done {
		return out, err
	}
	in, fail := o.inputs(ctx)
	if fail != nil {
		return fail, nil
	}
	store, err := items.OpenStore(rt.CacheDir(), storeOptions(rt, n.Address))
	if err != nil {
		return storeFailure("", err), nil
	}
	defer store.Close()
	if fail := o.begin(); fail != nil {
		return fail, nil
	}

	logPath := filepath.Join(rt.OutDir(), "rollouts.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return optFailure(failclass.Infra, "cannot open the rollout log: %s", err)
	}
	defer logFile.Close()
	log := &syncWriter{w: logFile}

	jr := newItemJournal(rt)
	progress := func(c rollout.Counts) {
		rt.Emit(&events.RolloutCounts{Node: n.Address, Budget: c.Budget, Charged: c.Charged, Attempted: c.Attempted,
			InfraFailures: c.InfraFailures, FromStore: c.FromStore, Text: c.String()})
	}
	meter, err := rollout.NewMeter(rollout.MeterOptions{
		Budget: s.budget, Ledger: filepath.Join(o.optDir, "rollouts.jsonl"),
		NoSync: rt.NoSync(), OnProgress: progress,
		OnCharge: func(outs []rollout.Outcome) {
			for _, oc := range outs {
				jr.add(oc.Item, oc.Key, items.Result{Charged: 1})
			}
			jr.flush()
		},
	})
	if err != nil {
		return optFailure(failclass.Infra, "%s", err)
	}
	defer meter.Close()
	ev := o.rolloutEval(in, store, log)
	defer ev.close()

	sock, cleanup, err := socketPath(rt.OutDir())
	if err != nil {
		return optFailure(failclass.Infra, "%s", err)
	}
	defer cleanup()
	srvCtx, stop := context.WithCancel(ctx)
	defer stop()
	srv, err := rollout.Listen(srvCtx, sock, meter, ev, log)
	if err != nil {
		return optFailure(failclass.Infra, "%s", err)
	}
	defer srv.Close()
	if o.s.bundleInRequest {
		// One session of workers serves every bundle: it starts with the
		// method, so that the method's first request does not wait for it.
		ev.prestart(srvCtx)
	}

	res, err := o.runMethod(ctx, sock, logPath)
	// The requests still in flight have nobody left to read their replies:
	// they are cancelled, and charge nothing.
	stop()
	srv.Close()
	ev.close()
	if jerr := jr.close(); jerr != nil {
		fmt.Fprintf(log, "cairn: cannot journal charged rollouts: %s\n", jerr)
	}
	c := meter.Counts()
	counts := map[string]int{"charged": c.Charged, "attempted": c.Attempted, "infra_failures": c.InfraFailures, "from_store": c.FromStore, "refused": c.Refused, "worker_starts": ev.starts}
	if c.Charged%rollout.ProgressEvery != 0 || c.Charged == 0 {
		progress(c)
	}
	if err != nil {
		return nil, err
	}
	return o.finish(res, c, counts, in.seedDigest, logPath)
}

// optRun is one run of an optimize node: its spec and the folders it
// writes (out, its optimization folder, the started marker there, and the
// folder the method writes its incumbent bundle to).
type optRun struct {
	s                                 optSpec
	n                                 *Node
	rt                                Runtime
	root, out, optDir, marker, incDir string
	again                             string // how to start it over (replacing)
}

// optInputs are what the rollouts need, read before the optimization
// starts: the training items, the digests of the seed bundle and the
// worker, and the task model's endpoints (checked to answer).
type optInputs struct {
	train                 []items.Item
	seedDigest, workerDig string
	endpoints             []string
	modelKey              string // the item key's model field (Config.ModelKey)
}

// optFailure is the outcome of a node that failed with class.
func optFailure(class, format string, args ...any) (*Outcome, error) {
	return &Outcome{Class: class, Message: fmt.Sprintf(format, args...)}, nil
}

// outFolder decides from the out folder whether to run at all (done false
// when the optimization is to start): the out folder says what was done,
// whatever the cache holds: an interrupted optimization (its started
// marker left) is never restarted silently, a finished one
// (optimization.json) is not run again, and neither is one whose
// optimization.json is gone but whose files are there
// (unrecordedRefusal); --replace sets any of them aside and starts over.
func (o *optRun) outFolder() (_ *Outcome, _ error, done bool) {
	if out := holdOut(o.rt, o.n, o.s.out); out != nil {
		return out, nil, true
	}
	var replace bool
	replace, o.again = replacing(o.rt)
	_, interrupted := os.Stat(o.marker)
	_, finished := os.Stat(filepath.Join(o.out, "optimization.json"))
	switch {
	case interrupted == nil && !replace:
		out, err := optFailure(failclass.Setup, "%s. To start it over in this folder, keeping that record (set aside and named in job.json): %s. Or give the job a fresh out folder",
			interruptedOptimization(o.root, o.s.out), o.again)
		return out, err, true
	case interrupted == nil || finished == nil && replace:
		if err := setAsideOptimization(o.root, o.s.out, interrupted == nil); err != nil {
			out, err := optFailure(failclass.Infra, "cannot set the earlier optimization aside: %s", err)
			return out, err, true
		}
	case finished == nil:
		out, err := savedOptimization(o.root, o.s, o.n, o.rt)
		return out, err, true
	case replace && holdsFiles(o.optDir):
		if err := setAsideOptimization(o.root, o.s.out, false); err != nil {
			out, err := optFailure(failclass.Infra, "cannot set the earlier optimization aside: %s", err)
			return out, err, true
		}
	case !replace:
		if why := unrecordedRefusal(o.root, o.s.out, o.again); why != "" {
			return &Outcome{Class: failclass.Setup, Refused: true, Message: why}, nil, true
		}
	}
	return nil, nil, false
}

// unrecordedRefusal says why an optimization is not to start in the out
// folder out (workspace-relative), which holds no optimization.json and
// no started marker, but what an optimization left (a file under
// optimization/: its charged-rollout record) or what the job's later
// nodes made from one (selection.json, test.json, result.json): its
// record is gone (deleted by hand), and starting over would wipe that
// record and leave the later files beside another optimization. It
// returns "" when the folder holds none of them; again is the command
// that starts the optimization over, setting what it left aside.
func unrecordedRefusal(root, out, again string) string {
	dir := filepath.Join(root, out)
	var found []string
	if holdsFiles(filepath.Join(dir, "optimization")) {
		found = append(found, fmt.Sprintf("optimization/ (%d charged rollouts recorded in its rollouts.jsonl)",
			lineCount(filepath.Join(dir, "optimization", "rollouts.jsonl"))))
	}
	for _, f := range laterArtifacts {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil && f != "optimization.json" {
			found = append(found, f)
		}
	}
	if len(found) == 0 {
		return ""
	}
	return fmt.Sprintf("the out folder %s holds %s but no optimization.json: the optimization they come from is not recorded, and is never restarted silently; nothing was run. Restore %s, or start the optimization over in this folder, setting what it left aside (named in job.json): %s. Or give the job a fresh out folder",
		out, strings.Join(found, ", "), filepath.Join(out, "optimization.json"), again)
}

// holdsFiles reports whether the folder dir holds a file, at any depth
// (an empty folder, as a start cut short before its marker leaves, holds
// nothing to keep).
func holdsFiles(dir string) bool {
	found := errors.New("found")
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			return found
		}
		return nil
	})
	return err == found
}

// inputs reads what the rollouts need, or returns the outcome of a node
// whose inputs are not usable (a setup failure: no rollout was run).
func (o *optRun) inputs(ctx context.Context) (*optInputs, *Outcome) {
	setup := func(format string, args ...any) (*optInputs, *Outcome) {
		out, _ := optFailure(failclass.Setup, format, args...)
		return nil, out
	}
	// The reflection model's URLs are one server's, as the task model's
	// are: the node's key holds the serve stage they are, and another
	// server's reflections would be taken as that stage's
	// (docs/serve.md). validate refuses the lists it sees mixing.
	if _, err := endpointsServer(o.n, o.s.reflURLs); err != nil {
		return setup("reflection_base_url: %s", err)
	}
	var in optInputs
	var err error
	if in.train, err = loadItems(o.root, o.s.eval); err != nil {
		return nil, itemsFailure("the training split: ", err)
	}
	if err := bundleLinkProblem(nil, o.root, o.s.eval.bundle); err != nil {
		return setup("the seed bundle: %s", err)
	}
	if in.seedDigest, err = bundleDigest(o.root, o.s.eval.bundle); err != nil {
		return setup("the seed bundle: %s", err)
	}
	if in.workerDig, err = o.s.eval.workerDigestOf(o.n, o.root); err != nil {
		return setup("%s", err)
	}
	// A serve stage serving the task model: its endpoints, and item keys
	// that hold the weights' identity (docs/serve.md).
	getenv := os.Getenv
	var served bool
	if in.modelKey, served, err = ServeModelKey(o.n, o.s.eval.model, o.s.eval.endpoints); err != nil {
		return setup("%s", err)
	}
	if served {
		getenv = func(string) string { return "" }
	}
	if in.endpoints, err = items.ParseEndpoints(o.s.eval.endpoints, getenv); err != nil {
		return setup("%s (rollouts need the task model)", evalOneLine(err.Error()))
	}
	if err := items.Preflight(ctx, in.endpoints, o.s.eval.model); err != nil {
		return setup("%s (no rollout was run)", evalOneLine(err.Error()))
	}
	return &in, nil
}

// begin starts a fresh optimization: nothing of an earlier one is kept,
// and the started marker is written before the method starts.
func (o *optRun) begin() *Outcome {
	infra := func(format string, args ...any) *Outcome {
		out, _ := optFailure(failclass.Infra, format, args...)
		return out
	}
	for _, p := range []string{filepath.Join(o.out, "optimization.json"), o.optDir} {
		if err := os.RemoveAll(p); err != nil {
			return infra("cannot clear %s: %s", p, err)
		}
	}
	if err := os.MkdirAll(o.incDir, 0o755); err != nil {
		return infra("cannot make %s: %s", o.incDir, err)
	}
	mb, _ := json.Marshal(startedMark{Cache: o.rt.CacheDir(), Node: o.n.Address, Started: time.Now().UTC().Format(time.RFC3339)})
	if err := atomicfile.Write(o.marker, append(mb, '\n'), true); err != nil {
		return infra("cannot write %s: %s", o.marker, err)
	}
	return nil
}

// rolloutEval is the evaluation the rollout service runs rollouts with:
// the node's workers, on the training items, with the node's environment.
func (o *optRun) rolloutEval(in *optInputs, store *items.Store, log *syncWriter) *rolloutEval {
	env := process.Env{Node: o.n.Address, Workspace: o.root, NoGPUs: true, Stage: o.n.Common.Env}.List()
	byID := make(map[string]items.Item, len(in.train))
	for _, it := range in.train {
		byID[it.ID] = it
	}
	ev := &rolloutEval{
		root: o.root, spec: o.s.eval, byID: byID, workerDigest: in.workerDig,
		store: store, endpoints: in.endpoints, env: env, log: log,
		bundleInRequest: o.s.bundleInRequest, modelKey: in.modelKey,
	}
	if ws, ok := o.rt.(WorkerStarter); ok {
		ev.launcher = ws.WorkerLauncher()
	}
	ev.stopGrace = o.n.Common.KillGrace
	if hs, ok := o.rt.(HardStopper); ok {
		ev.hard = hs.HardStop()
	}
	return ev
}

// runMethod runs the optimization method, told where the rollout service
// listens and where to write.
func (o *optRun) runMethod(ctx context.Context, sock, logPath string) (*process.Result, error) {
	s := o.s
	return o.rt.Exec(ctx, Proc{Argv: s.run, Env: map[string]string{
		"CAIRN_ROLLOUT_SOCKET":      sock,
		"CAIRN_BUDGET":              fmt.Sprint(s.budget),
		"CAIRN_JOB_OUT":             o.out,
		"CAIRN_OPTIMIZATION_DIR":    o.optDir,
		"CAIRN_INCUMBENT_DIR":       o.incDir,
		"CAIRN_SEED_BUNDLE":         strings.Join(s.eval.bundle, string(os.PathListSeparator)),
		"CAIRN_TRAIN_ITEMS":         s.eval.itemsPath,
		"MODEL_ID":                  s.eval.model,
		"REFLECTION_MODEL_ID":       s.reflModel,
		"REFLECTION_MODEL_BASE_URL": s.reflURL,
	}, Logs: []string{logPath}})
}

// finish is the node's outcome once the method ended: a method that was
// interrupted, failed or wrote no record leaves its optimization as an
// interrupted one (its started marker stays); else optimization.json
// records it, naming the incumbent when the method proposed one that
// differs from the seed bundle, and the marker is removed.
func (o *optRun) finish(res *process.Result, c rollout.Counts, counts map[string]int, seedDigest, logPath string) (*Outcome, error) {
	s, root := o.s, o.root
	summary := fmt.Sprintf("%d of %d rollouts charged, %d infrastructure failures", c.Charged, c.Budget, c.InfraFailures)
	next := fmt.Sprintf("the next apply does not restart this optimization: it reports it interrupted and runs the rest of the grid. To start it over in this folder, keeping its charged-rollout record (set aside and named in job.json): %s. Or give the job a fresh out folder", o.again)
	switch {
	case res.Class == failclass.Interrupted:
		return &Outcome{Class: res.Class, NoResume: true, Message: fmt.Sprintf("the optimization was interrupted (%s); %s", summary, next), Proc: res, RunCounts: counts}, nil
	case res.Class != "":
		// A method that failed (crashed) leaves its optimization as an
		// interrupted one: its started marker stays.
		return &Outcome{Class: res.Class, NoResume: true, Message: fmt.Sprintf("the method failed: %s (%s; rollout log: %s); %s", res.Message, summary, logPath, next), Proc: res, RunCounts: counts}, nil
	}
	if _, err := os.Stat(filepath.Join(o.optDir, "optimizer_result.json")); err != nil {
		return &Outcome{Class: failclass.Result, Message: fmt.Sprintf("the method exited 0 without writing its record %s (%s)", filepath.Join(s.out, "optimization", "optimizer_result.json"), summary), Proc: res, RunCounts: counts}, nil
	}
	opt := Optimization{
		Format: OptimizationFormat, SeedBundle: s.eval.bundle, Candidate: s.eval.bundle,
		Budget: c.Budget, Charged: c.Charged, Attempted: c.Attempted, InfraFailures: c.InfraFailures,
		FromStore: c.FromStore, Refused: c.Refused,
	}
	if ents, _ := os.ReadDir(o.incDir); len(ents) > 0 {
		rel := filepath.Join(s.out, "optimization", "incumbent")
		d, err := bundleDigest(root, []string{rel})
		if err != nil {
			return optFailure(failclass.Infra, "the incumbent bundle: %s", err)
		}
		if d != seedDigest {
			opt.Proposed, opt.Incumbent, opt.IncumbentDigest, opt.Candidate = true, &rel, &d, []string{rel + "/"}
		}
	}
	b, err := json.MarshalIndent(opt, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(o.out, "optimization.json"), append(b, '\n'), true); err != nil {
		return optFailure(failclass.Infra, "cannot write optimization.json: %s", err)
	}
	if err := os.Remove(o.marker); err != nil {
		return optFailure(failclass.Infra, "cannot remove %s: %s", o.marker, err)
	}
	compact, _ := json.Marshal(opt)
	return &Outcome{Result: compact, Proc: res, RunCounts: counts,
		Files: []string{filepath.Join(s.out, "optimization.json"), filepath.Join(s.out, "optimization")}}, nil
}

// socketPath picks the rollout socket's path: in the node's scratch folder
// when its path fits a Unix socket address (108 bytes), else in a private
// folder under the system's temporary folder.
func socketPath(scratch string) (string, func(), error) {
	p := filepath.Join(scratch, "rollout.sock")
	if len(p) < 100 {
		return p, func() { os.Remove(p) }, nil
	}
	dir, err := os.MkdirTemp("", "cairn-rollout-")
	if err != nil {
		return "", nil, fmt.Errorf("cannot make the rollout socket's folder: %w", err)
	}
	return filepath.Join(dir, "rollout.sock"), func() { os.RemoveAll(dir) }, nil
}

// rolloutEval runs rollouts through the evaluate machinery: a rollout of a
// bundle on a training item is the item evaluated by the worker with the
// bundle in place of {bundle}, stored under its item key.
type rolloutEval struct {
	root         string
	spec         evalSpec
	byID         map[string]items.Item
	workerDigest string
	store        *items.Store
	endpoints    []string
	modelKey     string // the item key's model field (Config.ModelKey)
	env          []string
	log          *syncWriter
	launcher     process.Launcher
	// stopGrace and hard end the workers when the optimization stops
	// (items.Config.StopGrace, Hard).
	stopGrace time.Duration
	hard      <-chan struct{}
	// bundleInRequest: one session serves every bundle, named in each
	// request; else a session per bundle (its folder is in the worker's
	// arguments), the last few kept.
	bundleInRequest bool
	// sessions keep the workers running between requests, by argument
	// list, the most recently used last. Requests are run one at a time
	// (the meter's evaluation lock), so they need no lock of their own.
	sessions []*rolloutSession
	// starts counts the workers of the sessions closed.
	starts int
}

var _ rollout.RequestChecker = (*rolloutEval)(nil)

type rolloutSession struct {
	argv string
	s    *items.Session
}

// maxBundleSessions is how many bundles' workers stay running for a worker
// that takes its bundle in its arguments: the seed bundle's and the
// candidate's a method is scoring.
const maxBundleSessions = 2

// session is the session of workers started with argv, opened when there
// is none.
func (e *rolloutEval) session(ctx context.Context, argv []string) (*items.Session, error) {
	id := strings.Join(argv, "\x00")
	for i, rs := range e.sessions {
		if rs.argv == id {
			if rs.s.Dead() {
				e.closeSession(rs.s)
				e.sessions = append(e.sessions[:i], e.sessions[i+1:]...)
				break
			}
			e.sessions = append(append(e.sessions[:i:i], e.sessions[i+1:]...), rs)
			return rs.s, nil
		}
	}
	s, err := items.OpenSession(ctx, items.Config{
		Worker: argv, Env: e.env, Dir: e.root,
		ModelID: e.spec.model, ModelKey: e.modelKey, Runtime: e.spec.runtime, WorkerDigest: e.workerDigest,
		Replicas: e.spec.replicas, MaxInFlight: e.spec.maxInFlight, ItemTimeout: e.spec.itemTimeout,
		Endpoints: e.endpoints, EndpointConcurrency: e.spec.epLimit, SkipPreflight: true,
		Store: e.store, Log: e.log, Retry: e.spec.retry(), Launcher: e.launcher,
		StopGrace: e.stopGrace, Hard: e.hard,
	})
	if err != nil {
		return nil, err
	}
	if len(e.sessions) >= maxBundleSessions {
		e.closeSession(e.sessions[0].s)
		e.sessions = e.sessions[1:]
	}
	e.sessions = append(e.sessions, &rolloutSession{argv: id, s: s})
	return s, nil
}

// prestart opens the session of the worker command as written (the one
// session of a worker that takes its bundle in its requests) and starts its
// workers. An error is left for the first request, which meets it again.
func (e *rolloutEval) prestart(ctx context.Context) {
	if s, err := e.session(ctx, e.spec.worker); err == nil {
		_ = s.Start()
	}
}

// closeSession ends a session's workers and counts them.
func (e *rolloutEval) closeSession(s *items.Session) {
	s.Close()
	e.starts += s.WorkerStarts()
}

// close ends every session's workers.
func (e *rolloutEval) close() {
	for _, rs := range e.sessions {
		e.closeSession(rs.s)
	}
	e.sessions = nil
}

// absBundle is a rollout request's bundle as an absolute path.
func (e *rolloutEval) absBundle(bundle string) string {
	if filepath.IsAbs(bundle) {
		return bundle
	}
	return filepath.Join(e.root, bundle)
}

// CheckRequest implements rollout.RequestChecker: the bundle is a folder
// and every item is one of the training split's.
func (e *rolloutEval) CheckRequest(bundle string, ids []string) error {
	if st, err := os.Stat(e.absBundle(bundle)); err != nil || !st.IsDir() {
		return fmt.Errorf("%w: %s is not a folder (a bundle is the folder of a candidate's files)", rollout.ErrBadBundle, bundle)
	}
	for _, id := range ids {
		if _, ok := e.byID[id]; !ok {
			return fmt.Errorf("%w: %q is not an item of the training split %s", rollout.ErrUnknownItem, id, e.spec.itemsPath)
		}
	}
	return nil
}

// Rollouts implements rollout.Evaluator; the meter has checked the
// request (CheckRequest, and no item twice).
func (e *rolloutEval) Rollouts(ctx context.Context, bundle string, ids []string) ([]rollout.Outcome, error) {
	if err := e.CheckRequest(bundle, ids); err != nil {
		return nil, err
	}
	abs := e.absBundle(bundle)
	digest, err := bundleDigest("", []string{abs})
	if err != nil {
		return nil, fmt.Errorf("%w: %s", rollout.ErrBadBundle, err)
	}
	arg := abs
	if rel, err := filepath.Rel(e.root, abs); err == nil && filepath.IsLocal(rel) {
		arg = rel
	}
	argv := make([]string, len(e.spec.worker))
	for i, a := range e.spec.worker {
		argv[i] = strings.ReplaceAll(a, BundlePlaceholder, arg)
	}
	batch := items.Batch{BundleDigest: digest}
	if e.bundleInRequest {
		batch.Bundle = arg
	}
	list := make([]items.Item, len(ids))
	for i, id := range ids {
		list[i] = e.byID[id]
	}
	batch.Items = list
	sess, err := e.session(ctx, argv)
	if err != nil {
		return nil, err
	}
	sum, err := sess.Evaluate(ctx, batch)
	if err != nil && !errors.Is(err, items.ErrIncomplete) {
		return nil, err // the session is dead: the next request opens another
	}
	// The results found in the store are read in one pass over its log.
	var keys []string
	for _, o := range sum.Items {
		if o.Done && !o.Failed && o.Result == nil {
			keys = append(keys, o.Key)
		}
	}
	stored, _, serr := e.store.GetAll(keys)
	out := make([]rollout.Outcome, len(sum.Items))
	next := 0 // into stored
	for i, o := range sum.Items {
		r := rollout.Outcome{Item: o.ID, Key: o.Key, Score: o.Score, Cached: o.Cached}
		switch {
		case o.Failed || !o.Done:
			r.InfraFailure, r.Score, r.Error = true, nil, o.Reason
		case o.Result != nil:
			r.Outputs, r.Error = o.Result.Outputs, o.Result.Error
		default:
			if serr == nil {
				r.Outputs, r.Error = stored[next].Outputs, stored[next].Error
			}
			next++
		}
		out[i] = r
	}
	return out, nil
}

// lineCount is the number of lines of a file (0 when it cannot be read),
// a last line without its newline counted too: in a charged-rollout
// record it is a rollout charged (a record cut short, or one added by
// hand), never one to leave out of the count.
func lineCount(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := bytes.Count(b, []byte("\n"))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// setAsideOptimization moves an earlier optimization of the job (its
// optimization folder and optimization.json) to optimization.attempt-N in
// the out folder, and names it in job.json: its charged-rollout record is
// kept.
func setAsideOptimization(root, out string, interrupted bool) error {
	dir := filepath.Join(root, out)
	var aside string
	for i := 1; ; i++ {
		aside = fmt.Sprintf("optimization.attempt-%d", i)
		if _, err := os.Lstat(filepath.Join(dir, aside)); os.IsNotExist(err) {
			break
		}
	}
	// job.json (a job stage's) names the attempt; it is read before
	// anything moves, so that a job.json that cannot take it leaves the
	// folder as it was.
	_, err := os.Stat(filepath.Join(dir, "job.json"))
	hasJob := err == nil
	if hasJob {
		if err := addEarlierAttempt(root, out, EarlierAttempt{}, true); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "optimization"), 0o755); err != nil {
		return err
	}
	charged := lineCount(filepath.Join(dir, "optimization", "rollouts.jsonl"))
	if err := os.Rename(filepath.Join(dir, "optimization"), filepath.Join(dir, aside)); err != nil {
		return err
	}
	undo := func(err error) error {
		_ = os.Rename(filepath.Join(dir, aside, "optimization.json"), filepath.Join(dir, "optimization.json"))
		_ = os.Rename(filepath.Join(dir, aside), filepath.Join(dir, "optimization"))
		return err
	}
	if err := os.Rename(filepath.Join(dir, "optimization.json"), filepath.Join(dir, aside, "optimization.json")); err != nil && !os.IsNotExist(err) {
		return undo(err)
	}
	a := EarlierAttempt{Folder: filepath.Join(out, aside), Interrupted: interrupted,
		ChargedRollouts: charged, SetAside: time.Now().UTC().Format(time.RFC3339)}
	if !hasJob {
		// No job stage: the attempt names itself, in its own folder.
		b, _ := json.MarshalIndent(a, "", "  ")
		if err := atomicfile.Write(filepath.Join(dir, aside, SetAsideFile), append(b, '\n'), true); err != nil {
			return undo(err)
		}
		return nil
	}
	if err := addEarlierAttempt(root, out, a, false); err != nil {
		return undo(err)
	}
	return nil
}

// SetAsideFile names, in an optimization set aside where the out folder
// has no job.json (an optimize stage without a job stage), the attempt:
// what job.json's earlier_attempts would say of it.
const SetAsideFile = "set_aside.json"

// savedOptimization is the result of a finished optimization read from the
// out folder: its optimization.json, checked against the incumbent bundle
// and the charged-rollout record beside it (savedRefusal). Nothing is run.
func savedOptimization(root string, s optSpec, n *Node, rt Runtime) (*Outcome, error) {
	opt, why := savedRefusal(root, s, n.Address)
	if why != "" {
		return &Outcome{Class: failclass.Setup, Refused: true, Message: why}, nil
	}
	rel := filepath.Join(s.out, "optimization.json")
	note(rt, n.Address, "finished earlier: %s is kept (%d of %d rollouts charged); the method is not run again", rel, opt.Charged, opt.Budget)
	compact, _ := json.Marshal(opt)
	return &Outcome{Result: compact, Files: []string{rel, filepath.Join(s.out, "optimization")}}, nil
}

// savedRefusal reads the out folder's optimization.json and says why it
// is not the record of the folder's optimization (its budget, its charged
// rollouts against the record's lines, its incumbent's digest against the
// folder's incumbent), or "": the one check plan shows and apply makes, so
// that a plan never calls a folder taken that apply refuses. addr is the
// optimize node's address, for the --replace that starts it over.
func savedRefusal(root string, s optSpec, addr string) (opt Optimization, why string) {
	rel := filepath.Join(s.out, "optimization.json")
	refuse := func(format string, args ...any) (Optimization, string) {
		return opt, fmt.Sprintf("%s: ", rel) + fmt.Sprintf(format, args...) +
			fmt.Sprintf("; nothing was run. It is not the record of this folder's optimization: restore it, or start the optimization over with --replace '%s'", addr)
	}
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return refuse("%s", err)
	}
	if err := json.Unmarshal(b, &opt); err != nil || opt.Format != OptimizationFormat {
		return refuse("it is not an optimization.json of format %s", OptimizationFormat)
	}
	if opt.Budget != s.budget {
		return refuse("budget is %d, this job's is %d", opt.Budget, s.budget)
	}
	if got := lineCount(filepath.Join(root, s.out, "optimization", "rollouts.jsonl")); got != opt.Charged {
		return refuse("charged_rollouts is %d, optimization/rollouts.jsonl records %d", opt.Charged, got)
	}
	if opt.Proposed {
		if opt.Incumbent == nil || opt.IncumbentDigest == nil {
			return refuse("proposed is true without an incumbent and its digest")
		}
		d, err := bundleDigest(root, []string{*opt.Incumbent})
		if err != nil || d != *opt.IncumbentDigest {
			return refuse("incumbent_digest is %s, the incumbent folder's content is %s", *opt.IncumbentDigest, d)
		}
	}
	return opt, ""
}
