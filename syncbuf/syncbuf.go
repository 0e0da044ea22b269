// Package syncbuf is a buffer that one goroutine writes while another
// reads: the output of an apply or a command, read by a test while it runs.
package syncbuf

import (
	"strings"
	"sync"
)

// Buffer is a strings.Builder behind a lock; its zero value is empty and
// ready to use.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p; it never fails.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
