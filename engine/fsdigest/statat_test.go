package fsdigest

import (
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// LstatSigAt says of every kind of file what LstatSig says: the
// up-to-date check compares the one with what BuildMemo took with the
// other.
func TestLstatSigAtIsLstatSig(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "setuid"), nil, 0o755))
	must(os.Chmod(filepath.Join(dir, "setuid"), 0o755|os.ModeSetuid|os.ModeSetgid))
	must(os.Mkdir(filepath.Join(dir, "sticky"), 0o755))
	must(os.Chmod(filepath.Join(dir, "sticky"), 0o755|os.ModeSticky))
	must(os.Symlink("file", filepath.Join(dir, "link")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	d, err := os.Open(dir)
	must(err)
	defer d.Close()
	for _, name := range []string{"file", "setuid", "sticky", "link", "fifo"} {
		want, err := LstatSig(filepath.Join(dir, name))
		must(err)
		got, err := LstatSigAt(d, name)
		must(err)
		if got != want {
			t.Errorf("%s: LstatSigAt %+v, LstatSig %+v", name, got, want)
		}
	}
	if _, err := LstatSigAt(d, "absent"); !os.IsNotExist(err) {
		t.Errorf("an absent file: %v, want a not-exist error", err)
	}
}

// ParseSig reads back what String writes, at the edges of every field's
// range too, and refuses anything else.
func TestParseSig(t *testing.T) {
	for _, s := range []Sig{
		{},
		{Size: 3, Mtime: 1796218409240690281, Ctime: 1796218409240690281, Ino: 9980067, Dev: 65024, Mode: 0o644},
		{Size: math.MaxInt64, Mtime: math.MinInt64, Ctime: -1, Ino: math.MaxUint64, Dev: math.MaxUint64, Mode: math.MaxUint32},
		{Mode: uint32(os.ModeDir | os.ModeSetuid | 0o755)},
	} {
		got, err := ParseSig(s.String())
		if err != nil || got != s {
			t.Errorf("ParseSig(%q) = %+v, %v; want %+v", s.String(), got, err, s)
		}
	}
	for _, bad := range []string{
		"", "1:2:3:4:5", "1:2:3:4:5:6:7", "1:2:3:4:5:", ":2:3:4:5:6", "1::3:4:5:6",
		"1:2:3:-4:5:6", "1:2:3:4:5:-6", "1:2:3:4:5:8", "-:2:3:4:5:6", "--1:2:3:4:5:6", "1-:2:3:4:5:6",
		"+1:2:3:4:5:6", "a:2:3:4:5:6", "1:2:3:4:5:6 ",
		"9223372036854775808:2:3:4:5:6", "1:-9223372036854775809:3:4:5:6",
		"1:2:3:18446744073709551616:5:6", "1:2:3:4:5:40000000000",
	} {
		if got, err := ParseSig(bad); err == nil {
			t.Errorf("ParseSig(%q) = %+v, want an error", bad, got)
		}
	}
}
