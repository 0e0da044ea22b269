package stages

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cairn-run/cairn/dsl/failclass"
	"github.com/cairn-run/cairn/events"
	"github.com/cairn-run/cairn/stages/items"
	"github.com/cairn-run/cairn/stages/modelcache"
)

// ModelCacheURL is what self.model_cache.url reads in a stage's
// attributes: a fixed stand-in, so that the node's key never holds a port,
// replaced in the process's arguments and environment by the cache's real
// URL when the process starts.
const ModelCacheURL = "http://cairn-model-cache.invalid/v1"

// modelCacheSpec is a command stage's model_cache attribute, decoded.
type modelCacheSpec struct {
	Endpoints []string
	Weights   map[string]string
	Timeout   time.Duration
}

func hasModelCache(n *Node) bool {
	v, ok := n.Args["model_cache"]
	return ok && v != cty.NilVal && !v.IsNull()
}

// usesModelCacheURL reports whether p's arguments mention
// self.model_cache.url.
func usesModelCacheURL(p Proc) bool {
	for _, a := range p.Argv {
		if strings.Contains(a, ModelCacheURL) {
			return true
		}
	}
	return false
}

// decodeModelCache decodes model_cache = { endpoints = [...], weights =
// {MODEL = DIGEST or PATH}, timeout = "10m" }; unknown values (plan time)
// pass.
func decodeModelCache(n *Node) (*modelCacheSpec, hcl.Diagnostics) {
	if !hasModelCache(n) {
		return nil, nil
	}
	rng := n.Range("model_cache")
	v := unmarkDeep(n.Args["model_cache"])
	if !v.IsWhollyKnown() {
		return nil, nil
	}
	bad := func(msg string) (*modelCacheSpec, hcl.Diagnostics) {
		return nil, Diag("Invalid model_cache", msg+" (docs/model-cache.md)", rng)
	}
	ty := v.Type()
	if !ty.IsObjectType() && !ty.IsMapType() {
		return bad("model_cache is an object: { endpoints = [\"http://HOST:PORT/v1\"], weights = { MODEL = DIGEST or PATH }, timeout = \"10m\" }.")
	}
	spec := &modelCacheSpec{}
	for it := v.ElementIterator(); it.Next(); {
		k, ev := it.Element()
		switch name := k.AsString(); name {
		case "endpoints":
			eps, err := StringList(ev)
			if err != nil || len(eps) == 0 {
				return bad("model_cache.endpoints is a non-empty list of base URLs, each ending in /v1 (a serve stage's endpoints, or URLs).")
			}
			for _, e := range eps {
				if !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
					return bad(fmt.Sprintf("model_cache.endpoints: %q is not an http(s) URL.", e))
				}
				base := strings.TrimSuffix(e, "/")
				// The calls go to BASE/chat/completions: a server's root
				// would get them where vLLM answers 404.
				if !strings.HasSuffix(base, "/v1") {
					return bad(fmt.Sprintf("model_cache.endpoints: %q does not end in /v1: give the base URL the OpenAI API is served under, as vLLM serves it (\"http://HOST:PORT/v1\"); the calls go to BASE/chat/completions.", e))
				}
				spec.Endpoints = append(spec.Endpoints, base)
			}
		case "weights":
			w, msg := decodeCacheWeights(ev)
			if msg != "" {
				return bad(msg)
			}
			spec.Weights = w
		case "timeout":
			if ev.IsNull() || !ev.Type().Equals(cty.String) {
				return bad("model_cache.timeout is a duration such as \"10m\".")
			}
			d, err := time.ParseDuration(ev.AsString())
			if err != nil || d <= 0 {
				return bad(fmt.Sprintf("model_cache.timeout %q is not a positive duration such as \"90s\" or \"10m\".", ev.AsString()))
			}
			spec.Timeout = d
		default:
			return bad(fmt.Sprintf("model_cache has no field %q; it has endpoints, weights and timeout.", name))
		}
	}
	if len(spec.Endpoints) == 0 {
		return bad("model_cache needs endpoints: the real endpoints' base URLs, each ending in /v1.")
	}
	return spec, nil
}

// decodeCacheWeights decodes model_cache.weights = { MODEL = WEIGHTS }:
// each a digest, or the path of the weights' folder or file (weightsRef),
// as the serve stage's weights are. msg says what is wrong ("" when
// nothing is); a null is no weights.
func decodeCacheWeights(v cty.Value) (weights map[string]string, msg string) {
	if v.IsNull() {
		return nil, ""
	}
	if !v.Type().IsObjectType() && !v.Type().IsMapType() {
		return nil, "model_cache.weights maps each model id to the weights served under it: their digest (\"sha256:3f1c...\") or the path of their folder or file."
	}
	weights = map[string]string{}
	for it := v.ElementIterator(); it.Next(); {
		mk, mv := it.Element()
		if mv.IsNull() || !mv.Type().Equals(cty.String) {
			return nil, fmt.Sprintf("model_cache.weights[%q] is not a string.", mk.AsString())
		}
		digest, path, err := weightsRef(mv.AsString())
		if err != nil {
			return nil, fmt.Sprintf("model_cache.weights[%q]: %s.", mk.AsString(), err)
		}
		weights[mk.AsString()] = digest + path
	}
	return weights, ""
}

// PathAttrs implements PathLinker: weights model_cache.weights names by
// path that another stage writes (a fine-tuned checkpoint) are read once
// it has written them, as a serve stage's are: the calls are keyed by
// the weights written, never by what the folder held before.
func (Command) PathAttrs() []PathAttr { return commandPaths }

var commandPaths = []PathAttr{{Attr: "model_cache", Field: "weights"}}

// KeyedContent implements ContentKeyer: the weights model_cache.weights
// names by path key the node by their content, as a serve stage's do, so
// that new weights in the same folder are other calls (and the node runs
// again), never answered with the old weights' answers. They are known
// at plan time even where the endpoints are a serve stage's, not yet.
func (Command) KeyedContent(n *Node, root string) []string {
	if !hasModelCache(n) {
		return nil
	}
	v := unmarkDeep(n.Args["model_cache"])
	if !v.IsKnown() || !v.Type().IsObjectType() && !v.Type().IsMapType() {
		return nil
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		k, ev := it.Element()
		if k.AsString() != "weights" || !ev.IsWhollyKnown() {
			continue
		}
		w, _ := decodeCacheWeights(ev)
		for _, m := range slices.Sorted(maps.Keys(w)) {
			if !isDigest(w[m]) && !slices.Contains(out, w[m]) {
				out = append(out, w[m])
			}
		}
	}
	return out
}

// cacheWeightsDigests are weights with each path replaced by the digest
// of its content (weightsDigest, through the stat cache), as the node's
// key holds it: the model-call keys then follow the weights' content.
func cacheWeightsDigests(n *Node, root string, weights map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(weights))
	for m, w := range weights {
		d, err := weightsDigest(root, w, n.Stat)
		if err != nil {
			return nil, fmt.Errorf("model_cache.weights[%q] (%s): %w", m, w, err)
		}
		out[m] = d
	}
	return out, nil
}

// KeyValue implements KeyTransformer: of model_cache, only the weights
// enter the node's key; the endpoints and the timeout say where and how
// the answers are fetched, not what they are.
func (Command) KeyValue(attr string, v cty.Value) cty.Value {
	if attr != "model_cache" || v.IsNull() || !v.IsKnown() {
		return v
	}
	u, marks := v.Unmark()
	if !u.Type().IsObjectType() && !u.Type().IsMapType() {
		return v
	}
	kept := map[string]cty.Value{}
	for it := u.ElementIterator(); it.Next(); {
		k, ev := it.Element()
		if k.AsString() == "weights" {
			kept["weights"] = ev
		}
	}
	return cty.ObjectVal(kept).WithMarks(marks)
}

// servedWeights adds to weights the identity of each model a serve
// upstream serves (its result's weights, its server's command line after
// ";server=" and its inputs' digest after ";files=": the whole of what its
// evaluations' item keys hold after the model id), unless weights names
// that model already: a call to a served model is keyed by the weights,
// the server and the files behind it. Given endpoints (model_cache's),
// only the serve upstream they are counts (none for plain URLs), and
// endpoints that mix one's with other servers' are an error
// (endpointsServer).
func servedWeights(n *Node, weights map[string]string, endpoints []string) (map[string]string, error) {
	ups := serveUpstreams(n)
	if len(nonBlankEndpoints(endpoints)) > 0 {
		r, err := endpointsServer(n, endpoints)
		if err != nil || r == nil {
			return weights, err
		}
		ups = []servedUpstream{{ServeResult: *r}}
	}
	for _, u := range ups {
		r := u.ServeResult
		if r.Model == "" || r.Weights == "" && r.Server == "" && r.Files == "" {
			continue
		}
		if _, ok := weights[r.Model]; ok {
			continue
		}
		if weights == nil {
			weights = map[string]string{}
		}
		// The server's command line and the files it reads with the
		// weights, as in an evaluation's item keys: the same weights
		// served with other flags, or another chat template, may answer
		// otherwise.
		w := r.Weights
		if r.Server != "" {
			w += ";server=" + r.Server
		}
		if r.Files != "" {
			w += ";files=" + r.Files
		}
		weights[r.Model] = w
	}
	return weights, nil
}

// runWithModelCache runs p with a model-call cache serving on loopback for
// its life: its URL replaces self.model_cache.url in the arguments and the
// environment, and is in OPENAI_BASE_URL, OPENAI_API_BASE and
// CAIRN_MODEL_CACHE_URL.
func runWithModelCache(ctx context.Context, n *Node, rt Runtime, p Proc) (*Outcome, error) {
	spec, diags := decodeModelCache(n)
	if diags.HasErrors() {
		return nil, diags
	}
	weights, err := cacheWeightsDigests(n, rt.Root(), spec.Weights)
	if err == nil {
		weights, err = servedWeights(n, weights, spec.Endpoints)
	}
	if err != nil {
		return &Outcome{Class: failclass.Setup, Message: "model cache: " + err.Error()}, nil
	}
	spec.Weights = weights
	st, err := items.OpenStore(rt.CacheDir(), storeOptions(rt, n.Address))
	if err != nil {
		return storeFailure("model cache: ", err), nil
	}
	defer st.Close()
	j, _ := rt.(Journaler)
	var jmu sync.Mutex
	srv, err := modelcache.Start(modelcache.Config{
		Endpoints: spec.Endpoints, Store: st, Weights: spec.Weights, Timeout: spec.Timeout,
		OnStored: func(path, model, key string) {
			if j == nil {
				return
			}
			jmu.Lock()
			defer jmu.Unlock()
			_ = j.JournalItems([]ItemRecord{{Item: "model-call " + path + " " + model, Key: key}})
		},
	})
	if err != nil {
		return &Outcome{Class: failclass.Infra, Message: err.Error()}, nil
	}
	defer srv.Close()
	for i, a := range p.Argv {
		p.Argv[i] = strings.ReplaceAll(a, ModelCacheURL, srv.URL)
	}
	env := make(map[string]string, len(p.Env)+len(n.Common.Env)+3)
	for k, v := range n.Common.Env {
		if strings.Contains(v, ModelCacheURL) {
			env[k] = strings.ReplaceAll(v, ModelCacheURL, srv.URL)
		}
	}
	for k, v := range p.Env {
		env[k] = strings.ReplaceAll(v, ModelCacheURL, srv.URL)
	}
	env["OPENAI_BASE_URL"] = srv.URL
	env["OPENAI_API_BASE"] = srv.URL
	env["CAIRN_MODEL_CACHE_URL"] = srv.URL
	p.Env = env
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if pr, ok := rt.(ProgressReporter); ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					pr.Progress(srv.Counts().String())
				}
			}
		}()
	}
	res, err := rt.Exec(ctx, p)
	close(stop)
	wg.Wait()
	c := srv.Counts()
	rt.Emit(&events.NodeOutput{Node: n.Address, Text: n.Address + ": " + c.String() + fmt.Sprintf(", %d refused as malformed\n", c.Refused)})
	if err != nil {
		return nil, err
	}
	return &Outcome{Class: res.Class, Message: res.Message, Proc: res, RunCounts: map[string]int{
		"model_cache_from_store": int(c.FromStore), "model_cache_forwarded": int(c.Forwarded),
		"model_cache_failed": int(c.Failed), "model_cache_refused": int(c.Refused),
	}}, nil
}
