//go:build unix

package supervisor

import (
	"os"
	"syscall"
)

// stopRequest names how a group is asked to stop, for the log of a server
// that outlived its grace.
const stopRequest = "SIGTERM"

// group is the process group a stdio server leads (sysProcAttr sets
// Setpgid): signals to it reach every process the server started, unless
// one left the group with setsid.
type group struct {
	pgid int
}

// newGroup returns the group that proc, started with sysProcAttr, leads.
func newGroup(proc *os.Process) (*group, error) {
	return &group{pgid: proc.Pid}, nil
}

// terminate sends SIGTERM to the group, and SIGCONT: a stopped process
// handles SIGTERM only once continued.
func (g *group) terminate() {
	g.signal(syscall.SIGTERM)
	g.signal(syscall.SIGCONT)
}

// kill sends SIGKILL to the group. After the leader is reaped its PID cannot
// be reused while any process of its group lives, so this reaches only that
// group.
func (g *group) kill() {
	g.signal(syscall.SIGKILL)
}

// release has nothing to free: a process group holds no resource of
// musterd's.
func (g *group) release() {}

// signal sends sig to every process of the group. A group already gone is
// no error.
func (g *group) signal(sig syscall.Signal) {
	_ = syscall.Kill(-g.pgid, sig)
}
