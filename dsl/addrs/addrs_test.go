package addrs

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/assert"
)

func TestParseString(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Node
		text string
	}{
		{"stage.train", Stage("train"), "stage.train"},
		{"train", Stage("train"), "stage.train"},
		{"stage", Stage("stage"), "stage.stage"},
		{"stage.stage", Stage("stage"), "stage.stage"},
		{"stage.train-2_b", Stage("train-2_b"), "stage.train-2_b"},
		{`stage.train["a.b"]`, Instance("train", "a.b"), `stage.train["a.b"]`},
		{`train["a.b"]`, Instance("train", "a.b"), `stage.train["a.b"]`},
		{`stage.train[""]`, Instance("train", ""), `stage.train[""]`},
		{`stage.x["a]b[\"c\"]"]`, Instance("x", `a]b["c"]`), `stage.x["a]b[\"c\"]"]`},
		{`stage.x["tab\there"]`, Instance("x", "tab\there"), `stage.x["tab\there"]`},
		{`stage.x["é"]`, Instance("x", "é"), `stage.x["é"]`},
		{`stage.x["*"]`, Instance("x", "*"), `stage.x["*"]`},
		{"stage.train[*]", Wildcard("train"), "stage.train[*]"},
		{"train[*]", Wildcard("train"), "stage.train[*]"},
	} {
		got, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("Parse(%q) = %#v, want %#v", c.in, got, c.want)
		}
		if got.String() != c.text {
			t.Errorf("Parse(%q).String() = %q, want %q", c.in, got.String(), c.text)
		}
		if WithPrefix(c.in) != c.text {
			t.Errorf("WithPrefix(%q) = %q, want %q", c.in, WithPrefix(c.in), c.text)
		}
		if !got.Valid() {
			t.Errorf("Parse(%q) is not Valid", c.in)
		}
		if s := got.Stage(); s != Stage(c.want.Name) || s.String() != "stage."+c.want.Name {
			t.Errorf("Parse(%q).Stage() = %#v", c.in, s)
		}
	}
}

// TestParseRejects: text that names no node today (the command line looked
// it up as it was, with "stage." added, and found nothing) does not parse,
// key spellings other than String's included.
func TestParseRejects(t *testing.T) {
	for _, in := range []string{
		"", "stage.", " train", "train ", "stage. train", "var.x", "stage.a.b", "stage.stage.x", "1st", "a b",
		"train[", "train[]", `train["a"`, `train["a"]x`, `train["a"]["b"]`, "train[a]", "train['a']", "train[`a`]",
		`train["\x61"]`, `train["\u00e9"]`, `train[ "a"]`, "train[**]", "train[ *]", `stage.train["a"]]`, `[\"a\"]`,
	} {
		if n, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %#v, want an error", in, n)
		}
	}
}

func TestValid(t *testing.T) {
	for _, n := range []Node{{}, {Name: "a b"}, {Name: "a[\"b\"]"}, {Name: "a", Key: "k"}, {Name: "a", Keyed: true, All: true}, {Name: "a", Key: "k", All: true}} {
		if n.Valid() {
			t.Errorf("%#v is Valid", n)
		}
	}
}

// oldNodeLogName is engine's nodeLogName of before addresses had a type,
// written again another way (run folders written then name their logs and
// scratch folders so): the name as it is when made of name bytes only and at
// most 120 long; else the brackets and quotes around the key dropped, every
// other byte not a name byte made '_' (each byte of a rune), cut to 80, then '~' and a digest.
func oldNodeLogName(addr string, attempt int) string {
	name := strings.TrimPrefix(addr, "stage.")
	if !plainName.MatchString(name) || len(name) > 120 {
		flat := strings.NewReplacer("[\"", "_", "\"]", "", "[", "_", "]", "").Replace(name)
		flat = notNameByte.ReplaceAllStringFunc(flat, func(m string) string { return strings.Repeat("_", len(m)) })
		if len(flat) > 80 {
			flat = flat[:80]
		}
		name = flat + "~" + digest(addr)
	}
	if attempt > 1 {
		name += ".attempt" + strconv.Itoa(attempt)
	}
	return name
}

var (
	plainName   = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	notNameByte = regexp.MustCompile(`[^A-Za-z0-9_-]`)
)

func TestFileName(t *testing.T) {
	for _, c := range []struct {
		n       Node
		attempt int
		want    string
	}{
		{Stage("train_a"), 1, "train_a"},
		{Stage("train_a"), 2, "train_a.attempt2"},
		{Stage("train_a"), 0, "train_a"},
		{Instance("train", "a"), 1, "train_a~" + digest(`stage.train["a"]`)},
		{Instance("train", "a"), 3, "train_a~" + digest(`stage.train["a"]`) + ".attempt3"},
		{Instance("x", "a.b"), 1, "x_a_b~" + digest(`stage.x["a.b"]`)},
		{Instance("x", "a b"), 1, "x_a_b~" + digest(`stage.x["a b"]`)},
		{Wildcard("train"), 1, "train__~" + digest("stage.train[*]")},
		{Stage("é"), 1, "__~" + digest("stage.é")},
		{Stage(strings.Repeat("s", 121)), 1, strings.Repeat("s", 80) + "~" + digest("stage."+strings.Repeat("s", 121))},
		{Stage(strings.Repeat("s", 120)), 1, strings.Repeat("s", 120)},
	} {
		if got := c.n.FileName(c.attempt); got != c.want {
			t.Errorf("%s.FileName(%d) = %q, want %q", c.n, c.attempt, got, c.want)
		}
		if got, old := c.n.FileName(c.attempt), oldNodeLogName(c.n.String(), c.attempt); got != old {
			t.Errorf("%s.FileName(%d) = %q, the old name was %q", c.n, c.attempt, got, old)
		}
	}
	long := Instance("x", strings.Repeat("k", 200))
	if l := len(long.FileName(1)); l >= 120 {
		t.Errorf("a long key's file name has %d bytes", l)
	}
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:16]
}

// TestFileNamesDoNotCollide: addresses that flatten alike keep apart.
func TestFileNamesDoNotCollide(t *testing.T) {
	all := []Node{
		Stage("train_a"), Instance("train", "a"), Instance("train_a", ""), Wildcard("train_a"), Wildcard("train"),
		Instance("train", "*"), Instance("x", "a.b"), Instance("x", "a_b"), Instance("x", "a/b"), Instance("x", "a b"),
		Stage("x_a_b"), Instance("x", `a"]`), Instance("x_a", "b"),
	}
	seen := map[string]Node{}
	for _, n := range all {
		for attempt := 1; attempt <= 3; attempt++ {
			f := n.FileName(attempt)
			if o, dup := seen[f]; dup {
				t.Errorf("%s and %s share the file name %s", n, o, f)
			}
			seen[f] = n
			if strings.ContainsAny(f, "/\\\x00") || f == "." || f == ".." {
				t.Errorf("%s: %q is not one path element", n, f)
			}
		}
	}
}

func FuzzNodeAddr(f *testing.F) {
	f.Add("train", "", false, false, "x", "a", true, false)
	f.Add("train_a", "", false, false, "train", "a", true, false)
	f.Add("train", "", false, true, "train", "*", true, false)
	f.Add("x", "a.b", true, false, "x", "a_b", true, false)
	f.Add("x", `a"]`, true, false, "x_a", "", false, false)
	f.Fuzz(func(t *testing.T, name1, key1 string, keyed1, all1 bool, name2, key2 string, keyed2, all2 bool) {
		a := Node{Name: name1, Key: key1, Keyed: keyed1, All: all1}
		b := Node{Name: name2, Key: key2, Keyed: keyed2, All: all2}
		for _, n := range []Node{a, b} {
			if !n.Valid() {
				if p, err := Parse(n.String()); err == nil && p == n {
					t.Fatalf("%#v is not Valid, yet it parses back", n)
				}
				return
			}
			p, err := Parse(n.String())
			if err != nil {
				t.Fatalf("Parse(%q): %v", n.String(), err)
			}
			if p != n {
				t.Fatalf("Parse(%q) = %#v, want %#v", n.String(), p, n)
			}
			if q, err := Parse(strings.TrimPrefix(n.String(), Prefix)); err != nil || q != n {
				t.Fatalf("Parse without the prefix of %q = %#v, %v", n.String(), q, err)
			}
			if got, old := n.FileName(2), oldNodeLogName(n.String(), 2); got != old {
				t.Fatalf("%s.FileName(2) = %q, the old name was %q", n, got, old)
			}
		}
		if (a == b) != (a.String() == b.String()) {
			t.Fatalf("%#v and %#v: equal %v, same text %v", a, b, a == b, a.String() == b.String())
		}
		if a != b && a.FileName(1) == b.FileName(1) {
			t.Fatalf("%s and %s share the file name %s", a, b, a.FileName(1))
		}
	})
}

// FuzzParse: whatever parses prints back as given, with "stage." added.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"train", "stage.train", `stage.x["a.b"]`, "x[*]", `x["\x61"]`, "stage.stage.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err != nil {
			return
		}
		if !n.Valid() {
			t.Fatalf("Parse(%q) = %#v, not Valid", s, n)
		}
		if n.String() != WithPrefix(s) {
			t.Fatalf("Parse(%q).String() = %q", s, n.String())
		}
	})
}

// ValidIdentifier answers as the native syntax's scanner does, for ASCII
// names and others.
func TestValidIdentifierIsTheSyntaxs(t *testing.T) {
	for _, s := range []string{
		"", "a", "A", "_", "__", "_a", "a_1", "a-b", "a-", "Z9", "1a", "-a", "a.b", "a b", "a\"", "a[", "a\x00",
		"é", "aé", "é1", "a\u200d", "名前", "a名", "\u0301a", "a\u0301", "ａ", "x\xff",
	} {
		assert.Equal(t, hclsyntax.ValidIdentifier(s), ValidIdentifier(s), "%q", s)
	}
	// The syntax's scanner takes these for identifiers; their addresses
	// would not parse back (FuzzNodeAddr found the first).
	for _, s := range []string{"\xe90[", "\xe9\xff", "a\xe9", "\xe9a[\"x\"]"} {
		assert.False(t, ValidIdentifier(s), "%q", s)
		n := Stage(s)
		assert.False(t, n.Valid(), "%q", s)
	}
	for c := 0; c < 0x80; c++ {
		for _, s := range []string{string(rune(c)), "a" + string(rune(c)), "_" + string(rune(c)) + "b"} {
			assert.Equal(t, hclsyntax.ValidIdentifier(s), ValidIdentifier(s), "%q", s)
		}
	}
}
