package dsl

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// The sizes for parsing in pieces (variables, so that tests can make them
// small).
var (
	// splitParseMin is the size from which a pipeline file is parsed in
	// pieces.
	splitParseMin = 16 << 10
	// splitPieceMin is the least a piece holds (whole top-level items, or
	// whole items of one block).
	splitPieceMin = 8 << 10
	// splitBlockMin is the size from which a top-level block (a large
	// locals block, mostly) is itself cut between its items.
	splitBlockMin = 32 << 10
)

// parseConfig parses one pipeline file into p. A large file is cut into
// pieces and the pieces are parsed on every core, each from its own
// position in the file, then joined into one body: the same blocks,
// ranges and navigation as one parse of the whole file, with less work and
// much less memory (the lexer's token buffer grows with what it lexes at
// once). See parseInPieces. A piece with a top-level attribute sends the
// file to one whole parse. The file is settled (see settleBody), a
// piece as soon as it is parsed: its syntax tree is in the cache then, and
// the constants of its locals are evaluated before the next piece's tree
// takes memory.
func parseConfig(p *hclparse.Parser, src []byte, filename string) (*hcl.File, hcl.Diagnostics) {
	return parseConfigCut(p, src, filename, nil)
}

// parseConfigCut is parseConfig with src's cuts found already (scanCuts),
// or nil.
func parseConfigCut(p *hclparse.Parser, src []byte, filename string, cuts *fileCuts) (*hcl.File, hcl.Diagnostics) {
	if f := p.Files()[filename]; f != nil {
		settleFile(f)
		return f, nil
	}
	if len(src) >= splitParseMin {
		if f, diags, ok := parseInPiecesCut(src, filename, cuts); ok {
			p.AddFile(filename, f)
			return f, diags
		}
	}
	f, diags := p.ParseHCL(src, filename)
	settleFile(f)
	return f, diags
}

// A piece is a part of the file parsed on its own: a run of whole
// top-level items, a run of whole items of one large block, or that
// block's shell (the block with its items left out).
type piece struct {
	src   []byte
	start hcl.Pos
	// run: a run of a block's items; locals: of a locals block's.
	run, locals bool
	body        *hclsyntax.Body
	diags       hcl.Diagnostics
}

// parse parses the piece and settles what it holds (see settleBody). A
// piece in the plain subset of the syntax that fastParse reads is parsed
// by it, the rest by hclsyntax; both give the same tree.
func (pc *piece) parse(filename string) {
	if pc.body = fastParse(pc.src, filename, pc.start); pc.body == nil {
		f, diags := hclsyntax.ParseConfig(pc.src, filename, pc.start)
		pc.body, _ = f.Body.(*hclsyntax.Body)
		pc.diags = diags
	}
	switch {
	case pc.body == nil:
	case !pc.run:
		settleBody(pc.body)
	default:
		boundBody(pc.body)
		if pc.locals {
			evalConstants(pc.body)
		}
	}
}

// clean says whether the piece parsed without a diagnostic.
func (pc *piece) clean() bool { return pc.body != nil && len(pc.diags) == 0 }

// A unit is what the joined body takes in one go: one top-level piece, or
// one large block made of its shell and the runs of its items.
type unit struct {
	start hcl.Pos // in the file
	// pieces[first:first+n] are the unit's; a block's first is its shell.
	first, n int
	block    bool
	// For a block, where its shell's tail (from the line holding the
	// closing brace) was in the shell, and how far it is in the file.
	tailAt, shiftBytes, shiftLines int
}

// parseInPieces parses src in pieces, cut where a parse of the whole file
// is between two items of a body: at the end of a line at the top level,
// and, in a top-level block of at least splitBlockMin bytes, at the end of
// a line between two of the block's items. A large block is parsed as its
// shell (its header and closing brace, with nothing between) and runs of
// its items, joined back into one block. The lexer and the parser start
// afresh at each such cut: a piece that parses without a diagnostic gives
// the very items a parse of the whole file gives there, and leaves that
// parse where the next piece starts. From the first top-level item that
// does not parse so cleanly (a syntax error, an argument set twice in one
// block), the rest of the file is parsed in one go: a parse of the whole
// file is in that state there too, so the diagnostics are the same,
// byte for byte, even where an error makes the parser skip ahead or quiet
// later errors; only that rest is parsed twice. ok is false where the
// file is not cut (see pieceCuts) or has a top-level attribute. The file
// returned is settled (see settleBody).
func parseInPieces(src []byte, filename string) (*hcl.File, hcl.Diagnostics, bool) {
	return parseInPiecesCut(src, filename, nil)
}

// parseInPiecesCut is parseInPieces with src's cuts found already, or nil.
func parseInPiecesCut(src []byte, filename string, cuts *fileCuts) (*hcl.File, hcl.Diagnostics, bool) {
	if cuts == nil {
		cuts = scanCuts(src)
	}
	if !cuts.ok {
		return nil, nil, false
	}
	pieces, units := cutPieces(src, cuts.root, cuts.inner, filename)
	if len(pieces) < 2 {
		return nil, nil, false
	}
	parsePieces(pieces, filename)
	return joinPieces(src, filename, pieces, units)
}

// cutPieces cuts src at the top-level cuts roots and the cuts inside
// blocks inner (pieceCuts) into the pieces to parse, and the units they
// make: a top-level piece, or a large block's shell (parsed here) and the
// runs of its items.
func cutPieces(src []byte, roots, inner []int, filename string) ([]*piece, []unit) {
	// Positions of cut offsets, taken in increasing order.
	line, lineAt := 1, 0
	posAt := func(off int) hcl.Pos {
		line += bytes.Count(src[lineAt:off], []byte{'\n'})
		lineAt = off
		return hcl.Pos{Line: line, Column: 1, Byte: off}
	}
	var pieces []*piece
	var units []unit
	topAt := hcl.InitialPos // where the top-level piece being gathered starts
	closeTop := func(end int) {
		if end > topAt.Byte {
			units = append(units, unit{start: topAt, first: len(pieces), n: 1})
			pieces = append(pieces, &piece{src: src[topAt.Byte:end], start: topAt})
		}
	}
	regionAt := 0 // the start of the top-level line being looked at
	for _, e := range append(roots, len(src)) {
		if e <= regionAt {
			continue
		}
		// The inner cuts within this region (the top-level lines up to
		// e): the ones of inner up to e, past regionAt (inner is sorted).
		k := 0
		for k < len(inner) && inner[k] <= e {
			k++
		}
		in := inner[:k:k]
		for len(in) > 0 && in[0] <= regionAt {
			in = in[1:]
		}
		inner = inner[k:]
		if e-regionAt >= splitBlockMin && len(in) >= 2 {
			closeTop(regionAt)
			start := posAt(regionAt)
			u := unit{start: start, first: len(pieces), block: true}
			head, tail := in[0], in[len(in)-1]
			// The shell now: its runs are parsed as the block's.
			shell := &piece{src: make([]byte, 0, head-regionAt+e-tail), start: start}
			shell.src = append(append(shell.src, src[regionAt:head]...), src[tail:e]...)
			shell.parse(filename)
			locals := shell.clean() && len(shell.body.Blocks) == 1 && isLocals(shell.body.Blocks[0])
			pieces = append(pieces, shell)
			headEnd := posAt(head)
			runAt := headEnd
			for i, c := range in[1:] {
				if c-runAt.Byte >= splitPieceMin || i == len(in)-2 {
					pieces = append(pieces, &piece{src: src[runAt.Byte:c], start: runAt, run: true, locals: locals})
					runAt = posAt(c)
				}
			}
			u.n = len(pieces) - u.first
			u.tailAt = head
			u.shiftBytes, u.shiftLines = tail-head, runAt.Line-headEnd.Line
			units = append(units, u)
			topAt = posAt(e)
		} else if e-topAt.Byte >= splitPieceMin && e < len(src) {
			closeTop(e)
			topAt = posAt(e)
		}
		regionAt = e
	}
	closeTop(len(src))
	return pieces, units
}

// parsePieces parses the pieces on every core, in order; none after the
// first piece that is not clean, since the rest is parsed again from there.
func parsePieces(pieces []*piece, filename string) {
	var next atomic.Int64
	var bad atomic.Int64
	bad.Store(int64(len(pieces)))
	for i, pc := range pieces {
		if pc.body != nil && !pc.clean() { // a shell
			bad.Store(int64(i))
			break
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(pieces)) || i > bad.Load() {
					return
				}
				pc := pieces[i]
				if pc.body == nil {
					pc.parse(filename)
				}
				if !pc.clean() {
					for b := bad.Load(); i < b && !bad.CompareAndSwap(b, i); b = bad.Load() {
					}
				}
			}
		}()
	}
	wg.Wait()
}

// joinPieces joins the units' parses into one file; from the first unit
// that did not parse cleanly, the rest of the file is parsed in one go.
func joinPieces(src []byte, filename string, pieces []*piece, units []unit) (*hcl.File, hcl.Diagnostics, bool) {
	// The joined file: an empty parse gives a file whose navigation (the
	// "in stage ..." context of diagnostics) points at its body, which
	// then takes every unit's blocks.
	f, diags := hclsyntax.ParseConfig(nil, filename, hcl.InitialPos)
	root, isBody := f.Body.(*hclsyntax.Body)
	if len(diags) > 0 || !isBody {
		return nil, nil, false
	}
	var last *hclsyntax.Body // the body whose end is the file's
	for ui, u := range units {
		var b *hclsyntax.Body
		if u.block {
			b = joinBlock(pieces[u.first:u.first+u.n], u)
		} else if pc := pieces[u.first]; pc.clean() {
			b = pc.body
		}
		rested := b == nil
		if rested {
			// Parse the rest of the file from this unit on, in one go.
			rest := pieces[u.first]
			if u.block {
				rest = restOfBlock(src, pieces[u.first:u.first+u.n], u, filename)
			} else if ui < len(units)-1 {
				rest = &piece{src: src[u.start.Byte:], start: u.start}
				rest.parse(filename)
			}
			if rest.body == nil {
				return nil, nil, false
			}
			b, diags = rest.body, rest.diags
		}
		if len(b.Attributes) > 0 {
			return nil, nil, false
		}
		if ui == 0 {
			root.SrcRange.Start = b.SrcRange.Start
		}
		root.Blocks = append(root.Blocks, b.Blocks...)
		last = b
		if rested {
			break
		}
	}
	root.SrcRange = hcl.Range{Filename: filename, Start: root.SrcRange.Start, End: last.SrcRange.End}
	root.EndRange = last.EndRange
	f.Bytes = src
	return f, diags, true
}

// joinBlock joins a large block's shell and the runs of its items into the
// body a parse of its region of the file gives (with the region's one
// block), or returns nil where they do not make one cleanly.
func joinBlock(pieces []*piece, u unit) *hclsyntax.Body {
	for _, pc := range pieces {
		if !pc.clean() {
			return nil
		}
	}
	shell := pieces[0].body
	blk := shellBlock(pieces[0])
	if blk == nil {
		return nil
	}
	body := blk.Body
	// The shell's ranges past its header are in its tail: move them to
	// where the tail is in the file.
	ok := true
	shift := func(p *hcl.Pos) {
		if p.Byte < u.tailAt {
			ok = false
		}
		p.Byte += u.shiftBytes
		p.Line += u.shiftLines
	}
	for _, r := range []*hcl.Range{&blk.CloseBraceRange, &body.EndRange, &shell.EndRange} {
		shift(&r.Start)
		shift(&r.End)
	}
	shift(&body.SrcRange.End)
	shift(&shell.SrcRange.End)
	if !ok {
		return nil
	}
	n := 0
	for _, pc := range pieces[1:] {
		n += len(pc.body.Attributes)
	}
	attrs := make(hclsyntax.Attributes, n)
	for _, pc := range pieces[1:] {
		for name, a := range pc.body.Attributes {
			if _, dup := attrs[name]; dup {
				return nil // "Attribute redefined", in its place
			}
			attrs[name] = a
		}
		body.Blocks = append(body.Blocks, pc.body.Blocks...)
	}
	body.Attributes = attrs
	return shell
}

// shellBlock returns the one block of a large block's shell, empty as it
// is when the shell parsed cleanly, or nil.
func shellBlock(shell *piece) *hclsyntax.Block {
	if !shell.clean() || len(shell.body.Attributes) > 0 || len(shell.body.Blocks) != 1 {
		return nil
	}
	blk := shell.body.Blocks[0]
	if blk.Body == nil || len(blk.Body.Attributes) > 0 || len(blk.Body.Blocks) > 0 {
		return nil
	}
	return blk
}

// restOfBlock parses the rest of the file in one go from a large block
// that did not join cleanly. Where a run of its items has an error and
// the shell and the runs before it are clean, a parse of the whole file
// is in that run's block, at its start, with nothing amiss yet: the rest
// is parsed from the block's header with the clean runs blanked out
// (spaces, and their newlines, so that every position stays), and those
// runs' items join the block. Otherwise (or where an item of a clean run
// is set again, which a whole parse reports in its place), the rest is
// parsed from the block's header on.
func restOfBlock(src []byte, pieces []*piece, u unit, filename string) *piece {
	whole := &piece{src: src[u.start.Byte:], start: u.start}
	k := 1
	for k < len(pieces) && pieces[k].clean() {
		k++
	}
	if shellBlock(pieces[0]) == nil || k == len(pieces) {
		whole.parse(filename)
		return whole
	}
	from, to := pieces[1].start.Byte-u.start.Byte, pieces[k].start.Byte-u.start.Byte
	rest := &piece{src: bytes.Clone(whole.src), start: u.start}
	for i, c := range rest.src[from:to] {
		if c != '\n' {
			rest.src[from+i] = ' '
		}
	}
	rest.parse(filename)
	var blk *hclsyntax.Block
	if rest.body != nil && len(rest.body.Blocks) > 0 {
		blk = rest.body.Blocks[0]
	}
	if blk == nil || blk.Body == nil || blk.Body.Attributes == nil {
		whole.parse(filename)
		return whole
	}
	blocks := hclsyntax.Blocks{}
	seen := map[string]bool{}
	for _, pc := range pieces[1:k] {
		for name, a := range pc.body.Attributes {
			if _, dup := blk.Body.Attributes[name]; dup || seen[name] {
				whole.parse(filename)
				return whole
			}
			seen[name] = true
			blk.Body.Attributes[name] = a
		}
		blocks = append(blocks, pc.body.Blocks...)
	}
	blk.Body.Blocks = append(blocks, blk.Body.Blocks...)
	return rest
}
