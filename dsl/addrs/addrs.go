// Package addrs is the address of a node of a pipeline: a stage
// (stage.NAME), one instance of a stage with for_each (stage.NAME["KEY"]),
// or every instance of a stage whose keys are not known yet
// (stage.NAME[*]).
//
// The journal, the cache and the command line hold addresses as text; a
// Node is parsed from that text and prints back to it byte for byte.
package addrs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Prefix starts every printed address.
const Prefix = "stage."

// Node is a node address. Name is the stage's name, an HCL identifier.
// Keyed is set for an instance of a stage with for_each, whose key is Key;
// All is set for the one node that stands for all instances of a stage whose
// for_each waits for values. At most one of Keyed and All is set, and Key is
// empty unless Keyed is.
type Node struct {
	Name  string
	Key   string
	Keyed bool
	All   bool
}

// Stage is the address of a stage, or of its only node: stage.NAME.
func Stage(name string) Node { return Node{Name: name} }

// Instance is the address of one instance of a stage: stage.NAME["KEY"].
func Instance(name, key string) Node { return Node{Name: name, Key: key, Keyed: true} }

// Wildcard is the address of the node standing for every instance of a
// stage whose keys are not known yet: stage.NAME[*].
func Wildcard(name string) Node { return Node{Name: name, All: true} }

// Stage is the address of the node's stage.
func (n Node) Stage() Node { return Node{Name: n.Name} }

// String is the address as printed and stored: stage.NAME,
// stage.NAME["KEY"] (the key quoted as strconv.Quote does) or stage.NAME[*].
func (n Node) String() string {
	switch {
	case n.Keyed:
		return Prefix + n.Name + "[" + strconv.Quote(n.Key) + "]"
	case n.All:
		return Prefix + n.Name + "[*]"
	}
	return Prefix + n.Name
}

// Valid reports whether n is an address that Parse can return: a stage
// name that is an identifier, and fields that agree with each other.
func (n Node) Valid() bool {
	if !ValidIdentifier(n.Name) || n.Keyed && n.All {
		return false
	}
	return n.Keyed || n.Key == ""
}

// WithPrefix is s with "stage." added when it does not start with it: the
// text an address given on the command line stands for, for messages about
// one that does not parse.
func WithPrefix(s string) string {
	if strings.HasPrefix(s, Prefix) {
		return s
	}
	return Prefix + s
}

// Parse reads an address as String prints it, or as the command line takes
// it, without the "stage." in front. The key must be quoted as String
// quotes it, so that the text of an address is one only: Parse(s) succeeds
// just when String gives s back (with "stage." added).
func Parse(s string) (Node, error) {
	rest := strings.TrimPrefix(s, Prefix)
	name, sub := rest, ""
	if i := strings.IndexByte(rest, '['); i >= 0 {
		name, sub = rest[:i], rest[i:]
	}
	if !ValidIdentifier(name) {
		return Node{}, fmt.Errorf("%q is not an address: addresses look like stage.NAME or stage.NAME[\"KEY\"], and %q is not a stage name", s, name)
	}
	if sub == "" {
		return Stage(name), nil
	}
	if len(sub) < 2 || sub[len(sub)-1] != ']' {
		return Node{}, fmt.Errorf("%q is not an address: the key must be in brackets, as in stage.%s[\"KEY\"]", s, name)
	}
	q := sub[1 : len(sub)-1]
	if q == "*" {
		return Wildcard(name), nil
	}
	key, err := strconv.Unquote(q)
	if err != nil || strconv.Quote(key) != q {
		return Node{}, fmt.Errorf("%q is not an address: the key must be a quoted string, as in stage.%s[\"KEY\"]", s, name)
	}
	return Instance(name, key), nil
}

// FileName is the node's log file stem inside a run folder for the given
// attempt (1 for the first); the node's scratch folder has the attempt 1
// name.
//
// The name differs for every two addresses, since two nodes of one apply
// that shared it would interleave their logs and read each other's scratch
// files. A stage without a key keeps its name as it is when the name is made
// of letters, digits, '_' and '-' only. Any other address (one with a key,
// say stage.train["a"]) is flattened to those characters for people to read
// and followed by '~' and a digest of the whole address. '~' never occurs in
// the first form, so a flattened name never equals a plain one, and two
// flattened names are equal only when their digests are. The attempt suffix
// starts with '.', which neither form contains.
func (n Node) FileName(attempt int) string {
	addr := n.String()
	name := strings.TrimPrefix(addr, Prefix)
	if !plainFileName(name) || len(name) > 120 {
		flat := []byte(strings.NewReplacer("[\"", "_", "\"]", "", "[", "_", "]", "").Replace(name))
		for i, c := range flat {
			if !fileNameByte(c) {
				flat[i] = '_'
			}
		}
		if len(flat) > 80 {
			flat = flat[:80]
		}
		sum := sha256.Sum256([]byte(addr))
		name = string(flat) + "~" + hex.EncodeToString(sum[:])[:16]
	}
	return AttemptName(name, attempt)
}

// AttemptName is the FileName of an attempt of a node whose first
// attempt's FileName is first.
func AttemptName(first string, attempt int) string {
	if attempt > 1 {
		return first + ".attempt" + strconv.Itoa(attempt)
	}
	return first
}

func plainFileName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !fileNameByte(s[i]) {
			return false
		}
	}
	return true
}

func fileNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// ValidIdentifier reports whether s is an identifier of the native syntax
// (hclsyntax.ValidIdentifier), without the Unicode scan for the ASCII
// names nearly every pipeline uses: a letter or '_', then letters,
// digits, '_' and '-'. A name with other characters must be valid UTF-8,
// and its ASCII characters must be of those: the syntax's scanner takes
// some invalid UTF-8 together with the bytes after it as one identifier
// ("\xe90[" among them), and a stage name with a '[' in it would not
// parse back from its address.
func ValidIdentifier(s string) bool {
	if s == "" {
		return false
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80:
			ascii = false
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case i > 0 && (c >= '0' && c <= '9' || c == '-'):
		default:
			return false
		}
	}
	return ascii || utf8.ValidString(s) && hclsyntax.ValidIdentifier(s)
}
