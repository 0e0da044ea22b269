package dsl

import (
	"bytes"
	"slices"
	"sync/atomic"
	"unicode/utf8"
)

// nestingScans counts the byte scans of scanNesting, for the tests that
// check a file is scanned once.
var nestingScans atomic.Int64

// nestingBound is CheckNesting's fast path: one pass over the bytes of src
// that returns a depth at least as large as the one CheckNesting computes
// from the tokens, without lexing. It keeps the same levels (brackets,
// quotes, template sequences) and resets, and counts every operator byte
// as an operator (so "==" counts twice, and so do a "-" in a number or an
// identifier and the "=" of an attribute): the bound can only be higher.
// ok is false for input it does not model (block comments, heredocs, a
// "$" or a newline where they are unusual, unbalanced brackets); the
// caller then lexes.
func nestingBound(src []byte) (bound int, ok bool) {
	return scanNesting(src, nil, nil)
}

// pieceCuts returns where src can be cut into pieces that parse on their
// own: the offsets just past each newline that ends a line (a plain one,
// or the one a line comment ends with) at the top level of the file
// (root), and inside the braces of a top-level block, between its items
// (inner). ok is false where the nesting scan gives up, and where src is
// not UTF-8: the lexer may take a newline into an invalid sequence.
func pieceCuts(src []byte) (root, inner []int, ok bool) {
	c := scanCuts(src)
	return c.root, c.inner, c.ok
}

// fileCuts is what one byte scan of a file finds: pieceCuts' cuts, and
// nestingBound's bound (when ok).
type fileCuts struct {
	root, inner []int
	bound       int
	ok          bool
}

// nestingChecked reports whether the scan shows src nested no deeper
// than MaxNesting, so that CheckNesting has nothing to report.
func (c *fileCuts) nestingChecked() bool {
	return c != nil && c.ok && c.bound <= MaxNesting
}

// scanCuts scans src once for both pieceCuts and nestingBound.
func scanCuts(src []byte) *fileCuts {
	c := &fileCuts{}
	if !utf8.Valid(src) {
		return c
	}
	// A cut is a newline: room for every one, in one slice, the root
	// cuts filled from its start and the inner ones from its end.
	buf := make([]int, bytes.Count(src, []byte{'\n'}))
	roots, inner := 0, 0
	c.bound, c.ok = scanNesting(src, func(i int, inBlock bool) {
		if inBlock {
			inner++
			buf[len(buf)-inner] = i + 1
		} else {
			buf[roots] = i + 1
			roots++
		}
	}, nil)
	if roots > 0 {
		c.root = buf[:roots:roots]
	}
	if inner > 0 {
		c.inner = buf[len(buf)-inner:]
		slices.Reverse(c.inner)
	}
	return c
}

// scanNesting is the byte scan behind nestingBound; cut, when set, is
// called with the offset of every newline that ends a line at the top
// level of the file (inBlock false) or directly inside a top-level brace
// (inBlock true).
//
// lexCut, when set, is called with the offset just past every '[', '(',
// ',' and newline outside strings, templates and comments, where the
// three bytes before are ASCII (an invalid UTF-8 sequence may take the
// bytes after it into one token): the lexer, started there afresh, makes
// the tokens it makes of the whole file from there on. The scan stops,
// with ok true, when lexCut returns false.
func scanNesting(src []byte, cut func(i int, inBlock bool), lexCut func(i int) bool) (bound int, ok bool) {
	nestingScans.Add(1)
	s := nestScan{src: src, cut: cut, lexCut: lexCut, stack: make([]nestLevel, 1, 16)}
	for i := 0; i < len(src); i++ {
		var end scanEnd
		// The bytes that change nothing (most of a file: names, spaces,
		// string contents) are skipped here, in one loop.
		if s.stack[len(s.stack)-1].open == nestQuote {
			for i < len(src) && !quotedStops[src[i]] {
				i++
			}
			if i == len(src) {
				break
			}
			i, end = s.quoted(i)
		} else {
			for i < len(src) && !unquotedStops[src[i]] {
				i++
			}
			if i == len(src) {
				break
			}
			i, end = s.unquoted(i)
		}
		switch end {
		case scanFail:
			return 0, false
		case scanStopDepth:
			return max(s.most, s.depth), true
		case scanStop:
			return s.most, true
		}
	}
	return s.most, true
}

// quotedStops and unquotedStops are the bytes that quoted and unquoted
// act on; they take every other byte and change nothing.
var quotedStops, unquotedStops = stops(quotedStopBytes), stops(unquotedStopBytes)

const (
	quotedStopBytes   = "\\\"$%\n"
	unquotedStopBytes = "#/{[(}])\",\n<$+-*%&|!=>?"
)

func stops(bytes string) (t [256]bool) {
	for i := range len(bytes) {
		t[bytes[i]] = true
	}
	return t
}

// The levels of scanNesting's stack.
const (
	nestRoot = iota
	nestBrace
	nestBrack
	nestParen
	nestQuote
	nestInterp // ${ or %{ inside a quoted string
)

type nestLevel struct {
	open byte
	ops  int
}

// nestScan is scanNesting's state: the stack of open levels, the depth
// now and the most it was, and how many quote and interp levels are open.
type nestScan struct {
	src       []byte
	cut       func(i int, inBlock bool)
	lexCut    func(i int) bool
	stack     []nestLevel
	depth     int
	most      int
	templates int // quote and interp levels on the stack
}

// scanEnd is how a byte of the scan ends it: not (scanOn), as input the
// scan does not model (scanFail), or because lexCut said to stop, with
// the bound the most depth (scanStop) or the larger of it and the depth
// now (scanStopDepth).
type scanEnd int

const (
	scanOn scanEnd = iota
	scanFail
	scanStop
	scanStopDepth
)

func (s *nestScan) push(open byte) {
	s.stack = append(s.stack, nestLevel{open: open})
	s.depth++
	s.most = max(s.most, s.depth)
	if open >= nestQuote {
		s.templates++
	}
}

func (s *nestScan) pop() {
	s.depth -= 1 + s.stack[len(s.stack)-1].ops
	if s.stack[len(s.stack)-1].open >= nestQuote {
		s.templates--
	}
	s.stack = s.stack[:len(s.stack)-1]
}

// lexable reports whether the lexer may start afresh just past i.
func (s *nestScan) lexable(i int) bool {
	if s.lexCut == nil || s.templates > 0 {
		return false
	}
	for j := max(0, i-3); j < i; j++ {
		if s.src[j] >= 0x80 {
			return false
		}
	}
	return true
}

// atCut reports the newline at i, if it is one, where a piece may end.
func (s *nestScan) atCut(i int) {
	if s.cut == nil || i >= len(s.src) {
		return
	}
	switch {
	case len(s.stack) == 1:
		s.cut(i, false)
	case len(s.stack) == 2 && s.stack[1].open == nestBrace:
		s.cut(i, true)
	}
}

// quoted scans the byte at i inside a quoted string; it returns the
// offset of the last byte it took.
func (s *nestScan) quoted(i int) (int, scanEnd) {
	src := s.src
	switch c := src[i]; c {
	case '\\':
		i++ // the escaped byte
	case '"':
		s.pop()
	case '$', '%':
		if i+2 < len(src) && src[i+1] == c && src[i+2] == '{' {
			i += 2 // $${ and %%{ are literal
		} else if i+1 < len(src) && src[i+1] == '{' {
			i++
			s.push(nestInterp)
		}
	case '\n':
		return i, scanFail
	}
	return i, scanOn
}

// unquoted scans the byte at i outside quoted strings (a comment it
// starts, whole); it returns the offset of the last byte it took.
func (s *nestScan) unquoted(i int) (int, scanEnd) {
	src := s.src
	top := &s.stack[len(s.stack)-1]
	switch src[i] {
	case '#':
		// A line comment runs through its newline: the lexer makes the
		// newline part of the comment token, so it resets nothing.
		for i < len(src) && src[i] != '\n' {
			i++
		}
		s.atCut(i)
	case '/':
		if i+1 < len(src) && src[i+1] == '/' {
			for i < len(src) && src[i] != '\n' {
				i++
			}
			s.atCut(i)
			return i, scanOn
		}
		if i+1 < len(src) && src[i+1] == '*' {
			return i, scanFail
		}
		top.ops++
		s.depth++
	case '{':
		s.push(nestBrace)
	case '[':
		s.push(nestBrack)
		if s.lexable(i) && !s.lexCut(i+1) {
			return i, scanStopDepth
		}
	case '(':
		s.push(nestParen)
		if s.lexable(i) && !s.lexCut(i+1) {
			return i, scanStopDepth
		}
	case '}', ']', ')':
		if !s.close(src[i], top.open) {
			return i, scanFail
		}
	case '"':
		s.push(nestQuote)
	case ',':
		s.depth -= top.ops
		top.ops = 0
		if s.lexable(i) && !s.lexCut(i+1) {
			return i, scanStop
		}
	case '\n':
		if top.open == nestRoot || top.open == nestBrace {
			s.depth -= top.ops
			top.ops = 0
		}
		s.atCut(i)
		if s.lexable(i) && !s.lexCut(i+1) {
			return i, scanStop
		}
	case '<':
		if i+1 < len(src) && src[i+1] == '<' {
			return i, scanFail // a heredoc
		}
		top.ops++
		s.depth++
	case '$':
		return i, scanFail
	case '+', '-', '*', '%', '&', '|', '!', '=', '>', '?':
		top.ops++
		s.depth++
	}
	s.most = max(s.most, s.depth)
	return i, scanOn
}

// close pops the level that the closing bracket c ends (top is the level
// open now); a closing bracket at the top level is ignored. It is false
// where c does not close top.
func (s *nestScan) close(c, top byte) bool {
	if len(s.stack) == 1 {
		return true
	}
	switch {
	case c == '}' && top != nestBrace && top != nestInterp,
		c == ']' && top != nestBrack,
		c == ')' && top != nestParen:
		return false
	}
	s.pop()
	return true
}
