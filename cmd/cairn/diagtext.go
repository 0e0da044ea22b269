package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// Bounds on a snippet line: the bytes kept before the part a diagnostic
// points at, of that part, and after it. A longer line (a 2 MB argument)
// is cut around the part, the cuts marked with "…".
const (
	snipBefore    = 60
	snipHighlight = 100
	snipAfter     = 60
)

// writeDiags writes diagnostics as hcl's text writer does (summary,
// snippet, the values of the variables involved, detail), with two
// changes: the place reads FILE:LINE:COL, and a long snippet line is cut
// around the column instead of repeated whole.
func writeDiags(w io.Writer, files map[string]*hcl.File, width uint, color bool, diags hcl.Diagnostics) {
	var buf bytes.Buffer
	// Without the sources, hcl's writer puts a fixed line where its
	// snippet goes; this one's snippet replaces it.
	hw := hcl.NewDiagnosticTextWriter(&buf, nil, width, color)
	for _, d := range diags {
		buf.Reset()
		if places := detailPlaces(d.Detail); places != d.Detail {
			c := *d
			c.Detail = places
			d = &c
		}
		_ = hw.WriteDiagnostic(d)
		out := buf.String()
		if s := d.Subject; s != nil {
			marker := fmt.Sprintf("  on %s line %d:\n  (source code not available)\n\n", s.Filename, s.Start.Line)
			if i := strings.Index(out, marker); i >= 0 {
				out = out[:i] + snippet(files[s.Filename], d, color) + out[i+len(marker):]
			}
		}
		_, _ = io.WriteString(w, out)
	}
}

// rangePlace matches a place as hcl writes a range into a message
// ("already set at p.hcl:2,3-6", "p.hcl:2,3-4,1"): cairn writes it
// FILE:LINE:COL, as every other place.
var rangePlace = regexp.MustCompile(`([^\s"'(]+\.[A-Za-z]+):(\d+),(\d+)-\d+(?:,\d+)?\b`)

// detailPlaces is a diagnostic's detail with its places written
// FILE:LINE:COL (rangePlace).
func detailPlaces(detail string) string { return rangePlace.ReplaceAllString(detail, "$1:$2:$3") }

// snippet is the place of d and the lines of file it points at, the part
// it points at underlined when color is on.
func snippet(file *hcl.File, d *hcl.Diagnostic, color bool) string {
	s := d.Subject
	var b strings.Builder
	fmt.Fprintf(&b, "  on %s:%d:%d", s.Filename, s.Start.Line, s.Start.Column)
	if file == nil || file.Bytes == nil {
		b.WriteString(":\n  (source code not available)\n\n")
		return b.String()
	}
	if cs, ok := file.Nav.(interface{ ContextString(int) string }); ok {
		if c := cs.ContextString(s.Start.Byte); c != "" {
			b.WriteString(", in " + c)
		}
	}
	b.WriteString(":\n")
	snip, highlight := *s, *s
	if d.Context != nil {
		snip = hcl.RangeOver(snip, *d.Context)
	}
	// An empty range is shown as one character.
	for _, r := range []*hcl.Range{&snip, &highlight} {
		if r.Empty() {
			r.End.Byte++
			r.End.Column++
		}
	}
	on, off := "", ""
	if color {
		on, off = "\x1b[1;4m", "\x1b[0m"
	}
	src := file.Bytes
	sc := hcl.NewRangeScanner(src, s.Filename, bufio.ScanLines)
	for sc.Scan() {
		line := sc.Range()
		if line.Start.Byte > snip.End.Byte {
			break
		}
		if !line.Overlaps(snip) {
			continue
		}
		before, hl, after := line.PartitionAround(highlight)
		if hl.Empty() {
			fmt.Fprintf(&b, "%4d: %s\n", line.Start.Line, cutEnd(sc.Bytes(), snipBefore+snipHighlight+snipAfter))
			continue
		}
		fmt.Fprintf(&b, "%4d: %s%s%s%s%s\n", line.Start.Line,
			cutStart(before.SliceBytes(src), snipBefore), on, cutEnd(hl.SliceBytes(src), snipHighlight), off,
			cutEnd(after.SliceBytes(src), snipAfter))
	}
	b.WriteString("\n")
	return b.String()
}

// cutEnd is the first n bytes of p or about (whole characters), then "…"
// when it cut.
func cutEnd(p []byte, n int) []byte {
	if len(p) <= n {
		return p
	}
	for n > 0 && !utf8.RuneStart(p[n]) {
		n--
	}
	return append(p[:n:n], "…"...)
}

// cutStart is "…" and the last n bytes of p or about, when p is longer.
func cutStart(p []byte, n int) []byte {
	if len(p) <= n {
		return p
	}
	i := len(p) - n
	for i < len(p) && !utf8.RuneStart(p[i]) {
		i++
	}
	return append([]byte("…"), p[i:]...)
}
