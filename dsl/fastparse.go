package dsl

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// fastParse parses src, which starts at start in its file, as the native
// syntax's parser would, for the plain subset of the syntax that generated
// and most hand-written pipeline files keep to, and returns nil for
// anything outside it: the caller then parses src with hclsyntax. Within
// the subset the body returned, once bound (boundBody, which the caller
// applies to either), is the one hclsyntax.ParseConfig gives bound, node
// for node and range for range (TestFastParseMatchesHCL holds it to
// that): its quoted strings are bound already. It is built in one pass
// over the bytes with no token buffer, which is most of the time and
// memory of loading a pipeline of thousands of stages.
//
// The subset: printable ASCII, spaces and newlines (no tab, carriage
// return or comment); top-level items and block items each on lines of
// their own; blocks with identifier or plain quoted labels; and as an
// argument's value a plain quoted string (no escape, no template
// sequence), a decimal integer, true, false, null, a traversal of names
// (stage.x.y), or a tuple of these. Every input that holds an error is
// outside the subset, so the caller's parse reports it.
func fastParse(src []byte, filename string, start hcl.Pos) *hclsyntax.Body {
	if start.Column != 1 {
		return nil
	}
	p := &fastParser{src: src, filename: filename, line: start.Line, base: start.Byte}
	body, _, ok := p.body(true, hcl.Range{})
	if !ok {
		return nil
	}
	return body
}

// fastParser is the state of one fastParse: the offset it is at, and the
// line that offset is on.
type fastParser struct {
	src      []byte
	filename string
	off      int
	// line is the line of off; lineAt the offset that line starts at.
	line, lineAt int
	base         int // the byte offset of src[0] in the file
	nodes        fastNodes
}

// fastNodes hands out the nodes one fastParse makes, from slabs of
// slabLen: one allocation for many nodes of a kind, where a pipeline of
// thousands of stages made one for each. The nodes are the syntax tree's,
// which is kept to the end of the run: a slab kept whole by one of its
// nodes holds little that would have been freed.
type fastNodes struct {
	blocks     slab[blockNode]
	bodies     slab[hclsyntax.Body]
	attrs      slab[hclsyntax.Attribute]
	quoted     slab[quotedNode]
	tuples     slab[tupleNode]
	traversals slab[traversalNode]
}

// slabLen is how many nodes a slab holds: a quoted string's 64 make a
// slab of 16 KiB.
const slabLen = 64

// slab hands out pointers to zeroed values of T, slabLen to an
// allocation.
type slab[T any] struct{ free []T }

func (s *slab[T]) new() *T {
	if len(s.free) == 0 {
		s.free = make([]T, slabLen)
	}
	v := &s.free[0]
	s.free = s.free[1:]
	return v
}

func (p *fastParser) pos(off int) hcl.Pos {
	return hcl.Pos{Line: p.line, Column: off - p.lineAt + 1, Byte: p.base + off}
}

// rng is the range of src[from:to], which holds no newline and is on the
// current line.
func (p *fastParser) rng(from, to int) hcl.Range {
	return hcl.Range{Filename: p.filename, Start: p.pos(from), End: p.pos(to)}
}

// newline is the range of the newline token at off, and moves the parser
// past it.
func (p *fastParser) newline() hcl.Range {
	r := hcl.Range{Filename: p.filename, Start: p.pos(p.off)}
	p.off++
	p.line++
	p.lineAt = p.off
	r.End = p.pos(p.off)
	return r
}

func (p *fastParser) spaces() {
	for p.off < len(p.src) && p.src[p.off] == ' ' {
		p.off++
	}
}

// peek is the byte at the parser's offset after spaces, or 0 at the end
// (and 1 for a NUL byte, which no case of the subset takes).
func (p *fastParser) peek() byte {
	p.spaces()
	if p.off < len(p.src) {
		if c := p.src[p.off]; c != 0 {
			return c
		}
		return 1
	}
	return 0
}

func identStart(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func identByte(c byte) bool {
	return identStart(c) || c == '-' || ('0' <= c && c <= '9')
}

func digit(c byte) bool { return '0' <= c && c <= '9' }

// ident reads an identifier at the offset, which starts with an
// identStart byte.
func (p *fastParser) ident() (string, hcl.Range) {
	from := p.off
	p.off = p.identEnd(from)
	return string(p.src[from:p.off]), p.rng(from, p.off)
}

// identEnd is where the identifier that starts at from ends.
func (p *fastParser) identEnd(from int) int {
	for from < len(p.src) && identByte(p.src[from]) {
		from++
	}
	return from
}

// callOrIndex says whether a function call or an index follows right
// after the name just read, which the subset leaves to hclsyntax.
func (p *fastParser) callOrIndex() bool {
	if p.off >= len(p.src) {
		return false
	}
	c := p.src[p.off]
	return c == '(' || c == ':' || c == '['
}

// quoted reads a plain quoted string at the offset: its content, the
// content's range and the range with the quotes.
func (p *fastParser) quoted() (string, hcl.Range, hcl.Range, bool) {
	from := p.off
	p.off++
	for p.off < len(p.src) {
		switch c := p.src[p.off]; {
		case c == '"':
			p.off++
			s := string(p.src[from+1 : p.off-1])
			return s, p.rng(from+1, p.off-1), p.rng(from, p.off), true
		case c < 0x20 || c > 0x7e || c == '\\' || c == '$' || c == '%':
			return "", hcl.Range{}, hcl.Range{}, false
		}
		p.off++
	}
	return "", hcl.Range{}, hcl.Range{}, false
}

// body parses the items of a body up to its end: the end of src at the
// top level, else a closing brace (which it reads). It returns the body
// and its end token's range. The body's range is taken as hclsyntax takes
// it: from open, the opening brace (at the top level, the range of the
// first token), to the end token.
func (p *fastParser) body(top bool, open hcl.Range) (*hclsyntax.Body, hcl.Range, bool) {
	b := p.nodes.bodies.new()
	b.Attributes, b.Blocks = hclsyntax.Attributes{}, hclsyntax.Blocks{}
	for first := true; ; first = false {
		c := p.peek()
		var tok hcl.Range // the token at the offset
		switch {
		case c == 0 && top:
			tok = p.rng(p.off, p.off)
		case c == '}' && !top:
			tok = p.rng(p.off, p.off+1)
		case c == '\n':
			tok = hcl.Range{Filename: p.filename, Start: p.pos(p.off),
				End: hcl.Pos{Line: p.line + 1, Column: 1, Byte: p.base + p.off + 1}}
		case identStart(c):
			tok = p.rng(p.off, p.identEnd(p.off))
		default:
			return nil, hcl.Range{}, false
		}
		if first && top {
			open = tok
		}
		switch {
		case c == '\n':
			p.newline()
		case identStart(c):
			if !p.item(b) {
				return nil, hcl.Range{}, false
			}
		default: // the end
			p.off += tok.End.Byte - tok.Start.Byte
			b.SrcRange = hcl.RangeBetween(open, tok)
			b.EndRange = hcl.Range{Filename: p.filename, Start: tok.End, End: tok.End}
			return b, tok, true
		}
	}
}

// item parses an argument or a block, with the newline after it, into b.
func (p *fastParser) item(b *hclsyntax.Body) bool {
	name, nameRange := p.ident()
	switch c := p.peek(); {
	case c == '=':
		eq := p.rng(p.off, p.off+1)
		p.off++
		if p.off < len(p.src) && (p.src[p.off] == '=' || p.src[p.off] == '>') {
			return false
		}
		expr, ok := p.expr(false)
		if !ok {
			return false
		}
		if _, dup := b.Attributes[name]; dup {
			return false
		}
		a := p.nodes.attrs.new()
		*a = hclsyntax.Attribute{
			Name:        name,
			Expr:        expr,
			SrcRange:    hcl.RangeBetween(nameRange, expr.Range()),
			NameRange:   nameRange,
			EqualsRange: eq,
		}
		b.Attributes[name] = a
	case c == '"' || c == '{' || identStart(c):
		blk, ok := p.block(name, nameRange)
		if !ok {
			return false
		}
		b.Blocks = append(b.Blocks, blk)
	default:
		return false
	}
	return p.endOfLine()
}

// endOfLine reads the newline that ends an item, or sees the end of src.
func (p *fastParser) endOfLine() bool {
	switch p.peek() {
	case '\n':
		p.newline()
		return true
	case 0:
		return true
	}
	return false
}

// The nodes fastParse makes together are allocated together: a block
// with room for two labels (a stage's kind and name), a quoted string's
// template with its one literal part, a tuple with room for a few
// elements. The tree is the same; loading a pipeline of thousands of
// stages makes a third fewer allocations.
type (
	blockNode struct {
		blk    hclsyntax.Block
		labels [2]string
		ranges [2]hcl.Range
	}
	quotedNode struct {
		tmpl  hclsyntax.TemplateExpr
		lit   hclsyntax.LiteralValueExpr
		parts [1]hclsyntax.Expression
		text  textTemplate
	}
	tupleNode struct {
		t     hclsyntax.TupleConsExpr
		exprs [4]hclsyntax.Expression
	}
	traversalNode struct {
		t     hclsyntax.ScopeTraversalExpr
		steps [2]hcl.Traverser // room for stage.NAME
	}
)

func (p *fastParser) block(typ string, typeRange hcl.Range) (*hclsyntax.Block, bool) {
	bn := p.nodes.blocks.new()
	bn.blk = hclsyntax.Block{Type: typ, TypeRange: typeRange}
	blk := &bn.blk
	label := func(s string, r hcl.Range) {
		if blk.Labels == nil {
			blk.Labels, blk.LabelRanges = bn.labels[:0:len(bn.labels)], bn.ranges[:0:len(bn.ranges)]
		}
		blk.Labels = append(blk.Labels, s)
		blk.LabelRanges = append(blk.LabelRanges, r)
	}
	for {
		switch c := p.peek(); {
		case c == '"':
			s, _, r, ok := p.quoted()
			if !ok {
				return nil, false
			}
			label(s, r)
			continue
		case identStart(c):
			label(p.ident())
			continue
		case c != '{':
			return nil, false
		}
		break
	}
	blk.OpenBraceRange = p.rng(p.off, p.off+1)
	p.off++
	if c := p.peek(); c != '\n' && c != '}' {
		return nil, false
	}
	body, end, ok := p.body(false, blk.OpenBraceRange)
	if !ok {
		return nil, false
	}
	blk.Body, blk.CloseBraceRange = body, end
	return blk, true
}

// expr parses an expression of the subset; inTuple says whether it is an
// element of a tuple, which may be followed by a comma or the closing
// bracket as well as a newline.
func (p *fastParser) expr(inTuple bool) (hclsyntax.Expression, bool) {
	var e hclsyntax.Expression
	switch c := p.peek(); {
	case c == '"':
		s, content, whole, ok := p.quoted()
		if !ok {
			return nil, false
		}
		if s == "" {
			content = hcl.Range{Filename: p.filename, Start: whole.End, End: whole.End} // as hclsyntax has it
		}
		q := p.nodes.quoted.new()
		q.lit = hclsyntax.LiteralValueExpr{Val: cty.StringVal(s), SrcRange: content}
		q.parts[0] = &q.lit
		q.tmpl = hclsyntax.TemplateExpr{Parts: q.parts[:], SrcRange: whole}
		// Bound as boundTemplate binds it, in the same allocation.
		q.text = textTemplate{&q.tmpl, q.lit.Val}
		e = &q.text
	case c == '[':
		t, ok := p.tuple()
		if !ok {
			return nil, false
		}
		e = t
	case digit(c):
		from := p.off
		for p.off < len(p.src) && digit(p.src[p.off]) {
			p.off++
		}
		if p.off < len(p.src) && (identByte(p.src[p.off]) || p.src[p.off] == '.') {
			return nil, false
		}
		v, err := cty.ParseNumberVal(string(p.src[from:p.off]))
		if err != nil {
			return nil, false
		}
		e = &hclsyntax.LiteralValueExpr{Val: v, SrcRange: p.rng(from, p.off)}
	case identStart(c):
		t, ok := p.traversal()
		if !ok {
			return nil, false
		}
		e = t
	default:
		return nil, false
	}
	switch c := p.peek(); {
	case c == '\n' || c == 0:
	case inTuple && (c == ',' || c == ']'):
	default:
		return nil, false
	}
	return e, true
}

// traversal parses true, false, null or a traversal of names.
func (p *fastParser) traversal() (hclsyntax.Expression, bool) {
	name, r := p.ident()
	if p.callOrIndex() {
		return nil, false
	}
	switch name {
	case "true", "false", "null":
		if p.off < len(p.src) && p.src[p.off] == '.' {
			return nil, false
		}
		v := cty.True
		switch name {
		case "false":
			v = cty.False
		case "null":
			v = cty.NullVal(cty.DynamicPseudoType)
		}
		return &hclsyntax.LiteralValueExpr{Val: v, SrcRange: r}, true
	}
	tn := p.nodes.traversals.new()
	tn.steps[0] = hcl.TraverseRoot{Name: name, SrcRange: r}
	tn.t = hclsyntax.ScopeTraversalExpr{Traversal: tn.steps[:1], SrcRange: r}
	t := &tn.t
	for p.off < len(p.src) && p.src[p.off] == '.' {
		dot := p.rng(p.off, p.off+1)
		p.off++
		if p.off >= len(p.src) || !identStart(p.src[p.off]) {
			return nil, false
		}
		attr, ar := p.ident()
		step := hcl.RangeBetween(dot, ar)
		t.Traversal = append(t.Traversal, hcl.TraverseAttr{Name: attr, SrcRange: step})
		t.SrcRange = hcl.RangeBetween(t.SrcRange, step)
		if p.callOrIndex() {
			return nil, false
		}
	}
	return t, true
}

// tuple parses a tuple of expressions of the subset, over lines or not.
func (p *fastParser) tuple() (hclsyntax.Expression, bool) {
	open := p.rng(p.off, p.off+1)
	p.off++
	tn := p.nodes.tuples.new()
	tn.t = hclsyntax.TupleConsExpr{OpenRange: open}
	t := &tn.t
	skip := func() byte {
		for {
			switch c := p.peek(); c {
			case '\n':
				p.newline()
			default:
				return c
			}
		}
	}
	for n := 0; ; n++ {
		c := skip()
		if c == ']' {
			break
		}
		if n == 0 && c == 'f' && p.off+3 <= len(p.src) && string(p.src[p.off:p.off+3]) == "for" &&
			(p.off+3 == len(p.src) || !identByte(p.src[p.off+3])) {
			return nil, false
		}
		e, ok := p.expr(true)
		if !ok {
			return nil, false
		}
		if t.Exprs == nil {
			t.Exprs = tn.exprs[:0:len(tn.exprs)]
		}
		t.Exprs = append(t.Exprs, e)
		switch skip() {
		case ',':
			p.off++
			continue
		case ']':
		default:
			return nil, false
		}
		break
	}
	t.SrcRange = hcl.RangeBetween(open, p.rng(p.off, p.off+1))
	p.off++
	return t, true
}
