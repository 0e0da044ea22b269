package par

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every index is visited once, whatever the size and the chunk.
func TestChunksVisitsEachIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 7, 64, 65, 1000, 4099} {
		for _, chunk := range []int{1, 32, 5000} {
			seen := make([]atomic.Int32, n)
			Chunks(n, chunk, 0, func(i int) { seen[i].Add(1) })
			for i := range seen {
				assert.Equal(t, int32(1), seen[i].Load(), "n=%d chunk=%d i=%d", n, chunk, i)
			}
		}
	}
}

// Under min iterations, the calls run in order on the caller's goroutine.
func TestChunksSmallRunsInOrder(t *testing.T) {
	var order []int
	Chunks(10, 2, 11, func(i int) { order = append(order, i) })
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, order)
}

// A loop nested in one that runs on every core runs in order on its
// caller's goroutine (the race detector would see two goroutines append).
func TestChunksNestedRunsInOrder(t *testing.T) {
	outer := make([][]int, 200)
	Chunks(len(outer), 1, 0, func(i int) {
		Chunks(100, 1, 0, func(j int) { outer[i] = append(outer[i], j) })
	})
	for i, inner := range outer {
		assert.Len(t, inner, 100, "outer %d", i)
		for j, v := range inner {
			if !assert.Equal(t, j, v, "outer %d", i) {
				break
			}
		}
	}
	// Free again afterwards: a later loop runs on every core.
	assert.False(t, busy.Load())
}
