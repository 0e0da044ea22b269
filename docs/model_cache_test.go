package docs

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-run/cairn/stages/modelcache"
)

// The table of fields left out of a call's key in docs/model-cache.md is
// modelcache.IgnoredFields, in its order.
func TestModelCacheIgnoredFieldsAreDocumented(t *testing.T) {
	doc := readDoc(t, "model-cache.md")
	start := strings.Index(doc, "<!-- ignored-fields -->")
	end := strings.Index(doc, "<!-- /ignored-fields -->")
	if start < 0 || end < start {
		t.Fatal("model-cache.md has no ignored-fields table")
	}
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(doc[start:end], -1) {
		listed = append(listed, m[1])
	}
	assert.Equal(t, modelcache.IgnoredFields, listed)
}
