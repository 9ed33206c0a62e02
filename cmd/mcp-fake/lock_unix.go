//go:build unix

package main

import (
	"os"
	"syscall"
)

// lockExclusive takes an exclusive lock on file without waiting: an error if
// another process holds one.
func lockExclusive(file *os.File) error {
	return syscall.Flock(int(file.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
