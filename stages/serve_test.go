package stages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl/failclass"
)

// A serve stage's inputs hold its server's identity (Node.FilesDigest, set
// by the engine); a stage without inputs keeps the identity it always
// had: model, weights and command line; servers someone else runs have
// none.
func TestServeIdentityHoldsItsInputs(t *testing.T) {
	node := func(run ...string) *Node {
		return &Node{Address: "stage.tm", Stage: "tm", Args: map[string]cty.Value{"run": strs(run...), "model": cty.StringVal("m")}, Ranges: map[string]hcl.Range{}}
	}
	plain := node("vllm", "serve", "m", "--port", "{port}")
	id := serveIdentity(plain)
	h := sha256.New()
	for _, a := range []string{"vllm", "serve", "m", "--port", "{port}"} {
		h.Write([]byte(a + "\x00"))
	}
	server := "sha256:" + hex.EncodeToString(h.Sum(nil))
	assert.Equal(t, "m;server="+server, id.ModelKey)
	assert.NotContains(t, string(Serve{}.Identity(plain)), `"files"`)

	plain.FilesDigest = "sha256:abc"
	id = serveIdentity(plain)
	assert.Equal(t, "m;server="+server+";files=sha256:abc", id.ModelKey)
	assert.Contains(t, string(Serve{}.Identity(plain)), `"files":"sha256:abc"`)

	external := node("sh", "srv.sh")
	external.Args["endpoints"] = strs("http://h:1/v1")
	external.FilesDigest = "sha256:abc"
	assert.Equal(t, "m", serveIdentity(external).ModelKey)
}

// A port range that runs past 65535 is refused at the port attribute
// (the replicas take consecutive ports), and the runtime says that the
// ports end there rather than that they are in use.
func TestServePortRangePastTheLastPort(t *testing.T) {
	portRange := hcl.Range{Filename: "main.hcl", Start: hcl.Pos{Line: 7, Column: 14}, End: hcl.Pos{Line: 7, Column: 19}}
	node := func(port, replicas int) *Node {
		return &Node{Address: "stage.s", Stage: "s", Args: map[string]cty.Value{"run": strs("srv", "{port}"), "model": cty.StringVal("m"),
			"port": cty.NumberIntVal(int64(port)), "replicas": cty.NumberIntVal(int64(replicas))}, Ranges: map[string]hcl.Range{"port": portRange}}
	}
	diags := Serve{}.Check(node(65535, 2))
	require.True(t, diags.HasErrors())
	assert.Equal(t, "Invalid port", diags[0].Summary)
	assert.Equal(t, portRange, *diags[0].Subject)
	assert.Contains(t, diags[0].Detail, "need ports up to 65536; the last port is 65535")
	assert.False(t, Serve{}.Check(node(65534, 2)).HasErrors())

	_, _, err := reservePorts("stage.s", "127.0.0.1", 65535, 2, func(int, string) {})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the ports end at 65535")
	assert.NotContains(t, err.Error(), "0 of them are in use")
}

// A replica not ready at start_timeout names its last check's answer
// without a stray separator from the body's newline.
func TestServeNotReadyMessageEndsCleanly(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
		case "/v1/models":
			_, _ = w.Write([]byte(`{"data":[{"id":"m"}]}`))
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("{\"error\":\"warming up\"}\n"))
		}
	}))
	defer ts.Close()
	sv := &server{s: serveSpec{model: "m", startTimeout: 300 * time.Millisecond, ready: readyCheck{Health: "/health"}}}
	r := &replica{i: 1, url: ts.URL + "/v1", exited: make(chan struct{})}
	err := sv.waitReady(context.Background(), r)
	require.Error(t, err)
	assert.True(t, strings.HasSuffix(err.Error(), `answered HTTP 503: {"error":"warming up"})`), err.Error())
}

// No free port reads well for one port as for many: "no free port at
// 65535: it is in use", never "no 1 free ports" or "1 of the 1".
func TestServeNoFreePortMessageReadsWell(t *testing.T) {
	assert.Equal(t, "no free port at 65535: it is in use", noFreePorts(1, 65535, 65535, 1))
	assert.Equal(t, "no 2 free ports from 65534 to 65535: 1 of the 2 is in use", noFreePorts(2, 65534, 65535, 1))
	assert.Equal(t, "no free port from 8000 to 9025: all 1026 are in use", noFreePorts(1, 8000, 9025, 1026))
	assert.Equal(t, "no 2 free ports from 65535 on", noFreePorts(2, 65535, 65535, 0))

	// The last port taken: the message a user sees when port = 65535.
	if ln, err := net.Listen("tcp", "127.0.0.1:65535"); err == nil {
		defer ln.Close()
	}
	_, _, err := reservePorts("stage.s", "127.0.0.1", 65535, 1, func(int, string) {})
	require.Error(t, err)
	assert.Equal(t, "no free port at 65535: it is in use, and the ports end at 65535 (pick a lower port)", err.Error())
}

// twoServers is a node reading serve stages "stage.a" and "stage.b",
// two weights of one model.
func twoServers() *Node {
	a, _ := json.Marshal(ServeResult{ServeIdentity: ServeIdentity{Model: "sim", Weights: "sha256:aaaa", ModelKey: "sim@sha256:aaaa"}, Endpoints: []string{"http://127.0.0.1:19500/v1"}})
	b, _ := json.Marshal(ServeResult{ServeIdentity: ServeIdentity{Model: "sim", Weights: "sha256:bbbb", ModelKey: "sim@sha256:bbbb"}, Endpoints: []string{"http://127.0.0.1:19600/v1"}})
	return &Node{Upstreams: []Upstream{{Address: "stage.a", Status: "ok", Result: a}, {Address: "stage.b", Status: "ok", Result: b}}}
}

// A consumer's results are keyed by the serve stage its endpoints are:
// stage.b's endpoints give b's weights, plain URLs the model id alone,
// and a list mixing a's servers with b's, or with a plain URL, is
// refused (a list made in a local, which validate does not see into),
// for evaluate and optimize (ServeModelKey) as for the model cache.
func TestServeKeysByTheStageItsEndpointsAre(t *testing.T) {
	n := twoServers()
	key, served, err := ServeModelKey(n, "sim", []string{"http://127.0.0.1:19600/v1/"})
	require.NoError(t, err)
	assert.True(t, served)
	assert.Equal(t, "sim@sha256:bbbb", key)

	key, served, err = ServeModelKey(n, "sim", []string{"http://127.0.0.1:18600/v1"})
	require.NoError(t, err)
	assert.False(t, served)
	assert.Equal(t, "sim", key)

	_, _, err = ServeModelKey(n, "sim", []string{"http://127.0.0.1:19500/v1", "http://127.0.0.1:19600/v1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "endpoints mix stage.a's servers with stage.b's")
	_, _, err = ServeModelKey(n, "sim", []string{"http://127.0.0.1:19500/v1", "http://127.0.0.1:18600/v1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "endpoints mix stage.a's servers with http://127.0.0.1:18600/v1, which it does not run")

	w, err := servedWeights(n, nil, []string{"http://127.0.0.1:19600/v1"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"sim": "sha256:bbbb"}, w)
	w, err = servedWeights(n, nil, []string{"http://127.0.0.1:18600/v1"})
	require.NoError(t, err)
	assert.Empty(t, w)
	_, err = servedWeights(n, nil, []string{"http://127.0.0.1:19600/v1", "http://127.0.0.1:19500/v1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "endpoints mix stage.b's servers with stage.a's")
}

// An optimize node's reflection_base_url is one serve stage's endpoints,
// or plain URLs alone, as a task model's endpoints are: one that mixes
// stage.a's servers with stage.b's (a list validate could not see) fails
// the node before anything is read or asked; one stage's passes.
func TestOptimizeReflectionEndpointsAreOneServer(t *testing.T) {
	reflection := func(urls ...string) *Outcome {
		n := twoServers()
		var list []cty.Value
		for _, u := range urls {
			list = append(list, cty.StringVal(u))
		}
		n.Args = map[string]cty.Value{"reflection_base_url": cty.ListVal(list)}
		s, diags := decodeOptimize(n)
		require.False(t, diags.HasErrors(), "%s", diags)
		_, out := (&optRun{s: s, n: n, root: t.TempDir()}).inputs(context.Background())
		require.NotNil(t, out)
		return out
	}
	out := reflection("http://127.0.0.1:19500/v1", "http://127.0.0.1:19600/v1")
	assert.Equal(t, failclass.Setup, out.Class)
	assert.True(t, strings.HasPrefix(out.Message, "reflection_base_url: endpoints mix stage.a's servers with stage.b's"), out.Message)
	out = reflection("http://127.0.0.1:19600/v1", "http://127.0.0.1:18200/v1")
	assert.True(t, strings.HasPrefix(out.Message, "reflection_base_url: endpoints mix stage.b's servers with http://127.0.0.1:18200/v1, which it does not run"), out.Message)
	for _, one := range [][]string{{"http://127.0.0.1:19600/v1"}, {"http://127.0.0.1:18200/v1", "http://127.0.0.1:18300/v1"}} {
		// Past the check: the training split, which this node has not.
		assert.NotContains(t, reflection(one...).Message, "reflection_base_url", one)
	}
}
