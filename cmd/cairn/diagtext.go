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
		if what := controlCharacter(files, d); what != "" {
			c := *d
			c.Detail += " " + what
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

// controlCharacter names the control character an "Invalid character"
// error points at, which its snippet shows only as a picture (visible),
// and says what usually puts one there; "" for any other error.
func controlCharacter(files map[string]*hcl.File, d *hcl.Diagnostic) string {
	if d.Summary != "Invalid character" || d.Subject == nil || files[d.Subject.Filename] == nil {
		return ""
	}
	src, at := files[d.Subject.Filename].Bytes, d.Subject.Start.Byte
	if at < 0 || at >= len(src) || src[at] >= 0x20 && src[at] != 0x7f || src[at] == '\t' {
		return ""
	}
	switch src[at] {
	case 0:
		return "It is a NUL byte (U+0000): is this a binary file, or text saved as UTF-16? Pipeline files are UTF-8 text."
	case '\r':
		return "It is a carriage return (U+000D) that no line feed follows: lines ended by a carriage return alone (old Mac line ends) are not read; save the file with LF (or CRLF) line ends."
	}
	return fmt.Sprintf("It is the control character U+%04X, shown as %s above: remove it.", src[at], visible(src[at:at+1]))
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
			fmt.Fprintf(&b, "%4d: %s\n", line.Start.Line, visible(cutEnd(sc.Bytes(), snipBefore+snipHighlight+snipAfter)))
			continue
		}
		fmt.Fprintf(&b, "%4d: %s%s%s%s%s\n", line.Start.Line,
			visible(cutStart(before.SliceBytes(src), snipBefore)), on, visible(cutEnd(hl.SliceBytes(src), snipHighlight)), off,
			visible(cutEnd(after.SliceBytes(src), snipAfter)))
	}
	b.WriteString("\n")
	return b.String()
}

// visible is p with its control characters (a NUL, a lone carriage
// return, an escape) shown as Unicode's pictures of them (␀, ␍, ␛): a
// snippet is written to a terminal, which would act on them. A tab stays.
func visible(p []byte) []byte {
	i := bytes.IndexFunc(p, func(r rune) bool { return r != '\t' && (r < 0x20 || r == 0x7f) })
	if i < 0 {
		return p
	}
	out := append([]byte(nil), p[:i]...)
	for _, c := range p[i:] {
		switch {
		case c == '\t' || c >= 0x20 && c != 0x7f:
			out = append(out, c)
		case c == 0x7f:
			out = utf8.AppendRune(out, '\u2421') // ␡
		default:
			out = utf8.AppendRune(out, 0x2400+rune(c))
		}
	}
	return out
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
