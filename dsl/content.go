package dsl

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// schemaIndex is a body schema looked up by name, made once per schema: a
// stage kind's schema has dozens of attributes, and a stage sets a few.
type schemaIndex struct {
	attrs    map[string]bool // attribute name: required
	required int
	labels   map[string]int // block type: its number of labels
}

func indexSchema(s *hcl.BodySchema) *schemaIndex {
	x := &schemaIndex{attrs: make(map[string]bool, len(s.Attributes)), labels: make(map[string]int, len(s.Blocks))}
	for _, a := range s.Attributes {
		x.attrs[a.Name] = a.Required
		if a.Required {
			x.required++
		}
	}
	for _, b := range s.Blocks {
		x.labels[b.Type] = len(b.LabelNames)
	}
	return x
}

// content is body.Content(schema) for a native-syntax body in which
// nothing is wrong: every attribute in the schema, every required one
// set, every block of a type in the schema with the labels it takes. ok is
// false for any other body, and the caller asks the body itself (which
// then reports what is wrong). Content walks the whole schema, and copies
// the body for what it leaves; this walks the body.
//
// body must be a body as parsed, not one that PartialContent left (whose
// attributes already taken are hidden from Content, not from this): a
// block's body in a file's content is the one parsed.
func (x *schemaIndex) content(body hcl.Body) (*hcl.BodyContent, bool) {
	attrs, blocks, ok := x.items(body)
	if !ok {
		return nil, false
	}
	c := &hcl.BodyContent{Attributes: make(hcl.Attributes, len(attrs)), Blocks: blocks, MissingItemRange: body.MissingItemRange()}
	for i := range attrs {
		c.Attributes[attrs[i].Name] = &attrs[i]
	}
	return c, true
}

// items is content's attributes, in one slice (in no order), and blocks,
// for a caller that goes through them once and needs no map of them.
func (x *schemaIndex) items(body hcl.Body) ([]hcl.Attribute, hcl.Blocks, bool) {
	b, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil, nil, false
	}
	required := 0
	for name := range b.Attributes {
		req, ok := x.attrs[name]
		if !ok {
			return nil, nil, false
		}
		if req {
			required++
		}
	}
	if required != x.required {
		return nil, nil, false
	}
	for _, blk := range b.Blocks {
		if n, ok := x.labels[blk.Type]; !ok || n != len(blk.Labels) {
			return nil, nil, false
		}
	}
	// The attributes and blocks, in one allocation each.
	attrs := make([]hcl.Attribute, 0, len(b.Attributes))
	for _, a := range b.Attributes {
		attrs = append(attrs, *a.AsHCLAttribute())
	}
	var out hcl.Blocks
	if len(b.Blocks) > 0 {
		out = make(hcl.Blocks, len(b.Blocks))
		blocks := make([]hcl.Block, len(b.Blocks))
		for i, blk := range b.Blocks {
			blocks[i] = *blk.AsHCLBlock()
			out[i] = &blocks[i]
		}
	}
	return attrs, out, true
}
