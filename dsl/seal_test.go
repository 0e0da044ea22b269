package dsl

import (
	"strings"
	"testing"
)

// A seal's digest is 64 hex digits, in either case; anything else is not
// one.
func TestSha256Hex(t *testing.T) {
	d := strings.Repeat("8fb13a0c", 8)
	for s, want := range map[string]bool{
		d:                       true,
		strings.ToUpper(d):      true,
		d[:63]:                  false,
		d + "0":                 false,
		"g" + d[1:]:             false,
		"":                      false,
		strings.Repeat("é", 32): false,
		d[:62] + " 0":           false,
	} {
		if got := sha256Hex(s); got != want {
			t.Errorf("sha256Hex(%q) = %v, want %v", s, got, want)
		}
	}
}
