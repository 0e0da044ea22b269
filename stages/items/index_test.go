package items

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Keys whose first 8 bytes agree are told apart by the whole key: each
// keeps its own entry, a third is absent, and adding one again finds it.
func TestKeyIndexPrefixCollision(t *testing.T) {
	var a, b, c [32]byte
	for i := range 8 {
		a[i], b[i], c[i] = 7, 7, 7
	}
	a[31], b[31], c[31] = 1, 2, 3
	x := newKeyIndex(0)
	ia, had := x.add(a, entry{off: 10})
	assert.False(t, had)
	ib, had := x.add(b, entry{off: 20})
	assert.False(t, had)
	assert.NotEqual(t, ia, ib)
	e, ok := x.get(a)
	assert.True(t, ok)
	assert.Equal(t, int64(10), e.off)
	e, ok = x.get(b)
	assert.True(t, ok)
	assert.Equal(t, int64(20), e.off)
	_, ok = x.get(c)
	assert.False(t, ok)
	i, had := x.add(b, entry{off: 30})
	assert.True(t, had)
	assert.Equal(t, ib, i)
	assert.Equal(t, int64(20), x.ents[i].e.off, "the first entry wins")
	assert.Equal(t, 2, x.len())
}
