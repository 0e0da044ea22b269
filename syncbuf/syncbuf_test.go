package syncbuf

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Writers on several goroutines and a reader at the same time: every line
// written is read back whole (go test -race checks the lock).
func TestConcurrentWritesReadWhole(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				fmt.Fprintf(&b, "w%d line %d\n", w, i)
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	assert.Len(t, lines, 400)
	for w := range 4 {
		assert.Contains(t, b.String(), fmt.Sprintf("w%d line 99\n", w))
	}
}
