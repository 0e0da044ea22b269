package stages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"golang.org/x/text/unicode/norm"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/stages/items"
	"github.com/cairn-run/cairn/stages/jsonpos"
	"github.com/cairn-run/cairn/storage/atomicfile"
	"github.com/cairn-run/cairn/storage/digest"
)

// Evaluate scores a dataset item by item through a worker (the protocol of
// docs/worker-protocol.md), keeping every item's result in the cache's item
// store, which all pipelines sharing the cache read.
//
//	stage "evaluate" "seed_bundle" {
//	  worker    = ["python3", "workers/chat_worker.py", "--system-prompt-file", "bundles/seed/system.txt"]
//	  items     = "data/hotpotqa_val.jsonl"     # or a list of objects
//	  item_id   = "id"                          # the field naming each item (default "id")
//	  bundle    = ["bundles/seed/"]             # files whose content identifies what is evaluated
//	  model     = "Qwen/Qwen3.5-9B"
//	  runtime   = { topology = "centralized", team_size = 3, temperature = 0, eval_seed = 0 }
//	  endpoints = var.task_endpoints            # else TASK_ENDPOINTS, else VLLM_BASE_URL
//	  replicas = 1  max_in_flight = 8  item_timeout = "10m"  retry_infra = 3  endpoint_concurrency = 0
//	  scores    = "out/seed_bundle/scores.jsonl"
//	  needed    = !fileexists("runs/j/selection.json")   # false: nothing is evaluated, the result is null
//	}
//
// An item's key covers the bundle's content, the item, the model, the
// runtime settings and the worker's code, and nothing about the stage or the
// pipeline: another pipeline that evaluates the same items reads their
// results from the store. The node's own key covers the same things (the
// dataset, bundle and worker files are inputs of the node), so a node whose
// key is cached does not run at all; one whose key differs (another stage,
// another scores path, an upstream that changed) runs and finds its items in
// the store.
type Evaluate struct{}

func init() { Register(Evaluate{}) }

// Name implements Kind.
func (Evaluate) Name() string { return "evaluate" }

// Version implements Kind.
// Version 2: the result holds no run counts; the scores file has each
// item's error and outputs.
func (Evaluate) Version() int { return 2 }

// Schema implements Kind.
func (Evaluate) Schema() *hcl.BodySchema {
	return &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "worker", Required: true},
		{Name: "items", Required: true},
		{Name: "item_id"},
		{Name: "bundle"},
		{Name: "model", Required: true},
		{Name: "runtime"},
		{Name: "endpoints"},
		{Name: "replicas"},
		{Name: "max_in_flight"},
		{Name: "item_timeout"},
		{Name: "retry_infra"},
		{Name: "endpoint_concurrency"},
		{Name: "scores", Required: true},
		{Name: "needed"},
	}}
}

// KeyExcluded implements KeyExcluder: where requests go and how many run at
// once do not change a result; nor does needed, so that a node cached when
// it was needed stays cached once the artifact made from it is written.
func (Evaluate) KeyExcluded() []string {
	return []string{"endpoints", "replicas", "max_in_flight", "item_timeout", "retry_infra", "endpoint_concurrency", "needed"}
}

// Check implements Kind.
func (Evaluate) Check(n *Node) hcl.Diagnostics {
	_, diags := decodedOnce(n, decodeEvaluate)
	if n.Common.GPUs > 0 {
		diags = append(diags, Diag("Invalid gpus",
			"An evaluate stage leases no GPU: its workers send requests to the task model's endpoints. Serve the model on the GPUs (vLLM) and list its endpoints instead.", n.Range("gpus"))...)
	}
	return diags
}

// PathAttrs implements PathLinker.
func (Evaluate) PathAttrs() []PathAttr { return evaluatePaths }

var evaluatePaths = []PathAttr{{Attr: "items"}, {Attr: "bundle"}, {Attr: "worker", Args: true}, {Attr: "scores", Write: true}}

// RewrittenOutputs implements Rewriter: every attempt that succeeds
// writes the scores file, unless needed is false (it then writes nothing,
// and the file of the evaluation that made what it is for stays).
func (e Evaluate) RewrittenOutputs(n *Node) []string {
	if needed, known := e.Needed(n); known && !needed {
		return nil
	}
	s, diags := decodeEvaluate(n)
	if diags.HasErrors() || s.scores == "" {
		return nil
	}
	return []string{s.scores}
}

// DeclaredOutputs implements OutputDeclarer: the scores file.
func (Evaluate) DeclaredOutputs(n *Node) []DeclaredPath {
	s, diags := decodedOnce(n, decodeEvaluate)
	if diags.HasErrors() || s.scores == "" {
		return nil
	}
	return []DeclaredPath{{Attr: "scores", Path: s.scores}}
}

// ChangeNote implements ChangeNoter: env reruns the node, but its items
// come from the store (env does not key them).
func (Evaluate) ChangeNote(attr string) string { return envChangeNote(attr) }

// envChangeNote is what plan adds to the reason of an evaluation (or an
// optimization) rerun for another env.
func envChangeNote(attr string) string {
	if attr != "env" {
		return ""
	}
	return "items are not keyed by env: they come from the store; put what changes a result in runtime"
}

// FollowedInputs implements LinkFollower: the worker reads the bundle's
// files through their links.
func (Evaluate) FollowedInputs(n *Node) []string {
	s, diags := decodedOnce(n, decodeEvaluate)
	if diags.HasErrors() {
		return nil
	}
	return s.bundle
}

// CheckWorkspace implements WorkspaceChecker: a bundle holding a link that
// leads outside the workspace is refused before anything runs (exit 2).
func (Evaluate) CheckWorkspace(n *Node, root string) hcl.Diagnostics {
	s, diags := decodedOnce(n, decodeEvaluate)
	if diags.HasErrors() {
		return nil
	}
	return s.checkBundle(n, root)
}

// DeclaredInputs implements InputDeclarer: the dataset file, the bundle and
// the worker's files in the workspace key the node.
func (Evaluate) DeclaredInputs(n *Node, root string) []DeclaredPath {
	s, diags := decodedOnce(n, decodeEvaluate)
	if diags.HasErrors() {
		return nil
	}
	return s.inputs(n.Look, root)
}

// inputs are the files in the workspace that key an evaluation: the
// dataset file, the bundle and the worker's files and folders.
func (s evalSpec) inputs(look *Look, root string) []DeclaredPath {
	return s.inputsWith(s.workerPaths(look, root))
}

// inputsWith is inputs with the worker's files and folders found already
// (workerPaths).
func (s evalSpec) inputsWith(workers []workerFile) []DeclaredPath {
	var out []DeclaredPath
	if s.itemsPath != "" {
		out = append(out, DeclaredPath{Attr: "items", Path: s.itemsPath})
	}
	for _, b := range s.bundle {
		out = append(out, DeclaredPath{Attr: "bundle", Path: b})
	}
	for _, w := range workers {
		out = append(out, DeclaredPath{Attr: "worker", Path: w.path})
	}
	return out
}

// stageInputs are the paths of the stage's own inputs attribute among
// the node's inputs: those the kind does not declare itself (inputs
// names), which key the items each in its own part of the item key.
// workers are the worker's files and folders (workerPaths).
func (s evalSpec) stageInputs(n *Node, workers []workerFile) []string {
	own := map[string]bool{}
	for _, p := range s.inputsWith(workers) {
		own[p.Path] = true
	}
	var out []string
	for _, p := range n.Common.Inputs {
		if !own[p] {
			out = append(out, p)
		}
	}
	return out
}

// workerDigestOf identifies the node's worker (workerDigest), with the
// digests its key holds of the folders the worker's arguments name and
// of the stage's inputs (Node.InputDigests): a module the worker imports
// from a folder in inputs is part of what it is. The worker's files are
// found once, for both.
func (s evalSpec) workerDigestOf(n *Node, root string) (string, error) {
	workers := s.workerPaths(n.Look, root)
	return workerDigest(root, workers, s.worker, n.InputDigests, s.stageInputs(n, workers))
}

// evalSpec is an evaluate node's decoded attributes. Attributes whose value
// is not known yet (plan time) keep their defaults.
type evalSpec struct {
	worker      []string
	itemsPath   string            // workspace-relative, when items names a file
	itemsList   []json.RawMessage // when items is a list
	itemsInline bool
	itemID      string
	itemIDSet   bool
	bundle      []string
	model       string
	runtime     map[string]any
	endpoints   []string
	replicas    int
	maxInFlight int
	itemTimeout time.Duration
	retryInfra  int // -1: not set
	epLimit     int
	scores      string
	needed      bool // false: needed = false
}

func decodeEvaluate(n *Node) (evalSpec, hcl.Diagnostics) {
	s := evalSpec{itemID: "id", retryInfra: -1, needed: true}
	d := &evalDecoder{n: n}
	d.worker(&s)
	d.items(&s)
	d.itemID(&s)
	d.itemList(&s)
	d.needed(&s)
	d.bundle(&s)
	d.model(&s)
	d.runtime(&s)
	d.endpoints(&s)
	d.limits(&s)
	if p, ok := d.str("scores"); ok {
		if clean, ok := d.path("scores", p); ok {
			s.scores = clean
		}
	}
	return s, d.diags
}

// evalDecoder decodes an evaluate node's attributes, gathering what is
// wrong with them. An attribute whose value is not known yet (plan time)
// is left alone.
type evalDecoder struct {
	n     *Node
	diags hcl.Diagnostics
}

func (d *evalDecoder) bad(attr, detail string) {
	d.diags = append(d.diags, Diag("Invalid "+attr, detail, d.n.Range(attr))...)
}

// known is attr's value, unmarked, when it is set, known and not null.
func (d *evalDecoder) known(attr string) (cty.Value, bool) {
	v, ok := d.n.Args[attr]
	if !ok || !whollyKnown(v) || v.IsNull() {
		return cty.NilVal, false
	}
	return unmarkDeep(v), true
}

func (d *evalDecoder) str(attr string) (string, bool) {
	v, ok := d.known(attr)
	if !ok {
		return "", false
	}
	sv, err := convert.Convert(v, cty.String)
	if err != nil || !v.Type().IsPrimitiveType() {
		d.bad(attr, fmt.Sprintf("%s must be a string, not %s.", attr, v.Type().FriendlyName()))
		return "", false
	}
	return sv.AsString(), true
}

func (d *evalDecoder) path(attr, p string) (string, bool) {
	clean := filepath.Clean(p)
	if p == "" || !filepath.IsLocal(clean) {
		d.bad(attr, fmt.Sprintf("%q is not a workspace-relative path: paths must not be empty or absolute, nor leave the workspace with \"..\".", p))
		return "", false
	}
	return clean, true
}

// count is attr's whole number, from min to 2^20 (0 when not set).
func (d *evalDecoder) count(attr string, min int) int {
	v, ok := d.known(attr)
	if !ok {
		return 0
	}
	nv, err := convert.Convert(v, cty.Number)
	if err != nil {
		d.bad(attr, fmt.Sprintf("%s must be a whole number.", attr))
		return 0
	}
	i, acc := nv.AsBigFloat().Int64()
	if acc != big.Exact || i < int64(min) || i > 1<<20 {
		d.bad(attr, fmt.Sprintf("%s must be a whole number from %d to %d.", attr, min, 1<<20))
		return 0
	}
	return int(i)
}

func (d *evalDecoder) worker(s *evalSpec) {
	v, ok := d.known("worker")
	if !ok {
		return
	}
	argv, err := StringList(v)
	switch {
	case err != nil:
		d.bad("worker", fmt.Sprintf("worker is the worker's argument list, like [\"python3\", \"worker.py\"]: %s.", err))
	case len(argv) == 0:
		d.bad("worker", "worker must name a program: it is empty.")
	default:
		s.worker = argv
	}
}

// items is the dataset: a file's path, or the items themselves, as JSON.
func (d *evalDecoder) items(s *evalSpec) {
	v, ok := d.known("items")
	if !ok {
		return
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		if p, ok := d.path("items", v.AsString()); ok {
			s.itemsPath = p
		}
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		s.itemsInline = true
		// An item written in the list keeps the digits of its numbers,
		// as a dataset file's does (dsl.WrittenJSON).
		x, src := d.n.Source.Written("items")
		tc, written := dsl.TupleConsOf(x)
		written = written && src != nil && !ty.IsSetType() && len(tc.Exprs) == v.LengthInt()
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.IsNull() {
				d.bad("items", fmt.Sprintf("item %d is null.", len(s.itemsList)))
				break
			}
			var b []byte
			var err error
			if written {
				b, err = dsl.WrittenJSON(tc.Exprs[len(s.itemsList)], e, src)
			} else {
				b, err = dsl.MarshalJSON(e, e.Type())
			}
			if err != nil {
				d.bad("items", fmt.Sprintf("item %d cannot be written as JSON: %s.", len(s.itemsList), err))
				break
			}
			s.itemsList = append(s.itemsList, b)
		}
	default:
		d.bad("items", fmt.Sprintf("items is the path of a JSONL or JSON dataset file, or a list of objects; not %s.", ty.FriendlyName()))
	}
}

// itemList refuses an items list written in the pipeline whose items
// would be refused at apply (two with one id, one without the id field),
// once items and item_id decoded cleanly.
func (d *evalDecoder) itemList(s *evalSpec) {
	if !s.itemsInline || d.diags.HasErrors() {
		return
	}
	if _, err := loadItems("", *s); err != nil {
		d.bad("items", err.Error()+".")
	}
}

// needed is false only when the attribute is false.
func (d *evalDecoder) needed(s *evalSpec) {
	v, ok := d.known("needed")
	if !ok {
		return
	}
	if v.Type() != cty.Bool {
		got := v.Type().FriendlyName()
		switch v.Type() {
		case cty.String:
			got = fmt.Sprintf("the string %q", v.AsString())
		case cty.Number:
			got = "the number " + v.AsBigFloat().Text('g', -1)
		}
		d.bad("needed", fmt.Sprintf("needed must be true or false (like !fileexists(\"selection.json\")), not %s.", got))
		return
	}
	s.needed = v.True()
}

func (d *evalDecoder) itemID(s *evalSpec) {
	if id, ok := d.str("item_id"); ok {
		if id == "" {
			d.bad("item_id", "item_id names the field holding each item's id; it is empty.")
		} else {
			s.itemID, s.itemIDSet = id, true
		}
	}
}

func (d *evalDecoder) bundle(s *evalSpec) {
	v, ok := d.known("bundle")
	if !ok {
		return
	}
	list, err := StringList(v)
	if err != nil {
		d.bad("bundle", fmt.Sprintf("bundle is a list of workspace-relative files or folders: %s.", err))
	}
	for _, p := range list {
		if clean, ok := d.path("bundle", p); ok {
			s.bundle = append(s.bundle, clean)
		}
	}
}

func (d *evalDecoder) model(s *evalSpec) {
	if m, ok := d.str("model"); ok {
		if strings.TrimSpace(m) == "" {
			d.bad("model", "model is the task model's id as the endpoints serve it; it is empty.")
		} else {
			s.model = m
		}
	}
}

// runtime is the object of settings that change a result, as JSON.
func (d *evalDecoder) runtime(s *evalSpec) {
	v, ok := d.known("runtime")
	if !ok {
		return
	}
	ty := v.Type()
	if !(ty.IsObjectType() || ty.IsMapType()) {
		d.bad("runtime", "runtime is an object of the settings that change a result: topology, framework, communication format, team size, decoding parameters, evaluation seed.")
	} else if err := decodeValue(v, &s.runtime, false, true); err != nil {
		d.bad("runtime", fmt.Sprintf("runtime cannot be written as JSON: %s.", err))
	}
}

func (d *evalDecoder) endpoints(s *evalSpec) {
	v, ok := d.known("endpoints")
	if !ok {
		return
	}
	if v.Type() == cty.String {
		s.endpoints = strings.Split(v.AsString(), ",")
	} else if list, err := StringList(v); err != nil {
		d.bad("endpoints", fmt.Sprintf("endpoints is a list of base URLs (or one comma-separated string): %s.", err))
	} else {
		s.endpoints = list
	}
	// An endpoint written in the pipeline that is no URL is refused now,
	// not when the evaluation starts (an empty list falls back to the
	// environment, read then).
	if _, err := items.ParseEndpoints(s.endpoints, func(string) string { return "" }); err != nil && !errors.Is(err, items.ErrNoEndpoints) {
		d.bad("endpoints", err.Error()+".")
	}
}

// limits are the counts and the item timeout.
func (d *evalDecoder) limits(s *evalSpec) {
	s.replicas = d.count("replicas", 1)
	s.maxInFlight = d.count("max_in_flight", 1)
	s.epLimit = d.count("endpoint_concurrency", 0)
	if _, ok := d.known("retry_infra"); ok {
		s.retryInfra = d.count("retry_infra", 0)
	}
	if v, ok := d.known("item_timeout"); ok {
		t, err := durationValue(v)
		if err == nil && t <= 0 {
			err = errors.New("item_timeout must be positive")
		}
		if err != nil {
			d.bad("item_timeout", err.Error()+".")
		}
		s.itemTimeout = t
	}
}

// retry is the items' retry policy: retry_infra's count, 0 meaning none.
func (s evalSpec) retry() items.RetryPolicy {
	var p items.RetryPolicy
	switch {
	case s.retryInfra == 0:
		p.InfraFailures = -1 // no retry
	case s.retryInfra > 0:
		p.InfraFailures = s.retryInfra
	}
	return p
}

// durationValue reads "90s", "10m" or a number of seconds, at most
// dsl.MaxDuration.
func durationValue(v cty.Value) (time.Duration, error) {
	switch v.Type() {
	case cty.Number:
		f, _ := v.AsBigFloat().Float64()
		if d, ok := dsl.SecondsDuration(f); ok {
			return d, nil
		}
		return 0, dsl.DurationTooLarge(fmt.Sprintf("item_timeout = %s (seconds)", v.AsBigFloat().Text('g', 6)))
	case cty.String:
		s := strings.TrimSpace(v.AsString())
		if d, ok, err := dsl.ParseGoDuration(s); ok {
			return d, err
		}
		// Seconds, written as a JSON number: Go's ParseFloat also takes
		// "0x1p4", "+5", ".5" and "inf", which no one means as seconds.
		if f, err := strconv.ParseFloat(s, 64); err == nil && jsonpos.IsNumber(s) {
			if d, ok := dsl.SecondsDuration(f); ok {
				return d, nil
			}
			return 0, dsl.DurationTooLarge(fmt.Sprintf("%q (seconds)", s))
		}
		return 0, fmt.Errorf("%q is not a duration: write it like \"90s\" or \"10m\"", s)
	}
	return 0, fmt.Errorf("item_timeout must be a duration like \"10m\", not %s", v.Type().FriendlyName())
}

// workerFile is a file or folder of the workspace named in the worker's
// argv.
type workerFile struct {
	arg    int    // its index in argv
	prefix string // what of the argument comes before the path: "--prompt=", or ""
	path   string // workspace-relative, clean
	dir    bool   // a folder
}

// workerPaths are the worker's files and folders (workerFiles), less a
// folder that holds the scores file: the node's own output is no input
// of its worker.
func (s evalSpec) workerPaths(look *Look, root string) []workerFile {
	all := workerFiles(look, root, s.worker)
	out := all[:0:0]
	for _, w := range all {
		if w.dir && s.scores != "" && strings.HasPrefix(s.scores, w.path+string(filepath.Separator)) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// workerFiles returns the argv elements that name regular files or
// folders of the workspace (not the workspace itself): the worker's
// script, its configuration, a folder of prompts. An argument names one
// whole ("worker.py") or after its first "=" ("--prompt=p.txt",
// "prompt_file=p.txt"), by a path relative to the workspace or an
// absolute one inside it. Their content, not their names, identifies the
// worker.
func workerFiles(look *Look, root string, argv []string) []workerFile {
	var out []workerFile
	absRoot, _ := filepath.Abs(root)
	for i, a := range argv {
		for _, v := range ArgPaths(a) {
			clean := filepath.Clean(v)
			if filepath.IsAbs(clean) {
				rel, ok := workspaceRel(absRoot, clean)
				if !ok {
					continue
				}
				clean = rel
			}
			if !filepath.IsLocal(clean) || clean == "." {
				continue
			}
			st, err := look.Stat(filepath.Join(root, clean))
			if err != nil || !st.Mode().IsRegular() && !st.IsDir() {
				continue
			}
			prefix := ""
			if v != a {
				prefix = a[:len(a)-len(v)]
			}
			out = append(out, workerFile{arg: i, prefix: prefix, path: clean, dir: st.IsDir()})
			break
		}
	}
	return out
}

// workspaceRel is p, an absolute path, relative to absRoot when it lies
// inside: as written, or through the links that lead to both (a workspace
// reached through a link, ~/work to a data disk, named by the path the
// link leads to, or the other way round). p's own last element is not
// followed: where a link in the workspace leads is the worker files'
// rule. ok is false for a path outside.
func workspaceRel(absRoot, p string) (string, bool) {
	if rel, err := filepath.Rel(absRoot, p); err == nil && filepath.IsLocal(rel) {
		return rel, true
	}
	realRoot, err := filepath.EvalSymlinks(absRoot)
	if err != nil {
		return "", false
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(realRoot, filepath.Join(dir, filepath.Base(p)))
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return rel, true
}

// workerDigest identifies the worker: its argv, with each workspace file
// (files, from workerFiles) replaced by the digest of its content and each
// folder by its tree digest (after what comes before it in its argument:
// "--prompt="), and the digests of the stage's inputs (stageInputs).
// The tree digests are those the node's key holds (digests, hex by
// path); a worker without folders and a stage without inputs need none,
// and their digest is what it was before either counted.
func workerDigest(root string, files []workerFile, argv []string, digests map[string]string, stageInputs []string) (string, error) {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = "arg:" + a
	}
	tree := func(what, p string) (string, error) {
		d, ok := digests[p]
		if !ok {
			return "", fmt.Errorf("%s %s: its content was not digested for the node's key (is it missing?)", what, p)
		}
		return "sha256:" + d, nil
	}
	for _, f := range files {
		var d string
		var err error
		kind := "file:"
		if f.dir {
			kind = "dir:"
			d, err = tree("worker folder", f.path)
		} else if d, err = fileDigest(filepath.Join(root, f.path)); err != nil {
			err = fmt.Errorf("worker file %s: %w", f.path, err)
		}
		if err != nil {
			return "", err
		}
		parts[f.arg] = kind + d
		if f.prefix != "" {
			parts[f.arg] = "arg:" + f.prefix + kind + d
		}
	}
	var inputs map[string]string
	for _, p := range stageInputs {
		d, err := tree("input", p)
		if err != nil {
			return "", err
		}
		if inputs == nil {
			inputs = map[string]string{}
		}
		inputs[p] = d
	}
	b, _ := json.Marshal(struct {
		V      string            `json:"v"`
		Argv   []string          `json:"argv"`
		Inputs map[string]string `json:"inputs,omitempty"`
	}{"cairn.worker.v1", parts, inputs})
	return digestBytes(b), nil
}

// bundleDigest identifies the bundle: the content of its files in the order
// listed (a folder contributes its files' paths inside it and contents,
// through its links: bundleFiles), not where the bundle lives. Paths are
// relative to root, or absolute.
func bundleDigest(root string, paths []string) (string, error) {
	h := sha256.New()
	io.WriteString(h, "cairn.bundle.v1\n")
	for _, p := range paths {
		full := p
		if !filepath.IsAbs(p) {
			full = filepath.Join(root, p)
		}
		st, err := os.Stat(full)
		if err != nil {
			return "", fmt.Errorf("bundle %s: %w", p, err)
		}
		if !st.IsDir() {
			d, err := fileDigest(full)
			if err != nil {
				return "", fmt.Errorf("bundle %s: %w", p, err)
			}
			fmt.Fprintf(h, "file %s\n", d)
			continue
		}
		files, err := bundleFiles(full, "")
		if err != nil {
			return "", fmt.Errorf("bundle %s: %w", p, err)
		}
		fmt.Fprintf(h, "dir %d\n", len(files))
		for _, rel := range files {
			d, err := fileDigest(filepath.Join(full, rel))
			if err != nil {
				return "", fmt.Errorf("bundle %s: %w", p, err)
			}
			fmt.Fprintf(h, "%q %s\n", rel, d)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// bundleFiles lists the files of the bundle folder dir by their paths
// inside it, "/"-separated, sorted. Links are followed, as the worker
// reads through them: a link to a file is that file, one to a folder
// holds its files. With realRoot (the workspace's real path) set, a link
// that leads outside it is refused (errLinkOutside): what it points to
// would key the items without being part of the workspace. A folder
// named __pycache__ is left out, with all it holds.
func bundleFiles(dir, realRoot string) ([]string, error) {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	var walk func(full, real, rel string, above []string) error
	walk = func(full, real, rel string, above []string) error {
		ents, err := os.ReadDir(full)
		if err != nil {
			return err
		}
		for _, e := range ents {
			p, r, pr := filepath.Join(full, e.Name()), path.Join(rel, e.Name()), filepath.Join(real, e.Name())
			isDir := e.IsDir()
			if e.Type()&fs.ModeSymlink != 0 {
				if pr, err = filepath.EvalSymlinks(p); err != nil {
					target, _ := os.Readlink(p)
					if errors.Is(err, fs.ErrNotExist) {
						return &errLink{rel: r, at: filepath.Join(real, e.Name()), target: target, broken: true}
					}
					if _, serr := os.Stat(p); errors.Is(serr, syscall.ELOOP) {
						// A loop of links (EvalSymlinks says only
						// "too many links").
						return &errLink{rel: r, at: filepath.Join(real, e.Name()), target: target, cycle: true}
					}
					return fmt.Errorf("link %s: %w", r, err)
				}
				if realRoot != "" && pr != realRoot && !strings.HasPrefix(pr, realRoot+string(filepath.Separator)) {
					return &errLinkOutside{rel: r, target: pr}
				}
				st, err := os.Stat(pr)
				if err != nil {
					return fmt.Errorf("link %s: %w", r, err)
				}
				isDir = st.IsDir()
				if isDir && slices.Contains(above, pr) {
					target, _ := os.Readlink(p)
					return &errLink{rel: r, at: filepath.Join(real, e.Name()), target: target, cycle: true}
				}
			} else if !isDir && !e.Type().IsRegular() {
				continue
			}
			switch {
			case !isDir:
				files = append(files, r)
			case e.Name() == "__pycache__":
				// Python's bytecode, derived from the sources beside
				// it: left out, as the node's key leaves it out of the
				// bundle's folders (engine/fsdigest, docs/keys.md).
			default:
				if err := walk(p, pr, r, append(above, pr)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(dir, realDir, "", []string{realDir}); err != nil {
		return nil, err
	}
	sort.Strings(files)
	return files, nil
}

// errLinkOutside is a link in a bundle that leads outside the workspace.
type errLinkOutside struct{ rel, target string }

func (e *errLinkOutside) Error() string {
	return fmt.Sprintf("%s is a link to %s, outside the workspace", e.rel, e.target)
}

// errLink is a link in a bundle that leads to nothing (broken) or back
// into a folder it is in (cycle, or a loop of links): rel is the path it
// was met by in the bundle, at where it lies (its folder's links
// resolved), target what it says it points to.
type errLink struct {
	rel, at, target string
	broken, cycle   bool
}

// where names the link by where it lies in the workspace (realRoot),
// else by the path it was met by in the bundle p.
func (e *errLink) where(p, realRoot string) string {
	if rel, err := filepath.Rel(realRoot, e.at); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return path.Join(p, e.rel)
}

func (e *errLink) Error() string {
	if e.broken {
		return fmt.Sprintf("link %s to %s leads to nothing", e.rel, e.target)
	}
	return fmt.Sprintf("link %s to %s leads back into a folder it is in", e.rel, e.target)
}

// bundleLinkProblem refuses a bundle folder holding a link that leads
// outside the workspace root (errLinkOutside), to nothing, or back into
// a folder it is in (errLink): the worker reads the bundle through its
// links, and its files' content identifies it. nil when there is none, or
// when a folder cannot be read (its digest says why). Each refusal says
// what to do.
func bundleLinkProblem(look *Look, root string, bundle []string) error {
	realRoot := ""
	for _, p := range bundle {
		full := filepath.Join(root, p)
		if st, err := look.Stat(full); err != nil || !st.IsDir() || !holdsLink(full) {
			continue
		}
		if realRoot == "" {
			r, err := filepath.EvalSymlinks(root)
			if err != nil {
				return nil
			}
			realRoot = r
		}
		_, err := bundleFiles(full, realRoot)
		var outside *errLinkOutside
		var link *errLink
		switch {
		case errors.As(err, &outside):
			return fmt.Errorf("bundle %s holds %s, a link to %s, outside the workspace: a bundle is identified by the content of its files, which must lie in the workspace. Copy what the link points to into the workspace, or point the link at a file inside it", p, path.Join(p, outside.rel), outside.target)
		case errors.As(err, &link) && link.broken:
			return fmt.Errorf("bundle %s holds %s, a link to %s, which does not exist (a broken link): the worker reads the bundle through its links, and a bundle is identified by the content of its files. Remove the link, or point it at a file in the workspace", p, link.where(p, realRoot), link.target)
		case errors.As(err, &link):
			return fmt.Errorf("bundle %s holds %s, a link to %s, which leads back into a folder it is in: read through its links, the bundle would never end. Remove the link, or point it at a file in the workspace outside the folders that hold it", p, link.where(p, realRoot), link.target)
		}
	}
	return nil
}

// holdsLink reports whether the folder dir holds a symbolic link, at any
// depth, or cannot be read (its digest then says why): a bundle without
// links needs no check of where they lead. Every evaluation of a grid
// checks its bundle folder, most of them the same one.
func holdsLink(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return true
	}
	for _, e := range ents {
		if e.Type()&fs.ModeSymlink != 0 || e.IsDir() && holdsLink(filepath.Join(dir, e.Name())) {
			return true
		}
	}
	return false
}

// checkBundle is the diagnostic of a bundle holding a link that leads
// outside the workspace, to nothing or back into a folder it is in
// (bundleLinkProblem), at the bundle attribute.
func (s evalSpec) checkBundle(n *Node, root string) hcl.Diagnostics {
	if err := n.Look.bundleLinkProblem(root, s.bundle); err != nil {
		return Diag("Invalid bundle", fmt.Sprintf("%s: %s.", n.Address, err), n.Range("bundle"))
	}
	return nil
}

// fileDigest is a file's content digest as the stage kinds write it:
// "sha256:" and the hex sha256 of its bytes.
// storeFailure is the outcome of a node whose item store does not open,
// its message prefix first: a damaged store (its header) is a cache cairn
// cannot read, refused as bad input (exit 2) as a damaged index is, for
// retrying cannot mend it and moving it aside does (the message says so);
// another error is the infrastructure's.
func storeFailure(prefix string, err error) *Outcome {
	if items.Damaged(err) {
		return &Outcome{Class: failclass.Setup, Refused: true, Message: prefix + err.Error()}
	}
	return &Outcome{Class: failclass.Infra, Message: prefix + err.Error()}
}

func fileDigest(path string) (string, error) {
	d, err := digest.File(path)
	if err != nil {
		return "", err
	}
	return "sha256:" + d, nil
}

func digestBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// datasetError is what is wrong in a dataset's content (a line that is not
// JSON, ids missing or repeated): bad input, which the node refuses (exit
// 2), where a dataset that cannot be read is a setup failure (exit 1, as a
// missing input is).
type datasetError struct{ error }

func (e datasetError) Unwrap() error { return e.error }

// itemsFailure is the outcome of a node whose items cannot be used (what
// loadItems returned, after prefix): refused when the dataset's content is
// wrong.
func itemsFailure(prefix string, err error) *Outcome {
	var bad datasetError
	return &Outcome{Class: failclass.Setup, Refused: errors.As(err, &bad), Message: prefix + err.Error()}
}

// loadItems reads the dataset: a JSON array, or JSON Lines (one value per
// line, blank lines skipped). Each item's id is its item_id field (a string
// or a number); when item_id is not set and no item has an "id" field, the
// ids are the items' positions from 0. An error about the dataset's content
// is a datasetError.
func loadItems(root string, s evalSpec) ([]items.Item, error) {
	var b []byte
	if !s.itemsInline {
		var err error
		if b, err = os.ReadFile(filepath.Join(root, s.itemsPath)); err != nil {
			return nil, fmt.Errorf("cannot read the dataset: %w", err)
		}
	}
	list, err := parseItems(b, s)
	if err != nil {
		return nil, datasetError{err}
	}
	return list, nil
}

// parseItems is loadItems' reading of the dataset's content b (the items
// list, for items given inline).
func parseItems(b []byte, s evalSpec) ([]items.Item, error) {
	raws := s.itemsList
	where := func(i int) string { return fmt.Sprintf("item %d of the items list", i) }
	var lead func(int) int // a JSONL dataset's: the characters before item i on its line
	if !s.itemsInline {
		var err error
		if bytes.HasPrefix(b, jsonpos.BOM) {
			return nil, fmt.Errorf("the dataset %s %s", s.itemsPath, jsonpos.BOMMessage)
		}
		raws, where, lead, err = splitDataset(b, s.itemsPath)
		if err != nil {
			return nil, err
		}
	}
	// One pass over each item, on every core: its canonical form (what
	// its key hashes, so the evaluation does not rewrite it again) and
	// its id.
	canons, fields, errs := items.CanonicalMembers(raws, s.itemID)
	out := make([]items.Item, len(raws))
	for i := range out {
		out[i] = items.Item{Data: canons[i], Canonical: true}
	}
	ids := make(map[string]int, len(raws))
	var missing []int
	for i := range raws {
		var amb *items.AmbiguousError
		if errors.As(errs[i], &amb) {
			if lead != nil {
				// file:line:col, the column counted in characters.
				return nil, fmt.Errorf("%s:%d: %s", where(i), lead(i)+utf8.RuneCount(raws[i][:amb.Offset])+1, amb.Msg)
			}
			return nil, fmt.Errorf("%s: %s", where(i), amb.Msg)
		}
		if errs[i] != nil {
			if lead != nil {
				if msg := dsl.JSONLineProblem(raws[i], lead(i)); msg != "" {
					return nil, fmt.Errorf("%s is not one JSON value (a JSONL dataset has one item per line): it %s", where(i), msg)
				}
				return nil, fmt.Errorf("%s is not one JSON value (a JSONL dataset has one item per line): %w", where(i), errs[i])
			}
			return nil, fmt.Errorf("%s: %w", where(i), errs[i])
		}
		if fields[i] == nil {
			missing = append(missing, i)
			continue
		}
		id, err := idText(fields[i])
		if err != nil {
			return nil, fmt.Errorf("%s: field %q: %w", where(i), s.itemID, err)
		}
		// Ids are compared as text, in NFC, as cairn reads all text (and
		// the ids of items written in HCL): "é" and "e" with its accent
		// are one id, which tools that normalize text would merge.
		same := id
		if !norm.NFC.IsNormalString(id) {
			same = norm.NFC.String(id)
		}
		if j, dup := ids[same]; dup {
			if out[j].ID != id {
				return nil, fmt.Errorf("%s and %s have ids %s and %s, the same text in Unicode's NFC; ids must be unique (write both in one form)", where(j), where(i), strconv.QuoteToASCII(out[j].ID), strconv.QuoteToASCII(id))
			}
			return nil, fmt.Errorf("%s and %s have the same id %q; ids must be unique (set item_id to the field that names items)", where(j), where(i), id)
		}
		ids[same] = i
		out[i].ID = id
	}
	switch {
	case len(missing) == 0:
	case !s.itemIDSet && len(missing) == len(raws):
		for i := range out {
			out[i].ID = strconv.Itoa(i)
		}
	default:
		return nil, fmt.Errorf("%s has no field %q to take its id from (%d of %d items lack it); set item_id to the field that names items", where(missing[0]), s.itemID, len(missing), len(raws))
	}
	return out, nil
}

// splitDataset cuts a dataset file into items; lead, set for a JSON Lines
// file, whose lines are not checked here (each item's canonical form is),
// gives the characters before item i on its line, for a message's column.
func splitDataset(b []byte, name string) (raws []json.RawMessage, where func(int) string, lead func(int) int, err error) {
	trimmed := bytes.TrimSpace(b)
	if bytes.HasPrefix(trimmed, []byte("[")) {
		var arr []json.RawMessage
		if err := json.Unmarshal(trimmed, &arr); err != nil {
			if problem := dsl.JSONProblem(b); problem != "" {
				return nil, nil, nil, fmt.Errorf("%s %s", name, problem)
			}
			return nil, nil, nil, fmt.Errorf("%s is not a JSON array of items: %w", name, err)
		}
		var lines []int // each item's line, found for the first message
		where = func(i int) string {
			if lines == nil {
				lines = arrayItemLines(b, len(arr))
			}
			return fmt.Sprintf("%s:%d (item %d)", name, lines[i], i)
		}
		for i, r := range arr {
			if bytes.Equal(bytes.TrimSpace(r), []byte("null")) {
				return nil, nil, nil, fmt.Errorf("%s is null", where(i))
			}
		}
		return arr, where, nil, nil
	}
	var lines []int
	for ln, rest := 1, b; len(rest) > 0; ln++ {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			raws = append(raws, line)
			lines = append(lines, ln)
		}
	}
	lead = func(i int) int {
		// Item i's line, found again (only for a message): the
		// characters before the item on it, trimmed away above.
		line := b
		for range lines[i] - 1 {
			line = line[bytes.IndexByte(line, '\n')+1:]
		}
		if end := bytes.IndexByte(line, '\n'); end >= 0 {
			line = line[:end]
		}
		return utf8.RuneCount(line[:len(line)-len(bytes.TrimLeftFunc(line, unicode.IsSpace))])
	}
	return raws, func(i int) string { return fmt.Sprintf("%s:%d", name, lines[i]) }, lead, nil
}

// arrayItemLines is the line (from 1) on which each of the n items of the
// JSON array b starts; b is valid JSON.
func arrayItemLines(b []byte, n int) []int {
	lines := make([]int, n)
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // [
		return lines
	}
	line, seen := 1, 0 // the line at offset seen
	for i := range n {
		at := int(dec.InputOffset())
		for at < len(b) && (b[at] == ',' || b[at] == ' ' || b[at] == '\t' || b[at] == '\r' || b[at] == '\n') {
			at++
		}
		line += bytes.Count(b[seen:at], []byte{'\n'})
		seen = at
		lines[i] = line
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
	}
	return lines
}

// idText is an item's id: its id field's canonical text, a string (not
// empty) or a number as written.
func idText(field []byte) (string, error) {
	switch {
	case len(field) >= 2 && field[0] == '"':
		var id string
		if bytes.IndexByte(field, '\\') < 0 {
			id = string(field[1 : len(field)-1])
		} else if err := json.Unmarshal(field, &id); err != nil {
			return "", err
		}
		if id == "" {
			return "", errors.New("the id is empty")
		}
		return id, nil
	case field[0] == '-' || '0' <= field[0] && field[0] <= '9':
		return string(field), nil
	}
	return "", fmt.Errorf("the id must be a string or a number, not %s", field)
}

// EvaluateResult is an evaluate node's result (its JSON is the node's
// result object, stage.NAME.result in expressions). It holds only what the
// items' results determine: how many of them this run evaluated, took from
// the store or charged is in the run's counts (Outcome.RunCounts), so that
// a rerun answered from the item store has the same result and leaves the
// node's downstream cached.
type EvaluateResult struct {
	ItemCount int `json:"item_count"`
	Scored    int `json:"scored"`
	// MeanScore is the mean of the scored items; null when none has a
	// score: a mean over no item is no figure, and never 0.
	MeanScore    *float64 `json:"mean_score"`
	ScoresFile   string   `json:"scores_file"`
	ScoresDigest string   `json:"scores_digest"`
	Model        string   `json:"model"`
	BundleDigest string   `json:"bundle_digest"`
	WorkerDigest string   `json:"worker_digest"`
}

// runCounts are an evaluation's counts for the run's record.
func runCounts(c items.Counts) map[string]int {
	return map[string]int{
		"items": c.Total, "evaluated": c.Evaluated, "from_store": c.FromCache, "failed": c.Failed,
		"charged": c.Charged, "attempted": c.Attempted, "infra_failures": c.InfraFailures, "retried": c.Retried,
	}
}

// MergeRunCounts implements RunCountsMerger: after a retry of the node,
// its counts are what its attempts did together. What was done (evaluated,
// charged, attempted, infra_failures, retried) adds up; items and failed
// are the last attempt's; and from_store counts the results that were in
// the store before the first attempt, not those an earlier attempt stored
// (the last attempt finds them there).
func (Evaluate) MergeRunCounts(earlier, last map[string]int) map[string]int {
	out := make(map[string]int, len(last))
	for k, v := range last {
		switch k {
		case "evaluated", "charged", "attempted", "infra_failures", "retried":
			v += earlier[k]
		case "from_store":
			v = max(0, v-earlier["evaluated"])
		}
		out[k] = v
	}
	return out
}

// SkipsService implements ServiceSkipper: an evaluation with needed =
// false sends nothing, whatever its upstreams give.
func (e Evaluate) SkipsService(n *Node, _ string) bool {
	needed, known := e.Needed(n)
	return known && !needed
}

// Needed implements NeedDeclarer: an evaluation is needed unless needed
// is false; not known while needed waits for an upstream.
func (Evaluate) Needed(n *Node) (needed, known bool) {
	v, ok := n.Args["needed"]
	if !ok {
		return true, true
	}
	if !whollyKnown(v) {
		return true, false
	}
	v, _ = v.UnmarkDeep()
	return v.IsNull() || v.Type() != cty.Bool || v.True(), true
}

// NeedsService implements ServiceConsumer: an evaluation of the model a
// serve stage serves needs it unless every item's result is in the store
// under the keys it gives them, or it is not needed at all.
func (e Evaluate) NeedsService(n *Node, root, cacheDir string, identity json.RawMessage, replaced bool) bool {
	s, diags := decodeEvaluate(n)
	if diags.HasErrors() || s.model == "" {
		return true
	}
	var id ServeIdentity
	if json.Unmarshal(identity, &id) != nil {
		return true
	}
	if id.Model != s.model {
		return false // it serves another model: not this evaluation's
	}
	if !replaced && e.SkipsService(n, root) {
		return false // needed = false
	}
	list, err := loadItems(root, s)
	if err != nil {
		return true
	}
	bundle, err := bundleDigest(root, s.bundle)
	if err != nil {
		return true
	}
	worker, err := s.workerDigestOf(n, root)
	if err != nil {
		return true
	}
	store, err := items.OpenStore(cacheDir, items.StoreOptions{NoSync: true})
	if err != nil {
		return true
	}
	defer store.Close()
	for _, it := range list {
		key, err := items.ItemKey(bundle, it.Data, id.ModelKey, s.runtime, worker)
		if err != nil || !store.Has(key) {
			return true
		}
	}
	return false
}

// KeepsTimeout implements TimeoutKeeper: the evaluation stops at the
// stage's timeout and keeps the items stored.
func (Evaluate) KeepsTimeout() {}

// Run implements Kind.
func (Evaluate) Run(ctx context.Context, n *Node, rt Runtime) (*Outcome, error) {
	s, diags := decodeEvaluate(n)
	if diags.HasErrors() {
		return nil, diags
	}
	setup := func(format string, args ...any) (*Outcome, error) {
		return &Outcome{Class: failclass.Setup, Message: fmt.Sprintf(format, args...)}, nil
	}
	if replace, _ := replacing(rt); !s.needed && !replace {
		// What this evaluation is for is made already (a later artifact
		// of a job, written from it): nothing is evaluated, and the
		// result is null, unless --replace names the node or an upstream.
		note(rt, n.Address, "not needed: nothing evaluated")
		return &Outcome{Result: json.RawMessage("null"), NotNeeded: true}, nil
	}
	root := rt.Root()
	list, err := loadItems(root, s)
	if err != nil {
		return itemsFailure("", err), nil
	}
	if err := bundleLinkProblem(nil, root, s.bundle); err != nil {
		return setup("%s", err)
	}
	bundle, err := bundleDigest(root, s.bundle)
	if err != nil {
		return setup("%s", err)
	}
	worker, err := s.workerDigestOf(n, root)
	if err != nil {
		return setup("%s", err)
	}
	store, err := items.OpenStore(rt.CacheDir(), storeOptions(rt, n.Address))
	if err != nil {
		return storeFailure("", err), nil
	}
	defer store.Close()

	// With a serve stage serving the model, the item key's model field
	// holds the weights' identity, and the endpoints are the stage's
	// (none when it was not started: every item is in the store).
	modelKey, served, err := ServeModelKey(n, s.model, s.endpoints)
	if err != nil {
		return setup("%s", err)
	}
	getenv := os.Getenv
	if served {
		getenv = func(string) string { return "" }
	}
	endpoints, epErr := items.ParseEndpoints(s.endpoints, getenv)
	if epErr != nil && !errors.Is(epErr, items.ErrNoEndpoints) {
		return setup("%s", epErr)
	}

	logPath := filepath.Join(rt.OutDir(), "workers.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return &Outcome{Class: failclass.Infra, Message: fmt.Sprintf("cannot open the worker log: %s", err)}, nil
	}
	defer logFile.Close()
	log := &syncWriter{w: logFile}

	if j, ok := rt.(Journaler); ok {
		if err := j.NodeStarted(logPath); err != nil {
			return &Outcome{Class: failclass.Infra, Message: fmt.Sprintf("cannot write the run journal: %s", err)}, nil
		}
	}
	jr := newItemJournal(rt)
	cfg := evalConfig(n, rt, s, list, endpoints)
	if pr, ok := rt.(ProgressReporter); ok {
		live := startLiveCounts(pr)
		defer live.close()
		cfg.OnProgress = live.set
	}
	cfg.BundleDigest, cfg.ModelKey, cfg.WorkerDigest = bundle, modelKey, worker
	cfg.Store, cfg.OnResult, cfg.OnCommit, cfg.Log = store, jr.add, jr.flush, log
	if n.Common.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, n.Common.Timeout)
		defer cancel()
	}
	// The per-item results file is written whenever the evaluation got
	// as far as its items, also when the node fails: what was stored can
	// be read, and what failed says why. Once every item is resolved it
	// is written while the workers exit (OnResolved).
	var buf bytes.Buffer
	var scoresErr error
	scored := false
	writeScores := func(sum items.Summary) {
		scored = true
		if scoresErr = sum.WriteScores(&buf, store); scoresErr == nil {
			scoresErr = atomicfile.Write(filepath.Join(root, s.scores), buf.Bytes(), false)
		}
	}
	cfg.OnResolved = writeScores
	sum, err := items.Evaluate(ctx, cfg)
	if jerr := jr.close(); jerr != nil {
		fmt.Fprintf(log, "cairn: cannot journal evaluated items: %s\n", jerr)
	}
	// Not when nothing was sent (a failed preflight); when a request
	// was, even if no reply came before the node stopped.
	written := scored || err == nil || sum.Done > 0 || sum.Attempted > 0
	if written && !scored {
		writeScores(sum)
	}
	if scoresErr == nil && written {
		rt.Emit(itemsFromStore(n.Address, s.scores, sum.Items))
	}
	if err != nil {
		return evalFailure(ctx, err, n, s, sum, len(endpoints) > 0, written && scoresErr == nil, logPath)
	}
	if scoresErr != nil {
		return &Outcome{Class: failclass.Infra, Message: fmt.Sprintf("cannot write the scores file %s: %s", s.scores, scoresErr)}, nil
	}
	var mean *float64
	if sum.Scored > 0 {
		mean = &sum.MeanScore
	}
	return evalResult(n, root, s, sum, EvaluateResult{
		ItemCount: sum.Total, Scored: sum.Scored, MeanScore: mean,
		ScoresFile: s.scores, ScoresDigest: digestBytes(buf.Bytes()),
		Model: s.model, BundleDigest: bundle, WorkerDigest: worker,
	})
}

// evalConfig is the evaluation of the node's items by its workers (their
// environment, the endpoints, the limits, progress), less the store, the
// journal and the log.
func evalConfig(n *Node, rt Runtime, s evalSpec, list []items.Item, endpoints []string) items.Config {
	root := rt.Root()
	// The workers are clients of the endpoints: they see no GPU.
	env := process.Env{Node: n.Address, Key: n.Key, Workspace: root, NoGPUs: true, Stage: n.Common.Env}.List()
	cfg := items.Config{
		Worker: s.worker, Env: env, Dir: root,
		Items:   list,
		ModelID: s.model, Runtime: s.runtime,
		Replicas: s.replicas, MaxInFlight: s.maxInFlight, ItemTimeout: s.itemTimeout,
		Endpoints: endpoints, EndpointConcurrency: s.epLimit,
		OnReport: func(c items.Counts) {
			rt.Emit(&events.ItemProgress{Node: n.Address, Total: c.Total, Done: c.Done, Evaluated: c.Evaluated,
				FromStore: c.FromCache, Failed: c.Failed, Charged: c.Charged, Attempted: c.Attempted,
				InfraFailures: c.InfraFailures, Text: c.String()})
		},
	}
	if ws, ok := rt.(WorkerStarter); ok {
		cfg.Launcher = ws.WorkerLauncher()
	}
	// Stopped before its end, a worker gets SIGTERM and the stage's
	// kill_grace, as a command's process does.
	cfg.StopGrace = n.Common.KillGrace
	if hs, ok := rt.(HardStopper); ok {
		cfg.Hard = hs.HardStop()
	}
	cfg.Retry = s.retry()
	if len(endpoints) == 0 {
		// Without an endpoint only stored results can be used: with no
		// worker, Evaluate stops with ErrWorker when any item needs one.
		cfg.Worker = nil
	}
	return cfg
}

// evalFailure is the outcome of an evaluation that ended with err: its
// class and what to do, naming the per-item results file when it was
// written (scored).
func evalFailure(ctx context.Context, err error, n *Node, s evalSpec, sum items.Summary, haveEndpoints, scored bool, logPath string) (*Outcome, error) {
	counts := fmt.Sprintf("%d evaluated, %d from the store, %d failed, %d infrastructure failures", sum.Evaluated, sum.FromCache, sum.Failed, sum.InfraFailures)
	failed := func(class, format string, args ...any) (*Outcome, error) {
		msg := fmt.Sprintf(format, args...)
		if scored {
			msg += fmt.Sprintf("; per-item results in %s", s.scores)
		}
		return &Outcome{Class: class, Message: msg, RunCounts: runCounts(sum.Counts)}, nil
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return failed(failclass.Timeout, "the evaluation passed the stage's timeout of %s (%s); the stored items are kept", n.Common.Timeout, counts)
	case ctx.Err() != nil:
		return failed(failclass.Interrupted, "interrupted (%s); the stored items are kept", counts)
	case !haveEndpoints && errors.Is(err, items.ErrWorker):
		return failed(failclass.Setup, "%d of %d items have no stored result and no task model endpoint is configured: set the stage's endpoints attribute, TASK_ENDPOINTS (comma-separated) or VLLM_BASE_URL",
			sum.Total-sum.FromCache, sum.Total)
	case errors.Is(err, items.ErrPreflight):
		return failed(failclass.Setup, "%s (no item was sent)", evalOneLine(err.Error()))
	case errors.Is(err, items.ErrWorker):
		return failed(failclass.Setup, "%s (worker log: %s)", err, logPath)
	case errors.Is(err, items.ErrIncomplete):
		return failed(failclass.Infra, "%d of %d items failed after their retries (%s; last: %s); nothing was stored for them and the next apply sends them again (worker log: %s)",
			sum.Failed, sum.Total, counts, lastFailure(sum), logPath)
	default:
		return failed(failclass.Infra, "%s (%s)", err, counts)
	}
}

// evalResult is the outcome of an evaluation that ended well: its result,
// also written to the stage's result file when it names one.
func evalResult(n *Node, root string, s evalSpec, sum items.Summary, res EvaluateResult) (*Outcome, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	if n.Common.Result != "" {
		if err := atomicfile.Write(filepath.Join(root, n.Common.Result), append(b, '\n'), false); err != nil {
			return &Outcome{Class: failclass.Infra, Message: fmt.Sprintf("cannot write the result file %s: %s", n.Common.Result, err)}, nil
		}
	}
	return &Outcome{Result: b, Files: []string{s.scores}, RunCounts: runCounts(sum.Counts)}, nil
}

func lastFailure(sum items.Summary) string {
	for i := len(sum.Items) - 1; i >= 0; i-- {
		if o := sum.Items[i]; o.Failed {
			return fmt.Sprintf("item %s: %s", o.ID, evalOneLine(o.Reason))
		}
	}
	return "none"
}

func evalOneLine(s string) string {
	// A trailing newline (a response body's) makes no separator.
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
	if len(s) > 400 {
		s = s[:397] + "..."
	}
	return s
}

// itemJournal writes the per-item journal records in batches: those of one
// commit of the store (or of one rollout request's charges) are written
// together, at flush, which returns once they are in the journal's file.
// flush runs before the items count as done (items.Config.OnCommit) and
// before a rollout's reply is written (rollout.MeterOptions.OnCharge): a
// kill -9 of cairn after either cannot lose a record. The write is not
// synced: what the records say is durable in the store or the ledger.
type itemJournal struct {
	j Journaler

	mu      sync.Mutex
	pending []ItemRecord
	err     error
}

func newItemJournal(rt Runtime) *itemJournal {
	j, _ := rt.(Journaler)
	return &itemJournal{j: j}
}

// add is items.Config.OnResult: the record is written at the next flush.
func (ij *itemJournal) add(id, key string, r items.Result) {
	if ij.j == nil {
		return
	}
	ij.mu.Lock()
	ij.pending = append(ij.pending, ItemRecord{Item: id, Key: key, Charged: r.Charged})
	ij.mu.Unlock()
}

// flush writes the records added so far and returns once they are in the
// journal's file (items.Config.OnCommit).
func (ij *itemJournal) flush() {
	ij.mu.Lock()
	defer ij.mu.Unlock()
	batch := ij.pending
	ij.pending = nil
	if len(batch) == 0 {
		return
	}
	if err := ij.j.JournalItems(batch); err != nil && ij.err == nil {
		ij.err = err
	}
}

// close writes what is pending and returns the first error.
func (ij *itemJournal) close() error {
	ij.flush()
	ij.mu.Lock()
	defer ij.mu.Unlock()
	return ij.err
}

// liveCountsEvery is how often an evaluation's counts go to the live
// display, which shows the last it got when it redraws (every 200 ms).
const liveCountsEvery = 200 * time.Millisecond

// liveCounts hands an evaluation's latest counts to the live display
// every liveCountsEvery while they change, and once more at the end: they
// change twice an item, and a line made at each change (16,000 for 8,192
// items) cost an evaluation more CPU than its store's appends.
type liveCounts struct {
	pr      ProgressReporter
	mu      sync.Mutex
	c       items.Counts
	changed bool
	stop    chan struct{}
	done    chan struct{}
}

func startLiveCounts(pr ProgressReporter) *liveCounts {
	l := &liveCounts{pr: pr, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(liveCountsEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				l.show()
			case <-l.stop:
				l.show()
				return
			}
		}
	}()
	return l
}

// set is items.Config.OnProgress.
func (l *liveCounts) set(c items.Counts) {
	l.mu.Lock()
	l.c, l.changed = c, true
	l.mu.Unlock()
}

func (l *liveCounts) show() {
	l.mu.Lock()
	c, changed := l.c, l.changed
	l.changed = false
	l.mu.Unlock()
	if changed {
		l.pr.Progress(c.String())
	}
}

// close shows the last counts and stops.
func (l *liveCounts) close() {
	close(l.stop)
	<-l.done
}

// storeOptions are the item store's options for a run of node: fsync as
// the apply says, and damage repaired as it opens told as a note.
func storeOptions(rt Runtime, node string) items.StoreOptions {
	return items.StoreOptions{NoSync: rt.NoSync(), Warn: func(text string) { note(rt, node, "%s", text) }}
}

// note tells a line about the node as it runs (events.NodeNote).
func note(rt Runtime, node, format string, args ...any) {
	rt.Emit(&events.NodeNote{Node: node, Text: fmt.Sprintf(format, args...)})
}

// emitOutput shows what a kind wrote to w whole, as it is
// (events.NodeOutput), when it wrote anything.
func emitOutput(rt Runtime, node string, w *bytes.Buffer) {
	if w.Len() > 0 {
		rt.Emit(&events.NodeOutput{Node: node, Text: w.String()})
	}
}

// syncWriter serializes writes to one file.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
