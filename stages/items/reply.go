package items

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// A worker answers every item with one line; at hundreds of items in
// flight the lines come in bursts, read one after the other on one
// goroutine, and the next request waits for the line before it.
// json.Unmarshal reads a typical line in 1.4 us here, most of it
// reflection; decodeReply reads the lines workers write in 0.3 us
// (BenchmarkReadReply), and gives every other line to json.Unmarshal.
// TestDecodeReplyIsUnmarshal and FuzzDecodeReply hold it to Unmarshal.

// The bit of each of a response's keys, for telling a key given twice.
const (
	keyID uint8 = 1 << iota
	keyScore
	keyOutputs
	keyCharged
	keyInfraFailure
	keyError
)

var replyKeys = map[string]uint8{"id": keyID, "score": keyScore, "outputs": keyOutputs, "charged": keyCharged, "infra_failure": keyInfraFailure, "error": keyError}

// decodeReply is json.Unmarshal of line into a zero r, for a line that is
// one object of the response's own keys, each spelt as it is and given
// once, with an id and an error that are strings of printable ASCII
// without escapes, a score that is a number or null, a whole charged
// count, a true or false infra_failure, and any JSON value as outputs
// (nested no deeper than Unmarshal reads). It reports false for any
// other line, leaving r unspecified. c is scratch space for checking
// the values, kept between calls.
func decodeReply(line []byte, r *response, c *canonicalizer) bool {
	c.in, c.out, c.stack = line, c.out[:0], c.stack[:0]
	skip := func(i int) int { // past the white space at i
		c.pos = i
		c.space()
		return c.pos
	}
	i := skip(0)
	if i >= len(line) || line[i] != '{' {
		return false
	}
	i = skip(i + 1)
	if i < len(line) && line[i] == '}' {
		return skip(i+1) == len(line)
	}
	var seen uint8
	for {
		key, next, ok := plainString(line, i)
		if !ok {
			return false
		}
		bit := replyKeys[string(key)]
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		i = skip(next)
		if i >= len(line) || line[i] != ':' {
			return false
		}
		i = skip(i + 1)
		if i >= len(line) {
			return false
		}
		if i, ok = replyValue(line, i, bit, r, c); !ok {
			return false
		}
		i = skip(i)
		if i >= len(line) {
			return false
		}
		switch line[i] {
		case ',':
			i = skip(i + 1)
			continue
		case '}':
			return skip(i+1) == len(line)
		}
		return false
	}
}

// replyValue reads the value of the key whose bit is given, starting at
// line[i], into r, and returns where it ends.
func replyValue(line []byte, i int, bit uint8, r *response, c *canonicalizer) (int, bool) {
	if bit == keyID || bit == keyError {
		s, next, ok := plainString(line, i)
		if !ok {
			return 0, false
		}
		if bit == keyID {
			id := string(s)
			r.ID = &id
		} else {
			r.Error = string(s)
		}
		return next, true
	}
	// The canonicalizer checks the value as Unmarshal does, more strictly
	// where they differ (bytes that are not UTF-8, one level less of
	// nesting at least): such a line goes to Unmarshal.
	c.pos = i
	if c.value(3) != nil {
		return 0, false
	}
	v := line[i:c.pos]
	number := v[0] == '-' || '0' <= v[0] && v[0] <= '9'
	switch {
	case bit == keyOutputs:
		r.Outputs = bytes.Clone(v)
	case bit == keyScore && string(v) == "null":
	case bit == keyScore && number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || f == 0 && nonZero(v) {
			return 0, false // out of range (1e400, 1e-400): the slow path says so
		}
		r.Score = &f
	case bit == keyCharged && number:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return 0, false // a fraction, an exponent, out of range
		}
		r.Charged = int(n)
	case bit == keyInfraFailure && string(v) == "true":
		r.InfraFailure = true
	case bit == keyInfraFailure && string(v) == "false":
	default:
		return 0, false // a value of another type: Unmarshal says so
	}
	return c.pos, true
}

// plainString reads the string starting at line[i] when it is printable
// ASCII without escapes: its contents, and where it ends.
func plainString(line []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(line) || line[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(line); j++ {
		switch b := line[j]; {
		case b == '"':
			return line[i+1 : j], j + 1, true
		case b == '\\' || b < 0x20 || b >= 0x7f:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// nonZero reports whether number, a JSON number's text, has a digit
// other than 0 before its exponent: one that reads as 0 is then too near
// 0 for a float64 (1e-400), not 0.
func nonZero(number []byte) bool {
	for _, c := range number {
		if c == 'e' || c == 'E' {
			break
		}
		if '1' <= c && c <= '9' {
			return true
		}
	}
	return false
}

// tinyScore is the error for a reply whose score, read as 0, is a number
// too near 0 for a float64 (1e-400: encoding/json reads it as 0, without
// a word); nil for any other.
func tinyScore(line []byte, score *float64) error {
	if score == nil || *score != 0 {
		return nil
	}
	var raw struct {
		Score json.RawMessage `json:"score"`
	}
	if json.Unmarshal(line, &raw) != nil || !nonZero(raw.Score) {
		return nil
	}
	return fmt.Errorf("score is the number %s, too near 0 for a float64 (it would read as 0)", raw.Score)
}
