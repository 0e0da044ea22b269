package dsl

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"golang.org/x/text/unicode/norm"
)

// Pipeline text is read in Unicode's composed form, NFC: HCL and cty
// normalise every string to it (cty.StringVal does). Text written in
// another form (NFD, as macOS names files: "é" as "e" and U+0301) means
// the same text in NFC, which is what is meant, except where it names a
// file whose name on disk is in that other form: the pipeline, and the
// commands given the name, then open another file, or none. cairn cannot
// tell a name from a prompt, so such text is a warning, not an error; a
// declared path that does not exist where its other spelling does says
// so (SpellingHint), and path.root and path.pipeline, which would name
// another folder, are refused (PathSpelling).

// nfcWarning is the warning for a pipeline file whose text (its comments
// aside) is not all NFC, at the first such text; nil when it is.
func nfcWarning(src []byte, filename string) *hcl.Diagnostic {
	if norm.NFC.IsNormal(src) {
		return nil
	}
	toks, _ := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	for _, t := range toks {
		if t.Type == hclsyntax.TokenComment || norm.NFC.IsNormal(t.Bytes) {
			continue
		}
		// Where the text that is not NFC starts in the token: the end of
		// a lexing of what comes before it (positions count characters
		// as the lexer counts them).
		at := norm.NFC.QuickSpan(t.Bytes)
		before, _ := hclsyntax.LexConfig(t.Bytes[:at], filename, t.Range.Start)
		start := before[len(before)-1].Range.Start
		seg := t.Bytes[at:]
		if n := norm.NFC.NextBoundary(seg, true); n > 0 {
			seg = seg[:n]
		}
		end := start
		end.Byte += len(seg)
		end.Column++
		return &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "Text not in Unicode NFC",
			Detail: fmt.Sprintf("The text %s here (first in this file) is in a decomposed Unicode form (NFD, as macOS names files), where %s is its composed form (NFC). cairn reads all pipeline text as NFC, as HCL does: a name written here in NFD names the file whose name is in NFC, and the commands given it open that one. If a file or folder on disk is named in NFD, rename it to NFC (convmv -r -f utf8 -t utf8 --nfc --notest PATH), and save this file in NFC.",
				strconv.QuoteToASCII(string(seg)), strconv.QuoteToASCII(norm.NFC.String(string(seg)))),
			Subject: &hcl.Range{Filename: filename, Start: start, End: end},
		}
	}
	return nil
}

// toNFC is pipeline text src in NFC, where it is UTF-8 (a file that is
// not is refused as it is). HCL makes its strings NFC, but not block
// labels or the names in references: a stage labelled "café" in NFD and
// one in NFC were two stages that print alike, and stage.café written in
// NFD did not name the NFC one. Reading the whole text as NFC makes every
// name the one it reads as.
func toNFC(src []byte) []byte {
	if !utf8.Valid(src) || norm.NFC.IsNormal(src) {
		return src
	}
	return norm.NFC.Bytes(src)
}

// SpellingHint is what to add to a message saying that path p (relative
// to root, or absolute) does not exist, where a file or folder that
// spells its name in another Unicode form does: cairn reads the pipeline
// as NFC, and the name on disk is not. "" when there is none.
func SpellingHint(root, p string) string {
	other := otherSpelling(root, p)
	if other == "" {
		return ""
	}
	return fmt.Sprintf("; %s exists, which is the same name in another Unicode form (NFD, as macOS names files, where the pipeline's text is read as NFC): rename it to its NFC spelling (convmv -f utf8 -t utf8 --nfc --notest PATH)",
		strconv.QuoteToASCII(other))
}

// otherSpelling is p as it is spelled on disk, where p does not exist but
// a path whose names are the same in NFC does; "" otherwise. Relative
// paths are taken from root, and returned relative.
func otherSpelling(root, p string) string {
	if _, err := os.Lstat(resolve(root, p)); err == nil || !os.IsNotExist(err) {
		return ""
	}
	dir, rest := root, p
	if filepath.IsAbs(p) {
		dir, rest = string(filepath.Separator), p[1:]
	}
	var found []string
	other := false
	for _, name := range strings.Split(filepath.Clean(rest), string(filepath.Separator)) {
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			name = sameNameIn(dir, name)
			if name == "" {
				return ""
			}
			other = true
		}
		found = append(found, name)
		dir = filepath.Join(dir, name)
	}
	if !other {
		return ""
	}
	out := filepath.Join(found...)
	if filepath.IsAbs(p) {
		out = string(filepath.Separator) + out
	}
	return out
}

// sameNameIn is the name of an entry of folder dir that is name in NFC,
// spelled otherwise; "" when none is.
func sameNameIn(dir, name string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	want := norm.NFC.String(name)
	for _, e := range entries {
		if e.Name() != name && norm.NFC.String(e.Name()) == want {
			return e.Name()
		}
	}
	return ""
}

// PathSpelling refuses path.root and path.pipeline where the workspace
// root (root) or the pipeline's folder (dir, relative to root) is spelled
// in another form than NFC and the NFC spelling, the text those values
// hold, is another folder or none: an error at the first reference to
// each. nil where nothing refers to them, or the spellings are one folder
// (a file system that takes names in either form).
func (c *Config) PathSpelling(root, dir string) hcl.Diagnostics {
	bad := map[string]string{}
	if !sameFolder(root, norm.NFC.String(root)) {
		bad["root"] = root
	}
	if !sameFolder(filepath.Join(root, dir), filepath.Join(root, norm.NFC.String(dir))) {
		bad["pipeline"] = dir
	}
	if len(bad) == 0 {
		return nil
	}
	var diags hcl.Diagnostics
	for _, name := range c.Paths {
		f, ok := c.Files[name]
		if !ok {
			continue
		}
		body, ok := f.Body.(*hclsyntax.Body)
		if !ok {
			continue
		}
		_ = hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
			st, ok := n.(*hclsyntax.ScopeTraversalExpr)
			if !ok || len(st.Traversal) < 2 || st.Traversal.RootName() != "path" {
				return nil
			}
			a, ok := st.Traversal[1].(hcl.TraverseAttr)
			if !ok || bad[a.Name] == "" {
				return nil
			}
			diags = append(diags, pathSpellingDiag(a.Name, bad[a.Name], st.SrcRange))
			delete(bad, a.Name)
			return nil
		})
	}
	return diags
}

// sameFolder reports whether a and b name one folder (a == b included).
func sameFolder(a, b string) bool {
	if a == b {
		return true
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// pathSpellingDiag is PathSpelling's error for path.NAME, whose folder is
// spelled p.
func pathSpellingDiag(name, p string, rng hcl.Range) *hcl.Diagnostic {
	what := "the workspace root"
	if name == "pipeline" {
		what = "the pipeline's folder (relative to the workspace root)"
	}
	var folder string
	for _, part := range strings.Split(p, string(filepath.Separator)) {
		if !norm.NFC.IsNormalString(part) {
			folder = part
			break
		}
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("path.%s names another folder", name),
		Detail: fmt.Sprintf("path.%s is %s, %s, whose folder %s is named in a decomposed Unicode form (NFD, as macOS names files). cairn's text is NFC (composed), as HCL's is, so path.%s would hold the NFC spelling, %s, which names another folder or none. Rename the folder to its NFC spelling (%s; convmv -r -f utf8 -t utf8 --nfc --notest PATH does it), or run cairn from a folder whose path is NFC.",
			name, what, strconv.QuoteToASCII(p), strconv.QuoteToASCII(folder), name, strconv.QuoteToASCII(norm.NFC.String(p)), strconv.QuoteToASCII(norm.NFC.String(folder))),
		Subject: rng.Ptr(),
	}
}
