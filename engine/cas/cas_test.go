//go:build unix

package cas

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newStore(t *testing.T) (*Store, string) {
	t.Helper()
	root := t.TempDir()
	s, err := Open(root, Options{NoSync: true})
	require.NoError(t, err)
	return s, root
}

func sha(b []byte) Digest {
	sum := sha256.Sum256(b)
	return Digest(hex.EncodeToString(sum[:]))
}

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// entries lists a fan-out directory: blobs and anything left beside them.
func entries(t *testing.T, s *Store, d Digest) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Dir(s.path(d)))
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Sys().(*syscall.Stat_t).Ino
}

func TestParseDigest(t *testing.T) {
	good := sha([]byte("cairn"))
	tests := []struct {
		in   string
		want Digest
		ok   bool
	}{
		{string(good), good, true},
		{"sha256:" + string(good), good, true},
		{"", "", false},
		{string(good[:63]), "", false},
		{string(good) + "0", "", false},
		{"AB" + string(good[2:]), "", false},
		{"zz" + string(good[2:]), "", false},
		{"md5:" + string(good), "", false},
		{"../" + string(good[3:]), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d, err := ParseDigest(tt.in)
			if !tt.ok {
				require.Error(t, err)
				assert.False(t, Digest(tt.in).Valid())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, d)
			assert.True(t, d.Valid())
		})
	}
}

func TestPutRestoreRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		content []byte
		perm    os.FileMode
	}{
		{"empty", nil, 0o644},
		{"small", []byte("loss=0.125\n"), 0o600},
		{"executable", []byte("#!/bin/sh\necho hi\n"), 0o755},
		{"several buffers", nil, 0o644}, // filled below
	}
	tests[3].content = randomBytes(t, 3<<20+17)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, root := newStore(t)
			src := writeFile(t, t.TempDir(), "in", tt.content)

			d, size, err := s.PutFile(src)
			require.NoError(t, err)
			assert.Equal(t, sha(tt.content), d)
			assert.Equal(t, int64(len(tt.content)), size)
			assert.True(t, s.Has(d))
			assert.FileExists(t, filepath.Join(root, "cas", "sha256", string(d[:2]), string(d)))

			d2, err := s.PutBytes(tt.content)
			require.NoError(t, err)
			assert.Equal(t, d, d2)

			got, err := s.ReadBytes(d)
			require.NoError(t, err)
			assert.Equal(t, len(tt.content), len(got))
			assert.Equal(t, sha(tt.content), sha(got))

			dst := filepath.Join(t.TempDir(), "deep", "er", "out.bin")
			require.NoError(t, s.Restore(d, dst, tt.perm))
			restored, err := os.ReadFile(dst)
			require.NoError(t, err)
			assert.Equal(t, sha(tt.content), sha(restored))
			fi, err := os.Stat(dst)
			require.NoError(t, err)
			assert.Equal(t, tt.perm, fi.Mode().Perm())
			assert.Equal(t, []string{"out.bin"}, dirNames(t, filepath.Dir(dst)), "no temporary file left beside the restored one")
			require.NoError(t, s.Sync())
		})
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestPutBytesThenPutFileAgree(t *testing.T) {
	s, _ := newStore(t)
	b := []byte("same bytes, two ways")
	d1, err := s.PutBytes(b)
	require.NoError(t, err)
	d2, _, err := s.PutFile(writeFile(t, t.TempDir(), "f", b))
	require.NoError(t, err)
	assert.Equal(t, d1, d2)
}

func TestDedupe(t *testing.T) {
	s, _ := newStore(t)
	content := []byte("checkpoint bytes")
	dir := t.TempDir()
	a := writeFile(t, dir, "a", content)
	b := writeFile(t, dir, "b", content)

	d, _, err := s.PutFile(a)
	require.NoError(t, err)
	ino := inode(t, s.path(d))

	d2, _, err := s.PutFile(b)
	require.NoError(t, err)
	d3, err := s.PutBytes(content)
	require.NoError(t, err)
	assert.Equal(t, d, d2)
	assert.Equal(t, d, d3)
	assert.Equal(t, ino, inode(t, s.path(d)), "a second put of stored content must not rewrite the blob")
	assert.Equal(t, []string{string(d)}, entries(t, s, d), "one blob, no temporary files")
}

func TestPutReplacesTruncatedBlob(t *testing.T) {
	s, _ := newStore(t)
	content := []byte("0123456789abcdef")
	d, err := s.PutBytes(content)
	require.NoError(t, err)
	damage(t, s.path(d), func(p string) { require.NoError(t, os.Truncate(p, 5)) })

	d2, err := s.PutBytes(content)
	require.NoError(t, err)
	assert.Equal(t, d, d2)
	got, err := s.ReadBytes(d)
	require.NoError(t, err, "the put must have replaced the short blob")
	assert.Equal(t, content, got)
}

func TestBlobsAreReadOnly(t *testing.T) {
	s, _ := newStore(t)
	d1, err := s.PutBytes([]byte("one"))
	require.NoError(t, err)
	d2, _, err := s.PutFile(writeFile(t, t.TempDir(), "f", []byte("two")))
	require.NoError(t, err)
	for _, d := range []Digest{d1, d2} {
		fi, err := os.Stat(s.path(d))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o444), fi.Mode().Perm())
	}
}

func TestRestoreIsIndependentCopy(t *testing.T) {
	s, _ := newStore(t)
	content := []byte("weights v1")
	d, err := s.PutBytes(content)
	require.NoError(t, err)
	dst := filepath.Join(t.TempDir(), "model.bin")
	require.NoError(t, s.Restore(d, dst, 0o644))
	assert.NotEqual(t, inode(t, s.path(d)), inode(t, dst), "restore must never hardlink")

	// The workload rewrites its file in place, then appends to it.
	f, err := os.OpenFile(dst, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("WEIGHTS"), 0)
	require.NoError(t, err)
	_, err = f.Seek(0, io.SeekEnd)
	require.NoError(t, err)
	_, err = f.Write([]byte(" and more"))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	got, err := s.ReadBytes(d)
	require.NoError(t, err)
	assert.Equal(t, content, got)
	changed, err := os.ReadFile(dst)
	require.NoError(t, err)
	assert.Equal(t, "WEIGHTS v1 and more", string(changed))
}

func TestRestoreReplacesExistingFile(t *testing.T) {
	s, _ := newStore(t)
	d, err := s.PutBytes([]byte("new"))
	require.NoError(t, err)
	dst := writeFile(t, t.TempDir(), "out", []byte("old and longer"))
	require.NoError(t, s.Restore(d, dst, 0o640))
	got, err := os.ReadFile(dst)
	require.NoError(t, err)
	assert.Equal(t, "new", string(got))
}

// damage lets fn modify a (read-only) blob in place.
func damage(t *testing.T, path string, fn func(path string)) {
	t.Helper()
	require.NoError(t, os.Chmod(path, 0o644))
	fn(path)
	require.NoError(t, os.Chmod(path, 0o444))
}

func flipByte(t *testing.T, off int64) func(string) {
	return func(p string) {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		require.NoError(t, err)
		defer f.Close()
		b := make([]byte, 1)
		_, err = f.ReadAt(b, off)
		require.NoError(t, err)
		b[0] ^= 0x01
		_, err = f.WriteAt(b, off)
		require.NoError(t, err)
	}
}

func TestCorruptBlob(t *testing.T) {
	content := randomBytes(t, 200_000)
	damages := []struct {
		name string
		fn   func(t *testing.T) func(string)
	}{
		{"flipped byte", func(t *testing.T) func(string) { return flipByte(t, 123_456) }},
		{"truncated", func(t *testing.T) func(string) {
			return func(p string) { require.NoError(t, os.Truncate(p, 100_000)) }
		}},
		{"extended", func(t *testing.T) func(string) {
			return func(p string) {
				f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
				require.NoError(t, err)
				_, err = f.Write([]byte("tail"))
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}
		}},
		{"emptied", func(t *testing.T) func(string) {
			return func(p string) { require.NoError(t, os.Truncate(p, 0)) }
		}},
		{"a folder in its place", func(t *testing.T) func(string) {
			return func(p string) {
				require.NoError(t, os.Remove(p))
				require.NoError(t, os.MkdirAll(filepath.Join(p, "sub"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(p, "sub", "f"), content, 0o644))
			}
		}},
	}
	reads := []struct {
		name string
		read func(s *Store, d Digest, dir string) error
	}{
		{"ReadBytes", func(s *Store, d Digest, dir string) error {
			_, err := s.ReadBytes(d)
			return err
		}},
		{"Restore", func(s *Store, d Digest, dir string) error {
			return s.Restore(d, filepath.Join(dir, "out"), 0o644)
		}},
	}
	for _, dm := range damages {
		for _, rd := range reads {
			t.Run(dm.name+"/"+rd.name, func(t *testing.T) {
				s, _ := newStore(t)
				d, err := s.PutBytes(content)
				require.NoError(t, err)
				damage(t, s.path(d), dm.fn(t))

				dir := t.TempDir()
				prior := writeFile(t, dir, "out", []byte("previous output"))
				err = rd.read(s, d, dir)
				require.ErrorIs(t, err, ErrCorrupt)
				assert.False(t, s.Has(d), "a corrupt blob is evicted")
				_, err = os.Lstat(s.path(d))
				assert.ErrorIs(t, err, fs.ErrNotExist, "nothing is left in its place")

				got, err := os.ReadFile(prior)
				require.NoError(t, err)
				assert.Equal(t, "previous output", string(got), "a failed restore leaves dst alone")
				assert.Equal(t, []string{"out"}, dirNames(t, dir), "no temporary file left behind")

				// The engine recomputes and stores the output again.
				d2, err := s.PutBytes(content)
				require.NoError(t, err)
				assert.Equal(t, d, d2)
				_, err = s.ReadBytes(d)
				require.NoError(t, err)
			})
		}
	}
}

func TestMissingBlob(t *testing.T) {
	s, _ := newStore(t)
	d := sha([]byte("never stored"))
	assert.False(t, s.Has(d))
	_, err := s.ReadBytes(d)
	assert.ErrorIs(t, err, ErrNotFound)
	dst := filepath.Join(t.TempDir(), "out")
	assert.ErrorIs(t, s.Restore(d, dst, 0o644), ErrNotFound)
	assert.NoFileExists(t, dst)
	assert.ErrorIs(t, s.Remove(d), ErrNotFound)
	assert.NoError(t, s.Evict(d), "evicting what is already gone is fine")
}

func TestInvalidDigestIsRejected(t *testing.T) {
	s, root := newStore(t)
	outside := writeFile(t, root, "secret", []byte("x"))
	for _, d := range []Digest{"", "../../secret", Digest(filepath.Base(outside)), "AB" + sha(nil)[2:]} {
		assert.False(t, s.Has(d))
		_, err := s.ReadBytes(d)
		assert.Error(t, err)
		assert.NotErrorIs(t, err, ErrNotFound)
		assert.Error(t, s.Restore(d, filepath.Join(t.TempDir(), "out"), 0o644))
		assert.Error(t, s.Evict(d))
		assert.Error(t, s.Remove(d))
	}
	assert.FileExists(t, outside)
}

func TestPutFileErrors(t *testing.T) {
	s, _ := newStore(t)
	dir := t.TempDir()
	_, _, err := s.PutFile(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, _, err = s.PutFile(dir)
	assert.ErrorContains(t, err, "not a regular file")
}

// A filesystem with reflinks hands back a clone, which is read back and
// verified like a copy. These tests stand in for one on filesystems without.
func TestClonePath(t *testing.T) {
	userspaceClone := func(dst, src *os.File) bool {
		b, err := io.ReadAll(src)
		if err != nil {
			return false
		}
		_, err = dst.Write(b)
		return err == nil
	}
	t.Run("good clone", func(t *testing.T) {
		old := cloneFile
		cloneFile = userspaceClone
		t.Cleanup(func() { cloneFile = old })
		s, _ := newStore(t)
		content := randomBytes(t, 1<<20+3)
		d, _, err := s.PutFile(writeFile(t, t.TempDir(), "f", content))
		require.NoError(t, err)
		assert.Equal(t, sha(content), d)
		dst := filepath.Join(t.TempDir(), "out")
		require.NoError(t, s.Restore(d, dst, 0o644))
		got, err := os.ReadFile(dst)
		require.NoError(t, err)
		assert.Equal(t, content, got)
	})
	t.Run("clone of a corrupt blob", func(t *testing.T) {
		s, _ := newStore(t)
		content := []byte("clone me")
		d, err := s.PutBytes(content)
		require.NoError(t, err)
		damage(t, s.path(d), flipByte(t, 2))
		old := cloneFile
		cloneFile = userspaceClone
		t.Cleanup(func() { cloneFile = old })
		err = s.Restore(d, filepath.Join(t.TempDir(), "out"), 0o644)
		assert.ErrorIs(t, err, ErrCorrupt)
		assert.False(t, s.Has(d))
	})
	t.Run("source changed between hash and clone", func(t *testing.T) {
		s, _ := newStore(t)
		src := writeFile(t, t.TempDir(), "f", []byte("before"))
		old := cloneFile
		cloneFile = func(dst, f *os.File) bool {
			// The producer rewrites the file while it is being stored.
			require.NoError(t, os.WriteFile(src, []byte("after!"), 0o644))
			return userspaceClone(dst, f)
		}
		t.Cleanup(func() { cloneFile = old })
		_, _, err := s.PutFile(src)
		assert.ErrorContains(t, err, "changed while it was being stored")
		assert.False(t, s.Has(sha([]byte("before"))))
		assert.False(t, s.Has(sha([]byte("after!"))))
		require.NoError(t, s.Walk(func(d Digest, _ int64, _ time.Time) error {
			return fmt.Errorf("unexpected blob %s", d)
		}))
		n, err := s.RemoveStaleTemps(0)
		require.NoError(t, err)
		assert.Zero(t, n, "the failed put removed its temporary file")
	})
}

func TestConcurrentPutFile(t *testing.T) {
	s, _ := newStore(t)
	dir := t.TempDir()
	shared := randomBytes(t, 256<<10)
	sharedPath := writeFile(t, dir, "shared", shared)
	const workers, rounds = 8, 5
	own := make([][]byte, workers)
	ownPath := make([]string, workers)
	for i := range own {
		own[i] = randomBytes(t, 64<<10+i)
		ownPath[i] = writeFile(t, dir, "own"+strconv.Itoa(i), own[i])
	}

	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*2)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				if d, _, err := s.PutFile(sharedPath); err != nil || d != sha(shared) {
					errs <- fmt.Errorf("shared put: %s %v", d, err)
				}
				if d, _, err := s.PutFile(ownPath[i]); err != nil || d != sha(own[i]) {
					errs <- fmt.Errorf("own put %d: %s %v", i, d, err)
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.NoError(t, s.Sync())

	want := map[Digest]int64{sha(shared): int64(len(shared))}
	for _, b := range own {
		want[sha(b)] = int64(len(b))
	}
	got := map[Digest]int64{}
	require.NoError(t, s.Walk(func(d Digest, size int64, _ time.Time) error {
		got[d] = size
		_, err := s.ReadBytes(d)
		return err
	}))
	assert.Equal(t, want, got)
	n, err := s.RemoveStaleTemps(0)
	require.NoError(t, err)
	assert.Zero(t, n, "no temporary files left")
}

func TestWalkAndRemove(t *testing.T) {
	s, _ := newStore(t)
	want := map[Digest]int64{}
	for i := 0; i < 20; i++ {
		b := []byte(fmt.Sprintf("blob %d %s", i, string(make([]byte, i))))
		d, err := s.PutBytes(b)
		require.NoError(t, err)
		want[d] = int64(len(b))
	}
	// Things in the store that are not blobs.
	anyD := sha([]byte("blob 0 "))
	fan := filepath.Dir(s.path(anyD))
	writeFile(t, fan, tempPrefix+"123", []byte("half written"))
	writeFile(t, fan, "notes.txt", []byte("x"))
	writeFile(t, s.dir, "zz", []byte("not a fan-out"))
	misplaced := sha([]byte("misplaced"))
	writeFile(t, fan, string(misplaced), []byte("misplaced"))

	var order []Digest
	got := map[Digest]int64{}
	require.NoError(t, s.Walk(func(d Digest, size int64, mtime time.Time) error {
		order = append(order, d)
		got[d] = size
		assert.False(t, mtime.IsZero())
		return nil
	}))
	assert.Equal(t, want, got)
	assert.True(t, sort.SliceIsSorted(order, func(i, j int) bool { return order[i] < order[j] }))

	var victim Digest
	for d := range want {
		victim = d
		break
	}
	require.NoError(t, s.Remove(victim))
	delete(want, victim)
	assert.False(t, s.Has(victim))
	assert.ErrorIs(t, s.Remove(victim), ErrNotFound)
	got = map[Digest]int64{}
	require.NoError(t, s.Walk(func(d Digest, size int64, _ time.Time) error {
		got[d] = size
		return nil
	}))
	assert.Equal(t, want, got)

	stop := errors.New("stop")
	calls := 0
	err := s.Walk(func(Digest, int64, time.Time) error { calls++; return stop })
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 1, calls)

	// The stray temporary file is young: a put may still own it.
	n, err := s.RemoveStaleTemps(time.Hour)
	require.NoError(t, err)
	assert.Zero(t, n)
	old := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(fan, tempPrefix+"123"), old, old))
	n, err = s.RemoveStaleTemps(time.Hour)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.NoFileExists(t, filepath.Join(fan, tempPrefix+"123"))
}

func TestUseRefreshesStaleMtime(t *testing.T) {
	s, _ := newStore(t)
	content := []byte("used long ago")
	d, err := s.PutBytes(content)
	require.NoError(t, err)
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	uses := []struct {
		name string
		use  func() error
	}{
		{"ReadBytes", func() error { _, err := s.ReadBytes(d); return err }},
		{"Restore", func() error { return s.Restore(d, filepath.Join(t.TempDir(), "o"), 0o644) }},
		{"PutBytes", func() error { _, err := s.PutBytes(content); return err }},
	}
	for _, u := range uses {
		t.Run(u.name, func(t *testing.T) {
			require.NoError(t, os.Chtimes(s.path(d), old, old))
			require.NoError(t, u.use())
			fi, err := os.Stat(s.path(d))
			require.NoError(t, err)
			assert.True(t, fi.ModTime().After(old.Add(47*time.Hour)), "mtime %v not refreshed", fi.ModTime())
		})
	}
}

func TestSyncTracksDirectories(t *testing.T) {
	root := t.TempDir()
	s, err := Open(root, Options{})
	require.NoError(t, err)
	require.NoError(t, s.Sync())
	assert.Empty(t, s.dirty)

	d, err := s.PutBytes([]byte("durable"))
	require.NoError(t, err)
	fan := filepath.Dir(s.path(d))
	assert.Contains(t, s.dirty, fan)
	assert.Contains(t, s.dirty, s.dir, "a new fan-out directory dirties its parent")
	require.NoError(t, s.Sync())
	assert.Empty(t, s.dirty)

	_, err = s.PutBytes([]byte("durable"))
	require.NoError(t, err)
	assert.Empty(t, s.dirty, "a deduplicated put changes no directory")
	require.NoError(t, s.Evict(d))
	assert.Contains(t, s.dirty, fan)
	require.NoError(t, s.Sync())
}

// Several processes sharing one cache store the same content at once; then a
// writer is killed with SIGKILL mid-put. The store must hold only whole,
// verifiable blobs.
const helperEnv = "CAIRN_CAS_TEST_HELPER"

func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		// Not a test of its own: the body runs only in the processes the
		// multi-process tests start. It returns rather than skips, so that
		// make test's list of skipped tests holds only real skips.
		return
	}
	root := os.Getenv("CAIRN_CAS_ROOT")
	s, err := Open(root, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	switch mode {
	case "same":
		src := os.Getenv("CAIRN_CAS_SRC")
		for i := 0; i < 20; i++ {
			d, _, err := s.PutFile(src)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Fprintln(out, d)
		}
	case "forever":
		// Store fresh 4 MiB blobs until killed, announcing each one.
		dir := os.Getenv("CAIRN_CAS_SRC")
		b := make([]byte, 4<<20)
		for i := 0; ; i++ {
			rand.Read(b)
			p := filepath.Join(dir, "f"+strconv.Itoa(i))
			if err := os.WriteFile(p, b, 0o644); err != nil {
				os.Exit(1)
			}
			if _, _, err := s.PutFile(p); err != nil {
				os.Exit(1)
			}
			if err := s.Sync(); err != nil {
				os.Exit(1)
			}
			os.Remove(p)
			fmt.Fprintln(out, "stored")
			out.Flush()
		}
	}
	out.Flush()
	os.Exit(0)
}

func helperCmd(t *testing.T, mode, root, src string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "CAIRN_CAS_ROOT="+root, "CAIRN_CAS_SRC="+src)
	cmd.Stderr = os.Stderr
	return cmd
}

func TestMultiProcessPutSameContent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	root := t.TempDir()
	content := randomBytes(t, 2<<20)
	src := writeFile(t, t.TempDir(), "ckpt", content)
	const procs = 4
	cmds := make([]*exec.Cmd, procs)
	outs := make([]io.ReadCloser, procs)
	for i := range cmds {
		cmds[i] = helperCmd(t, "same", root, src)
		var err error
		outs[i], err = cmds[i].StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmds[i].Start())
	}
	for i, cmd := range cmds {
		b, err := io.ReadAll(outs[i])
		require.NoError(t, err)
		require.NoError(t, cmd.Wait())
		assert.Equal(t, 20, len(splitLines(string(b))))
		for _, line := range splitLines(string(b)) {
			assert.Equal(t, string(sha(content)), line)
		}
	}
	s, err := Open(root, Options{NoSync: true})
	require.NoError(t, err)
	got, err := s.ReadBytes(sha(content))
	require.NoError(t, err)
	assert.Equal(t, content, got)
	assert.Equal(t, []string{string(sha(content))}, entries(t, s, sha(content)))
}

func splitLines(s string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func TestKillDuringPut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	root := t.TempDir()
	for round := 0; round < 3; round++ {
		cmd := helperCmd(t, "forever", root, t.TempDir())
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		sc := bufio.NewScanner(out)
		// Let it store a few blobs, then kill it while it is inside the next.
		for i := 0; i < 2+round; i++ {
			require.True(t, sc.Scan(), "helper stopped early")
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		err = cmd.Wait()
		var exitErr *exec.ExitError
		require.ErrorAs(t, err, &exitErr)
	}

	s, err := Open(root, Options{NoSync: true})
	require.NoError(t, err)
	blobs := 0
	require.NoError(t, s.Walk(func(d Digest, size int64, _ time.Time) error {
		blobs++
		b, err := s.ReadBytes(d)
		if err != nil {
			return err
		}
		assert.Equal(t, int64(4<<20), int64(len(b)))
		return nil
	}))
	assert.GreaterOrEqual(t, blobs, 2+3+4, "every announced blob survived")
	// Whatever the killed writers left is only temporary files, which gc
	// removes.
	_, err = s.RemoveStaleTemps(0)
	require.NoError(t, err)
	require.NoError(t, s.walkFanouts(func(fan string, e fs.DirEntry) error {
		if !Digest(e.Name()).Valid() {
			return fmt.Errorf("left in the store: %s", e.Name())
		}
		return nil
	}))
}

// IsRestoreTemp knows writeAt's temporary names and nothing else.
func TestIsRestoreTemp(t *testing.T) {
	for name, want := range map[string]bool{
		".b.txt.cairn-0123456789abcdef": true,
		".x.cairn-ffffffffffffffff":     true,
		"b.txt.cairn-0123456789abcdef":  false, // not hidden
		".b.txt.cairn-0123456789abcde":  false, // 15 digits
		".b.txt.cairn-0123456789abcdeg": false,
		".cairn-0123456789abcdef":       false, // no name
		".b.txt":                        false,
	} {
		assert.Equal(t, want, IsRestoreTemp(name), name)
	}
	// And what writeAt makes is one.
	dir := t.TempDir()
	d, err := os.Open(dir)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, writeAt(d, "out.txt", 0o644, func(f *os.File) error {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 1)
		assert.True(t, IsRestoreTemp(entries[0].Name()), entries[0].Name())
		return nil
	}))
}
