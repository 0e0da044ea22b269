// Package aggregate turns an optimizer grid's jobs into the protocol's
// table: one row per (method, cell) over seeds 0, 1 and 2, with the
// deployed bundle's gain over the seed bundle, a stratified paired
// bootstrap interval and p-value, and the Holm–Bonferroni correction
// within each family of rows. It reads the job artifacts of
// docs/job-artifacts.md and writes the table (TSV), the summary (JSON)
// and a forest plot (SVG); it is pure: files in, values and bytes out.
// The statistics are described in docs/aggregate.md.
package aggregate

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"

	"github.com/cairn-run/cairn/stats"
)

// Seeds are the seeds a reported row needs.
var Seeds = []int{0, 1, 2}

// Families a row's p-value is corrected within.
const (
	FamilyTask   = "task"   // rows sharing dataset × model
	FamilyMethod = "method" // rows sharing the method
	FamilyNone   = "none"   // no correction
)

// FamilyNames lists the families, for messages.
var FamilyNames = []string{FamilyTask, FamilyMethod, FamilyNone}

// SummaryFormat is the summary's "format".
const SummaryFormat = "cairn.aggregate/1"

// Options say what to aggregate and how.
type Options struct {
	// Dir resolves relative roots; names in the output are as given.
	Dir   string
	Roots []string
	// Family is one of FamilyNames ("" is FamilyTask).
	Family string
	// Replicates of the bootstrap (0: DefaultReplicates).
	Replicates int
	// IncludeNonconformant keeps jobs whose result.json lists reasons they
	// are not part of the experiment.
	IncludeNonconformant bool
	// Resample is one of ResampleNames ("" is ResampleWithinSeed): how a
	// bootstrap replicate draws a row's items.
	Resample string
	// Workers bounds the goroutines of the bootstrap (0: GOMAXPROCS). It
	// does not change the result.
	Workers int
}

// Row statuses.
const (
	StatusOK         = "ok"
	StatusIncomplete = "incomplete"
)

// Seed statuses besides StatusOK and the job's own status.
const (
	SeedMissing = "missing"
	SeedSkipped = "skipped"
	SeedInvalid = "invalid"
)

// Summary is the whole aggregation: what --out writes.
type Summary struct {
	Format     string  `json:"format"`
	Family     string  `json:"family"`
	Replicates int     `json:"bootstrap"`
	Resample   string  `json:"resample"`
	Alpha      float64 `json:"alpha"`
	// PFloor is the smallest p-value the bootstrap's replicates can give
	// (stats.PFloor): a family whose rows cannot be significant above it
	// is marked (Family.CannotReject).
	PFloor   float64  `json:"p_floor"`
	Stream   string   `json:"stream_constant"`
	Roots    []string `json:"roots"`
	Rows     []Row    `json:"rows"`
	Families []Family `json:"families"`
	Skipped  []Skip   `json:"skipped"`
	// DifferentItems says, for each cell whose methods were tested on
	// different items, which (a sentence each): each row pairs its own
	// items, but rows side by side are then not on one test set. Absent
	// when there is none.
	DifferentItems []string `json:"different_items,omitempty"`
}

// Family is one Holm family: the rows corrected together.
type Family struct {
	Name     string `json:"name"`
	Rows     int    `json:"rows"`
	Rejected int    `json:"rejected"`
	// Nonconformant counts the family's rows with a non-conformant job
	// (kept by IncludeNonconformant).
	Nonconformant int `json:"nonconformant"`
	// CannotReject marks a family in which no row can be significant,
	// whatever its data: Holm's first step needs p·rows <= alpha, and
	// the bootstrap's replicates give no p-value below Summary.PFloor.
	// Each of its rows is marked too.
	CannotReject bool `json:"cannot_reject"`
}

// Row is one (method, cell).
type Row struct {
	// Family is the row's Holm family: dataset/model (task), the method
	// (method), or "" (none, and incomplete rows).
	Family  string `json:"family"`
	Method  string `json:"method"`
	CellID  string `json:"cell_id"`
	Dataset string `json:"dataset"`
	Runtime string `json:"runtime"`
	Model   string `json:"model"`
	NSeeds  int    `json:"n_seeds"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	// Nonconformant lists, for each of the row's jobs whose result.json
	// says it is not part of the experiment (kept by IncludeNonconformant),
	// "seed K: " and each reason; empty for a row of the experiment.
	Nonconformant []string `json:"nonconformant"`
	// The statistics, null in an incomplete row. Means are fractions;
	// delta and interval are percentage points.
	BaselineMean *float64 `json:"baseline_mean"`
	DeployedMean *float64 `json:"deployed_mean"`
	DeltaPP      *float64 `json:"delta_pp"`
	CILow        *float64 `json:"ci_low"`
	CIHigh       *float64 `json:"ci_high"`
	P            *float64 `json:"p"`
	PHolm        *float64 `json:"p_holm"`
	Reject       *bool    `json:"reject"`
	// CannotReject marks a complete row whose reject is "no" whatever its
	// data, and CannotRejectWhy says why: WhyReplicates, too few bootstrap
	// replicates for its family (Family.CannotReject), and WhyItems, too
	// few items that differ for any test to reach alpha (SignedItems).
	CannotReject    bool     `json:"cannot_reject"`
	CannotRejectWhy []string `json:"cannot_reject_why"`
	// NoiseTies counts the row's item differences (over its seeds) within
	// rounding noise, counted as ties (PairedDiff).
	NoiseTies int `json:"noise_ties"`
	// CINot95 marks a complete row's interval as no 95% interval: too
	// few replicates (stats.MinIntervalReplicates).
	CINot95 bool   `json:"ci_not_95"`
	Seeds   []Seed `json:"seeds"`
	// constant: every item of every seed has the same difference, so
	// the interval is the point (buildRow).
	constant bool
	// signedItems counts a complete row's items whose difference has a
	// sign (SignedItems): fewer than MinDraws cannot be significant.
	signedItems int
}

// The reasons a row cannot be significant (Row.CannotRejectWhy).
const (
	WhyReplicates = "too few replicates"
	WhyItems      = "too few items"
)

// NoiseTolerance bounds rounding noise: an item's paired difference at
// most NoiseTolerance × max(1, |baseline|, |deployed|) is a tie
// (PairedDiff). Far above float64's rounding (2.2e-16 of the scale per
// operation) and far below any difference a score measures: 1e-7
// percentage points of a score on the scale of 1.
const NoiseTolerance = 1e-9

// PairedDiff is an item's paired difference, deployed − baseline, and 0
// (tied true) when it is within rounding noise: 0.30000000000000004 −
// 0.3, or 1e-320 − 0, is no gain, and a bootstrap of such differences
// would call it a significant one.
func PairedDiff(it Item) (d float64, tied bool) {
	d = it.Deployed - it.Baseline
	scale := max(1, math.Abs(it.Baseline), math.Abs(it.Deployed))
	if d != 0 && math.Abs(d) <= float64(NoiseTolerance*scale) {
		return 0, true
	}
	return d, false
}

// MinDraws is the fewest independent paired differences with which a
// test of their signs can reach stats.Alpha: with u of them, all of one
// sign, the exact two-sided sign-flip test gives p = 2 · 2^-u, 0.0625 for
// 5 and 0.031 for 6. A bootstrap of fewer gives its smallest p-value all
// the same, from the few draws it has.
const MinDraws = 6

// SignedItems counts the items of a row (st, as buildRow makes it: each
// seed's differences over the same items, in the same order) whose paired
// difference has a sign, as resample draws them. A tie (0) carries none:
// a row of 4 items that differ padded with 96 ties has 4 signs, not 100.
// Within seed, an item counts when it differs in some seed: the seeds share
// their items, and one item's differences in three seeds are not three
// independent signs. With shared items, an item counts when its difference
// averaged over the seeds (what the bootstrap draws) is not 0, nor within
// the replicates' rounding noise of it (stats.ReplicateNoise).
func SignedItems(st stats.Strata, resample string) int {
	noise := stats.ReplicateNoise(st)
	n := 0
	for i := range st.Diffs[0] {
		var sum float64
		differs := false
		for _, d := range st.Diffs {
			sum += d[i]
			differs = differs || d[i] != 0
		}
		if resample == stats.ResampleSharedItems {
			differs = math.Abs(sum/float64(len(st.Diffs))) > noise
		}
		if differs {
			n++
		}
	}
	return n
}

// Seed is one seed of a row: a detail line.
type Seed struct {
	Seed int `json:"seed"`
	// "ok", "missing", "skipped" (non-conformant, left out), "invalid",
	// or the job's own status.
	Status string `json:"status"`
	File   string `json:"file,omitempty"`
	// Nonconformant are the reasons the job's result.json gives for not
	// being part of the experiment: the job was kept (IncludeNonconformant)
	// or, status "skipped", left out. Empty otherwise.
	Nonconformant []string `json:"nonconformant"`
	Items         int      `json:"test_items"`
	// Invalid test items (no score from either bundle: an infrastructure
	// failure past its retries, or the worker's error).
	Invalid int `json:"test_invalid_items"`
	// Means over the seed's valid items; null when it has none.
	BaselineMean *float64 `json:"baseline_mean"`
	DeployedMean *float64 `json:"deployed_mean"`
	DeltaPP      *float64 `json:"delta_pp"`
}

// testIDs are the test item ids of a row's first seed present (sorted:
// the seeds of a row share them, or the row is refused).
func testIDs(bySeed map[int]*Job) []string {
	for _, sd := range Seeds {
		if j := bySeed[sd]; j != nil {
			ids := make([]string, len(j.Items))
			for i, it := range j.Items {
				ids[i] = it.ID
			}
			return ids
		}
	}
	return nil
}

// onlyInOne counts the ids in exactly one of a and b (both sorted).
func onlyInOne(a, b []string) int {
	n, i, j := 0, 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i] < b[j]:
			n, i = n+1, i+1
		case i == len(a) || b[j] < a[i]:
			n, j = n+1, j+1
		default:
			i, j = i+1, j+1
		}
	}
	return n
}

// Run finds the jobs under the roots, groups them into rows, and computes
// every row's statistics. A bad artifact is an *InputError.
func Run(ctx context.Context, o Options) (*Summary, error) {
	fam := o.Family
	if fam == "" {
		fam = FamilyTask
	}
	if !slices.Contains(FamilyNames, fam) {
		return nil, &InputError{Msg: fmt.Sprintf("family %q is not one of %s", fam, strings.Join(FamilyNames, ", "))}
	}
	B := o.Replicates
	if B == 0 {
		B = stats.DefaultReplicates
	}
	if B < 1 || B > stats.MaxReplicates {
		return nil, &InputError{Msg: fmt.Sprintf("bootstrap replicates must be from 1 to %d, not %d", stats.MaxReplicates, B)}
	}
	resample := o.Resample
	if resample == "" {
		resample = stats.ResampleWithinSeed
	}
	if !slices.Contains(stats.ResampleNames, resample) {
		return nil, &InputError{Msg: fmt.Sprintf("resampling %q is not one of %s", resample, strings.Join(stats.ResampleNames, ", "))}
	}
	files, err := FindResults(o.Dir, o.Roots)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, &InputError{Msg: fmt.Sprintf("no %s under %s: name the folders the optimizer jobs wrote into", ResultFile, strings.Join(o.Roots, ", "))}
	}
	s := &Summary{
		Format: SummaryFormat, Family: fam, Replicates: B, Resample: resample, Alpha: stats.Alpha,
		Stream: stats.StreamConstant, Roots: sortedCopy(o.Roots),
		Rows: []Row{}, Families: []Family{}, Skipped: []Skip{},
	}
	type rowKey struct{ method, cell string }
	jobs := map[rowKey]map[int]*Job{}
	// The non-conformant jobs left out, by row and seed: a row that has
	// other seeds reports them as skipped, not missing.
	skipped := map[rowKey]map[int][]*Job{}
	cells := map[string]*Job{} // the first job of each cell_id
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		j, skip, err := ReadJob(o.Dir, f, o.IncludeNonconformant)
		if err != nil {
			return nil, err
		}
		if err := sameCell(cells, j); err != nil {
			return nil, err
		}
		if skip == nil && !slices.Contains(Seeds, j.Seed) {
			skip = &Skip{File: f, Reasons: []string{fmt.Sprintf("seed %d is not one of the protocol's seeds 0, 1, 2", j.Seed)}}
		}
		if skip != nil {
			s.Skipped = append(s.Skipped, *skip)
			if len(j.Nonconformant) > 0 {
				k := rowKey{j.Method, j.CellID}
				if skipped[k] == nil {
					skipped[k] = map[int][]*Job{}
				}
				skipped[k][j.Seed] = append(skipped[k][j.Seed], j)
			}
			continue
		}
		k := rowKey{j.Method, j.CellID}
		if jobs[k] == nil {
			jobs[k] = map[int]*Job{}
		}
		if old, dup := jobs[k][j.Seed]; dup {
			return nil, &InputError{Msg: fmt.Sprintf("%s and %s are both %s %s seed %d: keep one of them, or give roots that hold one", old.File, f, j.Method, j.CellID, j.Seed)}
		}
		jobs[k][j.Seed] = j
	}

	keys := make([]rowKey, 0, len(jobs))
	for k := range jobs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b rowKey) int {
		if c := strings.Compare(a.method, b.method); c != 0 {
			return c
		}
		return strings.Compare(a.cell, b.cell)
	})
	// Methods of one cell tested on different items (a test split made
	// again between two methods' runs): each against the cell's first.
	firstOf := map[string]rowKey{}
	for _, k := range keys {
		ref, ok := firstOf[k.cell]
		if !ok {
			firstOf[k.cell] = k
			continue
		}
		a, b := testIDs(jobs[ref]), testIDs(jobs[k])
		if !slices.Equal(a, b) {
			s.DifferentItems = append(s.DifferentItems, fmt.Sprintf("cell %s: %s and %s were tested on different items (%d and %d items, %d of them in one only): each row pairs its own items, but the two rows are not on one test set",
				k.cell, ref.method, k.method, len(a), len(b), onlyInOne(a, b)))
		}
	}
	var strata []stats.Strata
	var complete []int // index in s.Rows of each stratum
	for _, k := range keys {
		row, st, err := buildRow(jobs[k], skipped[k])
		if err != nil {
			return nil, err
		}
		if st != nil {
			strata = append(strata, *st)
			complete = append(complete, len(s.Rows))
		}
		s.Rows = append(s.Rows, row)
	}
	ivs, err := stats.Bootstrap(ctx, strata, B, o.Workers, resample)
	if err != nil {
		return nil, err
	}
	for i, iv := range ivs {
		r := &s.Rows[complete[i]]
		r.CILow, r.CIHigh, r.P = ptr(iv.Low), ptr(iv.High), ptr(iv.P)
		r.CINot95 = B < stats.MinIntervalReplicates
		if r.constant {
			// Every replicate is the point, up to its sums' rounding.
			r.CILow, r.CIHigh = r.DeltaPP, r.DeltaPP
		}
		switch fam {
		case FamilyTask:
			r.Family = r.Dataset + "/" + r.Model
		case FamilyMethod:
			r.Family = r.Method
		}
		// A row in which no item differs is not marked: its interval [0,
		// 0] and p = 1 say so already.
		if r.signedItems = SignedItems(strata[i], resample); r.signedItems > 0 && r.signedItems < MinDraws {
			r.CannotReject = true
			r.CannotRejectWhy = append(r.CannotRejectWhy, WhyItems)
		}
	}
	if err := distinctFamilies(s.Rows, fam); err != nil {
		return nil, err
	}
	s.PFloor = stats.PFloor(B)
	s.Families = correct(s.Rows, fam, s.PFloor)
	sortRows(s.Rows)
	if err := computable(s.Rows); err != nil {
		return nil, err
	}
	return s, nil
}

// buildRow makes one row of its jobs by seed and the non-conformant jobs
// left out of it by seed; st is nil when the row is incomplete.
func buildRow(bySeed map[int]*Job, skipped map[int][]*Job) (Row, *stats.Strata, error) {
	var first *Job
	for _, sd := range Seeds {
		if j := bySeed[sd]; j != nil {
			first = j
			break
		}
	}
	r := Row{Method: first.Method, CellID: first.CellID, Dataset: first.Dataset, Runtime: first.Runtime, Model: first.Model, Status: StatusOK, Nonconformant: []string{}, CannotRejectWhy: []string{}}
	var reasons []string
	var ref *Job   // the first present seed: the item set the others must have
	var setup *Job // the first present seed with a job.json: the setup the others must have
	for _, sd := range Seeds {
		j := bySeed[sd]
		if j == nil {
			if sk := skipped[sd]; len(sk) > 0 {
				// The first skipped job stands for the seed; the others
				// are in the summary's skipped list too.
				r.Seeds = append(r.Seeds, Seed{Seed: sd, Status: SeedSkipped, File: sk[0].File, Nonconformant: sk[0].Nonconformant})
				reasons = append(reasons, fmt.Sprintf("seed %d skipped as non-conformant (%s)", sd, strings.Join(sk[0].Nonconformant, "; ")))
				continue
			}
			r.Seeds = append(r.Seeds, Seed{Seed: sd, Status: SeedMissing, Nonconformant: []string{}})
			reasons = append(reasons, fmt.Sprintf("seed %d missing", sd))
			continue
		}
		r.NSeeds++
		if ref == nil {
			ref = j
		} else if err := sameItems(ref, j); err != nil {
			return Row{}, nil, err
		}
		if setup == nil && j.Setup != nil {
			setup = j
		} else if err := sameSetup(setup, j); err != nil {
			return Row{}, nil, err
		}
		seed := Seed{Seed: sd, Status: StatusOK, File: j.File, Items: len(j.Items), Invalid: j.Invalid, Nonconformant: j.Nonconformant}
		for _, why := range j.Nonconformant {
			r.Nonconformant = append(r.Nonconformant, fmt.Sprintf("seed %d: %s", sd, why))
		}
		var b, d float64
		var diffs []float64
		for _, it := range j.Items {
			if it.Valid {
				b += it.Baseline
				d += it.Deployed
				x, tied := PairedDiff(it)
				diffs = append(diffs, x)
				if tied {
					r.NoiseTies++
				}
			}
		}
		if valid := len(diffs); valid > 0 {
			seed.BaselineMean = ptr(b / float64(valid))
			seed.DeployedMean = ptr(d / float64(valid))
			seed.DeltaPP = ptr(meanPP([][]float64{diffs}))
		}
		switch {
		case j.Status != StatusOK:
			seed.Status = j.Status
			reasons = append(reasons, fmt.Sprintf("seed %d status %q", sd, j.Status))
		case j.Invalid > 0:
			seed.Status = SeedInvalid
			reasons = append(reasons, fmt.Sprintf("seed %d: %d of %d test items invalid (no score from a bundle)", sd, j.Invalid, len(j.Items)))
		}
		r.Seeds = append(r.Seeds, seed)
	}
	if len(reasons) > 0 {
		r.Status = StatusIncomplete
		r.Reason = strings.Join(reasons, "; ")
		return r, nil, nil
	}
	st := &stats.Strata{Method: r.Method, CellID: r.CellID}
	var bm, dm []float64
	for _, sd := range Seeds {
		j := bySeed[sd]
		diffs := make([]float64, len(j.Items))
		for i, it := range j.Items {
			diffs[i], _ = PairedDiff(it)
		}
		st.Seeds = append(st.Seeds, sd)
		st.Diffs = append(st.Diffs, diffs)
		seed := r.Seeds[len(st.Seeds)-1]
		bm = append(bm, *seed.BaselineMean)
		dm = append(dm, *seed.DeployedMean)
	}
	r.BaselineMean = ptr(exactMean(bm))
	r.DeployedMean = ptr(exactMean(dm))
	r.DeltaPP = ptr(meanPP(st.Diffs))
	if c, ok := constantDiff(st); ok {
		// Every mean of c is c: a sum's rounding would put the point a
		// few ulps off the interval, which is that point.
		r.constant = true
		r.DeltaPP = ptr(float64(100 * c))
		for i := range r.Seeds {
			r.Seeds[i].DeltaPP = r.DeltaPP
		}
	}
	return r, st, nil
}

// exactMean is the mean of xs rounded once: their sum and its quotient by
// their number computed exactly (as rationals), then rounded to the
// nearest float64. Seeds of one value give that value (a float sum of
// three 0.00625 divided by 3 gives 0.006250000000000001), and the order
// of xs does not matter. xs are finite (ScoreLimit).
func exactMean(xs []float64) float64 {
	m, ok := ratMean(xs)
	if !ok {
		return math.NaN() // refused where the figure is written
	}
	f, _ := m.Float64()
	return f
}

// meanPP is 100 × the mean over groups (a row's seeds) of each group's
// mean difference, computed exactly (every sum and quotient as rationals)
// and rounded once to the nearest float64. A float sum of each seed's
// differences rounded its mean first: seeds of -4/5, 1/5 and 3/5 (-0.8,
// 0.2 and 0.6 as floats), whose means are equal, gave -1.85e-15, not 0.
// Exactly summed, differences that cancel give 0, in any order. The
// differences are finite (ScoreLimit).
func meanPP(groups [][]float64) float64 {
	var sum big.Rat
	for _, g := range groups {
		m, ok := ratMean(g)
		if !ok {
			return math.NaN() // refused where the figure is written
		}
		sum.Add(&sum, m)
	}
	sum.Mul(&sum, big.NewRat(100, int64(len(groups))))
	f, _ := sum.Float64()
	return f
}

// ratMean is the exact mean of xs, as a rational; ok is false when one
// of them is not finite.
func ratMean(xs []float64) (m *big.Rat, ok bool) {
	var sum big.Rat
	for _, x := range xs {
		v := new(big.Rat)
		if v.SetFloat64(x) == nil {
			return nil, false
		}
		sum.Add(&sum, v)
	}
	return sum.Quo(&sum, new(big.Rat).SetInt64(int64(len(xs)))), true
}

// constantDiff reports whether every item of every seed of st has the
// same difference, and which: the row's interval is then that point.
func constantDiff(st *stats.Strata) (float64, bool) {
	c := st.Diffs[0][0]
	for _, d := range st.Diffs {
		for _, x := range d {
			if x != c {
				return 0, false
			}
		}
	}
	return c, true
}

// computable refuses a summary holding a figure that is not a finite
// number: the limit on scores (ScoreLimit) keeps every figure finite, and
// this says so where a figure is written.
func computable(rows []Row) error {
	type figure struct {
		name string
		v    *float64
	}
	for _, r := range rows {
		figs := []figure{
			{"baseline_mean", r.BaselineMean}, {"deployed_mean", r.DeployedMean}, {"delta_pp", r.DeltaPP},
			{"ci_low", r.CILow}, {"ci_high", r.CIHigh}, {"p", r.P}, {"p_holm", r.PHolm},
		}
		var files []string
		for _, sd := range r.Seeds {
			figs = append(figs, figure{fmt.Sprintf("seed %d baseline_mean", sd.Seed), sd.BaselineMean},
				figure{fmt.Sprintf("seed %d deployed_mean", sd.Seed), sd.DeployedMean},
				figure{fmt.Sprintf("seed %d delta_pp", sd.Seed), sd.DeltaPP})
			if sd.File != "" {
				files = append(files, sd.File)
			}
		}
		for _, f := range figs {
			if f.v != nil && (math.IsNaN(*f.v) || math.IsInf(*f.v, 0)) {
				return &InputError{Msg: fmt.Sprintf("%s %s: %s is %v, not a figure that can be reported (from %s); nothing was computed", r.Method, r.CellID, f.name, *f.v, strings.Join(files, ", "))}
			}
		}
	}
	return nil
}

// sameCell refuses a job whose cell_id another job (of any method)
// splits into another dataset, runtime and model: a name may hold "/"
// ("Qwen/Qwen3.5-9B"), so the id alone does not say, and the task family
// (dataset × model) would depend on which job was read first.
func sameCell(cells map[string]*Job, j *Job) error {
	first, ok := cells[j.CellID]
	if !ok {
		cells[j.CellID] = j
		return nil
	}
	if first.Dataset != j.Dataset || first.Runtime != j.Runtime || first.Model != j.Model {
		return &InputError{Msg: fmt.Sprintf("cell_id %q is split two ways: %s says dataset %q, runtime %q, model %q; %s says %q, %q, %q: one cell has one dataset, runtime and model",
			j.CellID, first.File, first.Dataset, first.Runtime, first.Model, j.File, j.Dataset, j.Runtime, j.Model)}
	}
	return nil
}

// sameItems refuses two seeds of a row whose test splits differ: the
// seeds of a row are scored on the same items.
func sameItems(a, b *Job) error {
	ids := func(j *Job) map[string]bool {
		m := make(map[string]bool, len(j.Items))
		for _, it := range j.Items {
			m[it.ID] = true
		}
		return m
	}
	ia, ib := ids(a), ids(b)
	var onlyA, onlyB []string
	for _, it := range a.Items {
		if !ib[it.ID] {
			onlyA = append(onlyA, it.ID)
		}
	}
	for _, it := range b.Items {
		if !ia[it.ID] {
			onlyB = append(onlyB, it.ID)
		}
	}
	if len(onlyA) == 0 && len(onlyB) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%s %s: seeds %d and %d were tested on different items (%s has %d, %s has %d", a.Method, a.CellID, a.Seed, b.Seed, a.TestFile, len(a.Items), b.TestFile, len(b.Items))
	if len(onlyA) > 0 {
		msg += fmt.Sprintf("; only seed %d has %s", a.Seed, idList(onlyA))
	}
	if len(onlyB) > 0 {
		msg += fmt.Sprintf("; only seed %d has %s", b.Seed, idList(onlyB))
	}
	return &InputError{Msg: msg + "): every seed of a row must use the same test split"}
}

func idList(ids []string) string {
	const show = 3
	q := make([]string, 0, show)
	for i, id := range ids {
		if i == show {
			break
		}
		q = append(q, fmt.Sprintf("%q", id))
	}
	s := strings.Join(q, ", ")
	if len(ids) > show {
		s += fmt.Sprintf(" and %d more", len(ids)-show)
	}
	return s
}

// familyKey is what makes a row's family: (dataset, model) for the task
// family, the method for the method family. A name may hold "/", so the
// name DATASET/MODEL alone does not say which task it is.
type familyKey struct{ a, b string }

func keyOf(r Row, fam string) familyKey {
	if fam == FamilyTask {
		return familyKey{r.Dataset, r.Model}
	}
	return familyKey{r.Method, ""}
}

// distinctFamilies refuses two families of complete rows that would have
// one name: dataset "a/b" × model "d" and dataset "a" × model "b/d" are
// both "a/b/d", and the table and summary, which name a family, could not
// tell them apart.
func distinctFamilies(rows []Row, fam string) error {
	if fam == FamilyNone {
		return nil
	}
	first := map[string]Row{}
	for _, r := range rows {
		if r.Status != StatusOK {
			continue
		}
		f, ok := first[r.Family]
		if !ok {
			first[r.Family] = r
			continue
		}
		if keyOf(f, fam) != keyOf(r, fam) {
			return &InputError{Msg: fmt.Sprintf("family %q would be two tasks: dataset %q × model %q (%s) and dataset %q × model %q (%s): a \"/\" in a dataset or model name makes DATASET/MODEL name both; rename the dataset or model of one",
				r.Family, f.Dataset, f.Model, f.Seeds[0].File, r.Dataset, r.Model, r.Seeds[0].File)}
		}
	}
	return nil
}

// correct applies Holm within each family of complete rows and lists the
// families, sorted by name. pFloor is the smallest p-value the bootstrap
// can give: a family (or, with no correction, a row) that cannot reach
// alpha with it is marked.
func correct(rows []Row, fam string, pFloor float64) []Family {
	byFam := map[familyKey][]int{}
	for i, r := range rows {
		if r.Status != StatusOK {
			continue
		}
		if fam == FamilyNone {
			r := &rows[i]
			r.PHolm = ptr(holmP(*r))
			r.Reject = ptrBool(*r.PHolm <= stats.Alpha)
			r.markReplicates(pFloor > stats.Alpha)
			continue
		}
		k := keyOf(r, fam)
		byFam[k] = append(byFam[k], i)
	}
	out := []Family{}
	for _, idx := range byFam {
		name := rows[idx[0]].Family
		p := make([]float64, len(idx))
		for k, i := range idx {
			p[k] = holmP(rows[i])
		}
		adj, rej := stats.Holm(p, stats.Alpha)
		f := Family{Name: name, Rows: len(idx), CannotReject: pFloor*float64(len(idx)) > stats.Alpha}
		for k, i := range idx {
			rows[i].markReplicates(f.CannotReject)
			rows[i].PHolm = ptr(adj[k])
			rows[i].Reject = ptrBool(rej[k])
			if rej[k] {
				f.Rejected++
			}
			if len(rows[i].Nonconformant) > 0 {
				f.Nonconformant++
			}
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// holmP is the p-value a row enters Holm's correction with: its own, or
// 1 for a row of too few items (WhyItems), so that it is never rejected
// and eases no other row's threshold.
func holmP(r Row) float64 {
	if slices.Contains(r.CannotRejectWhy, WhyItems) {
		return 1
	}
	return *r.P
}

// markReplicates marks the row when its family cannot be significant with
// the bootstrap's replicates (Family.CannotReject).
func (r *Row) markReplicates(cannot bool) {
	if cannot {
		r.CannotReject = true
		r.CannotRejectWhy = append([]string{WhyReplicates}, r.CannotRejectWhy...)
	}
}

// sortRows orders the table: complete rows by family, method and cell,
// then the incomplete ones by method and cell.
func sortRows(rows []Row) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		ia, ib := a.Status != StatusOK, b.Status != StatusOK
		if ia != ib {
			if ia {
				return 1
			}
			return -1
		}
		if c := strings.Compare(a.Family, b.Family); c != 0 {
			return c
		}
		if c := strings.Compare(a.Method, b.Method); c != 0 {
			return c
		}
		return strings.Compare(a.CellID, b.CellID)
	})
}

// sortedCopy is s sorted, each string once.
func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	slices.Sort(out)
	return slices.Compact(out)
}

func ptr(f float64) *float64 { return &f }
func ptrBool(b bool) *bool   { return &b }
