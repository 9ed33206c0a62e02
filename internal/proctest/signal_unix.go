//go:build unix

package proctest

import (
	"errors"
	"syscall"
)

// Exists reports whether pid names a process, a zombie included: kill(pid,
// 0) finds it.
func Exists(pid int) bool { return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// GroupExists reports whether any process is left in process group pgid.
func GroupExists(pgid int) bool { return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) }

// Kill kills the process pid alone (SIGKILL), as a crash would.
func Kill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// KillGroup kills every process of process group pgid (SIGKILL).
func KillGroup(pgid int) error { return syscall.Kill(-pgid, syscall.SIGKILL) }
