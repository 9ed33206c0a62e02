package supervisor

import "syscall"

// sysProcAttr puts a stdio server in a process group of its own, so that
// stopping it reaches every process it started, and has the kernel SIGKILL
// it should musterd die without a chance to stop it (Pdeathsig fires when
// the OS thread that started it exits; the Go runtime ends threads only
// for goroutines that exit locked to one, which the supervisor never does).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
