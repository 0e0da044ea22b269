// Package report renders the comparison of a batch of variants: the table
// (Markdown, TSV, JSON) and the scatter plot (SVG) of two metrics with the
// Pareto-non-dominated variants marked. The pareto stage kind calls it; it
// is pure: rows in, bytes out.
//
// The default table is the seed-000 comparison: name | content_hash |
// mean@16 | pass@16 | throughput | e2e_time, plus a pareto column. A failed
// variant stays in the table, marked "FAILED: reason", and is never on the
// front.
package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Errors returned by the package.
var (
	// ErrUnknownMetric: a column or axis names nothing a row holds.
	ErrUnknownMetric = errors.New("report: unknown metric")
	// ErrBadFront: the front passed in does not fit the rows.
	ErrBadFront = errors.New("report: front does not fit the rows")
)

// Row is one variant of a batch.
type Row struct {
	Name        string
	ContentHash string
	Mean16      float64 // mean@16
	Pass16      float64 // pass@16
	Throughput  float64
	E2ETime     float64 // e2e_time, seconds
	// Failed marks a variant without results: it is listed with FailReason
	// and never compared.
	Failed     bool
	FailReason string
	// Extra holds further values by name (numbers, strings), usable as
	// columns and axes.
	Extra map[string]any
	// Launch, when set, says which batch launch measured the row.
	Launch *Launch
	// Simulated marks the row's figures as a simulated workload's (its
	// result says "simulated": true).
	Simulated bool
}

// The names of a Row's own fields, as used for columns and axes; any other
// name is looked up in Row.Extra.
const (
	ColName        = "name"
	ColContentHash = "content_hash"
	ColMean16      = "mean@16"
	ColPass16      = "pass@16"
	ColThroughput  = "throughput"
	ColE2ETime     = "e2e_time"
)

// Value returns the value of the named field (one of the Col* names, or an
// Extra key) and whether the row has it.
func (r Row) Value(name string) (any, bool) {
	switch name {
	case ColName:
		return r.Name, true
	case ColContentHash:
		return r.ContentHash, true
	case ColMean16:
		return r.Mean16, true
	case ColPass16:
		return r.Pass16, true
	case ColThroughput:
		return r.Throughput, true
	case ColE2ETime:
		return r.E2ETime, true
	}
	v, ok := r.Extra[name]
	return v, ok
}

// Number returns the named field as a float64, when it is a number.
func (r Row) Number(name string) (float64, bool) {
	v, ok := r.Value(name)
	if !ok {
		return 0, false
	}
	return toFloat(v)
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// Front returns, in increasing order, the indices of the Pareto-non-dominated
// points, both coordinates maximised. A point is dominated iff another has
// x >= and y >= with at least one strictly greater, so identical points
// dominate neither and are on the front together or off it together. A point
// with a NaN coordinate is not comparable: it neither dominates nor is on the
// front. Infinities compare as usual.
//
// It runs in O(n log n): a sweep in decreasing x keeps the best y seen at
// strictly greater x.
func Front(points [][2]float64) []int {
	idx := make([]int, 0, len(points))
	for i, p := range points {
		if !math.IsNaN(p[0]) && !math.IsNaN(p[1]) {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(points[b][0], points[a][0]); c != 0 {
			return c // x descending
		}
		return cmp.Compare(points[b][1], points[a][1]) // then y descending
	})
	front := []int{}
	bestY := math.Inf(-1) // best y among points with strictly greater x
	seen := false
	for g := 0; g < len(idx); {
		// The group of points sharing this x; its first has the group's max y.
		x, top := points[idx[g]][0], points[idx[g]][1]
		end := g
		for end < len(idx) && points[idx[end]][0] == x {
			end++
		}
		// Only the group's top points can be non-dominated (the rest have a
		// same-x point above them), and they are iff nothing at greater x
		// reaches their y.
		if !seen || bestY < top {
			for k := g; k < end && points[idx[k]][1] == top; k++ {
				front = append(front, idx[k])
			}
		}
		if !seen || top > bestY {
			bestY = top
		}
		seen = true
		g = end
	}
	slices.Sort(front)
	return front
}

// RowFront returns the indices of the rows on the Pareto front of the (x, y)
// plane, both maximised, among the rows that are not Failed and have both
// metrics as numbers (not NaN). It fails when a metric is not a number in any
// comparable row, which is most likely a misspelt name.
func RowFront(rows []Row, x, y string) ([]int, error) {
	var pts [][2]float64
	var back []int
	found := [2]bool{}
	for i, r := range rows {
		if r.Failed {
			continue
		}
		xv, okx := r.Number(x)
		yv, oky := r.Number(y)
		found[0] = found[0] || okx
		found[1] = found[1] || oky
		if okx && oky {
			pts = append(pts, [2]float64{xv, yv})
			back = append(back, i)
		}
	}
	for k, name := range []string{x, y} {
		if !found[k] && hasLive(rows) {
			return nil, fmt.Errorf("%w: %q is not a number in any row", ErrUnknownMetric, name)
		}
	}
	front := Front(pts)
	for k, i := range front {
		front[k] = back[i]
	}
	return front, nil
}

func hasLive(rows []Row) bool {
	return slices.ContainsFunc(rows, func(r Row) bool { return !r.Failed })
}

// frontSet checks front against rows and returns it as a set.
func frontSet(rows []Row, front []int) (map[int]bool, error) {
	set := make(map[int]bool, len(front))
	for _, i := range front {
		switch {
		case i < 0 || i >= len(rows):
			return nil, fmt.Errorf("%w: index %d out of range (%d rows)", ErrBadFront, i, len(rows))
		case set[i]:
			return nil, fmt.Errorf("%w: index %d listed twice", ErrBadFront, i)
		case rows[i].Failed:
			return nil, fmt.Errorf("%w: row %d (%q) failed but is listed on the front", ErrBadFront, i, rows[i].Name)
		}
		set[i] = true
	}
	return set, nil
}
