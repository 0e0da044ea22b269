package items

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/cairn-run/cairn/dsl"
)

// maxDepth bounds the nesting of a canonicalized value, as Go's decoder does.
const maxDepth = 10000

// Canonical rewrites one JSON value in the canonical form ItemKey hashes: no
// insignificant whitespace, object members sorted by key in byte order (the
// last of duplicate keys wins), strings as Go's JSON encoder writes them
// without HTML escaping, numbers exactly as written.
//
// It is the same text as decoding with json.Decoder.UseNumber and encoding
// with SetEscapeHTML(false), without building the value in between.
func Canonical(raw json.RawMessage) ([]byte, error) {
	c := canonicalizer{in: raw, out: make([]byte, 0, len(raw))}
	if err := c.value(0); err != nil {
		return nil, err
	}
	c.space()
	if c.pos < len(c.in) {
		return nil, fmt.Errorf("more than one JSON value (offset %d)", c.pos)
	}
	return c.out, nil
}

// CanonicalMember is Canonical for a dataset's item, which also returns
// the canonical text of the value's member named field when the value is
// an object (nil when it is not one, or has no such member): an item's
// canonical form and its id in one pass. Unlike Canonical, it refuses
// (with an *AmbiguousError) what JSON readers take differently: a key
// given twice in one object, of which Canonical keeps the last, and a
// number a float64 cannot hold.
func CanonicalMember(raw json.RawMessage, field string) (canon, member []byte, err error) {
	c := canonicalizer{field: []byte(field), wantField: true, strict: true}
	return c.member1(raw)
}

// An AmbiguousError is a JSON value that parses but that readers take
// differently (CanonicalMember): Offset is where, in the value's text,
// the key given twice or the number starts.
type AmbiguousError struct {
	Offset int
	Msg    string
}

func (e *AmbiguousError) Error() string { return e.Msg }

// LineCol is the 1-based line and column (in characters) of e's Offset in
// data, the text it was found in.
func (e *AmbiguousError) LineCol(data []byte) (line, col int) {
	return dsl.JSONLineCol(data, min(e.Offset, len(data)))
}

// Ambiguous finds in data, one JSON value that parses, what JSON readers
// take differently (as CanonicalMember refuses it): a key given twice in
// one object, or a number a float64 cannot hold. It is nil when there is
// none, or when data does not parse.
func Ambiguous(data []byte) *AmbiguousError {
	c := canonicalizer{in: data, strict: true}
	var amb *AmbiguousError
	if err := c.value(0); errors.As(err, &amb) {
		return amb
	}
	return nil
}

// CanonicalMembers is CanonicalMember of each of raws, on every core:
// errs[i] is raws[i]'s error.
func CanonicalMembers(raws []json.RawMessage, field string) (canons, members [][]byte, errs []error) {
	canons, members, errs = make([][]byte, len(raws)), make([][]byte, len(raws)), make([]error, len(raws))
	parallelChunks(len(raws), func(lo, hi int) {
		// One canonicalizer a chunk: its stack and scratch space, grown
		// once, serve every item (growing them again for each item was
		// a third of the work).
		c := canonicalizer{field: []byte(field), wantField: true, strict: true}
		for i := lo; i < hi; i++ {
			canons[i], members[i], errs[i] = c.member1(raws[i])
		}
	})
	return canons, members, errs
}

// member1 is CanonicalMember of raw with c's field; c's stack and scratch
// space are kept for the next call.
func (c *canonicalizer) member1(raw json.RawMessage) (canon, member []byte, err error) {
	c.in, c.pos, c.out, c.member = raw, 0, make([]byte, 0, len(raw)), nil
	c.stack = c.stack[:0]
	if err := c.value(0); err != nil {
		return nil, nil, err
	}
	c.space()
	if c.pos < len(c.in) {
		return nil, nil, fmt.Errorf("more than one JSON value (offset %d)", c.pos)
	}
	return c.out, c.member, nil
}

type canonicalizer struct {
	in  []byte
	pos int
	out []byte
	// field names the top-level member whose canonical value goes to
	// member, when wantField.
	field     []byte
	wantField bool
	member    []byte
	// strict refuses keys given twice and numbers a float64 cannot hold
	// (CanonicalMember).
	strict bool
	// stack holds the members of the objects being read, innermost last;
	// scratch is where an object's members are put in order.
	stack   []member
	scratch []byte
}

var errEnd = errors.New("unexpected end of JSON input")

func (c *canonicalizer) space() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicalizer) syntax(what string) error {
	if c.pos >= len(c.in) {
		return errEnd
	}
	return fmt.Errorf("invalid character %q %s (offset %d)", c.in[c.pos], what, c.pos)
}

func (c *canonicalizer) value(depth int) error {
	if depth > maxDepth {
		return errors.New("JSON nested too deeply")
	}
	c.space()
	if c.pos >= len(c.in) {
		return errEnd
	}
	switch ch := c.in[c.pos]; {
	case ch == '{':
		return c.object(depth)
	case ch == '[':
		return c.array(depth)
	case ch == '"':
		_, enc, err := c.str()
		if err != nil {
			return err
		}
		c.out = append(c.out, enc...)
		return nil
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	case ch == '-' || '0' <= ch && ch <= '9':
		return c.number()
	}
	return c.syntax("looking for the beginning of a value")
}

func (c *canonicalizer) literal(word string) error {
	if !bytes.HasPrefix(c.in[c.pos:], []byte(word)) {
		return c.syntax("in literal " + word)
	}
	c.pos += len(word)
	c.out = append(c.out, word...)
	return nil
}

func (c *canonicalizer) number() error {
	start := c.pos
	digits := func() int {
		n := 0
		for c.pos < len(c.in) && '0' <= c.in[c.pos] && c.in[c.pos] <= '9' {
			c.pos++
			n++
		}
		return n
	}
	if c.in[c.pos] == '-' {
		c.pos++
	}
	switch {
	case c.pos < len(c.in) && c.in[c.pos] == '0':
		c.pos++
	case digits() == 0:
		return c.syntax("in numeric literal")
	}
	if c.pos < len(c.in) && c.in[c.pos] == '.' {
		c.pos++
		if digits() == 0 {
			return c.syntax("after decimal point in numeric literal")
		}
	}
	if c.pos < len(c.in) && (c.in[c.pos] == 'e' || c.in[c.pos] == 'E') {
		c.pos++
		if c.pos < len(c.in) && (c.in[c.pos] == '+' || c.in[c.pos] == '-') {
			c.pos++
		}
		if digits() == 0 {
			return c.syntax("in exponent of numeric literal")
		}
	}
	if c.strict && !float64Holds(c.in[start:c.pos]) {
		return &AmbiguousError{Offset: start, Msg: fmt.Sprintf("the number %s is beyond what a float64 holds (magnitudes from 4.9e-324 to 1.8e308, and 0): readers would take it as infinity or 0, or refuse it; write it as a string", c.in[start:c.pos])}
	}
	c.out = append(c.out, c.in[start:c.pos]...)
	return nil
}

// float64Holds says whether the JSON number lit is within float64's range:
// not beyond ±1.8e308, and not a non-zero number nearer 0 than 4.9e-324,
// which ParseFloat rounds to 0.
func float64Holds(lit []byte) bool {
	exp := bytes.IndexAny(lit, "eE")
	if exp < 0 && len(lit) < 300 {
		return true // fewer digits than the range's bounds have
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return false
	}
	if exp < 0 {
		exp = len(lit)
	}
	return f != 0 || !bytes.ContainsAny(lit[:exp], "123456789")
}

// str reads a string: its decoded value's bytes (for sorting keys) and its
// canonical encoding. Strings without escapes or unusual characters are
// their own canonical form; the others go through Go's decoder and encoder.
func (c *canonicalizer) str() (key, enc []byte, err error) {
	start := c.pos
	c.pos++ // the opening quote
	plain := true
	ascii := true // then valid UTF-8, without U+2028 or U+2029
	for {
		for c.pos < len(c.in) && strASCII[c.in[c.pos]] {
			c.pos++
		}
		if c.pos >= len(c.in) {
			return nil, nil, errEnd
		}
		b := c.in[c.pos]
		switch {
		case b == '"':
			c.pos++
			raw := c.in[start:c.pos]
			if plain && (ascii || utf8.Valid(raw) && !bytes.Contains(raw, []byte("\u2028")) && !bytes.Contains(raw, []byte("\u2029"))) {
				return raw[1 : len(raw)-1], raw, nil
			}
			if !utf8.Valid(raw) {
				// Go's decoder would turn each bad byte into U+FFFD, and
				// two items that differ only there into one key.
				bad := start + dsl.InvalidUTF8At(raw)
				return nil, nil, &TextError{fmt.Sprintf("a string holds bytes that are not UTF-8 (offset %d): JSON is UTF-8 text; re-encode the file", bad)}
			}
			if off := dsl.LoneSurrogate(raw); off >= 0 {
				// Go's decoder would make it U+FFFD too.
				return nil, nil, &TextError{fmt.Sprintf("a string holds an escape of half a UTF-16 surrogate pair (\\uD800 to \\uDFFF without its other half; offset %d), which is no character: a JSON reader reads it as U+FFFD, and texts that differ only there would be one. Write the character itself, or both halves of its pair", start+off)}
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, nil, err
			}
			var buf bytes.Buffer
			writeJSONString(&buf, s)
			return []byte(s), buf.Bytes(), nil
		case b == '\\':
			plain = false
			c.pos += 2
		case b < 0x20:
			return nil, nil, c.syntax("in string literal")
		default: // past ASCII
			ascii = false
			c.pos++
		}
	}
}

// A TextError is a JSON string the canonical form refuses for its text:
// bytes that are not UTF-8, or an escape of half a UTF-16 surrogate pair.
// A JSON reader reads either as U+FFFD, and so two values that differ
// only there as one.
type TextError struct{ Msg string }

func (e *TextError) Error() string { return e.Msg }

// strASCII marks the bytes that str takes as they are: ASCII, neither a
// control character, a quote nor a backslash.
var strASCII = func() (t [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

type member struct {
	key []byte // decoded
	enc []byte // canonical "key":value
	val int    // where the value starts in enc
	off int    // where the key starts in the input
}

// Member is one member of a JSON object in canonical form.
type Member struct {
	Key   []byte // the key, decoded
	Enc   []byte // the member as Canonical writes it: "key":value
	Value []byte // the value's canonical text (the tail of Enc)
}

// CanonicalObject parses raw, one JSON object, into its members in the
// order Canonical writes them (sorted by key in byte order, the last of
// duplicate keys kept), each in canonical form: Canonical(raw) is "{", the
// members' Enc joined by ",", then "}". It checks raw as Canonical does; a
// JSON value that is not an object is an error.
func CanonicalObject(raw []byte) ([]Member, error) {
	c := canonicalizer{in: raw, out: make([]byte, 0, len(raw))}
	c.space()
	if c.pos >= len(c.in) {
		return nil, errEnd
	}
	if c.in[c.pos] != '{' {
		if err := c.value(0); err != nil {
			return nil, err
		}
		return nil, errors.New("not an object")
	}
	c.stack = make([]member, 0, 16)
	members, err := c.members(0)
	if err != nil {
		return nil, err
	}
	c.space()
	if c.pos < len(c.in) {
		return nil, fmt.Errorf("more than one JSON value (offset %d)", c.pos)
	}
	out := make([]Member, len(members))
	for i, m := range members {
		out[i] = Member{Key: m.key, Enc: m.enc, Value: m.enc[m.val:]}
	}
	return out, nil
}

func (c *canonicalizer) object(depth int) error {
	mark, base := len(c.out), len(c.stack)
	members, err := c.members(depth)
	if err != nil {
		return err
	}
	// Write the members again in their place, in order.
	c.scratch = append(c.scratch[:0], '{')
	for i, m := range members {
		if i > 0 {
			c.scratch = append(c.scratch, ',')
		}
		c.scratch = append(c.scratch, m.enc...)
	}
	c.scratch = append(c.scratch, '}')
	c.out = append(c.out[:mark], c.scratch...)
	c.stack = c.stack[:base]
	return nil
}

// members reads an object, writing its members to c.out as they come,
// and returns them sorted by key, the last of equal keys kept; each
// member's enc is a slice of c.out. The members are the tail of c.stack,
// which the caller cuts back once done with them.
func (c *canonicalizer) members(depth int) ([]member, error) {
	c.pos++ // {
	base := len(c.stack)
	c.space()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		return nil, nil
	}
	for {
		c.space()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return nil, c.syntax("looking for beginning of object key string")
		}
		off := c.pos
		key, enc, err := c.str()
		if err != nil {
			return nil, err
		}
		c.space()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return nil, c.syntax("after object key")
		}
		c.pos++
		start := len(c.out)
		c.out = append(c.out, enc...)
		c.out = append(c.out, ':')
		if err := c.value(depth + 1); err != nil {
			return nil, err
		}
		c.stack = append(c.stack, member{key: key, enc: c.out[start:len(c.out):len(c.out)], val: len(enc) + 1, off: off})
		if depth == 0 && c.wantField && bytes.Equal(key, c.field) {
			c.member = bytes.Clone(c.out[start+len(enc)+1:])
		}
		c.space()
		if c.pos >= len(c.in) {
			return nil, errEnd
		}
		if c.in[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.in[c.pos] == '}' {
			c.pos++
			break
		}
		return nil, c.syntax("after object key:value pair")
	}
	// Sort by key, keeping the last of equal keys.
	members := c.stack[base:]
	slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	kept := members[:0]
	for i, m := range members {
		if i+1 < len(members) && bytes.Equal(m.key, members[i+1].key) {
			if c.strict {
				// The later of the two: sorting is stable.
				return nil, &AmbiguousError{Offset: members[i+1].off, Msg: fmt.Sprintf("the key %s is given twice in one object: JSON readers disagree on which one counts, so give it once", m.enc[:m.val-1])}
			}
			continue
		}
		kept = append(kept, m)
	}
	c.stack = c.stack[:base+len(kept)]
	return kept, nil
}

func (c *canonicalizer) array(depth int) error {
	c.pos++ // [
	c.out = append(c.out, '[')
	c.space()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return nil
	}
	for {
		if err := c.value(depth + 1); err != nil {
			return err
		}
		c.space()
		if c.pos >= len(c.in) {
			return errEnd
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
			c.out = append(c.out, ',')
		case ']':
			c.pos++
			c.out = append(c.out, ']')
			return nil
		default:
			return c.syntax("after array element")
		}
	}
}
