package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// node is a parsed XML element.
type node struct {
	Name     string
	Attr     map[string]string
	Text     string // character data directly inside
	Children []*node
}

func (n *node) all(f func(*node) bool) []*node {
	var out []*node
	var walk func(*node)
	walk = func(m *node) {
		if f(m) {
			out = append(out, m)
		}
		for _, c := range m.Children {
			walk(c)
		}
	}
	walk(n)
	return out
}

func (n *node) text() string {
	s := n.Text
	for _, c := range n.Children {
		s += c.text()
	}
	return s
}

func (n *node) child(name string) *node {
	for _, c := range n.Children {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// parseSVG parses the whole document with encoding/xml (strict mode) and
// checks the root is an SVG 1.1 element in the SVG namespace.
func parseSVG(t *testing.T, data []byte) *node {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	var stack []*node
	var root *node
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "the SVG is well-formed XML")
		switch tk := tok.(type) {
		case xml.StartElement:
			n := &node{Name: tk.Name.Local, Attr: map[string]string{}}
			if tk.Name.Space != "" {
				require.Equal(t, "http://www.w3.org/2000/svg", tk.Name.Space, "element %s", tk.Name.Local)
			}
			for _, a := range tk.Attr {
				n.Attr[a.Name.Local] = a.Value
			}
			if len(stack) == 0 {
				require.Nil(t, root, "one root element")
				root = n
			} else {
				p := stack[len(stack)-1]
				p.Children = append(p.Children, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].Text += string(tk)
			}
		}
	}
	require.NotNil(t, root)
	require.Equal(t, "svg", root.Name)
	assert.Equal(t, "1.1", root.Attr["version"])
	assert.Equal(t, "http://www.w3.org/2000/svg", root.Attr["xmlns"])
	for _, a := range []string{"width", "height"} {
		v, err := strconv.ParseFloat(root.Attr[a], 64)
		require.NoError(t, err, a)
		assert.Positive(t, v, a)
	}
	ids := map[string]bool{}
	for _, n := range root.all(func(n *node) bool { return n.Attr["id"] != "" }) {
		assert.False(t, ids[n.Attr["id"]], "id %q is unique", n.Attr["id"])
		ids[n.Attr["id"]] = true
	}
	return root
}

func byID(root *node, id string) *node {
	found := root.all(func(n *node) bool { return n.Attr["id"] == id })
	if len(found) != 1 {
		return nil
	}
	return found[0]
}

func TestSVGBatch4(t *testing.T) {
	rows := batch4()
	front, err := RowFront(rows, ColThroughput, ColMean16)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, SVG(&b, rows, front, ColThroughput, ColMean16))
	golden(t, "batch4.svg", b.Bytes())
	root := parseSVG(t, b.Bytes())

	onFront := map[int]bool{0: true, 1: true, 3: true}
	fills := map[bool]map[string]bool{true: {}, false: {}}
	for i, r := range rows {
		g := byID(root, "row-"+strconv.Itoa(i))
		require.NotNil(t, g, "an element per row")
		assert.Contains(t, g.text(), r.Name, "labelled with its name")
		c := g.child("circle")
		require.NotNil(t, c)
		fills[onFront[i]][c.Attr["fill"]+"/"+c.Attr["r"]] = true
		if onFront[i] {
			assert.Contains(t, g.Attr["class"], "front")
		} else {
			assert.Contains(t, g.Attr["class"], "dominated")
		}
	}
	require.Len(t, fills[true], 1, "front points share a style")
	require.Len(t, fills[false], 1, "dominated points share a style")
	assert.NotEqual(t, fills[true], fills[false], "front points look different")

	// The front line visits the front points in x order.
	line := byID(root, "front-line")
	require.NotNil(t, line)
	var xs []float64
	for _, pair := range strings.Fields(line.Attr["points"]) {
		x, err := strconv.ParseFloat(strings.Split(pair, ",")[0], 64)
		require.NoError(t, err)
		xs = append(xs, x)
	}
	require.Len(t, xs, 3)
	assert.True(t, xs[0] < xs[1] && xs[1] < xs[2], "x order: %v", xs)
	var frontCX []float64
	for _, i := range []int{3, 1, 0} { // ascending throughput
		cx, err := strconv.ParseFloat(byID(root, "row-"+strconv.Itoa(i)).child("circle").Attr["cx"], 64)
		require.NoError(t, err)
		frontCX = append(frontCX, cx)
	}
	assert.Equal(t, frontCX, xs)

	// Axes with labels and ticks, and a legend.
	// The axes carry units where the metric has one.
	assert.Equal(t, "throughput (tok/s), higher is better →", byID(root, "x-label").text())
	assert.Equal(t, "mean@16, higher is better →", byID(root, "y-label").text())
	axes := byID(root, "axes")
	require.NotNil(t, axes)
	assert.GreaterOrEqual(t, len(axes.all(func(n *node) bool { return n.Name == "text" })), 6, "tick labels")
	legend := byID(root, "legend")
	require.NotNil(t, legend)
	assert.Contains(t, legend.text(), "Pareto front")
	assert.Contains(t, legend.text(), "dominated")
	assert.Nil(t, byID(root, "notes"), "nothing failed, no notes")

	renderPNG(t, b.Bytes(), "batch4")
}

func TestSVGFailedAndUnplotted(t *testing.T) {
	rows := troubled()
	front, err := RowFront(rows, ColThroughput, ColMean16)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, SVG(&b, rows, front, ColThroughput, ColMean16))
	golden(t, "troubled.svg", b.Bytes())
	root := parseSVG(t, b.Bytes())

	for i, r := range rows {
		el := byID(root, "row-"+strconv.Itoa(i))
		require.NotNil(t, el, "row %d has an element", i)
		assert.Contains(t, el.text(), strings.ReplaceAll(r.Name, "\t", " "), "a tab shows as a space")
		switch i {
		case 1, 4:
			assert.Equal(t, "text", el.Name, "a failed row is a note, not a point")
			assert.Contains(t, el.text(), "FAILED: "+r.Name)
			assert.Contains(t, el.Attr["class"], "failed")
			assert.NotContains(t, el.Attr["class"], "front")
		case 2:
			assert.Equal(t, "text", el.Name)
			assert.Contains(t, el.text(), "throughput is NaN")
		default:
			assert.Equal(t, "g", el.Name)
		}
	}
	assert.Contains(t, byID(root, "row-1").text(), "CUDA out of memory | exit 1")
	notes := byID(root, "notes")
	require.NotNil(t, notes)
	assert.Len(t, notes.Children, 3)
}

func TestSVGEdgeCases(t *testing.T) {
	tests := []struct {
		name   string
		rows   []Row
		points int
	}{
		{"empty", nil, 0},
		{"single", []Row{{Name: "only", Throughput: 10, Mean16: 0.5}}, 1},
		{"single at zero", []Row{{Name: "zero"}}, 1},
		{"identical points", []Row{{Name: "twin_a", Throughput: 5, Mean16: 0.4}, {Name: "twin_b", Throughput: 5, Mean16: 0.4}}, 2},
		{"all failed", []Row{{Name: "f1", Failed: true, FailReason: "timeout after 60m"}, {Name: "f2", Failed: true}}, 0},
		{"huge and tiny", []Row{{Name: "a", Throughput: 1e12, Mean16: 1e-9}, {Name: "b", Throughput: 2e12, Mean16: 3e-9}}, 2},
		{"negative", []Row{{Name: "<&>\"'", Throughput: -3, Mean16: -0.5}, {Name: "n2", Throughput: -1, Mean16: -0.7}}, 2},
		{"infinite", []Row{{Name: "inf", Throughput: math.Inf(1), Mean16: 0.5}, {Name: "fin", Throughput: 1, Mean16: 0.4}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			front, err := RowFront(tt.rows, ColThroughput, ColMean16)
			require.NoError(t, err)
			var b bytes.Buffer
			require.NoError(t, SVG(&b, tt.rows, front, ColThroughput, ColMean16))
			root := parseSVG(t, b.Bytes())
			circles := byID(root, "variants").all(func(n *node) bool { return n.Name == "circle" })
			assert.Len(t, circles, tt.points)
			for _, c := range circles {
				for _, a := range []string{"cx", "cy"} {
					v, err := strconv.ParseFloat(c.Attr[a], 64)
					require.NoError(t, err)
					assert.False(t, math.IsNaN(v) || math.IsInf(v, 0), "%s=%v", a, v)
				}
			}
			for i, r := range tt.rows {
				el := byID(root, "row-"+strconv.Itoa(i))
				require.NotNil(t, el)
				assert.Contains(t, el.text(), r.Name)
			}
		})
	}
}

func TestSVGErrors(t *testing.T) {
	rows := batch4()
	err := SVG(io.Discard, rows, nil, "troughput", ColMean16)
	assert.ErrorIs(t, err, ErrUnknownMetric)
	assert.ErrorIs(t, SVG(io.Discard, rows, nil, "", ColMean16), ErrUnknownMetric)
	assert.Error(t, Plot{X: ColThroughput, Y: ColMean16, Width: 50, Height: 50}.SVG(io.Discard, rows, nil))
}

func TestNiceAxis(t *testing.T) {
	tests := []struct {
		vs       []float64
		lo, hi   float64
		ticks    int
		firstLbl string
	}{
		{[]float64{0.2771, 0.4833}, 0.25, 0.5, 6, "0.25"},
		{[]float64{4358.9, 9538.5}, 3000, 10000, 8, "3000"},
		{[]float64{5}, 4.4, 5.6, 7, "4.4"},
		{nil, 0, 1, 6, "0.0"},
	}
	for _, tt := range tests {
		a := newAxis(tt.vs)
		assert.InDelta(t, tt.lo, a.lo, 1e-9, "%v", tt.vs)
		assert.InDelta(t, tt.hi, a.hi, 1e-9, "%v", tt.vs)
		assert.Len(t, a.ticks, tt.ticks, "%v: %v", tt.vs, a.ticks)
		assert.Equal(t, tt.firstLbl, a.label(a.ticks[0]))
		for _, v := range tt.vs {
			assert.True(t, v >= a.lo && v <= a.hi)
		}
	}
}

// renderPNG writes $REPORT_PNG_DIR/<name>.png with rsvg-convert when both
// are there, to look at the plot; the tests do not depend on it.
func renderPNG(t *testing.T, svg []byte, name string) {
	conv, err := exec.LookPath("rsvg-convert")
	if err != nil || os.Getenv("REPORT_PNG_DIR") == "" {
		return
	}
	dir := os.Getenv("REPORT_PNG_DIR")
	cmd := exec.Command(conv, "-o", filepath.Join(dir, name+".png"))
	cmd.Stdin = bytes.NewReader(svg)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "rsvg-convert: %s", out)
}

// Labels of points close together are placed apart when there is room.
func TestSVGLabelsDoNotOverlap(t *testing.T) {
	rows := []Row{
		{Name: "batch_c_id0", Throughput: 5000, Mean16: 0.40},
		{Name: "batch_c_id1", Throughput: 5000, Mean16: 0.40},
		{Name: "batch_c_id2", Throughput: 5050, Mean16: 0.401},
		{Name: "batch_c_id3", Throughput: 4990, Mean16: 0.399},
		{Name: "batch_c_id4", Throughput: 9000, Mean16: 0.2},
	}
	front, err := RowFront(rows, ColThroughput, ColMean16)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, SVG(&b, rows, front, ColThroughput, ColMean16))
	root := parseSVG(t, b.Bytes())
	var boxes []box
	for i, r := range rows {
		txt := byID(root, "row-"+strconv.Itoa(i)).child("text")
		require.NotNil(t, txt)
		x, err := strconv.ParseFloat(txt.Attr["x"], 64)
		require.NoError(t, err)
		y, err := strconv.ParseFloat(txt.Attr["y"], 64)
		require.NoError(t, err)
		w := textWidth(r.Name, labelSize)
		switch txt.Attr["text-anchor"] {
		case "end":
			x -= w
		case "middle":
			x -= w / 2
		}
		boxes = append(boxes, box{x, y - 10, x + w, y + 3})
	}
	for i := range boxes {
		for j := i + 1; j < len(boxes); j++ {
			assert.Zero(t, boxes[i].overlap(boxes[j]), "labels of %s and %s overlap", rows[i].Name, rows[j].Name)
		}
	}
}

func TestSVGLongNoteIsCut(t *testing.T) {
	reason := strings.Repeat("CUDA error: an illegal memory access was encountered. ", 6)
	rows := []Row{{Name: "ok", Throughput: 1, Mean16: 1}, {Name: "long", Failed: true, FailReason: reason}}
	var b bytes.Buffer
	require.NoError(t, SVG(&b, rows, []int{0}, ColThroughput, ColMean16))
	root := parseSVG(t, b.Bytes())
	note := byID(root, "row-1")
	require.NotNil(t, note)
	assert.Contains(t, note.child("title").Text, strings.TrimSpace(reason), "the title keeps all of it")
	shown := note.Text
	assert.True(t, strings.HasSuffix(shown, "…"), "shown: %q", shown)
	assert.LessOrEqual(t, textWidth(shown, labelSize), 760-84.0, "fits the width")
}

func BenchmarkBatch4AllFormats(b *testing.B) {
	rows := batch4()
	front := Front([][2]float64{{9538.5, 0.2771}, {7295.5, 0.3958}, {5918.2, 0.3875}, {4358.9, 0.4833}})
	for b.Loop() {
		for _, write := range []func(io.Writer, []Row, []int) error{Markdown, TSV, JSON} {
			if err := write(io.Discard, rows, front); err != nil {
				b.Fatal(err)
			}
		}
		if err := SVG(io.Discard, rows, front, ColThroughput, ColMean16); err != nil {
			b.Fatal(err)
		}
	}
}
