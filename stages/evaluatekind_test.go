package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/process"
	"github.com/cairn-run/cairn/sim/simmodel"
	"github.com/cairn-run/cairn/stages/items"
	"github.com/cairn-run/cairn/ui"
)

func strs(ss ...string) cty.Value {
	vs := make([]cty.Value, len(ss))
	for i, s := range ss {
		vs[i] = cty.StringVal(s)
	}
	return cty.TupleVal(vs)
}

// evalArgs are valid attributes of an evaluate node.
func evalArgs() map[string]cty.Value {
	return map[string]cty.Value{
		"worker":  strs("python3", "worker.py"),
		"items":   cty.StringVal("data/items.jsonl"),
		"bundle":  strs("bundle/"),
		"model":   cty.StringVal("sim-model"),
		"runtime": cty.ObjectVal(map[string]cty.Value{"topology": cty.StringVal("single"), "team_size": cty.NumberIntVal(3), "temperature": cty.NumberFloatVal(0.7)}),
		"scores":  cty.StringVal("out/scores.jsonl"),
	}
}

func TestEvaluateCheck(t *testing.T) {
	cases := []struct {
		name string
		set  map[string]cty.Value
		want string // "" for no error
	}{
		{"valid", nil, ""},
		{"inline items", map[string]cty.Value{"items": cty.TupleVal([]cty.Value{
			cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("a"), "question": cty.StringVal("What is 1 + 1?")}),
		})}, ""},
		{"unknown values pass", map[string]cty.Value{
			"worker": cty.UnknownVal(cty.List(cty.String)), "items": cty.DynamicVal, "runtime": cty.DynamicVal,
			"max_in_flight": cty.UnknownVal(cty.Number), "scores": cty.UnknownVal(cty.String),
		}, ""},
		{"endpoints as one string", map[string]cty.Value{"endpoints": cty.StringVal("http://a/v1,http://b/v1")}, ""},
		{"empty worker", map[string]cty.Value{"worker": cty.EmptyTupleVal}, "worker must name a program"},
		{"worker not a list", map[string]cty.Value{"worker": cty.StringVal("python3 w.py")}, "worker is the worker's argument list"},
		{"items a number", map[string]cty.Value{"items": cty.NumberIntVal(3)}, "items is the path of a JSONL or JSON dataset file"},
		{"absolute items", map[string]cty.Value{"items": cty.StringVal("/data/items.jsonl")}, "not a workspace-relative path"},
		{"items leave the workspace", map[string]cty.Value{"items": cty.StringVal("../items.jsonl")}, "not a workspace-relative path"},
		{"bundle leaves the workspace", map[string]cty.Value{"bundle": strs("ok.txt", "../x")}, "not a workspace-relative path"},
		{"empty model", map[string]cty.Value{"model": cty.StringVal(" ")}, "model is the task model's id"},
		{"runtime a string", map[string]cty.Value{"runtime": cty.StringVal("tp=2")}, "runtime is an object"},
		{"zero replicas", map[string]cty.Value{"replicas": cty.NumberIntVal(0)}, "replicas must be a whole number from 1 to 1048576"},
		{"fractional max_in_flight", map[string]cty.Value{"max_in_flight": cty.NumberFloatVal(1.5)}, "max_in_flight must be a whole number"},
		{"negative retry_infra", map[string]cty.Value{"retry_infra": cty.NumberIntVal(-1)}, "retry_infra must be a whole number from 0 to 1048576"},
		{"bad item_timeout", map[string]cty.Value{"item_timeout": cty.StringVal("soon")}, `"soon" is not a duration`},
		{"zero item_timeout", map[string]cty.Value{"item_timeout": cty.StringVal("0s")}, "item_timeout must be positive"},
		{"item_timeout in hex seconds", map[string]cty.Value{"item_timeout": cty.StringVal("0x1p4")}, `"0x1p4" is not a duration`},
		{"item_timeout of infinite seconds", map[string]cty.Value{"item_timeout": cty.StringVal("inf")}, `"inf" is not a duration`},
		{"item_timeout too large", map[string]cty.Value{"item_timeout": cty.NumberFloatVal(1e30)}, "item_timeout = 1e+30 (seconds) is too large: a duration is at most 2562047h47m16s (about 292 years)."},
		{"item_timeout too large in Go's syntax", map[string]cty.Value{"item_timeout": cty.StringVal("99999999999h")}, `"99999999999h" is too large: a duration is at most 2562047h47m16s`},
		{"empty item_id", map[string]cty.Value{"item_id": cty.StringVal("")}, "item_id names the field"},
		{"gpus", map[string]cty.Value{"gpus": cty.NumberIntVal(1)}, "An evaluate stage leases no GPU"},
		{"absolute scores", map[string]cty.Value{"scores": cty.StringVal("/tmp/s.jsonl")}, "not a workspace-relative path"},
		{"needed false", map[string]cty.Value{"needed": cty.False}, ""},
		{"needed unknown", map[string]cty.Value{"needed": cty.UnknownVal(cty.Bool)}, ""},
		{"needed a string", map[string]cty.Value{"needed": cty.StringVal("yes")}, `needed must be true or false (like !fileexists("selection.json")), not the string "yes".`},
		{"needed a number", map[string]cty.Value{"needed": cty.NumberIntVal(5)}, "needed must be true or false (like !fileexists(\"selection.json\")), not the number 5."},
		{"inline items with one id twice", map[string]cty.Value{"items": cty.TupleVal([]cty.Value{
			cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("a")}),
			cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("a")}),
		})}, `item 0 of the items list and item 1 of the items list have the same id "a"; ids must be unique`},
		{"inline items, one without an id", map[string]cty.Value{"items": cty.TupleVal([]cty.Value{
			cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("a")}),
			cty.ObjectVal(map[string]cty.Value{"q": cty.StringVal("b")}),
		})}, `item 1 of the items list has no field "id"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := evalArgs()
			for k, v := range tc.set {
				args[k] = v
			}
			n := &Node{Address: "stage.e", Args: args, Ranges: map[string]hcl.Range{}}
			if v, ok := args["gpus"]; ok {
				n.Common.GPUs = int(v.AsBigFloat().Sign())
			}
			diags := Evaluate{}.Check(n)
			if tc.want == "" {
				assert.False(t, diags.HasErrors(), "%s", diags.Error())
				return
			}
			require.True(t, diags.HasErrors())
			assert.Contains(t, diags.Error(), tc.want)
		})
	}
}

func TestEvaluateSchemaAndKey(t *testing.T) {
	k, ok := Lookup("evaluate")
	require.True(t, ok)
	var names []string
	for _, a := range k.Schema().Attributes {
		names = append(names, a.Name)
	}
	for _, want := range []string{"worker", "items", "item_id", "bundle", "model", "runtime", "endpoints", "replicas", "max_in_flight", "item_timeout", "retry_infra", "endpoint_concurrency", "scores"} {
		assert.Contains(t, names, want)
	}
	// What changes a result is keyed; where and how fast requests go is not.
	excl := k.(KeyExcluder).KeyExcluded()
	for _, a := range []string{"endpoints", "replicas", "max_in_flight", "item_timeout", "retry_infra", "endpoint_concurrency"} {
		assert.Contains(t, excl, a)
	}
	for _, a := range []string{"worker", "items", "item_id", "bundle", "model", "runtime", "scores"} {
		assert.NotContains(t, excl, a)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func TestLoadItems(t *testing.T) {
	cases := []struct {
		name    string
		file    string
		itemID  string
		wantIDs []string
		wantErr string
	}{
		{"jsonl", "{\"id\":\"a\",\"q\":1}\n\n{\"id\":\"b\",\"q\":2}\n", "", []string{"a", "b"}, ""},
		{"json array", `[{"id":"a"},{"id":"b"},{"id":"c"}]`, "", []string{"a", "b", "c"}, ""},
		{"spaces and member order", "{ \"q\": [1, 2],  \"id\" : \"b\\u00e9\" }\r\n", "", []string{"bé"}, ""},
		{"numeric ids", "{\"id\":7}\n{\"id\":8.5}\n", "", []string{"7", "8.5"}, ""},
		{"another field", "{\"qid\":\"x1\"}\n{\"qid\":\"x2\"}\n", "qid", []string{"x1", "x2"}, ""},
		{"no ids: positions", "{\"q\":1}\n{\"q\":2}\n\"a string item\"\n", "", []string{"0", "1", "2"}, ""},
		{"some ids missing", "{\"id\":\"a\"}\n{\"q\":2}\n", "", nil, `items.jsonl:2 has no field "id"`},
		{"declared field missing", "{\"id\":\"a\"}\n", "qid", nil, `items.jsonl:1 has no field "qid"`},
		{"duplicate ids", "{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"a\"}\n", "", nil, `items.jsonl:1 and items.jsonl:3 have the same id "a"`},
		{"ids one in NFC", "{\"id\":\"caf\u00e9\"}\n{\"id\":\"cafe\u0301\"}\n", "", nil, `items.jsonl:1 and items.jsonl:2 have ids "caf\u00e9" and "cafe\u0301", the same text in Unicode's NFC`},
		{"object id", "{\"id\":{\"x\":1}}\n", "", nil, "the id must be a string or a number"},
		{"bad line", "{\"id\":\"a\"}\n{\"id\": \n", "", nil, "items.jsonl:2 is not one JSON value"},
		{"bad array", `[{"id":"a"},`, "", nil, "items.jsonl is not valid JSON at line 1, column 13"},
		{"array, bad item", "[\n  {\"id\":\"a\"},\n  {\"id\":\"b\",}\n]\n", "", nil, "items.jsonl is not valid JSON at line 3, column 13: invalid character '}'"},
		{"array, id missing", "[\n  {\"id\":\"a\"},\n\n  {\"q\":2}\n]", "", nil, `items.jsonl:4 (item 1) has no field "id"`},
		{"array, duplicate ids", "[{\"id\":\"a\"},\n {\"id\":\"b\"}, {\"id\":\"a\"}]", "", nil, `items.jsonl:1 (item 0) and items.jsonl:2 (item 2) have the same id "a"`},
		{"array, null item", "[{\"id\":\"a\"},\n null]", "", nil, `items.jsonl:2 (item 1) is null`},
		{"NaN", "{\"id\":\"a\"}\n  {\"id\":\"b\",\"q\":NaN}\n", "", nil, `items.jsonl:2 is not one JSON value (a JSONL dataset has one item per line): it is not valid JSON at column 17: invalid character 'N' looking for beginning of value. JSON has no NaN or Infinity (Python's json.dump writes them unless allow_nan=False): write null`},
		{"Infinity", "{\"id\":\"a\",\"q\":-Infinity}\n", "", nil, `items.jsonl:1 is not one JSON value (a JSONL dataset has one item per line): it is not valid JSON at column 16: invalid character 'I' in numeric literal. JSON has no NaN or Infinity`},
		{"byte-order mark", "\ufeff{\"id\":\"a\"}\n", "", nil, "the dataset items.jsonl starts with a UTF-8 byte-order mark"},
		{"not UTF-8", "{\"id\":\"a\",\"q\":\"\xfe\"}\n", "", nil, "items.jsonl:1 is not one JSON value (a JSONL dataset has one item per line): a string holds bytes that are not UTF-8"},
		// What readers take differently, at file:line:col.
		{"id twice", "{\"id\":\"a\"}\n  {\"id\":\"b\",\"id\":\"c\"}\n", "", nil, `items.jsonl:2:13: the key "id" is given twice in one object: JSON readers disagree on which one counts, so give it once`},
		{"nested key twice", "{\"id\":\"é\",\"x\":{\"k\":1,\"k\":2}}\n", "", nil, `items.jsonl:1:22: the key "k" is given twice`},
		{"number beyond float64", "{\"id\":\"a\",\"x\":[1e400]}\n", "", nil, `items.jsonl:1:16: the number 1e400 is beyond what a float64 holds`},
		{"array, number beyond float64", "[{\"id\":\"a\"},\n {\"id\":\"b\",\"x\":-1e-400}]", "", nil, `items.jsonl:2 (item 1): the number -1e-400 is beyond what a float64 holds`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFile(t, filepath.Join(root, "items.jsonl"), tc.file)
			s := evalSpec{itemsPath: "items.jsonl", itemID: "id"}
			if tc.itemID != "" {
				s.itemID, s.itemIDSet = tc.itemID, true
			}
			got, err := loadItems(root, s)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			var ids []string
			for _, it := range got {
				ids = append(ids, it.ID)
				canon, err := items.Canonical(it.Data)
				require.NoError(t, err)
				assert.Equal(t, string(canon), string(it.Data), "loaded in canonical form")
				assert.True(t, it.Canonical)
			}
			assert.Equal(t, tc.wantIDs, ids)
		})
	}
}

func TestDigests(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a/bundle/system.txt"), "be brief")
	writeFile(t, filepath.Join(root, "a/bundle/sub/few_shot.json"), "[]")
	writeFile(t, filepath.Join(root, "b/copy/system.txt"), "be brief")
	writeFile(t, filepath.Join(root, "b/copy/sub/few_shot.json"), "[]")
	writeFile(t, filepath.Join(root, "w1/worker.py"), "print('v1')")
	writeFile(t, filepath.Join(root, "w2/renamed.py"), "print('v1')")

	// The bundle's content identifies it, not where it lives.
	da, err := bundleDigest(root, []string{"a/bundle"})
	require.NoError(t, err)
	db, err := bundleDigest(root, []string{"b/copy"})
	require.NoError(t, err)
	assert.Equal(t, da, db)
	assert.True(t, strings.HasPrefix(da, "sha256:"))
	writeFile(t, filepath.Join(root, "b/copy/sub/few_shot.json"), "[1]")
	db, err = bundleDigest(root, []string{"b/copy"})
	require.NoError(t, err)
	assert.NotEqual(t, da, db, "content changed")
	// Python's bytecode caches are left out, as the node's key leaves
	// them out of the bundle's folders.
	writeFile(t, filepath.Join(root, "a/bundle/__pycache__/m.pyc"), "c")
	writeFile(t, filepath.Join(root, "a/bundle/sub/__pycache__/n.pyc"), "c")
	dp, err := bundleDigest(root, []string{"a/bundle"})
	require.NoError(t, err)
	assert.Equal(t, da, dp, "__pycache__ left out")
	dFile, err := bundleDigest(root, []string{"a/bundle/system.txt"})
	require.NoError(t, err)
	assert.NotEqual(t, da, dFile)
	_, err = bundleDigest(root, []string{"missing"})
	assert.ErrorContains(t, err, "bundle missing")

	// Links count as what they point to, a folder's as its files: a
	// bundle of links is its copy; one leading outside the workspace is
	// refused.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "c/linked"), 0o755))
	require.NoError(t, os.Symlink("../../a/bundle/system.txt", filepath.Join(root, "c/linked/system.txt")))
	require.NoError(t, os.Symlink("../../a/bundle/sub", filepath.Join(root, "c/linked/sub")))
	dc, err := bundleDigest(root, []string{"c/linked"})
	require.NoError(t, err)
	assert.Equal(t, da, dc)
	require.NoError(t, bundleLinkProblem(nil, root, []string{"c/linked"}))
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(root, "c/linked/out")))
	assert.ErrorContains(t, bundleLinkProblem(nil, root, []string{"a/bundle", "c/linked"}), "bundle c/linked holds c/linked/out, a link to ")
	assert.ErrorContains(t, bundleLinkProblem(nil, root, []string{"c/linked"}), "Copy what the link points to into the workspace, or point the link at a file inside it")

	// A broken link, a link back into a folder above it and a loop of
	// links are refused too, each named where it lies, with what to do.
	require.NoError(t, os.Remove(filepath.Join(root, "c/linked/out")))
	for _, c := range []struct{ link, to, named string }{{"gone", "old-run", "gone"}, {"up", "..", "up"}, {"y", "x", "y"}, {"x", "y", "x"}} {
		require.NoError(t, os.Symlink(c.to, filepath.Join(root, "c/linked", c.link)))
		if c.link == "y" {
			continue // broken until x is made: a loop of two links
		}
		err := bundleLinkProblem(nil, root, []string{"c/linked"})
		assert.ErrorContains(t, err, "bundle c/linked holds c/linked/"+c.named+", a link to "+c.to+", which ")
		assert.ErrorContains(t, err, "Remove the link, or point it at a file in the workspace")
		require.NoError(t, os.Remove(filepath.Join(root, "c/linked", c.link)))
	}
	require.NoError(t, os.Remove(filepath.Join(root, "c/linked/y")))

	// The worker's code identifies it, not its file's name.
	w1, err := argvDigest(root, []string{"python3", "w1/worker.py", "--flag"})
	require.NoError(t, err)
	w2, err := argvDigest(root, []string{"python3", "./w2/renamed.py", "--flag"})
	require.NoError(t, err)
	assert.Equal(t, w1, w2)
	w3, err := argvDigest(root, []string{"python3", "w1/worker.py", "--other"})
	require.NoError(t, err)
	assert.NotEqual(t, w1, w3, "arguments count")
	writeFile(t, filepath.Join(root, "w2/renamed.py"), "print('v2')")
	w2, err = argvDigest(root, []string{"python3", "./w2/renamed.py", "--flag"})
	require.NoError(t, err)
	assert.NotEqual(t, w1, w2, "code changed")

	// A file named after "=" in its argument, or by an absolute path
	// inside the workspace, is identified by its content as well.
	writeFile(t, filepath.Join(root, "prompts/p.txt"), "P1")
	for k, argv := range [][]string{
		{"python3", "w1/worker.py", "--prompt=prompts/p.txt"},
		{"python3", "w1/worker.py", "prompt_file=prompts/p.txt"},
		{"python3", filepath.Join(root, "w1/worker.py")},
	} {
		before, err := argvDigest(root, argv)
		require.NoError(t, err)
		writeFile(t, filepath.Join(root, "prompts/p.txt"), fmt.Sprintf("P%d", k+2))
		writeFile(t, filepath.Join(root, "w1/worker.py"), fmt.Sprintf("print('v%d')", k+3))
		after, err := argvDigest(root, argv)
		require.NoError(t, err)
		assert.NotEqual(t, before, after, "%q: a file it names changed", argv)
	}
	f1, err := argvDigest(root, []string{"python3", "w1/worker.py", "--prompt=prompts/p.txt"})
	require.NoError(t, err)
	f2, err := argvDigest(root, []string{"python3", "w1/worker.py", "--system=prompts/p.txt"})
	require.NoError(t, err)
	assert.NotEqual(t, f1, f2, "the flag before the file counts")
	moved, err := argvDigest(root, []string{"python3", filepath.Join(root, "w1/worker.py")})
	require.NoError(t, err)
	rel, err := argvDigest(root, []string{"python3", "w1/worker.py"})
	require.NoError(t, err)
	assert.Equal(t, rel, moved, "an absolute path inside the workspace is its file, wherever the workspace is")
}

// A workspace reached through a link (~/work to a data disk): a worker
// named by the path the link leads to is a file of the workspace, keyed
// by its content, as when it is named through the link, and the other way
// round.
func TestWorkerFilesThroughALinkedWorkspace(t *testing.T) {
	top := t.TempDir()
	real := filepath.Join(top, "real")
	writeFile(t, filepath.Join(real, "worker.py"), "print('v1')")
	link := filepath.Join(top, "link")
	require.NoError(t, os.Symlink("real", link))
	for _, c := range []struct{ root, named string }{{link, real}, {real, link}} {
		writeFile(t, filepath.Join(real, "worker.py"), "print('v1')")
		argv := []string{"python3", filepath.Join(c.named, "worker.py")}
		files := workerFiles(nil, c.root, argv)
		require.Len(t, files, 1, "root %s, worker named through %s", c.root, c.named)
		assert.Equal(t, "worker.py", files[0].path)
		before, err := argvDigest(c.root, argv)
		require.NoError(t, err)
		rel, err := argvDigest(c.root, []string{"python3", "worker.py"})
		require.NoError(t, err)
		assert.Equal(t, rel, before, "the same file as named from the workspace")
		writeFile(t, filepath.Join(real, "worker.py"), "print('v2')")
		after, err := argvDigest(c.root, argv)
		require.NoError(t, err)
		assert.NotEqual(t, before, after, "the worker was edited")
		got := Evaluate{}.DeclaredInputs(&Node{Args: map[string]cty.Value{"worker": strs(argv...)}}, c.root)
		assert.Contains(t, got, DeclaredPath{"worker", "worker.py"}, "it keys the node too")
	}
	// A file outside the workspace still counts by its path.
	writeFile(t, filepath.Join(top, "elsewhere/w.py"), "")
	assert.Empty(t, workerFiles(nil, link, []string{"python3", filepath.Join(top, "elsewhere/w.py")}))
}

// argvDigest is the digest of a worker argv naming no folder, of a stage
// without inputs.
func argvDigest(root string, argv []string) (string, error) {
	return workerDigest(root, workerFiles(nil, root, argv), argv, nil, nil)
}

func TestDeclaredInputs(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "worker.py"), "")
	writeFile(t, filepath.Join(root, "prompts/system.txt"), "")
	args := evalArgs()
	writeFile(t, filepath.Join(root, "prompts/user.txt"), "")
	writeFile(t, filepath.Join(root, "conf.yaml"), "")
	args["worker"] = strs("python3", "-u", "worker.py", "--system-prompt-file", "prompts/system.txt", "--url=http://x/v1", "not-a-file",
		"--user=prompts/user.txt", filepath.Join(root, "conf.yaml"), "/etc/hostname")
	got := Evaluate{}.DeclaredInputs(&Node{Args: args}, root)
	worker := declaredPaths("worker", "worker.py", "prompts/system.txt", "prompts/user.txt", "conf.yaml")
	assert.Equal(t, append([]DeclaredPath{{"items", "data/items.jsonl"}, {"bundle", "bundle"}}, worker...), got)

	// A folder counts too, but not the workspace itself, nor one holding
	// the scores the node writes.
	args["worker"] = strs("python3", "worker.py", "--prompt-dir", "prompts", "--root", ".", "--log-dir=out")
	writeFile(t, filepath.Join(root, "out/old.log"), "")
	got = Evaluate{}.DeclaredInputs(&Node{Args: args}, root)
	assert.Equal(t, []DeclaredPath{{"items", "data/items.jsonl"}, {"bundle", "bundle"}, {"worker", "worker.py"}, {"worker", "prompts"}}, got)

	args["items"] = cty.TupleVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("a")})})
	args["worker"] = strs("python3", "-u", "worker.py", "--system-prompt-file", "prompts/system.txt", "--url=http://x/v1", "not-a-file",
		"--user=prompts/user.txt", filepath.Join(root, "conf.yaml"), "/etc/hostname")
	got = Evaluate{}.DeclaredInputs(&Node{Args: args}, root)
	assert.Equal(t, append([]DeclaredPath{{"bundle", "bundle"}}, worker...), got, "inline items are keyed as an attribute")
}

// fakeRuntime is a Runtime for running evaluate nodes without the engine.
type fakeRuntime struct {
	root, cache, out string
	stderr           bytes.Buffer
	mu               sync.Mutex
	journal          []ItemRecord
	started          []string
}

func (r *fakeRuntime) Exec(context.Context, Proc) (*process.Result, error) {
	return nil, fmt.Errorf("the evaluate kind starts no supervised process")
}
func (r *fakeRuntime) Root() string     { return r.root }
func (r *fakeRuntime) OutDir() string   { return r.out }
func (r *fakeRuntime) CacheDir() string { return r.cache }
func (r *fakeRuntime) RunID() string    { return "test-run" }
func (r *fakeRuntime) NoSync() bool     { return true } // tests need no fsync

// Emit shows the kind's events as the terminal does, in stderr.
func (r *fakeRuntime) Emit(e events.Event) {
	ui.NewTerminal(ui.Options{Progress: writerFunc(func(b []byte) (int, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.stderr.Write(b)
	})}).Emit(e)
}
func (r *fakeRuntime) NodeStarted(logs ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, logs...)
	return nil
}
func (r *fakeRuntime) JournalItems(recs []ItemRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.journal = append(r.journal, recs...)
	return nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// evalWorkspace is a workspace with the chat worker, a bundle and a dataset
// of n arithmetic questions.
func evalWorkspace(t *testing.T, n int) *fakeRuntime {
	t.Helper()
	root := t.TempDir()
	src, err := os.ReadFile("../testdata/workers/chat_worker.py")
	require.NoError(t, err)
	writeFile(t, filepath.Join(root, "worker.py"), string(src))
	writeFile(t, filepath.Join(root, "bundle/system.txt"), "Answer with a number.")
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"id\":\"q%03d\",\"question\":\"What is %d + %d?\",\"answer\":\"%d\"}\n", i, i, 2*i, 3*i)
	}
	writeFile(t, filepath.Join(root, "data/items.jsonl"), b.String())
	out := t.TempDir()
	return &fakeRuntime{root: root, cache: t.TempDir(), out: out}
}

func evalNode(endpoints ...string) *Node {
	args := evalArgs()
	args["worker"] = strs("python3", "worker.py", "--system-prompt-file", "bundle/system.txt")
	args["max_in_flight"] = cty.NumberIntVal(4)
	if len(endpoints) > 0 {
		args["endpoints"] = strs(endpoints...)
	}
	return &Node{Address: "stage.eval", Stage: "eval", Args: args, Ranges: map[string]hcl.Range{}, Key: strings.Repeat("ab", 32)}
}

func simServer(t *testing.T, cfg simmodel.Config) *simmodel.Running {
	t.Helper()
	srv, err := simmodel.Start(cfg, "")
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv
}

func noEndpointEnv(t *testing.T) {
	t.Setenv("TASK_ENDPOINTS", "")
	t.Setenv("VLLM_BASE_URL", "")
}

// An evaluation with no scored item has no mean: mean_score is null,
// never a 0 that reads as a figure.
func TestEvaluateMeanOfNothingIsNull(t *testing.T) {
	if _, err := os.Stat("/usr/bin/env"); err != nil {
		t.Skip("no /usr/bin/env")
	}
	noEndpointEnv(t)
	rt := evalWorkspace(t, 0)
	out, err := Evaluate{}.Run(context.Background(), evalNode(), rt)
	require.NoError(t, err)
	require.Empty(t, out.Class, out.Message)
	assert.Contains(t, string(out.Result), `"mean_score":null`)
	var res EvaluateResult
	require.NoError(t, json.Unmarshal(out.Result, &res))
	assert.Zero(t, res.ItemCount)
	assert.Zero(t, res.Scored)
	assert.Nil(t, res.MeanScore)
}

func TestEvaluateRun(t *testing.T) {
	if _, err := os.Stat("/usr/bin/env"); err != nil {
		t.Skip("no /usr/bin/env")
	}
	noEndpointEnv(t)
	ctx := context.Background()

	t.Run("evaluates, then another node reads the store", func(t *testing.T) {
		rt := evalWorkspace(t, 25)
		srv := simServer(t, simmodel.Config{WrongRate: 0.2})
		out, err := Evaluate{}.Run(ctx, evalNode(srv.URL), rt)
		require.NoError(t, err)
		require.Empty(t, out.Class, out.Message)
		var res EvaluateResult
		require.NoError(t, json.Unmarshal(out.Result, &res))
		assert.Equal(t, 25, res.ItemCount)
		assert.Equal(t, 25, out.RunCounts["evaluated"])
		assert.Zero(t, out.RunCounts["from_store"])
		assert.Equal(t, 25, out.RunCounts["charged"])
		assert.Equal(t, 25, out.RunCounts["attempted"])
		assert.Equal(t, 25, srv.ChatRequests())
		assert.Equal(t, "out/scores.jsonl", res.ScoresFile)
		assert.Equal(t, []string{"out/scores.jsonl"}, out.Files)
		scores, err := os.ReadFile(filepath.Join(rt.root, "out/scores.jsonl"))
		require.NoError(t, err)
		assert.Equal(t, digestBytes(scores), res.ScoresDigest)
		assert.Equal(t, 25, bytes.Count(scores, []byte("\n")))
		// The mean is over the scores the worker reported.
		var sum float64
		for _, line := range bytes.Split(bytes.TrimSpace(scores), []byte("\n")) {
			var l struct{ Score float64 }
			require.NoError(t, json.Unmarshal(line, &l))
			sum += l.Score
		}
		require.NotNil(t, res.MeanScore)
		assert.InDelta(t, sum/25, *res.MeanScore, 1e-9)
		assert.Less(t, *res.MeanScore, 1.0, "the simulated model answers some questions wrongly")
		assert.Len(t, rt.journal, 25, "one journal record per item")
		require.Len(t, rt.started, 1)
		assert.FileExists(t, rt.started[0], "the worker log")
		// One line every 10 charged rollouts, and one at the end.
		lines := strings.Split(strings.TrimRight(rt.stderr.String(), "\n"), "\n")
		require.Len(t, lines, 3, rt.stderr.String())
		assert.Regexp(t, `^  · stage\.eval  charged 10, attempted \d+, infra-failures 0; items 10/25: 10 evaluated, 0 from the store, 0 failed$`, lines[0])
		assert.Regexp(t, `^  · stage\.eval  charged 20, attempted \d+, infra-failures 0; items 20/25: 20 evaluated`, lines[1])
		assert.Equal(t, "  · stage.eval  charged 25, attempted 25, infra-failures 0; items 25/25: 25 evaluated, 0 from the store, 0 failed", lines[2])

		// The same node again, answered wholly from the store: the same
		// result, so its downstream stays cached; the counts differ.
		again, err := Evaluate{}.Run(ctx, evalNode(srv.URL), rt)
		require.NoError(t, err)
		require.Empty(t, again.Class, again.Message)
		assert.Equal(t, string(out.Result), string(again.Result))
		assert.Equal(t, 25, again.RunCounts["from_store"])
		assert.Zero(t, again.RunCounts["evaluated"])

		// Another node (another stage, scores path and endpoint order)
		// over the same items: everything from the store.
		n := evalNode(srv.URL, srv.URL)
		n.Address = "stage.other"
		n.Args["scores"] = cty.StringVal("elsewhere/scores.jsonl")
		n.Args["replicas"] = cty.NumberIntVal(2)
		out2, err := Evaluate{}.Run(ctx, n, rt)
		require.NoError(t, err)
		require.Empty(t, out2.Class, out2.Message)
		var res2 EvaluateResult
		require.NoError(t, json.Unmarshal(out2.Result, &res2))
		assert.Equal(t, 25, out2.RunCounts["from_store"])
		assert.Zero(t, out2.RunCounts["evaluated"])
		assert.Zero(t, out2.RunCounts["charged"])
		assert.Equal(t, 25, srv.ChatRequests(), "no request sent")
		assert.Equal(t, res.ScoresDigest, res2.ScoresDigest, "same results, same scores file")
		assert.Equal(t, *res.MeanScore, *res2.MeanScore)

		// With no endpoint configured at all, stored results still serve.
		n3 := evalNode()
		out3, err := Evaluate{}.Run(ctx, n3, rt)
		require.NoError(t, err)
		assert.Empty(t, out3.Class, out3.Message)

		// A different runtime setting is a different evaluation.
		n4 := evalNode()
		n4.Args["runtime"] = cty.ObjectVal(map[string]cty.Value{"topology": cty.StringVal("single"), "team_size": cty.NumberIntVal(4), "temperature": cty.NumberFloatVal(0.7)})
		out4, err := Evaluate{}.Run(ctx, n4, rt)
		require.NoError(t, err)
		assert.Equal(t, failclass.Setup, out4.Class)
		assert.Contains(t, out4.Message, "25 of 25 items have no stored result and no task model endpoint is configured")
	})

	t.Run("model not served: preflight, nothing sent", func(t *testing.T) {
		rt := evalWorkspace(t, 5)
		srv := simServer(t, simmodel.Config{Models: []string{"llama", "mistral"}})
		out, err := Evaluate{}.Run(ctx, evalNode(srv.URL), rt)
		require.NoError(t, err)
		assert.Equal(t, failclass.Setup, out.Class)
		assert.Contains(t, out.Message, "endpoint "+srv.URL+` does not serve the task model "sim-model"; it serves llama, mistral`)
		assert.Contains(t, out.Message, "no item was sent")
		assert.NotContains(t, out.Message, "per-item results")
		assert.NoFileExists(t, filepath.Join(rt.root, "out/scores.jsonl"), "nothing to report when nothing was sent")
		assert.Zero(t, srv.ChatRequests())
	})

	t.Run("stopped before any reply: every item pending in the scores", func(t *testing.T) {
		rt := evalWorkspace(t, 3)
		srv := simServer(t, simmodel.Config{Latency: time.Minute})
		n := evalNode(srv.URL)
		n.Common.Timeout = 300 * time.Millisecond
		out, err := Evaluate{}.Run(ctx, n, rt)
		require.NoError(t, err)
		assert.Equal(t, failclass.Timeout, out.Class, out.Message)
		assert.Contains(t, out.Message, "per-item results in out/scores.jsonl")
		scores, err := os.ReadFile(filepath.Join(rt.root, "out/scores.jsonl"))
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(scores)), "\n")
		require.Len(t, lines, 3)
		for _, l := range lines {
			assert.Contains(t, l, `"pending":true`)
		}
	})

	for _, retries := range []int{0, 1} {
		t.Run(fmt.Sprintf("endpoint failing, retry_infra %d: infrastructure, nothing stored", retries), func(t *testing.T) {
			rt := evalWorkspace(t, 6)
			srv := simServer(t, simmodel.Config{FailRate: 1})
			n := evalNode(srv.URL)
			n.Args["retry_infra"] = cty.NumberIntVal(int64(retries))
			out, err := Evaluate{}.Run(ctx, n, rt)
			require.NoError(t, err)
			sends := 6 * (retries + 1)
			assert.Equal(t, failclass.Infra, out.Class)
			assert.Contains(t, out.Message, "6 of 6 items failed after their retries")
			assert.Contains(t, out.Message, fmt.Sprintf("%d infrastructure failures", sends))
			assert.Equal(t, sends, srv.ChatRequests(), "each item sent once and retried retry_infra times")
			assert.Empty(t, rt.journal)
			// The failed node's per-item results say why each failed.
			assert.Contains(t, out.Message, "per-item results in out/scores.jsonl")
			scores, err := os.ReadFile(filepath.Join(rt.root, "out/scores.jsonl"))
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSpace(string(scores)), "\n")
			require.Len(t, lines, 6)
			assert.Regexp(t, `^\{"id":"q000","key":"[0-9a-f]{64}","score":null,"failed":"infrastructure failure: HTTP 503`, lines[0])
			store, err := items.OpenStore(rt.cache, items.StoreOptions{})
			require.NoError(t, err)
			defer store.Close()
			assert.Zero(t, store.Len())
		})
	}

	t.Run("setup errors", func(t *testing.T) {
		rt := evalWorkspace(t, 2)
		n := evalNode("http://127.0.0.1:1/v1")
		n.Args["items"] = cty.StringVal("data/missing.jsonl")
		out, err := Evaluate{}.Run(ctx, n, rt)
		require.NoError(t, err)
		assert.Equal(t, failclass.Setup, out.Class)
		assert.Contains(t, out.Message, "cannot read the dataset")

		// An endpoint written in the pipeline that is no URL is bad
		// input, refused before anything runs.
		n = evalNode("localhost:8000")
		_, err = Evaluate{}.Run(ctx, n, rt)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `Invalid endpoints; endpoint "localhost:8000" from the endpoints attribute is not an http(s) base URL`)

		n = evalNode("http://127.0.0.1:1/v1")
		n.Args["bundle"] = strs("nope/")
		out, err = Evaluate{}.Run(ctx, n, rt)
		require.NoError(t, err)
		assert.Equal(t, failclass.Setup, out.Class)
		assert.Contains(t, out.Message, "bundle nope")
	})

	t.Run("interrupted", func(t *testing.T) {
		rt := evalWorkspace(t, 3)
		srv := simServer(t, simmodel.Config{})
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		out, err := Evaluate{}.Run(cctx, evalNode(srv.URL), rt)
		require.NoError(t, err)
		assert.Equal(t, failclass.Interrupted, out.Class)
	})
}

// progressRuntime is a fakeRuntime that keeps the live display's lines.
type progressRuntime struct {
	*fakeRuntime
	lines []string
}

func (r *progressRuntime) Progress(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
}

// The live display gets an evaluation's counts every 200 ms while they
// change, and the last at its end, not a line made at each change (two an
// item: 16,000 for 8,192 items, which cost more CPU than the store's
// appends) (#34).
func TestEvaluateLiveCountsAtTheDisplaysPace(t *testing.T) {
	if _, err := os.Stat("/usr/bin/env"); err != nil {
		t.Skip("no /usr/bin/env")
	}
	noEndpointEnv(t)
	rt := &progressRuntime{fakeRuntime: evalWorkspace(t, 200)}
	srv := simServer(t, simmodel.Config{})
	out, err := Evaluate{}.Run(context.Background(), evalNode(srv.URL), rt)
	require.NoError(t, err)
	require.Empty(t, out.Class, out.Message)
	require.NotEmpty(t, rt.lines)
	assert.Less(t, len(rt.lines), 100, "lines for 200 items (a line a change made over 400)")
	assert.Equal(t, "charged 200, attempted 200, infra-failures 0; items 200/200: 200 evaluated, 0 from the store, 0 failed", rt.lines[len(rt.lines)-1])
}

// countingJournal is a fakeRuntime that keeps each JournalItems call,
// taking delay to write each.
type countingJournal struct {
	*fakeRuntime
	calls [][]ItemRecord
	delay time.Duration
}

func (j *countingJournal) JournalItems(recs []ItemRecord) error {
	time.Sleep(j.delay)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls = append(j.calls, recs)
	return nil
}

// The per-item journal records of one commit of the store are written
// together, at its flush (items.Config.OnCommit), not a few at a time as
// the writer wakes (#34); and flush returns once they are in the journal:
// it runs before the items count as done, and before a rollout's reply
// is written, so that a kill -9 after either cannot lose them.
func TestItemJournalWritesAtFlush(t *testing.T) {
	j := &countingJournal{fakeRuntime: &fakeRuntime{}, delay: 50 * time.Millisecond}
	ij := newItemJournal(j)
	for i := range 5 {
		ij.add(fmt.Sprintf("q%d", i), "k", items.Result{Charged: 1})
		runtime.Gosched() // a writer woken by the add would write now
	}
	j.mu.Lock()
	assert.Empty(t, j.calls, "records written before the flush")
	j.mu.Unlock()
	ij.flush()
	j.mu.Lock()
	require.Len(t, j.calls, 1, "flush returned before the records were written")
	assert.Len(t, j.calls[0], 5)
	j.mu.Unlock()
	require.NoError(t, ij.close())
	assert.Len(t, j.calls, 1, "nothing left for close")
}

// After a retry of the node, its run counts add up its attempts; what the
// first attempt stored is not counted again as from the store, while what
// was there before the first attempt is.
func TestEvaluateMergeRunCounts(t *testing.T) {
	first := map[string]int{"items": 10, "evaluated": 6, "from_store": 2, "failed": 2, "charged": 6, "attempted": 12, "infra_failures": 6, "retried": 4}
	second := map[string]int{"items": 10, "evaluated": 2, "from_store": 8, "failed": 0, "charged": 2, "attempted": 2, "infra_failures": 0, "retried": 0}
	assert.Equal(t, map[string]int{"items": 10, "evaluated": 8, "from_store": 2, "failed": 0, "charged": 8, "attempted": 14, "infra_failures": 6, "retried": 4},
		Evaluate{}.MergeRunCounts(first, second))
}

// A node whose item store's header is damaged is refused (exit 2, class
// setup), as a damaged index is: retrying cannot mend it, moving the
// store aside does. Another failure to open it is the infrastructure's.
func TestDamagedItemStoreIsRefused(t *testing.T) {
	cache := t.TempDir()
	s, err := items.OpenStore(cache, items.StoreOptions{NoSync: true})
	require.NoError(t, err)
	require.NoError(t, s.PutBatch([]items.Record{{Key: strings.Repeat("ab", 32), Result: items.Result{Charged: 1}}}))
	require.NoError(t, s.Close())
	log := filepath.Join(cache, "items", "log")
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	b[1] ^= 0xff
	require.NoError(t, os.WriteFile(log, b, 0o644))
	_, err = items.OpenStore(cache, items.StoreOptions{NoSync: true})
	require.Error(t, err)
	out := storeFailure("", err)
	assert.Equal(t, failclass.Setup, out.Class)
	assert.True(t, out.Refused)
	assert.Contains(t, out.Message, "move it aside")

	out = storeFailure("model cache: ", fmt.Errorf("items: open store: %w", os.ErrPermission))
	assert.Equal(t, failclass.Infra, out.Class)
	assert.False(t, out.Refused)
}

// Numbers of items written in the pipeline reach the worker with the
// digits written, as those of a JSONL dataset do: cty's numbers are
// big.Floats, and a 20-digit one is not rounded to a float64's 17 digits
// (12345678901234567000). Two items that differ past the 17th digit are
// two items, with two keys.
func TestInlineItemsKeepTheirDigits(t *testing.T) {
	const src = `[{ id = "a", n = 12345678901234567890 }, { id = "b", n = 12345678901234567891 }, { id = "c", n = 0.12345678901234567890123 }]`
	expr, diags := hclsyntax.ParseExpression([]byte(src), "p.hcl", hcl.InitialPos)
	require.False(t, diags.HasErrors(), "%s", diags)
	v, diags := expr.Value(nil)
	require.False(t, diags.HasErrors(), "%s", diags)
	args := evalArgs()
	args["items"] = v
	s, diags := decodeEvaluate(&Node{Address: "stage.e", Args: args, Ranges: map[string]hcl.Range{}})
	require.False(t, diags.HasErrors(), "%s", diags)
	inline, err := loadItems("", s)
	require.NoError(t, err)

	root := t.TempDir()
	writeFile(t, filepath.Join(root, "items.jsonl"), "{\"id\":\"a\",\"n\":12345678901234567890}\n{\"id\":\"b\",\"n\":12345678901234567891}\n{\"id\":\"c\",\"n\":0.12345678901234567890123}\n")
	fromFile, err := loadItems(root, evalSpec{itemsPath: "items.jsonl", itemID: "id"})
	require.NoError(t, err)
	require.Len(t, inline, 3)
	for i := range inline {
		assert.Equal(t, string(fromFile[i].Data), string(inline[i].Data), "item %d", i)
	}
	assert.Equal(t, `{"id":"a","n":12345678901234567890}`, string(inline[0].Data))
	assert.Equal(t, `{"id":"c","n":0.12345678901234567890123}`, string(inline[2].Data))
	ka, err := items.ItemKey("bundle", inline[0].Data, "m", nil, "worker")
	require.NoError(t, err)
	kb, err := items.ItemKey("bundle", inline[1].Data, "m", nil, "worker")
	require.NoError(t, err)
	assert.NotEqual(t, ka, kb, "items that differ past the 17th digit")
}
