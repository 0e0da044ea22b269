package stages

import (
	"encoding/json"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

func TestModelCacheTakesTheServedWeights(t *testing.T) {
	res, _ := json.Marshal(ServeResult{ServeIdentity: ServeIdentity{Model: "qwen", Weights: "sha256:abc"}, Endpoints: []string{"http://h:1/v1"}})
	n := &Node{Upstreams: []Upstream{{Address: "stage.serve", Status: "ok", Result: res}}}
	require.Equal(t, map[string]string{"qwen": "sha256:abc"}, servedWeightsOf(n, nil))
	// The stage's own weights win.
	require.Equal(t, map[string]string{"qwen": "sha256:mine"}, servedWeightsOf(n, map[string]string{"qwen": "sha256:mine"}))

	// A server cairn starts is keyed by its command line too: the same
	// weights with other flags are other calls.
	res, _ = json.Marshal(ServeResult{ServeIdentity: ServeIdentity{Model: "qwen", Weights: "sha256:abc", Server: "sha256:cmd"}})
	n = &Node{Upstreams: []Upstream{{Address: "stage.serve", Status: "ok", Result: res}}}
	require.Equal(t, map[string]string{"qwen": "sha256:abc;server=sha256:cmd"}, servedWeightsOf(n, nil))
	res, _ = json.Marshal(ServeResult{ServeIdentity: ServeIdentity{Model: "qwen", Server: "sha256:cmd"}})
	n = &Node{Upstreams: []Upstream{{Address: "stage.serve", Status: "ok", Result: res}}}
	require.Equal(t, map[string]string{"qwen": ";server=sha256:cmd"}, servedWeightsOf(n, nil))
}

// The serve stage's inputs (a launcher, a chat template) are its identity
// too: the model-call key holds them after ";files=", as the item keys of
// its evaluate consumers do, so that editing the chat template forwards
// the calls again rather than answering them with the old server's.
func TestModelCacheTakesTheServedFiles(t *testing.T) {
	id := ServeIdentity{Model: "qwen", Weights: "sha256:abc", Server: "sha256:cmd", Files: "sha256:tpl"}
	res, _ := json.Marshal(ServeResult{ServeIdentity: id, Endpoints: []string{"http://h:1/v1"}})
	n := &Node{Upstreams: []Upstream{{Address: "stage.serve", Status: "ok", Result: res}}}
	require.Equal(t, map[string]string{"qwen": "sha256:abc;server=sha256:cmd;files=sha256:tpl"}, servedWeightsOf(n, nil))

	// Whatever a served identity holds after the model id, its
	// model-call key holds: what its evaluations' item keys hold.
	serve := &Node{Address: "stage.S", Stage: "S", Args: map[string]cty.Value{"run": strs("vllm", "serve", "{model}"), "model": cty.StringVal("qwen")}, Ranges: map[string]hcl.Range{}}
	for _, files := range []string{"", "sha256:tpl1", "sha256:tpl2"} {
		serve.FilesDigest = files
		res, _ := json.Marshal(ServeResult{ServeIdentity: serveIdentity(serve), Endpoints: []string{"http://h:1/v1"}})
		n := &Node{Upstreams: []Upstream{{Address: "stage.S", Status: "ok", Result: res}}}
		require.Equal(t, serveIdentity(serve).ModelKey, "qwen"+servedWeightsOf(n, nil)["qwen"], "files %q", files)
	}
}

func TestModelCacheAttributeIsChecked(t *testing.T) {
	node := func(v cty.Value) *Node {
		return &Node{Args: map[string]cty.Value{"run": cty.TupleVal([]cty.Value{cty.StringVal("true")}), "model_cache": v}}
	}
	ok := cty.ObjectVal(map[string]cty.Value{"endpoints": cty.TupleVal([]cty.Value{cty.StringVal("http://h:8000/v1")}), "timeout": cty.StringVal("90s")})
	require.False(t, Command{}.Check(node(ok)).HasErrors())
	for v, want := range map[*cty.Value]string{
		ptr(cty.ObjectVal(map[string]cty.Value{"endpoints": cty.TupleVal([]cty.Value{cty.StringVal("gpu1:8000")})})):                                     "not an http(s) URL",
		ptr(cty.ObjectVal(map[string]cty.Value{"endpoint": cty.StringVal("http://h/v1")})):                                                               `no field "endpoint"`,
		ptr(cty.ObjectVal(map[string]cty.Value{"endpoints": cty.TupleVal([]cty.Value{cty.StringVal("http://h/v1")}), "timeout": cty.StringVal("soon")})): "not a positive duration",
		ptr(cty.StringVal("http://h/v1")): "model_cache is an object",
		ptr(cty.ObjectVal(map[string]cty.Value{"endpoints": cty.TupleVal([]cty.Value{cty.StringVal("http://127.0.0.1:18500")})})): `"http://127.0.0.1:18500" does not end in /v1`,
	} {
		d := Command{}.Check(node(*v))
		require.True(t, d.HasErrors())
		require.Contains(t, d.Error(), want)
	}
	// The weights: a digest or a path, nothing that only looks like a
	// digest; a path keys the node by its content.
	withWeights := func(w string) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"endpoints": cty.TupleVal([]cty.Value{cty.StringVal("http://h/v1")}), "weights": cty.ObjectVal(map[string]cty.Value{"m": cty.StringVal(w)})})
	}
	for _, bad := range []string{"sha256:XYZ", "sha256:0123456789ABCDEF", ""} {
		d := Command{}.Check(node(withWeights(bad)))
		require.True(t, d.HasErrors(), bad)
		require.Contains(t, d.Error(), `model_cache.weights["m"]: "`+bad+`" is neither a digest nor a path`)
	}
	for w, keyed := range map[string][]string{"sha256:0123456789abcdef": nil, "models/./qwen/": {"models/qwen"}, "/abs/w.bin": {"/abs/w.bin"}} {
		require.False(t, Command{}.Check(node(withWeights(w))).HasErrors(), w)
		require.Equal(t, keyed, Command{}.KeyedContent(node(withWeights(w)), "/root"), w)
	}
	// Only the weights enter the key.
	k := Command{}.KeyValue("model_cache", cty.ObjectVal(map[string]cty.Value{"endpoints": cty.TupleVal([]cty.Value{cty.StringVal("http://h/v1")}), "weights": cty.MapVal(map[string]cty.Value{"m": cty.StringVal("sha256:1")})}))
	require.Equal(t, []string{"weights"}, keysOf(k))
}

func ptr(v cty.Value) *cty.Value { return &v }

func keysOf(v cty.Value) []string {
	var out []string
	for k := range v.Type().AttributeTypes() {
		out = append(out, k)
	}
	return out
}

// servedWeightsOf is servedWeights with no endpoints given: every serve
// upstream counts.
func servedWeightsOf(n *Node, weights map[string]string) map[string]string {
	w, err := servedWeights(n, weights, nil)
	if err != nil {
		panic(err)
	}
	return w
}
