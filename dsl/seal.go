package dsl

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Seal is a `seal "NAME"` block: files pinned by digest. Before anything
// runs, every pinned file must exist with exactly that digest; the pins of
// every seal enter every node's key.
//
//	seal "protocol" {
//	  sha256 = { "data/train.parquet" = "8fb13a0c..." }   # path -> hex sha256
//	}
type Seal struct {
	Name        string
	Description string
	SHA256      hcl.Expression
	DeclRange   hcl.Range
	NameRange   hcl.Range
}

var sealSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "sha256", Required: true},
	{Name: "description"},
}}

func decodeSeal(b *hcl.Block) (*Seal, hcl.Diagnostics) {
	s := &Seal{Name: b.Labels[0], DeclRange: b.DefRange, NameRange: b.LabelRanges[0]}
	diags := validName(s.Name, "seal", s.NameRange)
	c, d := b.Body.Content(sealSchema)
	diags = append(diags, d...)
	if a := c.Attributes["sha256"]; a != nil {
		s.SHA256 = a.Expr
	}
	if a := c.Attributes["description"]; a != nil {
		diags = append(diags, decodeLiteral(a, &s.Description, "description", stringLiteral)...)
	}
	return s, diags
}

// sha256Hex reports whether s is a sha256 digest in hex, in either case.
// (Not a regexp: `{64}` compiles to a program of 64 steps, at the start of
// every cairn command.)
func sha256Hex(s string) bool {
	_, err := hex.DecodeString(s)
	return len(s) == 64 && err == nil
}

// CheckSeals evaluates every seal and checks each pinned file against its
// digest. It returns the pins of all seals (cleaned path -> lower-case hex
// digest), which enter every node key; a file that is missing or has
// another digest is an error naming the file and both digests. A seal
// whose value is not known yet (validate without variable values) is
// checked by plan and apply.
func (c *Config) CheckSeals(s *Scope) (map[string]string, hcl.Diagnostics) {
	if len(c.Seals) == 0 {
		return nil, nil
	}
	var diags hcl.Diagnostics
	pins := map[string]string{}
	from := map[string]*Seal{}
	for _, seal := range c.Seals {
		if seal.SHA256 == nil {
			continue
		}
		rng := seal.SHA256.Range()
		bad := func(summary, detail string) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()})
		}
		refs, d := References(seal.SHA256)
		d = append(d, c.CheckRefs(refs, RefContext{})...)
		for _, r := range refs {
			if r.Root == "stage" {
				d = append(d, &hcl.Diagnostic{
					Severity: hcl.DiagError, Summary: "Stage reference in a seal",
					Detail:  "Seals are checked before any stage runs, so they cannot refer to stages.",
					Subject: r.Range.Ptr(),
				})
			}
		}
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		v, d := seal.SHA256.Value(s.Context(nil))
		diags = append(diags, d...)
		if d.HasErrors() || !v.IsWhollyKnown() {
			continue
		}
		if v.ContainsMarked() { // the map, or a path or digest in it
			bad("Sensitive value in a seal", fmt.Sprintf("seal %q: pinned paths and digests are printed when they do not match, so they cannot be sensitive.", seal.Name))
			continue
		}
		ty := v.Type()
		if v.IsNull() || !(ty.IsObjectType() || ty.IsMapType()) {
			bad("Invalid seal", fmt.Sprintf("seal %q: sha256 must be a map of file paths to hex sha256 digests, such as { \"data/train.parquet\" = \"8fb1...\" }; got %s.", seal.Name, typeName(v)))
			continue
		}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			path := filepath.Clean(k.AsString())
			if e.IsNull() || !e.Type().Equals(cty.String) || !sha256Hex(e.AsString()) {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid digest in a seal",
					Detail:  fmt.Sprintf("seal %q pins %s to %s: a digest is 64 hex digits (a sha256).", seal.Name, path, shortValue(e)),
					Subject: pinRange(seal.SHA256, path).Ptr()})
				continue
			}
			want := strings.ToLower(e.AsString())
			if old, ok := pins[path]; ok && old != want {
				bad("A file pinned twice", fmt.Sprintf("%s is pinned to %s by seal %q and to %s by seal %q: one of them is wrong.", path, old, from[path].Name, want, seal.Name))
				continue
			}
			pins[path] = want
			from[path] = seal
		}
	}
	// Check the files in path order, so that the errors come in a stable
	// order.
	paths := make([]string, 0, len(pins))
	for p := range pins {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		seal := from[p]
		got, err := fileSHA256(c.root(), p, c.Reads)
		detail := ""
		switch {
		case errors.Is(err, fs.ErrNotExist):
			detail = fmt.Sprintf("seal %q pins %s to sha256 %s, but the file does not exist (in %s). The working tree does not match what was sealed: restore the file; nothing was run.", seal.Name, p, pins[p], c.root())
		case err != nil:
			detail = fmt.Sprintf("seal %q pins %s to sha256 %s, but %s. Nothing was run.", seal.Name, p, pins[p], err)
		case got != pins[p]:
			detail = fmt.Sprintf("seal %q pins %s to sha256 %s, but the file's sha256 is %s. The working tree does not match what was sealed: restore the file (or seal its new digest); nothing was run.", seal.Name, p, pins[p], got)
		default:
			continue
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Sealed file %s does not match", p),
			Detail:   detail,
			Subject:  pinRange(seal.SHA256, p).Ptr(),
		})
	}
	return pins, diags
}

// pinRange is where a seal's sha256 map pins path: the digest of its
// entry, when the map is written out with the path as a constant key;
// else the whole map. An error about one file points at its line, not at
// the map's first.
func pinRange(expr hcl.Expression, path string) hcl.Range {
	if it, ok := ObjectItem(expr, func(k string) bool { return filepath.Clean(k) == path }); ok {
		return it.ValueExpr.Range()
	}
	return expr.Range()
}

func typeName(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	return v.Type().FriendlyName()
}

func shortValue(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	if v.Type().Equals(cty.String) {
		s := v.AsString()
		if len(s) > 80 {
			s = s[:80] + "…"
		}
		return fmt.Sprintf("%q", s)
	}
	return "a " + v.Type().FriendlyName()
}
