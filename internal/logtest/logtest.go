// Package logtest is test support: a log sink that tests may read while the
// code under test writes to it from other goroutines, and the tail of a
// child's log file for a failure's message.
package logtest

import (
	"os"
	"strings"
	"sync"
)

// Tail returns the last n lines of the file at path, "" when it cannot be
// read.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

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
