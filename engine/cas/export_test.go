package cas

import (
	"fmt"
	"strings"
)

// ParseDigest checks that s is a digest: 64 lowercase hex characters,
// optionally prefixed by "sha256:".
func ParseDigest(s string) (Digest, error) {
	d := Digest(strings.TrimPrefix(s, "sha256:"))
	if !d.Valid() {
		return "", fmt.Errorf("cas: invalid digest %q: want 64 lowercase hex characters", s)
	}
	return d, nil
}
