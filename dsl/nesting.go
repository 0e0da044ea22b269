package dsl

import "unicode/utf8"

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
	if !utf8.Valid(src) {
		return nil, nil, false
	}
	_, ok = scanNesting(src, func(i int, inBlock bool) {
		if inBlock {
			inner = append(inner, i+1)
		} else {
			root = append(root, i+1)
		}
	}, nil)
	return root, inner, ok
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
	const (
		root = iota
		brace
		brack
		paren
		quote
		interp // ${ or %{ inside a quoted string
	)
	type level struct {
		open byte
		ops  int
	}
	stack := make([]level, 1, 16)
	depth, most := 0, 0
	templates := 0 // quote and interp levels on the stack
	push := func(open byte) {
		stack = append(stack, level{open: open})
		depth++
		most = max(most, depth)
		if open >= quote {
			templates++
		}
	}
	pop := func() {
		depth -= 1 + stack[len(stack)-1].ops
		if stack[len(stack)-1].open >= quote {
			templates--
		}
		stack = stack[:len(stack)-1]
	}
	// lexable reports whether the lexer may start afresh just past i.
	lexable := func(i int) bool {
		if lexCut == nil || templates > 0 {
			return false
		}
		for j := max(0, i-3); j < i; j++ {
			if src[j] >= 0x80 {
				return false
			}
		}
		return true
	}
	// atCut reports the newline at i, if it is one, where a piece may end.
	atCut := func(i int) {
		if cut == nil || i >= len(src) {
			return
		}
		switch {
		case len(stack) == 1:
			cut(i, false)
		case len(stack) == 2 && stack[1].open == brace:
			cut(i, true)
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		top := &stack[len(stack)-1]
		if top.open == quote {
			switch c {
			case '\\':
				i++ // the escaped byte
			case '"':
				pop()
			case '$', '%':
				if i+2 < len(src) && src[i+1] == c && src[i+2] == '{' {
					i += 2 // $${ and %%{ are literal
				} else if i+1 < len(src) && src[i+1] == '{' {
					i++
					push(interp)
				}
			case '\n':
				return 0, false
			}
			continue
		}
		switch c {
		case '#':
			// A line comment runs through its newline: the lexer makes the
			// newline part of the comment token, so it resets nothing.
			for i < len(src) && src[i] != '\n' {
				i++
			}
			atCut(i)
		case '/':
			if i+1 < len(src) && src[i+1] == '/' {
				for i < len(src) && src[i] != '\n' {
					i++
				}
				atCut(i)
				continue
			}
			if i+1 < len(src) && src[i+1] == '*' {
				return 0, false
			}
			top.ops++
			depth++
		case '{':
			push(brace)
		case '[':
			push(brack)
			if lexable(i) && !lexCut(i+1) {
				return max(most, depth), true
			}
		case '(':
			push(paren)
			if lexable(i) && !lexCut(i+1) {
				return max(most, depth), true
			}
		case '}':
			if len(stack) > 1 {
				if top.open != brace && top.open != interp {
					return 0, false
				}
				pop()
			}
		case ']':
			if len(stack) > 1 {
				if top.open != brack {
					return 0, false
				}
				pop()
			}
		case ')':
			if len(stack) > 1 {
				if top.open != paren {
					return 0, false
				}
				pop()
			}
		case '"':
			push(quote)
		case ',':
			depth -= top.ops
			top.ops = 0
			if lexable(i) && !lexCut(i+1) {
				return most, true
			}
		case '\n':
			if top.open == root || top.open == brace {
				depth -= top.ops
				top.ops = 0
			}
			atCut(i)
			if lexable(i) && !lexCut(i+1) {
				return most, true
			}
		case '<':
			if i+1 < len(src) && src[i+1] == '<' {
				return 0, false // a heredoc
			}
			top.ops++
			depth++
		case '$':
			return 0, false
		case '+', '-', '*', '%', '&', '|', '!', '=', '>', '?':
			top.ops++
			depth++
		}
		most = max(most, depth)
	}
	return most, true
}
