package stages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/storage/atomicfile"
)

// Job seals an optimizer job's identity (method × cell × seed) in the
// job's out folder: it writes job.json there, the first node of the job,
// and refuses an out folder whose job.json says another job, or the same
// job with other code or data. It marks the job non-conformant (a budget
// below the protocol's, a cell outside the method's part of the grid, a
// reflection model other than the protocol's), and runs the cell's
// environment check before any rollout is charged.
//
//	stage "job" "job" {
//	  out              = "runs/gepa/hotpotqa/centralized/qwen/0"
//	  method           = "gepa"
//	  dataset          = "hotpotqa"
//	  runtime          = "centralized"
//	  model            = "qwen"
//	  task_model       = "Qwen/Qwen3.5-9B"
//	  seed             = 0
//	  budget           = 600
//	  reflection_model = var.reflection_model_id
//	  command          = ["python3", "methods/gepa.py", "--seed", "0"]   # the optimize stage's run
//	  worker           = ["python3", "workers/chat_worker.py"]         # the rollout worker's command
//	  splits           = { train = "data/train.jsonl", val = "...", test = "..." }
//	  files            = { method = ["methods/gepa/"], data = [...], worker = [...], pipeline = [...] }
//	  in_grid          = contains(local.cells[var.method], local.cell_id)
//	  allow_any_cell   = var.allow_any_cell
//	  check            = ["python3", "-c", "import agents"]   # the cell's environment check, optional
//	}
type Job struct{}

func init() { Register(Job{}) }

// Name implements Kind.
func (Job) Name() string { return "job" }

// Version implements Kind.
func (Job) Version() int { return 1 }

// JobFormat names job.json's format.
const JobFormat = "cairn.job/1"

// Schema implements Kind.
func (Job) Schema() *hcl.BodySchema {
	return &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "out", Required: true},
		{Name: "method", Required: true},
		{Name: "dataset", Required: true},
		{Name: "runtime", Required: true},
		{Name: "model", Required: true},
		{Name: "task_model", Required: true},
		{Name: "seed", Required: true},
		{Name: "budget", Required: true},
		{Name: "reflection_model"},
		{Name: "files"},
		{Name: "in_grid"},
		{Name: "allow_any_cell"},
		{Name: "check"},
		{Name: "command"},
		{Name: "worker"},
		{Name: "splits"},
		{Name: "item_id"},
		{Name: "servers"},
		{Name: "server_weights"},
	}}
}

// JobIdentity is job.json: what the job is, and the content it ran with.
type JobIdentity struct {
	Format          string `json:"format"`
	Method          string `json:"method"`
	CellID          string `json:"cell_id"`
	Dataset         string `json:"dataset"`
	Runtime         string `json:"runtime"`
	Model           string `json:"model"`
	TaskModel       string `json:"task_model"`
	Seed            int    `json:"seed"`
	Budget          int    `json:"budget"`
	ReflectionModel string `json:"reflection_model"`
	// Command is the method's command line (the optimize stage's run),
	// Worker the rollout worker's, Splits the split files by name: with
	// the digests of their files, everything that shapes the optimization.
	Command       []string          `json:"command"`
	Worker        []string          `json:"worker"`
	Splits        map[string]string `json:"splits"`
	Digests       map[string]string `json:"digests"`
	AllowAnyCell  bool              `json:"allow_any_cell"`
	Nonconformant []string          `json:"nonconformant"`
	// Env is the stage's env, which every process of the job gets (a
	// runtime's install: PYTHONPATH to another SDK, say); a sensitive
	// value is written "(sensitive)". Absent when the stage sets none.
	Env map[string]string `json:"env,omitempty"`
	// Servers are the command lines of the model servers the pipeline
	// starts for the job (serve stages), by role ("task", "reflection"),
	// placeholders as written: a server run with other flags (--dtype,
	// --quantization, a wrong rate) can answer otherwise, so a job's
	// phases never mix two. Absent when the stage gives none (servers
	// the user runs).
	Servers map[string][]string `json:"servers,omitempty"`
	// ServerWeights are the digests of the weights those servers serve,
	// by role, as a serve stage's item keys hold them (docs/serve.md,
	// Keys by the weights): new weights under the same model id and
	// command line answer otherwise too. Absent for a role whose server
	// names no weights (its model id, sealed above, is all there is).
	ServerWeights map[string]string `json:"server_weights,omitempty"`
	// EarlierAttempts are the optimizations of this job set aside by
	// --replace (not part of the seal).
	EarlierAttempts []EarlierAttempt `json:"earlier_attempts,omitempty"`
}

// EarlierAttempt is an optimization set aside by --replace: its folder
// keeps its charged-rollout record (rollouts.jsonl).
type EarlierAttempt struct {
	Folder          string `json:"folder"`
	Interrupted     bool   `json:"interrupted"`
	ChargedRollouts int    `json:"charged_rollouts"`
	SetAside        string `json:"set_aside"`
}

// unsealed are the fields of job.json a seal check does not compare.
var unsealed = map[string]bool{"earlier_attempts": true}

type jobSpec struct {
	id                  JobIdentity
	out                 string
	files               map[string][]string
	weights             map[string]string // server_weights: a path or a digest, by role
	inGrid, inGridKnown bool
	check               []string
	itemID              string // the field that names the splits' items
	itemIDSet           bool
	known               bool // every attribute is known
}

// jsonAttr decodes a known attribute into dst as its JSON form decodes
// (decodeValue); it reports false when the attribute is absent or not
// known yet.
func jsonAttr(n *Node, attr string, dst any, diags *hcl.Diagnostics, what string) bool {
	v, ok := n.Args[attr]
	if !ok || v.IsNull() {
		return false
	}
	if !whollyKnown(v) {
		return false
	}
	if err := decodeValue(v, dst, true, false); err != nil {
		*diags = append(*diags, Diag("Invalid "+attr, fmt.Sprintf("%s must be %s.", attr, what), n.Range(attr))...)
		return false
	}
	return true
}

// wholeAttr is jsonAttr for a whole number: what converts to one is
// taken (seed = "1", or an untyped variable given --var seed=1), as the
// generic cpus and concurrency take theirs; anything else is refused with
// detail at the attribute.
func wholeAttr(n *Node, attr string, dst *int, diags *hcl.Diagnostics, detail string) bool {
	v, ok := n.Args[attr]
	if !ok || v.IsNull() || !whollyKnown(v) {
		return false
	}
	i, ok := wholeNumber(v)
	if !ok {
		*diags = append(*diags, Diag("Invalid "+attr, detail, n.Range(attr))...)
		return false
	}
	*dst = i
	return true
}

func decodeJob(n *Node) (jobSpec, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	s := jobSpec{known: true, id: JobIdentity{Format: JobFormat, ReflectionModel: ReflectionModel}}
	need := func(ok bool) {
		if !ok {
			s.known = false
		}
	}
	// An attribute that failed to evaluate (a reference to an undeclared
	// variable, say) is missing from Args: the job is not known, and no
	// seal is compared with a zero in its place.
	for _, a := range (Job{}).Schema().Attributes {
		if _, ok := n.Args[a.Name]; a.Required && !ok {
			s.known = false
		}
	}
	need(jsonAttr(n, "out", &s.out, &diags, "the job's out folder, a workspace-relative path"))
	if s.out != "" {
		if clean := filepath.Clean(s.out); !filepath.IsLocal(clean) {
			diags = append(diags, Diag("Invalid out", fmt.Sprintf("%q is not a workspace-relative folder.", s.out), n.Range("out"))...)
		} else {
			s.out = clean
		}
	}
	for attr, dst := range map[string]*string{"method": &s.id.Method, "dataset": &s.id.Dataset, "runtime": &s.id.Runtime, "model": &s.id.Model, "task_model": &s.id.TaskModel} {
		if jsonAttr(n, attr, dst, &diags, "a string") {
			if *dst == "" || strings.ContainsAny(*dst, " \t\n/") && attr != "task_model" {
				diags = append(diags, Diag("Invalid "+attr, fmt.Sprintf("%s must be a name without spaces, tabs or slashes: it is one part of the cell id DATASET/RUNTIME/MODEL.", attr), n.Range(attr))...)
			}
		} else {
			s.known = false
		}
	}
	need(wholeAttr(n, "seed", &s.id.Seed, &diags, "seed must be a whole number."))
	if wholeAttr(n, "budget", &s.id.Budget, &diags, "budget must be a whole number of rollouts, 0 or more.") && s.id.Budget < 0 {
		diags = append(diags, Diag("Invalid budget", "budget must be a whole number of rollouts, 0 or more.", n.Range("budget"))...)
	} else if _, ok := n.Args["budget"]; ok && !whollyKnown(n.Args["budget"]) {
		s.known = false
	}
	if _, ok := n.Args["reflection_model"]; ok {
		need(jsonAttr(n, "reflection_model", &s.id.ReflectionModel, &diags, "the reflection model's id"))
		if s.id.ReflectionModel == "" {
			s.id.ReflectionModel = ReflectionModel
		}
	}
	if _, ok := n.Args["files"]; ok {
		need(jsonAttr(n, "files", &s.files, &diags, "an object of lists of workspace-relative files or folders, like { method = [\"methods/gepa/\"], data = [\"data/train.jsonl\"] }"))
	}
	for name, paths := range s.files {
		for _, p := range paths {
			if p == "" {
				diags = append(diags, Diag("Invalid files", fmt.Sprintf("files.%s: a path is empty.", name), n.Range("files"))...)
			}
		}
	}
	s.inGrid = true
	if _, ok := n.Args["in_grid"]; ok {
		s.inGridKnown = jsonAttr(n, "in_grid", &s.inGrid, &diags, "true or false")
		need(s.inGridKnown)
	}
	if _, ok := n.Args["allow_any_cell"]; ok {
		need(jsonAttr(n, "allow_any_cell", &s.id.AllowAnyCell, &diags, "true or false"))
	}
	s.id.Command, s.id.Worker, s.id.Splits = []string{}, []string{}, map[string]string{}
	for attr, dst := range map[string]any{"command": &s.id.Command, "worker": &s.id.Worker} {
		if v, ok := n.Args[attr]; ok && (!v.IsKnown() || !v.IsNull()) {
			need(jsonAttr(n, attr, dst, &diags, "an argument list, like [\"python3\", \"methods/gepa.py\"]"))
		}
	}
	if v, ok := n.Args["splits"]; ok && (!v.IsKnown() || !v.IsNull()) {
		need(jsonAttr(n, "splits", &s.id.Splits, &diags, "an object of split files by name, like { train = \"data/train.jsonl\" }"))
	}
	s.itemID = "id"
	if v, ok := n.Args["item_id"]; ok && (!v.IsKnown() || !v.IsNull()) {
		s.itemIDSet = true
		ok := jsonAttr(n, "item_id", &s.itemID, &diags, "the name of the field that names the split files' items")
		need(ok)
		if ok && s.itemID == "" {
			diags = append(diags, Diag("Invalid item_id", "item_id must name a field of the items, like \"id\".", n.Range("item_id"))...)
		}
	}
	if v, ok := n.Args["servers"]; ok && (!v.IsKnown() || !v.IsNull()) {
		need(jsonAttr(n, "servers", &s.id.Servers, &diags, "an object of server command lines by role, like { task = [\"vllm\", \"serve\", \"m\", \"--port\", \"{port}\"] }"))
		if len(s.id.Servers) == 0 {
			s.id.Servers = nil
		}
	}
	if v, ok := n.Args["server_weights"]; ok && (!v.IsKnown() || !v.IsNull()) {
		need(jsonAttr(n, "server_weights", &s.weights, &diags, "an object of the servers' weights by role: a folder or file, or a digest \"sha256:...\" (like { task = \"/models/Qwen3.5-9B\" })"))
		for role, w := range s.weights {
			if w == "" {
				delete(s.weights, role) // null: the model id alone
			}
		}
	}
	if v, ok := n.Args["check"]; ok && (!v.IsKnown() || !v.IsNull()) {
		need(jsonAttr(n, "check", &s.check, &diags, "the environment check's argument list, like [\"python3\", \"-c\", \"import agents\"]"))
	}
	s.id.CellID = s.id.Dataset + "/" + s.id.Runtime + "/" + s.id.Model
	if len(n.Common.Env) > 0 {
		s.id.Env = make(map[string]string, len(n.Common.Env))
		for k, v := range n.Common.Env {
			if n.Common.SensitiveEnv[k] {
				v = "(sensitive)"
			}
			s.id.Env[k] = v
		}
	}
	s.id.Nonconformant = []string{}
	if s.id.Budget < ProtocolBudget {
		s.id.Nonconformant = append(s.id.Nonconformant, fmt.Sprintf("budget %d is below the protocol's %d rollouts", s.id.Budget, ProtocolBudget))
	}
	if !s.inGrid {
		s.id.Nonconformant = append(s.id.Nonconformant, fmt.Sprintf("cell %s is outside %s's part of the grid", s.id.CellID, s.id.Method))
	}
	if s.id.ReflectionModel != ReflectionModel {
		s.id.Nonconformant = append(s.id.Nonconformant, fmt.Sprintf("reflection model %s is not %s", s.id.ReflectionModel, ReflectionModel))
	}
	return s, diags
}

// Check implements Kind: a cell outside the method's part of the grid is
// refused unless allow_any_cell.
func (Job) Check(n *Node) hcl.Diagnostics {
	s, diags := decodedOnce(n, decodeJob)
	if s.inGridKnown && !s.inGrid && !s.id.AllowAnyCell && !diags.HasErrors() {
		diags = append(diags, Diag("Cell outside the grid",
			fmt.Sprintf("The cell %s is outside %s's part of the experiment grid. Choose a cell the method covers, or set allow_any_cell = true (--var allow_any_cell=true) to run it as a non-conformant job.", s.id.CellID, s.id.Method), n.Range("in_grid"))...)
	}
	return diags
}

// DeclaredInputs implements InputDeclarer: the sealed files in the
// workspace key the node as its inputs; those outside it key it by their
// content too (KeyedContent).
func (Job) DeclaredInputs(n *Node, root string) []DeclaredPath {
	s, diags := decodedOnce(n, decodeJob)
	if diags.HasErrors() {
		return nil
	}
	return declaredPaths("files", s.sealedFiles(true)...)
}

// KeyedContent implements ContentKeyer: the sealed files outside the
// workspace (the pipeline's own file, when a pipeline kept elsewhere is
// applied from the user's folder; a method's code in a shared checkout)
// and the weights of the job's servers key the node by their content, as
// they are sealed in job.json: a cached record of the node (its job.json)
// is then restored only where it seals what the job is now.
func (Job) KeyedContent(n *Node, root string) []string {
	s, diags := decodedOnce(n, decodeJob)
	if diags.HasErrors() {
		return nil
	}
	out := s.sealedFiles(false)
	for _, role := range slices.Sorted(maps.Keys(s.weights)) {
		if w := filepath.Clean(s.weights[role]); !isDigest(s.weights[role]) && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// sealedFiles are the paths of files, cleaned, once each: those in the
// workspace (local), or those outside it.
func (s jobSpec) sealedFiles(local bool) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(s.files)) {
		for _, p := range s.files[name] {
			if clean := filepath.Clean(p); filepath.IsLocal(clean) == local && !slices.Contains(out, clean) {
				out = append(out, clean)
			}
		}
	}
	return out
}

// KeepsOutFolder implements OutFolderKeeper.
func (Job) KeepsOutFolder() {}

// PathAttrs implements PathLinker.
func (Job) PathAttrs() []PathAttr { return jobPaths }

var jobPaths = []PathAttr{{Attr: "files"}, {Attr: "splits"}, {Attr: "server_weights"}, {Attr: "out", Write: true, Files: []string{"job.json"}}}

// DeclaredOutputs implements OutputDeclarer: job.json.
func (Job) DeclaredOutputs(n *Node) []DeclaredPath {
	s, diags := decodedOnce(n, decodeJob)
	if diags.HasErrors() || s.out == "" {
		return nil
	}
	return []DeclaredPath{{Attr: "out", Path: filepath.Join(s.out, "job.json")}}
}

// identity computes job.json's content: the attributes, the digests of
// the sealed files, and those of the servers' weights, read through dg
// (the stat cache, which the planner sets: Node.Stat).
func (s jobSpec) identity(root string, dg ContentDigester) (JobIdentity, error) {
	id := s.id
	id.Digests = map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(s.files)) {
		d, err := bundleDigest(root, s.files[name])
		if err != nil {
			return id, fmt.Errorf("files.%s: %w", name, err)
		}
		id.Digests[name] = d
	}
	for _, role := range slices.Sorted(maps.Keys(s.weights)) {
		d, err := weightsDigest(root, s.weights[role], dg)
		if err != nil {
			return id, fmt.Errorf("server_weights.%s: %w", role, err)
		}
		if id.ServerWeights == nil {
			id.ServerWeights = map[string]string{}
		}
		id.ServerWeights[role] = d
	}
	return id, nil
}

// weightsDigest is the digest of a server's weights as a serve stage's
// item keys hold it (docs/serve.md, Keys by the weights): a digest as
// given, else the content of the folder or file w (absolute, or relative
// to root) through its links, read through dg as the serve stage's is.
func weightsDigest(root, w string, dg ContentDigester) (string, error) {
	if isDigest(w) {
		return w, nil
	}
	full := w
	if !filepath.IsAbs(w) {
		full = filepath.Join(root, w)
	}
	if dg == nil {
		// Only the planner digests weights (through the stat cache): a
		// check without a cache (validate) leaves the seal to apply.
		return "", errors.New("the weights are digested through the cache's stat cache, and there is none here")
	}
	d, err := dg.ContentTree(full)
	if err != nil {
		return "", err
	}
	return "sha256:" + d, nil
}

// jsonFields are a JSON object's fields by name, each value as JSON text
// (written again by json.Marshal: one spelling for one value).
func jsonFields(b []byte) (map[string]string, error) {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		t, _ := json.Marshal(v)
		out[k] = string(t)
	}
	return out, nil
}

// differingFields are the names, sorted, whose values (JSON text; "" for
// a field one side lacks) differ between a and b.
func differingFields(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// SealDifferences compares the job.json an out folder holds with the one
// this job would write: one line per differing field, with both values.
func SealDifferences(have []byte, want JobIdentity) ([]string, error) {
	var old map[string]any
	if err := json.Unmarshal(have, &old); err != nil {
		return nil, fmt.Errorf("it is not a job.json (%s)", err)
	}
	wb, _ := json.Marshal(want)
	var cur map[string]any
	_ = json.Unmarshal(wb, &cur)
	flat := func(m map[string]any) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if unsealed[k] {
				continue
			}
			if sub, ok := v.(map[string]any); ok && k == "digests" {
				for sk, sv := range sub {
					b, _ := json.Marshal(sv)
					out["digests."+sk] = string(b)
				}
				continue
			}
			b, _ := json.Marshal(v)
			out[k] = string(b)
		}
		return out
	}
	a, b := flat(old), flat(cur)
	var diffs []string
	for _, k := range differingFields(a, b) {
		av, bv := a[k], b[k]
		if av == "" {
			av = "(none)"
		}
		if bv == "" {
			bv = "(none)"
		}
		diffs = append(diffs, fmt.Sprintf("%s: the out folder's job is %s, this job is %s", k, av, bv))
	}
	return diffs, nil
}

// sealRefusal checks the out folder's job.json against want; it returns ""
// when the folder holds none or the same job.
func sealRefusal(root, out string, want JobIdentity) string {
	path := filepath.Join(root, out, "job.json")
	have, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	diffs, err := SealDifferences(have, want)
	if err != nil {
		return fmt.Sprintf("%s: %s; the out folder of another kind of run cannot hold a job: choose a fresh out folder", filepath.Join(out, "job.json"), err)
	}
	if len(diffs) == 0 {
		return ""
	}
	return fmt.Sprintf("the out folder %s holds another job (its job.json seals it); nothing was run. Differences:\n  %s\nChoose a fresh out folder for this job, or delete %s to start that folder over",
		out, strings.Join(diffs, "\n  "), out)
}

// laterArtifacts are the files a job's later nodes write in its out
// folder (docs/job-artifacts.md), each made for the job its job.json seals.
var laterArtifacts = []string{"optimization.json", "selection.json", "test.json", "result.json"}

// unsealedRefusal says why a job that is to write its job.json cannot: the
// out folder holds what a job's later nodes wrote, but no job.json, so
// they were made for a job whose seal is gone, which cairn cannot compare
// with this one (this job's later nodes would take them as theirs). It
// returns "" when the folder holds a job.json, or none of them.
func unsealedRefusal(root, out string) string {
	entries, err := os.ReadDir(filepath.Join(root, out))
	if err != nil {
		return ""
	}
	var found []string
	for _, e := range entries {
		if e.Name() == "job.json" {
			return ""
		}
		if slices.Contains(laterArtifacts, e.Name()) {
			found = append(found, e.Name())
		}
	}
	if len(found) == 0 {
		return ""
	}
	return fmt.Sprintf("the out folder %s holds %s but no job.json: they were made for a job whose seal is gone, and cairn cannot tell whether it was this one; nothing was run. Restore %s, or delete %s to start that folder over, or choose a fresh out folder for this job",
		out, strings.Join(found, ", "), filepath.Join(out, "job.json"), out)
}

// PlanRefusal implements PlanRefuser: a job to be sealed in an out folder
// that holds a job's later artifacts but no job.json is refused, as Run
// refuses it. A job restored from the cache writes back the job.json it
// sealed: it is not asked.
func (Job) PlanRefusal(n *Node, root, _ string, _ bool) string {
	s, diags := decodedOnce(n, decodeJob)
	if diags.HasErrors() || !s.known {
		return ""
	}
	return unsealedRefusal(root, s.out)
}

// CheckWorkspace implements WorkspaceChecker: before anything runs, an out
// folder sealed for another job is refused (exit 2).
func (Job) CheckWorkspace(n *Node, root string) hcl.Diagnostics {
	s, diags := decodedOnce(n, decodeJob)
	if diags.HasErrors() || !s.known {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(root, s.out, "job.json")); errors.Is(err, fs.ErrNotExist) {
		// A fresh out folder: nothing to compare, and the sealed files
		// are not digested (a grid's plan would read every job's).
		return nil
	}
	id, err := s.identity(root, n.Stat)
	if err != nil {
		return nil // the run reports unreadable files as setup failures
	}
	if msg := sealRefusal(root, s.out, id); msg != "" {
		return Diag("Out folder sealed for another job", msg+".", n.Range("out"))
	}
	return nil
}

// KeepsTimeout implements TimeoutKeeper: each process is killed at the
// stage's timeout (Runtime.Exec).
func (Job) KeepsTimeout() {}

// Run implements Kind.
func (Job) Run(ctx context.Context, n *Node, rt Runtime) (*Outcome, error) {
	s, diags := decodeJob(n)
	if diags.HasErrors() {
		return nil, diags
	}
	root := rt.Root()
	id, err := s.identity(root, n.Stat)
	if err != nil {
		return &Outcome{Class: failclass.Setup, Message: err.Error()}, nil
	}
	// The seal is checked and written under the out folder's lock: of two
	// applies into one folder, one seals it and the other refuses.
	if o := holdOut(rt, n, s.out); o != nil {
		return o, nil
	}
	if msg := sealRefusal(root, s.out, id); msg != "" {
		return &Outcome{Class: failclass.Setup, Refused: true, Message: msg}, nil
	}
	if msg := unsealedRefusal(root, s.out); msg != "" {
		return &Outcome{Class: failclass.Setup, Refused: true, Message: msg}, nil
	}
	if msg := s.splitRefusal(root); msg != "" {
		return &Outcome{Class: failclass.Setup, Refused: true, Message: msg}, nil
	}
	var proc *process.Result
	if len(s.check) > 0 {
		res, err := rt.Exec(ctx, Proc{Argv: s.check})
		if err != nil {
			return nil, err
		}
		if res.Class != "" {
			return &Outcome{Class: failclass.Setup, Proc: res, Message: fmt.Sprintf("the cell's environment is unusable: its check %q failed (%s); no rollout was charged", strings.Join(s.check, " "), res.Message)}, nil
		}
		proc = res
	}
	b, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return nil, err
	}
	rel := filepath.Join(s.out, "job.json")
	if _, err := os.Stat(filepath.Join(root, rel)); err == nil {
		// The folder is sealed for this job already: job.json stays as
		// it is (with its earlier attempts).
		compact, _ := json.Marshal(id)
		return &Outcome{Result: compact, Proc: proc, Files: []string{rel}}, nil
	}
	if err := atomicfile.Write(filepath.Join(root, rel), append(b, '\n'), true); err != nil {
		return &Outcome{Class: failclass.Infra, Message: fmt.Sprintf("cannot write %s: %s", rel, err)}, nil
	}
	compact, _ := json.Marshal(id)
	return &Outcome{Result: compact, Proc: proc, Files: []string{rel}}, nil
}

// splitRefusal says why a JSONL split file (a name ending in .jsonl) is
// no dataset the job's evaluations can read: a line that is not one JSON
// value, two items with one id, an item without the id field the others
// have (read as an evaluate stage reads its items, with the job's
// item_id). It is "" when every such split reads. Said when the job is
// sealed, this stops the job before its optimization spends its budget,
// rather than at the first evaluation of the split, after it.
func (s jobSpec) splitRefusal(root string) string {
	for _, name := range slices.Sorted(maps.Keys(s.id.Splits)) {
		p := filepath.Clean(s.id.Splits[name])
		if !strings.HasSuffix(p, ".jsonl") {
			continue
		}
		abs := p
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(root, p)
		}
		b, err := os.ReadFile(abs)
		if err == nil {
			_, err = parseItems(b, evalSpec{itemsPath: p, itemID: s.itemID, itemIDSet: s.itemIDSet})
		}
		if err != nil {
			return fmt.Sprintf("the job's %s split cannot be evaluated: %s; nothing ran and no rollout was charged: fix the split file (or, when another field names its items, set item_id on the job stage)", name, err)
		}
	}
	return ""
}

// addEarlierAttempt records in the out folder's job.json an optimization
// set aside by --replace; with check, it only reads job.json, to say
// whether the attempt can be recorded there, and writes nothing.
func addEarlierAttempt(root, out string, a EarlierAttempt, check bool) error {
	path := filepath.Join(root, out, "job.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var id JobIdentity
	if err := json.Unmarshal(b, &id); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(out, "job.json"), err)
	}
	if check {
		return nil // it can be read: the attempt can be added
	}
	id.EarlierAttempts = append(id.EarlierAttempts, a)
	nb, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(nb, '\n'), true)
}
