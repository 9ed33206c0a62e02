package supervisor

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// sysProcAttr starts a stdio server suspended: newGroup puts it in its job
// object before it runs a single instruction, so that no process it starts
// can escape the job by being quicker than the assignment.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED}
}
