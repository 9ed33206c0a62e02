//go:build unix && !linux

package supervisor

import "syscall"

// sysProcAttr puts a stdio server in a process group of its own, so that
// stopping it reaches every process it started.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
