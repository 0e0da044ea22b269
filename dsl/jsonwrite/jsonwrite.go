// Package jsonwrite appends JSON text byte for byte as encoding/json's
// Marshal writes it, without its reflection: for the encoders cairn writes
// by hand (canonical node keys, requests to evaluation workers, the scores
// file, the run journal), whose bytes are digested or read back.
package jsonwrite

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// String appends s as json.Marshal writes a string. Printable ASCII,
// newlines and tabs (a path, a command line with its quotes and
// redirections) it escapes itself, as json.Marshal does: quotes and
// backslashes with a backslash, <, > and & as \u003c, \u003e and \u0026;
// other control bytes and non-ASCII text go through json.Marshal
// (TestStringMatchesMarshal, FuzzString).
func String(dst []byte, s string) []byte {
	plain := 0
	for plain < len(s) && jsonPlain[s[plain]] {
		plain++
	}
	if plain == len(s) {
		// Nothing to escape (an id, a key, a model name): one copy.
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	for i := plain; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c > 0x7e {
			q, _ := json.Marshal(s)
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '"':
			esc = `\"`
		case '\\':
			esc = `\\`
		case '\n':
			esc = `\n`
		case '\r':
			esc = `\r`
		case '\t':
			esc = `\t`
		case '<':
			esc = `\u003c`
		case '>':
			esc = `\u003e`
		case '&':
			esc = `\u0026`
		default:
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = append(dst, esc...)
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// jsonPlain marks the bytes json.Marshal writes as they are: printable
// ASCII but for quotes, backslashes, <, > and &.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = !strings.ContainsRune(`"\<>&`, rune(c))
	}
	return t
}()

// Float appends f, a finite float64, as json.Marshal writes it: the
// shortest decimal that reads back as f, in exponent form below 1e-6 and
// from 1e21, with a negative exponent's leading zero dropped (e-7, not
// e-07) (TestFloatMatchesMarshal). Marshal refuses NaN and the infinities:
// the caller checks for them.
func Float(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1]
		dst = dst[:n-1]
	}
	return dst
}

// RawAsIs reports whether json.Marshal writes v, a json.RawMessage, as it
// is: v is valid JSON with no whitespace between its tokens (whitespace
// in strings stays), and none of the characters Marshal escapes in a raw
// value (<, >, &, U+2028, U+2029; the first byte of the last two is 0xE2,
// taken as either). Marshal compacts and escapes a raw value, and refuses
// an invalid one; for any v this reports false for, the caller marshals
// (TestRawAsIsMatchesMarshal, FuzzRawAsIs).
func RawAsIs(v []byte) bool {
	inString := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '<', '>', '&', 0xe2:
			return false
		case '\\':
			if inString {
				i++ // the escaped byte: a quote does not end the string
			}
		case '"':
			inString = !inString
		case ' ', '\t', '\r', '\n':
			if !inString {
				return false
			}
		}
	}
	return json.Valid(v)
}
