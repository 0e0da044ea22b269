package crashtest

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/engine/runlog"
)

// Two users of one machine, each with a primary group of their own, who
// share the group sharedGID.
const (
	uidA, uidB = 47001, 47002
	sharedGID  = 47100
)

// sharedSetup is a folder every user may enter, holding a copy of the cairn
// binary, a cache folder set up for the group sharedGID as the docs say
// (group owned, setgid, 2775), and a workspace for each user.
type sharedSetup struct {
	base, bin, cache string
}

func newSharedSetup(t *testing.T) *sharedSetup {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running cairn as two users needs root (to start processes with other uids); run the test as root")
	}
	base, err := os.MkdirTemp("", "cairn-shared-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	s := &sharedSetup{base: base, bin: filepath.Join(base, "cairn"), cache: filepath.Join(base, "cache")}
	src, err := os.Open(cairnBin)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(s.bin, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
	require.NoError(t, os.Mkdir(s.cache, 0o775))
	require.NoError(t, os.Chown(s.cache, 0, sharedGID))
	require.NoError(t, os.Chmod(s.cache, 0o775|os.ModeSetgid))
	return s
}

// workspace makes a workspace owned by uid holding pipeline.
func (s *sharedSetup) workspace(t *testing.T, uid int, pipeline string) string {
	t.Helper()
	root := filepath.Join(s.base, filepath.Base(t.Name())+"-"+string(rune('a'+uid-uidA)))
	require.NoError(t, os.Mkdir(root, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "pipeline.hcl"), []byte(pipeline), 0o644))
	require.NoError(t, os.Chown(root, uid, uid))
	require.NoError(t, os.Chown(filepath.Join(root, "pipeline.hcl"), uid, uid))
	return root
}

// run runs cairn as uid (primary group uid, member of sharedGID) with the
// given umask, in the workspace root, on the shared cache.
func (s *sharedSetup) run(t *testing.T, uid int, umask, root string, args ...string) result {
	t.Helper()
	full := append([]string{"-c", "umask " + umask + " && exec \"$0\" \"$@\"", s.bin, "--chdir", root, "--cache", s.cache}, args...)
	cmd := exec.Command("/bin/sh", full...)
	cmd.Dir = root
	w := &ws{t: t, root: root}
	cmd.Env = append(w.baseEnv(), "HOME="+root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
		Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{sharedGID},
	}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

const sharedPipeline = `
pipeline "shared" {}
stage "command" "gen" {
  run     = ["sh", "-c", "echo gen > gen.txt"]
  outputs = ["gen.txt"]
}
stage "command" "use" {
  run     = ["sh", "-c", "cat gen.txt > use.txt && echo USE >> use.txt"]
  inputs  = ["gen.txt"]
  after   = [stage.gen]
  outputs = ["use.txt"]
}
`

// TestSharedCacheTwoUsers: two users (other uids, other primary groups,
// one shared group, umask 002) use one cache folder set up as
// docs/durability.md says: each takes the other's results from the cache,
// stores new ones next to them, and either can collect garbage. Everything
// in the cache belongs to the shared group, folders stay setgid and
// group-writable, and no file is shut to the group.
func TestSharedCacheTwoUsers(t *testing.T) {
	s := newSharedSetup(t)
	a := s.workspace(t, uidA, sharedPipeline)
	b := s.workspace(t, uidB, sharedPipeline)

	res := s.run(t, uidA, "002", a, "apply")
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "2 ran, 0 cached")

	res = s.run(t, uidB, "002", b, "apply")
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stdout, "0 ran, 2 cached")
	assert.NotContains(t, res.stderr, "warning")
	got, err := os.ReadFile(filepath.Join(b, "use.txt"))
	require.NoError(t, err)
	assert.Equal(t, "gen\nUSE\n", string(got))

	// B stores a new result, then A another, in folders the other made.
	for _, u := range []struct {
		uid  int
		root string
	}{{uidB, b}, {uidA, a}} {
		more := fmt.Sprintf("%s\nstage \"command\" \"more\" {\n  run     = [\"sh\", \"-c\", \"echo more-%d > more.txt\"]\n  outputs = [\"more.txt\"]\n}\n", sharedPipeline, u.uid)
		require.NoError(t, os.WriteFile(filepath.Join(u.root, "pipeline.hcl"), []byte(more), 0o644))
		res = s.run(t, u.uid, "002", u.root, "apply")
		require.Equal(t, 0, res.code, res.String())
		assert.Contains(t, res.stdout, "1 ran, 2 cached")
	}

	// Once the outputs are old enough for the up-to-date check, applies it
	// answers journal a line each in one log that both users append to.
	time.Sleep(2100 * time.Millisecond)
	for round := range 2 {
		for _, u := range []struct {
			uid  int
			root string
		}{{uidA, a}, {uidB, b}} {
			res = s.run(t, u.uid, "002", u.root, "apply")
			require.Equal(t, 0, res.code, res.String())
			assert.Contains(t, res.stdout, "0 ran, 3 cached", "round %d, uid %d", round, u.uid)
		}
	}
	quick, err := runlog.ReadUpToDate(s.cache)
	require.NoError(t, err)
	assert.Len(t, quick, 2, "the second round: answered by the memo the first wrote")

	// B collects everything: A's blobs, records and runs go too.
	res = s.run(t, uidB, "002", b, "gc", "--older-than", "0s")
	require.Equal(t, 0, res.code, res.String())
	res = s.run(t, uidA, "002", a, "apply")
	require.Equal(t, 0, res.code, res.String())

	n := 0
	err = filepath.WalkDir(s.cache, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		n++
		st := fi.Sys().(*syscall.Stat_t)
		rel, _ := filepath.Rel(s.cache, p)
		assert.Equal(t, uint32(sharedGID), st.Gid, "%s belongs to group %d", rel, st.Gid)
		switch {
		case fi.IsDir():
			assert.NotZero(t, fi.Mode()&os.ModeSetgid, "%s is not setgid (%s)", rel, fi.Mode())
			assert.Equal(t, os.FileMode(0o070), fi.Mode().Perm()&0o070, "%s is not group rwx (%s)", rel, fi.Mode())
		case fi.Mode().IsRegular():
			assert.NotZero(t, fi.Mode().Perm()&0o040, "%s is not group-readable (%s)", rel, fi.Mode())
			if fi.Mode().Perm()&0o200 != 0 {
				assert.NotZero(t, fi.Mode().Perm()&0o020, "%s is writable by its owner only (%s)", rel, fi.Mode())
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, n, 10, "files in the cache")
}

// TestSharedCacheUmaskWarning: a user whose umask takes group write away
// is told so when the cache folder is set up for a group.
func TestSharedCacheUmaskWarning(t *testing.T) {
	s := newSharedSetup(t)
	a := s.workspace(t, uidA, sharedPipeline)
	res := s.run(t, uidA, "022", a, "apply")
	require.Equal(t, 0, res.code, res.String())
	assert.Contains(t, res.stderr, "umask 0022 keeps the group from writing")
}
