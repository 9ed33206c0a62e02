//go:build unix

package fs

import (
	"syscall"
	"testing"
)

// mkfifo makes a named pipe at path.
func mkfifo(_ *testing.T, path string) error { return syscall.Mkfifo(path, 0o644) }
