package report

import "strings"

// escapeCell writes a cell's text for a markdown table row: "|" as "\|",
// so that the cell stays in its column, and line breaks and tabs as
// spaces, so that the row stays one line.
var escapeCell = strings.NewReplacer("|", `\|`, "\r\n", " ", "\n", " ", "\r", " ", "\t", " ").Replace

// EscapeCell is a cell's text as a markdown table row holds it.
func EscapeCell(s string) string { return escapeCell(s) }

// UnescapeCell is the text of a cell that Cells read: "\|" is "|".
func UnescapeCell(s string) string { return strings.ReplaceAll(s, `\|`, "|") }

// Cells splits a markdown table row into its cells, trimmed and still
// escaped: an escaped "\|" is part of a cell, not a column's end.
func Cells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteString(`\|`)
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}
