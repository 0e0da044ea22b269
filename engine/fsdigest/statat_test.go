package fsdigest

import (
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
