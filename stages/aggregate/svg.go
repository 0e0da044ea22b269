package aggregate

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-run/cairn/stats"
)

// Forest-plot geometry, in SVG user units.
const (
	plotWidth   = 900
	labelWidth  = 360 // the row labels, left of the plot area
	plotRight   = 40
	rowHeight   = 22
	headHeight  = 28
	topMargin   = 56
	axisHeight  = 56
	pointRadius = 4.5
	legendLine  = 18
	// maxTicks bounds the axis's ticks whatever the values: about six are
	// drawn.
	maxTicks = 64
)

// The colours of a row of the experiment and of a non-conformant one.
const (
	colourRow           = "#1f4e9c"
	colourNonconformant = "#c05600"
)

// SVG writes the forest plot: per complete row its delta_pp as a point and
// its 95% interval as a bar, grouped by family under a heading, a filled
// point and a star where Holm rejects, a dashed line at zero and the axis in
// percentage points; a row with a non-conformant job is drawn in orange,
// its bar dashed and its label marked "(non-conformant)", under a legend
// saying so; incomplete rows are listed at the end with their reason. A
// figure that is not finite is an error, and nothing is written.
func (s *Summary) SVG(w io.Writer) error {
	type group struct {
		name string
		rows []Row
	}
	var groups []group
	var incomplete []Row
	for _, r := range s.Rows {
		if r.Status != StatusOK {
			incomplete = append(incomplete, r)
			continue
		}
		name := r.Family
		if s.Family == FamilyNone {
			name = "no correction (p unadjusted)"
		} else {
			name = s.Family + " family: " + name
		}
		if slices.Contains(r.CannotRejectWhy, WhyReplicates) {
			name += fmt.Sprintf(" (no row can be rejected with %d replicates)", s.Replicates)
		}
		if len(groups) == 0 || groups[len(groups)-1].name != name {
			groups = append(groups, group{name: name})
		}
		g := &groups[len(groups)-1]
		g.rows = append(g.rows, r)
	}

	lo, hi := 0.0, 0.0
	nonconformant := 0
	for _, g := range groups {
		for _, r := range g.rows {
			for _, v := range []*float64{r.CILow, r.CIHigh, r.DeltaPP} {
				if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
					return fmt.Errorf("aggregate: %s %s: its interval is not finite and cannot be plotted", r.Method, r.CellID)
				}
			}
			lo = math.Min(lo, math.Min(*r.CILow, *r.DeltaPP))
			hi = math.Max(hi, math.Max(*r.CIHigh, *r.DeltaPP))
			if len(r.Nonconformant) > 0 {
				nonconformant++
			}
		}
	}
	step := niceStep(hi - lo)
	lo = math.Floor(lo/step) * step
	hi = math.Ceil(hi/step) * step
	if hi-lo < step {
		lo, hi = lo-step, hi+step
	}
	ticks := math.Floor((hi-lo)/step + 0.5)
	if !(ticks >= 1 && ticks <= maxTicks) {
		return fmt.Errorf("aggregate: the plot's axis from %g to %g pp cannot be drawn", lo, hi)
	}
	x0, x1 := float64(labelWidth), float64(plotWidth-plotRight)
	xOf := func(v float64) float64 { return x0 + float64((v-lo)/(hi-lo)*(x1-x0)) }

	top := topMargin
	if nonconformant > 0 {
		top += legendLine
	}
	height := top
	for _, g := range groups {
		height += headHeight + rowHeight*len(g.rows)
	}
	plotBottom := height
	height += axisHeight
	if len(incomplete) > 0 {
		height += headHeight + rowHeight*len(incomplete)
	}
	height += 12

	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", plotWidth, height, plotWidth, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	intervals := "with 95% bootstrap intervals"
	if s.Replicates < stats.MinIntervalReplicates {
		intervals = fmt.Sprintf("with bootstrap intervals that are not 95%% intervals (%d replicates; at least %d needed)", s.Replicates, stats.MinIntervalReplicates)
	}
	p(`<text x="12" y="22" font-size="15" font-weight="bold">deployed − baseline per method and cell, %s</text>`+"\n", esc(intervals))
	scheme := "stratified by seed"
	if s.Resample == stats.ResampleSharedItems {
		scheme = "the same items for every seed"
	}
	p(`<text x="12" y="40" fill="#555">%d replicates, %s; filled and starred: rejected by Holm at α = %s within its family</text>`+"\n", s.Replicates, scheme, f2(s.Alpha))
	if nonconformant > 0 {
		p(`<text x="12" y="58" fill="%s">orange, dashed, “(non-conformant)”: %d row(s) with a job outside the protocol (smoke budget, off-grid cell, ...), included on request</text>`+"\n", colourNonconformant, nonconformant)
	}

	// The grid, the zero line and the axis.
	for k := 0; k <= int(ticks); k++ {
		v := lo + float64(float64(k)*step)
		x := xOf(v)
		p(`<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#e4e4e4"/>`+"\n", f2(x), top, f2(x), plotBottom)
		p(`<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", f2(x), plotBottom+18, tick(v, step))
	}
	p(`<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#333" stroke-dasharray="4 3"/>`+"\n", f2(xOf(0)), top, f2(xOf(0)), plotBottom)
	p(`<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#333"/>`+"\n", f2(x0), plotBottom, f2(x1), plotBottom)
	p(`<text x="%s" y="%d" text-anchor="middle">delta (percentage points)</text>`+"\n", f2((x0+x1)/2), plotBottom+40)

	y := top
	for _, g := range groups {
		p(`<text x="12" y="%d" font-weight="bold">%s</text>`+"\n", y+headHeight-9, esc(g.name))
		y += headHeight
		for _, r := range g.rows {
			cy := float64(y) + rowHeight/2
			rej := r.Reject != nil && *r.Reject
			label, colour, labelAttrs, dash, note := s.rowStyle(r)
			p(`<text x="24" y="%s" dominant-baseline="middle"%s>%s</text>`+"\n", f2(cy), labelAttrs, esc(label))
			p(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`+"\n", f2(xOf(*r.CILow)), f2(cy), f2(xOf(*r.CIHigh)), f2(cy), colour, dash)
			fill := "white"
			if rej {
				fill = colour
			}
			p(`<g><title>%s: %s pp [%s, %s], p = %s, p_holm = %s%s</title><circle cx="%s" cy="%s" r="%s" fill="%s" stroke="%s" stroke-width="1.5"/></g>`+"\n",
				esc(r.Method+" "+r.CellID), num(r.DeltaPP, 'f', 2), num(r.CILow, 'f', 2), num(r.CIHigh, 'f', 2), num(r.P, 'g', 4), num(r.PHolm, 'g', 4), esc(note),
				f2(xOf(*r.DeltaPP)), f2(cy), f2(pointRadius), fill, colour)
			y += rowHeight
		}
	}
	if len(groups) == 0 {
		p(`<text x="%s" y="%d" text-anchor="middle" fill="#555">no complete row</text>`+"\n", f2((x0+x1)/2), top+20)
	}
	if len(incomplete) > 0 {
		y = plotBottom + axisHeight
		p(`<text x="12" y="%d" font-weight="bold">incomplete (not plotted, in no family)</text>`+"\n", y+headHeight-9)
		y += headHeight
		for _, r := range incomplete {
			p(`<text x="24" y="%s" dominant-baseline="middle" fill="#8a1c1c">%s</text>`+"\n", f2(float64(y)+rowHeight/2), esc(r.Method+"  "+r.CellID+": "+r.Reason))
			y += rowHeight
		}
	}
	p("</svg>\n")
	return bw.Flush()
}

// rowStyle is how the plot shows a row: its label (starred when
// rejected, marked when it has too few items or a non-conformant job),
// colour, label attributes, bar dash and the note its tooltip adds.
func (s *Summary) rowStyle(r Row) (label, colour, labelAttrs, dash, note string) {
	label, colour = r.Method+"  "+r.CellID, colourRow
	if r.Reject != nil && *r.Reject {
		label += " *"
	}
	if slices.Contains(r.CannotRejectWhy, WhyItems) {
		label += " (too few items)"
		note += "; cannot be significant: " + TooFewItemsNote(r, s.Resample)
	}
	if r.NoiseTies > 0 {
		note += "; rounding noise: " + noiseNote(r)
	}
	if len(r.Nonconformant) > 0 {
		label += " (non-conformant)"
		colour, dash = colourNonconformant, ` stroke-dasharray="5 3"`
		labelAttrs = ` fill="` + colourNonconformant + `"`
		note += "; non-conformant: " + strings.Join(r.Nonconformant, "; ")
	}
	return label, colour, labelAttrs, dash, note
}

// niceStep is a tick spacing of 1, 2 or 5 times a power of ten giving
// about six ticks over span.
func niceStep(span float64) float64 {
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

func tick(v, step float64) string {
	dec := 0
	if step < 1 {
		dec = int(math.Ceil(-math.Log10(step)))
	}
	if math.Abs(v) < step/1e6 {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func esc(s string) string { return html.EscapeString(s) }
