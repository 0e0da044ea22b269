package plan

import "sync"

// maxFree is the most things a freeList keeps: a few are out at a time
// with each of the plan's workers.
const maxFree = 64

// freeList lends things made by make and keeps what is given back for
// lending again, up to maxFree. Not a sync.Pool: a pool drops what it
// holds at each collection, and at random under the race detector, so
// what a plan allocates would depend on when the collector ran.
type freeList[T any] struct {
	mu   sync.Mutex
	free []T
	make func() T
}

func (l *freeList[T]) get() T {
	l.mu.Lock()
	if n := len(l.free); n > 0 {
		x := l.free[n-1]
		l.free = l.free[:n-1]
		l.mu.Unlock()
		return x
	}
	l.mu.Unlock()
	return l.make()
}

func (l *freeList[T]) put(x T) {
	l.mu.Lock()
	if len(l.free) < maxFree {
		l.free = append(l.free, x)
	}
	l.mu.Unlock()
}
