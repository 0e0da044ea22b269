package ctystrings

import (
	"math/rand"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// [cairn] Normalize returns ASCII text as it is; everything else goes
// through the normalizer: the same strings as norm.NFC.String either way.
func TestNormalizeASCIIAsBefore(t *testing.T) {
	check := func(s string) {
		t.Helper()
		if got, want := Normalize(s), norm.NFC.String(s); got != want {
			t.Fatalf("Normalize(%q) = %q, want %q", s, got, want)
		}
	}
	// Every ASCII string of up to three bytes.
	check("")
	for a := 0; a < 128; a++ {
		check(string(rune(a)))
		for b := 0; b < 128; b++ {
			check(string([]byte{byte(a), byte(b)}))
			for c := 0; c < 128; c += 7 {
				check(string([]byte{byte(a), byte(b), byte(c)}))
			}
		}
	}
	// Text the normalizer changes, with ASCII before, after and between.
	for _, s := range []string{
		"e\u0301", "cafe\u0301", "e\u0301x", "a\u030a\u0301", "\u212b", "\u1e9b\u0323",
		"out/caf\u0065\u0301.txt", "\u00e9", "\xff", "ab\xffcd", "\u0041\u030a", "x\u0327\u0301y",
	} {
		check(s)
		check("name_" + s)
		check(s + "_name")
	}
	// Random strings of ASCII and of any bytes.
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		b := make([]byte, r.Intn(24))
		for j := range b {
			if i%2 == 0 {
				b[j] = byte(r.Intn(128))
			} else {
				b[j] = byte(r.Intn(256))
			}
		}
		check(string(b))
	}
	if Normalize("e\u0301") != "\u00e9" {
		t.Fatal("a combining accent is not composed")
	}
}
