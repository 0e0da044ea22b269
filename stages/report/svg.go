package report

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Plot is a scatter plot of the rows on a plane of two metrics, both
// maximised, with the Pareto front highlighted.
type Plot struct {
	// X and Y name the metrics on the axes: Row field names (throughput,
	// mean@16, ...) or Extra keys.
	X, Y string
	// XLabel and YLabel title the axes; they default to AxisLabel(X) and
	// AxisLabel(Y): the metric and its unit.
	XLabel, YLabel string
	// Title defaults to "Y vs X".
	Title string
	// Width and Height of the plot in pixels (default 760 x 480); notes
	// about rows that are not plotted add lines below.
	Width, Height int
}

// Units are the units of the comparison metrics that have one: throughput in
// output tokens per second, e2e_time in seconds (mean@16 and pass@16 are
// fractions).
var Units = map[string]string{ColThroughput: "tok/s", ColE2ETime: "s"}

// AxisLabel is a metric's name with its unit, as "throughput (tok/s)".
func AxisLabel(metric string) string {
	if u := Units[metric]; u != "" {
		return metric + " (" + u + ")"
	}
	return metric
}

// SVG writes the scatter plot of the rows on the (xLabel, yLabel) plane,
// where the labels name the metrics to plot (see Plot).
func SVG(w io.Writer, rows []Row, front []int, xLabel, yLabel string) error {
	return Plot{X: xLabel, Y: yLabel}.SVG(w, rows, front)
}

// Colours and sizes of the plot.
const (
	frontFill    = "#d62728"
	frontStroke  = "#7f0000"
	frontRadius  = 6.5
	domFill      = "#b0b0b0"
	domStroke    = "#5a5a5a"
	domRadius    = 5.0
	failedColour = "#b00020"
	gridColour   = "#e4e4e4"
	inkColour    = "#222222"
	fontFamily   = "DejaVu Sans, Helvetica, Arial, sans-serif"
	// charWidth approximates the advance of one character at labelSize,
	// for placing labels without a font engine.
	labelSize = 12.0
	charWidth = 7.0
	noteLine  = 18.0
)

type plotted struct {
	row    int
	x, y   float64 // data
	px, py float64 // pixels
	front  bool
}

type box struct{ x0, y0, x1, y1 float64 }

func (a box) overlap(b box) float64 {
	w := math.Min(a.x1, b.x1) - math.Max(a.x0, b.x0)
	h := math.Min(a.y1, b.y1) - math.Max(a.y0, b.y0)
	if w <= 0 || h <= 0 {
		return 0
	}
	return w * h
}

// SVG writes the plot as a standalone SVG 1.1 document: every plotted row is
// a <g id="row-N"> holding a <title>, a circle and its name; front points
// are red, larger and joined in x order; failed rows and rows whose metrics
// are not finite numbers are listed in notes below the plot, each a
// <text id="row-N">.
func (p Plot) SVG(w io.Writer, rows []Row, front []int) error {
	onFront, err := frontSet(rows, front)
	if err != nil {
		return err
	}
	if p.X == "" || p.Y == "" {
		return fmt.Errorf("%w: the plot needs an x and a y metric", ErrUnknownMetric)
	}
	title := cmp.Or(p.Title, cmp.Or(p.YLabel, p.Y)+" vs "+cmp.Or(p.XLabel, p.X))
	width, height := float64(cmp.Or(p.Width, 760)), float64(cmp.Or(p.Height, 480))
	const left, right, top, bottom = 84.0, 28.0, 70.0, 62.0
	if width < left+right+100 || height < top+bottom+100 {
		return fmt.Errorf("report: plot size %gx%g is too small", width, height)
	}
	pts, notes, err := p.sortRows(rows, onFront)
	if err != nil {
		return err
	}
	area := newPlotArea(pts, box{left, top, width - right, height - bottom})
	total := height
	if len(notes) > 0 {
		total += 8 + noteLine*float64(len(notes))
	}
	var b bytes.Buffer
	p.writeHead(&b, rows, front, title, width, total, area.x0)
	writeLegend(&b, area.x1)
	p.writeAxes(&b, area, len(pts) == 0)
	writeFrontLine(&b, pts)
	p.writeVariants(&b, rows, pts, area)
	writeNotes(&b, rows, notes, area.x0, width, height)
	b.WriteString("</svg>\n")
	_, err = w.Write(b.Bytes())
	return err
}

// A note is a line below the plot about a row that is not plotted.
type note struct {
	row  int
	text string
}

// sortRows returns the rows to plot, with their data, and a note for each
// of the others (failed, or a metric missing or not finite). A metric that
// is a number in no row is an error.
func (p Plot) sortRows(rows []Row, onFront map[int]bool) ([]plotted, []note, error) {
	var pts []plotted
	var notes []note
	found := [2]bool{}
	for i, r := range rows {
		if r.Failed {
			notes = append(notes, note{i, fmt.Sprintf("FAILED: %s: %s", r.Name, cmp.Or(r.FailReason, "no reason given"))})
			continue
		}
		x, okx := r.Number(p.X)
		y, oky := r.Number(p.Y)
		found[0] = found[0] || okx
		found[1] = found[1] || oky
		if okx && oky && isFinite(x) && isFinite(y) {
			pts = append(pts, plotted{row: i, x: x, y: y, front: onFront[i]})
			continue
		}
		var why []string
		for _, m := range []struct {
			name string
			v    float64
			ok   bool
		}{{p.X, x, okx}, {p.Y, y, oky}} {
			switch {
			case !m.ok:
				why = append(why, m.name+" missing")
			case !isFinite(m.v):
				why = append(why, m.name+" is "+formatFloat(m.v, -1, false))
			}
		}
		notes = append(notes, note{i, fmt.Sprintf("not plotted: %s: %s", r.Name, strings.Join(why, ", "))})
	}
	for k, name := range []string{p.X, p.Y} {
		if !found[k] && hasLive(rows) {
			return nil, nil, fmt.Errorf("%w: %q is not a number in any row", ErrUnknownMetric, name)
		}
	}
	return pts, notes, nil
}

// plotArea is the box of the plot inside its margins, in pixels, and the
// axes that map the data onto it.
type plotArea struct {
	box
	xa, ya axis
}

// newPlotArea fits the axes to the points and sets their pixels.
func newPlotArea(pts []plotted, b box) plotArea {
	xs := make([]float64, len(pts))
	ys := make([]float64, len(pts))
	for i, pt := range pts {
		xs[i], ys[i] = pt.x, pt.y
	}
	a := plotArea{box: b, xa: newAxis(xs), ya: newAxis(ys)}
	for i := range pts {
		pts[i].px, pts[i].py = a.sx(pts[i].x), a.sy(pts[i].y)
	}
	return a
}

// sx and sy are the pixel of a data value on the x and y axis.
func (a plotArea) sx(v float64) float64 { return a.x0 + (v-a.xa.lo)/(a.xa.hi-a.xa.lo)*(a.x1-a.x0) }
func (a plotArea) sy(v float64) float64 { return a.y1 - (v-a.ya.lo)/(a.ya.hi-a.ya.lo)*(a.y1-a.y0) }

// writeHead writes the document's start: the svg element, its title and
// description (the front's rows), the background and the title line.
func (p Plot) writeHead(b *bytes.Buffer, rows []Row, front []int, title string, width, total, x0 float64) {
	fmt.Fprintf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n")
	fmt.Fprintf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%s\" height=\"%s\" viewBox=\"0 0 %s %s\" font-family=\"%s\" fill=\"%s\">\n",
		num(width), num(total), num(width), num(total), fontFamily, inkColour)
	fmt.Fprintf(b, "<title>%s</title>\n", esc(title))
	var frontNames []string
	for _, i := range front {
		frontNames = append(frontNames, rows[i].Name)
	}
	fmt.Fprintf(b, "<desc>%s</desc>\n", esc(fmt.Sprintf("Pareto front on (%s, %s), both maximised: %s.", p.X, p.Y, strings.Join(frontNames, ", "))))
	fmt.Fprintf(b, "<rect x=\"0\" y=\"0\" width=\"%s\" height=\"%s\" fill=\"#ffffff\"/>\n", num(width), num(total))
	fmt.Fprintf(b, "<text x=\"%s\" y=\"28\" font-size=\"17\" font-weight=\"bold\">%s</text>\n", num(x0), esc(title))
}

// writeLegend writes the legend, top right above the plot area (which
// ends at x1).
func writeLegend(b *bytes.Buffer, x1 float64) {
	legend := []struct {
		label           string
		fill, stroke    string
		r               float64
		line, className string
	}{
		{"Pareto front (non-dominated)", frontFill, frontStroke, frontRadius, frontFill, "legend-front"},
		{"dominated", domFill, domStroke, domRadius, "", "legend-dominated"},
	}
	lx := x1
	for k := len(legend) - 1; k >= 0; k-- {
		lx -= 30 + textWidth(legend[k].label, labelSize)
		if k < len(legend)-1 {
			lx -= 14
		}
	}
	b.WriteString("<g id=\"legend\">\n")
	for _, it := range legend {
		cx, cy := lx+12, 50.0
		fmt.Fprintf(b, "<g class=\"%s\">", it.className)
		if it.line != "" {
			fmt.Fprintf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"%s\" stroke-width=\"1.5\"/>", num(cx-11), num(cy), num(cx+11), num(cy), it.line)
		}
		fmt.Fprintf(b, "<circle cx=\"%s\" cy=\"%s\" r=\"%s\" fill=\"%s\" stroke=\"%s\" stroke-width=\"1.2\"/>", num(cx), num(cy), num(it.r), it.fill, it.stroke)
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" font-size=\"%s\">%s</text></g>\n", num(cx+18), num(cy+4), num(labelSize), esc(it.label))
		lx += 30 + textWidth(it.label, labelSize) + 14
	}
	b.WriteString("</g>\n")
}

// writeAxes writes the grid, the ticks, the frame and the axes' labels
// (and says so in the middle when there is no point to plot).
func (p Plot) writeAxes(b *bytes.Buffer, a plotArea, empty bool) {
	x0, x1, y0, y1 := a.x0, a.x1, a.y0, a.y1
	b.WriteString("<g id=\"axes\" font-size=\"11\">\n")
	for _, t := range a.xa.ticks {
		x := a.sx(t)
		fmt.Fprintf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"%s\"/>", num(x), num(y0), num(x), num(y1), gridColour)
		fmt.Fprintf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"%s\"/>", num(x), num(y1), num(x), num(y1+5), inkColour)
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\">%s</text>\n", num(x), num(y1+19), a.xa.label(t))
	}
	for _, t := range a.ya.ticks {
		y := a.sy(t)
		fmt.Fprintf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"%s\"/>", num(x0), num(y), num(x1), num(y), gridColour)
		fmt.Fprintf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"%s\"/>", num(x0-5), num(y), num(x0), num(y), inkColour)
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" text-anchor=\"end\">%s</text>\n", num(x0-8), num(y+4), a.ya.label(t))
	}
	fmt.Fprintf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"none\" stroke=\"%s\"/>\n", num(x0), num(y0), num(x1-x0), num(y1-y0), inkColour)
	fmt.Fprintf(b, "<text id=\"x-label\" x=\"%s\" y=\"%s\" font-size=\"13\" text-anchor=\"middle\">%s, higher is better →</text>\n",
		num((x0+x1)/2), num(y1+46), esc(cmp.Or(p.XLabel, AxisLabel(p.X))))
	fmt.Fprintf(b, "<text id=\"y-label\" x=\"0\" y=\"0\" font-size=\"13\" text-anchor=\"middle\" transform=\"translate(%s,%s) rotate(-90)\">%s, higher is better →</text>\n",
		num(x0-60), num((y0+y1)/2), esc(cmp.Or(p.YLabel, AxisLabel(p.Y))))
	if empty {
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" font-size=\"13\" text-anchor=\"middle\" fill=\"#666666\">no variant to plot</text>\n", num((x0+x1)/2), num((y0+y1)/2))
	}
	b.WriteString("</g>\n")
}

// writeFrontLine joins the front's points in x order.
func writeFrontLine(b *bytes.Buffer, pts []plotted) {
	var line []plotted
	for _, pt := range pts {
		if pt.front {
			line = append(line, pt)
		}
	}
	slices.SortStableFunc(line, func(a, b plotted) int {
		return cmp.Or(cmp.Compare(a.x, b.x), cmp.Compare(b.y, a.y))
	})
	if len(line) > 1 {
		coords := make([]string, len(line))
		for k, pt := range line {
			coords[k] = num(pt.px) + "," + num(pt.py)
		}
		fmt.Fprintf(b, "<polyline id=\"front-line\" points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" stroke-opacity=\"0.85\"/>\n",
			strings.Join(coords, " "), frontFill)
	}
}

// writeVariants writes the points, dominated first so front points are
// drawn on top, each with its title and its name; the names are placed
// first, to avoid every point and each other.
func (p Plot) writeVariants(b *bytes.Buffer, rows []Row, pts []plotted, a plotArea) {
	order := slices.Clone(pts)
	slices.SortStableFunc(order, func(a, b plotted) int {
		if a.front != b.front {
			if a.front {
				return 1
			}
			return -1
		}
		return 0
	})
	labels := placeLabels(pts, rows, a.box)
	b.WriteString("<g id=\"variants\">\n")
	for _, pt := range order {
		r := rows[pt.row]
		class, fill, stroke, radius, weight, status := "variant dominated", domFill, domStroke, domRadius, "normal", "dominated"
		if pt.front {
			class, fill, stroke, radius, weight, status = "variant front", frontFill, frontStroke, frontRadius, "bold", "Pareto front"
		}
		l := labels[pt.row]
		fmt.Fprintf(b, "<g id=\"row-%d\" class=\"%s\">", pt.row, class)
		fmt.Fprintf(b, "<title>%s</title>", esc(fmt.Sprintf("%s: %s %s, %s %s (%s)", r.Name, p.X, formatFloat(pt.x, -1, false), p.Y, formatFloat(pt.y, -1, false), status)))
		fmt.Fprintf(b, "<circle cx=\"%s\" cy=\"%s\" r=\"%s\" fill=\"%s\" stroke=\"%s\" stroke-width=\"1.2\"/>", num(pt.px), num(pt.py), num(radius), fill, stroke)
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" font-size=\"%s\" font-weight=\"%s\" text-anchor=\"%s\">%s</text></g>\n",
			num(l.x), num(l.y), num(labelSize), weight, l.anchor, esc(r.Name))
	}
	b.WriteString("</g>\n")
}

// writeNotes writes the notes below the plot (which is height high), from
// x0, each cut to the width with all of it in its title.
func writeNotes(b *bytes.Buffer, rows []Row, notes []note, x0, width, height float64) {
	if len(notes) == 0 {
		return
	}
	b.WriteString("<g id=\"notes\" font-size=\"12\">\n")
	for k, n := range notes {
		colour := "#555555"
		class := "variant unplotted"
		if rows[n.row].Failed {
			colour, class = failedColour, "variant failed"
		}
		shown := n.text
		if limit := int((width - x0 - 8) / charWidth); utf8.RuneCountInString(n.text) > limit {
			shown = string([]rune(n.text)[:limit-1]) + "…"
		}
		fmt.Fprintf(b, "<text id=\"row-%d\" class=\"%s\" x=\"%s\" y=\"%s\" fill=\"%s\"><title>%s</title>%s</text>\n",
			n.row, class, num(x0), num(height+4+noteLine*float64(k+1)-4), colour, esc(n.text), esc(shown))
	}
	b.WriteString("</g>\n")
}

type label struct {
	x, y   float64
	anchor string
}

// placeLabels puts each point's name at the first of a few spots around it
// that stays inside the plot and overlaps no point and no label placed
// before; when every spot collides it takes the least overlapping one.
func placeLabels(pts []plotted, rows []Row, area box) map[int]label {
	spots := []struct {
		dx, dy float64
		anchor string
	}{
		{10, 4, "start"}, {-10, 4, "end"}, {0, -11, "middle"}, {0, 20, "middle"},
		{8, -9, "start"}, {8, 17, "start"}, {-8, -9, "end"}, {-8, 17, "end"},
		// A farther ring, for crowded spots.
		{0, -25, "middle"}, {0, 34, "middle"}, {12, -23, "start"}, {12, 31, "start"},
		{-12, -23, "end"}, {-12, 31, "end"},
	}
	var taken []box
	for _, pt := range pts {
		taken = append(taken, box{pt.px - 8, pt.py - 8, pt.px + 8, pt.py + 8})
	}
	// Front points choose first: theirs are the names readers look for.
	order := make([]int, 0, len(pts))
	for k, pt := range pts {
		if pt.front {
			order = append(order, k)
		}
	}
	for k, pt := range pts {
		if !pt.front {
			order = append(order, k)
		}
	}
	out := make(map[int]label, len(pts))
	for _, k := range order {
		pt := pts[k]
		w := textWidth(rows[pt.row].Name, labelSize)
		best, bestScore := label{}, math.Inf(1)
		for _, s := range spots {
			x, y := pt.px+s.dx, pt.py+s.dy
			var bx box
			switch s.anchor {
			case "start":
				bx = box{x, y - 10, x + w, y + 3}
			case "end":
				bx = box{x - w, y - 10, x, y + 3}
			default:
				bx = box{x - w/2, y - 10, x + w/2, y + 3}
			}
			score := 0.0
			for j, t := range taken {
				if j != k { // a point's own marker is not in its label's way
					score += t.overlap(bx)
				}
			}
			inside := bx.overlap(area)
			score += 4 * ((bx.x1-bx.x0)*(bx.y1-bx.y0) - inside)
			if score < bestScore {
				best, bestScore = label{x, y, s.anchor}, score
			}
			if score == 0 {
				taken = append(taken, bx)
				break
			}
		}
		if bestScore > 0 {
			l := best
			var bx box
			switch l.anchor {
			case "start":
				bx = box{l.x, l.y - 10, l.x + w, l.y + 3}
			case "end":
				bx = box{l.x - w, l.y - 10, l.x, l.y + 3}
			default:
				bx = box{l.x - w/2, l.y - 10, l.x + w/2, l.y + 3}
			}
			taken = append(taken, bx)
		}
		out[pt.row] = best
	}
	return out
}

// axis is one axis' range and ticks, at "nice" round values.
type axis struct {
	lo, hi, step float64
	ticks        []float64
	digits       int
}

func newAxis(vs []float64) axis {
	if len(vs) == 0 {
		return newAxisRange(0, 1)
	}
	lo, hi := slices.Min(vs), slices.Max(vs)
	pad := (hi - lo) * 0.08
	if pad == 0 || !isFinite(pad) {
		pad = math.Max(math.Abs(lo)*0.1, 1e-9)
		if lo == 0 {
			pad = 1
		}
	}
	return newAxisRange(lo-pad, hi+pad)
}

func newAxisRange(lo, hi float64) axis {
	step := niceStep((hi - lo) / 5)
	if !isFinite(step) || step <= 0 {
		return axis{lo: lo, hi: hi, step: hi - lo, ticks: []float64{lo, hi}, digits: 3}
	}
	a := axis{step: step, lo: math.Floor(lo/step) * step, hi: math.Ceil(hi/step) * step}
	a.digits = max(0, int(math.Ceil(-math.Log10(step)-1e-9)))
	for k := 0; k <= 100; k++ {
		t := a.lo + float64(k)*step
		if t > a.hi+step*1e-6 {
			break
		}
		if math.Abs(t) < step*1e-6 {
			t = 0
		}
		a.ticks = append(a.ticks, t)
	}
	return a
}

func (a axis) label(t float64) string {
	return strconv.FormatFloat(t, 'f', a.digits, 64)
}

// niceStep rounds raw to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / mag; {
	case f < 1.5:
		return mag
	case f < 3:
		return 2 * mag
	case f < 7:
		return 5 * mag
	}
	return 10 * mag
}

func isFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func textWidth(s string, size float64) float64 {
	return float64(utf8.RuneCountInString(s)) * charWidth * size / labelSize
}

var oneLine = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ")

// num formats a pixel coordinate.
func num(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }

// esc escapes text for XML character data and attribute values; line
// breaks and tabs become spaces, since SVG text is one line.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(oneLine.Replace(s)))
	return b.String()
}
