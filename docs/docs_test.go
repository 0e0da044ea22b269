package docs

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-run/cairn/dsl"
	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/e2e/e2etest"
	"github.com/cairn-run/cairn/engine/plan"
	"github.com/cairn-run/cairn/sim/simmodel"
	"github.com/cairn-run/cairn/stages"
)

// The documents are checked against the real cairn binary, built once.
var cairnBin string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(e2etest.Binaries{Packages: []string{"cmd/cairn"}}.Main(m, os.Stderr, func(dir string) {
		cairnBin = filepath.Join(dir, "cairn")
	}))
}

// docFiles are the documents whose marked blocks are checked.
var docFiles = []string{"language.md", "keys.md", "durability.md", "../README.md"}

// block is a fenced code block preceded by a marker comment:
//
//	<!-- full-pipeline name=hello apply exit=1 var=tag=v3 env=CAIRN_GPUS=sim:2 -->
//	```hcl
//	...
//	```
//
// Marker words are flags (apply) or key=value pairs; a value may be a Go
// quoted string. A key may repeat (var, env).
type block struct {
	file   string
	line   int
	marker string
	flags  map[string]bool
	attrs  map[string][]string
	lang   string
	body   string
}

func (b block) attr(k string) string {
	if v := b.attrs[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (b block) where() string { return fmt.Sprintf("%s:%d", filepath.Base(b.file), b.line) }

var markerRe = regexp.MustCompile(`^<!--\s*([a-z][a-z-]*)(\s.*?)?\s*-->\s*$`)

// parseDoc returns the marked blocks of a markdown file. A marker not
// followed by a fenced block is ignored.
func parseDoc(t *testing.T, path string) []block {
	t.Helper()
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(string(src), "\n")
	var out []block
	for i := 0; i < len(lines); i++ {
		m := markerRe.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j >= len(lines) || !strings.HasPrefix(lines[j], "```") {
			continue
		}
		b := block{file: path, line: j + 1, marker: m[1], flags: map[string]bool{}, attrs: map[string][]string{}}
		if f := strings.Fields(strings.TrimPrefix(lines[j], "```")); len(f) > 0 {
			b.lang = f[0]
		}
		words, err := splitWords(m[2])
		require.NoError(t, err, "%s:%d: bad marker", path, i+1)
		for _, w := range words {
			if k, v, ok := strings.Cut(w, "="); ok {
				b.attrs[k] = append(b.attrs[k], v)
			} else {
				b.flags[w] = true
			}
		}
		var body []string
		k := j + 1
		for ; k < len(lines) && strings.TrimSpace(lines[k]) != "```"; k++ {
			body = append(body, lines[k])
		}
		require.Less(t, k, len(lines), "%s:%d: unterminated code block", path, j+1)
		b.body = strings.Join(body, "\n") + "\n"
		out = append(out, b)
		i = k
	}
	return out
}

// splitWords splits a marker's words on spaces; key="..." values are Go
// quoted strings.
func splitWords(s string) ([]string, error) {
	var out []string
	s = strings.TrimSpace(s)
	for s != "" {
		i := 0
		for i < len(s) && s[i] != ' ' && s[i] != '"' {
			i++
		}
		word := s[:i]
		if i < len(s) && s[i] == '"' {
			q, err := strconv.QuotedPrefix(s[i:])
			if err != nil {
				return nil, err
			}
			v, _ := strconv.Unquote(q)
			word += v
			i += len(q)
		}
		out = append(out, word)
		s = strings.TrimSpace(s[i:])
	}
	return out, nil
}

// result is one cairn invocation.
type result struct {
	stdout, stderr string
	code           int
}

// cairn runs the binary in dir with a hermetic environment: its own lease
// folder, no fsync, no GPUs unless env says otherwise, no CAIRN_* from the
// test's own environment.
func cairn(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(cairnBin, args...)
	cmd.Dir = dir
	base := []string{"CAIRN_NO_FSYNC=1", "CAIRN_GPUS=none", "CAIRN_LEASE_DIR=" + filepath.Join(dir, ".leases"), "NO_COLOR=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CAIRN_") && !strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=") {
			base = append(base, kv)
		}
	}
	cmd.Env = append(base, env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{so.String(), se.String(), code}
}

// example is a documented pipeline with the files its workspace needs.
type example struct {
	pipeline block
	files    []block
}

func (ex example) vars() []string {
	var out []string
	for _, v := range ex.pipeline.attrs["var"] {
		out = append(out, "--var", v)
	}
	return out
}

// workspace writes the example's pipeline and files into a new folder.
func (ex example) workspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pipeline.hcl"), []byte(ex.pipeline.body), 0o644))
	for _, f := range ex.files {
		p := filepath.Join(dir, filepath.FromSlash(f.attr("path")))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		mode := os.FileMode(0o644)
		if m := f.attr("mode"); m != "" {
			n, err := strconv.ParseUint(m, 8, 32)
			require.NoError(t, err, "%s: mode", f.where())
			mode = os.FileMode(n)
		}
		require.NoError(t, os.WriteFile(p, []byte(f.body), mode))
		require.NoError(t, os.Chmod(p, mode))
	}
	return dir
}

// evalSetup prepares an evaluate example: worker=PATH writes the complete
// worker of docs/worker-protocol.md at PATH, and sim-model=MODEL starts a
// simulated task model serving MODEL, named by TASK_ENDPOINTS in the
// returned environment.
func (ex example) evalSetup(t *testing.T, dir string) []string {
	t.Helper()
	var env []string
	if p := ex.pipeline.attr("worker"); p != "" {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Skip("python3 is not installed")
		}
		doc, err := os.ReadFile("worker-protocol.md")
		require.NoError(t, err)
		m := regexp.MustCompile("(?s)```python\n(.*?)```").FindSubmatch(doc)
		require.NotNil(t, m, "worker-protocol.md has a python block")
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, m[1], 0o644))
	}
	if model := ex.pipeline.attr("sim-model"); model != "" {
		srv, err := simmodel.Start(simmodel.Config{Models: []string{model}}, "")
		require.NoError(t, err)
		t.Cleanup(func() { srv.Close() })
		env = append(env, "TASK_ENDPOINTS="+srv.URL)
	}
	return env
}

// examples collects the full pipelines of a document and attaches file
// blocks to them by name.
func examples(t *testing.T, blocks []block) []example {
	t.Helper()
	files := map[string][]block{}
	for _, b := range blocks {
		if b.marker == "file" {
			require.NotEmpty(t, b.attr("name"), "%s: a file block needs name=", b.where())
			require.NotEmpty(t, b.attr("path"), "%s: a file block needs path=", b.where())
			files[b.attr("name")] = append(files[b.attr("name")], b)
		}
	}
	var out []example
	for _, b := range blocks {
		if b.marker != "full-pipeline" {
			continue
		}
		require.Equal(t, "hcl", b.lang, "%s: a full pipeline is an hcl block", b.where())
		out = append(out, example{pipeline: b, files: files[b.attr("name")]})
	}
	return out
}

func TestDocumentedPipelines(t *testing.T) {
	total := 0
	for _, doc := range docFiles {
		blocks := parseDoc(t, doc)
		plans := map[string]block{}
		expect := map[string][]block{}
		for _, b := range blocks {
			switch b.marker {
			case "plan-output":
				plans[b.attr("name")] = b
			case "expect-file":
				expect[b.attr("name")] = append(expect[b.attr("name")], b)
			}
		}
		for _, ex := range examples(t, blocks) {
			total++
			ex := ex
			t.Run(ex.pipeline.where(), func(t *testing.T) {
				t.Parallel()
				dir := ex.workspace(t)
				env := append(ex.pipeline.attrs["env"], ex.evalSetup(t, dir)...)
				r := cairn(t, dir, env, append([]string{"validate", "pipeline.hcl"}, ex.vars()...)...)
				require.Equal(t, 0, r.code, "cairn validate:\n%s%s", r.stdout, r.stderr)
				assert.Contains(t, r.stdout, "Valid: pipeline ")
				// Without any value too, as terraform validate does.
				r = cairn(t, dir, nil, "validate", "pipeline.hcl")
				require.Equal(t, 0, r.code, "cairn validate without values:\n%s%s", r.stdout, r.stderr)
				if want, ok := plans[ex.pipeline.attr("name")]; ok && ex.pipeline.attr("name") != "" {
					r := cairn(t, dir, env, append([]string{"plan", "pipeline.hcl"}, ex.vars()...)...)
					require.Equal(t, 0, r.code, r.stderr)
					assert.Equal(t, strings.TrimSpace(want.body), strings.TrimSpace(r.stdout), "%s: documented plan output", want.where())
				}
				if !ex.pipeline.flags["apply"] {
					return
				}
				wantCode := 0
				if s := ex.pipeline.attr("exit"); s != "" {
					var err error
					wantCode, err = strconv.Atoi(s)
					require.NoError(t, err)
				}
				r = cairn(t, dir, env, append([]string{"apply", "pipeline.hcl"}, ex.vars()...)...)
				require.Equal(t, wantCode, r.code, "cairn apply:\n%s%s", r.stdout, r.stderr)
				for _, f := range expect[ex.pipeline.attr("name")] {
					got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.attr("path"))))
					if !assert.NoError(t, err, "%s", f.where()) {
						continue
					}
					if f.flags["placeholders"] {
						assert.Regexp(t, placeholderPattern(f.body), string(got), "%s: %s after apply", f.where(), f.attr("path"))
					} else {
						assert.Equal(t, f.body, string(got), "%s: %s after apply", f.where(), f.attr("path"))
					}
				}
				if wantCode != 0 {
					return
				}
				// A second apply finds everything in the cache.
				r = cairn(t, dir, env, append([]string{"apply", "pipeline.hcl"}, ex.vars()...)...)
				require.Equal(t, 0, r.code, "second apply:\n%s%s", r.stdout, r.stderr)
				assert.Regexp(t, `Apply complete: 0 ran, [1-9][0-9]* cached, 0 failed, 0 skipped\.`, r.stdout)
			})
		}
	}
	// The documents present complete pipelines; the test cannot pass by
	// finding none.
	assert.GreaterOrEqual(t, total, 8, "documented full pipelines")
}

// placeholders stand for what changes from run to run in an expect-file
// block marked "placeholders".
var placeholders = map[string]string{
	"<RUN_ID>": `\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{6}`,
	"<UTC>":    `\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}`,
}

// placeholderPattern is a regular expression matching exactly body, each
// placeholder standing for its pattern.
func placeholderPattern(body string) string {
	pat := regexp.QuoteMeta(body)
	for ph, re := range placeholders {
		pat = strings.ReplaceAll(pat, regexp.QuoteMeta(ph), re)
	}
	return `\A` + pat + `\z`
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}

// mentioned reports whether a name appears in doc as code: `name` or
// `name(...`.
func mentioned(doc, name string) bool {
	return strings.Contains(doc, "`"+name+"`") || strings.Contains(doc, "`"+name+"(")
}

func TestLanguageReferenceCoversTheCode(t *testing.T) {
	lang := readDoc(t, "language.md")
	readme := readDoc(t, "../README.md")

	t.Run("functions", func(t *testing.T) {
		names := dsl.FunctionNames(stages.Functions)
		require.NotEmpty(t, names)
		for _, fn := range names {
			assert.True(t, mentioned(lang, fn), "function %s is not in docs/language.md", fn)
			assert.True(t, mentioned(readme, fn), "function %s is not in README.md", fn)
		}
	})
	t.Run("failure classes", func(t *testing.T) {
		require.NotEmpty(t, failclass.All)
		for _, c := range failclass.All {
			assert.True(t, mentioned(lang, c), "failure class %s is not in docs/language.md", c)
			assert.True(t, mentioned(readme, c), "failure class %s is not in README.md", c)
			// The class table has one row per class.
			assert.Regexp(t, "(?m)^\\| `"+regexp.QuoteMeta(c)+"` \\|", lang, "class %s has no row in the class table", c)
		}
	})
	t.Run("classes named in the docs", func(t *testing.T) {
		// A class named in prose ("fails with class `setup`") is one a
		// retry's on can name: a short form there would be refused.
		named := regexp.MustCompile("class(?:es)?\\s+`([^`]+)`")
		docs, err := filepath.Glob("*.md")
		require.NoError(t, err)
		for _, name := range append(docs, "../README.md") {
			for _, m := range named.FindAllStringSubmatch(readDoc(t, name), -1) {
				assert.True(t, failclass.Valid(m[1]), "%s names the class %q, which is not one (failclass.All)", name, m[1])
			}
		}
	})
	t.Run("generic attributes", func(t *testing.T) {
		for _, a := range dsl.GenericAttributes {
			assert.Regexp(t, "(?m)^\\| `"+regexp.QuoteMeta(a)+"` \\|", lang, "generic attribute %s has no row in the attribute table", a)
			assert.True(t, mentioned(readme, a), "generic attribute %s is not in README.md", a)
		}
	})
	t.Run("instance attributes", func(t *testing.T) {
		for _, a := range plan.InstanceAttrs {
			assert.Regexp(t, "(?m)^\\| `"+regexp.QuoteMeta(a)+"` \\|", lang, "instance attribute %s has no row in the instance table", a)
			assert.True(t, mentioned(readme, a), "instance attribute %s is not in README.md", a)
		}
	})
	t.Run("stage kinds", func(t *testing.T) {
		kinds := stages.Registry{}.KindNames()
		require.Contains(t, kinds, "command")
		for _, k := range kinds {
			sec := section(lang, "## Kind: "+k)
			if !assert.NotEmpty(t, sec, "stage kind %s has no section", k) {
				continue
			}
			assert.False(t, strings.Contains(sec, "Being written"), "the %s section is a placeholder", k)
			kind, _ := stages.Lookup(k)
			for _, a := range kind.Schema().Attributes {
				assert.True(t, mentioned(sec, a.Name), "attribute %s of kind %s is not in its section", a.Name, k)
			}
			for _, b := range kind.Schema().Blocks {
				assert.True(t, mentioned(sec, b.Type), "block %s of kind %s is not in its section", b.Type, k)
			}
			assert.True(t, mentioned(readme, k), "stage kind %s is not in README.md", k)
		}
	})
	t.Run("commands and flags", func(t *testing.T) {
		r := cairn(t, t.TempDir(), nil, "--help")
		require.Equal(t, 0, r.code)
		cmds := helpCommands(r.stdout)
		require.Contains(t, cmds, "apply")
		for _, c := range cmds {
			assert.True(t, strings.Contains(lang, "`cairn "+c), "command %s is not in the CLI table", c)
			h := cairn(t, t.TempDir(), nil, c, "--help")
			require.Equal(t, 0, h.code)
			for _, f := range helpFlags(h.stdout) {
				assert.True(t, strings.Contains(lang, f), "flag %s of cairn %s is not documented", f, c)
			}
		}
	})
	t.Run("environment variables", func(t *testing.T) {
		for _, v := range envNames(t) {
			assert.True(t, strings.Contains(lang, "`"+v), "environment variable %s is not in docs/language.md", v)
		}
		assert.True(t, strings.Contains(lang, "`NO_COLOR`"), "NO_COLOR is not in docs/language.md")
	})
	t.Run("links", func(t *testing.T) {
		for _, doc := range docFiles {
			checkLinks(t, doc)
		}
	})
}

// section returns the text from a heading to the next heading of the same
// or a higher level.
func section(doc, heading string) string {
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+1+len(heading):]
	level := strings.Count(strings.Fields(heading)[0], "#")
	re := regexp.MustCompile(`(?m)^#{1,` + strconv.Itoa(level) + `} `)
	if loc := re.FindStringIndex(rest); loc != nil {
		rest = rest[:loc[0]]
	}
	return rest
}

// helpCommands lists the commands of `cairn --help` (help and completion
// aside).
func helpCommands(help string) []string {
	var out []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "Available Commands:"):
			in = true
		case in && strings.TrimSpace(l) == "":
			in = false
		case in:
			name := strings.Fields(l)[0]
			if name != "help" && name != "completion" {
				out = append(out, name)
			}
		}
	}
	return out
}

var flagRe = regexp.MustCompile(`^\s+(?:-[a-zA-Z], )?(--[a-z][a-z-]*)`)

// helpFlags lists the long flags of a command's help, --help aside.
func helpFlags(help string) []string {
	var out []string
	for _, l := range strings.Split(help, "\n") {
		if m := flagRe.FindStringSubmatch(l); m != nil && m[1] != "--help" {
			out = append(out, m[1])
		}
	}
	return out
}

var envRe = regexp.MustCompile(`"(CAIRN_[A-Z_]+)`)

// envNames lists the CAIRN_* environment variables cairn's code (tests
// aside) reads or sets, test hooks aside.
func envNames(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != ".." && (strings.HasPrefix(d.Name(), ".") || otherModule(p, "..")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range envRe.FindAllStringSubmatch(string(src), -1) {
			v := m[1]
			if strings.Contains(v, "_TEST_") || strings.HasSuffix(v, "_HELPER") {
				continue
			}
			seen[v] = true
		}
		return nil
	})
	require.NoError(t, err)
	var out []string
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	require.Contains(t, out, "CAIRN_GPUS")
	return out
}

var (
	headingRe = regexp.MustCompile("(?m)^#+ (.+)$")
	linkRe    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// anchor is the id GitHub gives a heading.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// checkLinks checks a document's relative links: files exist, anchors
// name headings.
func checkLinks(t *testing.T, doc string) {
	src := readDoc(t, doc)
	anchorsOf := func(text string) map[string]bool {
		out := map[string]bool{}
		for _, m := range headingRe.FindAllStringSubmatch(text, -1) {
			out[anchor(strings.TrimSpace(m[1]))] = true
		}
		return out
	}
	for _, m := range linkRe.FindAllStringSubmatch(src, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, frag, _ := strings.Cut(target, "#")
		text := src
		if file != "" {
			p := filepath.Join(filepath.Dir(doc), filepath.FromSlash(file))
			b, err := os.ReadFile(p)
			if !assert.NoError(t, err, "%s links to %s", doc, target) {
				continue
			}
			text = string(b)
		}
		if frag != "" {
			assert.True(t, anchorsOf(text)[frag], "%s links to %s: no such heading", doc, target)
		}
	}
}

// TestWorkedKeyExample recomputes docs/keys.md's worked example by hand:
// the sha256 of each documented envelope must be the documented key and
// the key `cairn plan --json` prints; the sha256 of the documented output
// digest document must be the documented digest and the one the cache
// recorded.
func TestWorkedKeyExample(t *testing.T) {
	blocks := parseDoc(t, "keys.md")
	exs := examples(t, blocks)
	byName := map[string]example{}
	for _, ex := range exs {
		byName[ex.pipeline.attr("name")] = ex
	}
	type doc struct{ envelope, key, outDoc, digest *block }
	nodes := map[string]map[string]*doc{} // example -> node -> documented values
	for i := range blocks {
		b := &blocks[i]
		switch b.marker {
		case "envelope", "key", "output-digest", "digest":
		default:
			continue
		}
		name, node := b.attr("name"), b.attr("node")
		require.NotEmpty(t, name, "%s: needs name=", b.where())
		require.NotEmpty(t, node, "%s: needs node=", b.where())
		if nodes[name] == nil {
			nodes[name] = map[string]*doc{}
		}
		d := nodes[name][node]
		if d == nil {
			d = &doc{}
			nodes[name][node] = d
		}
		switch b.marker {
		case "envelope":
			d.envelope = b
		case "key":
			d.key = b
		case "output-digest":
			d.outDoc = b
		case "digest":
			d.digest = b
		}
	}
	require.NotEmpty(t, nodes, "keys.md documents no envelope")
	trees := 0
	for _, b := range blocks {
		if b.marker != "tree" {
			continue
		}
		ex, ok := byName[b.attr("name")]
		require.True(t, ok, "%s: no full pipeline named %s", b.where(), b.attr("name"))
		dir := ex.workspace(t)
		got := treeDigest(t, filepath.Join(dir, filepath.FromSlash(b.attr("path"))))
		assert.Equal(t, strings.TrimSpace(b.body), got, "%s: tree digest of %s by the documented encoding", b.where(), b.attr("path"))
		trees++
	}
	assert.GreaterOrEqual(t, trees, 1)
	envelopes := 0
	for name, docs := range nodes {
		ex, ok := byName[name]
		require.True(t, ok, "keys.md: no full pipeline named %s", name)
		t.Run(name, func(t *testing.T) {
			dir := ex.workspace(t)
			env := ex.pipeline.attrs["env"]
			if ex.pipeline.flags["apply"] {
				r := cairn(t, dir, env, append([]string{"apply", "pipeline.hcl"}, ex.vars()...)...)
				require.Equal(t, 0, r.code, "apply:\n%s%s", r.stdout, r.stderr)
			}
			r := cairn(t, dir, env, append([]string{"plan", "--json", "pipeline.hcl"}, ex.vars()...)...)
			require.Equal(t, 0, r.code, r.stderr)
			var plan struct {
				Nodes []struct{ Address, Key string }
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &plan))
			planKeys := map[string]string{}
			for _, n := range plan.Nodes {
				planKeys[n.Address] = n.Key
			}
			for node, d := range docs {
				require.NotNil(t, d.envelope, "%s: no documented envelope", node)
				require.NotNil(t, d.key, "%s: no documented key", node)
				envelopes++
				env := strings.TrimSuffix(d.envelope.body, "\n")
				require.True(t, json.Valid([]byte(env)), "%s: the envelope is not JSON", d.envelope.where())
				sum := sha256.Sum256([]byte(env))
				byHand := hex.EncodeToString(sum[:])
				docKey := strings.TrimSpace(d.key.body)
				assert.Equal(t, docKey, byHand, "%s: sha256 of the documented envelope", d.envelope.where())
				assert.Equal(t, planKeys[node], byHand, "%s: plan --json key of %s", d.envelope.where(), node)

				// The record in the cache holds the same envelope.
				if ex.pipeline.flags["apply"] {
					s := cairn(t, dir, nil, "show", byHand)
					require.Equal(t, 0, s.code, s.stderr)
					var rec struct {
						Envelope     json.RawMessage `json:"envelope"`
						OutputDigest string          `json:"output_digest"`
					}
					require.NoError(t, json.Unmarshal([]byte(s.stdout), &rec))
					var compact bytes.Buffer
					require.NoError(t, json.Compact(&compact, rec.Envelope))
					// The same value; cairn show writes <, > and & as
					// they are, where canonical JSON escapes them.
					assert.JSONEq(t, env, compact.String(), "the envelope cairn show prints")
					if d.outDoc != nil {
						require.NotNil(t, d.digest, "%s: no documented output digest", node)
						od := strings.TrimSuffix(d.outDoc.body, "\n")
						sum := sha256.Sum256([]byte(od))
						got := hex.EncodeToString(sum[:])
						assert.Equal(t, strings.TrimSpace(d.digest.body), got, "%s: sha256 of the documented output digest document", d.outDoc.where())
						assert.Equal(t, rec.OutputDigest, got, "%s: the output digest cairn recorded", node)
					}
				}
			}
		})
	}
	assert.GreaterOrEqual(t, envelopes, 2)
}

// treeDigest computes a directory's digest by the encoding docs/keys.md
// documents: "cairn.tree.v1\n", then per entry, depth first in byte order
// of names, PATH NUL (x|-) NUL SHA256 LF for files, PATH/ NUL d LF for empty
// directories, PATH NUL l NUL TARGET LF for symbolic links.
func treeDigest(t *testing.T, root string) string {
	t.Helper()
	var enc bytes.Buffer
	enc.WriteString("cairn.tree.v1\n")
	var walk func(dir, rel string)
	walk = func(dir, rel string) {
		ents, err := os.ReadDir(dir) // sorted by name, byte order
		require.NoError(t, err)
		if len(ents) == 0 && rel != "" {
			enc.WriteString(rel + "/\x00d\n")
			return
		}
		for _, e := range ents {
			p := e.Name()
			if rel != "" {
				p = rel + "/" + p
			}
			full := filepath.Join(dir, e.Name())
			switch {
			case e.IsDir():
				walk(full, p)
			case e.Type()&fs.ModeSymlink != 0:
				target, err := os.Readlink(full)
				require.NoError(t, err)
				target = strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(target)
				enc.WriteString(p + "\x00l\x00" + target + "\n")
			default:
				b, err := os.ReadFile(full)
				require.NoError(t, err)
				fi, err := e.Info()
				require.NoError(t, err)
				x := "-"
				if fi.Mode()&0o111 != 0 {
					x = "x"
				}
				sum := sha256.Sum256(b)
				enc.WriteString(p + "\x00" + x + "\x00" + hex.EncodeToString(sum[:]) + "\n")
			}
		}
	}
	walk(root, "")
	sum := sha256.Sum256(enc.Bytes())
	return hex.EncodeToString(sum[:])
}
