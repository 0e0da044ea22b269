package jsonwrite

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// String writes what json.Marshal writes for every string: the
// printable ASCII it copies itself, and escapes, control bytes, non-ASCII
// and invalid UTF-8 it leaves to json.Marshal.
func TestStringMatchesMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 2))
	alphabet := []string{"a", "Z", "0", " ", "/", "-", "\"", "\\", "<", ">", "&", "\n", "\t", "\r", "\b", "\f", "\x00", "\x1f", "\x7f",
		"é", "\u2028", "\u2029", "\xff", "\xc3", "~", "{", "}"}
	check := func(s string) {
		want, _ := json.Marshal(s)
		if got := String([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("String(%q) = %s, json.Marshal: %s", s, got[1:], want)
		}
	}
	for c := 0; c < 256; c++ {
		check(string([]byte{byte(c)}))
	}
	for range 5000 {
		var sb strings.Builder
		for range r.IntN(12) {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		check(sb.String())
	}
}

// An ASCII string costs no allocation beyond the buffer, escapes and
// all (a command line with a redirection and quotes).
func TestStringAllocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	for _, s := range []string{"out/c42", `echo "c42" > out/c42 && cat <in`, "a\tb\n"} {
		if n := testing.AllocsPerRun(100, func() { String(buf[:0], s) }); n != 0 {
			t.Errorf("String(%q): %v allocations, want 0", s, n)
		}
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "out/c0", "a\"b", "<&>", "\u2028", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := String(nil, s); string(got) != string(want) {
			t.Errorf("String(%q) = %s, json.Marshal: %s", s, got, want)
		}
	})
}

// Float writes what json.Marshal writes for every finite float64: random
// bits, random magnitudes around every power of ten Marshal's format
// turns at, and the edges themselves.
func TestFloatMatchesMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 3))
	check := func(f float64) {
		t.Helper()
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatalf("json.Marshal(%v): %v", f, err)
		}
		if got := Float([]byte("x"), f); string(got) != "x"+string(want) {
			t.Fatalf("Float(%s) = %s, json.Marshal: %s", strconv.FormatFloat(f, 'g', -1, 64), got[1:], want)
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1e-6, 9.99e-7, 1e-7, -1e-9, 1e20, 1e21, 1.2345e21,
		5e-324, math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, 1e-300, 123456789} {
		check(f)
	}
	for range 20000 {
		f := math.Float64frombits(r.Uint64())
		if r.IntN(2) == 0 {
			f = r.NormFloat64() * math.Pow(10, float64(r.IntN(60)-30))
		}
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			check(f)
		}
	}
}

// rawMarshal is what json.Marshal writes for v as a raw message, and
// whether it writes anything.
func rawMarshal(v []byte) (string, bool) {
	b, err := json.Marshal(json.RawMessage(v))
	return string(b), err == nil
}

// Wherever RawAsIs says Marshal writes a raw value as it is, it does:
// over values cut from JSON text with strings holding spaces, escapes and
// the characters Marshal rewrites, whitespace between tokens, and text
// that is not JSON. It says so of compact JSON with spaces in its
// strings, the canonical JSON of a command line.
func TestRawAsIsMatchesMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 4))
	pieces := []string{`{`, `}`, `[`, `]`, `:`, `,`, `"a"`, `"a b"`, `"\""`, `"\\"`, `"\u003c"`, `"<"`, `">"`, `"&"`,
		"\"\u2028\"", "\"\u2029\"", "\"\u2027\"", `1`, `-0.5e3`, `true`, `null`, ` `, "\n", "\t", `"x\"y z"`, `"`, `\`, "\"\xe2\"", `é`}
	saidAsIs := 0
	check := func(v []byte) {
		t.Helper()
		want, ok := rawMarshal(v)
		if RawAsIs(v) {
			saidAsIs++
			if !ok || want != string(v) {
				t.Fatalf("RawAsIs(%q) = true, but json.Marshal writes %q (ok %v)", v, want, ok)
			}
		}
	}
	for _, v := range []string{``, `null`, `{"a":"b c"}`, `["sh","-c","echo l0_1 \u003e out/l0_1"]`, `{"a" :1}`, `[1, 2]`, `"a<b"`, `"a\" b"`} {
		check([]byte(v))
	}
	for range 50000 {
		var sb strings.Builder
		for range 1 + r.IntN(8) {
			sb.WriteString(pieces[r.IntN(len(pieces))])
		}
		check([]byte(sb.String()))
	}
	if saidAsIs < 1000 {
		t.Errorf("RawAsIs said as-is of %d values only: the test no longer checks it", saidAsIs)
	}
	for _, v := range []string{`["sh","-c","echo l0_1 \u003e out/l0_1"]`, `{"a":"b c","d":["e f",1,true,null]}`, `"a\" b"`} {
		if !RawAsIs([]byte(v)) {
			t.Errorf("RawAsIs(%s) = false: Marshal writes it as it is", v)
		}
	}
}

func FuzzRawAsIs(f *testing.F) {
	for _, s := range []string{"", `{"a":"b c"}`, `[1, 2]`, `"a\" b"`, "\"\u2028\"", `"<"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if !RawAsIs(v) {
			return
		}
		if want, ok := rawMarshal(v); !ok || want != string(v) {
			t.Errorf("RawAsIs(%q) = true, but json.Marshal writes %q (ok %v)", v, want, ok)
		}
	})
}
