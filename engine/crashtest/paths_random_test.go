package crashtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRandomLinksNeverEscape drives two workspaces sharing one cache
// through random pipelines whose nodes make symlinks at run time (to
// outside, to the cache and its files, to the other workspace, to each
// other, to the root) and declare outputs and results through them, with
// "..", absolute paths and static links among them. After every apply,
// whatever it exits with, nothing outside its workspace changed (the
// outside folder, the other workspace), no file of the cache changed
// except cairn's own bookkeeping, every new file in the blob store is a
// blob named by its content, and no blob holds outside content or a cache
// file. Seeded: CAIRN_LINKS_SEED picks the seed (default 1),
// CAIRN_LINKS_ROUNDS the number of rounds (default 6, 3 with -short), and
// CAIRN_LINKS_DEBUG=1 logs every pipeline and apply.
func TestRandomLinksNeverEscape(t *testing.T) {
	seed := int64(1)
	if s := os.Getenv("CAIRN_LINKS_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err)
		seed = n
	}
	rounds := 6
	if testing.Short() {
		rounds = 3
	}
	if s := os.Getenv("CAIRN_LINKS_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		rounds = n
	}
	for _, cacheInA := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache in workspace %v", cacheInA), func(t *testing.T) {
			runLinkRounds(t, seed, rounds, cacheInA)
		})
	}
}

func runLinkRounds(t *testing.T, seed int64, rounds int, cacheInA bool) {
	rng := rand.New(rand.NewSource(seed))
	base := t.TempDir()
	if r, err := filepath.EvalSymlinks(base); err == nil {
		base = r
	}
	outside := filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "dir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("OUTSIDE-SECRET\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "dir", "f.txt"), []byte("OUTSIDE-SECRET dir\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.json"), []byte(`{"s": "OUTSIDE-SECRET"}`), 0o644))
	wa, wb := newWS(t, ""), newWS(t, "")
	cache := filepath.Join(base, "cache")
	if cacheInA {
		cache = wa.cache
	}
	require.NoError(t, os.MkdirAll(cache, 0o755))
	for _, w := range []*ws{wa, wb} {
		// A static link to outside: declared paths through it are refused
		// at plan time.
		require.NoError(t, os.Symlink(outside, w.path("static")))
	}
	targets := []string{
		outside, filepath.Join(outside, "dir"), filepath.Join(outside, "secret.txt"),
		filepath.Join(outside, "secret.json"), filepath.Join(outside, "missing"),
		cache, filepath.Join(cache, "cas"), filepath.Join(cache, "cas", "sha256"),
		filepath.Join(cache, "index.log"), filepath.Join(cache, "runs"),
		"..", "/", ".", "d0", "d1", "d2/sub", "o0", "r.json",
	}
	names := []string{"d0", "d1", "d2", "d2/sub", "o0", "o1", "r.json", "lk"}
	outputs := []string{"d0/f.txt", "d1/g.txt", "d2/sub/h.txt", "o0", "o1", "d0", "d2/", "lk/x.txt", "lk"}
	bad := []string{"../escape.txt", filepath.Join(outside, "abs.txt"), "static/x.txt", ".", ".cairn/x", "d0/../../x"}

	// linker makes links and folders; its outputs are none, so the writer
	// after it has the same key whatever it did. Each writer waits for its
	// linker only; one node process runs at a time (--parallelism 1), so
	// a workload's own check before it writes is not raced by another.
	// A benign linker only makes folders; the others aim their links at
	// the folders of the next writer's outputs more often than not.
	linker := func(benign bool, next []string) string {
		var steps []string
		for i := rng.Intn(4); i >= 0; i-- {
			name := names[rng.Intn(len(names))]
			if o := next[rng.Intn(len(next))]; rng.Intn(3) != 0 && o != "" && !strings.HasPrefix(o, "/") && !strings.Contains(o, "..") && o != "." {
				name = top(o)
			}
			switch {
			case benign || rng.Intn(3) == 0:
				steps = append(steps, fmt.Sprintf("safe %s && rm -rf %s; safe %s && mkdir -p %s", top(name), top(name), name, name))
			default:
				target := targets[rng.Intn(len(targets))]
				if target == cache && !cacheInA && rng.Intn(2) == 0 {
					target = ".cairn"
				}
				steps = append(steps, fmt.Sprintf("safe %s && rm -rf %s; safe %s && mkdir -p %s; safe %s && ln -s %s %s", top(name), top(name), filepath.Dir(name), filepath.Dir(name), name, target, name))
			}
		}
		return strings.Join(steps, "; ")
	}
	// writer writes its declared outputs where no link is in the way,
	// and sometimes makes one of them a link instead.
	writer := func(tag string) (string, []string, string) {
		var outs []string
		for i := rng.Intn(3); i >= 0; i-- {
			outs = append(outs, outputs[rng.Intn(len(outputs))])
		}
		if rng.Intn(20) == 0 {
			outs = append(outs, bad[rng.Intn(len(bad))])
		}
		var steps []string
		for _, o := range outs {
			o = strings.TrimSuffix(o, "/")
			if strings.HasPrefix(o, "/") || strings.Contains(o, "..") || o == "." {
				continue
			}
			if rng.Intn(10) == 0 {
				target := targets[rng.Intn(len(targets))]
				steps = append(steps, fmt.Sprintf("safe %s && rm -rf %s; safe %s && mkdir -p %s; safe %s && ln -s %s %s", top(o), top(o), filepath.Dir(o), filepath.Dir(o), o, target, o))
				continue
			}
			if o == "d0" || o == "d2" {
				steps = append(steps, fmt.Sprintf("safe %s/w.txt && mkdir -p %s && echo %s > %s/w.txt", o, o, tag, o))
				continue
			}
			steps = append(steps, fmt.Sprintf("safe %s && mkdir -p %s && echo %s > %s", o, filepath.Dir(o), tag, o))
		}
		result := ""
		if rng.Intn(3) == 0 {
			result = "r.json"
			if rng.Intn(6) == 0 {
				steps = append(steps, "rm -rf r.json; ln -s "+targets[rng.Intn(5)]+" r.json")
			} else {
				steps = append(steps, "safe r.json && echo '{\"v\": \""+tag+"\"}' > r.json")
			}
		}
		return strings.Join(steps, "; "), outs, result
	}

	// safe fails when a component of its path is a link, or a file before
	// the last: the workloads never write through a link themselves.
	const safeFn = `safe() { p=.; for c in $(echo "$1" | tr / ' '); do p="$p/$c"; [ -L "$p" ] && return 1; [ -e "$p" ] && [ ! -d "$p" ] && [ "$p" != "./$1" ] && return 1; done; return 0; }; `
	stage := func(b *strings.Builder, name, after, cmd string, outs []string, result string) {
		fmt.Fprintf(b, "stage \"command\" %q {\n", name)
		if after != "" {
			fmt.Fprintf(b, "  after = [stage.%s]\n", after)
		}
		fmt.Fprintf(b, "  run = [\"sh\", \"-c\", %q]\n", safeFn+cmd+"; true")
		if len(outs) > 0 {
			q := make([]string, len(outs))
			for i, o := range outs {
				q[i] = strconv.Quote(o)
			}
			fmt.Fprintf(b, "  outputs = [%s]\n", strings.Join(q, ", "))
		}
		if result != "" {
			fmt.Fprintf(b, "  result = %q\n", result)
		}
		b.WriteString("}\n")
	}

	// What the applies did, to show that the rounds reach each case.
	seen := map[string]int{}
	defer func() { t.Logf("seed %d, %d rounds: %v", seed, rounds, seen) }()
	for round := 0; round < rounds; round++ {
		// Links left by earlier rounds are seen by the plan (and refused
		// there); most rounds start clean, so that links come at run time.
		if rng.Intn(4) != 0 {
			for _, w := range []*ws{wa, wb} {
				for _, name := range names {
					require.NoError(t, os.RemoveAll(w.path(top(name))))
				}
			}
		}
		n := 2 + rng.Intn(3)
		type writerStage struct {
			cmd, result string
			outs        []string
		}
		writers := make([]writerStage, n)
		for i := range writers {
			writers[i].cmd, writers[i].outs, writers[i].result = writer(fmt.Sprintf("r%d-w%d", round, i))
		}
		pipelines := map[*ws]string{}
		order := []*ws{wa, wb}
		if rng.Intn(2) == 0 {
			order = []*ws{wb, wa}
		}
		benign := order[0]
		if rng.Intn(4) == 0 {
			benign = nil
		}
		for _, w := range []*ws{wa, wb} {
			var b strings.Builder
			b.WriteString("pipeline \"links\" {}\n")
			for i, wr := range writers {
				stage(&b, fmt.Sprintf("mk%d", i), "", linker(w == benign, append(wr.outs, wr.result, "d0")), nil, "")
				stage(&b, fmt.Sprintf("w%d", i), fmt.Sprintf("mk%d", i), wr.cmd, wr.outs, wr.result)
			}
			pipelines[w] = b.String()
		}
		if rng.Intn(3) == 0 {
			order = append(order, order[rng.Intn(2)])
		}
		for _, w := range order {
			other := wa
			if w == wa {
				other = wb
			}
			w.write("pipeline.hcl", pipelines[w])
			beforeOut, beforeOther := snapshot(t, outside, ""), snapshot(t, other.root, other.cache)
			beforeCache := snapshot(t, cache, "")
			res := w.run([]string{"CAIRN_NO_FSYNC=1"}, "--cache", cache, "apply", "-v", "--parallelism", "1", "pipeline.hcl")
			what := fmt.Sprintf("seed %d round %d, %s\n%s\n%s", seed, round, filepath.Base(w.root), pipelines[w], res)
			require.Contains(t, []int{0, 1, 2}, res.code, what)
			seen[fmt.Sprintf("exit %d", res.code)]++
			if os.Getenv("CAIRN_LINKS_DEBUG") != "" {
				t.Log(what)
			}
			for _, m := range []string{"is not restored", "outside the workspace: it is not stored", "in the cache folder", "holds the cache folder", "inside the cache folder", "workspace root itself", "leaves the workspace", "is absolute", "was not written", "= stage."} {
				if strings.Contains(res.stdout+res.stderr, m) {
					seen[m]++
				}
			}
			require.NotContains(t, res.stderr, "panic", what)
			require.Equal(t, beforeOut, snapshot(t, outside, ""), "outside changed: %s", what)
			require.Equal(t, beforeOther, snapshot(t, other.root, other.cache), "the other workspace changed: %s", what)
			afterCache := snapshot(t, cache, "")
			require.Empty(t, cacheChanges(beforeCache, afterCache), what)
			if res.code == 2 {
				require.Equal(t, blobsOf(beforeCache), blobsOf(afterCache), "blobs stored by a refused pipeline: %s", what)
			}
		}
	}
}

// top is the first component of a path.
func top(p string) string { return strings.SplitN(p, "/", 2)[0] }

// snapshot maps every entry under dir (skipping the folder skip) to what
// it is: a file's content, a link's target, or "dir".
func snapshot(t *testing.T, dir, skip string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == skip {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "-> " + target
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

var blobPath = regexp.MustCompile(`^cas/sha256/([0-9a-f]{2})/([0-9a-f]{64})$`)

func blobsOf(snap map[string]string) map[string]string {
	out := map[string]string{}
	for p, c := range snap {
		if blobPath.MatchString(p) {
			out[p] = c
		}
	}
	return out
}

// cacheChanges lists what an apply did to a cache other than its own
// bookkeeping (runs, locks, memos, the stat cache, appends to the index)
// and adding blobs: a blob must be named by its content and hold neither
// outside content nor a file of the cache.
func cacheChanges(before, after map[string]string) []string {
	var bad []string
	own := func(p string) bool {
		for _, pre := range []string{"runs", "locks", "memo", "items"} {
			if p == pre || strings.HasPrefix(p, pre+"/") {
				return true
			}
		}
		return p == "statcache" || p == "gc.lock" || p == "gc.gate" || p == "index.log.lock" || p == "." ||
			p == "cas" || p == "cas/sha256" || regexp.MustCompile(`^cas/sha256/[0-9a-f]{2}$`).MatchString(p)
	}
	for p, c := range after {
		old, existed := before[p]
		switch {
		case own(p):
		case p == "index.log":
			if !strings.HasPrefix(c, old) {
				bad = append(bad, "index.log was rewritten")
			}
		case blobPath.MatchString(p):
			sum := sha256.Sum256([]byte(c))
			if m := blobPath.FindStringSubmatch(p); hex.EncodeToString(sum[:]) != m[2] {
				bad = append(bad, p+": not named by its content")
			}
			for _, s := range []string{"OUTSIDE-SECRET", "CAIRNWL1", "cairn.statcache.v1"} {
				if strings.Contains(c, s) {
					bad = append(bad, fmt.Sprintf("%s holds %q", p, s))
				}
			}
		case !existed:
			bad = append(bad, p+": new")
		case old != c:
			bad = append(bad, p+": changed")
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok && !own(p) && !blobPath.MatchString(p) {
			bad = append(bad, p+": removed")
		}
	}
	sort.Strings(bad)
	return bad
}
