// Package logtest is test support: a log sink that tests may read while the
// code under test writes to it from other goroutines.
package logtest

import (
	"strings"
	"sync"
)

// Buffer is an io.Writer (and io.StringWriter) whose String is safe to call
// while other goroutines write. The zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) WriteString(s string) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.WriteString(s)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
