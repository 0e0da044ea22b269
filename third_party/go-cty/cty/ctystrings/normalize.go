package ctystrings

import (
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Normalize applies NFC normalization to the given string, returning the
// transformed string.
//
// This function achieves the same effect as wrapping a string in a value
// using [cty.StringVal] and then unwrapping it again using [Value.AsString].
func Normalize(str string) string {
	// [cairn] ASCII text is in NFC already: an attribute name, a path, a
	// key. It is returned as it is without the normalizer's tables, which
	// cost twice as long for such a string. (Names are normalized at each
	// attribute lookup: a plan of a few thousand nodes normalizes close to
	// a million.)
	for i := 0; i < len(str); i++ {
		if str[i] >= utf8.RuneSelf {
			return norm.NFC.String(str)
		}
	}
	return str
}
