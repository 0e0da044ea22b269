package stages

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/stages/aggregate"
	"github.com/cairn-run/cairn/storage/atomicfile"
)

// Fallback reasons: why the seed bundle is deployed.
const (
	FallbackNotBetter         = "incumbent_not_better"
	FallbackNoIncumbent       = "no_incumbent"
	FallbackValidationInvalid = "validation_invalid"
)

// evalInstance is what select and job_result read of an evaluate node's
// instance object (stage.NAME): its status and result.
type evalInstance struct {
	Status string          `json:"status"`
	Class  *string         `json:"class"`
	Result *EvaluateResult `json:"result"`
}

// instanceKeyValue keeps, of an evaluate node's instance object, what a
// select or job_result node reads (status, class, result), so that its
// duration and peak memory stay out of the key: an evaluation rerun to the
// same result leaves the node cached.
func instanceKeyValue(v cty.Value) cty.Value {
	if !v.IsWhollyKnown() || v.IsNull() || !v.Type().IsObjectType() {
		return v
	}
	m := map[string]cty.Value{}
	for _, k := range []string{"status", "class", "result"} {
		if v.Type().HasAttribute(k) {
			m[k] = v.GetAttr(k)
		}
	}
	return cty.ObjectVal(m)
}

// decodeInstance reads an instance object attribute; unknown (plan time)
// is not an error.
func decodeInstance(n *Node, attr string, diags *hcl.Diagnostics) (evalInstance, bool) {
	var raw map[string]json.RawMessage
	if !jsonAttr(n, attr, &raw, diags, "an evaluate stage's instance, like stage.seed_validation") {
		return evalInstance{}, false
	}
	var in evalInstance
	json.Unmarshal(raw["status"], &in.Status)
	if r := raw["result"]; len(r) > 0 && string(r) != "null" {
		var er EvaluateResult
		if err := json.Unmarshal(r, &er); err != nil {
			*diags = append(*diags, Diag("Invalid "+attr, fmt.Sprintf("%s's result is not an evaluate stage's result: %s.", attr, err), n.Range(attr))...)
			return evalInstance{}, false
		}
		in.Result = &er
	}
	if in.Status == "" {
		*diags = append(*diags, Diag("Invalid "+attr, attr+" must be an evaluate stage's instance, like stage.seed_validation (not its result).", n.Range(attr))...)
		return evalInstance{}, false
	}
	return in, true
}

// Select picks the bundle a job deploys: the incumbent iff its validation
// mean is strictly greater than the seed bundle's, else the seed bundle,
// with the reason. It writes selection.json in the job's out folder.
//
//	stage "select" "select" {
//	  on_upstream_failure = "run"   # a failed validation deploys the seed bundle
//	  out                 = local.out
//	  optimization        = stage.optimize.result
//	  seed                = stage.seed_validation
//	  incumbent           = stage.incumbent_validation
//	}
type Select struct{}

func init() { Register(Select{}) }

// Compares implements Comparer: with on_upstream_failure = "run", a select
// node none of whose upstreams finished (the job's first node failed) is
// skipped like the rest of the job.
func (Select) Compares() {}

// Name implements Kind.
func (Select) Name() string { return "select" }

// KeyValue implements KeyTransformer: of the validations, their status and
// result.
func (Select) KeyValue(attr string, v cty.Value) cty.Value {
	if attr == "seed" || attr == "incumbent" {
		return instanceKeyValue(v)
	}
	return v
}

// Version implements Kind.
func (Select) Version() int { return 1 }

// Schema implements Kind.
func (Select) Schema() *hcl.BodySchema {
	return &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "out", Required: true},
		{Name: "optimization", Required: true},
		{Name: "seed", Required: true},
		{Name: "incumbent", Required: true},
	}}
}

// Selection is selection.json and the select node's result.
type Selection struct {
	Format   string `json:"format"`
	Deployed string `json:"deployed"` // "incumbent" or "seed"
	// DeployedBundle is the bundle the test phase evaluates.
	DeployedBundle  []string `json:"deployed_bundle"`
	SeedBundle      []string `json:"seed_bundle"`
	FallbackReason  *string  `json:"fallback_reason"`
	Proposed        bool     `json:"proposed"`
	SeedMean        *float64 `json:"seed_validation_mean"`
	IncumbentMean   *float64 `json:"incumbent_validation_mean"`
	ValidationItems int      `json:"validation_items"`
	// OptimizationSHA256 is the digest of the optimization.json the
	// selection was made from.
	OptimizationSHA256 string `json:"optimization_sha256"`
}

// SelectionFormat names selection.json's format.
const SelectionFormat = "cairn.job-selection/1"

type selectSpec struct {
	out           string
	opt           Optimization
	seed, inc     evalInstance
	known         bool
	optOK, seedOK bool
	incOK         bool
}

func decodeSelect(n *Node) (selectSpec, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var s selectSpec
	outOK := jsonAttr(n, "out", &s.out, &diags, "the job's out folder")
	if outOK {
		if clean := filepath.Clean(s.out); s.out == "" || !filepath.IsLocal(clean) {
			diags = append(diags, Diag("Invalid out", fmt.Sprintf("%q is not a workspace-relative folder.", s.out), n.Range("out"))...)
		} else {
			s.out = clean
		}
	}
	var raw map[string]json.RawMessage
	if jsonAttr(n, "optimization", &raw, &diags, "an optimize stage's result, like stage.optimize.result") {
		b, _ := json.Marshal(raw)
		if err := json.Unmarshal(b, &s.opt); err != nil || s.opt.Format != OptimizationFormat {
			diags = append(diags, Diag("Invalid optimization", "optimization must be an optimize stage's result, like stage.optimize.result.", n.Range("optimization"))...)
		} else {
			s.optOK = true
		}
	}
	s.seed, s.seedOK = decodeInstance(n, "seed", &diags)
	s.inc, s.incOK = decodeInstance(n, "incumbent", &diags)
	s.known = outOK && s.optOK && s.seedOK && s.incOK
	return s, diags
}

// Check implements Kind.
func (Select) Check(n *Node) hcl.Diagnostics {
	_, diags := decodeSelect(n)
	return diags
}

// KeepsOutFolder implements OutFolderKeeper.
func (Select) KeepsOutFolder() {}

// PathAttrs implements PathLinker.
func (Select) PathAttrs() []PathAttr { return selectPaths }

var selectPaths = []PathAttr{{Attr: "out", Write: true, Files: []string{"selection.json"}}}

// DeclaredOutputs implements OutputDeclarer: selection.json.
func (Select) DeclaredOutputs(n *Node) []DeclaredPath {
	return outFolderFiles(n, "selection.json")
}

// outFolderFiles declares the files names in the node's out folder (none
// while out is unknown or empty).
func outFolderFiles(n *Node, names ...string) []DeclaredPath {
	var diags hcl.Diagnostics
	var out string
	if !jsonAttr(n, "out", &out, &diags, "") || out == "" {
		return nil
	}
	paths := make([]DeclaredPath, len(names))
	for i, name := range names {
		paths[i] = DeclaredPath{Attr: "out", Path: filepath.Join(filepath.Clean(out), name)}
	}
	return paths
}

// contradiction says how a saved selection breaks the selection rule
// (Decide) by its own figures or against the optimization it was made
// from; "" when it follows it. A selection.json edited by hand to deploy
// another bundle than its means give is refused, not tested.
func (sel Selection) contradiction(opt Optimization) string {
	reason := ""
	if sel.FallbackReason != nil {
		reason = *sel.FallbackReason
	}
	means := sel.SeedMean != nil && sel.IncumbentMean != nil
	switch {
	case sel.Proposed != opt.Proposed:
		return fmt.Sprintf("proposed is %t, optimization.json's is %t", sel.Proposed, opt.Proposed)
	case !slices.Equal(sel.SeedBundle, opt.SeedBundle):
		return fmt.Sprintf("seed_bundle %q is not optimization.json's %q", sel.SeedBundle, opt.SeedBundle)
	case sel.Deployed == "incumbent" && reason != "":
		return fmt.Sprintf("it deploys the incumbent with fallback_reason %q", reason)
	case sel.Deployed == "incumbent" && !opt.Proposed:
		return "it deploys an incumbent the optimization did not propose"
	case sel.Deployed == "incumbent" && !slices.Equal(sel.DeployedBundle, opt.Candidate):
		return fmt.Sprintf("it deploys %q, not the incumbent %q", sel.DeployedBundle, opt.Candidate)
	case sel.Deployed == "incumbent" && !(means && *sel.IncumbentMean > *sel.SeedMean):
		return fmt.Sprintf("it deploys the incumbent, whose validation mean (%s) is not strictly greater than the seed bundle's (%s)", meanText(sel.IncumbentMean), meanText(sel.SeedMean))
	case sel.Deployed == "incumbent":
		return ""
	case sel.Deployed != "seed":
		return fmt.Sprintf("deployed %q is neither \"incumbent\" nor \"seed\"", sel.Deployed)
	case !slices.Equal(sel.DeployedBundle, sel.SeedBundle):
		return fmt.Sprintf("it deploys the seed bundle as %q, not %q", sel.DeployedBundle, sel.SeedBundle)
	case reason == FallbackNoIncumbent && opt.Proposed:
		return "fallback_reason no_incumbent, but the optimization proposed one"
	case reason == FallbackNotBetter && !opt.Proposed:
		return "fallback_reason incumbent_not_better, but the optimization proposed no incumbent"
	case reason == FallbackNotBetter && !(means && *sel.IncumbentMean <= *sel.SeedMean):
		return fmt.Sprintf("fallback_reason incumbent_not_better, but the incumbent's validation mean (%s) is greater than the seed bundle's (%s), or one is missing", meanText(sel.IncumbentMean), meanText(sel.SeedMean))
	case reason == FallbackValidationInvalid && !opt.Proposed:
		return "fallback_reason validation_invalid, but the optimization proposed no incumbent"
	case reason != FallbackNoIncumbent && reason != FallbackNotBetter && reason != FallbackValidationInvalid:
		return fmt.Sprintf("it deploys the seed bundle with fallback_reason %q, not one of %s, %s, %s", reason, FallbackNotBetter, FallbackNoIncumbent, FallbackValidationInvalid)
	}
	return ""
}

func meanText(m *float64) string {
	if m == nil {
		return "null"
	}
	return strconv.FormatFloat(*m, 'g', -1, 64)
}

// Decide applies the selection rule.
func Decide(opt Optimization, seed, inc evalInstance) Selection {
	sel := Selection{Format: SelectionFormat, Deployed: "seed", DeployedBundle: opt.SeedBundle, SeedBundle: opt.SeedBundle, Proposed: opt.Proposed}
	if seed.Result != nil {
		sel.SeedMean = seed.Result.MeanScore
		sel.ValidationItems = seed.Result.ItemCount
	}
	if inc.Result != nil && opt.Proposed {
		sel.IncumbentMean = inc.Result.MeanScore
	}
	reason := ""
	switch {
	case !opt.Proposed:
		reason = FallbackNoIncumbent
	case seed.Status != "ok" || inc.Status != "ok" || seed.Result == nil || inc.Result == nil ||
		seed.Result.Scored < seed.Result.ItemCount || inc.Result.Scored < inc.Result.ItemCount ||
		seed.Result.MeanScore == nil || inc.Result.MeanScore == nil:
		reason = FallbackValidationInvalid
	case *inc.Result.MeanScore > *seed.Result.MeanScore:
		sel.Deployed, sel.DeployedBundle = "incumbent", opt.Candidate
	default:
		reason = FallbackNotBetter
	}
	if reason != "" {
		sel.FallbackReason = &reason
	}
	return sel
}

// Run implements Kind.
func (Select) Run(ctx context.Context, n *Node, rt Runtime) (*Outcome, error) {
	s, diags := decodeSelect(n)
	if diags.HasErrors() {
		return nil, diags
	}
	if !s.optOK {
		// on_upstream_failure = "run" lets a failed validation through, not
		// a job whose optimization never finished.
		return &Outcome{Class: failclass.Setup, Message: "the job's optimization did not finish (see its node): there is no incumbent to select from, and nothing of the job's test split is evaluated"}, nil
	}
	root := rt.Root()
	if o := holdOut(rt, n, s.out); o != nil {
		return o, nil
	}
	rel := filepath.Join(s.out, "selection.json")
	optDigest, err := fileDigest(filepath.Join(root, s.out, "optimization.json"))
	if err != nil {
		return &Outcome{Class: failclass.Setup, Message: fmt.Sprintf("the job's optimization.json: %s", err)}, nil
	}
	// A selection once written is the job's: a rerun returns it as it is,
	// and selects again only with --replace.
	if replace, again := replacing(rt); !replace {
		if b, err := os.ReadFile(filepath.Join(root, rel)); err == nil {
			var saved Selection
			if err := json.Unmarshal(b, &saved); err != nil || saved.Format != SelectionFormat {
				return &Outcome{Class: failclass.Setup, Refused: true, Message: fmt.Sprintf("%s is not a selection of format %s; nothing was rewritten: restore it, or select again with %s", rel, SelectionFormat, again)}, nil
			}
			if saved.OptimizationSHA256 == "" {
				return &Outcome{Class: failclass.Setup, Refused: true, Message: fmt.Sprintf("%s has no optimization_sha256 (an earlier cairn wrote it): which optimization.json it was made from cannot be checked; nothing was rewritten: select again with %s, or give the job a fresh out folder", rel, again)}, nil
			}
			if saved.OptimizationSHA256 != optDigest {
				return &Outcome{Class: failclass.Setup, Refused: true, Message: fmt.Sprintf("%s was made from another optimization.json (its optimization_sha256 is %q, the folder's optimization.json is %s); nothing was rewritten: select again with %s, or give the job a fresh out folder", rel, saved.OptimizationSHA256, optDigest, again)}, nil
			}
			if why := saved.contradiction(s.opt); why != "" {
				return &Outcome{Class: failclass.Setup, Refused: true, Message: fmt.Sprintf("%s does not follow the selection rule: %s; nothing was rewritten: restore it, or select again with %s", rel, why, again)}, nil
			}
			note(rt, n.Address, "deploying the %s bundle, as %s says (selected earlier)", saved.Deployed, rel)
			compact, _ := json.Marshal(saved)
			return &Outcome{Result: compact, Files: []string{rel}}, nil
		}
	}
	if s.seed.Status == "ok" && s.seed.Result == nil || s.inc.Status == "ok" && s.inc.Result == nil {
		// The validations were not needed when they ran (selection.json
		// was there), and it is gone now. Their records say so, and they
		// run again once needed (NeedDeclarer): only records written
		// before cairn marked them come here.
		why := fmt.Sprintf("%s is missing and the validations were skipped as not needed when it was there", rel)
		if _, err := os.Lstat(filepath.Join(root, rel)); err == nil {
			// Selecting again (--replace on the optimization, say) with
			// validations the plan found not needed: selection.json was
			// there when it was made.
			why = fmt.Sprintf("the job is to be selected again, but its validations were skipped as not needed (%s was there when the plan was made), so there are no validation scores to select from", rel)
		}
		return &Outcome{Class: failclass.Setup, Message: fmt.Sprintf("%s: nothing is selected; run them again with --replace 'stage.seed_validation[%q]' --replace 'stage.incumbent_validation[%q]'", why, n.EachKey, n.EachKey)}, nil
	}
	sel := Decide(s.opt, s.seed, s.inc)
	sel.OptimizationSHA256 = optDigest
	b, _ := json.MarshalIndent(sel, "", "  ")
	if err := atomicfile.Write(filepath.Join(root, rel), append(b, '\n'), true); err != nil {
		return &Outcome{Class: failclass.Infra, Message: fmt.Sprintf("cannot write %s: %s", rel, err)}, nil
	}
	why := "its validation mean is higher"
	if sel.FallbackReason != nil {
		why = *sel.FallbackReason
	}
	note(rt, n.Address, "deploying the %s bundle (%s)", sel.Deployed, why)
	compact, _ := json.Marshal(sel)
	return &Outcome{Result: compact, Files: []string{rel}}, nil
}

// JobResult writes a job's test.json (paired per-item test scores) and
// result.json (its summary; docs/job-artifacts.md); apply prints its
// summary line (Announce).
//
//	stage "job_result" "result" {
//	  on_upstream_failure = "run"
//	  out       = local.out
//	  job       = stage.job.result
//	  selection = stage.select.result
//	  optimization = stage.optimize.result
//	  baseline  = stage.seed_test       # the seed bundle on the test split
//	  deployed  = stage.deployed_test   # the deployed bundle on the test split
//	}
type JobResult struct{}

func init() { Register(JobResult{}) }

// Name implements Kind.
func (JobResult) Name() string { return "job_result" }

// KeyValue implements KeyTransformer: of the test evaluations, their
// status and result.
func (JobResult) KeyValue(attr string, v cty.Value) cty.Value {
	if attr == "baseline" || attr == "deployed" {
		return instanceKeyValue(v)
	}
	return v
}

// Version implements Kind.
func (JobResult) Version() int { return 1 }

// Announce implements Announcer: the job's summary line, made of its
// result (result.json) and its out folder, when it runs and when it is
// taken from the cache.
func (JobResult) Announce(n *Node, result json.RawMessage) string {
	var res ResultFile
	if err := json.Unmarshal(result, &res); err != nil || res.Format != ResultFormat {
		return ""
	}
	out := ""
	if n != nil {
		if p, ok := knownString(n, "out"); ok {
			out = filepath.Clean(p)
		}
	}
	return res.SummaryLine(out)
}

// SummaryLine is the job's summary line of result.json, for the job whose
// out folder is out: the seed's fields, then what names the job in a grid.
func (res ResultFile) SummaryLine(out string) string {
	line, _ := json.Marshal(SummaryLine{Status: res.Status, CellID: res.CellID, BaselineMean: res.BaselineMean,
		DeployedMean: res.DeployedMean, DeltaPP: res.DeltaPP, ValidForAggregation: res.ValidForAggregation, FallbackReason: res.FallbackReason,
		Method: res.Method, Seed: res.Seed, Out: out})
	return string(line)
}

// Schema implements Kind.
func (JobResult) Schema() *hcl.BodySchema {
	return &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "out", Required: true},
		{Name: "job", Required: true},
		{Name: "selection", Required: true},
		{Name: "optimization", Required: true},
		{Name: "baseline", Required: true},
		{Name: "deployed", Required: true},
	}}
}

// Formats of test.json and result.json.
const (
	TestFormat   = "cairn.job-test/1"
	ResultFormat = "cairn.job-result/1"
)

// TestItem is one line of test.json's items.
type TestItem struct {
	ID       string   `json:"id"`
	Baseline *float64 `json:"baseline"`
	Deployed *float64 `json:"deployed"`
	Valid    bool     `json:"valid"`
}

// TestFile is test.json.
type TestFile struct {
	Format   string     `json:"format"`
	Method   string     `json:"method"`
	CellID   string     `json:"cell_id"`
	Seed     int        `json:"seed"`
	Deployed string     `json:"deployed"`
	Items    []TestItem `json:"items"`
}

// ResultFile is result.json.
type ResultFile struct {
	Format  string `json:"format"`
	Status  string `json:"status"`
	Method  string `json:"method"`
	CellID  string `json:"cell_id"`
	Dataset string `json:"dataset"`
	Runtime string `json:"runtime"`
	Model   string `json:"model"`
	Seed    int    `json:"seed"`
	Budget  int    `json:"budget"`
	Charged int    `json:"charged_rollouts"`
	// BaselineMean, DeployedMean and DeltaPP are null when no test item
	// is valid: a mean of none is no figure.
	BaselineMean        *float64 `json:"baseline_mean"`
	DeployedMean        *float64 `json:"deployed_mean"`
	DeltaPP             *float64 `json:"delta_pp"`
	Deployed            string   `json:"deployed"`
	FallbackReason      *string  `json:"fallback_reason"`
	ValidForAggregation bool     `json:"valid_for_aggregation"`
	Nonconformant       []string `json:"nonconformant"`
	TestItems           int      `json:"test_items"`
	TestInvalidItems    int      `json:"test_invalid_items"`
	// SelectionSHA256 and TestSHA256 are the digests of the selection.json
	// the result was made from and of the test.json written with it.
	SelectionSHA256 string `json:"selection_sha256"`
	TestSHA256      string `json:"test_sha256"`
	// Source is, for a job that `cairn import --job` made of an evaluation
	// harness's logs, where its scores came from; absent for a job cairn
	// ran.
	Source *ImportSource `json:"source,omitempty"`
}

// ImportSource is an imported job's provenance: the harness's format, the
// two files (as named on the command line) with their digests, and what
// of them became the score.
type ImportSource struct {
	Format   string       `json:"format"` // "lm-eval" or "inspect"
	Baseline ImportedFile `json:"baseline"`
	Deployed ImportedFile `json:"deployed"`
	Metric   string       `json:"metric,omitempty"`
	Filter   string       `json:"filter,omitempty"`
	Scorer   string       `json:"scorer,omitempty"`
}

// ImportedFile is one imported file and its digest ("sha256:" and hex).
type ImportedFile struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
}

// SummaryLine is the one-line summary a job prints: the seed's fields,
// then the job's method, seed and out folder (a grid's lines tell its jobs
// apart).
type SummaryLine struct {
	Status              string   `json:"status"`
	CellID              string   `json:"cell_id"`
	BaselineMean        *float64 `json:"baseline_mean"`
	DeployedMean        *float64 `json:"deployed_mean"`
	DeltaPP             *float64 `json:"delta_pp"`
	ValidForAggregation bool     `json:"valid_for_aggregation"`
	FallbackReason      *string  `json:"fallback_reason"`
	Method              string   `json:"method"`
	Seed                int      `json:"seed"`
	Out                 string   `json:"out"`
}

type resultSpec struct {
	out       string
	job       JobIdentity
	sel       Selection
	opt       Optimization
	base, dep evalInstance
	known     bool
}

func decodeJobResult(n *Node) (resultSpec, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var s resultSpec
	ok := jsonAttr(n, "out", &s.out, &diags, "the job's out folder")
	if ok {
		s.out = filepath.Clean(s.out)
		if !filepath.IsLocal(s.out) {
			diags = append(diags, Diag("Invalid out", fmt.Sprintf("%q is not a workspace-relative folder.", s.out), n.Range("out"))...)
		}
	}
	var raw map[string]json.RawMessage
	into := func(attr string, dst any, format *string, want string) bool {
		raw = nil
		if !jsonAttr(n, attr, &raw, &diags, "a "+attr+" stage's result") {
			return false
		}
		b, _ := json.Marshal(raw)
		if err := json.Unmarshal(b, dst); err != nil || *format != want {
			diags = append(diags, Diag("Invalid "+attr, fmt.Sprintf("%s must be the result of the job's %s stage (format %s).", attr, attr, want), n.Range(attr))...)
			return false
		}
		return true
	}
	j := into("job", &s.job, &s.job.Format, JobFormat)
	se := into("selection", &s.sel, &s.sel.Format, SelectionFormat)
	o := into("optimization", &s.opt, &s.opt.Format, OptimizationFormat)
	var b, d bool
	s.base, b = decodeInstance(n, "baseline", &diags)
	s.dep, d = decodeInstance(n, "deployed", &diags)
	s.known = ok && j && se && o && b && d
	return s, diags
}

// Check implements Kind.
func (JobResult) Check(n *Node) hcl.Diagnostics {
	_, diags := decodeJobResult(n)
	return diags
}

// KeepsOutFolder implements OutFolderKeeper.
func (JobResult) KeepsOutFolder() {}

// PathAttrs implements PathLinker.
func (JobResult) PathAttrs() []PathAttr { return jobResultPaths }

var jobResultPaths = []PathAttr{{Attr: "out", Write: true, Files: []string{"test.json", "result.json"}}}

// DeclaredOutputs implements OutputDeclarer: test.json and result.json.
func (JobResult) DeclaredOutputs(n *Node) []DeclaredPath {
	return outFolderFiles(n, "test.json", "result.json")
}

// scoreLine is what job_result reads of a scores file's line.
type scoreLine struct {
	ID      string   `json:"id"`
	Score   *float64 `json:"score"`
	Failed  string   `json:"failed"`
	Pending bool     `json:"pending"`
}

func readScores(path string) (map[string]scoreLine, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]scoreLine{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l scoreLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out[l.ID] = l
	}
	return out, sc.Err()
}

// Run implements Kind.
func (JobResult) Run(ctx context.Context, n *Node, rt Runtime) (*Outcome, error) {
	s, diags := decodeJobResult(n)
	if diags.HasErrors() {
		return nil, diags
	}
	root := rt.Root()
	fail := func(format string, args ...any) (*Outcome, error) {
		return &Outcome{Class: failclass.Setup, Message: fmt.Sprintf(format, args...)}, nil
	}
	if o := holdOut(rt, n, s.out); o != nil {
		return o, nil
	}
	res, tf, err := s.expected(root)
	if err != nil {
		return fail("the job's selection.json: %s", err)
	}
	if replace, again := replacing(rt); !replace {
		if o := savedResult(root, s.out, again, tf, res, n, rt); o != nil {
			return o, nil
		}
	}
	if s.base.Status == "ok" && s.base.Result == nil || s.dep.Status == "ok" && s.dep.Result == nil {
		// Writing the result again (--replace) with test evaluations the
		// plan found not needed: result.json was there when it was made.
		return fail("the job's result is to be written again, but its test evaluations were skipped as not needed (%s was there when the plan was made), so there are no test scores to write it from: %s", filepath.Join(s.out, "result.json"), testsAgain(n))
	}
	if s.base.Result == nil || s.dep.Result == nil {
		return fail("the test evaluations did not finish (baseline %s, deployed %s): no result.json is written; apply again to resume them", s.base.Status, s.dep.Status)
	}
	base, err := readScores(filepath.Join(root, s.base.Result.ScoresFile))
	if err != nil {
		return fail("the baseline's test scores: %s", err)
	}
	dep, err := readScores(filepath.Join(root, s.dep.Result.ScoresFile))
	if err != nil {
		return fail("the deployed bundle's test scores: %s", err)
	}
	for id, bl := range base {
		dl, ok := dep[id]
		it := TestItem{ID: id}
		if ok && bl.Score != nil && dl.Score != nil && bl.Failed == "" && dl.Failed == "" && !bl.Pending && !dl.Pending &&
			!math.IsNaN(*bl.Score) && !math.IsNaN(*dl.Score) {
			it.Baseline, it.Deployed, it.Valid = bl.Score, dl.Score, true
			if s.sel.Deployed == "seed" {
				it.Deployed = bl.Score
			}
		}
		tf.Items = append(tf.Items, it)
	}
	for id := range dep {
		if _, ok := base[id]; !ok {
			return fail("the test evaluations scored different items (%s is in the deployed bundle's only)", id)
		}
	}
	tb, rb, err := JobFiles(&tf, &res)
	if err != nil {
		return &Outcome{Class: failclass.Result, Message: fmt.Sprintf("%s: %s; no result.json was written", s.out, err)}, nil
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{"test.json", tb}, {"result.json", rb}} {
		rel := filepath.Join(s.out, f.name)
		if err := atomicfile.Write(filepath.Join(root, rel), f.b, true); err != nil {
			return &Outcome{Class: failclass.Infra, Message: fmt.Sprintf("cannot write %s: %s", rel, err)}, nil
		}
	}
	compact, _ := json.Marshal(res)
	return &Outcome{Result: compact, Files: []string{filepath.Join(s.out, "test.json"), filepath.Join(s.out, "result.json")}}, nil
}

// JobFiles completes a job's test.json and result.json from the test
// items: it sorts tf's items by id, and sets res's test_items,
// test_invalid_items, the means over the valid items (rounded to 6
// places, delta_pp from the rounded means), valid_for_aggregation and
// test_sha256. It returns both files' bytes (docs/job-artifacts.md), or
// an error for a valid item whose scores cairn aggregate could compute
// nothing from (aggregate.CheckScores): no result.json is better than one
// whose means overflowed.
func JobFiles(tf *TestFile, res *ResultFile) (test, result []byte, err error) {
	sort.Slice(tf.Items, func(i, j int) bool { return tf.Items[i].ID < tf.Items[j].ID })
	var sumB, sumD float64
	valid, invalid := 0, 0
	for _, it := range tf.Items {
		if !it.Valid {
			invalid++
			continue
		}
		if err := aggregate.CheckScores(*it.Baseline, *it.Deployed, len(tf.Items)); err != nil {
			return nil, nil, fmt.Errorf("item %q: %w", it.ID, err)
		}
		sumB += *it.Baseline
		sumD += *it.Deployed
		valid++
	}
	res.TestItems, res.TestInvalidItems = len(tf.Items), invalid
	if res.Nonconformant == nil {
		res.Nonconformant = []string{}
	}
	res.BaselineMean, res.DeployedMean, res.DeltaPP = nil, nil, nil
	if valid > 0 {
		b, d := round6(sumB/float64(valid)), round6(sumD/float64(valid))
		delta := round6(100 * (d - b))
		res.BaselineMean, res.DeployedMean, res.DeltaPP = &b, &d, &delta
	}
	res.ValidForAggregation = len(res.Nonconformant) == 0 && invalid == 0
	if test, err = json.MarshalIndent(tf, "", "  "); err != nil {
		return nil, nil, err
	}
	test = append(test, '\n')
	res.TestSHA256 = digestBytes(test)
	if result, err = json.MarshalIndent(res, "", "  "); err != nil {
		return nil, nil, err
	}
	return test, append(result, '\n'), nil
}

// round6 rounds f to 6 places; a magnitude of 1e15 and more has no
// digit after the point to round (and f·1e6 could overflow).
func round6(f float64) float64 {
	if math.Abs(f) >= 1e15 {
		return f
	}
	return math.Round(f*1e6) / 1e6
}

// testsAgain says how to run a job's test evaluations again, for the
// job_result node n: --replace naming its baseline evaluation, which runs
// the deployed one and n after it.
func testsAgain(n *Node) string {
	return fmt.Sprintf("run them again with --replace naming the job's baseline test evaluation (in pipelines/optimizer_grid.hcl: --replace 'stage.seed_test[%q]', which runs the deployed one and this node again too)", n.EachKey)
}

// savedResult is the job's result read from the out folder when its
// result.json is there: returned as it is when it is what this node would
// write from the folder's test.json and the job's own results (want and
// the header of test.json, wantTest: its selection.json, its identity,
// its charged rollouts), with that test.json; refused (nothing rewritten)
// when not: a figure edited by hand, or another job's files, would be
// printed, cached and aggregated as this job's. Nil when the folder holds
// no result.json.
func savedResult(root, out, again string, wantTest TestFile, want ResultFile, n *Node, rt Runtime) *Outcome {
	res, found, why := checkSaved(root, out, wantTest, want)
	switch {
	case !found:
		return nil
	case why != "":
		return &Outcome{Class: failclass.Setup, Refused: true, Message: why +
			fmt.Sprintf("; nothing was rewritten: restore the job's files, or write its result again with %s (on a cache without the records of the job's test evaluations, %s)", again, testsAgain(n))}
	}
	rel := filepath.Join(out, "result.json")
	note(rt, n.Address, "finished earlier: %s is kept", rel)
	compact, _ := json.Marshal(res)
	return &Outcome{Result: compact, Files: []string{filepath.Join(out, "test.json"), rel}}
}

// checkSaved reads the out folder's result.json and test.json and says
// why they are not what the job writes (savedResult); found is false
// when there is no result.json.
func checkSaved(root, out string, wantTest TestFile, want ResultFile) (res ResultFile, found bool, why string) {
	rel := filepath.Join(out, "result.json")
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return res, false, ""
	}
	if err := json.Unmarshal(b, &res); err != nil || res.Format != ResultFormat {
		return res, true, fmt.Sprintf("%s is not a result of format %s", rel, ResultFormat)
	}
	if res.SelectionSHA256 == "" {
		return res, true, fmt.Sprintf("%s has no selection_sha256 (an earlier cairn wrote it): which selection.json it was made from cannot be checked", rel)
	}
	if res.SelectionSHA256 != want.SelectionSHA256 {
		return res, true, fmt.Sprintf("%s was made from another selection.json (its selection_sha256 is %q, the folder's selection.json is %s)", rel, res.SelectionSHA256, want.SelectionSHA256)
	}
	testRel := filepath.Join(out, "test.json")
	tb, err := os.ReadFile(filepath.Join(root, testRel))
	if err != nil {
		return res, true, fmt.Sprintf("%s cannot be read: %s", testRel, err)
	}
	if d := digestBytes(tb); d != res.TestSHA256 {
		return res, true, fmt.Sprintf("%s: test_sha256 is %q, the folder's test.json is %s", rel, res.TestSHA256, d)
	}
	var tf TestFile
	if err := json.Unmarshal(tb, &tf); err != nil {
		return res, true, fmt.Sprintf("%s cannot be read: %s", testRel, err)
	}
	wantTest.Items = tf.Items
	wantTB, wantRB, err := JobFiles(&wantTest, &want)
	if err != nil {
		return res, true, fmt.Sprintf("%s: %s", testRel, err)
	}
	if diff := jsonFieldsDiffer(tb, wantTB); diff != "" {
		return res, true, fmt.Sprintf("%s is not what this job writes: %s", testRel, diff)
	}
	if diff := jsonFieldsDiffer(b, wantRB); diff != "" {
		return res, true, fmt.Sprintf("%s is not what this job writes from its test.json and its artifacts: %s", rel, diff)
	}
	return res, true, ""
}

// PlanRefusal implements PlanRefuser: a result.json in the out folder
// that is not what the job writes from its test.json and its artifacts is
// refused, as Run refuses it, when the job's results are known when the
// plan is made (its upstreams cached); --replace writes it again.
func (JobResult) PlanRefusal(n *Node, root, _ string, replaced bool) string {
	s, diags := decodeJobResult(n)
	if replaced || diags.HasErrors() || !s.known {
		return ""
	}
	want, wantTest, err := s.expected(root)
	if err != nil {
		return ""
	}
	_, _, why := checkSaved(root, s.out, wantTest, want)
	return why
}

// expected is what the node writes, but for what test.json gives:
// result.json's fields from the job's results and the folder's
// selection.json, and test.json's header.
func (s resultSpec) expected(root string) (ResultFile, TestFile, error) {
	selDigest, err := fileDigest(filepath.Join(root, s.out, "selection.json"))
	if err != nil {
		return ResultFile{}, TestFile{}, err
	}
	res := ResultFile{
		Format: ResultFormat, Status: "ok", Method: s.job.Method, CellID: s.job.CellID,
		Dataset: s.job.Dataset, Runtime: s.job.Runtime, Model: s.job.Model, Seed: s.job.Seed,
		Budget: s.job.Budget, Charged: s.opt.Charged, Deployed: s.sel.Deployed, FallbackReason: s.sel.FallbackReason,
		Nonconformant: s.job.Nonconformant, SelectionSHA256: selDigest,
	}
	tf := TestFile{Format: TestFormat, Method: s.job.Method, CellID: s.job.CellID, Seed: s.job.Seed, Deployed: s.sel.Deployed, Items: []TestItem{}}
	return res, tf, nil
}

// jsonFieldsDiffer compares two JSON objects field by field and says how
// have differs from want ("baseline_mean is 0.5 where it would be 0.85"),
// or "" when they hold the same values.
func jsonFieldsDiffer(have, want []byte) string {
	h, err := jsonFields(have)
	if err != nil {
		return "it is not a JSON object"
	}
	w, err := jsonFields(want)
	if err != nil {
		return "it is not a JSON object"
	}
	var diffs []string
	for _, k := range differingFields(h, w) {
		switch {
		case h[k] == "":
			diffs = append(diffs, fmt.Sprintf("it has no %q", k))
		case w[k] == "":
			diffs = append(diffs, fmt.Sprintf("it has a field %q the job does not write", k))
		default:
			diffs = append(diffs, fmt.Sprintf("%s is %s where it would be %s", k, short(h[k]), short(w[k])))
		}
	}
	return strings.Join(diffs, "; ")
}

// short is a JSON text cut to 80 bytes.
func short(text string) string {
	if len(text) > 80 {
		return text[:77] + "..."
	}
	return text
}
