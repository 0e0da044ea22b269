package items

import (
	"encoding/json"
	"math"

	"github.com/cairn-run/cairn/dsl/jsonwrite"
)

// The per-item results file is written a line per item, the same bytes as
// encoding/json's Marshal writes (HTML-safe escaping included) without its
// reflection: values that need no rewriting, nearly all of them, are
// copied, and a line with any other goes through Marshal itself.
// TestScoresLineMatchesMarshal and FuzzScoresLine hold it to Marshal.

// scoresLine is one line of the per-item results file (Summary.WriteScores).
type scoresLine struct {
	ID      string          `json:"id"`
	Key     string          `json:"key"`
	Score   *float64        `json:"score"`
	Error   string          `json:"error,omitempty"`
	Outputs json.RawMessage `json:"outputs,omitempty"`
	Failed  string          `json:"failed,omitempty"`
	Pending bool            `json:"pending,omitempty"`
}

// appendTo appends the line as Marshal writes it, without the newline.
func (l *scoresLine) appendTo(b []byte) ([]byte, error) {
	start := len(b)
	b = append(b, `{"id":`...)
	b = jsonwrite.String(b, l.ID)
	b = append(b, `,"key":`...)
	b = jsonwrite.String(b, l.Key)
	b = append(b, `,"score":`...)
	ok := true
	switch {
	case l.Score == nil:
		b = append(b, "null"...)
	case math.IsInf(*l.Score, 0) || math.IsNaN(*l.Score):
		ok = false // Marshal refuses it
	default:
		b = jsonwrite.Float(b, *l.Score)
	}
	if ok && l.Error != "" {
		b = append(b, `,"error":`...)
		b = jsonwrite.String(b, l.Error)
	}
	if ok && len(l.Outputs) > 0 {
		if ok = jsonwrite.RawAsIs(l.Outputs); ok {
			b = append(b, `,"outputs":`...)
			b = append(b, l.Outputs...)
		}
	}
	if !ok {
		// A value Marshal rewrites or refuses: Marshal says how.
		m, err := json.Marshal(*l)
		if err != nil {
			return b[:start], err
		}
		return append(b[:start], m...), nil
	}
	if l.Failed != "" {
		b = append(b, `,"failed":`...)
		b = jsonwrite.String(b, l.Failed)
	}
	if l.Pending {
		b = append(b, `,"pending":true`...)
	}
	return append(b, '}'), nil
}
