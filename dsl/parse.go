package dsl

import (
	"runtime"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// splitParseMin is the size from which a pipeline file is parsed in
// pieces.
const splitParseMin = 16 << 10

// splitPieceMin is the least a piece holds (whole top-level items).
const splitPieceMin = 8 << 10

// parseConfig parses one pipeline file into p. A large file is cut
// between its top-level items (blocks, mostly) and the pieces are parsed
// on every core, each from its own position in the file, then joined into
// one body: the same blocks, ranges and navigation as one parse of the
// whole file, with less work and much less memory (the lexer's token
// buffer grows with what it lexes at once). A syntax error is reported as
// the piece holding it reports it: each piece starts at a top-level item,
// where a parse of the whole file starts afresh too, so the diagnostics are
// the same, without parsing a large file a second time. A piece with a
// top-level attribute sends the file to one whole parse.
func parseConfig(p *hclparse.Parser, src []byte, filename string) (*hcl.File, hcl.Diagnostics) {
	if f := p.Files()[filename]; f != nil {
		return f, nil
	}
	if len(src) >= splitParseMin {
		if f, diags, ok := parseInPieces(src, filename); ok {
			p.AddFile(filename, f)
			return f, diags
		}
	}
	return p.ParseHCL(src, filename)
}

type piece struct {
	start hcl.Pos
	end   int
	body  *hclsyntax.Body
	diags hcl.Diagnostics
	ok    bool
}

func parseInPieces(src []byte, filename string) (*hcl.File, hcl.Diagnostics, bool) {
	ends, ok := topLevelEnds(src)
	if !ok {
		return nil, nil, false
	}
	// Cut at top-level item ends, every splitPieceMin bytes or so; the
	// last piece runs to the end of the file.
	var pieces []*piece
	pos := hcl.InitialPos
	line, lineAt := 1, 0 // lines counted up to offset lineAt
	for _, e := range ends {
		if e-pos.Byte < splitPieceMin || e >= len(src) {
			continue
		}
		pieces = append(pieces, &piece{start: pos, end: e})
		for _, c := range src[lineAt:e] {
			if c == '\n' {
				line++
			}
		}
		lineAt = e
		pos = hcl.Pos{Line: line, Column: 1, Byte: e}
	}
	pieces = append(pieces, &piece{start: pos, end: len(src)})
	if len(pieces) < 2 {
		return nil, nil, false
	}

	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(pieces) {
					return
				}
				pc := pieces[i]
				f, diags := hclsyntax.ParseConfig(src[pc.start.Byte:pc.end], filename, pc.start)
				body, isBody := f.Body.(*hclsyntax.Body)
				pc.body, pc.diags, pc.ok = body, diags, isBody && len(body.Attributes) == 0
			}
		}()
	}
	wg.Wait()

	// The joined file: an empty parse gives a file whose navigation (the
	// "in stage ..." context of diagnostics) points at its body, which
	// then takes every piece's blocks.
	f, diags := hclsyntax.ParseConfig(nil, filename, hcl.InitialPos)
	root, isBody := f.Body.(*hclsyntax.Body)
	if len(diags) > 0 || !isBody {
		return nil, nil, false
	}
	for _, pc := range pieces {
		if !pc.ok {
			return nil, nil, false
		}
		root.Blocks = append(root.Blocks, pc.body.Blocks...)
		diags = append(diags, pc.diags...)
	}
	last := pieces[len(pieces)-1].body
	root.SrcRange = hcl.Range{Filename: filename, Start: hcl.InitialPos, End: last.SrcRange.End}
	root.EndRange = last.EndRange
	f.Bytes = src
	return f, diags, true
}
