package main

import "testing"

// What `cairn show` takes for a key (8 to 64 lowercase hex digits) and
// for a key prefix too short to use (1 to 7).
func TestLowerHex(t *testing.T) {
	for _, c := range []struct {
		s        string
		min, max int
		want     bool
	}{
		{"3fa9c1d2", 8, 64, true},
		{"3fa9c1", 8, 64, false},
		{"3FA9C1D2", 8, 64, false},
		{"3fa9c1dz", 8, 64, false},
		{"3fa9c1", 1, 7, true},
		{"3fa9c1d2", 1, 7, false},
		{"", 1, 7, false},
		{"stage.a", 1, 7, false},
	} {
		if got := lowerHex(c.s, c.min, c.max); got != c.want {
			t.Errorf("lowerHex(%q, %d, %d) = %v, want %v", c.s, c.min, c.max, got, c.want)
		}
	}
	long := ""
	for len(long) < 65 {
		long += "a"
	}
	if lowerHex(long, 8, 64) || !lowerHex(long[:64], 8, 64) {
		t.Error("a key is at most 64 digits")
	}
}
