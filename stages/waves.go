package stages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"path"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Waves runs a GPU batch: one process per variant (a for_each instance),
// each cached on its own, the stage as a whole scheduled as one batch of
// exactly batch_size variants.
//
//	stage "waves" "aime24" {
//	  for_each   = var.variants                # exactly batch_size of them, in this order
//	  run        = ["python", "run_submission_aime24.py", "--config", each.value]
//	  batch_size = 4                           # default 4; any other count is refused
//	  mode       = "waves"                     # in the order given; or "backfill"
//	  log_dir    = "logs/submission/${var.tag}" # cairn appends _<UTC YYYYmmdd_HHMMSS>
//	  tag        = var.tag                     # names the batch in `cairn status` and the ledger
//	  ledger     = "algorithm_scientist/memory.md" # optional markdown ledger
//	  strict_batch = false                     # true: any variant to run reruns them all
//	  gpus       = 1                           # default 1
//	  timeout    = "60m"
//	}
//
// Parallelism is min(free GPUs, batch_size), fixed when the batch starts;
// every variant is pinned to one of the devices free then. In "waves" mode
// a wave of that many variants starts together and the next one only after
// the whole wave ended, the variants in the order given (variant y of a
// wave on the wave's y-th device); in "backfill" mode a variant starts as
// soon as any of the batch's devices frees, the longest known first. Each
// variant's output goes to
// <log_dir>_<UTC>/gpu<idx>_<name>.out and .err. Only one batch runs at a
// time on a machine.
type Waves struct{}

func init() { Register(Waves{}) }

// Batch modes.
const (
	ModeWaves    = "waves"
	ModeBackfill = "backfill"
)

// DefaultBatchSize is a waves stage's batch_size when it sets none: the
// exact number of variants a batch must have.
const DefaultBatchSize = 4

// Name implements Kind.
// PurePlan implements PurePlanner.
func (Waves) PurePlan() {}

func (Waves) Name() string { return "waves" }

// Version implements Kind.
func (Waves) Version() int { return 1 }

// Schema implements Kind.
func (Waves) Schema() *hcl.BodySchema {
	return &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "run", Required: true},
		{Name: "shell"},
		{Name: "batch_size"},
		{Name: "mode"},
		{Name: "log_dir"},
		{Name: "tag"},
		{Name: "ledger"},
		{Name: "strict_batch"},
	}}
}

// KeyExcluded implements KeyExcluder: how a batch is scheduled, where its
// logs go and how it is named do not change a variant's result.
func (Waves) KeyExcluded() []string {
	return []string{"batch_size", "mode", "log_dir", "tag", "ledger", "strict_batch"}
}

// Check implements Kind. It also applies the kind's default of one GPU per
// variant when the stage does not say gpus.
func (Waves) Check(n *Node) hcl.Diagnostics {
	_, diags := commandArgv(n)
	if v, ok := n.Args["gpus"]; !ok || v.IsNull() {
		n.Common.GPUs = 1
	} else if v.IsKnown() && n.Common.GPUs != 1 {
		diags = append(diags, Diag("Invalid gpus",
			fmt.Sprintf("A waves variant runs on exactly one GPU (gpus = 1): the batch pins each variant to its own device, in waves of min(free GPUs, batch_size); got gpus = %d. For multi-GPU work use a command stage with gpus = N.", n.Common.GPUs), n.Range("gpus"))...)
	}
	_, d := batchPolicy(n)
	return append(diags, d...)
}

// PathAttrs implements PathLinker.
func (Waves) PathAttrs() []PathAttr { return wavesPaths }

var wavesPaths = []PathAttr{{Attr: "log_dir", Write: true, Default: func(stage string) string { return "logs/" + stage }}, {Attr: "ledger", Write: true}}

// DeclaredOutputs implements OutputDeclarer: the batch's log folder and
// its ledger file.
func (Waves) DeclaredOutputs(n *Node) []DeclaredPath {
	p, diags := batchPolicy(n)
	if diags.HasErrors() {
		return nil
	}
	var out []DeclaredPath
	if p.LogDir != "" {
		out = append(out, DeclaredPath{Attr: "log_dir", Path: p.LogDir})
	}
	if p.Ledger != "" {
		out = append(out, DeclaredPath{Attr: "ledger", Path: p.Ledger})
	}
	return out
}

// BatchPolicy implements Batcher. Attributes that are unknown or invalid
// take their defaults (Check reports the invalid ones).
func (Waves) BatchPolicy(n *Node) BatchPolicy {
	p, _ := batchPolicy(n)
	return p
}

// CheckStage implements StageChecker: a batch has exactly batch_size
// variants, never shrunk or padded, and keys its ledger can list.
func (Waves) CheckStage(s *StageInfo) hcl.Diagnostics {
	return append(checkBatchSize(s), checkLedgerKeys(s)...)
}

// checkBatchSize refuses a batch of other than batch_size variants.
func checkBatchSize(s *StageInfo) hcl.Diagnostics {
	size := DefaultBatchSize
	for _, n := range s.Nodes {
		if v, set := n.Args["batch_size"]; set && !v.IsNull() {
			sz, ok := batchSize(v)
			if !ok {
				// Not known yet, or refused with its own error.
				return nil
			}
			size = sz
		}
		break
	}
	if len(s.Keys) == size {
		return nil
	}
	return Diag("Wrong batch size",
		fmt.Sprintf("Batches must contain exactly %d variants. Got %d — re-design and re-invoke. (stage.%s; cairn never shrinks or pads a batch.)", size, len(s.Keys), s.Name),
		forEachRange(s))
}

// checkLedgerKeys refuses a variant key holding a ',' in a batch that
// keeps a ledger: the ledger's row lists the batch's variants separated by
// commas (as the seed writes them), where such a key would read as two
// variants, and no escape of a comma is read back as one.
func checkLedgerKeys(s *StageInfo) hcl.Diagnostics {
	if len(s.Nodes) == 0 {
		return nil
	}
	p, _ := batchPolicy(s.Nodes[0])
	if p.Ledger == "" {
		return nil
	}
	for _, k := range s.Keys {
		if strings.Contains(k, ",") {
			return Diag("Comma in a variant key",
				fmt.Sprintf("stage.%s[%q]: the ledger %s lists a batch's variants separated by commas, where this key would read as %d variants. Name the variant without a comma, or keep no ledger (ledger = \"\").", s.Name, k, p.Ledger, strings.Count(k, ",")+1),
				forEachRange(s))
		}
	}
	return nil
}

// forEachRange is where a check of a batch's variants points: the stage's
// for_each, else its block.
func forEachRange(s *StageInfo) hcl.Range {
	for _, n := range s.Nodes {
		if r, ok := n.LookupRange("for_each"); ok {
			return r
		}
		break
	}
	if s.ForEach != nil {
		return *s.ForEach
	}
	return s.DeclRange
}

// KeepsTimeout implements TimeoutKeeper: each process is killed at the
// stage's timeout (Runtime.Exec).
func (Waves) KeepsTimeout() {}

// Run implements Kind: the variant's process, with its logs named after
// the variant in the batch's log folder. (A result file the process leaves
// as an earlier run wrote it fails the node in the engine, as for every
// kind.)
func (Waves) Run(ctx context.Context, n *Node, rt Runtime) (*Outcome, error) {
	p, diags := commandArgv(n)
	if diags.HasErrors() {
		return nil, diags
	}
	p.LogName = variantLogName(n.EachKey)
	if p.LogName == "" {
		p.LogName = n.Stage
	}
	res, err := rt.Exec(ctx, p)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Class: res.Class, Message: res.Message, Proc: res}
	return out, nil
}

// batchPolicy decodes the batch attributes; unknown values keep their
// defaults.
func batchPolicy(n *Node) (BatchPolicy, hcl.Diagnostics) {
	p := BatchPolicy{Mode: ModeWaves, Size: DefaultBatchSize}
	var diags hcl.Diagnostics
	str := func(attr string) (string, bool) {
		v, ok := n.Args[attr]
		if !ok || !v.IsWhollyKnown() || v.IsNull() {
			return "", false
		}
		v, _ = v.UnmarkDeep()
		if !v.Type().Equals(cty.String) {
			diags = append(diags, Diag("Invalid "+attr, attr+" must be a string.", n.Range(attr))...)
			return "", false
		}
		return v.AsString(), true
	}
	if v, ok := n.Args["batch_size"]; ok && v.IsWhollyKnown() && !v.IsNull() {
		if size, ok := batchSize(v); !ok {
			diags = append(diags, Diag("Invalid batch_size", "batch_size must be a whole number of variants, from 1 to 1048576.", n.Range("batch_size"))...)
		} else {
			p.Size = size
		}
	}
	if m, ok := str("mode"); ok {
		switch m {
		case ModeWaves, ModeBackfill:
			p.Mode = m
		default:
			diags = append(diags, Diag("Invalid mode",
				fmt.Sprintf("mode is %q or %q, not %q: waves start together and the next wave waits for the whole previous one; backfill starts a variant as soon as any of the batch's GPUs frees.", ModeWaves, ModeBackfill, m),
				n.Range("mode"))...)
		}
	}
	if d, ok := str("log_dir"); ok {
		clean, err := relPath(d)
		if err != nil {
			diags = append(diags, Diag("Invalid log_dir", "log_dir "+err.Error(), n.Range("log_dir"))...)
		} else {
			p.LogDir = clean
		}
	}
	if t, ok := str("tag"); ok {
		p.Tag = t
	}
	if v, ok := n.Args["strict_batch"]; ok && v.IsWhollyKnown() && !v.IsNull() {
		v, _ = v.UnmarkDeep()
		if !v.Type().Equals(cty.Bool) {
			diags = append(diags, Diag("Invalid strict_batch", "strict_batch must be true or false.", n.Range("strict_batch"))...)
		} else {
			p.Strict = v.True()
		}
	}
	if l, ok := str("ledger"); ok && l != "" {
		clean, err := relPath(l)
		if err != nil {
			diags = append(diags, Diag("Invalid ledger", "ledger "+err.Error(), n.Range("ledger"))...)
		} else {
			p.Ledger = clean
		}
	}
	return p, diags
}

// batchSize is a known batch_size, when it is a whole number, at least 1.
func batchSize(v cty.Value) (int, bool) {
	if !v.IsWhollyKnown() || v.IsNull() {
		return 0, false
	}
	size, ok := wholeNumber(v)
	return size, ok && size >= 1 && size <= 1<<20
}

// relPath checks a workspace-relative path and cleans it.
func relPath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("is empty")
	}
	if filepath.IsAbs(p) {
		return "", fmt.Errorf("%q must be relative to the workspace root", p)
	}
	clean := path.Clean(filepath.ToSlash(p))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%q leaves the workspace", p)
	}
	return clean, nil
}

// wholeNumber is a known attribute's value as a whole number: a number,
// or what converts to one as HCL converts for a number type (the string
// "2", as --var gives an untyped variable), as the generic cpus and
// concurrency read theirs. False for anything else: a fraction, a string
// that is not a number ("abc", "1.5"), a number beyond int. The caller
// says the attribute's range.
func wholeNumber(v cty.Value) (int, bool) {
	if !v.IsWhollyKnown() || v.IsNull() {
		return 0, false
	}
	v, _ = v.Unmark() // a collection does not convert, marked or not
	nv, err := convert.Convert(v, cty.Number)
	if err != nil || !nv.IsKnown() || nv.IsNull() {
		return 0, false
	}
	i, acc := nv.AsBigFloat().Int64()
	if acc != big.Exact || int64(int(i)) != i {
		return 0, false
	}
	return int(i), true
}

// variantLogName is a variant's instance key as its logs' name
// (gpu<index>_<name>.out): the key itself where it is one file name, else
// the key with each '/', '\\' and control character as '_', cut to 120
// bytes, and '~' and the start of the key's sha256, so that no key leads
// out of the batch's log folder and two keys never share a log. A key
// ending in .attempt and digits is not one either: a retried variant's
// logs add that (gpu0_v.attempt2.out), and the key "v.attempt2" must not
// write them.
func variantLogName(key string) string {
	plain := len(key) <= 120 && key != "." && key != ".." && !attemptSuffixed(key)
	b := []byte(key)
	for i, c := range b {
		if c == '/' || c == '\\' || c < 0x20 || c == 0x7f {
			b[i] = '_'
			plain = false
		}
	}
	if plain {
		return key
	}
	if len(b) > 120 {
		b = b[:120]
	}
	sum := sha256.Sum256([]byte(key))
	return string(b) + "~" + hex.EncodeToString(sum[:8])
}

// attemptSuffixed reports whether key ends in ".attempt" and one or more
// digits, the suffix of a retried attempt's logs.
func attemptSuffixed(key string) bool {
	digits := strings.TrimRightFunc(key, func(r rune) bool { return r >= '0' && r <= '9' })
	return len(digits) < len(key) && strings.HasSuffix(digits, ".attempt")
}
