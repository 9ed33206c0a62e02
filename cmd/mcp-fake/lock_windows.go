package main

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockExclusive takes an exclusive lock on file without waiting: an error if
// another process holds one. It locks the first byte, which is all the
// lock is for: Windows, too, drops it when the process ends.
func lockExclusive(file *os.File) error {
	return windows.LockFileEx(windows.Handle(file.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, new(windows.Overlapped))
}
