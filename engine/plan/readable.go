package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/cairn-run/cairn/engine/store"
)

// readableJSON turns the \u0026, \u003c and \u003e escapes that Go's JSON
// encoder writes for &, < and > back into those characters: the same JSON
// value, as people write it. (A backslash in JSON is always inside a
// string and always starts an escape, so escapes are read pairwise.)
func readableJSON(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			if c, ok := htmlEscapes[string(bytes.ToLower(b[i+2:i+6]))]; ok {
				out = append(out, c)
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}

var htmlEscapes = map[string]byte{"0026": '&', "003c": '<', "003e": '>'}

// RecordText renders a record for people: indented, with &, < and >
// as they are, and file modes in octal ("0644").
func RecordText(r *store.Record) string {
	type plain store.Record
	v := struct {
		*plain
		Modes map[string]string `json:"modes,omitempty"`
	}{plain: (*plain)(r)}
	if len(r.Modes) > 0 {
		v.Modes = make(map[string]string, len(r.Modes))
		for p, m := range r.Modes {
			v.Modes[p] = fmt.Sprintf("%04o", m)
		}
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(readableJSON(b))
}

// showChange renders an attribute's old and new JSON for a plan reason,
// each at most width bytes: values that long are cut around the first
// difference, so that the two never look the same.
func showChange(o, c []byte, width int) (string, string) {
	o, c = readableJSON(o), readableJSON(c)
	if len(o) <= width && len(c) <= width {
		return string(o), string(c)
	}
	// The common prefix and suffix, not overlapping.
	p := 0
	for p < len(o) && p < len(c) && o[p] == c[p] {
		p++
	}
	sfx := 0
	for sfx < len(o)-p && sfx < len(c)-p && o[len(o)-1-sfx] == c[len(c)-1-sfx] {
		sfx++
	}
	const context = 12
	start := max(0, p-context)
	return window(o, start, len(o)-sfx+context, width), window(c, start, len(c)-sfx+context, width)
}

// window returns b[start:end], end capped at len(b) and the span at width,
// on character boundaries, with "..." where something was left out.
func window(b []byte, start, end, width int) string {
	if len(b) <= width {
		return string(b)
	}
	end = min(end, len(b))
	if end-start > width-6 {
		end = start + width - 6
	}
	for start > 0 && !utf8.RuneStart(b[start]) {
		start--
	}
	for end < len(b) && !utf8.RuneStart(b[end]) {
		end--
	}
	s := string(b[start:end])
	if start > 0 {
		s = "..." + s
	}
	if end < len(b) {
		s += "..."
	}
	return s
}
