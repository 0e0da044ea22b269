package items

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// scoresLineCases are values Marshal escapes, rewrites or refuses, beside
// plain ones.
var (
	scoresStrings = []string{"", "q1", "item 7", `say "hi"`, `back\slash`, "<b>", "a&b", "tab\there", "nl\n", "\x00\x1f", "\x7f",
		"é", "日本", "\u2028\u2029", "\xff\xfe", "€", "ok/ok", "0123456789abcdef"}
	scoresFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1.0 / 3, 123456789, 1e-6, 9.99e-7, 1e-7, 1.5e-300, 5e-324,
		1e20, 1e21, 1.2345e21, math.MaxFloat64, -1e-9, math.NaN(), math.Inf(1), math.Inf(-1)}
	scoresRaws = []string{"", "null", "true", "1", "-0.5e3", `"x"`, `{"answer":"42"}`, `{"answer": "42"}`, "{\n\"a\":1}",
		`{"a":"<tag>"}`, `{"a":"x&y"}`, `{"a":"\u2028"}`, "{\"a\":\"\u2028\"}", `{"a":"€"}`, `[1,2,{"b":[]}]`,
		`{"a":1`, `{"a":}`, `nul`, `"unterminated`, "\"\xff\"", `{"a":"\n"}`}
)

func TestScoresLineMatchesMarshal(t *testing.T) {
	check := func(l scoresLine) {
		t.Helper()
		want, werr := json.Marshal(&l)
		got, gerr := l.appendTo([]byte("kept"))
		if werr != nil {
			require.Error(t, gerr, "%+v", l)
			require.Equal(t, "kept", string(got), "nothing appended on an error")
			return
		}
		require.NoError(t, gerr, "%+v", l)
		require.Equal(t, "kept"+string(want), string(got), "%+v", l)
	}
	for _, s := range scoresStrings {
		check(scoresLine{ID: s, Key: s, Error: s})
		check(scoresLine{ID: s, Key: "k", Failed: s})
		check(scoresLine{ID: "i", Key: s, Pending: true})
	}
	for _, f := range scoresFloats {
		check(scoresLine{ID: "i", Key: "k", Score: &f})
		check(scoresLine{ID: "i", Key: "k", Score: &f, Error: "e", Outputs: json.RawMessage(`{"a":1}`)})
	}
	for _, r := range scoresRaws {
		one := 1.0
		check(scoresLine{ID: "i", Key: "k", Score: &one, Outputs: json.RawMessage(r)})
		check(scoresLine{ID: "<i>", Key: "k", Outputs: json.RawMessage(r), Failed: "f", Pending: true})
	}
}

func FuzzScoresLine(f *testing.F) {
	for i, s := range scoresStrings {
		f.Add(s, scoresFloats[i%len(scoresFloats)], true, scoresRaws[i%len(scoresRaws)], i%3 == 0)
	}
	f.Fuzz(func(t *testing.T, s string, score float64, hasScore bool, raw string, pending bool) {
		l := scoresLine{ID: s, Key: s + "k", Error: s, Outputs: json.RawMessage(raw), Failed: s, Pending: pending}
		if hasScore {
			l.Score = &score
		}
		want, werr := json.Marshal(&l)
		got, gerr := l.appendTo(nil)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("Marshal: %v, appendTo: %v", werr, gerr)
		}
		if string(got) != string(want) {
			t.Fatalf("appendTo wrote\n%s\nMarshal\n%s", got, want)
		}
	})
}
