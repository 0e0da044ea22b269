package stages

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/stretchr/testify/assert"
	"github.com/zclconf/go-cty/cty"
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
